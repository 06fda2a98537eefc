package wasm

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/host/internal/record"
)

// benchRecords makes n keyed records with values of size bytes.
func benchRecords(n, size int) []record.Record {
	in := make([]record.Record, n)
	for i := range in {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		in[i] = record.Record{
			Key:       []byte(fmt.Sprintf("sensor-%03d", i%50)),
			Value:     v,
			Timestamp: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + int64(i),
			Origin:    record.Origin{Source: "bench", Partition: -1, Offset: int64(i)},
		}
	}
	return in
}

// benchProcess runs w over in b.N times and reports ns/record.
func benchProcess(b *testing.B, w *Worker, in []record.Record) {
	ctx := context.Background()
	out := new(record.Output)
	// Warm up buffers and the guest's input region.
	if err := w.Process(ctx, in, out); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := w.Process(ctx, in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/record")
}

var benchBatchSizes = []int{1, 64, 512}

func BenchmarkIdentityWAT(b *testing.B) {
	sandboxModes(b, func(b *testing.B, rt *Runtime) {
		_, w := mustLoad(b, rt, watConfig(b, "identity"))
		for _, n := range benchBatchSizes {
			b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
				benchProcess(b, w, benchRecords(n, 100))
			})
		}
	})
}

// unmeteredRuntime is sharedRuntime without the sandbox's checks, for
// measuring what they cost.
var unmeteredRuntime struct {
	once sync.Once
	rt   *Runtime
	err  error
}

// sandboxModes runs bench as "sandbox=on", on the shared runtime, and as
// "sandbox=off", on one that loads modules without the sandbox's checks,
// so that the cost of the default deadline (and of what makes it hold)
// reads off side by side:
//
//	go test -run='^$' -bench='IdentityWAT|IdentityGo|Transform' -count=6 ./host/internal/wasm/
func sandboxModes(b *testing.B, bench func(*testing.B, *Runtime)) {
	b.Run("sandbox=on", func(b *testing.B) { bench(b, sharedRuntime(b)) })
	b.Run("sandbox=off", func(b *testing.B) {
		unmeteredRuntime.once.Do(func() {
			unmeteredRuntime.rt, unmeteredRuntime.err = NewRuntime(context.Background(), RuntimeOptions{
				CacheDir: pluginbuild.DefaultCacheDir(),
				Logger:   newLogCapture().logger(),
			})
			if unmeteredRuntime.rt != nil {
				unmeteredRuntime.rt.unmetered = true
			}
		})
		if unmeteredRuntime.err != nil {
			b.Fatal(unmeteredRuntime.err)
		}
		bench(b, unmeteredRuntime.rt)
	})
}
