package wasm

import (
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// BenchmarkTransformRust runs the Rust SDK's uppercase conformance plugin
// on the "kind" field of sensor readings through the whole ABI path,
// exactly as BenchmarkTransformGo runs the Go one: compare both with
// BenchmarkTransformNative in plugins/conformance/go/uppercase.
//
//	go test -run='^$' -bench='Transform(Go|Rust)$' -count=6 ./host/internal/wasm/
//	go test -run='^$' -bench=TransformNative -count=6 ./plugins/conformance/go/uppercase/
func BenchmarkTransformRust(b *testing.B) {
	weirtest.NeedToolchain(b, "rust")
	sandboxModes(b, func(b *testing.B, rt *Runtime) {
		cfg := goConfig(b, "plugins/conformance/rust/uppercase", abi.OpMap)
		cfg.InitConfig = []byte(`{"field":"kind"}`)
		_, w := mustLoad(b, rt, cfg)
		benchProcess(b, w, readings(512))
	})
}
