package engine

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/weir-stream/weir/host/internal/record"
)

// NoWatermark is the watermark before any is known: no event time has been
// promised complete.
const NoWatermark int64 = -1 << 63

// Watermarker is implemented by operators that act on event time (windows).
// After a worker has handed an operator every record it has before
// watermark wm — a promise that no record with an event time at or below wm
// follows, except late ones — it calls OnWatermark, where the operator may
// emit results (close windows) into out. Watermarks only increase. It is
// called by the operator's worker goroutine, like Process.
type Watermarker interface {
	OnWatermark(ctx context.Context, wm int64, out *record.Output) error
}

// advanceWatermark computes the pipeline watermark, as the dispatcher
// forwards it to the start of the chain, and each repartition's
// (entryWM), and publishes the one the sinks follow to Stats.
func (r *runner) advanceWatermark() int64 {
	r.lastWM = r.wms.current()
	out := r.lastWM
	for j := range r.entryWM {
		r.entryWM[j] = r.wms.repartition(j)
		out = r.entryWM[j]
	}
	r.st.watermark.Store(out)
	return r.lastWM
}

// promise notes in sent that wm is promised to every worker of s: a
// worker that got records (got) has it with them; any other that was last
// promised an older one gets a watermark-only piece, which a checkpoint
// waits for as for a batch.
func (r *runner) promise(s *segment, from int, sent []int64, got []bool, wm int64, blocked *atomic.Int64) {
	for w := range r.par {
		if got[w] {
			sent[w] = wm
		} else if wm > sent[w] {
			sent[w] = wm
			r.work.add()
			r.send(s.in[w], watermarkPiece(wm, from), blocked)
		}
	}
}

// advance gives the worker's operators watermark wm, if it is newer than
// the one they have, and returns a piece of what they emitted, or nil.
func (k *worker) advance(wm int64) (*piece, error) {
	if wm <= k.cur {
		return nil, nil
	}
	k.cur = wm
	r := k.r
	r.noteChange()
	return r.p.fire(r.hard, k.s, k.w, wm, r.newEmit, r.batchSize)
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
