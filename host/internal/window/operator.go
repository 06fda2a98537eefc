package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Operator is the keyed window operator: an engine.Operator and an
// engine.Watermarker. It is used by one goroutine, like every Operator.
type Operator struct {
	cfg Config
	// Settings in milliseconds. pane is the length of the panes that
	// tumbling, sliding and cumulate windows are made of.
	size, slide, gap, late, pane int64

	specs  []spec
	paths  [][]string // the distinct fields the aggregates read
	parse  bool       // some aggregate reads the record value
	custom Aggregator
	// mixed says custom's result is a field among the built-in
	// aggregates' (an AggCustom aggregate), written after the first
	// customAt of specs, as customAs.
	mixed    bool
	customAt int
	customAs string

	wm     int64                // the latest watermark
	keys   map[string]*keyState // open state by record key
	global *keyState            // open state of records with a nil key
	// slices indexes the panes of time windows by start, ascending: which
	// keys have data in each. Sessions use timers instead.
	slices    []*slice
	lastSlice *slice
	timers    timerHeap
	dirty     []*keyState // keys changed by the current call
	pending   []*keyState // Emit Every: keys changed since the last early result
	idle      []*keyState // time windows: keys whose last pane a purge removed
	gen       uint64      // stamps keys already handled in one pass
	nextTick  time.Time
	// Emit Every: pendSeq is the last rank given to a unit that became
	// pending, mark its value at the last early results (stored ranks up
	// to mark are stale: see the package documentation, # State).
	pendSeq, mark uint64
	begun         bool // Process, OnWatermark or Restore was called

	// Bounded mode (Config.MaxKeysInMemory > 0): o.keys holds at most max
	// keys between calls, besides those pinned (changed by the current
	// call, or pending in mode Every) and the nil key, which are never
	// evicted. lruHead and lruTail list the evictable keys, most recently
	// used first. The pane index then lists keys by bytes (slice.arena)
	// rather than by pointer, and the session timers outlive their keys'
	// state in memory: timerKeys finds a key's timer.
	bounded          bool
	max              int
	lruHead, lruTail *keyState
	seed             maphash.Seed
	filter           bloom // the hashes of every pane's keys (and purged ones')
	timerKeys        map[string]*timerEnt

	// batch batches the Custom aggregator's adds of time windows, when it
	// is a BatchAggregator.
	batch addBatch

	// Reused from call to call.
	values    []wjson.Value
	inputs    []input
	scratch   []byte
	tmp       acc
	ends      []int64
	w         wjson.Writer
	val       []byte
	times     [2]fmtTime // the last two times written, formatted
	keyBuf    []byte
	muts      []state.Mutation
	arena     record.Arena
	freeVals  [][]aggVal
	freeSlice []*slice
	ranked    []rankedKey
}

// keyState is the open state of one record key: its panes, sessions or
// count window, each a unit.
type keyState struct {
	key     string
	global  bool
	idle    bool    // listed in Operator.idle
	units   []unit  // sorted by start; first in one
	one     [1]unit // units' storage while a key has one unit
	deleted []int64 // starts of stored units the current call removed
	dirty   bool    // listed in Operator.dirty
	pending bool    // listed in Operator.pending
	linked  bool    // bounded mode: in the LRU list (prev, next)
	stamp   uint64
	te      *timerEnt // sessions: the key's timer, or nil
	lru     *lruNode  // bounded mode: the key's links in the LRU list
}

// lruNode links a key into the LRU list of bounded mode. It is apart from
// keyState so that keyState stays as small without a bound.
type lruNode struct{ prev, next *keyState }

// timerEnt is a session key's entry in Operator.timers: when its next
// session fires or is purged. In bounded mode it outlives the key's state
// in memory (ks is then nil), and starts lists the key's sessions, so that
// their state can be read back from the store.
type timerEnt struct {
	key    string
	global bool
	timer  int64
	idx    int       // index in Operator.timers, or -1
	ks     *keyState // the key's state, while in memory
	starts []int64   // bounded mode: the starts of the key's sessions
}

