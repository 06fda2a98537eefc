package engine

import (
	"fmt"
	"slices"
)

// Repartition sends what a key_by step emits through a topic, so that the
// instances sharing a pipeline each apply the rest of the chain to the
// keys of the topic's partitions they own, as Kafka Streams does through
// its repartition topics. The chain is cut there into two parts: the
// workers of the part before hand their records, and the watermarks they
// promise, to Sink instead of to the next segment; the records of Topic
// that a source of the pipeline reads enter the chain after the key_by,
// routed to workers by key, and a source's other records enter at the
// start. Each part has its own event time: the part after the key_by
// follows the partitions of Topic, each as far as Out.PartitionTime
// says, not the event times of its records. A Repartition is plain data,
// read-only while Run runs.
type Repartition struct {
	// After is the index of the key_by step whose output is repartitioned.
	After int
	// Topic is the topic Sink writes to and a source reads.
	Topic string
	Sink  RepartitionSink
}

// RepartitionSink writes a repartitioned part of the chain's records to
// its topic: each under its key, with its timestamp (its event time), in
// the order given, as a Sink does. Durability and Ack follow the Sink
// rules; a checkpoint waits for every record given before it. Watermark
// is called once every record of the sources' partitions parts that came
// before their watermarks has been given to Write: the sink writes them
// to every partition of the topic, after those records, so that the
// readers learn, for each of those input partitions, how far its records
// in the topic go in event time (Out.PartitionTime). parts are the
// partitions this instance has read, sorted, and must not be changed. It
// is used by the sink loop's goroutine only.
type RepartitionSink interface {
	Sink
	Watermark(parts []PartitionWatermark) error
}

// repartitionState is the sink loop's view of one Repartition: the last
// partition watermarks each upstream worker handed on, and the last
// written.
type repartitionState struct {
	snaps []*inputTimes
	sent  []PartitionWatermark
}

// cutRepartitions marks, once the segments are made, the segment that
// feeds each repartition (repart) and the one its records enter (entry),
// gives every segment the event-time domain it follows (0 for the
// sources' own, j+1 for repartition j's), and counts the segments whose
// workers end by writing to the sink loop. It fails for a Repartition
// that does not follow a key_by.
func (r *runner) cutRepartitions() error {
	for i := range r.segs {
		r.segs[i].repart, r.segs[i].entry = -1, -1
	}
	for j, rp := range r.p.Repartitions {
		if rp.After < 0 || rp.After >= len(r.p.Steps)-1 || !r.p.Steps[rp.After].KeyBy || rp.Sink == nil || j > 0 {
			return fmt.Errorf("repartition %d (topic %q): step %d is not a key_by with steps after it, there is no sink, or there is more than one", j, rp.Topic, rp.After)
		}
		for _, s := range r.segs {
			if s.end-1 == rp.After {
				if s.first != 0 {
					return fmt.Errorf("repartition %d (topic %q): a key_by comes before step %d", j, rp.Topic, rp.After)
				}
				s.repart = j
			}
			if s.first == rp.After+1 {
				s.entry = j
			}
		}
	}
	r.topics = r.p.repartitionTopics()
	domain := 0
	r.terminals.Store(1)
	for _, s := range r.segs {
		if s.entry >= 0 {
			domain = s.entry + 1
		}
		s.domain = domain
		if s.repart >= 0 {
			r.terminals.Add(1)
		}
	}
	r.reparts = make([]repartitionState, len(r.p.Repartitions))
	r.entryWM = make([]int64, len(r.p.Repartitions))
	for j := range r.reparts {
		r.reparts[j] = repartitionState{snaps: make([]*inputTimes, r.par)}
		r.entryWM[j] = NoWatermark
	}
	return nil
}

// repartitionTopics returns the topics whose records enter the chain
// after a key_by.
func (p *Pipeline) repartitionTopics() []string {
	var ts []string
	for _, rp := range p.Repartitions {
		ts = append(ts, rp.Topic)
	}
	return ts
}

// entrySegment returns the index of the segment repartition j's records
// enter.
func (r *runner) entrySegment(j int) int {
	for i, s := range r.segs {
		if s.entry == j {
			return i
		}
	}
	panic("engine: a repartition without an entry segment")
}

// segmentEnded is called once every worker of segment si has ended: the
// next segment's input is closed, unless the dispatcher feeds it, and the
// sink loop's once every segment that writes to it has ended.
func (r *runner) segmentEnded(si int) {
	s := r.segs[si]
	if si+1 < len(r.segs) && s.repart < 0 {
		r.closeInput(si + 1)
		return
	}
	if r.terminals.Add(-1) == 0 {
		close(r.sinkCh)
	}
}

