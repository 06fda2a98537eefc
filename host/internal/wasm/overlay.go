package wasm

import (
	"slices"
	"unsafe"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// overlay holds the state writes of one batch call until the call's outcome
// is known. Reads during the call see the overlay first (read your writes),
// then the Store. Each write is tagged with the batch index of the record
// whose key scoped it, so that commit can leave out the writes made for
// records the guest rejected.
//
// An overlay is reused from call to call and allocates nothing in steady
// state: keys and values live in an arena, and the lookup map is keyed by
// strings that alias the arena (valid until reset, which clears the map
// before the arena is reused).
type overlay struct {
	arena  record.Arena
	writes []overlayWrite
	latest map[string]int // store key -> index in writes of its latest write

	// commit's scratch space.
	muts []state.Mutation
	seen map[string]struct{}
}

type overlayWrite struct {
	key    []byte
	value  []byte
	delete bool
	rec    int // batch index of the record
}

// reset discards every write.
func (o *overlay) reset() {
	if len(o.writes) == 0 {
		return
	}
	clear(o.latest)
	clear(o.writes)
	o.writes = o.writes[:0]
	o.arena.Reset()
}

// get returns the batch's latest write of key: the value and whether it
// exists (false for a delete), with inOverlay false when the batch did not
// write key.
func (o *overlay) get(key []byte) (value []byte, found, inOverlay bool) {
	if len(o.writes) == 0 {
		return nil, false, false
	}
	i, ok := o.latest[string(key)]
	if !ok {
		return nil, false, false
	}
	wr := &o.writes[i]
	return wr.value, !wr.delete, true
}

// put records a write (or, with del, a delete) of key for record rec. It
// copies key and value.
func (o *overlay) put(key, value []byte, del bool, rec int) {
	if o.latest == nil {
		o.latest = make(map[string]int)
	}
	k := o.arena.Copy(key)
	var v []byte
	if !del {
		v = o.arena.Copy(value)
	}
	o.latest[unsafe.String(unsafe.SliceData(k), len(k))] = len(o.writes)
	o.writes = append(o.writes, overlayWrite{key: k, value: v, delete: del, rec: rec})
}

// commit applies the batch's writes to store in one Apply, leaving out the
// writes of records marked in rejected. When a key was written more than
// once, only its latest kept write is applied.
func (o *overlay) commit(store state.Store, rejected []bool) error {
	if len(o.writes) == 0 {
		return nil
	}
	if o.seen == nil {
		o.seen = make(map[string]struct{})
	}
	o.muts = o.muts[:0]
	for i := len(o.writes) - 1; i >= 0; i-- {
		wr := &o.writes[i]
		if wr.rec < len(rejected) && rejected[wr.rec] {
			continue
		}
		k := unsafe.String(unsafe.SliceData(wr.key), len(wr.key))
		if _, dup := o.seen[k]; dup {
			continue
		}
		o.seen[k] = struct{}{}
		o.muts = append(o.muts, state.Mutation{Key: wr.key, Value: wr.value, Delete: wr.delete})
	}
	// seen's keys alias the arena: drop them before the arena is reused.
	clear(o.seen)
	if len(o.muts) == 0 {
		return nil
	}
	slices.Reverse(o.muts) // first-write order, for stores that care
	err := store.Apply(o.muts)
	clear(o.muts)
	return err
}
