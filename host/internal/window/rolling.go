package window

import (
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Order is how a Rolling operator bounds its windows.
type Order uint8

// The orders.
const (
	// ByRange bounds each window by time: RollingWindow.Range before the
	// current row's event time (RANGE BETWEEN x PRECEDING AND CURRENT ROW).
	ByRange Order = iota
	// ByRows bounds each window by a count of rows: RollingWindow.Rows rows
	// ending at the current one.
	ByRows
)

// String returns "range" or "rows".
func (o Order) String() string {
	switch o {
	case ByRange:
		return "range"
	case ByRows:
		return "rows"
	}
	return fmt.Sprintf("order(%d)", uint8(o))
}

// RollingWindow is one trailing window of a Rolling operator.
type RollingWindow struct {
	// Name suffixes the window's output fields: "<As>_<Name>".
	Name string
	// Range (ByRange) is how far back the window reaches: a row of event
	// time t sees the key's rows with event times in [t-Range, t].
	Range time.Duration
	// Rows (ByRows) is the number of rows in the window: the current row
	// and the Rows-1 rows before it (Flink's ROWS BETWEEN Rows-1 PRECEDING
	// AND CURRENT ROW).
	Rows int64
}

// RollingConfig configures a Rolling operator.
type RollingConfig struct {
	// Name names the operator: its state namespace and the Stage of its
	// dead letters.
	Name    string
	Order   Order
	Windows []RollingWindow
	// Aggregates are computed over every window; only AggSum, AggCount,
	// AggAvg, AggMin and AggMax are allowed.
	Aggregates []Aggregate
	// Store holds the operator's state.
	Store state.Store
	// ProcessingTime orders rows by the time the operator processes them,
	// not by their timestamps (see Config.ProcessingTime).
	ProcessingTime bool
}

// Rolling is the rolling (OVER) aggregation operator, as Flink's
// event-time OVER aggregation but with several windows in one operator: an
// engine.Operator and an engine.Watermarker, used by one goroutine.
//
// Process buffers each record by key until the watermark reaches its event
// time; OnWatermark then emits the key's buffered rows in event-time order
// (equal times in arrival order). Lateness is judged per key, as Flink's
// RowTimeRangeBoundedPrecedingFunction and RowTimeRowsBoundedPrecedingFunction
// judge it against the key's last triggering time: a record is late when
// its key has already emitted rows at or after its event time, since its
// peers (or the rows after it) have gone out without it. Late records go to
// the dead letters, as do records whose value is not a JSON object or lacks
// a numeric field that sum, avg, min or max reads. A record at or before
// the watermark whose key has emitted nothing that late is not late: it is
// buffered and emitted when the watermark next advances, as Flink fires a
// timer registered behind the watermark at its next advance. With
// max_out_of_orderness 0 the watermark is the highest time seen, so this
// is what keeps a card's row tying another card's last row of the previous
// batch.
//
// ByRange: a window of Range r of a row at time t holds the key's rows with
// times in [t-r, t]; rows of equal time (peers) all see each other and get
// the same aggregates, as SQL's RANGE … AND CURRENT ROW. ByRows: a window of
// Rows n holds the current row and the n-1 rows before it.
//
// Each emitted record is the input object with, appended after its fields,
// "<As>_<Name>" for each window in order and, within it, each aggregate in
// order. An integer sum stays an integer while every value in the window is
// one; avg is a float; min and max are the value as read.
//
// Per key it keeps the rows the widest window still needs and, per window,
// the index of its first row and running counts and sums (a two-pointer
// scheme: each row is added once and removed once per window), with a
// monotonic deque per window for min and max. State is written to the Store
// once per call. After a restart, Restore reads back every key's state
// (the rows it buffers, its history and running aggregates; the deques, and
// the latest time the key emitted, are rebuilt from the history), so that
// the operator continues exactly as if it had not stopped. Without
// Restore, a key's state is read back the first time the key is seen, and
// buffered rows of keys never seen again stay in the Store until they are. OnWatermark releases keys in order of
// their earliest buffered time, then of the key (the nil key first); all
// of this is in the store, so restoring does not change the output's
// order.
type Rolling struct {
	cfg    RollingConfig
	ranges []int64 // ByRange: the windows' ranges in ms
	rows   []int64 // ByRows: the windows' row counts
	specs  []spec
	paths  [][]string
	fields [][]byte // per window, per spec: `,"<as>_<name>":`
	mm     []int    // indices of the min/max specs

	wm     int64
	closed bool
	begun  bool // Process, OnWatermark or Restore was called
	// After Restore, the keys owns accepts (every key when it is nil) are
	// all in memory: a key seen for the first time has no state to read.
	restored bool
	owns     func(recordKey []byte) bool
	keys     map[string]*rkey
	global   *rkey
	timers   rheap // keys with pending rows, by earliest pending event time
	dirty    []*rkey
	values   []wjson.Value
	inputs   []input
	scratch  []byte
	num      wjson.Writer
	val      []byte
	keyBuf   []byte
	muts     []state.Mutation
	arena    record.Arena
}

// rkey is the state of one record key.
type rkey struct {
	key     string
	global  bool
	loaded  bool
	dirty   bool
	heapIdx int
	pending []prow // rows waiting for the watermark, in arrival order
	sorted  bool   // pending is sorted by event time
	minPend int64  // the earliest pending event time
	// emitted is the latest event time the key has emitted (math.MinInt64
	// before any): a row at or before it is late. It is the time of the
	// history's last row, which no window evicts, so it needs no entry of
	// its own in the Store.
	emitted int64
	// hist holds the rows the widest window may still need: row base+i is
	// hist[i], its inputs ins[i*len(specs):].
	base int64
	hist []int64
	// Rows [storedBase, storedEnd) are in the Store, one entry each.
	storedBase, storedEnd int64
	ins                   []input
	left                  []int64 // per window: the index of its first row
	runs                  []run   // per window, per spec
	mono                  [][]int64
}

// prow is a buffered row.
type prow struct {
	ts  int64
	val []byte
	ins []input // the aggregates' inputs, read on arrival
}

// run is a running sum/count over one window.
type run struct {
	n      int64 // values (count: present values)
	isum   int64 // sum of the integer values
	fsum   float64
	floats int64 // float values in the window
}

// NewRolling returns a Rolling operator.
func NewRolling(cfg RollingConfig) (*Rolling, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Rolling{cfg: cfg, wm: math.MinInt64, keys: map[string]*rkey{}}
	for _, w := range cfg.Windows {
		r.ranges = append(r.ranges, w.Range.Milliseconds())
		r.rows = append(r.rows, w.Rows)
	}
	for j, a := range cfg.Aggregates {
		s := spec{fn: a.Func, as: a.As, field: fieldText(a.Field), path: -1}
		if len(a.Field) > 0 {
			s.path = r.pathIndex(a.Field)
		}
		if a.Func == AggMin || a.Func == AggMax {
			r.mm = append(r.mm, j)
		}
		r.specs = append(r.specs, s)
	}
	for _, w := range cfg.Windows {
		for _, a := range cfg.Aggregates {
			name, _ := json.Marshal(a.As + "_" + w.Name)
			r.fields = append(r.fields, append(append([]byte{','}, name...), ':'))
		}
	}
	r.values = make([]wjson.Value, len(r.paths))
	r.inputs = make([]input, len(r.specs))
	return r, nil
}

func (c *RollingConfig) validate() error {
	var errs []error
	check := func(e error) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if c.Name == "" {
		check(errors.New("Name is required"))
	}
	if c.Store == nil {
		check(errors.New("Store is required"))
	}
	if c.Order > ByRows {
		check(fmt.Errorf("Order %v is not an order", c.Order))
	}
	if len(c.Windows) == 0 {
		check(errors.New("a window is required"))
	}
	if len(c.Aggregates) == 0 {
		check(errors.New("an aggregate is required"))
	}
	names := map[string]bool{}
	for i, w := range c.Windows {
		where := fmt.Sprintf("Windows[%d] (%s)", i, w.Name)
		switch {
		case w.Name == "":
			check(fmt.Errorf("Windows[%d]: Name is required", i))
		case names[w.Name]:
			check(fmt.Errorf("%s: Name is used twice", where))
		}
		names[w.Name] = true
		if c.Order == ByRange {
			if w.Range <= 0 || w.Range%time.Millisecond != 0 {
				check(fmt.Errorf("%s: Range %v must be a positive whole number of milliseconds", where, w.Range))
			}
			if w.Rows != 0 {
				check(fmt.Errorf("%s: Rows does not apply to order %v", where, ByRange))
			}
		} else {
			if w.Rows <= 0 || w.Rows > 1<<30 {
				check(fmt.Errorf("%s: Rows %d is not within 1..%d", where, w.Rows, 1<<30))
			}
			if w.Range != 0 {
				check(fmt.Errorf("%s: Range does not apply to order %v", where, ByRows))
			}
		}
	}
	outs := map[string]bool{}
	for i, a := range c.Aggregates {
		where := fmt.Sprintf("Aggregates[%d] (%s)", i, a.As)
		switch a.Func {
		case AggSum, AggAvg, AggMin, AggMax:
			if len(a.Field) == 0 {
				check(fmt.Errorf("%s: %v needs a Field", where, a.Func))
			}
		case AggCount:
		default:
			check(fmt.Errorf("%s: Func %v is not a rolling aggregate (sum, count, avg, min, max)", where, a.Func))
		}
		if a.As == "" {
			check(fmt.Errorf("Aggregates[%d] (%v): As is required", i, a.Func))
		}
		for _, p := range a.Field {
			if p == "" {
				check(fmt.Errorf("%s: Field has an empty part", where))
				break
			}
		}
		if a.Exact != 0 {
			check(fmt.Errorf("%s: Exact applies only to %v", where, AggCountDistinct))
		}
		for _, w := range c.Windows {
			f := a.As + "_" + w.Name
			if outs[f] && a.As != "" && w.Name != "" {
				check(fmt.Errorf("%s: output field %q is used twice", where, f))
			}
			outs[f] = true
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("rolling %q: %w", c.Name, errors.Join(errs...))
	}
	return nil
}

func (r *Rolling) pathIndex(path []string) int { return internPath(&r.paths, path) }

// Name implements engine.Operator.
func (r *Rolling) Name() string { return r.cfg.Name }

// Close implements engine.Operator. Buffered rows stay in the Store.
func (r *Rolling) Close(context.Context) error {
	r.closed, r.keys, r.global, r.timers, r.dirty = true, nil, nil, nil, nil
	return nil
}

// Process implements engine.Operator: it buffers each record until the
// watermark passes its event time, rejecting late and malformed records.
func (r *Rolling) Process(_ context.Context, in []record.Record, out *record.Output) error {
	if r.closed {
		return fmt.Errorf("rolling %q: Process after Close", r.cfg.Name)
	}
	r.begun = true
	stampProcessingTime(r.cfg.ProcessingTime, time.Now, in)
	for i := range in {
		rec := &in[i]
		reason := outOfRange(rec)
		if reason == "" {
			reason = r.read(rec.Value)
		}
		if reason != "" {
			r.dead(rec, reason, out)
			continue
		}
		ins := slices.Clone(r.inputs)
		k, err := r.key(rec.Key) // may read buffered rows, reusing r.inputs
		if err != nil {
			return err
		}
		if rec.Timestamp <= k.emitted {
			r.dead(rec, lateRolling(rec.Timestamp, k.emitted), out)
			continue
		}
		r.buffer(k, rec, ins)
	}
	return r.flush()
}

// lateRolling explains why a row of event time t, of a key that has
// emitted rows up to time emitted, is late.
func lateRolling(t, emitted int64) string {
	return fmt.Sprintf("late: event time %d (%s) is at or before %d (%s), the latest event time its key has emitted: the rows of that time were already emitted",
		t, time.UnixMilli(t).UTC().Format(sqlLayout), emitted, time.UnixMilli(emitted).UTC().Format(sqlLayout))
}

// buffer adds rec, whose aggregates' inputs are ins, to k's pending rows.
func (r *Rolling) buffer(k *rkey, rec *record.Record, ins []input) {
	if len(k.pending) == 0 {
		k.sorted, k.minPend = true, rec.Timestamp
	} else if rec.Timestamp < k.pending[len(k.pending)-1].ts {
		k.sorted = false
	}
	k.pending = append(k.pending, prow{ts: rec.Timestamp, val: slices.Clone(rec.Value), ins: ins})
	if k.heapIdx < 0 {
		heap.Push(&r.timers, k)
	} else if rec.Timestamp < k.minPend {
		k.minPend = rec.Timestamp
		heap.Fix(&r.timers, k.heapIdx)
	}
	r.markDirty(k)
}

// OnWatermark implements engine.Watermarker: it emits, key by key, the
// buffered rows with event times at or before wm, in event-time order. A
// wm at or before the last one is ignored.
func (r *Rolling) OnWatermark(_ context.Context, wm int64, out *record.Output) error {
	if r.closed {
		return fmt.Errorf("rolling %q: OnWatermark after Close", r.cfg.Name)
	}
	r.begun = true
	if wm <= r.wm {
		return nil
	}
	r.wm = wm
	for len(r.timers) > 0 && r.timers[0].minTS() <= wm {
		k := r.timers[0]
		k.sort()
		n := 0
		for n < len(k.pending) && k.pending[n].ts <= wm {
			n++
		}
		if err := r.release(k, k.pending[:n], out); err != nil {
			return err
		}
		clear(k.pending[:n])
		k.pending = slices.Delete(k.pending, 0, n)
		if len(k.pending) == 0 {
			heap.Pop(&r.timers)
		} else {
			k.minPend = k.pending[0].ts
			heap.Fix(&r.timers, 0)
		}
		r.markDirty(k)
	}
	return r.flush()
}

func (r *Rolling) dead(rec *record.Record, reason string, out *record.Output) {
	out.Dead = append(out.Dead, record.DeadLetter{Record: *rec, Stage: r.cfg.Name, Reason: reason})
}

// read checks that v is a JSON object and reads the aggregates' inputs
// into r.inputs.
func (r *Rolling) read(v []byte) string {
	doc, err := wjson.Parse(v)
	if err != nil {
		return "value is not JSON: " + err.Error()
	}
	if doc.Kind != wjson.Object {
		return "value is a " + doc.Kind.String() + ", not a JSON object"
	}
	for i, p := range r.paths {
		if r.values[i], err = wjson.Get(doc.Raw, p...); err != nil {
			return "value is not JSON: " + err.Error()
		}
	}
	for j := range r.specs {
		s := &r.specs[j]
		if s.path < 0 {
			r.inputs[j] = input{kind: inRaw}
			continue
		}
		if reason := s.read(r.values[s.path], &r.inputs[j], &r.scratch); reason != "" {
			return reason
		}
		if in := &r.inputs[j]; in.kind == inRaw {
			in.raw = nil
		}
	}
	return ""
}

// key returns the state of record key k, loading it from the Store the
// first time.
func (r *Rolling) key(k []byte) (*rkey, error) {
	var ks *rkey
	if k == nil {
		ks = r.global
	} else {
		ks = r.keys[string(k)]
	}
	if ks != nil {
		return ks, nil
	}
	ks = r.newKey(k)
	if !r.restored || r.owns != nil && !r.owns(k) {
		b, found, err := r.cfg.Store.Get(r.stateKey(ks))
		if err != nil {
			return nil, fmt.Errorf("rolling %q: reading state: %w", r.cfg.Name, err)
		}
		if found {
			get := func(idx int64) ([]byte, bool, error) { return r.cfg.Store.Get(r.rowKey(ks, idx)) }
			if err := r.decode(ks, b, get); err != nil {
				return nil, fmt.Errorf("rolling %q: key %s: %w", r.cfg.Name, keyText(k), err)
			}
		}
	}
	r.addKey(ks)
	return ks, nil
}

// newKey returns empty state for record key k.
func (r *Rolling) newKey(k []byte) *rkey {
	ks := &rkey{key: string(k), global: k == nil, heapIdx: -1, sorted: true, emitted: math.MinInt64}
	ks.left = make([]int64, len(r.cfg.Windows))
	ks.runs = make([]run, len(r.cfg.Windows)*len(r.specs))
	ks.mono = make([][]int64, len(r.cfg.Windows)*len(r.mm))
	return ks
}

// addKey adds ks, which may hold decoded state, to the keys in memory.
func (r *Rolling) addKey(ks *rkey) {
	if len(ks.pending) > 0 {
		heap.Push(&r.timers, ks)
	}
	if ks.global {
		r.global = ks
	} else {
		r.keys[ks.key] = ks
	}
}

func (r *Rolling) markDirty(k *rkey) {
	if !k.dirty {
		k.dirty = true
		r.dirty = append(r.dirty, k)
	}
}

func (k *rkey) sort() {
	if !k.sorted {
		slices.SortStableFunc(k.pending, func(a, b prow) int {
			switch {
			case a.ts < b.ts:
				return -1
			case a.ts > b.ts:
				return 1
			}
			return 0
		})
		k.sorted = true
	}
}

func (k *rkey) minTS() int64 { return k.minPend }

// release adds rows, sorted by event time and all after k.emitted, to k's
// windows and emits them.
func (r *Rolling) release(k *rkey, rows []prow, out *record.Output) error {
	ns := len(r.specs)
	for i := 0; i < len(rows); {
		j := i + 1
		if r.cfg.Order == ByRange {
			for j < len(rows) && rows[j].ts == rows[i].ts {
				j++ // peers: rows of one time share their aggregates
			}
		}
		for _, p := range rows[i:j] {
			idx := k.base + int64(len(k.hist))
			k.hist = append(k.hist, p.ts)
			k.ins = append(k.ins, p.ins...)
			for w := range r.cfg.Windows {
				for s := range ns {
					k.runs[w*ns+s].add(&p.ins[s], 1)
				}
				for m, s := range r.mm {
					r.push(k, w*len(r.mm)+m, s, idx)
				}
			}
		}
		t, end := rows[i].ts, k.base+int64(len(k.hist))
		for w := range r.cfg.Windows {
			for k.left[w] < end && r.evictable(k, w, t, end) {
				row := k.left[w] - k.base
				for s := range ns {
					k.runs[w*ns+s].add(&k.ins[row*int64(ns)+int64(s)], -1)
				}
				k.left[w]++
			}
			for m := range r.mm {
				q := &k.mono[w*len(r.mm)+m]
				n := 0
				for n < len(*q) && (*q)[n] < k.left[w] {
					n++
				}
				*q = slices.Delete(*q, 0, n)
			}
		}
		for _, p := range rows[i:j] {
			r.emit(k, p, out)
		}
		k.emitted = t
		// Drop the rows no window needs any more.
		lo := end
		for w := range r.cfg.Windows {
			lo = min(lo, k.left[w])
		}
		if d := lo - k.base; d > 0 && d*2 >= int64(len(k.hist)) {
			k.hist = slices.Delete(k.hist, 0, int(d))
			k.ins = slices.Delete(k.ins, 0, int(d)*ns)
			k.base = lo
		}
		i = j
	}
	return nil
}

// evictable reports whether window w's first row leaves it, with the
// current row at time t and end rows so far.
func (r *Rolling) evictable(k *rkey, w int, t, end int64) bool {
	if r.cfg.Order == ByRows {
		return end-k.left[w] > r.rows[w]
	}
	return k.hist[k.left[w]-k.base] < t-r.ranges[w]
}

// push adds row idx to the monotonic deque q of min/max spec s.
func (r *Rolling) push(k *rkey, qi, s int, idx int64) {
	ns := int64(len(r.specs))
	q := &k.mono[qi]
	x := &k.ins[(idx-k.base)*ns+int64(s)]
	isMin := r.specs[s].fn == AggMin
	for len(*q) > 0 {
		y := &k.ins[((*q)[len(*q)-1]-k.base)*ns+int64(s)]
		c := cmpInput(y, x)
		if (isMin && c >= 0) || (!isMin && c <= 0) {
			*q = (*q)[:len(*q)-1]
			continue
		}
		break
	}
	*q = append(*q, idx)
}

// cmpInput compares two numeric inputs.
func cmpInput(a, b *input) int {
	if a.kind == inInt && b.kind == inInt {
		switch {
		case a.i < b.i:
			return -1
		case a.i > b.i:
			return 1
		}
		return 0
	}
	fa, fb := a.f, b.f
	if a.kind == inInt {
		fa = float64(a.i)
	}
	if b.kind == inInt {
		fb = float64(b.i)
	}
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return 0
}

// add adds (sign 1) or removes (sign -1) one input.
func (u *run) add(in *input, sign int64) {
	switch in.kind {
	case inInt:
		u.n += sign
		u.isum += sign * in.i
	case inFloat:
		u.n += sign
		u.floats += sign
		u.fsum += float64(sign) * in.f
		if u.floats == 0 {
			u.fsum = 0 // no drift once the floats have all left
		}
	case inRaw:
		u.n += sign
	}
}

func (u *run) sum() float64 { return float64(u.isum) + u.fsum }

// emit appends row p with its aggregates to out.
func (r *Rolling) emit(k *rkey, p prow, out *record.Output) {
	v := p.val
	e := len(v) - 1
	for v[e] != '}' {
		e--
	}
	b := e - 1
	for b >= 0 && (v[b] == ' ' || v[b] == '\t' || v[b] == '\n' || v[b] == '\r') {
		b--
	}
	empty := v[b] == '{'
	buf := append(r.val[:0], v[:e]...)
	ns := len(r.specs)
	for w := range r.cfg.Windows {
		for s := range r.specs {
			f := r.fields[w*ns+s]
			if empty {
				f, empty = f[1:], false
			}
			buf = append(buf, f...)
			buf = r.result(buf, k, w, s)
		}
	}
	buf = append(buf, '}')
	r.val = buf
	var key []byte
	if !k.global {
		key = []byte{}
		if k.key != "" {
			key = out.Arena.Copy(unsafe.Slice(unsafe.StringData(k.key), len(k.key)))
		}
	}
	out.Records = append(out.Records, record.Record{Key: key, Value: out.Arena.Copy(buf), Timestamp: p.ts,
		Origin: record.Origin{Source: r.cfg.Name, Partition: -1}})
}

// result appends spec s's value over window w.
func (r *Rolling) result(buf []byte, k *rkey, w, s int) []byte {
	u := &k.runs[w*len(r.specs)+s]
	r.num.Reset(buf)
	switch r.specs[s].fn {
	case AggCount:
		r.num.Int(u.n)
	case AggSum:
		if u.floats == 0 {
			r.num.Int(u.isum)
		} else {
			r.num.Float(u.sum())
		}
	case AggAvg:
		r.num.Float(u.sum() / float64(u.n))
	case AggMin, AggMax:
		m := slices.Index(r.mm, s)
		q := k.mono[w*len(r.mm)+m]
		in := &k.ins[(q[0]-k.base)*int64(len(r.specs))+int64(s)]
		if in.kind == inInt {
			r.num.Int(in.i)
		} else {
			r.num.Float(in.f)
		}
	}
	return r.num.Bytes()
}

// State: per record key (tagNilKey set in the tag for the nil key), a
// header entry, tag 'o', holding a version byte, the pending rows (varint
// time, uvarint length, value), the history's first row index (varint) and
// row count (uvarint), and per window its first row (uvarint offset from the
// history's first) and per aggregate its running count, integer sum, float
// count and float sum; and one entry per history row, tag 'O' then the row
// index (8 bytes, big-endian), holding the row's time (varint) and per
// aggregate its input (a kind byte, then a varint or float64 bits). A call
// writes the header and only the rows added or evicted since the last.
// Min/max deques are rebuilt from the history, and so is the latest time
// the key emitted, by which its rows are judged late: it is the last history
// row's, since no window evicts its current row (the history of a key that
// has emitted is never empty). A key's entries are all under its record
// key, so Restore finds them with one prefix scan of the operator's Name;
// row entries outside the range a header gives (none are written) are
// ignored.
const (
	tagRolling     = 'o'
	tagRollingRow  = 'O'
	rollingVersion = 1
)

func (r *Rolling) stateKey(k *rkey) []byte {
	uk := []byte{tagRolling}
	var rk []byte
	if k.global {
		uk[0] |= tagNilKey
	} else {
		rk = unsafe.Slice(unsafe.StringData(k.key), len(k.key))
	}
	r.keyBuf = state.Key(r.keyBuf[:0], r.cfg.Name, rk, uk)
	return r.keyBuf
}

func (r *Rolling) encode(b []byte, k *rkey) []byte {
	b = append(b, rollingVersion)
	b = binary.AppendUvarint(b, uint64(len(k.pending)))
	for _, p := range k.pending {
		b = binary.AppendVarint(b, p.ts)
		b = binary.AppendUvarint(b, uint64(len(p.val)))
		b = append(b, p.val...)
	}
	b = binary.AppendVarint(b, k.base)
	b = binary.AppendUvarint(b, uint64(len(k.hist)))
	for w := range r.cfg.Windows {
		b = binary.AppendUvarint(b, uint64(k.left[w]-k.base))
		for _, u := range k.runs[w*len(r.specs) : (w+1)*len(r.specs)] {
			b = binary.AppendVarint(b, u.n)
			b = binary.AppendVarint(b, u.isum)
			b = binary.AppendVarint(b, u.floats)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(u.fsum))
		}
	}
	return b
}

// appendRow appends the encoding of history row i (from base).
func (r *Rolling) appendRow(b []byte, k *rkey, i int) []byte {
	b = binary.AppendVarint(b, k.hist[i])
	for _, in := range k.ins[i*len(r.specs) : (i+1)*len(r.specs)] {
		b = append(b, byte(in.kind))
		switch in.kind {
		case inInt:
			b = binary.AppendVarint(b, in.i)
		case inFloat:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(in.f))
		}
	}
	return b
}

