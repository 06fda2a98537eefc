package join

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Config configures a join. It is a plain value; New keeps a copy.
type Config struct {
	Name        string // the operator's name: its state's namespace
	Left, Right string // the source names of the two sides; distinct
	// Bounded sets the interval [Lower, Upper], in milliseconds of event
	// time, of a right record's time relative to its left's.
	Bounded      bool
	Lower, Upper int64
	// Window, when positive, makes it a tumbling window join instead: a
	// left and a right record match when their event times fall in the
	// same window [k·Window, (k+1)·Window), as Flink's window join; each
	// record is dropped when its window closes. Bounded must be false.
	Window int64
	// TTL, when positive, bounds a regular join's state (neither Bounded
	// nor Window): a record is dropped once the watermark passes its event
	// time by TTL, as Flink's state TTL bounds its regular joins, and pairs
	// only with records that came while it was kept.
	TTL   int64
	Store state.Store // must also be a state.Scanner
	// Owns reports whether this instance owns a key (engine.KeyOwner);
	// nil means every key, with one instance.
	Owns func(key []byte) bool
	// Kind is the join type: Inner (or ""), LeftOuter, RightOuter or
	// FullOuter. An outer join also emits each record of its outer side(s)
	// that matched nothing, once, padded with null for the other side,
	// when it expires: when the watermark shows that nothing it could
	// match can still come (without a bound or a TTL, at the end of a
	// bounded input).
	Kind string
}

// Join types, as Config.Kind.
const (
	Inner      = "inner"
	LeftOuter  = "left"
	RightOuter = "right"
	FullOuter  = "full"
)

// sides, as stored: the first byte of a user key.
const (
	sideLeft  = 'L'
	sideRight = 'R'
)

// A record's matched mark, kept for a record of an outer side once it
// matches, has the user key of the record with the side in lower case.
const (
	markedLeft  = 'l'
	markedRight = 'r'
	markBit     = 'a' - 'A'
)

// markValue is the value of a matched mark.
var markValue = []byte("true")

// Operator is one instance of the join, used by one goroutine. It is an
// engine.Operator, an engine.Watermarker and an engine.Restorer.
type Operator struct {
	cfg     Config
	scan    state.Scanner
	what    string // `join "name"`, for messages
	wm      int64
	keys    map[string]*sides // the stored records of the keys this instance owns
	expiry  expiryHeap        // stored records by the watermark that drops them
	indexed bool              // keys and expiry hold what the store holds
	muts    []state.Mutation
	buf     []byte

	// The outer sides: their unmatched records are emitted padded with
	// null for the other side.
	padLeft, padRight bool
}

// sides are one key's stored records, each side in arrival order, and the
// key as the map holds it.
type sides struct {
	key         string
	left, right []stored
}

// stored is a record the join keeps: its event time, its state key and its
// value (copies), and whether it has matched a record of the other side
// (tracked on an outer side only, and marked in the store).
type stored struct {
	ts         int64
	key, value []byte
	matched    bool
}

// list returns the stored records of side s.
func (s *sides) list(side byte) *[]stored {
	if side == sideLeft {
		return &s.left
	}
	return &s.right
}

// New returns an instance of the join.
func New(cfg Config) (*Operator, error) {
	sc, ok := cfg.Store.(state.Scanner)
	switch {
	case !ok:
		return nil, fmt.Errorf("join %q: the state store (%T) cannot scan", cfg.Name, cfg.Store)
	case cfg.Left == "" || cfg.Right == "" || cfg.Left == cfg.Right:
		return nil, fmt.Errorf("join %q: left and right must name two different sources", cfg.Name)
	case cfg.Bounded && cfg.Lower > cfg.Upper:
		return nil, fmt.Errorf("join %q: lower bound %d ms above upper bound %d ms", cfg.Name, cfg.Lower, cfg.Upper)
	case cfg.Window < 0 || (cfg.Window > 0 && cfg.Bounded):
		return nil, fmt.Errorf("join %q: a window join has a positive window and no interval", cfg.Name)
	case cfg.TTL < 0 || (cfg.TTL > 0 && (cfg.Bounded || cfg.Window > 0)):
		return nil, fmt.Errorf("join %q: a TTL bounds a regular join only", cfg.Name)
	}
	o := &Operator{cfg: cfg, scan: sc, what: "join " + strconv.Quote(cfg.Name), wm: math.MinInt64, keys: map[string]*sides{}}
	switch cfg.Kind {
	case "", Inner:
	case LeftOuter:
		o.padLeft = true
	case RightOuter:
		o.padRight = true
	case FullOuter:
		o.padLeft, o.padRight = true, true
	default:
		return nil, fmt.Errorf("join %q: unknown join type %q (want %s, %s, %s or %s)", cfg.Name, cfg.Kind, Inner, LeftOuter, RightOuter, FullOuter)
	}
	return o, nil
}

