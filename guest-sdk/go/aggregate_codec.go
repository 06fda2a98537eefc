package weir

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Helpers for writing a Codec: a simple binary encoding of fixed fields,
// written with the Append functions and read back, in the same order, with
// an AccDecoder. Numbers are 8 bytes little-endian (IEEE-754 binary64 for
// floats, two's complement for integers), as the SDK stores numbers in
// state; byte strings are a u32 little-endian length and the bytes, as the
// ABI frames them. For example:
//
//	type avg struct {
//		sum   float64
//		count int64
//	}
//
//	var avgCodec = weir.Codec[avg]{
//		Append: func(dst []byte, a avg) []byte {
//			dst = weir.AppendFloat64(dst, a.sum)
//			return weir.AppendInt64(dst, a.count)
//		},
//		Decode: func(b []byte) (avg, error) {
//			d := weir.NewAccDecoder(b)
//			a := avg{sum: d.Float64(), count: d.Int64()}
//			return a, d.End()
//		},
//	}

// AppendInt64 appends v as 8 bytes, little-endian.
func AppendInt64(dst []byte, v int64) []byte {
	return binary.LittleEndian.AppendUint64(dst, uint64(v))
}

// AppendUint64 appends v as 8 bytes, little-endian.
func AppendUint64(dst []byte, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(dst, v)
}

// AppendFloat64 appends the IEEE-754 binary64 bits of v as 8 bytes,
// little-endian.
func AppendFloat64(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

// AppendBytes appends b as a u32 little-endian length and the bytes.
func AppendBytes(dst, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// AppendString appends s as AppendBytes does.
func AppendString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AccDecoder reads back, field by field, what the Append helpers wrote.
// A read past the end returns the zero value and makes End report the
// error, so a Decode function can read every field and check once.
type AccDecoder struct {
	b   []byte
	off int
	err error
}

// NewAccDecoder returns a decoder reading b from its start.
func NewAccDecoder(b []byte) AccDecoder { return AccDecoder{b: b} }

// AccDecodeError reports an accumulator that does not hold the fields its
// decoder read. It is a plain value.
type AccDecodeError struct {
	Offset int    // where the failing field starts
	Len    int    // the accumulator's length
	What   string // "8-byte number", "byte string", "trailing bytes"
}

// Error implements error.
func (e *AccDecodeError) Error() string {
	if e.What == "trailing bytes" {
		return "weir: accumulator of " + strconv.Itoa(e.Len) + " bytes has " +
			strconv.Itoa(e.Len-e.Offset) + " bytes after its last field"
	}
	return "weir: accumulator of " + strconv.Itoa(e.Len) + " bytes ends inside the " +
		e.What + " at byte " + strconv.Itoa(e.Offset)
}

func (d *AccDecoder) fail(what string) {
	if d.err == nil {
		d.err = &AccDecodeError{Offset: d.off, Len: len(d.b), What: what}
	}
	d.off = len(d.b)
}

// Uint64 reads a number written by AppendUint64.
func (d *AccDecoder) Uint64() uint64 {
	if len(d.b)-d.off < 8 {
		d.fail("8-byte number")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// Int64 reads a number written by AppendInt64.
func (d *AccDecoder) Int64() int64 { return int64(d.Uint64()) }

// Float64 reads a number written by AppendFloat64.
func (d *AccDecoder) Float64() float64 { return math.Float64frombits(d.Uint64()) }

// Bytes reads a byte string written by AppendBytes or AppendString. The
// result aliases the decoder's input; convert it with string() or copy it
// to keep it.
func (d *AccDecoder) Bytes() []byte {
	if len(d.b)-d.off < 4 {
		d.fail("byte string")
		return nil
	}
	n := binary.LittleEndian.Uint32(d.b[d.off:])
	if uint64(len(d.b)-d.off-4) < uint64(n) {
		d.fail("byte string")
		return nil
	}
	start := d.off + 4
	d.off = start + int(n)
	return d.b[start:d.off:d.off]
}

// End returns the error of the first read that failed, or, when all
// succeeded but bytes remain, an error saying so; nil when the input held
// exactly the fields read.
func (d *AccDecoder) End() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = &AccDecodeError{Offset: d.off, Len: len(d.b), What: "trailing bytes"}
	}
	return d.err
}
