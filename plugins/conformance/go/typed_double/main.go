// Command typed_double is a conformance plugin (map) of the typed
// convention: it declares the field price as a strict int, so that the
// host dead-letters records whose price is not an integer, and patches
// price to twice its value. A record without a price, or with a null one,
// is rejected with "price is missing" or "price is null"; a price whose
// double does not fit in 64 bits with "price overflows". See
// plugins/conformance/README.md for the exact contract.
package main

import (
	"errors"
	"math"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.Fields(weir.IntField("price", weir.Strict))
	weir.TypedMap(double)
}

func double(r *weir.Row, p *weir.Patch) error {
	v, ok := r.Int(0)
	switch {
	case !ok:
		return errors.New("price is " + r.Status(0).String())
	case v > math.MaxInt64/2 || v < math.MinInt64/2:
		return errors.New("price overflows")
	}
	p.SetInt("price", 2*v)
	return nil
}

func main() {}
