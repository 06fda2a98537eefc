// Command average is a conformance plugin (aggregate). Its input is a JSON
// object with a numeric field "n"; it keeps, per group, the sum and the
// count of the values of "n", and its result is
//
//	{"avg":<sum/count>,"count":<count>}
//
// with the average written as wjson.Writer.Float writes floats (Python's
// repr: 3.0, 2.5, 1e+16), or null when the group has no values (or the sum
// overflowed). A record whose "n" is missing, or is not a number, is
// rejected: "missing field n", "field n is not a number", or "field n is
// out of range" for a number beyond float64 (1e400). Input that is not JSON
// is rejected with the parser's message.
//
// The accumulator is 16 bytes: the sum as a float64 and the count as an
// int64, each 8 bytes little-endian (weir.AppendFloat64, AppendInt64).
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// acc is the running sum and count of one group.
type acc struct {
	sum   float64
	count int64
}

var codec = weir.Codec[acc]{
	Append: func(dst []byte, a acc) []byte {
		dst = weir.AppendFloat64(dst, a.sum)
		return weir.AppendInt64(dst, a.count)
	},
	Decode: func(b []byte) (acc, error) {
		d := weir.NewAccDecoder(b)
		a := acc{sum: d.Float64(), count: d.Int64()}
		return a, d.End()
	},
}

func init() {
	weir.Aggregate(weir.AggregateFuncs[acc]{
		Add:    add,
		Merge:  func(a, b acc) acc { return acc{a.sum + b.sum, a.count + b.count} },
		Result: result,
		Codec:  codec,
	})
}

func add(a acc, r *weir.Record) (acc, error) {
	v, err := wjson.Get(r.Value, "n")
	switch {
	case err != nil:
		return a, err
	case !v.Exists():
		return a, errors.New("missing field n")
	case v.Kind != wjson.Number:
		return a, errors.New("field n is not a number")
	}
	n, err := v.Float()
	if err != nil {
		return a, errors.New("field n is out of range")
	}
	a.sum += n
	a.count++
	return a, nil
}

func result(dst []byte, a acc) ([]byte, error) {
	var w wjson.Writer
	w.Reset(dst)
	w.BeginObject()
	w.Key("avg")
	if a.count == 0 {
		w.Null()
	} else {
		w.Float(a.sum / float64(a.count))
	}
	w.Key("count")
	w.Int(a.count)
	w.EndObject()
	return w.Bytes(), nil
}

func main() {}
