package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// runner is one call of Pipeline.Run: what the sources, the dispatcher, the
// workers and the sink loop share. Its fields are set up before any of
// those goroutines starts and only read afterwards, except where a comment
// names the one goroutine that owns a field.
type runner struct {
	p   *Pipeline
	ctx context.Context // the caller's: when done, the sources stop
	// hard is cancelled only by a failure, with its cause, through fail:
	// then nothing more is processed and queued work is discarded.
	hard context.Context
	fail context.CancelCauseFunc
	st   *runStats

	batchSize, depth, par int
	ck                    *Checkpointing // nil without checkpoints
	restore               *Checkpoint    // the checkpoint the run continues from, or nil

	segs []*segment
	// shape is the run's Pipeline.shapeOf, in a run that keeps its keyed
	// operators' instances (Tasks.Kept). changed says an operator was
	// given records or a watermark since the last checkpoint (or the
	// restore): their memory is then ahead of the store's checkpoint.
	shape   string
	changed atomic.Bool
	// terminals counts the segments still running whose workers hand
	// their pieces to the sink loop: the last, and every one before a
	// repartition. reparts is the sink loop's view of each repartition;
	// topics are their topics.
	terminals atomic.Int32
	reparts   []repartitionState
	topics    []string
	pool      *pool
	srcCh     chan *batch // the sources' batches, to the dispatcher
	sinkCh    chan *piece // the last segment's pieces, to the sink loop
	bar       *barrier    // nil without checkpoints
	outs      []*Out      // by source
	work      *busy       // what a checkpoint waits for

	// wms, lastWM and epoch are the dispatcher's; the final checkpoint
	// reads them after the dispatcher has ended. lastWM is the last
	// watermark forwarded but the final one; entryWM, by repartition, the
	// last forwarded after it.
	wms     *watermarks
	lastWM  int64
	entryWM []int64
	epoch   uint64

	// unflushed is the sink loop's: the pieces it wrote to the synchronous
	// outputs since the last flush, which releases each piece's hold on
	// its batch.
	unflushed []*piece
}

// noteChange notes that an operator is given records or a watermark
// (runner.changed). Workers call it for every piece: a load first, so
// that they do not contend for the flag's cache line once it is set.
func (r *runner) noteChange() {
	if !r.changed.Load() {
		r.changed.Store(true)
	}
}

// newRunner prepares a run of p with its defaults; it starts nothing. The
// caller must call fail once the run is over.
func (p *Pipeline) newRunner(ctx context.Context, st *runStats) *runner {
	r := &runner{p: p, ctx: ctx, st: st, ck: p.Checkpointing, par: max(p.Parallelism, 1),
		batchSize: p.BatchSize, depth: p.QueueDepth, lastWM: NoWatermark, work: newBusy()}
	if r.batchSize <= 0 {
		r.batchSize = 512
	}
	if r.depth <= 0 {
		r.depth = 4
	}
	if r.ck != nil && r.ck.Restore != nil {
		cp := *r.ck.Restore // Fit replaces or reslices, never writes, its slices
		cp.Fit(len(p.Repartitions), len(p.Sources))
		r.restore = &cp
	}
	r.hard, r.fail = context.WithCancelCause(context.WithoutCancel(ctx))
	return r
}

// prepare checks the checkpoint settings, makes the operators and the
// queues, and continues from the checkpoint to restore, if any. When it
// fails, it has closed everything Run would close.
func (r *runner) prepare() error {
	if err := r.checkCheckpointing(); err != nil {
		return r.closeAll(err)
	}
	var kept map[slot]*split
	if tk := r.p.Tasks; tk != nil && tk.Kept != nil {
		r.shape = r.p.shapeOf(r.par)
		kept = tk.Kept.take(context.WithoutCancel(r.ctx), r.shape, tk.Owned, r.restore != nil, tk.OnKept)
	}
	var err error
	r.segs, err = r.p.segments(r.hard, r.par, r.depth, kept)
	if err != nil {
		closeKept(context.WithoutCancel(r.ctx), kept, nil) // those not reached
	}
	if err == nil {
		err = r.cutRepartitions()
	}
	if err == nil && r.restore != nil {
		err = r.p.restoreOperators(r.hard, r.segs, r.par, r.restoredWatermark)
	}
	if err != nil {
		return r.closeAll(err)
	}
	r.makeQueues()
	if r.restore != nil {
		if err := r.restoreCheckpoint(); err != nil {
			return r.closeAll(fmt.Errorf("restoring checkpoint %d: %w", r.restore.Epoch, err))
		}
	}
	return nil
}

func (r *runner) checkCheckpointing() error {
	if r.ck == nil {
		return nil
	}
	if r.ck.Commit == nil {
		return errNoCommit
	}
	return Checkpointable(r.p.Sources)
}

// makeQueues makes the pool of batches, the channels between the stages
// and each source's Out.
func (r *runner) makeQueues() {
	p := r.p
	// A source may hold one more batch for a barrier or end marker.
	r.pool = newPool(2*r.depth*r.par+2*len(p.Sources)+2, r.batchSize)
	r.srcCh = make(chan *batch, r.depth)
	r.sinkCh = make(chan *piece, r.depth*r.par)
	if r.ck != nil {
		r.bar = newBarrier()
	}
	r.outs = make([]*Out, len(p.Sources))
	for i, s := range p.Sources {
		r.outs[i] = &Out{ctx: r.hard, pool: r.pool, ch: r.srcCh, source: i, name: s.Name(),
			batchSize: r.batchSize, bar: r.bar, live: &r.st.sources[i], reparts: r.topics}
		if i < len(p.EventTime) {
			r.outs[i].et = p.EventTime[i]
		}
		if r.bar != nil {
			_, snap := s.(Snapshotter)
			r.outs[i].auto = !snap
		}
	}
	if r.bar != nil {
		r.bar.outs = r.outs
	}
	r.wms = newWatermarks(p.EventTime, len(p.Sources), r.topics, time.Now)
}

