package engine

import (
	"fmt"
	"slices"
	"time"
)

// checkpointer is the dispatcher's side of checkpoint barriers: a
// checkpoint starts when timer fires, asking every source for a barrier
// (see barrier), and is taken once every source has paused at one or
// ended. It is used by the dispatcher goroutine only.
type checkpointer struct {
	r       *runner
	t       *time.Timer
	timer   <-chan time.Time // nil without checkpoints on an interval
	soon    <-chan struct{}  // Checkpointing.Soon, or nil without checkpoints on an interval
	pending bool             // a checkpoint was requested and is not yet taken
	asked   time.Time        // when the pending checkpoint was requested
	paused  []bool           // by source: at the pending checkpoint's barrier
	ended   []bool           // by source
}

func (r *runner) newCheckpointer() *checkpointer {
	n := len(r.p.Sources)
	c := &checkpointer{r: r, paused: make([]bool, n), ended: make([]bool, n)}
	if r.ck != nil && r.ck.Interval > 0 {
		c.t = time.NewTimer(r.ck.Interval)
		c.timer = c.t.C
		c.soon = r.ck.Soon
	}
	return c
}

// requestSoon starts a checkpoint now, unless one is pending: the next
// on the interval is timed from its end.
func (c *checkpointer) requestSoon() {
	if c.pending {
		return
	}
	c.t.Stop()
	c.request()
}

func (c *checkpointer) stop() {
	if c.t != nil {
		c.t.Stop()
	}
}

// request starts a checkpoint, when its timer fires.
func (c *checkpointer) request() {
	if c.r.hard.Err() != nil {
		return
	}
	c.pending, c.asked = true, time.Now()
	c.r.bar.request()
	c.maybeCheckpoint()
}

// marker notes a source's news: it paused at a barrier, or ended.
func (c *checkpointer) marker(b *batch) {
	if b.marker == markerEnd {
		c.ended[b.source] = true
	} else {
		c.paused[b.source] = true
	}
	c.r.pool.put(b)
	if c.r.hard.Err() == nil {
		c.maybeCheckpoint()
	}
}

// maybeCheckpoint takes the pending checkpoint once every source is at
// its barrier or has ended, then lets the sources go on and starts the
// wait for the next.
func (c *checkpointer) maybeCheckpoint() {
	if !c.pending || !c.inBarrier() {
		return
	}
	if err := c.r.checkpoint(c.asked); err != nil {
		c.r.fail(err)
	}
	c.pending = false
	clear(c.paused)
	c.r.bar.release()
	c.t.Reset(c.r.ck.Interval)
}

func (c *checkpointer) inBarrier() bool {
	for i := range c.paused {
		if !c.paused[i] && !c.ended[i] {
			return false
		}
	}
	return true
}

// checkpoint takes a checkpoint of the quiesced pipeline, requested at
// requested: every source is at a barrier or has ended, and checkpoint
// waits until nothing is in flight. It runs on the dispatcher goroutine,
// or, for the final checkpoint, on Run's once the dispatcher has ended.
func (r *runner) checkpoint(requested time.Time) error {
	if err := r.work.wait(r.hard); err != nil {
		return err
	}
	r.epoch++
	scs, err := r.p.snapshotSources(r.outs, r.wms)
	if err != nil {
		return err
	}
	cp := &Checkpoint{Epoch: r.epoch, Sources: scs, Watermark: r.lastWM, Entries: slices.Clone(r.entryWM), Times: r.wms.snapshot()}
	if err := r.ck.Commit(r.hard, cp); err != nil {
		if r.st.tap != nil {
			r.st.tap.CheckpointFailed(r.epoch, err)
		}
		return fmt.Errorf("checkpoint %d: %w", r.epoch, err)
	}
	r.changed.Store(false) // quiesced: nothing runs until the sources go on
	if err := r.notifyListeners(cp); err != nil {
		return err
	}
	pause := time.Since(requested)
	r.st.checkpoints.Add(1)
	r.st.lastEpoch.Store(r.epoch)
	r.st.lastPause.Store(int64(pause))
	if r.p.Observer != nil {
		r.p.Observer.CheckpointTaken(r.epoch, pause)
	}
	return nil
}

// notifyListeners tells the CheckpointListener sources that cp is durable.
func (r *runner) notifyListeners(cp *Checkpoint) error {
	for _, s := range r.p.Sources {
		if l, ok := s.(CheckpointListener); ok {
			if err := l.CheckpointComplete(r.hard, cp); err != nil {
				return fmt.Errorf("checkpoint %d: source %q: %w", cp.Epoch, s.Name(), err)
			}
		}
	}
	return nil
}