// unit is one accumulator of a key: a pane [start, start+pane), a session
// [start, end), or a count window whose records' event times are
// [start, end).
type unit struct {
	start, end int64
	n          int64 // count windows: records in the window
	acc        acc
	// rank is, in mode Every, nonzero while the unit is pending (changed
	// since the last early results): Operator.pendSeq when it became so.
	rank    uint64
	seq     uint32 // panes: the key's place in its slice, slice.next when created
	changed bool   // by the current call
	stored  bool   // written to the Store
}

// acc is an accumulator: the built-in aggregates' values, a Custom
// aggregator's bytes, or both (Operator.mixed).
type acc struct {
	vals   []aggVal
	custom []byte
}

// slice lists the keys with data in the pane starting at start, in the
// order their panes were created: by pointer in keys, or in bounded mode
// by bytes in arena, each key as uvarint(len+1) and its bytes, the nil key
// as uvarint(0). filter then holds the hashes of arena's non-nil keys, to
// tell cheaply that a key has no state in the pane.
type slice struct {
	start  int64
	keys   []*keyState
	arena  []byte
	filter bloom
	order  []restoreRef // Restore in bounded mode: arena's keys by seq
	next   uint32       // the seq of the next pane created (saturating)
}

// rankedKey is a pending key and its rank, the least of its pending units'.
type rankedKey struct {
	rank uint64
	ks   *keyState
}

// noWatermark is engine.NoWatermark, the watermark before any. The package
// does not import engine, so that engine may import it.
const noWatermark int64 = math.MinInt64

// New validates cfg and returns an operator with no open windows.
func New(cfg Config) (*Operator, error) {
	size, slide, gap, late, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	o := &Operator{cfg: cfg, size: size, slide: slide, gap: gap, late: late,
		custom: cfg.Custom, wm: noWatermark, keys: make(map[string]*keyState)}
	if cfg.MaxKeysInMemory > 0 {
		o.bounded, o.max, o.seed = true, cfg.MaxKeysInMemory, maphash.MakeSeed()
		o.timerKeys = make(map[string]*timerEnt)
	}
	switch cfg.Kind {
	case Tumbling:
		o.pane = size
	case Sliding:
		o.pane = gcd(size, slide)
	case Cumulate:
		o.pane = slide
	}
	for _, a := range cfg.Aggregates {
		if a.Func == AggCustom {
			o.mixed, o.customAt, o.customAs = true, len(o.specs), a.As
			continue
		}
		s := spec{fn: a.Func, as: a.As, field: fieldText(a.Field), path: -1, exact: exactLimit(a.Exact)}
		if len(a.Field) > 0 || a.Func == AggFirst || a.Func == AggLast {
			s.path = o.pathIndex(a.Field)
			o.parse = true
		}
		o.specs = append(o.specs, s)
	}
	if b, ok := cfg.Custom.(BatchAggregator); ok && !o.bounded && o.pane > 0 {
		o.batch.agg = b
	}
	o.values = make([]wjson.Value, len(o.paths))
	o.inputs = make([]input, len(o.specs))
	o.tmp = o.newAcc()
	return o, nil
}

func (o *Operator) pathIndex(path []string) int { return internPath(&o.paths, path) }

// internPath returns the index of path in *paths, appending it if it is
// new, so that each JSON field is looked up once per record however many
// aggregates read it.
func internPath(paths *[][]string, path []string) int {
	for i, p := range *paths {
		if slices.Equal(p, path) {
			return i
		}
	}
	*paths = append(*paths, slices.Clone(path))
	return len(*paths) - 1
}

// Name implements engine.Operator.
func (o *Operator) Name() string { return o.cfg.Name }

// stampProcessingTime sets every record's timestamp to now, for operators
// on processing time.
func stampProcessingTime(on bool, clock func() time.Time, in []record.Record) {
	if !on || len(in) == 0 {
		return
	}
	now := clock().UnixMilli()
	for i := range in {
		in[i].Timestamp = now
	}
}

