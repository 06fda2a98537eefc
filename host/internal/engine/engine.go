package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// Operator is one step of the chain, as run by one worker. Process handles
// in, appending outputs and dead letters to out, and returns an error only
// when the pipeline cannot go on. An Operator is used by one goroutine.
type Operator interface {
	Name() string
	Process(ctx context.Context, in []record.Record, out *record.Output) error
	Close(ctx context.Context) error
}

// Step is one operator of the chain. The engine makes one instance of it per
// worker with New.
type Step struct {
	Name string
	// New returns a fresh instance of the operator for one worker.
	New func(ctx context.Context) (Operator, error)
	// BatchSize caps the records per Process call; 0 means the pipeline's.
	BatchSize int
	// KeyBy marks a step that sets record keys (key_by): after it, records
	// are routed to workers by key, so that one key is always processed by
	// the same worker, in order.
	KeyBy bool
	// KeyedState marks a step that keeps state per record key (a window, a
	// plugin that uses keyed state).
	// When no key_by comes before it, the records of its part of the chain
	// are routed to workers by key too, rather than by source partition or
	// in turn: one key's state then lives on one worker, which is also the
	// worker KeyOwner names for it. Records without a key all go to one
	// worker, as Flink runs a window over an unkeyed stream (windowAll) on
	// one.
	KeyedState bool
}

// Pipeline is a runnable pipeline: sources feeding a chain of steps feeding
// every sink. Build it, call Run once. Run closes the steps, the sinks, the
// dead-letter output, and the sources that are io.Closers, in that order, so
// that a source can still commit what the sinks acknowledge while closing.
type Pipeline struct {
	Sources    []Source
	Steps      []Step
	Sinks      []Sink
	DeadLetter DeadLetterSink
	BatchSize  int // records per batch; default 512
	QueueDepth int // batches in flight between stages; default 4
	// Parallelism is the number of workers running each part of the chain;
	// default 1. See the package documentation for how records are routed.
	Parallelism int
	// EventTime, per source (by index; missing or nil means processing
	// time, where the wall clock is the watermark), says where event time
	// comes from and how watermarks follow it.
	EventTime []*EventTime
	// WatermarkInterval is how often watermarks are sent on while input is
	// quiet; default 200ms.
	WatermarkInterval time.Duration
	// Checkpointing, if set, makes the run take checkpoints and, with
	// Restore, continue from one.
	Checkpointing *Checkpointing
	// Observer, if set, is told of batches and checkpoints.
	Observer Observer

	stats atomic.Pointer[runStats] // the current or last run's, for Stats
}

// Counts are a stage's record counts after a run.
type Counts struct {
	Name string
	In   int64
	Out  int64
	Dead int64
}

// Summary reports what a run did, stage by stage.
type Summary struct {
	Sources    []Counts // Out: records read; Dead: records that could not be decoded
	Steps      []Counts // summed over workers
	Sinks      []Counts // In: records given; Out: written; Dead: rejected
	DeadLetter int64    // dead letters written
}

// segment is a run of steps that one worker applies to a piece without
// handing it on: the chain is cut after every key_by, because records must
// then move to the worker that owns their key.
type segment struct {
	first, end int           // the steps [first, end)
	in         []chan *piece // one queue per worker
	ops        [][]Operator  // [worker][step - first]
	keyed      bool          // routed by key (it follows a key_by, or holds KeyedState)
}

