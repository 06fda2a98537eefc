package exactlyonce_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestStopRestart stops pipeline-shared.yaml cleanly (SIGTERM) at random
// moments under the stream, exactly once, and starts it again each time:
// a stop drains and commits a final checkpoint, and what the source had
// polled but not handed on when the signal came must be read again by
// the next run, not committed past. The read_committed output must be
// every window once with the right sums.
func TestStopRestart(t *testing.T) {
	t.Parallel()
	r := newSharedRig(t, 8, true)
	r.release()
	const stops = 8
	var in *sharedInstance
	for k := range stops + 1 {
		in = r.start(t, "a", "stop-", "pipeline-shared.yaml")
		// Up once it owns its tasks; the stream may be over by the
		// last restarts on a busy machine.
		weirtest.PollUntil(t, 60*time.Second, "the instance to own its tasks", func() bool { return len(weirtest.OwnedTasks(in.admin)) > 0 })
		if k == stops {
			break
		}
		time.Sleep(time.Duration(200+r.rng.IntN(600)) * time.Millisecond)
		if err := in.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-in.p.Done; err != nil {
			t.Fatalf("stop %d: the instance did not stop cleanly: %v", k+1, err)
		}
	}
	got := consumeUntil(t, r.b.Addrs(), r.want, true, in.p.Done)
	if err := in.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-in.p.Done; err != nil {
		t.Errorf("the last run did not stop cleanly: %v", err)
	}
	checkResults(t, got, r.want, true)
}
