package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

type countingObserver struct{ batches, checkpoints atomic.Int64 }

func (o *countingObserver) BatchCompleted(d time.Duration) {
	if d >= 0 {
		o.batches.Add(1)
	}
}
func (o *countingObserver) CheckpointTaken(uint64, time.Duration) { o.checkpoints.Add(1) }

// Stats are readable during and after a run and add up to the summary;
// the Observer hears of every source batch and checkpoint.
func TestStatsAndObserver(t *testing.T) {
	obs := &countingObserver{}
	sink := &memSink{}
	var cps atomic.Int64
	p := &Pipeline{
		Sources:   []Source{&countSource{n: 2000, keys: 7}},
		Steps:     []Step{keyByStep("key", []string{"k"})},
		Sinks:     []Sink{sink},
		BatchSize: 10,
		Observer:  obs,
		EventTime: []*EventTime{{}},
		Checkpointing: &Checkpointing{Interval: time.Millisecond, Commit: func(context.Context, *Checkpoint) error {
			cps.Add(1)
			return nil
		}},
	}
	if st := p.Stats(); st.Running || st.Watermark != NoWatermark {
		t.Fatalf("stats before Run: %+v", st)
	}
	done := make(chan Summary)
	go func() {
		sum, err := p.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	// The live counts, sampled until the sink has everything, never run
	// ahead of the stage before.
	weirtest.PollUntil(t, time.Minute, "the sink to have every record", func() bool {
		st := p.Stats()
		if len(st.Steps) == 0 {
			return false // the run has not started
		}
		if st.Steps[0].In > st.Sources[0].Out+10 || st.Sinks[0].In > st.Steps[0].Out {
			t.Fatalf("live counts out of order: %+v", st.Summary)
		}
		return !st.Running || st.Sinks[0].In >= 2000
	})
	sum := <-done
	st := p.Stats()
	if st.Running || st.Sources[0].Out != 2000 || st.Steps[0].Out != 2000 || st.Sinks[0].Out != 2000 || sum.Sinks[0].Out != 2000 {
		t.Fatalf("stats after Run: %+v, summary %+v", st, sum)
	}
	if st.Watermark != 1999 || st.Checkpoints != cps.Load() || st.LastCheckpoint != uint64(cps.Load()) {
		t.Fatalf("watermark %d, checkpoints %d (last %d), want 1999 and %d", st.Watermark, st.Checkpoints, st.LastCheckpoint, cps.Load())
	}
	// 200 full batches, and a partial one at each barrier that cut one.
	if b := obs.batches.Load(); b < 200 || b > 200+cps.Load() || obs.checkpoints.Load() != cps.Load() {
		t.Fatalf("observer heard %d batches and %d checkpoints, want 200 to %d and %d", b, obs.checkpoints.Load(), 200+cps.Load(), cps.Load())
	}
}