func (o *Operator) Name() string                { return o.cfg.Name }
func (o *Operator) Close(context.Context) error { return nil }

// Process stores each record and emits its pairs with the other side's
// stored records of its key.
func (o *Operator) Process(_ context.Context, in []record.Record, out *record.Output) error {
	if err := o.index(); err != nil {
		return err
	}
	for i := range in {
		rec := &in[i]
		var side byte
		switch rec.Origin.Source {
		case o.cfg.Left:
			side = sideLeft
		case o.cfg.Right:
			side = sideRight
		default:
			out.Dead = append(out.Dead, record.DeadLetter{Record: *rec, Stage: o.cfg.Name,
				Reason: o.what + ": the record comes from source " + strconv.Quote(rec.Origin.Source) + ", neither side of the join"})
			continue
		}
		if !wjson.Valid(rec.Value) {
			out.Dead = append(out.Dead, record.DeadLetter{Record: *rec, Stage: o.cfg.Name, Reason: o.what + ": value is not JSON"})
			continue
		}
		exp := o.expires(side, rec.Timestamp)
		if o.expiring() && exp <= o.wm {
			if rec.Timestamp <= o.wm {
				out.Dead = append(out.Dead, record.DeadLetter{Record: *rec, Stage: o.cfg.Name, Reason: fmt.Sprintf(
					"%s: late: no record it could match can still come (event time %d, watermark %d)", o.what, rec.Timestamp, o.wm)})
				continue
			}
			// Ahead of the watermark, but its interval is behind it (a
			// right record with a positive lower bound, a left with a
			// negative upper one): every record it can match has come,
			// and is still stored (each is kept until the watermark
			// reaches at least rec's time). It pairs with them and is not
			// kept; on an outer side, unmatched, it is padded now.
			if ks := o.keys[string(rec.Key)]; (ks == nil || !o.match(rec, side, ks, out)) && o.pads(side) {
				o.emitPadded(out, side, rec.Key, rec.Value, rec.Timestamp, rec.Origin)
			}
			continue
		}
		ks := o.sidesOf(rec.Key)
		matched := o.match(rec, side, ks, out)
		st := stored{ts: rec.Timestamp, key: o.storeKey(rec.Key, side, rec), value: bytes.Clone(rec.Value)}
		o.muts = append(o.muts, state.Mutation{Key: st.key, Value: st.value})
		if matched && o.pads(side) {
			o.mark(&st)
		}
		l := ks.list(side)
		*l = append(*l, st)
		if o.expiring() {
			o.expiry.push(expiring{at: exp, ks: ks, side: side, key: st.key})
		}
	}
	return o.flush()
}

// match emits the pairs of rec (on side) with the other side's stored
// records of its key, ks, marks those of an outer side matched, and
// reports whether rec matched any.
func (o *Operator) match(rec *record.Record, side byte, ks *sides, out *record.Output) bool {
	other := byte(sideRight)
	if side == sideRight {
		other = sideLeft
	}
	matched := false
	list := *ks.list(other)
	for i := range list {
		st := &list[i]
		l, r := rec.Timestamp, st.ts
		if side == sideRight {
			l, r = st.ts, rec.Timestamp
		}
		if o.cfg.Bounded && (r < l+o.cfg.Lower || r > l+o.cfg.Upper) {
			continue
		}
		if o.cfg.Window > 0 && record.FloorDiv(l, o.cfg.Window) != record.FloorDiv(r, o.cfg.Window) {
			continue
		}
		matched = true
		if !st.matched && o.pads(other) {
			o.mark(st)
		}
		lv, rv := st.value, rec.Value
		if side == sideLeft {
			lv, rv = rec.Value, st.value
		}
		pair := *rec
		pair.Value = o.pair(out, lv, rv)
		pair.Timestamp = max(l, r)
		pair.Headers = nil
		out.Records = append(out.Records, pair)
	}
	return matched
}

