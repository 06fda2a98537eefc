package window

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/state"
)

// benchWindow feeds b.N events to op in batches of 512, advancing the
// watermark after each batch to the batch's last event time minus a second,
// as a source with a second of out-of-orderness would, and reports events/s.
// Event i has key keys[i % len(keys)] and event time base + i/perMilli.
func benchWindow(b *testing.B, op *Operator, keys [][]byte, perMilli int64) {
	const batchSize = 512
	value := []byte(`{"id":12345,"country":"TR","amount":12.5}`)
	batch := make([]record.Record, batchSize)
	// The engine reuses an Output from batch to batch: start with room for
	// a watermark's results, as after the first window.
	out := wasm.Output{Records: make([]record.Record, 0, len(keys)+batchSize)}
	ctx := context.Background()
	base := time.Date(2024, 3, 17, 9, 20, 0, 0, time.UTC).UnixMilli()
	emitted := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(batchSize, b.N-i)
		for j := range n {
			batch[j] = record.Record{Key: keys[(i+j)%len(keys)], Value: value, Timestamp: base + int64(i+j)/perMilli}
		}
		if err := op.Process(ctx, batch[:n], &out); err != nil {
			b.Fatal(err)
		}
		i += n
		if err := op.OnWatermark(ctx, base+int64(i)/perMilli-1000, &out); err != nil {
			b.Fatal(err)
		}
		emitted += len(out.Records)
		out.Reset()
	}
	if err := op.OnWatermark(ctx, math.MaxInt64, &out); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	emitted += len(out.Records)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(emitted)/float64(b.N), "results/event")
}

func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "customer-%07d", i)
	}
	return keys
}

// BenchmarkTumblingCount1MKeys counts per key in 10 s tumbling windows over
// 1M distinct keys, 100 events per millisecond of event time: each window
// holds each key once.
func BenchmarkTumblingCount1MKeys(b *testing.B) {
	keys := benchKeys(1_000_000)
	op, err := New(Config{Name: "count", Kind: Tumbling, Size: 10 * time.Second, Store: state.NewMemory(),
		Aggregates: []Aggregate{{Func: AggCount, As: "n"}}})
	if err != nil {
		b.Fatal(err)
	}
	benchWindow(b, op, keys, 100)
}

// BenchmarkSlidingCount counts per key in 10 s windows sliding by 2 s over
// 10k keys, 10 events per millisecond of event time: each key has 2 events
// per pane and 10 per window.
func BenchmarkSlidingCount(b *testing.B) {
	keys := benchKeys(10_000)
	op, err := New(Config{Name: "count", Kind: Sliding, Size: 10 * time.Second, Slide: 2 * time.Second,
		Store: state.NewMemory(), Aggregates: []Aggregate{{Func: AggCount, As: "n"}}})
	if err != nil {
		b.Fatal(err)
	}
	benchWindow(b, op, keys, 10)
}