// decode sets k from its header entry b, reading its history rows with
// row, which returns the value of the row entry of an index.
func (r *Rolling) decode(k *rkey, b []byte, row func(idx int64) ([]byte, bool, error)) error {
	bad := false
	uvar := func() uint64 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			bad, b = true, nil
			return 0
		}
		b = b[n:]
		return x
	}
	svar := func() int64 {
		x, n := binary.Varint(b)
		if n <= 0 {
			bad, b = true, nil
			return 0
		}
		b = b[n:]
		return x
	}
	bytesN := func(n uint64) []byte {
		if uint64(len(b)) < n {
			bad, b = true, nil
			return nil
		}
		v := b[:n]
		b = b[n:]
		return v
	}
	if len(b) == 0 || b[0] != rollingVersion {
		return errCorrupt
	}
	b = b[1:]
	np := uvar()
	for i := uint64(0); i < np && !bad; i++ {
		ts := svar()
		v := bytesN(uvar())
		if bad {
			break
		}
		if reason := r.read(v); reason != "" {
			return fmt.Errorf("buffered row %d: %s: %w", i, reason, errCorrupt)
		}
		k.pending = append(k.pending, prow{ts: ts, val: slices.Clone(v), ins: slices.Clone(r.inputs)})
	}
	k.sorted = false
	if len(k.pending) > 0 {
		k.sort()
		k.minPend = k.pending[0].ts
	}
	k.base = svar()
	nh := uvar()
	if bad || nh > 1<<40 {
		return errCorrupt
	}
	if err := r.decodeRows(k, nh, row); err != nil {
		return err
	}
	if err := k.restoreEmitted(); err != nil {
		return err
	}
	for w := range r.cfg.Windows {
		k.left[w] = k.base + int64(uvar())
		for s := range r.specs {
			u := &k.runs[w*len(r.specs)+s]
			u.n, u.isum, u.floats = svar(), svar(), svar()
			if f := bytesN(8); f != nil {
				u.fsum = math.Float64frombits(binary.LittleEndian.Uint64(f))
			}
		}
		if k.left[w] < k.base || k.left[w] > k.base+int64(len(k.hist)) {
			bad = true
		}
	}
	if bad || len(b) != 0 {
		return errCorrupt
	}
	for w := range r.cfg.Windows {
		for m, s := range r.mm {
			for idx := k.left[w]; idx < k.base+int64(len(k.hist)); idx++ {
				r.push(k, w*len(r.mm)+m, s, idx)
			}
		}
	}
	return nil
}

