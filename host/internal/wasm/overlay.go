package wasm

import (
	"fmt"
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

	// limit bounds the bytes of keys and values one call may hold (0:
	// none); bytes counts them, and over says why a write was refused.
	limit    int
	bytes    int
	over     string
	overKind string // the config key of the bound over refers to

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
	o.bytes, o.over, o.overKind = 0, "", ""
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
// copies key and value. A record's rewrite of a key it wrote earlier in the
// call replaces that write. It reports false, recording why in o.over,
// when the write would take the call's writes over the limit.
func (o *overlay) put(key, value []byte, del bool, rec int) bool {
	if o.latest == nil {
		o.latest = make(map[string]int)
	}
	if i, ok := o.latest[string(key)]; ok && o.writes[i].rec == rec {
		return o.rewrite(&o.writes[i], value, del)
	}
	if !o.charge(len(key) + len(value)) {
		return false
	}
	k := o.arena.Copy(key)
	var v []byte
	if !del {
		v = o.arena.Copy(value)
	}
	o.latest[unsafe.String(unsafe.SliceData(k), len(k))] = len(o.writes)
	o.writes = append(o.writes, overlayWrite{key: k, value: v, delete: del, rec: rec})
	return true
}

// rewrite replaces wr's value, in place when it fits.
func (o *overlay) rewrite(wr *overlayWrite, value []byte, del bool) bool {
	wr.delete = del
	switch {
	case del:
		wr.value = wr.value[:0]
	case wr.value != nil && len(value) <= cap(wr.value):
		wr.value = append(wr.value[:0], value...)
	case !o.charge(len(value)):
		return false
	default:
		wr.value = o.arena.Copy(value)
	}
	return true
}

// refuse records the first write of the call refused over a bound.
func (o *overlay) refuse(kind, why string) {
	if o.over == "" {
		o.over, o.overKind = why, kind
	}
}

// charge counts n more bytes against the limit.
func (o *overlay) charge(n int) bool {
	if o.limit > 0 && o.bytes+n > o.limit {
		o.refuse(limitBatchState, fmt.Sprintf("state writes of one call over max_batch_state (%s)", sizeString(uint64(o.limit))))
		return false
	}
	o.bytes += n
	return true
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