// Close implements engine.Operator. It releases the operator's memory;
// the state of windows still open stays in the Store.
func (o *Operator) Close(context.Context) error {
	o.keys, o.global, o.slices, o.timers, o.dirty, o.pending, o.idle = nil, nil, nil, nil, nil, nil, nil
	o.lastSlice, o.freeSlice, o.lruHead, o.lruTail, o.timerKeys = nil, nil, nil, nil, nil
	return nil
}

// Process implements engine.Operator: it adds each record to its windows,
// rejecting late and malformed records as dead letters, and emits the
// results its emit mode asks for.
func (o *Operator) Process(_ context.Context, in []record.Record, out *record.Output) error {
	if o.keys == nil {
		return fmt.Errorf("window %q: Process after Close", o.cfg.Name)
	}
	o.begun = true
	stampProcessingTime(o.cfg.ProcessingTime, o.cfg.Clock, in)
	if o.batch.agg != nil {
		if err := o.addTimeBatch(in, out); err != nil {
			return err
		}
		in = nil // added
	}
	for i := range in {
		var err error
		switch o.cfg.Kind {
		case Session:
			err = o.addSession(&in[i], out)
		case Count:
			err = o.addCount(&in[i], out)
		default:
			err = o.addTime(&in[i], out)
		}
		if err != nil {
			return err
		}
	}
	if err := o.emitChanged(out); err != nil {
		return err
	}
	if err := o.tick(out); err != nil {
		return err
	}
	return o.flush()
}

// OnWatermark implements engine.Watermarker: it emits the windows that
// watermark wm closes and purges those past their allowed lateness.
func (o *Operator) OnWatermark(_ context.Context, wm int64, out *record.Output) error {
	if o.keys == nil {
		return fmt.Errorf("window %q: OnWatermark after Close", o.cfg.Name)
	}
	o.begun = true
	if wm > o.wm {
		old := o.wm
		o.wm = wm
		var err error
		switch o.cfg.Kind {
		case Session:
			err = o.fireSessions(old, out)
		case Count:
		default:
			err = o.fireTime(old, out)
		}
		if err != nil {
			return err
		}
	}
	if err := o.tick(out); err != nil {
		return err
	}
	return o.flush()
}

// dead rejects rec.
func (o *Operator) dead(rec *record.Record, reason string, out *record.Output) {
	out.Dead = append(out.Dead, record.DeadLetter{Record: *rec, Stage: o.cfg.Name, Reason: reason})
}

// Event times beyond ±maxTime (about 73 million years) are rejected, so
// that window arithmetic cannot overflow.
const maxTime = 1 << 61

// outOfRange returns why rec's event time is unusable, or "".
func outOfRange(rec *record.Record) string {
	if rec.Timestamp > maxTime || rec.Timestamp < -maxTime {
		return fmt.Sprintf("event time %d is out of range", rec.Timestamp)
	}
	return ""
}

// lateReason explains why a record of event time t is late.
func (o *Operator) lateReason(t int64) string {
	return fmt.Sprintf("late: event time %d (%s) is at or before watermark %d (%s) minus allowed lateness %v: every window it falls in has closed",
		t, time.UnixMilli(t).UTC().Format(sqlLayout), o.wm, time.UnixMilli(o.wm).UTC().Format(sqlLayout),
		time.Duration(o.late)*time.Millisecond)
}

// read reads the aggregates' inputs from rec into o.inputs, or returns why
// rec cannot be aggregated.
func (o *Operator) read(rec *record.Record) string {
	if !o.parse {
		return ""
	}
	for i, p := range o.paths {
		v, err := wjson.Get(rec.Value, p...)
		if err != nil {
			return "value is not JSON: " + err.Error()
		}
		o.values[i] = v
	}
	for j := range o.specs {
		s := &o.specs[j]
		if s.path < 0 {
			o.inputs[j] = input{}
			continue
		}
		if reason := s.read(o.values[s.path], &o.inputs[j], &o.scratch); reason != "" {
			return reason
		}
	}
	return ""
}

