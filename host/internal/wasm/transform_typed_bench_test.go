package wasm

import (
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// BenchmarkTransformTyped runs the JSON field transform of the Transform
// benchmarks (upper-case the "kind" field of sensor readings) through the
// typed convention: the typed_uppercase conformance plugins declare the
// field, the host extracts it and applies the guest's patch. Compare with
// BenchmarkTransformGo and BenchmarkTransformC (the same transform, raw)
// and with BenchmarkTransformNative in plugins/conformance/go/uppercase:
//
//	go test -run='^$' -bench='Transform(Go|C|Typed)' -count 6 ./host/internal/wasm/
//	go test -run='^$' -bench=TransformNative -count 6 ./plugins/conformance/go/uppercase/
func BenchmarkTransformTyped(b *testing.B) {
	for _, lang := range []string{"go", "c", "rust", "assemblyscript"} {
		b.Run(lang, func(b *testing.B) {
			weirtest.NeedToolchain(b, lang)
			cfg := goConfig(b, "plugins/conformance/"+lang+"/typed_uppercase", abi.OpMap)
			cfg.InitConfig = []byte(`{"field":"kind"}`)
			_, w := mustLoad(b, sharedRuntime(b), cfg)
			benchProcess(b, w, readings(512))
		})
	}
}

// BenchmarkTransformGoBatch runs the typed transform through the Go SDK as
// a per-record function (typed_uppercase) and as a batch function
// (guest-sdk/go/testdata/uppercase_batch), interleaved batch by batch so
// that a shared machine's drift falls on both alike:
//
//	go test -run='^$' -bench=TransformGoBatch -count 6 ./host/internal/wasm/
func BenchmarkTransformGoBatch(b *testing.B) {
	var ws []*Worker
	for _, dir := range []string{"plugins/conformance/go/typed_uppercase", "guest-sdk/go/testdata/uppercase_batch"} {
		cfg := goConfig(b, dir, abi.OpMap)
		cfg.InitConfig = []byte(`{"field":"kind"}`)
		_, w := mustLoad(b, sharedRuntime(b), cfg)
		ws = append(ws, w)
	}
	ns := interleave(b, ws, readings(512))
	b.ReportMetric(ns[0], "per-record-ns/record")
	b.ReportMetric(ns[1], "batch-ns/record")
}