// restoreCheckpoint puts the sources, the file outputs, event time and
// the dispatcher's watermark and epoch where the checkpoint left them.
func (r *runner) restoreCheckpoint() error {
	if err := r.p.restoreSources(r.restore, r.outs); err != nil {
		return err
	}
	if err := r.wms.restore(r.restore.Times); err != nil {
		return err
	}
	r.lastWM, r.epoch = r.restore.Watermark, r.restore.Epoch
	if len(r.restore.Entries) == len(r.entryWM) {
		copy(r.entryWM, r.restore.Entries)
	}
	return nil
}

// restoredWatermark is the watermark the operators of segment s were
// given at the checkpoint the run continues from: the sources' before a
// repartition, the repartition's after it (none if the checkpoint was
// taken without it).
func (r *runner) restoredWatermark(s *segment) int64 {
	if s.domain == 0 {
		return r.restore.Watermark
	}
	if j := s.domain - 1; j < len(r.restore.Entries) {
		return r.restore.Entries[j]
	}
	return NoWatermark
}

// startSources runs every source on a goroutine of its own, and closes
// srcCh once they have all returned.
func (r *runner) startSources() {
	var wg sync.WaitGroup
	for i, s := range r.p.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.runSource(s, r.outs[i])
		}()
	}
	go func() {
		wg.Wait()
		close(r.srcCh)
	}()
}

// runSource runs one source. Its returning the caller's own cancellation
// is how it stops, not a failure.
func (r *runner) runSource(s Source, out *Out) {
	err := s.Run(r.ctx, out)
	out.publish()
	stopped := r.ctx.Err() != nil && errors.Is(err, r.ctx.Err())
	if err != nil && !stopped && r.hard.Err() == nil {
		r.fail(err)
	}
	out.end()
}

// complete finishes a batch once every piece made from it has been written
// and acknowledged by every sink and the dead-letter output: its source
// learns the positions it covered, and the batch, with its pieces, goes
// back to the pool. It runs on whichever goroutine finishes the last piece
// of work. Batches made by workers for what operators emit on a watermark
// have no source and are not from the bounded pool.
func (r *runner) complete(b *batch, err error) {
	if err != nil {
		r.fail(err)
		return
	}
	defer r.work.done()
	if r.p.Observer != nil && b.source >= 0 {
		r.p.Observer.BatchCompleted(time.Since(b.taken))
	}
	if b.source < 0 {
		b.reset()
		emitPool.Put(b)
		return
	}
	if a, ok := r.p.Sources[b.source].(Acker); ok && len(b.positions) > 0 {
		a.Ack(b.positions)
	}
	r.pool.put(b)
}

// hold makes b's Ack complete b, holding one count for the goroutine that
// hands b's pieces on.
func (r *runner) hold(b *batch) {
	b.ack.reset(func(err error) { r.complete(b, err) })
}

// newEmit makes a batch for what a worker's operators emit on a watermark,
// held by the worker until it has handed it on.
func (r *runner) newEmit() *batch {
	r.work.add()
	b := emitPool.Get().(*batch)
	b.source = -1
	r.hold(b)
	return b
}

// send hands pc on, unless the run has failed, when nobody may be
// receiving any more.
//
// A send that finds the queue full adds the time it waits to blocked, when
// that is not nil: the backpressure on the sender (Counts.Blocked). A send
// that finds room costs one non-blocking attempt more, and reads no clock.
func (r *runner) send(ch chan<- *piece, pc *piece, blocked *atomic.Int64) {
	select {
	case ch <- pc:
		return
	default:
	}
	var start time.Time
	if blocked != nil {
		start = time.Now()
	}
	select {
	case ch <- pc:
	case <-r.hard.Done():
	}
	if blocked != nil {
		blocked.Add(int64(time.Since(start)))
	}
}

// closeInput tells segment si that nothing more comes.
func (r *runner) closeInput(si int) {
	for _, ch := range r.segs[si].in {
		close(ch)
	}
}

// finalCheckpoint is taken when the run ends normally: every source has
// ended or stopped, and everything it read has drained.
func (r *runner) finalCheckpoint() {
	if r.ck == nil || r.hard.Err() != nil {
		return
	}
	if err := r.checkpoint(time.Now()); err != nil {
		r.fail(err)
	}
}

// closeAll closes the operators, then the outputs and sources
// (Pipeline.closeOutputs), and returns err, which stopped the run or nil,
// joined with what closing them returned.
func (r *runner) closeAll(err error) error {
	errs := []error{err}
	for _, s := range r.segs {
		for w, ops := range s.ops {
			for j, op := range ops {
				if sp, ok := op.(*split); ok {
					// The caller arms or drops what it keeps.
					r.p.Tasks.Kept.put(r.shape, slot{s.first + j, w}, sp, !r.changed.Load())
					continue
				}
				if err := op.Close(context.WithoutCancel(r.ctx)); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(append(errs, r.p.closeOutputs()...)...)
}
