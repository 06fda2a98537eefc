package fields

import (
	"encoding/binary"
	"math"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
)

// Record is one input record of Extract, the engine's record: Extract
// reads its Timestamp, Key (nil: no key) and Value (nil: no value), and
// does not keep its slices.
type Record = record.Record

// Reject is a record Extract left out of the frame, to be dead-lettered.
// It is a plain value.
type Reject struct {
	Index  int    // the record's index in Extract's input
	Reason string // such as `field "user.age": want int, found string`
}

// Batch is the result of Extract. Its slices alias the Extractor's
// buffers, valid until its next Extract.
type Batch struct {
	// Frame is the typed batch frame, to be copied into guest memory.
	Frame []byte
	// Kept holds, for each record of Frame, its index in the input.
	Kept []int
	// Rejects holds the records left out, in input order.
	Rejects []Reject
	// Spans holds where the declared fields lie in the kept records'
	// values: Spans[j*n+k] is field k of Frame's record j, for n fields
	// (Decl.Len), for Patcher.ApplyPatchAt.
	Spans []Span
}

// Span is where a declared field's value lies in a record's value, as
// offsets: Value[Start:End]. A missing field has Start -1. It is a plain
// value.
type Span struct{ Start, End int32 }

// Extractor writes typed batch frames for one Decl. It keeps its buffers
// from one Extract to the next, so that extraction does not allocate once
// they have grown to the batches' size. It must be used by one goroutine
// at a time.
type Extractor struct {
	decl  *Decl
	vals  []wjson.Value // the fields of the record being read
	slots []slot        // and what they hold
	cols  []abi.Column  // the frame's columns, being built
	batch Batch
}

// slot is the status and value of one field of the record being read.
type slot struct {
	status abi.ValueStatus
	why    why    // for ValueMismatch
	bits   uint64 // int, float (its bits), bool
}

// why says why a number is a mismatch, for a reject's reason.
type why uint8

const (
	whyKind     why = iota // a value of another kind
	whyFraction            // a number that is not an integer, for int
	whyInt64               // an integer outside int64, for int
	whyFloat64             // a number outside float64, for float
)

// NewExtractor returns an Extractor for d.
func NewExtractor(d *Decl) *Extractor {
	x := &Extractor{
		decl:  d,
		vals:  make([]wjson.Value, d.Len()),
		slots: make([]slot, d.Len()),
		cols:  make([]abi.Column, abi.TypedFirstFieldColumn+d.Len()),
	}
	x.cols[abi.TypedTimestampColumn].Type = abi.TypeInt
	x.cols[abi.TypedKeyColumn].Type = abi.TypeString
	for k := 0; k < d.Len(); k++ {
		x.cols[abi.TypedFirstFieldColumn+k].Type = d.fields[k].Type
	}
	return x
}

// Extract reads the declared fields of each record and writes the typed
// batch frame of the records it keeps. A record is rejected when its value
// is not JSON, or when a field breaks its policy (see the package
// documentation); the others are kept, in order. The error is for a batch
// too large for one frame.
func (x *Extractor) Extract(recs []Record) (Batch, error) {
	x.reset()
	for i := range recs {
		if reason, ok := x.read(recs[i].Value); !ok {
			x.batch.Rejects = append(x.batch.Rejects, Reject{Index: i, Reason: reason})
			continue
		}
		x.commit(&recs[i])
		x.batch.Kept = append(x.batch.Kept, i)
	}
	frame, err := abi.AppendTypedBatch(x.batch.Frame[:0], len(x.batch.Kept), x.cols)
	if err != nil {
		return Batch{}, err
	}
	x.batch.Frame = frame
	return x.batch, nil
}

func (x *Extractor) reset() {
	x.batch.Kept, x.batch.Rejects = x.batch.Kept[:0], x.batch.Rejects[:0]
	x.batch.Spans = x.batch.Spans[:0]
	for k := range x.cols {
		c := &x.cols[k]
		c.Values, c.Data = c.Values[:0], c.Data[:0]
		if k != abi.TypedTimestampColumn {
			if c.Statuses == nil { // a field column always has statuses
				c.Statuses = make([]byte, 0, 64)
			}
			c.Statuses = c.Statuses[:0]
		}
		if c.Type.Width() == 0 {
			c.Values = binary.LittleEndian.AppendUint32(c.Values, 0)
		}
	}
}

// read looks up the fields of the record value and decides each one's
// status into x.slots. It returns the reason to reject the record, and
// false, when the record breaks a policy.
func (x *Extractor) read(value []byte) (string, bool) {
	clear(x.vals)
	if value != nil {
		if err := x.decl.paths.GetAll(value, x.vals); err != nil {
			return "value is not JSON: " + err.Error(), false
		}
	}
	for k := range x.slots {
		s := &x.slots[k]
		*s = decide(x.vals[k], x.decl.fields[k].Type)
		flags := x.decl.fields[k].Flags
		switch {
		case s.status == abi.ValueMismatch && flags&abi.FieldStrict != 0,
			(s.status == abi.ValueMissing || s.status == abi.ValueNull) && flags&abi.FieldRequired != 0:
			return x.reason(k), false
		}
	}
	return "", true
}

