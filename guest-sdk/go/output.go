package weir

import (
	"encoding/binary"
	"unsafe"

	"github.com/weir-stream/weir/abi"
)

// Output builds the one record a MapToFunc produces, or one record emitted
// through Emitter.Begin. Fields left unset are inherited from the input
// record; an Output on which nothing is set keeps the input record
// unchanged.
//
// Set the key, timestamp and headers first, then the value, with SetValue or
// BuildValue; the value finishes the record, and any later call panics
// (which, inside a registered function, rejects the record with that panic
// as its error). If no value is set but another field is, the record gets a
// copy of the input's value.
//
// Nothing reaches the output frame until the function returns without
// error, so a record whose function fails leaves no partial output.
//
// An Output belongs to the SDK and is reused: it is valid only during the
// call it was given to (for Emitter.Begin, until the next Emitter call), and
// must not be used from another goroutine.
type Output struct {
	p         *processor
	index     int
	state     outputState
	building  bool // inside BuildValue's callback
	flags     abi.Flags
	key       []byte
	keyAbsent bool
	ts        int64
	hdr       []byte // headers, encoded as abi.AppendHeader does
	nhdr      int
	valueSet  bool
	value     []byte // staged value (see processor.stage); nil means absent
}

type outputState uint8

const (
	outputOpen   outputState = iota // accepting fields
	outputValued                    // value set, waiting for commit
	outputDone                      // committed or discarded
)

func (o *Output) reset(i int) {
	o.index = i
	o.state = outputOpen
	o.building = false
	o.flags = 0
	o.key = o.key[:0]
	o.keyAbsent = false
	o.ts = 0
	o.hdr = o.hdr[:0]
	o.nhdr = 0
	o.valueSet = false
	o.value = nil
}

func (o *Output) checkOpen(what string) {
	switch {
	case o.building:
		panic("weir: Output." + what + " called inside BuildValue")
	case o.state == outputValued:
		panic("weir: Output." + what + " called after the value was set")
	case o.state == outputDone:
		panic("weir: Output." + what + " called after its record was finished")
	}
}

// SetKey sets the record's key; nil means no key (null). key is copied.
func (o *Output) SetKey(key []byte) {
	o.checkOpen("SetKey")
	o.flags |= abi.FlagKey
	o.key = append(o.key[:0], key...)
	o.keyAbsent = key == nil
}

// SetTimestamp sets the record's event time, in milliseconds since the Unix
// epoch.
func (o *Output) SetTimestamp(ms int64) {
	o.checkOpen("SetTimestamp")
	o.flags |= abi.FlagTimestamp
	o.ts = ms
}

// AddHeader appends a header. Once a header is added (or ClearHeaders is
// called) the record's headers are exactly those added, none inherited from
// the input. value is copied.
func (o *Output) AddHeader(name string, value []byte) {
	o.checkOpen("AddHeader")
	o.flags |= abi.FlagHeaders
	o.hdr = abi.AppendHeader(o.hdr, name, value)
	o.nhdr++
}

// ClearHeaders gives the record no headers (until AddHeader adds some).
func (o *Output) ClearHeaders() {
	o.checkOpen("ClearHeaders")
	o.flags |= abi.FlagHeaders
	o.hdr = o.hdr[:0]
	o.nhdr = 0
}

// SetValue sets the record's value, copying v; nil means an absent (null)
// value, []byte{} an empty one. It finishes the record.
func (o *Output) SetValue(v []byte) {
	o.checkOpen("SetValue")
	if v == nil {
		o.valueSet, o.value, o.state = true, nil, outputValued
		return
	}
	o.buildValue(func(dst []byte) []byte { return append(dst, v...) }, len(v))
}

// BuildValue sets the record's value to what fn appends to dst, and
// finishes the record. dst is an empty slice positioned where the value
// will sit in the output frame, so that a value appended to it in place (as
// with append, strconv.Append* or a wjson.Writer given dst) is written
// exactly once, without a copy; a result that does not start at dst is
// copied. The value is always present, possibly empty.
//
// dst and fn's result are valid only until fn returns; fn must not call
// other methods of the Output or of an Emitter.
func (o *Output) BuildValue(fn func(dst []byte) []byte) {
	o.checkOpen("BuildValue")
	// Without a better guess, expect a value up to twice the input's size.
	o.buildValue(fn, 2*len(o.p.in.Value)+256)
}

// buildValue is BuildValue expecting a value of about hint bytes.
func (o *Output) buildValue(fn func(dst []byte) []byte, hint int) {
	o.building = true
	room := o.p.stage(o.headerSize(), hint)
	v := fn(room)
	o.building = false
	if v == nil {
		v = []byte{}
	}
	o.valueSet, o.value, o.state = true, v, outputValued
}

