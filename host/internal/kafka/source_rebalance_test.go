package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// TestSourceRebalanceAtCheckpoint runs a source sharing its group by task
// whose run checkpoints only when asked (an hour's interval, and
// Tasks.SetCheckpointNow): it reads every record, and then another member
// joins. The rebalance must wait for a checkpoint the run asks for at
// once, which must cover every record the run handed out; only then may
// the group take tasks away, ending the run with ErrTasksChanged. With
// rebalances proceeding after every poll, the run would end with no
// checkpoint taken, and a rollback would redo all it read.
func TestSourceRebalanceAtCheckpoint(t *testing.T) {
	t.Parallel()
	const parts = 4
	_, cc := srcBroker(t, map[string]int32{"rb": parts})
	var recs []*kgo.Record
	for i := range 1000 {
		recs = append(recs, &kgo.Record{Topic: "rb", Key: fmt.Appendf(nil, "k%d", i%97), Value: fmt.Appendf(nil, `{"i":%d}`, i)})
	}
	srcProduce(t, cc, recs...)

	ts := NewTasks(false)
	ts.SetCount(parts)
	soon := make(chan struct{}, 1)
	ts.SetCheckpointNow(func() {
		select {
		case soon <- struct{}{}:
		default:
		}
	})
	src := srcNewSource(t, cc, "rebalance", "rb", func(c *SourceConfig) { c.Tasks = ts; c.Checkpointed = true })
	defer src.Close()
	weirtest.PollUntil(t, 30*time.Second, "the group's first assignment", func() bool { return len(ts.Begin()) == parts })

	sink := &srcSink{keep: true}
	var mu sync.Mutex
	var covered []int // by checkpoint, the records handed out when it committed
	commit := func(_ context.Context, cp *engine.Checkpoint) error {
		mu.Lock()
		defer mu.Unlock()
		covered = append(covered, len(sink.records()))
		return nil
	}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{srcKept{src}}, Sinks: []engine.Sink{sink},
		Checkpointing: &engine.Checkpointing{Interval: time.Hour, Soon: soon, Commit: commit}})
	weirtest.PollUntil(t, 30*time.Second, "every record", func() bool { return len(sink.records()) >= len(recs) })

	other := srcClient(t, cc, kgo.ConsumerGroup("rebalance"), kgo.ConsumeTopics("rb"))
	defer other.Close()
	go other.PollFetches(t.Context())
	select {
	case <-run.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end when another member took tasks")
	}
	if !errors.Is(run.err, ErrTasksChanged) {
		t.Fatalf("the run ended with %v, want ErrTasksChanged", run.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(covered) == 0 {
		t.Fatalf("the group took tasks away with no checkpoint taken: the run's %d records would be read again", len(sink.records()))
	}
	if last := covered[len(covered)-1]; last != len(sink.records()) {
		t.Errorf("the last checkpoint before the move covered %d of the %d records the run handed out", last, len(sink.records()))
	}
}

// TestSourceCloseDuringRebalance checks that closing a source does not
// wait for a rebalance that waits for a member gone without leaving (a
// static member that stopped): the source's client is in a JoinGroup the
// group answers only once that member's session times out, and a
// process stopping (its final checkpoint taken) has no reason to wait.
func TestSourceCloseDuringRebalance(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"cd": 2})
	const group = "closing"
	gone := srcClient(t, cc, kgo.ConsumerGroup(group), kgo.ConsumeTopics("cd"), kgo.InstanceID("gone"), kgo.SessionTimeout(10*time.Second))
	var logs weirtest.SyncBuffer
	src := srcNewSource(t, cc, group, "cd", func(c *SourceConfig) {
		c.InstanceID = "staying"
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	defer src.Close()
	go gone.PollFetches(t.Context())
	admCl := srcClient(t, cc)
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	// Both members hold a partition only once the cooperative rebalance's
	// second round is over: a static member closing before it owes the
	// group a rejoin, and leaves.
	weirtest.PollUntil(t, 30*time.Second, "both members to hold a partition", func() bool {
		d := describeGroup(t, adm, group)
		return d.State == "Stable" && len(d.Members) == 2 && !slices.ContainsFunc(d.Members, func(m kadm.DescribedGroupMember) bool {
			a, ok := m.Assigned.AsConsumer()
			return !ok || len(a.Topics) == 0 || len(a.Topics[0].Partitions) == 0
		})
	})
	gone.Close() // a static member: it does not leave

	joiner := srcClient(t, cc, kgo.ConsumerGroup(group), kgo.ConsumeTopics("cd"))
	defer joiner.Close()
	go joiner.PollFetches(t.Context())
	joins := strings.Count(logs.String(), "joining group")
	weirtest.PollUntil(t, 30*time.Second, "the source to join the rebalance", func() bool {
		return strings.Count(logs.String(), "joining group") > joins
	})
	src.Close()
	if st := groupState(t, adm, group); st != "PreparingRebalance" {
		t.Fatalf("the group is %s after the source closed; the test wants it still waiting for the member gone", st)
	}
	if !strings.Contains(logs.String(), "closing without waiting for the group") {
		t.Errorf("the source did not say it closed without waiting:\n%s", logs.String())
	}
}

// groupState returns the group's state as DescribeGroups gives it.
func groupState(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	return describeGroup(t, adm, group).State
}

func describeGroup(t *testing.T, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	ds, err := adm.DescribeGroups(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := ds[group]
	if !ok {
		t.Fatalf("no description of group %q", group)
	}
	return d
}
