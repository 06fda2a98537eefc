package window

import (
	"math"
	"slices"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Tumbling, sliding and cumulate windows are made of panes: a record adds
// to the one pane holding its event time, and a window's result is the
// merge of its panes. Panes are o.pane long: the size for tumbling
// windows, gcd(size, slide) for sliding ones, the step for cumulate ones.

// paneEnds appends to ends the end of each window holding the pane that
// starts at p, for which keep is true, in ascending order.
func (o *Operator) paneEnds(ends []int64, p int64, keep func(e int64) bool) []int64 {
	first, last, step := o.paneWindows(p)
	for e := first; e <= last; e += step {
		if keep(e) {
			ends = append(ends, e)
		}
	}
	return ends
}

// paneWindows returns the ends of the first and last windows holding the
// pane that starts at p, and the step between the ends.
func (o *Operator) paneWindows(p int64) (first, last, step int64) {
	switch o.cfg.Kind {
	case Sliding:
		// Windows end at multiples of slide; [e-size, e) holds the pane
		// when p+pane <= e <= p+size.
		first = (record.FloorDiv(p+o.pane-1, o.slide) + 1) * o.slide
		last = record.FloorDiv(p+o.size, o.slide) * o.slide
		return first, last, o.slide
	case Cumulate:
		base := record.FloorDiv(p, o.size) * o.size
		return p + o.pane, base + o.size, o.pane
	}
	return p + o.size, p + o.size, o.size
}

// winStart returns the start of the window ending at e.
func (o *Operator) winStart(e int64) int64 {
	if o.cfg.Kind == Cumulate {
		return record.FloorDiv(e-1, o.size) * o.size
	}
	return e - o.size
}

// paneCleanup is the watermark at which the pane starting at p is purged:
// when its last window is past its allowed lateness.
func (o *Operator) paneCleanup(p int64) int64 {
	_, last, _ := o.paneWindows(p)
	return record.AddTime(last-1, o.late)
}

// timePane returns the start of rec's pane, having read its inputs, or
// why rec is rejected.
func (o *Operator) timePane(rec *record.Record) (int64, string) {
	if reason := outOfRange(rec); reason != "" {
		return 0, reason
	}
	p := record.FloorDiv(rec.Timestamp, o.pane) * o.pane
	if o.paneCleanup(p) <= o.wm {
		return 0, o.lateReason(rec.Timestamp)
	}
	if reason := o.read(rec); reason != "" {
		return 0, reason
	}
	return p, ""
}

// addTime adds rec to its pane.
func (o *Operator) addTime(rec *record.Record, out *record.Output) error {
	p, reason := o.timePane(rec)
	if reason != "" {
		o.dead(rec, reason, out)
		return nil
	}
	ks := o.lookup(rec.Key)
	if ks == nil && o.bounded {
		var err error
		if ks, err = o.load(rec.Key); err != nil {
			return err
		}
	}
	i, found := 0, false
	if ks != nil {
		i, found = ks.find(p)
	}
	if found {
		u := &ks.units[i]
		if reason := o.add(&u.acc, rec); reason != "" {
			o.dead(rec, reason, out)
			return nil
		}
		o.changed(ks, u)
		return nil
	}
	a := o.newAcc()
	if reason := o.add(&a, rec); reason != "" {
		o.freeAcc(&a)
		o.dead(rec, reason, out)
		return nil
	}
	if ks == nil {
		ks = o.create(rec.Key)
	}
	o.insertPane(ks, i, p, a)
	return nil
}

// insertPane inserts into ks, at i, the pane starting at p, of accumulator
// a, which the current call created.
func (o *Operator) insertPane(ks *keyState, i int, p int64, a acc) {
	sl := o.sliceAt(p)
	ks.units = slices.Insert(ks.units, i, unit{start: p, end: p + o.pane, acc: a, seq: sl.next})
	if sl.next < math.MaxUint32 {
		sl.next++
	}
	o.indexKey(sl, ks)
	o.changed(ks, &ks.units[i])
}

// find returns the index of the unit starting at p, or where to insert it.
// It searches from the end: records mostly add to recent panes.
func (ks *keyState) find(p int64) (int, bool) {
	for i := len(ks.units) - 1; i >= 0; i-- {
		switch s := ks.units[i].start; {
		case s == p:
			return i, true
		case s < p:
			return i + 1, false
		}
	}
	return 0, false
}

// sliceAt returns the pane index entry for the pane starting at p,
// creating it.
func (o *Operator) sliceAt(p int64) *slice {
	if o.lastSlice != nil && o.lastSlice.start == p {
		return o.lastSlice
	}
	i, found := slices.BinarySearchFunc(o.slices, p, func(s *slice, p int64) int {
		switch {
		case s.start < p:
			return -1
		case s.start > p:
			return 1
		}
		return 0
	})
	if !found {
		var sl *slice
		if n := len(o.freeSlice); n > 0 {
			sl = o.freeSlice[n-1]
			o.freeSlice = o.freeSlice[:n-1]
		} else {
			sl = &slice{}
		}
		sl.start, sl.next = p, 0
		o.slices = slices.Insert(o.slices, i, sl)
	}
	o.lastSlice = o.slices[i]
	return o.lastSlice
}

// fireTime emits the windows that the watermark, raised from old to o.wm,
// closes, in order of their end, and purges the panes past their allowed
// lateness.
func (o *Operator) fireTime(old int64, out *record.Output) error {
	if o.cfg.Emit != OnUpdate {
		o.ends = o.ends[:0]
		for _, sl := range o.slices {
			if first, _, _ := o.paneWindows(sl.start); first-1 > o.wm {
				break // this pane's windows, and later panes', are still open
			}
			o.ends = o.paneEnds(o.ends, sl.start, func(e int64) bool { return e-1 > old && e-1 <= o.wm })
		}
		slices.Sort(o.ends)
		ends := slices.Compact(o.ends)
		for k := 0; k < len(ends); k++ {
			if err := o.fireWindow(ends[k], out); err != nil {
				return err
			}
		}
	}
	if len(o.slices) > 0 && o.paneCleanup(o.slices[0].start) <= o.wm {
		// Keys that a purge emptied are kept until the next purge, since
		// most keys come back in the next window: dropping and re-creating
		// them costs more than keeping them a while.
		o.sweepIdle()
		n := 0
		for _, sl := range o.slices {
			if o.paneCleanup(sl.start) > o.wm {
				break // cleanup times grow with the pane start
			}
			for _, ks := range sl.keys {
				o.removePane(ks, sl.start)
			}
			clear(sl.keys)
			sl.keys = sl.keys[:0]
			if o.bounded {
				for b := sl.arena; len(b) > 0; {
					var k []byte
					k, b = nextKey(b)
					if ks := o.lookup(k); ks != nil {
						o.removePane(ks, sl.start)
					} else {
						o.muts = append(o.muts, state.Mutation{Key: o.arena.Copy(o.unitKey(k, sl.start)), Delete: true})
					}
				}
				sl.arena, sl.filter = nil, bloom{}
			}
			if sl == o.lastSlice {
				o.lastSlice = nil
			}
			o.freeSlice = append(o.freeSlice, sl)
			n++
		}
		o.slices = slices.Delete(o.slices, 0, n)
		if o.bounded && o.filter.n > 1024 && o.filter.n > 4*o.indexed() {
			o.rebuildFilter() // mostly purged keys: start afresh
		}
	}
	if len(o.slices) == 0 {
		o.sweepIdle() // nothing is open: keep nothing
	}
	return nil
}

// sweepIdle forgets the idle keys that are still empty.
func (o *Operator) sweepIdle() {
	for _, ks := range o.idle {
		ks.idle = false
		if len(ks.units) == 0 {
			o.drop(ks)
		}
	}
	clear(o.idle)
	o.idle = o.idle[:0]
}

// fireWindow emits every key's window ending at e.
func (o *Operator) fireWindow(e int64, out *record.Output) error {
	s := o.winStart(e)
	o.gen++
	i, _ := slices.BinarySearchFunc(o.slices, s, func(sl *slice, s int64) int {
		switch {
		case sl.start < s:
			return -1
		case sl.start > s:
			return 1
		}
		return 0
	})
	if o.bounded {
		return o.fireWindowBounded(i, s, e, out)
	}
	for ; i < len(o.slices) && o.slices[i].start < e; i++ {
		for _, ks := range o.slices[i].keys {
			if ks.stamp == o.gen {
				continue
			}
			ks.stamp = o.gen
			if err := o.emitWindow(ks, s, e, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// fireWindowBounded is fireWindow in bounded mode, from o.slices[i], the
// first pane of the window [s, e): keys are read back from the store as
// needed, and evicted as the firing goes.
func (o *Operator) fireWindowBounded(i int, s, e int64, out *record.Output) error {
	for ; i < len(o.slices) && o.slices[i].start < e; i++ {
		sl := o.slices[i]
		for b := sl.arena; len(b) > 0; {
			var k []byte
			k, b = nextKey(b)
			ks, err := o.mustLoad(k)
			if err != nil {
				return err
			}
			if j, _ := ks.find(s); j < len(ks.units) && ks.units[j].start < sl.start {
				continue // emitted with an earlier pane of the window
			}
			if err := o.emitWindow(ks, s, e, out); err != nil {
				return err
			}
			if len(o.keys) > o.max {
				o.evict()
			}
		}
	}
	return nil
}

// indexed returns the number of keys, with repeats, in the pane index of
// bounded mode.
func (o *Operator) indexed() int {
	n := 0
	for _, sl := range o.slices {
		n += sl.filter.n
	}
	return n
}

// removePane purges ks's pane starting at p.
func (o *Operator) removePane(ks *keyState, p int64) {
	for i := range ks.units {
		u := &ks.units[i]
		if u.start != p {
			continue
		}
		if u.stored {
			o.del(ks, p)
		}
		o.freeAcc(&u.acc)
		ks.units = slices.Delete(ks.units, i, i+1)
		break
	}
	if len(ks.units) == 0 && !ks.idle {
		ks.idle = true
		o.idle = append(o.idle, ks)
	}
}
