// Command allocating is a test plugin (map) that allocates a fresh 1 KiB
// buffer for every record and returns the record's value copied into it.
// It makes garbage on every call, so that the end-to-end test of the weir_gc
// hook can see whether the Go runtime collects it.
package main

import weir "github.com/weir-stream/weir/guest-sdk/go"

func init() {
	weir.Map(func(r *weir.Record) ([]byte, error) {
		b := make([]byte, 0, 1024)
		return append(b, r.Value...), nil
	})
}

func main() {}