// headerSize is the length of the entry that precedes the value in the
// output frame: kind, index, flags, the flagged fields and the value length.
func (o *Output) headerSize() int {
	n := 1 + 4 + 1 + 4
	if o.flags&abi.FlagKey != 0 {
		n += 4 + len(o.key)
	}
	if o.flags&abi.FlagTimestamp != 0 {
		n += 8
	}
	if o.flags&abi.FlagHeaders != 0 {
		n += 4 + len(o.hdr)
	}
	return n
}

// commit writes the Output's entry to the output frame.
func (o *Output) commit() {
	p, i := o.p, o.index
	o.state = outputDone
	if o.flags == 0 && !o.valueSet {
		p.w.Keep(i)
		return
	}
	p.w.BeginRecord(i, o.flags)
	if o.flags&abi.FlagKey != 0 {
		if o.keyAbsent {
			p.w.AppendKey(nil)
		} else {
			p.w.AppendKey(nonNil(o.key))
		}
	}
	if o.flags&abi.FlagTimestamp != 0 {
		p.w.AppendTimestamp(o.ts)
	}
	if o.flags&abi.FlagHeaders != 0 {
		p.w.AppendHeaderCount(o.nhdr)
		for b := o.hdr; len(b) > 0; {
			n := binary.LittleEndian.Uint32(b)
			name := b[4 : 4+n]
			b = b[4+n:]
			m := binary.LittleEndian.Uint32(b)
			p.w.AppendHeader(unsafe.String(unsafe.SliceData(name), len(name)), b[4:4+m])
			b = b[4+m:]
		}
	}
	switch {
	case !o.valueSet:
		p.w.AppendValue(p.in.Value)
	case o.value == nil:
		p.w.AppendValue(nil)
	default:
		p.commitValue(o.value)
	}
	o.value = nil
}

// discard drops the Output without writing anything.
func (o *Output) discard() {
	o.state = outputDone
	o.building = false
	o.value = nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// stage returns an empty slice to build a value in. When the output frame
// has room, the slice starts headroom bytes past the frame's end, exactly
// where the value will be once the entry's headerSize bytes are written in
// front of it, so commitValue then finds it in place. Otherwise it is the
// processor's scratch buffer, grown to at least hint bytes, and the value is
// copied at commit.
func (p *processor) stage(headroom, hint int) []byte {
	buf := p.w.Bytes()
	off := len(buf) + headroom
	if cap(buf)-off >= hint {
		return buf[off:off]
	}
	if p.scratch == nil || cap(p.scratch) < hint {
		p.scratch = make([]byte, 0, max(hint, 256))
	}
	return p.scratch[:0]
}

// commitValue appends the value that ends an entry. If v was built in place
// (see stage) it is already there and is not copied.
func (p *processor) commitValue(v []byte) {
	vb := p.w.ValueBuffer()
	start := len(vb)
	if len(v) > 0 && cap(vb)-start >= len(v) && &vb[start : start+1][0] == &v[0] {
		p.w.EndValue(vb[:start+len(v)])
		return
	}
	p.w.EndValue(append(vb, v...))
}

// Emitter receives the records a FlatMapFunc emits for one input, in order.
// Each method adds one record after those already emitted.
//
// The Emitter belongs to the SDK and is reused: it is valid only during the
// call it was given to, and must not be used from another goroutine.
type Emitter struct {
	p       *processor
	index   int
	pending bool // p.out was begun by Begin and is not committed yet
}

func (e *Emitter) reset(i int) {
	e.index = i
	e.pending = false
}

// flush commits the record begun by Begin, if any.
func (e *Emitter) flush() {
	if e.p.out.building {
		panic("weir: Emitter used inside BuildValue")
	}
	if e.pending {
		e.pending = false
		e.p.out.commit()
	}
}

// Keep emits the input record unchanged.
func (e *Emitter) Keep() {
	e.flush()
	e.p.w.Keep(e.index)
}

// Emit emits a record with value v (copied), inheriting the key, timestamp
// and headers of the input. nil emits an absent (null) value.
func (e *Emitter) Emit(v []byte) {
	e.flush()
	e.p.w.Record(e.index, v)
}

// Build emits a record whose value fn appends in place to dst, as
// Output.BuildValue describes, inheriting the key, timestamp and headers of
// the input.
func (e *Emitter) Build(fn func(dst []byte) []byte) {
	o := e.Begin()
	o.BuildValue(fn)
	e.flush()
}

// Begin starts a record whose key, timestamp, headers and value are set
// through the returned Output, as for a MapToFunc. The record is emitted at
// the next Emitter call or when the function returns; an Output on which
// nothing was set emits the input record unchanged. The Output is valid
// until then.
func (e *Emitter) Begin() *Output {
	e.flush()
	e.p.out.reset(e.index)
	e.pending = true
	return &e.p.out
}
