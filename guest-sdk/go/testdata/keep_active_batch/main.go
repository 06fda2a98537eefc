// Command keep_active_batch is the keep_active conformance filter as a
// batch function (TypedFilterBatch): it keeps the records whose active is
// true and rejects those whose active holds another type. The guest-loop
// benchmarks compare it with the per-record keep_active.
package main

import (
	"errors"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

var errNotBool = errors.New("active is not a bool")

func init() {
	weir.Fields(weir.BoolField("active", 0))
	weir.TypedFilterBatch(func(b *weir.Batch) error {
		active := b.Bools(0)
		for i := range b.Len() {
			switch v, ok := active.Get(i); {
			case ok && v:
				b.Keep(i)
			case active.Status(i) == weir.Mismatch:
				b.Reject(i, errNotBool)
			}
		}
		return nil
	})
}

func main() {}
