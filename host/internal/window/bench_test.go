package window

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
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

// BenchmarkRestart measures what a restart costs the window operator with
// 1M keys of state (set WEIR_BENCH_KEYS for another count): opening the
// checkpointed badger store, whose recovery finds nothing to roll back,
// and Restore, which rebuilds every open window from it. It reports the
// time to ready and the Go heap the restored operator holds per key.
func BenchmarkRestart(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("WEIR_BENCH_KEYS"); s != "" {
		fmt.Sscan(s, &n)
	}
	dir := b.TempDir()
	cfg := Config{Name: "sum", Kind: Tumbling, Size: time.Hour,
		Aggregates: []Aggregate{{Func: AggSum, Field: []string{"amount"}, As: "total"}, {Func: AggCount, As: "n"}}}
	open := func() *state.Badger {
		s, err := state.OpenBadger(state.BadgerOptions{Dir: dir, Checkpointed: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	// The state: every key has one open window.
	st := open()
	c := cfg
	c.Store = st
	op, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	base := time.Date(2024, 3, 17, 9, 0, 0, 0, time.UTC).UnixMilli()
	batch := make([]record.Record, 512)
	var out wasm.Output
	for i := 0; i < n; i += len(batch) {
		m := min(len(batch), n-i)
		for j := range m {
			batch[j] = record.Record{Key: fmt.Appendf(nil, "customer-%08d", i+j), Value: []byte(`{"amount":12.5}`), Timestamp: base + int64(j)}
		}
		if err := op.Process(ctx, batch[:m], &out); err != nil {
			b.Fatal(err)
		}
		out.Reset()
	}
	if err := st.Checkpoint([]byte("bench")); err != nil {
		b.Fatal(err)
	}
	op.Close(ctx)
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}

	var heap float64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		st := open()
		c := cfg
		c.Store = st
		op, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := op.Restore(ctx, base, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/restart")
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		if got := len(op.keys); got != n {
			b.Fatalf("restored %d keys, want %d", got, n)
		}
		op.Close(ctx)
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(heap/float64(n), "heap-B/key")
}
