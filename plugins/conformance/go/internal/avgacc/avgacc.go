// Package avgacc is the accumulator of the Go average conformance
// plugins, raw and typed: the running sum and count of a group, its
// encoding (the sum as a float64 and the count as an int64, each 8 bytes
// little-endian, so that either plugin's accumulators merge with the
// other's, and with the other SDKs'), merge and result. It has no state
// and is safe for concurrent use.
package avgacc

import (
	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// Acc is the running sum and count of one group. It is a plain value.
type Acc struct {
	Sum   float64
	Count int64
}

// Add returns a with n folded in.
func (a Acc) Add(n float64) Acc { return Acc{a.Sum + n, a.Count + 1} }

// Codec encodes and decodes accumulators.
var Codec = weir.Codec[Acc]{
	Append: func(dst []byte, a Acc) []byte {
		dst = weir.AppendFloat64(dst, a.Sum)
		return weir.AppendInt64(dst, a.Count)
	},
	Decode: func(b []byte) (Acc, error) {
		d := weir.NewAccDecoder(b)
		a := Acc{Sum: d.Float64(), Count: d.Int64()}
		return a, d.End()
	},
}

// Merge combines two partial accumulators of one group.
func Merge(a, b Acc) Acc { return Acc{a.Sum + b.Sum, a.Count + b.Count} }

// Result appends {"avg":<sum/count>,"count":<count>} to dst, with null
// for the average of no values.
func Result(dst []byte, a Acc) ([]byte, error) {
	var w wjson.Writer
	w.Reset(dst)
	w.BeginObject()
	w.Key("avg")
	if a.Count == 0 {
		w.Null()
	} else {
		w.Float(a.Sum / float64(a.Count))
	}
	w.Key("count")
	w.Int(a.Count)
	w.EndObject()
	return w.Bytes(), nil
}
