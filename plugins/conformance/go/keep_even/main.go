// Command keep_even is a conformance plugin (filter). Its input is a JSON
// object; it keeps the records whose field "n" is an even integer and drops
// those where it is odd. An integer is a JSON number written without a
// fraction or exponent that fits in a signed 64-bit integer (so 4.0 and 4e0
// are not integers). A missing "n", or an "n" that is not an integer, rejects
// the record.
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.Filter(keepEven)
}

func keepEven(r *weir.Record) (bool, error) {
	v, err := wjson.Get(r.Value, "n")
	if err != nil {
		return false, err
	}
	if !v.Exists() {
		return false, errors.New("missing field n")
	}
	n, err := v.Int()
	if err != nil {
		return false, errors.New("field n is not an integer")
	}
	return n%2 == 0, nil
}

func main() {}
