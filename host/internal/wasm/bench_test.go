package wasm

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	out := new(Output)
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
	rt := newRuntime(b, nil)
	_, w := mustLoad(b, rt, watConfig(b, "identity"))
	for _, n := range benchBatchSizes {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			benchProcess(b, w, benchRecords(n, 100))
		})
	}
}

// BenchmarkIdentityWATTimeout measures the cost of a Timeout, which makes
// wazero check for cancellation.
func BenchmarkIdentityWATTimeout(b *testing.B) {
	rt := newRuntime(b, nil)
	cfg := watConfig(b, "identity")
	cfg.Timeout = time.Second
	_, w := mustLoad(b, rt, cfg)
	for _, n := range benchBatchSizes {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			benchProcess(b, w, benchRecords(n, 100))
		})
	}
}
