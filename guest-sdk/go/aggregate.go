package weir

import (
	"errors"
	"unsafe"

	"github.com/weir-stream/weir/abi"
)

// AggregateFuncs are the functions of an aggregate whose accumulator has
// type A, in the manner of Flink's AggregateFunction. The host keeps one
// accumulator per group (a key, a window) as bytes, and calls the plugin to
// fold batches of records into accumulators, to merge two accumulators, and
// to turn an accumulator into the group's result. Codec converts an
// accumulator to those bytes and back.
//
// For each group of an add call, the SDK decodes the accumulator once,
// calls Add for each of the group's records in order, and encodes the
// accumulator once. Like the other registered functions, the functions are
// called on the instance's single thread.
//
// The functions must not keep the Records they are given, nor slices
// decoded from accumulator bytes (Codec.Decode's input aliases the call's
// input): copy what must outlive the call.
//
// State (ValueState, MapState) is not available to aggregate functions: the
// accumulator is the aggregate's state, and state calls fail with
// abi.StatusNoContext.
type AggregateFuncs[A any] struct {
	// Create returns a fresh accumulator. It must be pure, always returning
	// the same accumulator: the host calls it once per instance and copies
	// the encoded result for every new group. Nil means A's zero value.
	Create func() A
	// Add folds r into acc and returns the new accumulator. Returning an
	// error, or panicking, rejects r: the host sends it to the dead-letter
	// output with the error's text, the accumulator returned is ignored, and
	// the group's other records are folded in as usual. (When A is or holds
	// a pointer, changes Add made through it before failing remain; check a
	// record before changing the accumulator.)
	Add func(acc A, r *Record) (A, error)
	// Merge returns the accumulator combining a and b, as for two partial
	// aggregates of one group (merging windows, combining workers). A panic
	// is reported to the host as the merge's error.
	Merge func(a, b A) A
	// Result appends the group's result value to dst and returns it; the
	// host emits it as a record's value. dst lies in the output frame, so a
	// value appended in place is not copied. Returning nil gives an absent
	// (null) value. An error, or a panic, is reported to the host as the
	// result's error.
	Result func(dst []byte, acc A) ([]byte, error)
	// ResultCtx, when set, is called instead of Result, as Result is, with
	// the context of the group whose result is due: its key and its window
	// (ABI.md §12.5), for a result that depends on them, such as a window's
	// bounds. One of Result and ResultCtx is required. A host that
	// predates weir_agg_result_ctx gives it an empty context: no key, not
	// windowed.
	ResultCtx func(dst []byte, acc A, c AggContext) ([]byte, error)
	// Codec encodes and decodes accumulators.
	Codec Codec[A]
}

// AggContext is the context of a group whose result is due, which
// AggregateFuncs.ResultCtx is given: Key, the group's key (nil for none,
// present and empty otherwise; it aliases the call's input, valid during
// the call only), and, when Windowed, the group's window [Start, End) in
// milliseconds since the Unix epoch, the bounds the window operator writes
// as window_start and window_end (Start and End are 0 otherwise).
type AggContext = abi.AggContext

// Codec converts accumulators of type A to bytes and back. Decode(Append(nil,
// a)) must give back an accumulator equal to a.
type Codec[A any] struct {
	// Append appends the encoding of acc to dst and returns the result.
	// dst lies in the output frame, so an encoding appended in place is not
	// copied.
	Append func(dst []byte, acc A) []byte
	// Decode decodes an accumulator. b aliases the call's input, valid only
	// during the call: copy what the accumulator keeps (string(b[i:j]),
	// bytes.Clone), unless A's functions do not keep it past the call.
	Decode func(b []byte) (A, error)
}

// BytesCodec is the Codec of accumulators that are their own encoding,
// for aggregates that work on the bytes directly. Decode returns the
// input's bytes without copying (read the Codec.Decode lifetime rules);
// Add may modify them in place, and append to them without overwriting
// anything else.
var BytesCodec = Codec[[]byte]{
	Append: func(dst, acc []byte) []byte { return append(dst, acc...) },
	Decode: func(b []byte) ([]byte, error) { return b, nil },
}

// Aggregate registers the aggregate functions. Create may be nil, and one
// of Result and ResultCtx; the other functions, and both of the Codec's,
// are required. Call it from a package init function, at most once;
// registering twice, or with a required function nil, panics, which makes
// the module fail to initialise.
func Aggregate[A any](f AggregateFuncs[A]) {
	mustRegisterAggregate("AggregateFuncs", f.Add == nil, f)
	aggHandler = &aggOf[A]{f: f}
}

// mustRegisterAggregate panics when an aggregate is already registered or
// when a required function of f (of type funcs; addNil for its Add) is
// nil.
func mustRegisterAggregate[A any](funcs string, addNil bool, f AggregateFuncs[A]) {
	for _, c := range []struct {
		name  string
		isNil bool
	}{
		{"Add", addNil},
		{"Merge", f.Merge == nil},
		{"Result (and ResultCtx)", f.Result == nil && f.ResultCtx == nil},
		{"Codec.Append", f.Codec.Append == nil},
		{"Codec.Decode", f.Codec.Decode == nil},
	} {
		if c.isNil {
			panic("weir: nil aggregate function: " + funcs + "." + c.name + " is nil")
		}
	}
	mustRegister(false, aggHandler != nil, "aggregate")
}

