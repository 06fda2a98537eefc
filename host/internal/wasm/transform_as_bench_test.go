package wasm

import (
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// BenchmarkTransformAssemblyScript runs the AssemblyScript uppercase
// conformance plugin on the "kind" field of sensor readings through the
// whole ABI path, exactly as BenchmarkTransformGo runs the Go one, so the
// two compare with each other and with BenchmarkTransformNative in
// plugins/conformance/go/uppercase:
//
//	go test -run='^$' -bench='Transform(Go|AssemblyScript)$' -count=6 ./host/internal/wasm/
//	go test -run='^$' -bench=TransformNative -count=6 ./plugins/conformance/go/uppercase/
//
// Building the plugin needs the AssemblyScript compiler
// (scripts/install-toolchains.sh).
func BenchmarkTransformAssemblyScript(b *testing.B) {
	weirtest.NeedToolchain(b, "assemblyscript")
	sandboxModes(b, func(b *testing.B, rt *Runtime) {
		cfg := goConfig(b, "plugins/conformance/assemblyscript/uppercase", abi.OpMap)
		cfg.InitConfig = []byte(`{"field":"kind"}`)
		_, w := mustLoad(b, rt, cfg)
		benchProcess(b, w, readings(512))
	})
}
