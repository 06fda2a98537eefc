package window

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Restoring: the state of an operator is every store key under its Name
// (see the package documentation, # State). Restore scans them once and
// rebuilds what Process and OnWatermark use: the keys and their units, and
// the indexes over them.

// scanPrefix returns the prefix of the store keys of the operator named
// name: state.Key's length-prefixed name, without the record key's part.
func scanPrefix(name string) []byte {
	p := state.Key(nil, name, nil, nil)
	return p[:len(p)-1] // drop the empty record key's length, uvarint(0)
}

// splitKey splits the rest of a store key after scanPrefix into the record
// key, nil for the nil key (the tag's high bit set), and the user key.
func splitKey(rest []byte) (recordKey, userKey []byte, err error) {
	recordKey, userKey, ok := state.SplitRest(rest)
	if !ok {
		return nil, nil, errors.New("malformed key: bad record key length")
	}
	if len(userKey) == 0 {
		return nil, nil, errors.New("malformed key: no user key")
	}
	if userKey[0]&tagNilKey != 0 {
		if len(recordKey) != 0 {
			return nil, nil, errors.New("malformed key: the tag marks the nil record key, but the record key is not empty")
		}
		return nil, userKey, nil
	}
	if recordKey == nil {
		recordKey = []byte{}
	}
	return recordKey, userKey, nil
}

// keyText is record key k for messages.
func keyText(k []byte) string {
	if k == nil {
		return "nil"
	}
	return strconv.Quote(string(k))
}

// tagText names the entries tag (without tagNilKey) stands for.
func tagText(tag byte) string {
	switch tag {
	case tagPane:
		return "a pane (tumbling, sliding or cumulate window)"
	case tagSession:
		return "a session"
	case tagCount:
		return "a count window"
	case tagRolling:
		return "a rolling operator's key"
	case tagRollingRow:
		return "a rolling operator's history row"
	}
	return fmt.Sprintf("unknown (tag %#x)", tag)
}

// Restore rebuilds the operator's in-memory state from Config.Store after a
// restart: every unit (pane, session, count window) stored under the
// operator's Name whose record key owns accepts. wm is the watermark the
// state was checkpointed at; the operator continues from it (windows it
// already fired and purged are not in the store; windows still open fire
// when the watermark passes them, exactly as if the operator had never
// stopped). It must be called at most once, before the first Process or
// OnWatermark. It returns an error if the Store does not implement
// state.Scanner or holds a value it cannot decode (saying which key and
// why).
//
// owns may be nil, meaning every key. It is given nil for the nil record
// key, and a non-nil empty slice for the empty one.
//
// For processing-time windows wm is the last processing-time watermark. In
// mode Every the operator also resumes the EmitInterval schedule and the
// set of windows changed since the last early results, as stored.
//
// Restore stops if ctx is cancelled. After an error the operator holds part
// of the state and must not be used.
func (o *Operator) Restore(ctx context.Context, wm int64, owns func(recordKey []byte) bool) error {
	if o.keys == nil {
		return fmt.Errorf("window %q: Restore after Close", o.cfg.Name)
	}
	if o.begun {
		return fmt.Errorf("window %q: Restore must be called once, before the first Process or OnWatermark", o.cfg.Name)
	}
	o.begun = true
	sc, ok := o.cfg.Store.(state.Scanner)
	if !ok {
		return fmt.Errorf("window %q: cannot restore state: the store (%T) does not implement state.Scanner", o.cfg.Name, o.cfg.Store)
	}
	o.wm = wm
	prefix := scanPrefix(o.cfg.Name)
	var (
		mark     uint64
		next     int64
		haveMeta bool
	)
	n := 0
	// In bounded mode a key's units are gathered in grp (a key's entries
	// are adjacent in the scan) and indexed together; the key stays in
	// memory only if it must (restoreKey).
	var grp *keyState
	endGroup := func() error {
		if grp == nil {
			return nil
		}
		g := grp
		grp = nil
		return o.restoreKey(g, haveMeta, mark)
	}
	err := sc.Scan(prefix, func(key, value []byte) error {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		rk, uk, err := splitKey(key[len(prefix):])
		if err == nil && rk != nil && len(rk) == 0 && len(uk) == 1 && uk[0] == tagMeta {
			if mark, next, err = decodeMeta(value); err != nil {
				return fmt.Errorf("store key %x (the operator entry): %w", key, err)
			}
			haveMeta = true
			return nil
		}
		var (
			u    unit
			keep bool
		)
		if err == nil {
			u, keep, err = o.restoreUnit(rk, uk, value, owns)
		}
		if err == nil && keep {
			if !o.bounded {
				err = o.placeUnit(o.create(rk), u)
			} else {
				if grp != nil && (grp.global != (rk == nil) || grp.key != string(rk)) {
					if err := endGroup(); err != nil {
						return err
					}
				}
				if grp == nil {
					grp = &keyState{key: string(rk), global: rk == nil}
					grp.units = grp.one[:0]
				}
				err = o.placeUnit(grp, u)
			}
		}
		if err != nil {
			what := ""
			if rk != nil || len(uk) > 0 {
				what = ", record key " + keyText(rk)
			}
			return fmt.Errorf("store key %x%s: %w", key, what, err)
		}
		return nil
	})
	if err == nil {
		err = endGroup()
	}
	if err != nil {
		return fmt.Errorf("window %q: restoring state: %w", o.cfg.Name, err)
	}
	if err := o.rebuild(mark, next, haveMeta); err != nil {
		return fmt.Errorf("window %q: restoring state: %w", o.cfg.Name, err)
	}
	o.evict()
	return nil
}

