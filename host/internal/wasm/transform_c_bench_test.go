package wasm

import (
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// BenchmarkTransformC runs the C SDK's uppercase conformance plugin on the
// "kind" field of sensor readings, through the whole ABI path, exactly as
// BenchmarkTransformGo runs the Go one. Compare with BenchmarkTransformNative
// in plugins/conformance/go/uppercase, the same transform in native Go:
//
//	go test -run='^$' -bench='Transform(C|Go)$' -count 6 ./host/internal/wasm/
//	go test -run='^$' -bench=TransformNative -count 6 ./plugins/conformance/go/uppercase/
func BenchmarkTransformC(b *testing.B) {
	weirtest.NeedToolchain(b, "c")
	sandboxModes(b, func(b *testing.B, rt *Runtime) {
		cfg := goConfig(b, "plugins/conformance/c/uppercase", abi.OpMap)
		cfg.InitConfig = []byte(`{"field":"kind"}`)
		_, w := mustLoad(b, rt, cfg)
		benchProcess(b, w, readings(512))
	})
}
