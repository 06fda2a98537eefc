package window

import (
	"container/heap"
	"slices"

	"github.com/weir-stream/weir/host/internal/record"
)

// A record of event time t opens the session [t, t+gap). As in Flink, it
// joins every session [s, e) of its key that it touches, s <= t+gap and
// t <= e, and those sessions merge into one: the union of their spans.

// addSession adds rec to its key's sessions.
func (o *Operator) addSession(rec *record.Record, out *record.Output) error {
	if reason := outOfRange(rec); reason != "" {
		o.dead(rec, reason, out)
		return nil
	}
	t := rec.Timestamp
	tEnd := record.AddTime(t, o.gap)
	ks := o.lookup(rec.Key)
	if ks == nil && o.bounded {
		var err error
		if ks, err = o.load(rec.Key); err != nil {
			return err
		}
	}
	lo, hi := 0, 0 // the sessions rec touches: units[lo:hi]
	if ks != nil {
		for lo < len(ks.units) && ks.units[lo].end < t {
			lo++
		}
		hi = lo
		for hi < len(ks.units) && ks.units[hi].start <= tEnd {
			hi++
		}
	}
	if lo == hi && record.AddTime(tEnd-1, o.late) <= o.wm {
		o.dead(rec, o.lateReason(t), out)
		return nil
	}
	if reason := o.read(rec); reason != "" {
		o.dead(rec, reason, out)
		return nil
	}
	if lo == hi {
		a := o.newAcc()
		if reason := o.add(&a, rec); reason != "" {
			o.freeAcc(&a)
			o.dead(rec, reason, out)
			return nil
		}
		if ks == nil {
			ks = o.create(rec.Key)
		}
		ks.units = slices.Insert(ks.units, lo, unit{start: t, end: tEnd, acc: a})
		o.changed(ks, &ks.units[lo])
		return nil
	}
	u := &ks.units[lo]
	if reason := o.add(&u.acc, rec); reason != "" {
		o.dead(rec, reason, out)
		return nil
	}
	end := max(ks.units[hi-1].end, tEnd)
	for j := lo + 1; j < hi; j++ {
		v := &ks.units[j]
		if err := o.merge(&u.acc, &v.acc); err != nil {
			return err
		}
		if v.stored {
			ks.deleted = append(ks.deleted, v.start)
		}
		o.freeAcc(&v.acc)
	}
	if t < u.start && u.stored { // the session's key changes with its start
		ks.deleted = append(ks.deleted, u.start)
		u.stored = false
	}
	u.start, u.end = min(u.start, t), end
	ks.units = slices.Delete(ks.units, lo+1, hi)
	o.changed(ks, u)
	return nil
}

// schedule sets ks's timer to when its next session fires or is purged.
func (o *Operator) schedule(ks *keyState) {
	te := ks.te
	if len(ks.units) == 0 {
		if te != nil {
			if te.idx >= 0 {
				heap.Remove(&o.timers, te.idx)
			}
			if o.bounded && !te.global && o.timerKeys[te.key] == te {
				delete(o.timerKeys, te.key)
			}
			te.ks, ks.te = nil, nil
		}
		return
	}
	if te == nil {
		te = &timerEnt{key: ks.key, global: ks.global, idx: -1, ks: ks}
		ks.te = te
		if o.bounded && !ks.global {
			o.timerKeys[ks.key] = te
		}
	}
	if o.bounded {
		te.starts = te.starts[:0]
		for i := range ks.units {
			te.starts = append(te.starts, ks.units[i].start)
		}
	}
	next := int64(1<<63 - 1)
	for i := range ks.units {
		fire := ks.units[i].end - 1
		if fire <= o.wm || o.cfg.Emit == OnUpdate {
			fire = record.AddTime(fire, o.late) // fired: next comes the purge
		}
		next = min(next, fire)
	}
	te.timer = next
	if te.idx >= 0 {
		heap.Fix(&o.timers, te.idx)
	} else {
		heap.Push(&o.timers, te)
	}
}

// fireSessions emits the sessions that the watermark, raised from old to
// o.wm, closes, and purges those past their allowed lateness.
func (o *Operator) fireSessions(old int64, out *record.Output) error {
	emit := o.cfg.Emit != OnUpdate
	for len(o.timers) > 0 && o.timers[0].timer <= o.wm {
		te := o.timers[0]
		ks := te.ks
		if ks == nil {
			var err error
			if ks, err = o.mustLoad(keyBytes(te.key)); err != nil {
				return err
			}
		}
		kept := 0
		for i := range ks.units {
			u := &ks.units[i]
			if fire := u.end - 1; emit && fire > old && fire <= o.wm {
				if err := o.emit(ks, u.start, u.end, &u.acc, out); err != nil {
					return err
				}
			}
			if record.AddTime(u.end-1, o.late) <= o.wm {
				if u.stored {
					o.del(ks, u.start)
				}
				o.freeAcc(&u.acc)
				continue
			}
			ks.units[kept] = *u
			kept++
		}
		clear(ks.units[kept:])
		ks.units = ks.units[:kept]
		o.schedule(ks)
		if kept == 0 {
			o.drop(ks)
		}
		if o.bounded && len(o.keys) > o.max {
			o.evict()
		}
	}
	return nil
}

// timerHeap is a min-heap of keys by timer, then key, so that the order in
// which a watermark fires keys depends only on their sessions, which
// Restore rebuilds.
type timerHeap []*timerEnt

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].timer != h[j].timer {
		return h[i].timer < h[j].timer
	}
	return compareKeys(h[i].global, h[j].global, h[i].key, h[j].key) < 0
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}
func (h *timerHeap) Push(x any) {
	te := x.(*timerEnt)
	te.idx = len(*h)
	*h = append(*h, te)
}
func (h *timerHeap) Pop() any {
	old := *h
	te := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	te.idx = -1
	return te
}
