package engine

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// dispatcher is the state of the dispatcher goroutine, which cuts each
// source batch into pieces for the first segment's workers, tracks the
// watermark, which it also sends on a tick so that event time moves on
// while input is quiet, and coordinates checkpoints.
type dispatcher struct {
	r    *runner
	sent []int64 // the watermark promised to each first-segment worker
	// entrySent is, by repartition, the watermark promised to each worker
	// of the segment its records enter.
	entrySent [][]int64
	snap      *inputTimes // the partition watermarks last sent (sendSnap)
	ck        *checkpointer
	// batches counts the batches dispatched: the current one's unkeyed,
	// unpartitioned records go to worker batches % par, in turn.
	batches int
}

// dispatch runs the dispatcher until every source has ended, then closes
// the first segment's input.
func (r *runner) dispatch() {
	d := &dispatcher{r: r, sent: make([]int64, r.par), ck: r.newCheckpointer()}
	for i := range d.sent {
		d.sent[i] = r.lastWM
	}
	for j := range r.p.Repartitions {
		sent := make([]int64, r.par)
		for i := range sent {
			sent[i] = r.entryWM[j]
		}
		d.entrySent = append(d.entrySent, sent)
	}
	defer d.ck.stop()
	defer d.endInput()
	tick := time.NewTicker(r.p.watermarkInterval())
	defer tick.Stop()
	for {
		select {
		case b, ok := <-r.srcCh:
			if !ok {
				d.endOfInput()
				return
			}
			d.take(b)
		case <-tick.C:
			if r.hard.Err() == nil {
				r.forward(0, 0, d.sent, nil, r.advanceWatermark(), nil, nil)
				d.sendSnap()
				d.forwardEntries(nil)
				r.notePartitions()
			}
		case <-d.ck.timer:
			d.ck.request()
		case <-d.ck.soon:
			d.ck.requestSoon()
		}
	}
}

// take handles one batch from a source: news for the checkpointer, or
// records to dispatch. After a failure batches are only drained, so that
// sources are never stuck; nothing more is processed.
func (d *dispatcher) take(b *batch) {
	r := d.r
	if b.marker != markerNone {
		d.ck.marker(b)
		return
	}
	if r.hard.Err() != nil {
		return
	}
	r.work.add()
	if r.p.Observer != nil {
		b.taken = time.Now()
	}
	r.hold(b)
	ent := r.byEntry(b)
	r.wms.announce(b.source, b.announce)
	r.wms.promise(b.promises)
	r.wms.observe(b.source, b.records)
	var pc *piece
	if len(b.records) > 0 || len(b.dead) > 0 {
		pc = b.newPiece(b.records)
		pc.dead = append(pc.dead, b.dead...)
		d.batches++
	}
	r.forward(0, 0, d.sent, pc, r.advanceWatermark(), d.route, nil)
	d.sendSnap()
	d.forwardEntries(ent)
	b.ack.Done(nil) // the dispatcher's own hold
}

// endInput closes the input of the first segment and of each segment a
// repartition's records enter, or, with no steps, the sink loop's.
func (d *dispatcher) endInput() {
	r := d.r
	if len(r.segs) == 0 {
		close(r.sinkCh)
		return
	}
	r.closeInput(0)
	for j := range r.p.Repartitions {
		r.closeInput(r.entrySegment(j))
	}
}

// route picks the first-segment worker of a source record: by key in a
// keyed segment; else a partitioned record (Kafka) by its partition, so a
// partition is processed in order by one worker; else by key if it has one.
func (d *dispatcher) route(rec *record.Record) int {
	par := uint32(d.r.par)
	switch {
	case d.r.segs[0].keyed:
		return int(hashKey(rec.Key) % par)
	case rec.Origin.Partition >= 0:
		return int(hashPartition(rec.Origin.Topic, rec.Origin.Partition) % par)
	case rec.Key != nil:
		return int(hashKey(rec.Key) % par)
	}
	return d.batches % d.r.par // unkeyed, unpartitioned: a whole batch per worker, in turn
}

// endOfInput is reached when every source has ended. Unless the run was
// stopped, the input is complete: every window may close, as with Flink's
// final watermark at the end of a bounded input.
func (d *dispatcher) endOfInput() {
	r := d.r
	if r.hard.Err() == nil && r.ctx.Err() == nil {
		r.forward(0, 0, d.sent, nil, math.MaxInt64, nil, nil)
	}
}

// forward hands what upstream worker from produced (a piece of records, or
// nil) to segment si, promising watermark wm: records are routed to the
// segment's workers by route, every worker that got no records but is owed
// a newer watermark gets a watermark-only piece (see promise), and after
// the last segment everything goes to the sinks. sent is the sender's
// record of what it promised each worker of si; blocked, if not nil, is
// where the time the sender waits for room downstream adds up (send).
func (r *runner) forward(si, from int, sent []int64, pc *piece, wm int64, route func(*record.Record) int, blocked *atomic.Int64) {
	if si == len(r.segs) {
		if pc != nil {
			r.send(r.sinkCh, pc, blocked)
		}
		return
	}
	s := r.segs[si]
	got := make([]bool, r.par)
	if pc != nil {
		r.deliver(s, from, pc, wm, route, got, blocked)
	}
	r.promise(s, from, sent, got, wm, blocked)
}

// deliver sends pc's records to the workers of s that route picks, each
// under watermark wm, noting in got which workers had some. The dead
// letters pc collected go straight to the sinks.
func (r *runner) deliver(s *segment, from int, pc *piece, wm int64, route func(*record.Record) int, got []bool, blocked *atomic.Int64) {
	if r.par == 1 && len(pc.dead) == 0 {
		pc.wm, pc.from = wm, from
		got[0] = true
		r.send(s.in[0], pc, blocked)
		return
	}
	parts := pc.root.split(pc.records, r.par, route)
	if len(pc.dead) > 0 {
		pc.records = nil
		r.send(r.sinkCh, pc, blocked)
	} else {
		pc.root.ack.Done(nil) // pc is consumed
	}
	for w, part := range parts {
		if part != nil {
			part.wm, part.from = wm, from
			got[w] = true
			r.send(s.in[w], part, blocked)
		}
	}
}
