// Command identity is a weir map plugin that passes every record through
// unchanged. It returns the input value itself, which the SDK answers with
// a keep entry, so the host copies nothing: it measures the fixed cost of a
// Go plugin call and is used by the benchmarks.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o identity.wasm .
package main

import weir "github.com/weir-stream/weir/guest-sdk/go"

func init() {
	weir.Map(func(r *weir.Record) ([]byte, error) { return r.Value, nil })
}

func main() {}
