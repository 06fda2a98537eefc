package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// sbMember joins group as a plain consumer of topic (static when
// instanceID is set) and returns once it holds partitions.
func sbMember(t *testing.T, cc ClientConfig, group, topic, instanceID string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	assigned := make(chan struct{}, 1)
	opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		})}
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	cl := srcClient(t, cc, append(opts, extra...)...)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	select {
	case <-assigned:
	case <-time.After(20 * time.Second):
		t.Fatal("the member got no partitions")
	}
	return cl
}

// TestAwaitSoleMember: a standby waits while another member is in the
// group and goes on once it leaves; a restarted static member does not
// wait for its own earlier membership.
func TestAwaitSoleMember(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for members to leave the group; the full pass runs it")
	}
	_, cc := srcBroker(t, map[string]int32{"events": 2})
	ctx := context.Background()
	if err := AwaitSoleMember(ctx, cc, Standby{Group: "nobody-here"}, srcQuiet(), nil); err != nil {
		t.Fatalf("a group that does not exist: %v", err)
	}

	other := sbMember(t, cc, "g", "events", "")
	done := make(chan error, 1)
	go func() { done <- AwaitSoleMember(ctx, cc, Standby{Group: "g"}, srcQuiet(), nil) }()
	select {
	case err := <-done:
		t.Fatalf("returned (%v) while another member is in the group", err)
	case <-time.After(2500 * time.Millisecond): // two asks at least
	}
	other.Close() // a dynamic member leaves the group
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the other member left")
	}

	sbMember(t, cc, "static", "events", "me")
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := AwaitSoleMember(sctx, cc, Standby{Group: "static", InstanceID: "me"}, srcQuiet(), nil); err != nil {
		t.Fatalf("waited for its own static membership: %v", err)
	}
	cctx, cancel2 := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel2()
	if err := AwaitSoleMember(cctx, cc, Standby{Group: "static", InstanceID: "someone-else"}, srcQuiet(), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another static member: %v, want to wait until the context ends", err)
	}
}

// TestSourceExclusiveGivesWay: an exclusive source that finds another
// member in its group at its first assignment hands out nothing and
// returns ErrNotSoleMember; as a static member it leaves the group, so the
// other member gets every partition back without waiting for its session
// to time out.
func TestSourceExclusiveGivesWay(t *testing.T) {
	_, cc := srcBroker(t, map[string]int32{"events": 4})
	srcProduce(t, cc, srcJSONRecords("events", 0, 100)...)
	sbMember(t, cc, "g", "events", "first")

	sink := &srcSink{keep: true}
	src := srcNewSource(t, cc, "g", "events", func(c *SourceConfig) {
		c.Exclusive, c.InstanceID, c.SessionTimeout = true, "second", time.Minute
	})
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
	select {
	case <-run.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the second member kept running")
	}
	if !errors.Is(run.err, ErrNotSoleMember) {
		t.Fatalf("Run: %v, want ErrNotSoleMember", run.err)
	}
	if n := sink.count.Load(); n != 0 {
		t.Fatalf("%d records handed out", n)
	}
	weirtest.PollUntil(t, 20*time.Second, "the static member that gave way to leave the group", func() bool {
		others, err := otherMembers(context.Background(), newAdm(t, cc), "g", "", "first")
		return err == nil && len(others) == 0
	})
}

// newAdm returns an admin client on cc, closed when the test ends.
func newAdm(t *testing.T, cc ClientConfig) *kadm.Client {
	t.Helper()
	cl := srcClient(t, cc)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
