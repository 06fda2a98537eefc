package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// segment is a run of steps that one worker applies to a piece without
// handing it on: the chain is cut after every key_by, because records must
// then move to the worker that owns their key.
type segment struct {
	first, end int           // the steps [first, end)
	in         []chan *piece // one queue per worker
	ops        [][]Operator  // [worker][step - first]
	keyed      bool          // routed by key (it follows a key_by, or holds KeyedState)
	// repart is the repartition the segment's output goes to, and entry
	// the one whose records it takes from the dispatcher (-1: none);
	// domain is the event time it follows: 0 the sources', j+1
	// repartition j's (see cutRepartitions).
	repart, entry, domain int
}

// worker is the state of one worker goroutine of a segment: it runs the
// segment's steps on its pieces, and fires event-time operators as the
// least watermark of its inputs advances.
type worker struct {
	r    *runner
	si   int // the segment's index
	s    *segment
	w    int     // the worker's index in the segment
	in   []int64 // the watermark of each input: the dispatcher, or each upstream worker
	cur  int64   // the watermark the operators were given
	sent []int64 // the watermark promised to each worker of the next segment
	// snap is the last partition watermarks the dispatcher sent, and
	// sentSnap the last handed to the repartition (a segment before one).
	snap, sentSnap *inputTimes
}

// startWorkers starts every segment's workers. Once a segment's workers
// have all ended, the next segment's input, or the sink loop's, is closed.
func (r *runner) startWorkers() {
	for si := range r.segs {
		var wg sync.WaitGroup
		for w := range r.par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.newWorker(si, w).loop()
			}()
		}
		go func() {
			wg.Wait()
			r.segmentEnded(si)
		}()
	}
}

func (r *runner) newWorker(si, w int) *worker {
	upstream := 1 // the dispatcher
	if si > 0 && r.segs[si].entry < 0 {
		upstream = r.par
	}
	k := &worker{r: r, si: si, s: r.segs[si], w: w, in: make([]int64, upstream), cur: NoWatermark, sent: make([]int64, r.par)}
	for i := range k.in {
		k.in[i] = NoWatermark
	}
	for i := range k.sent {
		k.sent[i] = NoWatermark
	}
	return k
}

// loop handles the worker's pieces until its input is closed; after a
// failure it only drains them.
func (k *worker) loop() {
	for pc := range k.s.in[k.w] {
		if k.r.hard.Err() == nil {
			k.handle(pc)
		}
	}
}

// handle runs pc's records through the segment, or, for a watermark-only
// piece, only notes its watermark, and hands on the results.
func (k *worker) handle(pc *piece) {
	r := k.r
	k.in[pc.from] = max(k.in[pc.from], pc.wm)
	if pc.snap != nil {
		k.snap = pc.snap
	}
	var data *piece
	wmOnly := pc.wmOnly
	if wmOnly {
		pc.reset()
		piecePool.Put(pc)
	} else {
		r.noteChange()
		if err := r.p.runSegment(r.hard, k.s, k.w, pc, r.batchSize); err != nil {
			r.fail(err)
			return
		}
		data = pc
	}
	if err := k.handOn(data); err != nil {
		r.fail(err)
		return
	}
	if wmOnly {
		r.work.done()
	}
}

// handOn forwards data (or nil) to the next segment, with what the new
// least watermark of the inputs fires. The piece's records, and what the
// new watermark fires, go downstream under the old watermark, and the new
// one after them: the results of windows it closes come before it, so they
// are not late for the operators downstream.
func (k *worker) handOn(data *piece) error {
	prev := k.cur
	fired, err := k.advance(slices.Min(k.in))
	if err != nil {
		return err
	}
	k.forward(data, prev)
	if fired != nil {
		root := fired.root
		if len(fired.records) == 0 && len(fired.dead) == 0 {
			root.ack.Done(nil) // the empty piece
		} else {
			k.forward(fired, prev)
		}
		root.ack.Done(nil) // the worker's hold on its emission
	}
	if k.cur > prev {
		k.forward(nil, k.cur)
	}
	return nil
}

// forward hands pc (or nil) to the next segment, promising wm; records
// move to the worker that owns their key.
func (k *worker) forward(pc *piece, wm int64) {
	if k.s.repart >= 0 {
		k.toRepartition(pc, wm)
		return
	}
	k.r.forward(k.si+1, k.w, k.sent, pc, wm, k.r.keyRoute, k.blocked())
}

// blocked is where the worker's waits for room downstream add up: on the
// last step of its segment, the one that hands on.
func (k *worker) blocked() *atomic.Int64 { return &k.r.st.steps[k.s.end-1].blocked }

// keyRoute is the worker that owns a record's key.
func (r *runner) keyRoute(rec *record.Record) int { return int(hashKey(rec.Key) % uint32(r.par)) }

// segments cuts the chain after every key_by and makes each segment's
// queues and per-worker operator instances, or takes those kept from the
// last run (by slot; see Tasks).
func (p *Pipeline) segments(ctx context.Context, par, depth int, kept map[slot]*split) ([]*segment, error) {
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
			o := owner{w, par, p.OwnsKey}
			wctx := context.WithValue(ctx, ownerKey{}, o)
			for j := first; j < end; j++ {
				op, err := p.newInstance(wctx, slot{j, w}, o, kept)
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

// newInstance makes worker sl.worker's instance of step sl.step, owner o.
// In a run split by task with Kept set, a keyed operator's instance (a
// WatermarkResumer) is a split: the one kept from the last run, if the
// run goes on with it, gaining an instance for its new tasks, or else a
// new one.
func (p *Pipeline) newInstance(ctx context.Context, sl slot, o owner, kept map[slot]*split) (Operator, error) {
	tk := p.Tasks
	if tk == nil || tk.Kept == nil {
		return p.Steps[sl.step].New(ctx)
	}
	m := maker{step: p.Steps[sl.step], w: o, of: tk.Of}
	if s := kept[sl]; s != nil {
		delete(kept, sl)
		tk.Kept.addMaker(sl, m)
		s.m = m
		if err := s.gain(ctx, tk.Owned); err != nil {
			s.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return s, nil
	}
	op, err := p.Steps[sl.step].New(ctx)
	if _, ok := op.(WatermarkResumer); err != nil || !ok {
		return op, err
	}
	tk.Kept.addMaker(sl, m)
	return &split{base: &instance{op: op}, m: m, baseTasks: slices.Clone(tk.Owned)}, nil
}

// runSegment runs pc's records through the steps of s, as worker w, in
// chunks of each step's batch size, leaving the final records in pc.records
// and every dead letter in pc.dead.
func (p *Pipeline) runSegment(ctx context.Context, s *segment, w int, pc *piece, batchSize int) error {
	stats := p.stats.Load()
	recs := pc.records
	for j, op := range s.ops[w] {
		out := pc.out(s.first + j)
		start := time.Now()
		if err := p.process(ctx, s.first+j, op, recs, out, batchSize); err != nil {
			return err
		}
		stats.stepLatency[s.first+j].observe(time.Since(start))
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
