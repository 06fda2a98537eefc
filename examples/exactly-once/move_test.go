package exactlyonce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestSharedMoveRedoesNothing runs pipeline-shared.yaml at least once
// with checkpoints only every 5 seconds, first as instance a alone, then
// with b, to which the group moves half of a's tasks while the stream
// flows (a reads on after it). The move waits for a checkpoint that a
// takes at once, so a's run, which ends for the tasks it lost, starts
// again reading none of its records a second time (without that, it
// would read again up to 5 seconds of them), going on with its keyed
// operators, which forget the lost tasks. Then b stops cleanly and a
// takes its tasks back. Every window must come with the right sum, and
// nothing else but repeats.
func TestSharedMoveRedoesNothing(t *testing.T) {
	t.Parallel()
	moveRedoesNothing(t, newSharedRigAt(t, 11, true, moveRate))
}

// moveRate is the readings a second of TestSharedMoveRedoesNothing: the
// first two thirds of the stream last 25 s, so that the move comes while
// they flow.
const moveRate = sharedRecords * 2 / 3 / 25

func moveRedoesNothing(t *testing.T, r *sharedRig) {
	env := []string{"WEIR_CHECKPOINTS_DELIVERY=at_least_once", "WEIR_CHECKPOINTS_INTERVAL=5s"}
	a := r.start(t, "a", "move-", "pipeline-shared.yaml", env...)
	a.waitRead(t, "a reading")
	waitOwnAll(t, "a to own every task", a)
	bb := r.start(t, "b", "move-", "pipeline-shared.yaml", env...)
	waitShared(t, "a and b to share every task", a, bb)
	from := sourceRecords(a.admin)
	weirtest.PollUntil(t, 60*time.Second, "a to read on after the move (the stream still flowing)", func() bool { return sourceRecords(a.admin) > from })
	losses := restartsAfterLoss(t, readLog(a.p))
	if len(losses) == 0 {
		t.Fatalf("a shares the tasks with b, but its log shows no run that ended for tasks taken away")
	}
	again, kept := 0, 0
	var pauses []string
	for _, l := range losses {
		if l.kept {
			kept++
		}
		if n := logInt(t, l.again, "read_again"); n != 0 {
			again += n
			t.Errorf("after the group took tasks from a, a's run started again reading %d records a second time: %s", n, l.again)
		}
		pauses = append(pauses, logTime(t, l.again).Sub(logTime(t, l.lost)).Round(time.Millisecond).String())
	}
	t.Logf("a's runs after a loss: %d, reading %d records again in all, %d going on with the last run's keyed operators; from the loss to the next run reading: %s",
		len(losses), again, kept, strings.Join(pauses, ", "))
	if kept == 0 {
		// The loss came at a checkpoint, with nothing given to the
		// operators after it: their instances forget the lost tasks
		// rather than restore the kept ones.
		t.Errorf("no run after a loss went on with the last run's keyed operators")
	}
	r.release()
	bb.waitRead(t, "b reading")
	stopCleanly(t, "b", bb.p)
	got := consumeUntil(t, r.b.Addrs(), r.want, false, a.p.Done)
	stopCleanly(t, "a", a.p)
	dup := checkResults(t, got, r.want, false)
	t.Logf("%d results, %d windows, %d duplicates", len(got), len(r.want), dup)
}

// lossLines are, for a run that ended because the group took tasks away,
// the line saying so and the line in which the source starts the next
// run from the last checkpoint, saying how many records it reads again.
type lossLines struct {
	lost, again string
	kept        bool // the next run went on with the last one's keyed operators
}

// restartsAfterLoss returns the lossLines of every run of the log's
// instance that ended because the group took tasks away.
func restartsAfterLoss(t *testing.T, log string) []lossLines {
	t.Helper()
	const lost, again = "the consumer group moved tasks; the run rolls back", `msg="kafka source: the run starts again from the last checkpoint"`
	var out []lossLines
	var cur string
	kept := false
	for _, l := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(l, lost):
			cur = l
		case cur != "" && strings.Contains(l, keptOperators):
			kept = true
		case cur != "" && strings.Contains(l, again):
			out = append(out, lossLines{cur, l, kept})
			cur, kept = "", false
		}
	}
	return out
}
