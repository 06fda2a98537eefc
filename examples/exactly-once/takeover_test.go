package exactlyonce_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestSharedTakeoverGoesOn runs pipeline-shared.yaml as two instances,
// without standby replicas, and SIGKILLs one once they
// share the tasks, while a transaction stays open on its tasks'
// changelog partitions, as one a dead owner left open mid-checkpoint
// does until the brokers abort it. When the killed instance's session
// times out, the survivor is given its tasks: it must go on processing
// its own (its source reads the last third of the stream, released
// then) while it catches up with the new tasks in the background, which
// waits for the open transaction. Once the transaction is aborted, it
// catches up and starts again with every task, replaying at the switch
// less than a quarter of the changelog and, at least once, reading no
// record a second time. Exactly once, the read_committed
// output is the reference exactly; at least once, every window with the
// right sum, and nothing else but repeats.
func TestSharedTakeoverGoesOn(t *testing.T) {
	t.Parallel()
	for i, mode := range []string{"exactly_once", "at_least_once"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			takeoverGoesOn(t, mode, newSharedRig(t, 7+uint64(i), true))
		})
	}
}

func takeoverGoesOn(t *testing.T, mode string, r *sharedRig) {
	start := func(name string) *sharedInstance {
		return r.start(t, name, "takeover-", "pipeline-shared.yaml", "WEIR_CHECKPOINTS_DELIVERY="+mode)
	}
	a, bb := start("a"), start("b")
	a.waitRead(t, "a reading")
	// b may find nothing left to read in its tasks' partitions until the
	// last third of the stream is released, below.
	waitShared(t, "a and b to share every task", a, bb)
	const changelog = "sensor-sums-shared-changelog"
	held := holdOpen(t, r.b.Addrs(), changelog, weirtest.OwnedTasks(bb.admin))
	const catching, waiting, caught = "catching up with their changelog partitions while the run goes on with its own",
		"waiting for the transactions open on the partitions to end", "caught up with their changelog partitions"
	before, caughtAtKill := strings.Count(readLog(a.p), catching), strings.Count(readLog(a.p), caught)
	if err := bb.p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-bb.p.Done
	killed := time.Now()
	weirtest.PollUntil(t, 60*time.Second, "a to catch up with b's tasks beside its own, waiting for the open transaction", func() bool {
		log := readLog(a.p)
		i := nthIndex(log, catching, before)
		return i >= 0 && strings.Contains(log[i:], waiting)
	})
	began := time.Since(killed)
	r.release()
	from := sourceRecords(a.admin)
	weirtest.PollUntil(t, 60*time.Second, "a's source to read records of its own tasks while it catches up", func() bool {
		n := sourceRecords(a.admin)
		if strings.Count(readLog(a.p), caught) > caughtAtKill {
			t.Fatalf("a caught up with b's tasks while a transaction was open on their changelog partitions, its source having read %d records meanwhile", n-from)
		}
		return n > from
	})
	caughtBefore := strings.Count(readLog(a.p), caught)
	if err := held.EndTransaction(context.Background(), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	aborted := time.Since(killed)
	var line, caughtLine string
	weirtest.PollUntil(t, 60*time.Second, "a to catch up and start again with every task", func() bool {
		log := readLog(a.p)
		i := nthIndex(log, caught, caughtBefore)
		if i < 0 {
			return false
		}
		lines := strings.Split(log[strings.LastIndex(log[:i], "\n")+1:], "\n")
		caughtLine = lines[0]
		for _, l := range lines {
			if strings.Contains(l, `msg="kafka source: the run starts again from the last checkpoint"`) && line != "" {
				// At least once the run ended as a stop does, at its
				// final checkpoint: it redoes nothing.
				if n := logInt(t, l, "read_again"); n != 0 && mode == "at_least_once" {
					t.Errorf("a's run with every task started again reading %d records a second time: %s", n, l)
				}
				return true
			}
			if strings.Contains(l, `msg="tasks restored from the changelog"`) && strings.Contains(l, fmt.Sprintf("tasks=%q", allTasks(sharedPartitions))) {
				line = l
			}
		}
		return false
	})
	t.Logf("after the kill: catching up from %.1f s, the open transaction aborted at %.1f s; the switch took %s (caught up to the restored run)",
		began.Seconds(), aborted.Seconds(), logTime(t, line).Sub(logTime(t, caughtLine)))
	// The run stopped at a checkpoint (at least once its final one;
	// exactly once the one recording the caught-up state, its
	// transaction then aborting with nothing after it), so the next
	// goes on with its keyed operators' instances, the gained tasks'
	// state loaded while it went on with its own.
	checkKeptOperators(t, readLog(a.p), caughtLine)
	got := consumeUntil(t, r.b.Addrs(), r.want, mode == "exactly_once", a.p.Done)
	checkTail(t, r.b.Addrs(), changelog, line)
	stopCleanly(t, "a", a.p)
	dup := checkResults(t, got, r.want, mode == "exactly_once")
	t.Logf("%s: %d results, %d windows, %d duplicates", mode, len(got), len(r.want), dup)
}

// logTime returns the time of a log line.
func logTime(t *testing.T, line string) time.Time {
	t.Helper()
	_, rest, _ := strings.Cut(line, "time=")
	v, _, _ := strings.Cut(rest, " ")
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("no time in %q: %v", line, err)
	}
	return at
}

// holdOpen begins a transaction that writes a record to each of the
// partitions of topic and leaves it open, for the caller to end.
func holdOpen(t *testing.T, addrs []string, topic string, partitions []int32) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID("held-open"), kgo.TransactionTimeout(5*time.Minute),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, p := range partitions {
		rec := &kgo.Record{Topic: topic, Partition: p, Key: []byte("held-open"), Value: []byte("never committed")}
		if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// nthIndex returns the index of occurrence n of sub in s, counting
// from 0, or -1 if there are not that many.
func nthIndex(s, sub string, n int) int {
	at := 0
	for range n {
		i := strings.Index(s[at:], sub)
		if i < 0 {
			return -1
		}
		at += i + len(sub)
	}
	i := strings.Index(s[at:], sub)
	if i < 0 {
		return -1
	}
	return at + i
}

// keptOperators is the log line saying that a run goes on with the last
// run's keyed operators.
const keptOperators = `msg="the run goes on with the last run's keyed operators`

// checkKeptOperators checks that the run started after log line from
// went on with the last run's keyed operators, every instance with the
// gained tasks' state preloaded.
func checkKeptOperators(t *testing.T, log, from string) {
	t.Helper()
	rest := log[strings.Index(log, from):]
	i := strings.Index(rest, keptOperators)
	if i < 0 {
		t.Fatalf("the run after the catch-up did not go on with the last run's keyed operators; log since:\n%s", rest)
	}
	l := rest[i:]
	l = l[:strings.IndexByte(l, '\n')]
	if n, p := logInt(t, l, "instances"), logInt(t, l, "preloaded"); n == 0 || p != n {
		t.Fatalf("the run went on with %d keyed operator instances, %d of them with the gained tasks preloaded; want all: %s", n, p, l)
	}
	t.Logf("kept: %s", l)
}
