// Command typed_average is a conformance plugin (aggregate) of the typed
// convention: average's aggregate, typed. It declares the field n as a
// required and strict float, so that the host dead-letters the records
// where n is missing, null or not a number (1e400, beyond float64,
// included) with its own reason, and keeps, per group, the sum and the
// count of n; its result is
//
//	{"avg":<sum/count>,"count":<count>}
//
// as average writes it, with null for the average of no values. The
// accumulator is average's: the sum as a float64 and the count as an
// int64, each 8 bytes little-endian, so that either plugin's accumulators
// merge with the other's. See plugins/conformance/README.md.
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
	weir.Fields(weir.FloatField("n", weir.Required|weir.Strict))
	weir.TypedAggregate(weir.TypedAggregateFuncs[acc]{
		Add:    add,
		Merge:  func(a, b acc) acc { return acc{a.sum + b.sum, a.count + b.count} },
		Result: result,
		Codec:  codec,
	})
}

// add folds n in. The declaration makes the host pass only records with
// a number in n; the check keeps a host bug from becoming a wrong sum.
func add(a acc, r *weir.Row) (acc, error) {
	n, ok := r.Float(0)
	if !ok {
		return a, errors.New("n is " + r.Status(0).String())
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
