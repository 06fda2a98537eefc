package kafka

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestBrokerKeepsJoiningMembers: member c joins a group of a and b while
// b holds a poll (BlockRebalanceOnPoll): a rejoins at once and waits in
// its JoinGroup, for longer than its own session timeout, until b lets
// the rebalance go on. As in Kafka, a is not expired while it waits, and
// the new generation holds all three. (kfake alone removes a when its session runs
// out in the join, and leaves its JoinGroup unanswered for 70 s.)
//
// It runs on the embedded broker, and on a kfake cluster whose keeper
// replaces its request hooks at every request (as a broker's do every
// few minutes).
func TestBrokerKeepsJoiningMembers(t *testing.T) {
	t.Run("broker", func(t *testing.T) {
		t.Parallel()
		b, err := StartBroker(BrokerConfig{Topics: map[string]int32{"in": 2}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		keepsJoiningMembers(t, b.Addrs())
	})
	t.Run("hooks renewed", func(t *testing.T) {
		t.Parallel()
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		k, err := startJoinKeeper(c, c.ListenAddrs(), slog.New(slog.DiscardHandler), 0)
		if err != nil {
			t.Fatal(err)
		}
		defer k.close()
		keepsJoiningMembers(t, c.ListenAddrs())
	})
}

func keepsJoiningMembers(t *testing.T, addrs []string) {
	const session = 6 * time.Second // the broker's least
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("in"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 20 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	member := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"),
			kgo.InstanceID(id), kgo.SessionTimeout(session), kgo.BlockRebalanceOnPoll(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.AllowRebalance(); cl.Close() })
		return cl
	}
	adm := kadm.NewClient(prod)
	members := func() (state string, ids []string) {
		gs, err := adm.DescribeGroups(ctx, "g")
		if err != nil {
			return "", nil
		}
		g := gs["g"]
		for _, m := range g.Members {
			if m.InstanceID != nil {
				ids = append(ids, *m.InstanceID)
			}
		}
		slices.Sort(ids)
		return g.State, ids
	}
	ma, mb := member("a"), member("b")
	// Both poll, letting rebalances through, until the group is stable
	// with both.
	pollAll := func(cl *kgo.Client) {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cl.PollFetches(pctx)
		pcancel()
		cl.AllowRebalance()
	}
	weirtest.PollUntil(t, time.Minute, "the group to be stable with a and b", func() bool {
		pollAll(ma)
		pollAll(mb)
		st, ids := members()
		return st == "Stable" && slices.Equal(ids, []string{"a", "b"}) && len(ma.GetConsumeTopics()) > 0
	})
	// b polls and holds the poll; a asks for a rebalance and waits in its
	// join for b, for longer than its own session.
	if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("y")}, &kgo.Record{Partition: 1, Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	weirtest.PollUntil(t, time.Minute, "b to poll records", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer pcancel()
		return mb.PollFetches(pctx).NumRecords() > 0
	})
	member("c")
	aCtx, aCancel := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() { // a keeps polling, as a member in a rebalance does
		defer close(aDone)
		for aCtx.Err() == nil {
			pollAll(ma)
		}
	}()
	defer func() { aCancel(); <-aDone }()
	weirtest.PollUntil(t, time.Minute, "the group to rebalance", func() bool {
		st, _ := members()
		return st == "PreparingRebalance"
	})
	held := time.Now()
	for time.Since(held) < session*3/2 {
		if st, ids := members(); !slices.Contains(ids, "a") {
			t.Fatalf("member a was removed while it waited in its join (group %s, members %v)", st, ids)
		}
		time.Sleep(200 * time.Millisecond) // the hold is the scenario: b keeps its poll
	}
	mb.AllowRebalance()
	weirtest.PollUntil(t, time.Minute, "the group to be stable again", func() bool {
		pollAll(mb)
		st, _ := members()
		return st == "Stable"
	})
	if _, ids := members(); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("after the rebalance, the group has %v, want a, b and c", ids)
	}
}