// add adds rec, whose inputs read has read, to a. It returns why not, for
// a Custom aggregator's error, leaving a as it was.
func (o *Operator) add(a *acc, rec *record.Record) string {
	if o.custom != nil {
		c, err := o.custom.Add(a.custom, rec)
		if err != nil {
			return "aggregate: " + err.Error()
		}
		a.custom = c
		if !o.mixed {
			return ""
		}
	}
	for j := range o.specs {
		a.vals[j].add(&o.specs[j], &o.inputs[j], rec.Timestamp)
	}
	return ""
}

// merge merges src into dst.
func (o *Operator) merge(dst, src *acc) error {
	if o.custom != nil {
		c, err := o.custom.Merge(dst.custom, src.custom)
		if err != nil {
			return fmt.Errorf("window %q: aggregate Merge: %w", o.cfg.Name, err)
		}
		dst.custom = c
		if !o.mixed {
			return nil
		}
	}
	for j := range o.specs {
		dst.vals[j].merge(&o.specs[j], &src.vals[j])
	}
	return nil
}

// newAcc returns an empty accumulator.
func (o *Operator) newAcc() acc {
	var a acc
	if o.custom != nil {
		a.custom = o.custom.Create()
		if !o.mixed {
			return a
		}
	}
	a.vals = o.newVals()
	return a
}

// newVals returns the empty values of the built-in aggregates.
func (o *Operator) newVals() []aggVal {
	if n := len(o.freeVals); n > 0 {
		v := o.freeVals[n-1]
		o.freeVals = o.freeVals[:n-1]
		for j := range v {
			v[j].reset()
		}
		return v
	}
	return make([]aggVal, len(o.specs))
}

// resetAcc empties a.
func (o *Operator) resetAcc(a *acc) {
	if o.custom != nil {
		a.custom = o.custom.Create()
		if !o.mixed {
			return
		}
	}
	for j := range a.vals {
		a.vals[j].reset()
	}
}

func (o *Operator) freeAcc(a *acc) {
	if a.vals != nil {
		o.freeVals = append(o.freeVals, a.vals)
	}
	*a = acc{}
}

// lookup returns the state of record key k, or nil.
func (o *Operator) lookup(k []byte) *keyState {
	if k == nil {
		return o.global
	}
	return o.keys[string(k)]
}

// create returns the state of record key k, creating it.
func (o *Operator) create(k []byte) *keyState {
	if ks := o.lookup(k); ks != nil {
		return ks
	}
	ks := &keyState{key: string(k), global: k == nil}
	ks.units = ks.one[:0]
	if k == nil {
		o.global = ks
	} else {
		o.keys[ks.key] = ks
		if o.bounded {
			o.link(ks)
		}
	}
	return ks
}

// drop forgets ks, which has no units left.
func (o *Operator) drop(ks *keyState) {
	if ks.global {
		if o.global == ks {
			o.global = nil
		}
	} else if o.keys[ks.key] == ks {
		delete(o.keys, ks.key)
		if ks.linked {
			o.unlink(ks)
		}
	}
}

// changed marks unit u of ks as changed by the current call.
func (o *Operator) changed(ks *keyState, u *unit) {
	u.changed = true
	if !ks.dirty {
		ks.dirty = true
		o.dirty = append(o.dirty, ks)
		if ks.linked {
			o.unlink(ks) // pinned until flush
		}
	}
	if o.cfg.Emit == Every {
		if u.rank == 0 {
			o.pendSeq++
			u.rank = o.pendSeq
		}
		if !ks.pending {
			ks.pending = true
			o.pending = append(o.pending, ks)
		}
	}
}