// pair returns the output value of a left and a right value, in out's
// arena: {"<left source>": lv, "<right source>": rv}, a nil value null.
func (o *Operator) pair(out *record.Output, lv, rv []byte) []byte {
	o.buf = append(o.buf[:0], '{')
	o.buf = wjson.AppendQuote(o.buf, o.cfg.Left)
	o.buf = append(o.buf, ':')
	o.buf = appendValue(o.buf, lv)
	o.buf = append(o.buf, ',')
	o.buf = wjson.AppendQuote(o.buf, o.cfg.Right)
	o.buf = append(o.buf, ':')
	o.buf = appendValue(o.buf, rv)
	o.buf = append(o.buf, '}')
	return out.Arena.Copy(o.buf)
}

func appendValue(b, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// pads reports whether side is an outer side, whose unmatched records are
// emitted padded with null.
func (o *Operator) pads(side byte) bool {
	if side == sideLeft {
		return o.padLeft
	}
	return o.padRight
}

// mark sets st matched, and writes its mark to the store.
func (o *Operator) mark(st *stored) {
	st.matched = true
	o.muts = append(o.muts, state.Mutation{Key: markKey(st.key), Value: markValue})
}

// markKey returns the state key of the matched mark of the stored record
// whose state key is key: the same with its side in lower case.
func markKey(key []byte) []byte {
	k := bytes.Clone(key)
	k[len(k)-userKeyLen] |= markBit
	return k
}

// padded emits st, a record of side of key ks that matched nothing, with
// null for the other side, at its own event time, its origin that of the
// record.
func (o *Operator) padded(ks *sides, side byte, st *stored, out *record.Output) {
	src := o.cfg.Left
	if side == sideRight {
		src = o.cfg.Right
	}
	uk := st.key[len(st.key)-userKeyLen:]
	o.emitPadded(out, side, unsafe.Slice(unsafe.StringData(ks.key), len(ks.key)), st.value, st.ts,
		record.Origin{Source: src, Partition: int32(binary.BigEndian.Uint32(uk[9:])), Offset: int64(binary.BigEndian.Uint64(uk[13:]))})
}

// emitPadded emits value, of a record of side with key, at event time ts
// from origin, with null for the other side.
func (o *Operator) emitPadded(out *record.Output, side byte, key, value []byte, ts int64, origin record.Origin) {
	lv, rv := value, []byte(nil)
	if side == sideRight {
		lv, rv = nil, value
	}
	k := []byte{}
	if len(key) > 0 {
		k = out.Arena.Copy(key)
	}
	out.Records = append(out.Records, record.Record{Key: k, Value: o.pair(out, lv, rv), Timestamp: ts, Origin: origin})
}

// expiring reports whether stored records expire: with an interval, a
// window or a TTL.
func (o *Operator) expiring() bool { return o.cfg.Bounded || o.cfg.Window > 0 || o.cfg.TTL > 0 }

// expires returns the watermark at which a record of side at event time t
// can match nothing more, so that it is dropped: in a window join, once
// the watermark reaches its window's last millisecond; in an interval
// join, a left one once the watermark reaches t+Upper, a right one once it
// reaches t-Lower.
func (o *Operator) expires(side byte, t int64) int64 {
	if o.cfg.Window > 0 {
		return record.AddTime(record.FloorDiv(t, o.cfg.Window)*o.cfg.Window, o.cfg.Window-1)
	}
	if o.cfg.TTL > 0 {
		return record.AddTime(t, o.cfg.TTL)
	}
	if !o.cfg.Bounded {
		return math.MaxInt64
	}
	if side == sideLeft {
		return record.AddTime(t, o.cfg.Upper)
	}
	return record.AddTime(t, -o.cfg.Lower)
}

// OnWatermark drops the stored records no later record can match,
// emitting those of an outer side that matched nothing, padded with null.
// Without expiry (a regular join without a TTL), the final watermark of a
// bounded input (math.MaxInt64) emits an outer side's unmatched records
// and keeps every record.
func (o *Operator) OnWatermark(_ context.Context, wm int64, out *record.Output) error {
	if wm <= o.wm {
		return nil
	}
	o.wm = wm
	if !o.expiring() {
		if wm == math.MaxInt64 && (o.padLeft || o.padRight) {
			if err := o.index(); err != nil {
				return err
			}
			o.padAll(out)
			return o.flush()
		}
		return nil
	}
	if err := o.index(); err != nil {
		return err
	}
	for o.expiry.Len() > 0 && o.expiry[0].at <= wm {
		e := o.expiry.pop()
		st, ok := o.forget(e)
		if ok && !st.matched && o.pads(e.side) {
			o.padded(e.ks, e.side, &st, out)
		}
		o.muts = append(o.muts, state.Mutation{Key: e.key, Delete: true})
		if ok && st.matched {
			o.muts = append(o.muts, state.Mutation{Key: markKey(e.key), Delete: true})
		}
		if len(o.muts) >= 1024 {
			if err := o.flush(); err != nil {
				return err
			}
		}
	}
	return o.flush()
}

// Restore is engine.Restorer: a run that continues from a checkpoint gives
// the join the watermark it had then, so that a record late before the
// restart is late after it (and not stored, to be padded, by an outer
// join), and the join loads the records of the keys it owns at once.
func (o *Operator) Restore(_ context.Context, wm int64, owns func(key []byte) bool) error {
	if o.cfg.Owns == nil {
		o.cfg.Owns = owns
	}
	o.wm = max(o.wm, wm)
	return o.index()
}

// ResumeWatermark implements engine.WatermarkResumer: a join restored
// ahead of its run goes on from wm, as if Restore had been given it.
func (o *Operator) ResumeWatermark(wm int64) { o.wm = max(o.wm, wm) }

// Forget implements engine.Forgetter: the keys owns rejects leave
// memory, as for the tasks the group took from the instance, without
// being emitted or changing the store, which keeps their records for
// whichever instance owns them next.
func (o *Operator) Forget(owns func(key []byte) bool) {
	for k := range o.keys {
		if !owns([]byte(k)) {
			delete(o.keys, k)
		}
	}
	kept := o.expiry[:0]
	for _, e := range o.expiry {
		if owns([]byte(e.ks.key)) {
			kept = append(kept, e)
		}
	}
	clear(o.expiry[len(kept):])
	o.expiry = nil
	for _, e := range kept {
		o.expiry.push(e)
	}
	o.cfg.Owns = owns
}

// sidesOf returns the stored records of key, making them if it has none.
func (o *Operator) sidesOf(key []byte) *sides {
	ks := o.keys[string(key)]
	if ks == nil {
		ks = &sides{key: string(key)}
		o.keys[ks.key] = ks
	}
	return ks
}

// padAll emits, at the end of a bounded input, the unmatched records of
// the outer sides of a join that keeps its records for ever, by key and
// then in state-key order, and marks them: each is emitted once, and the records
// stay, as an inner regular join's do.
func (o *Operator) padAll(out *record.Output) {
	for _, key := range slices.Sorted(maps.Keys(o.keys)) {
		ks := o.keys[key]
		for _, side := range []byte{sideLeft, sideRight} {
			if !o.pads(side) {
				continue
			}
			l := *ks.list(side)
			order := make([]int, len(l))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int { return bytes.Compare(l[a].key, l[b].key) })
			for _, i := range order {
				if !l[i].matched {
					o.padded(ks, side, &l[i], out)
					o.mark(&l[i])
				}
			}
		}
	}
}