// restoreEmitted sets k.emitted, after decoding, to its last history
// row's time, and checks that its buffered rows all come after it.
func (k *rkey) restoreEmitted() error {
	if len(k.hist) == 0 {
		return nil
	}
	k.emitted = k.hist[len(k.hist)-1]
	if len(k.pending) > 0 && k.pending[0].ts <= k.emitted {
		return fmt.Errorf("buffered row of time %d is not after %d, the last emitted: %w", k.pending[0].ts, k.emitted, errCorrupt)
	}
	return nil
}

// decodeRows reads history rows base..base+n with row.
func (r *Rolling) decodeRows(k *rkey, n uint64, row func(idx int64) ([]byte, bool, error)) error {
	for i := uint64(0); i < n; i++ {
		idx := k.base + int64(i)
		b, found, err := row(idx)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("history row %d (of %d..%d) is missing: %w", idx, k.base, k.base+int64(n)-1, errCorrupt)
		}
		if err := r.decodeRow(k, b); err != nil {
			return fmt.Errorf("history row %d: %w", idx, err)
		}
	}
	k.storedBase, k.storedEnd = k.base, k.base+int64(n)
	return nil
}

// decodeRow appends the history row encoded in b to k's.
func (r *Rolling) decodeRow(k *rkey, b []byte) error {
	ts, m := binary.Varint(b)
	if m <= 0 {
		return errCorrupt
	}
	b = b[m:]
	k.hist = append(k.hist, ts)
	for range r.specs {
		if len(b) == 0 {
			return errCorrupt
		}
		in := input{kind: inKind(b[0])}
		b = b[1:]
		switch in.kind {
		case inInt:
			if in.i, m = binary.Varint(b); m <= 0 {
				return errCorrupt
			}
			b = b[m:]
		case inFloat:
			if len(b) < 8 {
				return errCorrupt
			}
			in.f, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
		case inNone, inRaw:
		default:
			return errCorrupt
		}
		k.ins = append(k.ins, in)
	}
	if len(b) != 0 {
		return errCorrupt
	}
	return nil
}