// Run runs the pipeline until every source ends, or until ctx is done. When
// ctx is done the sources stop reading, and everything already read drains
// through the steps to the sinks before Run returns; that is a normal end
// and returns nil. Run returns the first error that stopped the pipeline.
func (p *Pipeline) Run(ctx context.Context) (Summary, error) {
	batchSize := p.BatchSize
	if batchSize <= 0 {
		batchSize = 512
	}
	depth := p.QueueDepth
	if depth <= 0 {
		depth = 4
	}
	par := max(p.Parallelism, 1)
	// hard is cancelled only by a failure; ctx only stops the sources.
	hard, fail := context.WithCancelCause(context.WithoutCancel(ctx))
	defer fail(nil)

	st := newRunStats(p)
	p.stats.Store(st)
	st.running.Store(true)
	defer st.running.Store(false)

	ck := p.Checkpointing
	var restore *Checkpoint
	if ck != nil {
		restore = ck.Restore
		err := Checkpointable(p.Sources)
		if ck.Commit == nil {
			err = errNoCommit
		}
		if err != nil {
			return Summary{}, errors.Join(append([]error{err}, p.closeOutputs()...)...)
		}
	}
	segs, err := p.segments(hard, par, depth)
	if err == nil && restore != nil {
		err = p.restoreOperators(hard, segs, par, restore.Watermark)
	}
	closeOps := func() []error {
		var errs []error
		for _, s := range segs {
			for _, ops := range s.ops {
				for _, op := range ops {
					if err := op.Close(context.WithoutCancel(ctx)); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
		return errs
	}
	if err != nil {
		errs := append([]error{err}, closeOps()...)
		errs = append(errs, p.closeOutputs()...)
		return Summary{}, errors.Join(errs...)
	}

	// A source may hold one more batch for a barrier or end marker.
	pool := newPool(2*depth*par+2*len(p.Sources)+2, batchSize)
	srcCh := make(chan *batch, depth)
	sinkCh := make(chan *piece, depth*par)

	var bar *barrier
	if ck != nil {
		bar = newBarrier()
	}
	outs := make([]*Out, len(p.Sources))
	for i, s := range p.Sources {
		outs[i] = &Out{ctx: hard, pool: pool, ch: srcCh, source: i, name: s.Name(), batchSize: batchSize, bar: bar, live: &st.sources[i]}
		if i < len(p.EventTime) {
			outs[i].et = p.EventTime[i]
		}
	}
	if bar != nil {
		bar.outs = outs
		for i, s := range p.Sources {
			if _, ok := s.(Snapshotter); !ok {
				outs[i].auto = true
			}
		}
	}
	wms := newWatermarks(p.EventTime, len(p.Sources), time.Now)
	if restore != nil {
		err := p.restoreSources(restore, outs)
		if err == nil {
			err = wms.restore(restore.Times)
		}
		if err != nil {
			errs := append([]error{fmt.Errorf("restoring checkpoint %d: %w", restore.Epoch, err)}, closeOps()...)
			errs = append(errs, p.closeOutputs()...)
			return Summary{}, errors.Join(errs...)
		}
	}

	var srcWG sync.WaitGroup
	for i, s := range p.Sources {
		srcWG.Add(1)
		go func() {
			defer srcWG.Done()
			out := outs[i]
			err := s.Run(ctx, out)
			out.publish()
			if err != nil && !(ctx.Err() != nil && errors.Is(err, ctx.Err())) && hard.Err() == nil {
				fail(err)
			}
			out.end()
		}()
	}
	go func() {
		srcWG.Wait()
		close(srcCh)
	}()

	// A batch completes when every piece made from it has been written and
	// acknowledged by every sink and the dead-letter output: its source
	// learns the positions it covered, and the batch, with its pieces, goes
	// back to the pool. complete runs on whichever goroutine finishes the
	// last piece of work. Batches made by workers for what operators emit on
	// a watermark have no source and are not from the bounded pool.
	work := newBusy()
	complete := func(b *batch, err error) {
		if err != nil {
			fail(err)
			return
		}
		defer work.done()
		if p.Observer != nil && b.source >= 0 {
			p.Observer.BatchCompleted(time.Since(b.taken))
		}
		if b.source < 0 {
			b.reset()
			emitPool.Put(b)
			return
		}
		if a, ok := p.Sources[b.source].(Acker); ok && len(b.positions) > 0 {
			a.Ack(b.positions)
		}
		pool.put(b)
	}

	// newEmit makes a batch for what a worker's operators emit on a
	// watermark, held by the worker until it has handed it on.
	newEmit := func() *batch {
		work.add()
		b := emitPool.Get().(*batch)
		b.source = -1
		b.ack.reset(func(err error) { complete(b, err) })
		return b
	}
	send := func(ch chan<- *piece, pc *piece) {
		select {
		case ch <- pc:
		case <-hard.Done():
		}
	}
	// forward hands what upstream worker from produced (a piece of records,
	// or nil) to segment si, promising watermark wm: records are routed to
	// the segment's workers, every worker that got no records but is owed a
	// newer watermark gets a watermark-only piece, and after the last segment
	// everything goes to the sinks.
	forward := func(si, from int, sent []int64, pc *piece, wm int64, route func(*record.Record) int) {
		if si == len(segs) {
			if pc != nil {
				send(sinkCh, pc)
			}
			return
		}
		s := segs[si]
		got := make([]bool, par)
		if pc != nil {
			if par == 1 && len(pc.dead) == 0 {
				pc.wm, pc.from = wm, from
				got[0] = true
				send(s.in[0], pc)
			} else {
				parts := pc.root.split(pc.records, par, route)
				if len(pc.dead) > 0 {
					pc.records = nil
					send(sinkCh, pc) // the dead letters go straight to the sinks
				} else {
					pc.root.ack.Done(nil) // pc is consumed
				}
				for w, part := range parts {
					if part != nil {
						part.wm, part.from = wm, from
						got[w] = true
						send(s.in[w], part)
					}
				}
			}
		}
		for w := range par {
			if got[w] {
				sent[w] = wm
			} else if wm > sent[w] {
				sent[w] = wm
				work.add()
				send(s.in[w], watermarkPiece(wm, from))
			}
		}
	}

	// The dispatcher cuts each source batch into pieces for the first
	// segment's workers, and tracks the watermark, which it also sends on a
	// tick so that event time moves on while input is quiet.
	// The dispatcher's watermark and epoch, read by the final checkpoint
	// after it has ended.
	var (
		lastWM = NoWatermark // the last watermark forwarded, but the final one
		epoch  uint64
	)
	if restore != nil {
		lastWM, epoch = restore.Watermark, restore.Epoch
	}
	// checkpoint takes a checkpoint of the quiesced pipeline: every source
	// is at a barrier or has ended, and nothing is in flight.
	checkpoint := func(requested time.Time) error {
		if err := work.wait(hard); err != nil {
			return err
		}
		epoch++
		scs, err := p.snapshotSources(outs)
		if err != nil {
			return err
		}
		cp := &Checkpoint{Epoch: epoch, Sources: scs, Watermark: lastWM, Times: wms.snapshot()}
		if err := ck.Commit(hard, cp); err != nil {
			return fmt.Errorf("checkpoint %d: %w", epoch, err)
		}
		for _, s := range p.Sources {
			if l, ok := s.(CheckpointListener); ok {
				if err := l.CheckpointComplete(hard, cp); err != nil {
					return fmt.Errorf("checkpoint %d: source %q: %w", epoch, s.Name(), err)
				}
			}
		}
		pause := time.Since(requested)
		st.checkpoints.Add(1)
		st.lastEpoch.Store(epoch)
		st.lastPause.Store(int64(pause))
		if p.Observer != nil {
			p.Observer.CheckpointTaken(epoch, pause)
		}
		return nil
	}
	go func() {
		sent := make([]int64, par)
		for i := range sent {
			sent[i] = lastWM
		}
		// Checkpoint barriers: a checkpoint starts when ckTimer fires;
		// it is taken once every source has paused or ended.
		var (
			ckTimer   *time.Timer
			ckC       <-chan time.Time
			pending   bool
			asked     time.Time // when the pending checkpoint was requested
			paused    = make([]bool, len(p.Sources))
			ended     = make([]bool, len(p.Sources))
			inBarrier = func() bool {
				for i := range paused {
					if !paused[i] && !ended[i] {
						return false
					}
				}
				return true
			}
		)
		if ck != nil && ck.Interval > 0 {
			ckTimer = time.NewTimer(ck.Interval)
			defer ckTimer.Stop()
			ckC = ckTimer.C
		}
		maybeCheckpoint := func() {
			if !pending || !inBarrier() {
				return
			}
			if err := checkpoint(asked); err != nil {
				fail(err)
			}
			pending = false
			clear(paused)
			bar.release()
			ckTimer.Reset(ck.Interval)
		}
		defer func() {
			if len(segs) > 0 {
				for _, ch := range segs[0].in {
					close(ch)
				}
			} else {
				close(sinkCh)
			}
		}()
		tick := time.NewTicker(p.watermarkInterval())
		defer tick.Stop()
		rr := 0
		for {
			var b *batch
			select {
			case b = <-srcCh:
			case <-tick.C:
				if hard.Err() == nil {
					lastWM = wms.current()
					st.watermark.Store(lastWM)
					forward(0, 0, sent, nil, lastWM, nil)
				}
				continue
			case <-ckC:
				if hard.Err() == nil {
					pending, asked = true, time.Now()
					bar.request()
					maybeCheckpoint()
				}
				continue
			}
			if b != nil && b.marker != markerNone {
				if b.marker == markerEnd {
					ended[b.source] = true
				} else {
					paused[b.source] = true
				}
				pool.put(b)
				if hard.Err() == nil {
					maybeCheckpoint()
				}
				continue
			}
			if b == nil { // every source has ended
				if hard.Err() == nil && ctx.Err() == nil {
					// The input is complete: every window may close,
					// as Flink's final watermark at the end of a bounded input.
					forward(0, 0, sent, nil, math.MaxInt64, nil)
				}
				return
			}
			if hard.Err() != nil {
				continue // drain so sources are never stuck; nothing more is processed
			}
			work.add()
			if p.Observer != nil {
				b.taken = time.Now()
			}
			wms.announce(b.source, b.announce)
			wms.observe(b.source, b.records)
			b.ack.reset(func(err error) { complete(b, err) })
			if len(b.records) == 0 && len(b.dead) == 0 {
				b.ack.Done(nil) // only announcements: nothing to process
				continue
			}
			pc := b.newPiece(b.records)
			pc.dead = append(pc.dead, b.dead...)
			rr++
			turn := rr % par
			lastWM = wms.current()
			st.watermark.Store(lastWM)
			forward(0, 0, sent, pc, lastWM, func(r *record.Record) int {
				switch {
				case segs[0].keyed:
					return int(hashKey(r.Key) % uint32(par))
				case r.Origin.Partition >= 0:
					return int(hashPartition(r.Origin.Topic, r.Origin.Partition) % uint32(par))
				case r.Key != nil:
					return int(hashKey(r.Key) % uint32(par))
				}
				return turn // unkeyed, unpartitioned: a whole batch per worker, in turn
			})
			b.ack.Done(nil) // the dispatcher's own hold
		}
	}()

	// Each segment's workers run its steps on their pieces, and fire
	// event-time operators as the least watermark of their inputs advances.
	byKey := func(r *record.Record) int { return int(hashKey(r.Key) % uint32(par)) }
	segWG := make([]sync.WaitGroup, len(segs))
	for si, s := range segs {
		upstream := 1
		if si > 0 {
			upstream = par
		}
		for w := range par {
			segWG[si].Add(1)
			go func() {
				defer segWG[si].Done()
				in := make([]int64, upstream) // the watermark of each input
				for i := range in {
					in[i] = NoWatermark
				}
				cur := NoWatermark
				sent := make([]int64, par)
				for i := range sent {
					sent[i] = NoWatermark
				}
				for pc := range s.in[w] {
					if hard.Err() != nil {
						continue
					}
					in[pc.from] = max(in[pc.from], pc.wm)
					var data *piece
					wmOnly := pc.wmOnly
					if wmOnly {
						pc.reset()
						piecePool.Put(pc)
					} else {
						if err := p.runSegment(hard, s, w, pc, batchSize); err != nil {
							fail(err)
							continue
						}
						data = pc
					}
					// The piece's records, and what the new watermark
					// fires, go downstream under the old watermark, and
					// the new one after them: the results of windows it
					// closes come before it, so they are not late for
					// the operators downstream.
					wm, prev := slices.Min(in), cur
					var fired *piece
					if wm > cur {
						cur = wm
						var err error
						if fired, err = p.fire(hard, s, w, cur, newEmit, batchSize); err != nil {
							fail(err)
							continue
						}
					}
					forward(si+1, w, sent, data, prev, byKey)
					if fired != nil {
						root := fired.root
						if len(fired.records) == 0 && len(fired.dead) == 0 {
							root.ack.Done(nil) // the empty piece
						} else {
							forward(si+1, w, sent, fired, prev, byKey)
						}
						root.ack.Done(nil) // the worker's hold on its emission
					}
					if cur > prev {
						forward(si+1, w, sent, nil, cur, byKey)
					}
					if wmOnly {
						work.done()
					}
				}
			}()
		}
		go func() {
			segWG[si].Wait()
			if si+1 < len(segs) {
				for _, ch := range segs[si+1].in {
					close(ch)
				}
			} else {
				close(sinkCh)
			}
		}()
	}

	// unflushed holds pieces written to the synchronous outputs since the
	// last flush; the flush releases each piece's hold on its batch.
	var unflushed []*piece
	flush := func() {
		if err := p.flush(); err != nil {
			fail(err)
			return
		}
		for _, pc := range unflushed {
			pc.root.ack.Done(nil)
		}
		clear(unflushed)
		unflushed = unflushed[:0]
	}
	for pc := range sinkCh {
		if hard.Err() != nil {
			continue
		}
		if err := p.writePiece(pc, st); err != nil {
			fail(err)
			continue
		}
		unflushed = append(unflushed, pc)
		if len(sinkCh) == 0 {
			flush()
		}
	}
	if hard.Err() == nil {
		flush()
	}
	if ck != nil && hard.Err() == nil {
		// The final checkpoint: every source has ended or stopped, and
		// everything it read has drained.
		if err := checkpoint(time.Now()); err != nil {
			fail(err)
		}
	}

	errs := append(closeOps(), p.closeOutputs()...)
	if err := context.Cause(hard); err != nil {
		errs = append([]error{err}, errs...)
	}
	return st.summary(p), errors.Join(errs...)
}

// closeOutputs closes the sinks, the dead-letter output and the sources
// that are io.Closers, in that order.
func (p *Pipeline) closeOutputs() []error {
	var errs []error
	for _, s := range p.Sinks {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if p.DeadLetter != nil {
		if err := p.DeadLetter.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range p.Sources {
		if c, ok := s.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// restoreOperators rebuilds the in-memory state of every operator that is
// a Restorer, each instance taking the record keys routed to its worker.
func (p *Pipeline) restoreOperators(ctx context.Context, segs []*segment, par int, wm int64) error {
	for _, s := range segs {
		for w, ops := range s.ops {
			owns := owner{w, par}.owns
			for j, op := range ops {
				r, ok := op.(Restorer)
				if !ok {
					continue
				}
				if err := r.Restore(ctx, wm, owns); err != nil {
					return fmt.Errorf("operator %q: restoring state: %w", p.Steps[s.first+j].Name, err)
				}
			}
		}
	}
	return nil
}

// fire tells the event-time operators of s, as worker w, that the
// watermark is now wm, and runs what they emit through the rest of the
// segment. It returns a piece of a new batch holding the results, or nil.
func (p *Pipeline) fire(ctx context.Context, s *segment, w int, wm int64, newBatch func() *batch, batchSize int) (*piece, error) {
	st := p.stats.Load()
	var pc *piece
	for j, op := range s.ops[w] {
		wop, ok := op.(Watermarker)
		if !ok {
			continue
		}
		if pc == nil {
			pc = newBatch().newPiece(nil)
			pc.records = pc.buf[:0]
		}
		out := pc.out(s.first + j)
		start, deadStart := len(out.Records), len(out.Dead)
		if err := wop.OnWatermark(ctx, wm, out); err != nil {
			return nil, fmt.Errorf("operator %q: %w", p.Steps[s.first+j].Name, err)
		}
		recs := out.Records[start:]
		st.steps[s.first+j].add(0, len(recs), len(out.Dead)-deadStart)
		pc.dead = append(pc.dead, out.Dead[deadStart:]...)
		for k := j + 1; k < len(s.ops[w]) && len(recs) > 0; k++ {
			next := pc.out(s.first + k)
			start, deadStart := len(next.Records), len(next.Dead)
			if err := p.process(ctx, s.first+k, s.ops[w][k], recs, next, batchSize); err != nil {
				return nil, err
			}
			in := len(recs)
			recs = next.Records[start:]
			st.steps[s.first+k].add(in, len(recs), len(next.Dead)-deadStart)
			pc.dead = append(pc.dead, next.Dead[deadStart:]...)
		}
		pc.records = append(pc.records, recs...)
	}
	if pc != nil {
		pc.buf = pc.records
	}
	return pc, nil
}

func (p *Pipeline) watermarkInterval() time.Duration {
	if p.WatermarkInterval > 0 {
		return p.WatermarkInterval
	}
	return 200 * time.Millisecond
}

// segments cuts the chain after every key_by and makes each segment's
// queues and per-worker operator instances.
func (p *Pipeline) segments(ctx context.Context, par, depth int) ([]*segment, error) {
	var segs []*segment
	for first := 0; first < len(p.Steps); {
		end := first
		for end < len(p.Steps) && !p.Steps[end].KeyBy {
			end++
		}
		end = min(end+1, len(p.Steps)) // a key_by ends its segment
		s := &segment{first: first, end: end, keyed: first > 0 && p.Steps[first-1].KeyBy,
			in: make([]chan *piece, par), ops: make([][]Operator, par)}
		for j := first; j < end && first == 0; j++ {
			s.keyed = s.keyed || p.Steps[j].KeyedState
		}
		segs = append(segs, s)
		for w := range par {
			s.in[w] = make(chan *piece, depth)
			wctx := context.WithValue(ctx, ownerKey{}, owner{w, par})
			for j := first; j < end; j++ {
				op, err := p.Steps[j].New(wctx)
				if err != nil {
					return segs, fmt.Errorf("operator %q: %w", p.Steps[j].Name, err)
				}
				s.ops[w] = append(s.ops[w], op)
			}
		}
		first = end
	}
	return segs, nil
}

// runSegment runs pc's records through the steps of s, as worker w, in
// chunks of each step's batch size, leaving the final records in pc.records
// and every dead letter in pc.dead.
func (p *Pipeline) runSegment(ctx context.Context, s *segment, w int, pc *piece, batchSize int) error {
	stats := p.stats.Load()
	recs := pc.records
	for j, op := range s.ops[w] {
		out := pc.out(s.first + j)
		if err := p.process(ctx, s.first+j, op, recs, out, batchSize); err != nil {
			return err
		}
		stats.steps[s.first+j].add(len(recs), len(out.Records), len(out.Dead))
		pc.dead = append(pc.dead, out.Dead...)
		recs = out.Records
	}
	pc.records = recs
	return nil
}

// process runs recs through op, step i of the chain, in chunks of the
// step's batch size (or the pipeline's), so that an operator never gets
// more records in one call than it is configured for, whether they came
// from a source or from what a watermark fired upstream.
func (p *Pipeline) process(ctx context.Context, i int, op Operator, recs []record.Record, out *record.Output, batchSize int) error {
	size := p.Steps[i].BatchSize
	if size <= 0 {
		size = batchSize
	}
	for start := 0; start < len(recs); start += size {
		end := min(start+size, len(recs))
		if err := op.Process(ctx, recs[start:end], out); err != nil {
			return fmt.Errorf("operator %q: %w", p.Steps[i].Name, err)
		}
	}
	return nil
}

// writePiece gives pc's records to every sink and its dead letters to the
// dead-letter output.
func (p *Pipeline) writePiece(pc *piece, st *runStats) error {
	ack := &pc.root.ack
	for i, s := range p.Sinks {
		before := len(pc.dead)
		var err error
		pc.dead, err = s.Write(pc.records, pc.dead, ack)
		if err != nil {
			return err
		}
		rejected := len(pc.dead) - before
		st.sinks[i].add(len(pc.records), len(pc.records)-rejected, rejected)
	}
	if p.DeadLetter == nil {
		if len(pc.dead) > 0 {
			return fmt.Errorf("%d records failed and there is no dead-letter output: %s", len(pc.dead), pc.dead[0].Reason)
		}
		return nil
	}
	for i := range pc.dead {
		if err := p.DeadLetter.Write(&pc.dead[i], ack); err != nil {
			return err
		}
		st.deadLetters.Add(1)
	}
	return nil
}

func (p *Pipeline) flush() error {
	for _, s := range p.Sinks {
		if err := s.Flush(); err != nil {
			return err
		}
	}
	if p.DeadLetter != nil {
		return p.DeadLetter.Flush()
	}
	return nil
}

// owner is one worker of a segment, which owns the record keys routed to
// it.
type owner struct{ w, par int }

type ownerKey struct{}

func (o owner) owns(key []byte) bool { return int(hashKey(key)%uint32(o.par)) == o.w }

// KeyOwner returns, given the context Step.New was called with, whether a
// record key is routed to the worker the operator instance runs on: what
// keyed state the instance may clean up alone. It returns nil for any other
// context.
func KeyOwner(ctx context.Context) func(key []byte) bool {
	if o, ok := ctx.Value(ownerKey{}).(owner); ok {
		return o.owns
	}
	return nil
}

// hashKey and hashPartition are 32-bit FNV-1a, which is all routing needs:
// the same input always goes to the same worker.
func hashKey(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

func hashPartition(topic string, partition int32) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(topic); i++ {
		h = (h ^ uint32(topic[i])) * 16777619
	}
	for i := 0; i < 4; i++ {
		h = (h ^ uint32(byte(partition>>(8*i)))) * 16777619
	}
	return h
}
