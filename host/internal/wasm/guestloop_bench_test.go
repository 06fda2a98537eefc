package wasm

import (
	"os"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// BenchmarkGuestLoop measures what a Go guest's loop over a batch costs a
// record, raw and typed, as the difference between a Go SDK plugin and a
// hand-written WAT module doing the same (nothing) through the same host
// path, on 512 sensor readings:
//
//   - raw: the identity map (plugins/identity, the Go SDK's record decoder
//     and output per record) against the WAT identity module;
//
//   - typed: the keep_active filter (one bool column read per record;
//     the readings have no "active", so nothing is kept) in Go against
//     its WAT twin;
//
//   - typed-batch: the same filter as a Go batch function
//     (guest-sdk/go/testdata/keep_active_batch), one call a batch.
//
//     go test -run='^$' -bench=GuestLoop -count=6 ./host/internal/wasm/
func BenchmarkGuestLoop(b *testing.B) {
	keepActiveWAT := func() PluginConfig {
		path := "../../../plugins/conformance/wat/keep_active.wasm"
		bin, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		return PluginConfig{Operator: "keep_active", Path: path, Wasm: bin, Op: abi.OpFilter}
	}
	cases := []struct {
		name string
		cfg  func() PluginConfig
	}{
		{"raw/wat", func() PluginConfig { return watConfig(b, "identity") }},
		{"raw/go", func() PluginConfig { return goConfig(b, "plugins/identity", abi.OpMap) }},
		{"typed/wat", keepActiveWAT},
		{"typed/go", func() PluginConfig { return goConfig(b, "plugins/conformance/go/keep_active", abi.OpFilter) }},
		{"typed-batch/go", func() PluginConfig {
			return goConfig(b, "guest-sdk/go/testdata/keep_active_batch", abi.OpFilter)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			_, w := mustLoad(b, sharedRuntime(b), c.cfg())
			benchProcess(b, w, readings(512))
		})
	}
}
