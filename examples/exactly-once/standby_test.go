package exactlyonce_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/broker"
)

// weirProc is a weir process whose output goes to a log file.
type weirProc = weirtest.Proc

// startWeir runs weir run pipeline.yaml with env, logging to dir/name.log.
func startWeir(t *testing.T, dir, name string, env []string) *weirProc {
	t.Helper()
	return startPipeline(t, dir, name, env, "pipeline.yaml")
}

// startPipeline runs weir run with args (the pipeline file, and any
// flags) and env, logging to dir/name.log (weirtest.Start).
func startPipeline(t testing.TB, dir, name string, env []string, args ...string) *weirProc {
	t.Helper()
	return weirtest.Start(t, dir, name, env, append([]string{"run", "--log-level", "debug"}, args...)...)
}

// TestStandbyTakesOver runs the pipeline as two instances on two
// "machines" (each its own state directory and instance_id) under a steady
// stream of readings. The second waits as a standby while the first runs,
// applying the first's checkpoints from the changelog to its own store;
// the first is then killed (SIGKILL), and the standby takes over once the
// group's session for the first expires, replaying only the changelog's
// tail, and finishes the job. A read_committed consumer must see every
// window once, with the right sums.
func TestStandbyTakesOver(t *testing.T) {
	t.Parallel()
	b, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "readings", "sums"), kfake.SeedTopics(1, "readings.dead"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// describes counts the broker's DescribeGroups requests: a standby
	// sends one each time it asks whether the group is empty.
	var describes atomic.Int64
	b.ControlKey(kmsg.DescribeGroups.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		describes.Add(1)
		return nil, nil, false // not handled: the broker answers, and the function stays
	})
	dir := t.TempDir()
	env := func(machine string) []string {
		if err := os.MkdirAll(filepath.Join(dir, machine), 0o755); err != nil {
			t.Fatal(err)
		}
		return append(os.Environ(),
			"WEIR_KAFKA_BROKERS="+strings.Join(b.ListenAddrs(), ","),
			"WEIR_STATE_DIR="+filepath.Join(dir, machine, "state"),
			"WEIR_SOURCES_READINGS_INSTANCE_ID=sensor-sums-"+machine,
			"WEIR_SOURCES_READINGS_SESSION_TIMEOUT=6s",
		)
	}
	want, stopProducing := produce(t, b.ListenAddrs())
	defer stopProducing()

	active := startWeir(t, dir, "a", env("a"))
	weirtest.PollUntil(t, 30*time.Second, "the first instance to take a checkpoint", func() bool { return active.Logged(`msg=checkpoint`) })
	standby := startWeir(t, dir, "b", env("b"))
	weirtest.PollUntil(t, 30*time.Second, "the second instance to wait as a standby", func() bool {
		return standby.Logged("waiting as a standby")
	})
	weirtest.PollUntil(t, 30*time.Second, "the standby to apply the active instance's checkpoints from the changelog", func() bool {
		return standby.Logged("standby: keeping the state up to date from the changelog")
	})
	// The active instance goes on; the standby asks again and must not
	// start. The active instance, reading, describes the group no more,
	// but its check at its first assignment may still be on its way:
	// three more requests hold at least one whole ask of the standby's,
	// answered and acted on.
	asked := describes.Load()
	weirtest.PollUntil(t, 30*time.Second, "the standby to ask again whether the group is empty", func() bool {
		return describes.Load() >= asked+3
	})
	// A standby that took over at that ask logged so before its source
	// could describe the group again.
	if standby.Logged("taking over") || standby.Logged(`msg=checkpoint`) || standby.Logged("state restored") || standby.Logged("resuming from") {
		t.Fatal("the standby started while the active instance ran")
	}
	if err := active.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-active.Done
	killed := time.Now()
	weirtest.PollUntil(t, 60*time.Second, "the standby to take over", func() bool { return standby.Logged("taking over") })
	t.Logf("the standby took over %v after the kill", time.Since(killed).Round(time.Millisecond))

	got := consumeUntil(t, b.ListenAddrs(), want, true, standby.Done)
	if err := standby.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-standby.Done; err != nil {
		t.Errorf("the standby did not stop cleanly: %v", err)
	}
	// Taking over, it replays only what came after its last look: far
	// less than the changelog holds.
	logText, _ := os.ReadFile(standby.Log)
	total := changelogChanges(t, b.ListenAddrs())
	if i := strings.Index(string(logText), `msg="state restored from the changelog"`); i >= 0 {
		line := strings.SplitN(string(logText[i:]), "\n", 2)[0]
		var n int
		if _, err := fmt.Sscanf(line[strings.Index(line, "changes="):], "changes=%d", &n); err != nil {
			t.Fatalf("the restore line %q: %v", line, err)
		}
		t.Logf("at the takeover: %d of the changelog's %d state changes replayed: %s", n, total, line)
		if n*4 > total {
			t.Errorf("the standby replayed %d of the changelog's %d state changes at the takeover: more than its tail", n, total)
		}
	} else {
		t.Logf("at the takeover: nothing left to replay of the changelog's %d state changes", total)
	}
	dup := checkResults(t, got, want, true)
	t.Logf("%d results, %d windows, %d duplicates", len(got), len(want), dup)
}

// TestRebalanceDuringTransaction lets a foreign consumer join the
// pipeline's consumer group for two seconds while the pipeline runs under
// a steady stream: the group rebalances during a transaction, which
// aborts. The pipeline rolls its state back to the last checkpoint, waits
// as a standby while the foreign member stays, and starts again from the
// checkpoint, in the same process. A read_committed consumer must still
// see every window once, with the right sums.
func TestRebalanceDuringTransaction(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{Topics: fmt.Sprintf("readings:%d,sums:%d,readings.dead:1", partitions, partitions)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	// The second half of the stream flows only once the foreign member
	// joins, so that the transaction the rebalance aborts holds state
	// changes to roll back.
	flow := make(chan struct{})
	want, stopProducing := produceGated(t, b.Addrs(), flow)
	defer stopProducing()
	p := startWeir(t, dir, "weir", append(os.Environ(),
		"WEIR_KAFKA_BROKERS="+strings.Join(b.Addrs(), ","),
		"WEIR_STATE_DIR="+filepath.Join(dir, "state"),
	))
	weirtest.PollUntil(t, 30*time.Second, "a checkpoint", func() bool { return p.Logged(`msg=checkpoint`) })

	// The foreign member: it reads but never commits, so the pipeline
	// resumes where its last transaction left the group's offsets.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumerGroup("sensor-sums"), kgo.ConsumeTopics("readings"),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	close(flow)
	for ctx.Err() == nil {
		cl.PollFetches(ctx)
	}
	cancel()
	cl.Close() // leaves the group
	weirtest.PollUntil(t, 30*time.Second, "the in-process restart", func() bool { return p.Logged("rolled the state back to the last checkpoint") })

	got := consumeUntil(t, b.Addrs(), want, true, p.Done)
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.Done; err != nil {
		t.Errorf("the pipeline did not stop cleanly: %v", err)
	}
	if !p.Logged("waiting as a standby") {
		t.Error("the pipeline did not wait for the foreign member to leave")
	}
	if !p.Logged("state: rolled back writes made after the last checkpoint") {
		t.Error("the aborted transaction's state changes were not rolled back")
	}
	dup := checkResults(t, got, want, true)
	t.Logf("%d results, %d windows, %d duplicates", len(got), len(want), dup)
}
