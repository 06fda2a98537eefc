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
// accumulator, its merge and the result are average's (package avgacc),
// so that either plugin's accumulators merge with the other's. See
// plugins/conformance/README.md.
package main

import (
	"errors"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/plugins/conformance/go/internal/avgacc"
)

func init() {
	weir.Fields(weir.FloatField("n", weir.Required|weir.Strict))
	weir.TypedAggregate(weir.TypedAggregateFuncs[avgacc.Acc]{
		Add:    add,
		Merge:  avgacc.Merge,
		Result: avgacc.Result,
		Codec:  avgacc.Codec,
	})
}

// add folds n in. The declaration makes the host pass only records with
// a number in n; the check keeps a host bug from becoming a wrong sum.
func add(a avgacc.Acc, r *weir.Row) (avgacc.Acc, error) {
	n, ok := r.Float(0)
	if !ok {
		return a, errors.New("n is " + r.Status(0).String())
	}
	return a.Add(n), nil
}

func main() {}
