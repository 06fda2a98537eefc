package window

import (
	"container/heap"
	"slices"
)

// Forget implements engine.Forgetter: it drops from memory every key that
// owns rejects (given nil for the nil key), as an instance does for the
// tasks the group took from it, without firing anything for them or
// changing the store, which keeps their state for whichever instance owns
// them next. Call it between calls of Process and OnWatermark, with
// nothing of the current call pending.
func (o *Operator) Forget(owns func(recordKey []byte) bool) {
	drop := map[*keyState]bool{}
	if o.global != nil && !owns(nil) {
		drop[o.global] = true
		o.global = nil
	}
	for k, ks := range o.keys {
		if !owns([]byte(k)) {
			drop[ks] = true
			delete(o.keys, k)
		}
	}
	for ks := range drop {
		o.forgetKey(ks)
	}
	gone := func(ks *keyState) bool { return drop[ks] }
	for _, sl := range o.slices {
		sl.keys = slices.DeleteFunc(sl.keys, gone)
		if o.bounded {
			sl.arena = keepKeys(sl.arena, owns)
		}
	}
	o.pending = slices.DeleteFunc(o.pending, gone)
	o.idle = slices.DeleteFunc(o.idle, gone)
	o.dirty = slices.DeleteFunc(o.dirty, gone)
	for k, te := range o.timerKeys {
		if !owns([]byte(k)) {
			o.dropTimer(te)
		}
	}
	o.lastSlice = nil
}

// forgetKey drops ks from the LRU list, the session timers and memory.
func (o *Operator) forgetKey(ks *keyState) {
	o.unlink(ks)
	if te := ks.te; te != nil {
		o.dropTimer(te)
		te.ks, ks.te = nil, nil
	}
	for i := range ks.units {
		o.freeAcc(&ks.units[i].acc)
	}
	ks.units = nil
}

// dropTimer removes a session key's timer.
func (o *Operator) dropTimer(te *timerEnt) {
	if te.idx >= 0 {
		heap.Remove(&o.timers, te.idx)
	}
	if o.bounded && !te.global && o.timerKeys[te.key] == te {
		delete(o.timerKeys, te.key)
	}
}

// keepKeys returns, in place, the keys of a bounded pane's arena that
// owns accepts, in their order.
func keepKeys(arena []byte, owns func([]byte) bool) []byte {
	out := arena[:0]
	for rest := arena; len(rest) > 0; {
		k, next := nextKey(rest)
		entry := rest[:len(rest)-len(next)]
		if owns(k) {
			out = append(out, entry...)
		}
		rest = next
	}
	return out
}

// Forget implements engine.Forgetter, as Operator.Forget does: the keys
// owns rejects leave memory, their rows staying in the store. A key
// owns rejects that Process sees later is read back from the store.
func (r *Rolling) Forget(owns func(recordKey []byte) bool) {
	drop := func(k *rkey) bool {
		if k.global {
			return !owns(nil)
		}
		return !owns([]byte(k.key))
	}
	if r.global != nil && drop(r.global) {
		r.global = nil
	}
	for k, rk := range r.keys {
		if drop(rk) {
			delete(r.keys, k)
		}
	}
	r.timers = slices.DeleteFunc(r.timers, drop)
	for i, k := range r.timers {
		k.heapIdx = i
	}
	heap.Init(&r.timers)
	r.dirty = slices.DeleteFunc(r.dirty, drop)
	r.owns = owns
}
