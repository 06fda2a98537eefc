// Command currency is Nexmark q1's map plugin: it converts each bid's price
// from dollars to euros, price × 0.908, keeping every other byte of the
// bid as it was. The new price is a JSON number written as the shortest
// decimal that reads back as the float64 product (wjson.AppendFloat). A
// record without a numeric "price" is rejected, to the dead-letter output.
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// Rate is the dollar to euro rate of the Nexmark spec.
const Rate = 0.908

func init() {
	weir.MapTo(func(r *weir.Record, out *weir.Output) error {
		v, err := wjson.Get(r.Value, "price")
		if err != nil {
			return err
		}
		if v.Kind != wjson.Number {
			return errors.New("bid has no numeric price")
		}
		p, err := v.Float()
		if err != nil {
			return err
		}
		// v.Raw lies inside r.Value: its offset is the difference of the
		// capacities.
		at := cap(r.Value) - cap(v.Raw)
		end := at + len(v.Raw)
		out.BuildValue(func(dst []byte) []byte {
			dst = append(dst, r.Value[:at]...)
			dst = wjson.AppendFloat(dst, p*Rate)
			return append(dst, r.Value[end:]...)
		})
		return nil
	})
}

func main() {}