// aggregator is what the dispatch needs of a registered aggregate, with the
// accumulator type hidden. begin, add and end fold one group: begin decodes
// its accumulator, add folds one record (leaving the accumulator unchanged
// when it fails), end appends the encoded accumulator to dst.
type aggregator interface {
	create(dst []byte) []byte
	begin(acc []byte) error
	add(r *Record) error
	end(dst []byte) []byte
	merge(dst, a, b []byte) ([]byte, error)
	// result is given the group's context, empty without one.
	result(dst, acc []byte, c *AggContext) ([]byte, error)
}

// aggHandler is the registered aggregate, nil when there is none.
var aggHandler aggregator

// aggOf adapts AggregateFuncs to aggregator.
type aggOf[A any] struct {
	f   AggregateFuncs[A]
	cur A // the accumulator of the group being folded
}

func (g *aggOf[A]) create(dst []byte) []byte {
	var acc A
	if g.f.Create != nil {
		acc = g.f.Create()
	}
	return g.f.Codec.Append(dst, acc)
}

func (g *aggOf[A]) begin(b []byte) error {
	var zero A
	g.cur = zero
	acc, err := g.f.Codec.Decode(b)
	if err != nil {
		return err
	}
	g.cur = acc
	return nil
}

func (g *aggOf[A]) add(r *Record) error {
	acc, err := g.f.Add(g.cur, r)
	if err != nil {
		return err
	}
	g.cur = acc
	return nil
}

func (g *aggOf[A]) end(dst []byte) []byte {
	dst = g.f.Codec.Append(dst, g.cur)
	var zero A
	g.cur = zero // do not keep what the accumulator points to
	return dst
}

func (g *aggOf[A]) merge(dst, a, b []byte) ([]byte, error) {
	x, err := g.f.Codec.Decode(a)
	if err != nil {
		return nil, accError(err)
	}
	y, err := g.f.Codec.Decode(b)
	if err != nil {
		return nil, accError(err)
	}
	return g.f.Codec.Append(dst, g.f.Merge(x, y)), nil
}

func (g *aggOf[A]) result(dst, b []byte, c *AggContext) ([]byte, error) {
	acc, err := g.f.Codec.Decode(b)
	if err != nil {
		return nil, accError(err)
	}
	if g.f.ResultCtx != nil {
		return g.f.ResultCtx(dst, acc, *c)
	}
	return g.f.Result(dst, acc)
}

// accError is the error for an accumulator the Codec cannot decode.
func accError(err error) error {
	return errors.New("bad accumulator: " + err.Error())
}

// errNoAggregate is the error of every aggregate call in a module that
// registered no aggregate.
var errNoAggregate = errors.New("plugin has no " + abi.OpAggregate.String() + " handler")

// aggProcessor runs the aggregate calls of one module instance. Like
// processor, it reuses its buffers from call to call. The exports use the
// package-level aggProc; tests make their own.
type aggProcessor struct {
	rd  abi.AggAddReader
	ar  abi.AccReader
	cr  abi.AccContextReader
	ctx AggContext // the context of the result being computed
	w   abi.AggWriter
	in  abi.InRecord
	rec Record
	acc []byte // weir_agg_create's result
	// next is the index within the current group of the next record.
	next int
}

var aggProc aggProcessor

// create returns a fresh accumulator, aliasing p's buffer until the next
// call. A module without an aggregate fails: it has no accumulator to give.
func (p *aggProcessor) create() (acc []byte, err error) {
	if aggHandler == nil {
		return nil, errNoAggregate
	}
	defer recoverInto(&err)
	p.acc = aggHandler.create(p.acc[:0])
	if p.acc == nil {
		p.acc = []byte{}
	}
	return p.acc, nil
}

// add processes an add frame and returns the add output frame, which
// aliases p's buffer until the next call. A malformed frame is an error,
// as for processor.run.
func (p *aggProcessor) add(frame []byte) ([]byte, error) {
	if _, err := p.rd.Reset(frame); err != nil {
		return nil, err
	}
	p.w.Reset()
	for {
		acc, n, ok, err := p.rd.NextGroup()
		if err != nil {
			return nil, err
		}
		if !ok {
			return p.w.Bytes(), nil
		}
		if err := p.addGroup(acc, n); err != nil {
			return nil, err
		}
	}
}

