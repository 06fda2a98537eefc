package wasm

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
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
// The five run interleaved, batch by batch, in one benchmark, each timed
// on its own, so that a shared machine's drift falls on all of them alike;
// it reports each one's ns a record and the Go guests' shares (Go minus
// its WAT twin):
//
//	go test -run='^$' -bench=GuestLoop -count=6 ./host/internal/wasm/
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
	ws := make([]*Worker, len(cases))
	for i, c := range cases {
		_, ws[i] = mustLoad(b, sharedRuntime(b), c.cfg())
	}
	ns := interleave(b, ws, readings(512))
	for i, c := range cases {
		b.ReportMetric(ns[i], c.name+"-ns/record")
	}
	b.ReportMetric(ns[1]-ns[0], "raw-go-share-ns/record")
	b.ReportMetric(ns[3]-ns[2], "typed-go-share-ns/record")
	b.ReportMetric(ns[4]-ns[2], "typed-batch-go-share-ns/record")
}

// interleave runs each worker over in, in turn, b.N times, and returns
// the ns a record each took.
func interleave(b *testing.B, ws []*Worker, in []record.Record) []float64 {
	ctx, out := context.Background(), new(record.Output)
	took := make([]time.Duration, len(ws))
	for _, w := range ws { // warm up buffers and the guests' input regions
		if err := w.Process(ctx, in, out); err != nil {
			b.Fatal(err)
		}
		out.Reset()
	}
	b.ResetTimer()
	for range b.N {
		for i, w := range ws {
			start := time.Now()
			if err := w.Process(ctx, in, out); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
			out.Reset()
		}
	}
	ns := make([]float64, len(ws))
	for i, d := range took {
		ns[i] = float64(d.Nanoseconds()) / float64(b.N*len(in))
	}
	return ns
}
