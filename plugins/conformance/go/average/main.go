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
// int64, each 8 bytes little-endian (package avgacc, which typed_average
// shares).
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/plugins/conformance/go/internal/avgacc"
)

func init() {
	weir.Aggregate(weir.AggregateFuncs[avgacc.Acc]{
		Add:    add,
		Merge:  avgacc.Merge,
		Result: avgacc.Result,
		Codec:  avgacc.Codec,
	})
}

func add(a avgacc.Acc, r *weir.Record) (avgacc.Acc, error) {
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
	return a.Add(n), nil
}

func main() {}