// ResumeWatermark implements engine.WatermarkResumer: an operator
// restored with engine.NoWatermark ahead of its run goes on from wm, as
// if Restore had been given it (Restore takes nothing else from its
// watermark), firing nothing for it. Call it after Restore, before the
// first Process or OnWatermark.
func (o *Operator) ResumeWatermark(wm int64) { o.wm = wm }

// restoreUnit decodes one unit's entry, unless owns rejects its key (keep
// false).
func (o *Operator) restoreUnit(rk, uk, value []byte, owns func([]byte) bool) (u unit, keep bool, err error) {
	tag := uk[0] &^ tagNilKey
	want := byte(tagPane)
	switch o.cfg.Kind {
	case Session:
		want = tagSession
	case Count:
		want = tagCount
	}
	if tag != want {
		return u, false, fmt.Errorf("the entry is %s, but this is a %v window operator", tagText(tag), o.cfg.Kind)
	}
	if owns != nil && !owns(rk) {
		return u, false, nil
	}
	var start int64
	if o.cfg.Kind == Count {
		if len(uk) != 1 {
			return u, false, errors.New("malformed key: a count window's user key is its tag alone")
		}
	} else {
		if len(uk) != 9 {
			return u, false, fmt.Errorf("malformed key: user key of %d bytes, want 9", len(uk))
		}
		start = int64(binary.BigEndian.Uint64(uk[1:]) ^ 1<<63)
	}
	u, err = o.decodeUnit(value, start)
	if err != nil {
		return u, false, fmt.Errorf("%s starting at %d: value %x does not decode: %w", tagText(tag), start, value, err)
	}
	switch o.cfg.Kind {
	case Session:
		if u.end <= u.start {
			return u, false, fmt.Errorf("session starting at %d: end %d is not after its start: %w", start, u.end, errCorrupt)
		}
	case Count:
		if u.n <= 0 || u.end <= u.start {
			return u, false, fmt.Errorf("count window of %d records over [%d, %d): %w", u.n, u.start, u.end, errCorrupt)
		}
	default:
		if start > maxTime || start < -maxTime-o.pane || record.FloorDiv(start, o.pane)*o.pane != start {
			o.freeAcc(&u.acc)
			return u, false, fmt.Errorf("pane starting at %d: the start is not a multiple of the pane length, %d ms (did the window's Size or Slide change?)", start, o.pane)
		}
	}
	u.stored = true
	return u, true, nil
}

// placeUnit adds restored unit u to ks.
func (o *Operator) placeUnit(ks *keyState, u unit) error {
	i, found := ks.find(u.start)
	if found || o.cfg.Kind == Count && len(ks.units) > 0 {
		return fmt.Errorf("a second unit starting at %d for the key", u.start)
	}
	ks.units = slices.Insert(ks.units, i, u)
	return nil
}

// restoreKey indexes the units Restore read for one key, in bounded mode,
// and keeps the key in memory if it must be: the nil key, and in mode Every
// a key with units pending early results (or any key, before the operator
// entry, which holds the mark, is read). Other keys are read back from the
// store when needed.
func (o *Operator) restoreKey(ks *keyState, haveMeta bool, mark uint64) error {
	switch o.cfg.Kind {
	case Session:
		if err := o.checkSessions(ks); err != nil {
			return err
		}
		o.schedule(ks)
	case Count:
	default:
		for i := range ks.units {
			sl := o.sliceAt(ks.units[i].start)
			sl.order = append(sl.order, restoreRef{seq: ks.units[i].seq, off: len(sl.arena)})
			o.indexKey(sl, ks)
		}
	}
	keep := ks.global
	if o.cfg.Emit == Every {
		keep = keep || !haveMeta
		for i := range ks.units {
			keep = keep || ks.units[i].rank > mark
		}
	}
	if keep {
		if ks.global {
			o.global = ks
		} else {
			o.keys[ks.key] = ks
			o.link(ks)
		}
		return nil
	}
	for i := range ks.units {
		o.freeAcc(&ks.units[i].acc)
	}
	if ks.te != nil {
		ks.te.ks, ks.te = nil, nil
	}
	return nil
}

