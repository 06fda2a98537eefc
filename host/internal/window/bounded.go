package window

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// Bounded mode (Config.MaxKeysInMemory > 0). The store is authoritative:
// every change is written through at the end of each call, so a key whose
// state is not being changed can be dropped from memory at any time and
// read back from the store when next needed. What stays in memory is:
//
//   - at most max evictable keys, in an LRU list;
//   - the keys pinned by the current call (Operator.dirty), the keys
//     pending early results in mode Every (Operator.pending), and the nil
//     key, which are never evicted;
//   - the pane index, with keys as bytes (slice.arena, slice.has);
//   - the session timers (timerEnt), with each key's session starts.
//
// Keys are evicted at the end of each call, once its writes are applied,
// and while a watermark fires many keys. A key evicted while firing may
// have writes queued (a purge's deletes): it is not read back before they
// are applied, since a watermark visits each key at most once.

// link adds ks at the head of the LRU list, if it is evictable.
func (o *Operator) link(ks *keyState) {
	if !o.bounded || ks.linked || ks.global || ks.dirty || ks.pending {
		return
	}
	ks.linked = true
	if ks.lru == nil {
		ks.lru = new(lruNode)
	}
	ks.lru.prev, ks.lru.next = nil, o.lruHead
	if o.lruHead != nil {
		o.lruHead.lru.prev = ks
	} else {
		o.lruTail = ks
	}
	o.lruHead = ks
}

// unlink removes ks from the LRU list.
func (o *Operator) unlink(ks *keyState) {
	if !ks.linked {
		return
	}
	ks.linked = false
	n := ks.lru
	if n.prev != nil {
		n.prev.lru.next = n.next
	} else {
		o.lruHead = n.next
	}
	if n.next != nil {
		n.next.lru.prev = n.prev
	} else {
		o.lruTail = n.prev
	}
	n.prev, n.next = nil, nil
}

// evict drops least recently used keys from memory until at most max are
// left (or only pinned ones).
func (o *Operator) evict() {
	if !o.bounded {
		return
	}
	for len(o.keys) > o.max && o.lruTail != nil {
		ks := o.lruTail
		o.unlink(ks)
		if o.keys[ks.key] == ks {
			delete(o.keys, ks.key)
		}
		for i := range ks.units {
			o.freeAcc(&ks.units[i].acc)
		}
		clear(ks.units)
		ks.units = nil
		if ks.te != nil {
			ks.te.ks = nil
			ks.te = nil
		}
	}
}

// load returns the state of record key k: in memory, or in bounded mode
// read back from the store; nil if the key has none.
func (o *Operator) load(k []byte) (*keyState, error) {
	ks := o.lookup(k)
	if ks != nil || !o.bounded || k == nil {
		return ks, nil
	}
	var (
		te    *timerEnt
		units []unit
		err   error
	)
	get := func(start int64) (bool, error) {
		v, found, err := o.cfg.Store.Get(o.unitKey(k, start))
		if err != nil || !found {
			return false, err
		}
		u, err := o.decodeUnit(v, start)
		if err != nil {
			return false, fmt.Errorf("store key %x, record key %s: value %x does not decode: %w", o.keyBuf, keyText(k), v, err)
		}
		u.stored = true
		units = append(units, u)
		return true, nil
	}
	switch o.cfg.Kind {
	case Session:
		if te = o.timerKeys[string(k)]; te == nil {
			return nil, nil
		}
		for _, s := range te.starts {
			var found bool
			if found, err = get(s); err == nil && !found {
				err = fmt.Errorf("record key %s: the session starting at %d is not in the store: %w", keyText(k), s, errCorrupt)
			}
			if err != nil {
				break
			}
		}
	case Count:
		_, err = get(0)
	default:
		h := maphash.Bytes(o.seed, k)
		if !o.filter.has(h) {
			break // a key seen for the first time, most likely
		}
		for _, sl := range o.slices {
			if !sl.filter.has(h) {
				continue
			}
			if _, err = get(sl.start); err != nil {
				break
			}
		}
	}
	if err != nil {
		for i := range units {
			o.freeAcc(&units[i].acc)
		}
		return nil, fmt.Errorf("window %q: reading state: %w", o.cfg.Name, err)
	}
	if len(units) == 0 {
		return nil, nil
	}
	ks = o.create(k)
	ks.units = append(ks.units, units...)
	if te != nil {
		ks.te, te.ks = te, ks
	}
	for i := range ks.units {
		o.loadRank(ks, &ks.units[i])
	}
	return ks, nil
}