// addGroup folds the records of one group, which p.rd is positioned on,
// into acc and writes the group's answer.
func (p *aggProcessor) addGroup(acc []byte, n int) error {
	g := aggHandler
	p.w.BeginGroup()
	if g == nil {
		p.rejectGroup(acc, n, errNoAggregate)
		return nil
	}
	if err := callBegin(g, acc); err != nil {
		p.rejectGroup(acc, n, accError(err))
		return nil
	}
	p.next = 0
	for {
		done, err := p.addFrom(g)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	if err := p.endGroup(g); err != nil {
		// The records were folded, but the result cannot be encoded: keep
		// the accumulator as it was and reject them all.
		p.w.Abort()
		p.w.BeginGroup()
		p.rejectGroup(acc, n, err)
	}
	return nil
}

// rejectGroup rejects all n records of the current group with err and
// answers the group with acc unchanged.
func (p *aggProcessor) rejectGroup(acc []byte, n int, err error) {
	msg := err.Error()
	for i := range n {
		p.w.GroupError(i, msg)
	}
	p.w.EndGroup(acc)
}

// addFrom folds the current group's records from p.next on. A panic while
// folding a record rejects it, and addFrom returns done == false so that
// addGroup resumes with the next record: one deferred recover per group,
// not per record, as in processor.runFrom.
func (p *aggProcessor) addFrom(g aggregator) (done bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.w.GroupError(int(p.rec.index), panicError(v).Error())
			done, err = false, nil
		}
	}()
	for {
		more, err := p.rd.Next(&p.in)
		if err != nil || !more {
			return err == nil, err
		}
		i := p.next
		p.next++
		p.rec = recordAt(&p.in, i)
		if err := g.add(&p.rec); err != nil {
			p.w.GroupError(i, err.Error())
		}
	}
}

func callBegin(g aggregator, acc []byte) (err error) {
	defer recoverInto(&err)
	return g.begin(acc)
}

// endGroup encodes the group's accumulator in place in the output frame.
func (p *aggProcessor) endGroup(g aggregator) (err error) {
	defer recoverInto(&err)
	buf := p.w.AccBuffer()
	start := len(buf)
	p.w.EndAcc(placed(buf, start, g.end(buf[start:start])))
	return nil
}

// merge processes a merge frame and returns the value output frame.
func (p *aggProcessor) merge(frame []byte) ([]byte, error) {
	n, err := p.ar.ResetPairs(frame)
	if err != nil {
		return nil, err
	}
	p.w.Reset()
	for range n {
		a, _, err := p.ar.Next()
		if err != nil {
			return nil, err
		}
		b, _, err := p.ar.Next()
		if err != nil {
			return nil, err
		}
		p.value(aggMerge, a, b)
	}
	return p.finish()
}

// result processes a result frame and returns the value output frame.
// The results get the empty context.
func (p *aggProcessor) result(frame []byte) ([]byte, error) {
	n, err := p.ar.Reset(frame)
	if err != nil {
		return nil, err
	}
	p.w.Reset()
	p.ctx = AggContext{}
	for range n {
		acc, _, err := p.ar.Next()
		if err != nil {
			return nil, err
		}
		p.value(aggResult, acc, nil)
	}
	return p.finish()
}

// resultCtx processes a result context frame (ABI.md §12.5) and returns
// the value output frame: each result is given its group's context.
func (p *aggProcessor) resultCtx(frame []byte) ([]byte, error) {
	n, err := p.cr.Reset(frame)
	if err != nil {
		return nil, err
	}
	p.w.Reset()
	for range n {
		c, acc, _, err := p.cr.Next()
		if err != nil {
			return nil, err
		}
		p.ctx = c
		p.value(aggResult, acc, nil)
	}
	p.ctx = AggContext{} // do not keep the frame's key
	if _, _, _, err := p.cr.Next(); err != nil {
		return nil, err
	}
	return p.w.Bytes(), nil
}

// finish checks that the frame p.ar read has nothing after its last
// accumulator, and returns the output frame.
func (p *aggProcessor) finish() ([]byte, error) {
	if _, _, err := p.ar.Next(); err != nil {
		return nil, err
	}
	return p.w.Bytes(), nil
}

type aggCall uint8

const (
	aggMerge aggCall = iota
	aggResult
)

// value writes the answer of one merge (of a and b) or result (of a): the
// value, built in place, or an error entry.
func (p *aggProcessor) value(call aggCall, a, b []byte) {
	err := errNoAggregate
	if aggHandler != nil {
		err = p.valueInto(aggHandler, call, a, b)
	}
	if err != nil {
		p.w.Abort()
		p.w.Error(err.Error())
	}
}

func (p *aggProcessor) valueInto(g aggregator, call aggCall, a, b []byte) (err error) {
	defer recoverInto(&err)
	buf := p.w.ValueBuffer()
	start := len(buf)
	var v []byte
	if call == aggMerge {
		v, err = g.merge(buf[start:start], a, b)
		if v == nil {
			v = buf[start:start] // an accumulator is never absent
		}
	} else {
		v, err = g.result(buf[start:start], a, &p.ctx)
	}
	if err != nil {
		return err
	}
	if v == nil {
		p.w.EndValue(nil)
		return nil
	}
	p.w.EndValue(placed(buf, start, v))
	return nil
}

// placed returns buf with v at buf[start:], given that v was appended to
// buf[start:start]: in place when it was (no copy), else copied there.
func placed(buf []byte, start int, v []byte) []byte {
	if len(v) == 0 {
		return buf[:start]
	}
	if cap(buf)-start >= len(v) && unsafe.SliceData(v) == unsafe.SliceData(buf[start:start+1]) {
		return buf[:start+len(v)]
	}
	return append(buf[:start], v...)
}