// forget removes an expired record from its key's side, and the key when
// it has no records left, and returns it.
func (o *Operator) forget(e expiring) (stored, bool) {
	ks := e.ks
	l := ks.list(e.side)
	var st stored
	found := false
	for i := range *l {
		if bytes.Equal((*l)[i].key, e.key) {
			st, found = (*l)[i], true
			*l = slices.Delete(*l, i, i+1)
			break
		}
	}
	if len(ks.left) == 0 && len(ks.right) == 0 && o.keys[ks.key] == ks {
		delete(o.keys, ks.key)
	}
	return st, found
}

func (o *Operator) flush() error {
	if len(o.muts) == 0 {
		return nil
	}
	err := o.cfg.Store.Apply(o.muts)
	clear(o.muts)
	o.muts = o.muts[:0]
	if err != nil {
		return fmt.Errorf("%s: writing state: %w", o.what, err)
	}
	return nil
}

// index loads the stored records of the keys this instance owns, their
// matched marks and their expiry, once, when the instance starts (after a
// restore, the store holds the records of earlier runs).
func (o *Operator) index() error {
	if o.indexed {
		return nil
	}
	o.indexed = true
	prefix := state.OperatorPrefix(nil, o.cfg.Name)
	err := o.scan.Scan(prefix, func(k, v []byte) error {
		rk, uk, ok := state.SplitRest(k[len(prefix):])
		if !ok || len(uk) == 0 {
			return fmt.Errorf("%s: malformed state key %q", o.what, k)
		}
		side := uk[0]
		switch side {
		case sideLeft, sideRight, markedLeft, markedRight:
		default:
			return fmt.Errorf("%s: malformed state key %q", o.what, k)
		}
		if o.cfg.Owns != nil && !o.cfg.Owns(rk) {
			return nil
		}
		t, ok := storedTime(uk[1:])
		if !ok {
			return fmt.Errorf("%s: malformed state key %q", o.what, k)
		}
		if side == markedLeft || side == markedRight {
			// A mark follows its record in the store's order: the
			// key's records are all loaded, sorted by state key.
			o.loadMark(rk, side&^markBit, k)
			return nil
		}
		ks := o.sidesOf(rk)
		st := stored{ts: t, key: bytes.Clone(k), value: bytes.Clone(v)}
		l := ks.list(side)
		*l = append(*l, st)
		if o.expiring() {
			o.expiry.push(expiring{at: o.expires(side, t), ks: ks, side: side, key: st.key})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return o.flush()
}

// loadMark sets matched the stored record of rk and side that mark (a
// state key) marks. A mark without its record is deleted.
func (o *Operator) loadMark(rk []byte, side byte, mark []byte) {
	rest := mark[len(mark)-userKeyLen+1:]
	if ks := o.keys[string(rk)]; ks != nil {
		l := *ks.list(side)
		i, found := slices.BinarySearchFunc(l, rest, func(st stored, rest []byte) int {
			return bytes.Compare(st.key[len(st.key)-userKeyLen+1:], rest)
		})
		if found {
			l[i].matched = true
			return
		}
	}
	o.muts = append(o.muts, state.Mutation{Key: bytes.Clone(mark), Delete: true})
}

// storeKey is the state key of rec on side: the side, its event time
// (ordered) and its origin's partition and offset, which tell apart
// records of one key at one time.
func (o *Operator) storeKey(key []byte, side byte, rec *record.Record) []byte {
	k := state.Key(make([]byte, 0, len(o.cfg.Name)+len(key)+2*binary.MaxVarintLen16+userKeyLen), o.cfg.Name, key, nil)
	k = append(k, side)
	k = binary.BigEndian.AppendUint64(k, uint64(rec.Timestamp)^(1<<63))
	k = binary.BigEndian.AppendUint32(k, uint32(rec.Origin.Partition))
	return binary.BigEndian.AppendUint64(k, uint64(rec.Origin.Offset))
}

// userKeyLen is the length of a stored record's user key: side, event
// time, partition, offset.
const userKeyLen = 1 + 8 + 4 + 8

// storedTime reads the event time from a user key after its side byte.
func storedTime(rest []byte) (int64, bool) {
	if len(rest) != userKeyLen-1 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(rest) ^ (1 << 63)), true
}

// expiring is a stored record (its key's records, side and state key)
// and the watermark that drops it.
type expiring struct {
	at   int64
	ks   *sides
	side byte
	key  []byte
}

// expiryHeap is a min-heap of expiring records by at, typed so that a push
// does not box its element.
type expiryHeap []expiring

func (h expiryHeap) Len() int { return len(h) }

// before orders the heap: by at, then by state key, so that the records
// a watermark drops (and an outer join emits) come in one order, whatever
// the order they were stored in.
func (e *expiring) before(f *expiring) bool {
	if e.at != f.at {
		return e.at < f.at
	}
	return bytes.Compare(e.key, f.key) < 0
}

func (h *expiryHeap) push(e expiring) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(&q[p]) {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
}

func (h *expiryHeap) pop() expiring {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q[n] = expiring{}
	q = q[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && q[c+1].before(&q[c]) {
			c++
		}
		if !q[c].before(&q[i]) {
			break
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
	*h = q
	return top
}

var (
	_ engine.Operator    = (*Operator)(nil)
	_ engine.Watermarker = (*Operator)(nil)
	_ engine.Restorer    = (*Operator)(nil)
)