// checkSessions checks that ks's sessions do not overlap.
func (o *Operator) checkSessions(ks *keyState) error {
	for i := 1; i < len(ks.units); i++ {
		if a, b := &ks.units[i-1], &ks.units[i]; b.start <= a.end {
			return fmt.Errorf("record key %s: sessions [%d, %d) and [%d, %d) overlap: %w",
				keyText(ks.recordKey()), a.start, a.end, b.start, b.end, errCorrupt)
		}
	}
	return nil
}

// rebuild builds, once Restore has read every unit, the indexes over them
// and the bookkeeping of mode Every. mark and next are the operator entry's,
// if haveMeta.
func (o *Operator) rebuild(mark uint64, next int64, haveMeta bool) error {
	every := o.cfg.Emit == Every
	if every && haveMeta {
		o.mark, o.pendSeq = mark, mark
		o.nextTick = time.Unix(0, next)
	}
	var err error
	o.eachKey(func(ks *keyState) {
		for i := range ks.units {
			u := &ks.units[i]
			if !every || u.rank <= o.mark {
				u.rank = 0 // emitted by an early result since it was stored
				continue
			}
			o.pendSeq = max(o.pendSeq, u.rank)
			if !ks.pending {
				ks.pending = true
				o.pending = append(o.pending, ks)
				o.unlink(ks)
			}
		}
		if o.bounded {
			return // indexed by restoreKey
		}
		switch o.cfg.Kind {
		case Session:
			if e := o.checkSessions(ks); e != nil && err == nil {
				err = e
			}
			o.schedule(ks)
		case Count:
		default:
			for i := range ks.units {
				sl := o.sliceAt(ks.units[i].start)
				sl.keys = append(sl.keys, ks)
			}
		}
	})
	if err != nil {
		return err
	}
	o.sortPending()
	if o.bounded {
		o.sortArenas()
		o.lastSlice = nil
		return nil
	}
	// Each pane's keys in the order they had data, as when they were added.
	for _, sl := range o.slices {
		seq := func(ks *keyState) uint32 {
			i, _ := ks.find(sl.start)
			return ks.units[i].seq
		}
		slices.SortFunc(sl.keys, func(a, b *keyState) int {
			if x, y := seq(a), seq(b); x != y {
				if x < y {
					return -1
				}
				return 1
			}
			return compareKeys(a.global, b.global, a.key, b.key) // ties only from several instances' state
		})
		for _, ks := range sl.keys {
			if s := seq(ks); s >= sl.next {
				sl.next = s
				if s < math.MaxUint32 {
					sl.next++
				}
			}
		}
	}
	o.lastSlice = nil
	return nil
}

// sortArenas orders, in bounded mode, each pane's keys as they had data,
// as when they were added, once Restore has indexed them all.
func (o *Operator) sortArenas() {
	for _, sl := range o.slices {
		arena := sl.arena
		slices.SortFunc(sl.order, func(a, b restoreRef) int {
			if a.seq != b.seq {
				return cmp.Compare(a.seq, b.seq)
			}
			ka, _ := nextKey(arena[a.off:])
			kb, _ := nextKey(arena[b.off:])
			return compareKeyBytes(ka, kb) // ties only from several instances' state
		})
		sorted := make([]byte, 0, len(arena))
		for _, r := range sl.order {
			_, rest := nextKey(arena[r.off:])
			sorted = append(sorted, arena[r.off:len(arena)-len(rest)]...)
			if r.seq >= sl.next {
				sl.next = r.seq
				if r.seq < math.MaxUint32 {
					sl.next++
				}
			}
		}
		sl.arena, sl.order = sorted, nil
	}
}

// compareKeyBytes is compareKeys for record keys as bytes, nil for the nil
// key.
func compareKeyBytes(a, b []byte) int {
	switch {
	case a == nil && b != nil:
		return -1
	case b == nil && a != nil:
		return 1
	}
	return bytes.Compare(a, b)
}

