package meter_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/weir-stream/weir/host/internal/meter"
)

// BenchmarkInstrument instruments the largest module it finds: a Go
// plugin from weir's cache (about 3 MB of code), else the Go guest.
func BenchmarkInstrument(b *testing.B) {
	file, bin := largestModule(b)
	b.Run(filepath.Base(file), func(b *testing.B) {
		b.SetBytes(int64(len(bin)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := meter.Instrument(bin, meter.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func largestModule(b *testing.B) (file string, bin []byte) {
	for _, f := range pluginCacheFiles() {
		if fi, err := os.Stat(f); err == nil && fi.Size() > int64(len(bin)) {
			if data, err := os.ReadFile(f); err == nil {
				file, bin = f, data
			}
		}
	}
	if bin == nil {
		file, bin = "goguest.wasm", goGuestModule(b)
	}
	return file, bin
}

// BenchmarkHotLoop sums the 64 KiB of a memory, byte by byte, in a loop of
// a few instructions: as compiled, instrumented (a check per iteration),
// and as compiled under WithCloseOnContextDone with a deadline (a call out
// of the machine code per iteration).
func BenchmarkHotLoop(b *testing.B) {
	bin := readTestdata(b, "loops.wasm")
	deadline, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	for _, bb := range []struct {
		name string
		bin  []byte
		cfg  wazero.RuntimeConfig
		ctx  context.Context
	}{
		{"original", bin, wazero.NewRuntimeConfig(), ctx},
		{"instrumented", instrument(b, bin, meter.Options{}), wazero.NewRuntimeConfig(), ctx},
		{"close_on_context_done", bin, wazero.NewRuntimeConfig().WithCloseOnContextDone(true), deadline},
	} {
		b.Run(bb.name, func(b *testing.B) {
			m := instantiate(b, newRuntime(b, bb.cfg, &yielder{fuel: meter.DefaultFuel}), bb.bin, "loops")
			if _, err := m.ExportedFunction("fill").Call(bb.ctx, 1<<16, 3); err != nil {
				b.Fatal(err)
			}
			sum := m.ExportedFunction("sum")
			b.SetBytes(1 << 16)
			for b.Loop() {
				if _, err := sum.Call(bb.ctx, 1<<16); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