// reason says why field k of the record read broke its policy.
func (x *Extractor) reason(k int) string {
	s, v, t := &x.slots[k], x.vals[k], x.decl.fields[k].Type
	r := "field " + x.decl.quoted[k] + ": "
	switch {
	case s.status == abi.ValueMissing:
		return r + "missing"
	case s.status == abi.ValueNull:
		return r + "null"
	case s.why == whyKind:
		return r + "want " + t.String() + ", found " + v.Kind.String()
	}
	num := string(v.Raw)
	if len(num) > 40 {
		num = num[:37] + "..."
	}
	return r + "want " + t.String() + ", found number " + num + " (" + s.why.String() + ")"
}

func (w why) String() string {
	switch w {
	case whyFraction:
		return "not an integer"
	case whyInt64:
		return "outside int64"
	case whyFloat64:
		return "outside float64"
	}
	return "another kind"
}

// commit appends the record, whose fields read decided, to the columns.
func (x *Extractor) commit(r *Record) {
	ts := &x.cols[abi.TypedTimestampColumn]
	ts.Values = binary.LittleEndian.AppendUint64(ts.Values, uint64(r.Timestamp))
	key := &x.cols[abi.TypedKeyColumn]
	if r.Key == nil {
		appendBytes(key, abi.ValueNull, nil)
	} else {
		appendBytes(key, abi.ValuePresent, r.Key)
	}
	for k := range x.slots {
		c, s := &x.cols[abi.TypedFirstFieldColumn+k], &x.slots[k]
		x.batch.Spans = append(x.batch.Spans, spanOf(x.vals[k]))
		switch c.Type {
		case abi.TypeInt, abi.TypeFloat:
			c.Statuses = append(c.Statuses, byte(s.status))
			c.Values = binary.LittleEndian.AppendUint64(c.Values, s.bits)
		case abi.TypeBool:
			c.Statuses = append(c.Statuses, byte(s.status))
			c.Values = append(c.Values, byte(s.bits))
		case abi.TypeString:
			c.Statuses = append(c.Statuses, byte(s.status))
			if s.status == abi.ValuePresent {
				c.Data = x.vals[k].AppendString(c.Data)
			}
			c.Values = binary.LittleEndian.AppendUint32(c.Values, uint32(len(c.Data)))
		case abi.TypeRaw:
			appendBytes(c, s.status, x.vals[k].Raw)
		}
	}
}

// spanOf returns the span of a value GetAll found, or of a missing one.
func spanOf(v wjson.Value) Span {
	if v.Kind == wjson.Invalid {
		return Span{Start: -1, End: -1}
	}
	return Span{Start: int32(v.Offset), End: int32(v.Offset + len(v.Raw))}
}

// appendBytes appends one value to a variable-length column.
func appendBytes(c *abi.Column, status abi.ValueStatus, b []byte) {
	c.Statuses = append(c.Statuses, byte(status))
	if status == abi.ValuePresent {
		c.Data = append(c.Data, b...)
	}
	c.Values = binary.LittleEndian.AppendUint32(c.Values, uint32(len(c.Data)))
}

// decide returns the status and, when present, the fixed-width value of
// the field v for a column of type t.
func decide(v wjson.Value, t abi.FieldType) slot {
	switch {
	case v.Kind == wjson.Invalid:
		return slot{status: abi.ValueMissing}
	case v.Kind == wjson.Null:
		return slot{status: abi.ValueNull}
	case t == abi.TypeRaw:
		return slot{}
	case t == abi.TypeInt && v.Kind == wjson.Number:
		switch i, res := exactInt(v.Raw); res {
		case intFraction:
			return slot{status: abi.ValueMismatch, why: whyFraction}
		case intRange:
			return slot{status: abi.ValueMismatch, why: whyInt64}
		default:
			return slot{bits: uint64(i)}
		}
	case t == abi.TypeFloat && v.Kind == wjson.Number:
		f, err := v.Float()
		if err != nil {
			return slot{status: abi.ValueMismatch, why: whyFloat64}
		}
		return slot{bits: math.Float64bits(f)}
	case t == abi.TypeBool && v.Kind == wjson.Bool:
		if v.Raw[0] == 't' {
			return slot{bits: 1}
		}
		return slot{}
	case t == abi.TypeString && v.Kind == wjson.String:
		return slot{}
	}
	return slot{status: abi.ValueMismatch, why: whyKind}
}
