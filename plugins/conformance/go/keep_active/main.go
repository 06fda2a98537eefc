// Command keep_active is a conformance plugin (filter) of the typed
// convention: it declares the field active as a bool without flags, so
// that every record reaches it with the field's status; it keeps the
// records whose active is true, drops those whose active is false, null or
// missing, and rejects those whose active holds another type. See
// plugins/conformance/README.md.
package main

import (
	"errors"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.Fields(weir.BoolField("active", 0))
	weir.TypedFilter(func(r *weir.Row) (bool, error) {
		if r.Status(0) == weir.Mismatch {
			return false, errors.New("active is not a bool")
		}
		active, ok := r.Bool(0)
		return ok && active, nil
	})
}

func main() {}