// eachKey calls fn for every key in memory.
func (o *Operator) eachKey(fn func(ks *keyState)) {
	if o.global != nil {
		fn(o.global)
	}
	for _, ks := range o.keys {
		fn(ks)
	}
}

// recordKey returns ks's record key: nil for the nil key.
func (ks *keyState) recordKey() []byte {
	if ks.global {
		return nil
	}
	return []byte(ks.key)
}

// ResumeWatermark implements engine.WatermarkResumer, as
// Operator.ResumeWatermark does.
func (r *Rolling) ResumeWatermark(wm int64) { r.wm = wm }

// Restore rebuilds the operator's in-memory state from RollingConfig.Store
// after a restart: each key's buffered rows, history, running aggregates
// and min/max deques, and the latest time it emitted (which decides which
// of its rows are late), for every key stored under the operator's Name
// that owns accepts. wm is the watermark the state was checkpointed at;
// buffered rows are emitted when the watermark next advances past them
// (rows of a key that had emitted nothing that late may be buffered at or
// before wm), exactly as if the operator had never stopped. It must be
// called at most once, before the first Process or OnWatermark. It returns
// an error if the Store does not implement state.Scanner or holds a value
// it cannot decode (saying which key and why). Restore stops if ctx is cancelled; after an error the
// operator holds part of the state and must not be used.
//
// owns may be nil, meaning every key. It is given nil for the nil record
// key, and a non-nil empty slice for the empty one. After Restore, a key
// first seen by Process is read from the store only if owns rejects it
// (its state, if any, was left there); without Restore, every key is read
// the first time it is seen.
func (r *Rolling) Restore(ctx context.Context, wm int64, owns func(recordKey []byte) bool) error {
	if r.closed {
		return fmt.Errorf("rolling %q: Restore after Close", r.cfg.Name)
	}
	if r.begun {
		return fmt.Errorf("rolling %q: Restore must be called once, before the first Process or OnWatermark", r.cfg.Name)
	}
	r.begun = true
	sc, ok := r.cfg.Store.(state.Scanner)
	if !ok {
		return fmt.Errorf("rolling %q: cannot restore state: the store (%T) does not implement state.Scanner", r.cfg.Name, r.cfg.Store)
	}
	r.wm, r.restored, r.owns = wm, true, owns
	// A key's entries are adjacent in the scan, its rows before its header
	// ('O' < 'o'), but nothing here relies on the order.
	type entries struct {
		k      []byte
		header []byte
		hkey   []byte
		rows   map[int64][]byte
	}
	var order []*entries
	byKey := map[string]*entries{} // the nil key as "\x00nil", others as "k" + key
	prefix := scanPrefix(r.cfg.Name)
	n := 0
	err := sc.Scan(prefix, func(key, value []byte) error {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		rk, uk, err := splitKey(key[len(prefix):])
		if err == nil {
			switch tag := uk[0] &^ tagNilKey; {
			case tag == tagRolling && len(uk) != 1, tag == tagRollingRow && len(uk) != 9:
				err = fmt.Errorf("malformed key: %s with a user key of %d bytes", tagText(tag), len(uk))
			case tag != tagRolling && tag != tagRollingRow:
				err = fmt.Errorf("the entry is %s, not a rolling operator's", tagText(tag))
			}
		}
		if err != nil {
			return fmt.Errorf("store key %x: %w", key, err)
		}
		if owns != nil && !owns(rk) {
			return nil
		}
		id := "k" + string(rk)
		if rk == nil {
			id = "\x00nil"
		}
		e := byKey[id]
		if e == nil {
			e = &entries{rows: map[int64][]byte{}}
			if rk != nil {
				e.k = slices.Clone(rk)
				if e.k == nil {
					e.k = []byte{}
				}
			}
			byKey[id] = e
			order = append(order, e)
		}
		if uk[0]&^tagNilKey == tagRolling {
			e.header, e.hkey = slices.Clone(value), slices.Clone(key)
		} else {
			e.rows[int64(binary.BigEndian.Uint64(uk[1:]))] = slices.Clone(value)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rolling %q: restoring state: %w", r.cfg.Name, err)
	}
	for _, e := range order {
		if e.header == nil {
			// History rows without a header: nothing refers to them.
			continue
		}
		ks := r.newKey(e.k)
		row := func(idx int64) ([]byte, bool, error) {
			b, ok := e.rows[idx]
			return b, ok, nil
		}
		if err := r.decode(ks, e.header, row); err != nil {
			return fmt.Errorf("rolling %q: restoring state: store key %x, record key %s: %w", r.cfg.Name, e.hkey, keyText(e.k), err)
		}
		r.addKey(ks)
	}
	return nil
}