// emitChanged emits, for each unit the current call changed, the results
// that changed: every open window in mode OnUpdate, and in any mode the
// windows the watermark had already closed (updates within the allowed
// lateness). For sessions it also reschedules the key's timer.
func (o *Operator) emitChanged(out *record.Output) error {
	onUpdate := o.cfg.Emit == OnUpdate
	for _, ks := range o.dirty {
		switch o.cfg.Kind {
		case Count:
			if u := &ks.units[0]; onUpdate && u.n > 0 {
				if err := o.emit(ks, u.start, u.end, &u.acc, out); err != nil {
					return err
				}
			}
		case Session:
			for i := range ks.units {
				u := &ks.units[i]
				if u.changed && (onUpdate || u.end-1 <= o.wm) {
					if err := o.emit(ks, u.start, u.end, &u.acc, out); err != nil {
						return err
					}
				}
			}
			o.schedule(ks)
		default:
			o.ends = o.ends[:0]
			for i := range ks.units {
				u := &ks.units[i]
				if !u.changed {
					continue
				}
				if first, _, _ := o.paneWindows(u.start); !onUpdate && first-1 > o.wm {
					continue // no window of the pane has closed: nothing to update
				}
				o.ends = o.paneEnds(o.ends, u.start, func(e int64) bool {
					return record.AddTime(e-1, o.late) > o.wm && (onUpdate || e-1 <= o.wm)
				})
			}
			if err := o.emitEnds(ks, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// tick emits early results in mode Every, once EmitInterval has passed
// since the last: the current result of each window not yet closed whose
// data changed since, key by key in the order of their ranks (when their
// earliest still pending unit became pending).
func (o *Operator) tick(out *record.Output) error {
	if o.cfg.Emit != Every {
		return nil
	}
	now := o.cfg.Clock()
	if o.nextTick.IsZero() {
		o.nextTick = now.Add(o.cfg.EmitInterval)
		o.putMeta()
		return nil
	}
	if now.Before(o.nextTick) {
		return nil
	}
	o.nextTick = now.Add(o.cfg.EmitInterval)
	o.mark = o.pendSeq
	o.putMeta()
	o.sortPending()
	for _, ks := range o.pending {
		ks.pending = false
		if o.bounded && !ks.global && o.keys[ks.key] == ks {
			o.link(ks)
		}
		o.ends = o.ends[:0]
		for i := range ks.units {
			u := &ks.units[i]
			if u.rank == 0 {
				continue
			}
			u.rank = 0
			var err error
			switch o.cfg.Kind {
			case Count:
				if u.n > 0 {
					err = o.emit(ks, u.start, u.end, &u.acc, out)
				}
			case Session:
				if u.end-1 > o.wm {
					err = o.emit(ks, u.start, u.end, &u.acc, out)
				}
			default:
				o.ends = o.paneEnds(o.ends, u.start, func(e int64) bool { return e-1 > o.wm })
			}
			if err != nil {
				return err
			}
		}
		if err := o.emitEnds(ks, out); err != nil {
			return err
		}
	}
	clear(o.pending)
	o.pending = o.pending[:0]
	return nil
}

// sortPending orders o.pending by rank, so that the order of early results
// depends only on the units' state, which Restore rebuilds, and not on the
// history of keys that lost their pending units to a purge or a merge.
// Ranks are unique within a run; ties, from state written by several
// instances, go by key.
func (o *Operator) sortPending() {
	if len(o.pending) < 2 {
		return
	}
	r := o.ranked[:0]
	for _, ks := range o.pending {
		least := uint64(math.MaxUint64) // no pending unit left
		for i := range ks.units {
			if x := ks.units[i].rank; x != 0 && x < least {
				least = x
			}
		}
		r = append(r, rankedKey{least, ks})
	}
	cmp := func(a, b rankedKey) int {
		switch {
		case a.rank < b.rank:
			return -1
		case a.rank > b.rank:
			return 1
		}
		return compareKeys(a.ks.global, b.ks.global, a.ks.key, b.ks.key)
	}
	if !slices.IsSortedFunc(r, cmp) {
		slices.SortFunc(r, cmp)
		for i := range r {
			o.pending[i] = r[i].ks
		}
	}
	clear(r)
	o.ranked = r[:0]
}

// compareKeys orders keys a and b, nil if aNil (bNil): the nil key first,
// then by bytes.
func compareKeys(aNil, bNil bool, a, b string) int {
	switch {
	case aNil && !bNil:
		return -1
	case bNil && !aNil:
		return 1
	}
	return strings.Compare(a, b)
}

// emitEnds emits ks's time windows ending at o.ends, once each, in order.
func (o *Operator) emitEnds(ks *keyState, out *record.Output) error {
	if len(o.ends) == 0 {
		return nil
	}
	slices.Sort(o.ends)
	o.ends = slices.Compact(o.ends)
	for _, e := range o.ends {
		if err := o.emitWindow(ks, o.winStart(e), e, out); err != nil {
			return err
		}
	}
	return nil
}

// emitWindow emits ks's time window [s, e): its panes merged.
func (o *Operator) emitWindow(ks *keyState, s, e int64, out *record.Output) error {
	var one *acc
	n := 0
	for i := range ks.units {
		u := &ks.units[i]
		if u.start < s {
			continue
		}
		if u.start >= e {
			break
		}
		switch n {
		case 0:
			one = &u.acc
		case 1:
			o.resetAcc(&o.tmp)
			if err := o.merge(&o.tmp, one); err != nil {
				return err
			}
			one = &o.tmp
			fallthrough
		default:
			if err := o.merge(&o.tmp, &u.acc); err != nil {
				return err
			}
		}
		n++
	}
	if n == 0 {
		return nil // the window's panes were all purged
	}
	return o.emit(ks, s, e, one, out)
}

// emit appends the result of ks's window [s, e) with accumulator a to out.
func (o *Operator) emit(ks *keyState, s, e int64, a *acc, out *record.Output) error {
	var value, res []byte
	if o.custom != nil {
		c := ResultContext{Windowed: true, Start: s, End: e}
		if !ks.global {
			c.Key = unsafe.Slice(unsafe.StringData(ks.key), len(ks.key))
			if c.Key == nil {
				c.Key = []byte{}
			}
		}
		var err error
		if res, err = o.custom.Result(a.custom, c); err != nil {
			return fmt.Errorf("window %q: aggregate Result: %w", o.cfg.Name, err)
		}
		if o.mixed && res != nil && !wjson.Valid(res) {
			return fmt.Errorf("window %q: aggregate Result: the value of %q is not JSON: %s", o.cfg.Name, o.customAs, quoteSome(res))
		}
	}
	if !o.mixed && o.custom != nil {
		value = out.Arena.Copy(res)
		if value == nil {
			value = []byte{}
		}
	} else {
		w := &o.w
		w.Reset(o.val[:0])
		w.BeginObject()
		w.Key(o.cfg.KeyField)
		if ks.global {
			w.Null()
		} else {
			w.String(ks.key)
		}
		w.Key(fieldStart)
		o.writeTime(s)
		w.Key(fieldEnd)
		o.writeTime(e)
		for j := range o.specs {
			if o.mixed && j == o.customAt {
				writeCustom(w, o.customAs, res)
			}
			w.Key(o.specs[j].as)
			a.vals[j].write(&o.specs[j], w)
		}
		if o.mixed && o.customAt == len(o.specs) {
			writeCustom(w, o.customAs, res)
		}
		w.EndObject()
		o.val = w.Bytes()
		value = out.Arena.Copy(o.val)
	}
	var key []byte
	if !ks.global {
		key = []byte{}
		if ks.key != "" {
			key = out.Arena.Copy(unsafe.Slice(unsafe.StringData(ks.key), len(ks.key)))
		}
	}
	out.Records = append(out.Records, record.Record{Key: key, Value: value, Timestamp: e - 1,
		Origin: record.Origin{Source: o.cfg.Name, Partition: -1}})
	return nil
}

// writeCustom writes the Custom aggregate's result v as the field as: its
// JSON value as it is, null when absent.
func writeCustom(w *wjson.Writer, as string, v []byte) {
	w.Key(as)
	if v == nil {
		w.Null()
		return
	}
	w.Raw(v)
}

// quoteSome quotes the start of b, for an error message.
func quoteSome(b []byte) string {
	const most = 64
	if len(b) > most {
		return fmt.Sprintf("%q...", b[:most])
	}
	return fmt.Sprintf("%q", b)
}

const (
	sqlLayout     = "2006-01-02 15:04:05.999"
	rfc3339Layout = "2006-01-02T15:04:05.999Z07:00"
)

// fmtTime is a time written as a JSON string.
type fmtTime struct {
	ms   int64
	text []byte
	ok   bool
}

// writeTime writes a window bound. The windows a watermark closes share
// their bounds, so the last two are kept formatted.
func (o *Operator) writeTime(ms int64) {
	if o.cfg.TimeFormat == EpochMillis {
		o.w.Int(ms)
		return
	}
	for i := range o.times {
		if t := &o.times[i]; t.ok && t.ms == ms {
			o.w.Raw(t.text)
			return
		}
	}
	o.times[0], o.times[1] = o.times[1], o.times[0]
	t := &o.times[1]
	layout := sqlLayout
	if o.cfg.TimeFormat == RFC3339 {
		layout = rfc3339Layout
	}
	t.text = append(t.text[:0], '"')
	t.text = time.UnixMilli(ms).UTC().AppendFormat(t.text, layout)
	t.text = append(t.text, '"')
	t.ms, t.ok = ms, true
	o.w.Raw(t.text)
}

// State keys: the user key is a tag byte, with tagNilKey set for records
// with a nil key, then for panes and sessions the unit's start. The
// operator entry, tagMeta with the empty record key, holds what mode Every
// needs to continue after a restart.
const (
	tagPane    = 'p'
	tagSession = 's'
	tagCount   = 'c'
	tagMeta    = 'm'
	tagNilKey  = 0x80
)

// metaKey returns the store key of the operator entry, in o.keyBuf.
func (o *Operator) metaKey() []byte {
	o.keyBuf = state.Key(o.keyBuf[:0], o.cfg.Name, nil, []byte{tagMeta})
	return o.keyBuf
}

// putMeta queues a write of the operator entry: uvarint(mark)
// varint(nextTick in Unix nanoseconds).
func (o *Operator) putMeta() {
	k := o.arena.Copy(o.metaKey())
	o.val = binary.AppendUvarint(o.val[:0], o.mark)
	o.val = binary.AppendVarint(o.val, o.nextTick.UnixNano())
	o.muts = append(o.muts, state.Mutation{Key: k, Value: o.arena.Copy(o.val)})
}

// decodeMeta is putMeta's inverse.
func decodeMeta(b []byte) (mark uint64, next int64, err error) {
	mark, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, errCorrupt
	}
	next, m := binary.Varint(b[n:])
	if m <= 0 || n+m != len(b) {
		return 0, 0, errCorrupt
	}
	return mark, next, nil
}

// stateKey returns the store key of ks's unit starting at start, in
// o.keyBuf.
func (o *Operator) stateKey(ks *keyState, start int64) []byte {
	var rk []byte
	if !ks.global {
		rk = unsafe.Slice(unsafe.StringData(ks.key), len(ks.key))
		if rk == nil {
			rk = []byte{}
		}
	}
	return o.unitKey(rk, start)
}

// unitKey returns the store key of record key rk's unit starting at start
// (nil rk: the nil key), in o.keyBuf.
func (o *Operator) unitKey(rk []byte, start int64) []byte {
	var uk [9]byte
	n := 1
	switch o.cfg.Kind {
	case Session:
		uk[0] = tagSession
	case Count:
		uk[0] = tagCount
	default:
		uk[0] = tagPane
	}
	if o.cfg.Kind != Count {
		binary.BigEndian.PutUint64(uk[1:], uint64(start)^1<<63) // sorts by start
		n = 9
	}
	if rk == nil {
		uk[0] |= tagNilKey
	}
	o.keyBuf = state.Key(o.keyBuf[:0], o.cfg.Name, rk, uk[:n])
	return o.keyBuf
}

// appendUnit appends the encoding of u's state.
func (o *Operator) appendUnit(b []byte, u *unit) []byte {
	switch o.cfg.Kind {
	case Session:
		b = binary.AppendUvarint(b, uint64(u.end-u.start))
	case Count:
		b = binary.AppendUvarint(b, uint64(u.n))
		b = binary.AppendVarint(b, u.start)
		b = binary.AppendUvarint(b, uint64(u.end-u.start))
	default:
		b = binary.AppendUvarint(b, uint64(u.seq))
	}
	b = binary.AppendUvarint(b, u.rank)
	if o.custom != nil && !o.mixed {
		return append(b, u.acc.custom...)
	}
	for j := range o.specs {
		b = u.acc.vals[j].appendState(b, &o.specs[j])
	}
	if o.mixed {
		b = append(b, u.acc.custom...) // last: the rest of the value
	}
	return b
}

// decodeUnit is appendUnit's inverse, given the unit's start from its key
// (ignored for count windows).
func (o *Operator) decodeUnit(b []byte, start int64) (unit, error) {
	u := unit{start: start, end: start + o.pane, acc: o.newAcc()}
	uvar := func() int64 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return int64(x)
	}
	switch o.cfg.Kind {
	case Session:
		u.end = start + uvar()
	case Count:
		u.n = uvar()
		if b != nil {
			x, n := binary.Varint(b)
			if n <= 0 {
				return unit{}, errCorrupt
			}
			u.start, b = x, b[n:]
		}
		u.end = u.start + uvar()
	default:
		seq := uvar()
		if seq < 0 || seq > math.MaxUint32 {
			return unit{}, errCorrupt
		}
		u.seq = uint32(seq)
	}
	if b != nil {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return unit{}, errCorrupt
		}
		u.rank, b = x, b[n:]
	}
	if b == nil {
		return unit{}, errCorrupt
	}
	if o.custom != nil && !o.mixed {
		u.acc.custom = append([]byte(nil), b...)
		return u, nil
	}
	var err error
	for j := range o.specs {
		if b, err = u.acc.vals[j].decodeState(b, &o.specs[j]); err != nil {
			return unit{}, err
		}
	}
	if o.mixed {
		u.acc.custom = append([]byte(nil), b...)
		return u, nil
	}
	if len(b) != 0 {
		return unit{}, errCorrupt
	}
	return u, nil
}

// put queues a write of ks's unit u.
func (o *Operator) put(ks *keyState, u *unit) {
	k := o.arena.Copy(o.stateKey(ks, u.start))
	o.val = o.appendUnit(o.val[:0], u)
	o.muts = append(o.muts, state.Mutation{Key: k, Value: o.arena.Copy(o.val)})
	u.stored = true
}

// del queues a delete of ks's unit starting at start.
func (o *Operator) del(ks *keyState, start int64) {
	o.muts = append(o.muts, state.Mutation{Key: o.arena.Copy(o.stateKey(ks, start)), Delete: true})
}

// flush writes the current call's state changes in one Store.Apply.
func (o *Operator) flush() error {
	for _, ks := range o.dirty {
		for _, start := range ks.deleted {
			o.del(ks, start)
		}
		ks.deleted = ks.deleted[:0]
		ks.dirty = false
		for i := range ks.units {
			u := &ks.units[i]
			if !u.changed {
				continue
			}
			u.changed = false
			if o.cfg.Kind == Count && u.n == 0 { // fired: nothing left to keep
				if u.stored {
					o.del(ks, 0)
					u.stored = false
				}
				continue
			}
			o.put(ks, u)
		}
		if o.cfg.Kind == Count && len(ks.units) == 1 && ks.units[0].n == 0 {
			o.freeAcc(&ks.units[0].acc)
			ks.units = ks.units[:0]
			o.drop(ks)
		} else if o.bounded && !ks.global && o.keys[ks.key] == ks {
			o.link(ks)
		}
	}
	clear(o.dirty)
	o.dirty = o.dirty[:0]
	if err := applyMutations(o.cfg.Store, &o.muts, &o.arena); err != nil {
		return fmt.Errorf("window %q: writing state: %w", o.cfg.Name, err)
	}
	o.evict()
	return nil
}

// applyMutations writes *muts to store in one Apply, then empties it and
// the arena that held its bytes for reuse (the Store copies what it keeps).
func applyMutations(store state.Store, muts *[]state.Mutation, arena *record.Arena) error {
	if len(*muts) == 0 {
		return nil
	}
	err := store.Apply(*muts)
	clear(*muts)
	*muts = (*muts)[:0]
	arena.Reset()
	return err
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