// toRepartition hands what worker k of the segment before a repartition
// produced (a piece, or nil) to the sink loop, which writes it to the
// repartition's sink, and, when the partition watermarks the dispatcher
// last sent k are newer than those k handed on, those after it.
func (k *worker) toRepartition(pc *piece, wm int64) {
	r := k.r
	if pc != nil {
		pc.repart = k.s.repart + 1
		r.send(r.sinkCh, pc, k.blocked())
	}
	if k.snap != k.sentSnap {
		k.sentSnap = k.snap
		r.work.add()
		wp := watermarkPiece(wm, k.w)
		wp.repart, wp.snap = k.s.repart+1, k.snap
		r.send(r.sinkCh, wp, k.blocked())
	}
}

// sendSnap sends every worker of the first segment the sources' partition
// watermarks, when they changed since the dispatcher last did, after the
// records it dispatched before: a pipeline with repartitions hands them
// on to its readers (RepartitionSink.Watermark).
func (d *dispatcher) sendSnap() {
	r := d.r
	if len(r.p.Repartitions) == 0 {
		return
	}
	snap := r.wms.partitions(d.snap)
	if snap == d.snap {
		return
	}
	d.snap = snap
	for w := range r.par {
		r.work.add()
		pc := watermarkPiece(d.sent[w], 0)
		pc.snap = snap
		r.send(r.segs[0].in[w], pc, nil)
	}
}

// claims returns, for each input partition, the least watermark the
// upstream workers handed on for it: every record of it before that has
// been written; it is idle only if idle in every worker's. A partition
// missing from a worker's is not claimed.
func (st *repartitionState) claims() []PartitionWatermark {
	var out []PartitionWatermark
	for i, s := range st.snaps {
		if s == nil {
			return nil
		}
		if i == 0 {
			out = slices.Clone(s.parts)
			continue
		}
		out = slices.DeleteFunc(out, func(pw PartitionWatermark) bool {
			return !slices.ContainsFunc(s.parts, func(q PartitionWatermark) bool { return q.Topic == pw.Topic && q.Partition == pw.Partition })
		})
		for j := range out {
			for _, q := range s.parts {
				if q.Topic == out[j].Topic && q.Partition == out[j].Partition {
					out[j].WM = min(out[j].WM, q.WM)
					out[j].Idle = out[j].Idle && q.Idle
				}
			}
		}
	}
	return out
}

// writeRepartition is the sink loop's handling of a piece bound for a
// repartition: records go to its sink (their dead letters, and the
// sink's rejections, to the dead-letter output); a watermark promise
// moves the least of the upstream workers' on, which the sink then
// writes.
func (r *runner) writeRepartition(pc *piece) error {
	j := pc.repart - 1
	rp, st := r.p.Repartitions[j], &r.reparts[j]
	if pc.wmOnly {
		if pc.snap != nil {
			st.snaps[pc.from] = pc.snap
		}
		pc.reset()
		piecePool.Put(pc)
		defer r.work.done()
		if claims := st.claims(); len(claims) > 0 && !slices.Equal(claims, st.sent) {
			st.sent = claims
			return rp.Sink.Watermark(claims)
		}
		return nil
	}
	ack := &pc.root.ack
	var err error
	if pc.dead, err = rp.Sink.Write(pc.records, pc.dead, ack); err != nil {
		return err
	}
	if err := r.p.writeDead(pc, r.st); err != nil {
		return err
	}
	r.unflushed = append(r.unflushed, pc)
	return nil
}

// byEntry cuts b's records by where they enter the chain: those of a
// repartition topic go, in order, to a piece of b for that repartition
// (nil if none), and the others stay in b.records, in order, for the
// start of the chain.
func (r *runner) byEntry(b *batch) []*piece {
	if len(r.p.Repartitions) == 0 {
		return nil
	}
	var ent []*piece
	n := 0
	for i := range b.records {
		rec := b.records[i]
		j := slices.Index(r.topics, rec.Origin.Topic)
		if j < 0 {
			b.records[n] = rec
			n++
			continue
		}
		if ent == nil {
			ent = make([]*piece, len(r.p.Repartitions))
		}
		if ent[j] == nil {
			ent[j] = b.newPiece(nil)
			ent[j].records = ent[j].buf[:0]
		}
		ent[j].records = append(ent[j].records, rec)
	}
	clear(b.records[n:])
	b.records = b.records[:n]
	for _, pc := range ent {
		if pc != nil {
			pc.buf = pc.records
		}
	}
	return ent
}

// forwardEntries hands each repartition's piece of a source batch (or
// nil) to the segment its records enter, under that repartition's
// watermark.
func (d *dispatcher) forwardEntries(ent []*piece) {
	r := d.r
	for j := range r.p.Repartitions {
		var pc *piece
		if j < len(ent) {
			pc = ent[j]
		}
		r.forward(r.entrySegment(j), 0, d.entrySent[j], pc, r.entryWM[j], r.keyRoute, nil)
	}
}