// loadRank fixes the rank of unit u of ks, read from the store: ranks at or
// below the mark are stale (the unit was in an early result since).
func (o *Operator) loadRank(ks *keyState, u *unit) {
	if o.cfg.Emit != Every || u.rank <= o.mark {
		u.rank = 0
		return
	}
	o.pendSeq = max(o.pendSeq, u.rank)
	if !ks.pending {
		ks.pending = true
		o.pending = append(o.pending, ks)
		o.unlink(ks)
	}
}

// mustLoad is load for a key the index lists, which must have state.
func (o *Operator) mustLoad(k []byte) (*keyState, error) {
	ks, err := o.load(k)
	if err == nil && ks == nil {
		err = fmt.Errorf("window %q: record key %s is indexed but has no state in the store: %w", o.cfg.Name, keyText(k), errCorrupt)
	}
	return ks, err
}

// indexKey adds ks to the keys with data in sl.
func (o *Operator) indexKey(sl *slice, ks *keyState) {
	if !o.bounded {
		sl.keys = append(sl.keys, ks)
		return
	}
	if ks.global {
		sl.arena = append(sl.arena, 0)
		return
	}
	sl.arena = binary.AppendUvarint(sl.arena, uint64(len(ks.key))+1)
	sl.arena = append(sl.arena, ks.key...)
	o.filterAdd(sl, maphash.String(o.seed, ks.key))
}

// nextKey splits the first key off a slice's arena: k is nil for the nil
// key, non-nil otherwise.
func nextKey(arena []byte) (k, rest []byte) {
	n, m := binary.Uvarint(arena)
	if n == 0 {
		return nil, arena[m:]
	}
	end := m + int(n) - 1
	return arena[m:end:end], arena[end:]
}

// keyBytes returns a string key's bytes, non-nil, without copying.
func keyBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// restoreRef is a key of a slice's arena, while Restore builds it.
type restoreRef struct {
	seq uint32
	off int // of the key's entry in the arena
}

// bloom is a blocked Bloom filter of 64-bit key hashes: each hash sets
// bloomK bits in one 512-bit block (one cache line), bloomBits bits a key
// at capacity, for a false positive rate of about 0.2%. It only grows: it
// is rebuilt, larger, from the keys it stands for when full, and dropped
// with them.
type bloom struct {
	words []uint64
	n     int // hashes added
	cap   int // hashes it holds at its false positive rate
}

const (
	bloomBits = 16
	bloomK    = 6
)

// newBloom returns a filter for up to capacity hashes.
func newBloom(capacity int) bloom {
	blocks := max(1, (capacity*bloomBits+511)/512)
	return bloom{words: make([]uint64, blocks*8), cap: blocks * 512 / bloomBits}
}

// block returns the index of h's block's first word, and the bits to set.
func (b *bloom) block(h uint64) (int, uint64) {
	blocks := uint64(len(b.words) / 8)
	hi, _ := bits.Mul64(h, blocks)
	return int(hi) * 8, h*0x9e3779b97f4a7c15 ^ h>>29
}

func (b *bloom) add(h uint64) {
	w, x := b.block(h)
	for range bloomK {
		bit := x & 511
		b.words[w+int(bit>>6)] |= 1 << (bit & 63)
		x >>= 9
	}
	b.n++
}

// has reports whether h may have been added: false means it was not.
func (b *bloom) has(h uint64) bool {
	if b.n == 0 {
		return false
	}
	w, x := b.block(h)
	for range bloomK {
		bit := x & 511
		if b.words[w+int(bit>>6)]&(1<<(bit&63)) == 0 {
			return false
		}
		x >>= 9
	}
	return true
}

// full reports whether adding another hash would exceed the capacity.
func (b *bloom) full() bool { return b.n >= b.cap }

// eachHash calls fn with the hash of each non-nil key in arena.
func (o *Operator) eachHash(arena []byte, fn func(h uint64)) {
	for len(arena) > 0 {
		var k []byte
		k, arena = nextKey(arena)
		if k != nil {
			fn(maphash.Bytes(o.seed, k))
		}
	}
}

// filterAdd adds hash h of a key newly indexed in sl to sl's filter and the
// operator's, growing them as needed.
func (o *Operator) filterAdd(sl *slice, h uint64) {
	if sl.filter.full() {
		f := newBloom(2 * sl.filter.cap)
		o.eachHash(sl.arena, f.add)
		sl.filter = f // sl.arena holds the new key too: h is in
	} else {
		sl.filter.add(h)
	}
	if o.filter.full() {
		o.rebuildFilter()
	} else {
		o.filter.add(h)
	}
}

// rebuildFilter rebuilds the operator's filter from every pane's keys,
// with room for as many again.
func (o *Operator) rebuildFilter() {
	n := 0
	for _, sl := range o.slices {
		n += sl.filter.n
	}
	f := newBloom(max(1024, 2*n))
	for _, sl := range o.slices {
		o.eachHash(sl.arena, f.add)
	}
	o.filter = f
}