// rowKey returns the store key of k's history row idx, in r.keyBuf.
func (r *Rolling) rowKey(k *rkey, idx int64) []byte {
	var uk [9]byte
	uk[0] = tagRollingRow
	binary.BigEndian.PutUint64(uk[1:], uint64(idx))
	var rk []byte
	if k.global {
		uk[0] |= tagNilKey
	} else {
		rk = unsafe.Slice(unsafe.StringData(k.key), len(k.key))
	}
	r.keyBuf = state.Key(r.keyBuf[:0], r.cfg.Name, rk, uk[:])
	return r.keyBuf
}

// flush writes the state of the keys the current call changed in one
// Store.Apply.
func (r *Rolling) flush() error {
	for _, k := range r.dirty {
		k.dirty = false
		for ; k.storedBase < k.base && k.storedBase < k.storedEnd; k.storedBase++ {
			r.muts = append(r.muts, state.Mutation{Key: r.arena.Copy(r.rowKey(k, k.storedBase)), Delete: true})
		}
		k.storedBase = k.base
		end := k.base + int64(len(k.hist))
		for k.storedEnd = max(k.storedEnd, k.base); k.storedEnd < end; k.storedEnd++ {
			r.val = r.appendRow(r.val[:0], k, int(k.storedEnd-k.base))
			r.muts = append(r.muts, state.Mutation{Key: r.arena.Copy(r.rowKey(k, k.storedEnd)), Value: r.arena.Copy(r.val)})
		}
		key := r.arena.Copy(r.stateKey(k))
		if len(k.pending) == 0 && len(k.hist) == 0 {
			r.muts = append(r.muts, state.Mutation{Key: key, Delete: true})
			continue
		}
		r.val = r.encode(r.val[:0], k)
		r.muts = append(r.muts, state.Mutation{Key: key, Value: r.arena.Copy(r.val)})
	}
	clear(r.dirty)
	r.dirty = r.dirty[:0]
	if err := applyMutations(r.cfg.Store, &r.muts, &r.arena); err != nil {
		return fmt.Errorf("rolling %q: writing state: %w", r.cfg.Name, err)
	}
	return nil
}

// rheap orders keys with pending rows by their earliest pending time.
type rheap []*rkey

func (h rheap) Len() int { return len(h) }
func (h rheap) Less(i, j int) bool {
	a, b := h[i].minTS(), h[j].minTS()
	if a != b {
		return a < b
	}
	if h[i].global != h[j].global {
		return h[i].global // the nil key before the empty one
	}
	return h[i].key < h[j].key
}
func (h rheap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *rheap) Push(x any) {
	k := x.(*rkey)
	k.heapIdx = len(*h)
	*h = append(*h, k)
}
func (h *rheap) Pop() any {
	old := *h
	k := old[len(old)-1]
	old[len(old)-1] = nil
	k.heapIdx = -1
	*h = old[:len(old)-1]
	return k
}
