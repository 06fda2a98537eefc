package wasm

import (
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// BenchmarkTransformTyped runs the JSON field transform of the Transform
// benchmarks (upper-case the "kind" field of sensor readings) through the
// typed convention: the typed_uppercase conformance plugins declare the
// field, the host extracts it and applies the guest's patch; go-batch is
// the Go one as a batch function (guest-sdk/go/testdata/uppercase_batch). Compare with
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
	b.Run("go-batch", func(b *testing.B) {
		cfg := goConfig(b, "guest-sdk/go/testdata/uppercase_batch", abi.OpMap)
		cfg.InitConfig = []byte(`{"field":"kind"}`)
		_, w := mustLoad(b, sharedRuntime(b), cfg)
		benchProcess(b, w, readings(512))
	})
}
