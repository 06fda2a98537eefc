package window

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
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
	out := record.Output{Records: make([]record.Record, 0, len(keys)+batchSize)}
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
// time to ready and the Go heap the restored operator holds per key:
// unbounded, every key's state; bounded (MaxKeysInMemory 10000), the
// pane index only.
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
	var out record.Output
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

	for _, bound := range []int{0, 10_000} {
		name := "unbounded"
		if bound > 0 {
			name = fmt.Sprintf("MaxKeysInMemory=%d", bound)
		}
		b.Run(name, func(b *testing.B) {
			var heap float64
			for range b.N {
				start := time.Now()
				st := open()
				c := cfg
				c.Store, c.MaxKeysInMemory = st, bound
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
				switch got := len(op.keys); {
				case bound == 0 && got != n:
					b.Fatalf("restored %d keys, want %d", got, n)
				case bound > 0 && got > bound:
					b.Fatalf("%d keys in memory, want at most %d", got, bound)
				}
				if bound > 0 && (len(op.slices) != 1 || op.slices[0].filter.n != n) {
					b.Fatalf("the index lists %d panes, want 1 with %d keys", len(op.slices), n)
				}
				op.Close(ctx)
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(heap/float64(n), "heap-B/key")
		})
	}
	// Two workers, each restoring the keys routed to it, as the engine's
	// restoreOperators has them: each scans the whole state.
	for _, side := range []bool{false, true} {
		name := "workers=2/one-after-the-other"
		if side {
			name = "workers=2/side-by-side"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				start := time.Now()
				st := open()
				ops := make([]*Operator, 2)
				restore := func(w int) error {
					c := cfg
					c.Store = st
					op, err := New(c)
					if err != nil {
						return err
					}
					ops[w] = op
					return op.Restore(ctx, base, func(k []byte) bool { return len(k) > 0 && int(k[len(k)-1])%2 == w })
				}
				var errs [2]error
				if side {
					var wg sync.WaitGroup
					for w := range 2 {
						wg.Go(func() { errs[w] = restore(w) })
					}
					wg.Wait()
				} else {
					for w := range 2 {
						errs[w] = restore(w)
					}
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/restart")
				b.StopTimer()
				if err := errors.Join(errs[:]...); err != nil {
					b.Fatal(err)
				}
				if got := len(ops[0].keys) + len(ops[1].keys); got != n {
					b.Fatalf("restored %d keys, want %d", got, n)
				}
				for _, op := range ops {
					op.Close(ctx)
				}
				st.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkWindow10MKeys is issue 5's acceptance test: a tumbling window
// operator holding 10M keys (set WEIR_BENCH_KEYS for another count) on a
// badger store, with MaxKeysInMemory 100000. It is skipped unless
// WEIR_BENCH_10M=1, since it takes minutes.
//
// It feeds one record for each of the keys, in batches of 512, without a
// watermark, so that every key's window is open at once; the keys' event
// times spread over 100 one-minute windows, so that firing them, one
// watermark per window, emits 100k results at a time (one OnWatermark
// closing all 10M windows would emit them in one Output, whose records
// alone take gigabytes). Then it fires every window, reading each key back
// from the store. It reports the feeding rate (events/s), the rate of the
// whole run including the firing (total-events/s), the peak RSS of the
// process (VmHWM) after feeding and at the end, the peaks of its anonymous
// and file-backed (badger's memory-mapped tables) parts and of the Go
// runtime's memory, sampled every 100 ms, and the Go heap in use after
// feeding, per key. Most of the heap is badger's (memtables, caches) and
// the garbage the collector lets accumulate: run it with GOMEMLIMIT set,
// as a deployment with a memory bound would be, to hold the heap down.
func BenchmarkWindow10MKeys(b *testing.B) {
	if os.Getenv("WEIR_BENCH_10M") != "1" {
		b.Skip("set WEIR_BENCH_10M=1 to run")
	}
	n := 10_000_000
	if s := os.Getenv("WEIR_BENCH_KEYS"); s != "" {
		fmt.Sscan(s, &n)
	}
	const (
		windows   = 100
		batchSize = 512
		bound     = 100_000
	)
	size := time.Minute
	base := time.Date(2024, 3, 17, 9, 0, 0, 0, time.UTC).UnixMilli()
	perWindow := (n + windows - 1) / windows
	ctx := context.Background()
	for range b.N {
		st, err := state.OpenBadger(state.BadgerOptions{Dir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		op, err := New(Config{Name: "sum", Kind: Tumbling, Size: size, Store: st, MaxKeysInMemory: bound,
			Aggregates: []Aggregate{{Func: AggSum, Field: []string{"amount"}, As: "total"}, {Func: AggCount, As: "n"}}})
		if err != nil {
			b.Fatal(err)
		}
		// Sample the process's resident memory, anonymous (the Go heap,
		// badger's allocations) and file-backed (badger's memory-mapped
		// tables, which the kernel can reclaim), as the run goes.
		var peakAnon, peakFile, peakGo, peakLive atomic.Int64
		samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				anon, file := rss(b)
				peakAnon.Store(max(peakAnon.Load(), anon))
				peakFile.Store(max(peakFile.Load(), file))
				metrics.Read(samples)
				peakGo.Store(max(peakGo.Load(), int64(samples[0].Value.Uint64())))
				peakLive.Store(max(peakLive.Load(), int64(samples[1].Value.Uint64())))
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		batch := make([]record.Record, batchSize)
		keyBuf := make([]byte, 0, batchSize*16)
		value := []byte(`{"amount":12.5}`)
		var out record.Output
		start := time.Now()
		for i := 0; i < n; i += batchSize {
			m := min(batchSize, n-i)
			keyBuf = keyBuf[:0]
			for j := range m {
				k := len(keyBuf)
				keyBuf = fmt.Appendf(keyBuf, "customer-%08d", i+j)
				w := int64((i + j) / perWindow)
				batch[j] = record.Record{Key: keyBuf[k:len(keyBuf):len(keyBuf)], Value: value,
					Timestamp: base + w*size.Milliseconds() + int64(j)}
			}
			if err := op.Process(ctx, batch[:m], &out); err != nil {
				b.Fatal(err)
			}
			if len(out.Records) > 0 || len(out.Dead) > 0 {
				b.Fatalf("feeding emitted %d results and %d dead letters", len(out.Records), len(out.Dead))
			}
		}
		fed := time.Since(start)
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "fed-peak-RSS-MiB")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/float64(n), "heap-B/key")
		b.ReportMetric(float64(len(op.keys)), "keys-in-memory")
		results := 0
		for w := range int64(windows) {
			if err := op.OnWatermark(ctx, base+(w+1)*size.Milliseconds()-1, &out); err != nil {
				b.Fatal(err)
			}
			results += len(out.Records)
			out.Reset()
		}
		if err := op.OnWatermark(ctx, math.MaxInt64, &out); err != nil {
			b.Fatal(err)
		}
		results += len(out.Records)
		total := time.Since(start)
		if results != n {
			b.Fatalf("%d results, want %d", results, n)
		}
		b.ReportMetric(float64(n)/fed.Seconds(), "events/s")
		b.ReportMetric(float64(n)/total.Seconds(), "total-events/s")
		close(stop)
		<-sampled
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(peakAnon.Load())/(1<<20), "peak-anon-RSS-MiB")
		b.ReportMetric(float64(peakFile.Load())/(1<<20), "peak-file-RSS-MiB")
		b.ReportMetric(float64(peakGo.Load())/(1<<20), "peak-Go-MiB")
		b.ReportMetric(float64(peakLive.Load())/(1<<20), "peak-heap-objects-MiB")
		op.Close(ctx)
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// peakRSS returns the process's peak resident set size, VmHWM, in bytes.
func peakRSS(b *testing.B) int64 { return procStatus(b, "VmHWM:") }

// rss returns the process's resident memory, anonymous and file-backed,
// in bytes.
func rss(b *testing.B) (anon, file int64) {
	return procStatus(b, "RssAnon:"), procStatus(b, "RssFile:")
}

// procStatus returns the field of /proc/self/status, in kB, in bytes.
func procStatus(b *testing.B, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Error(err)
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err != nil {
				b.Error(err)
			}
			return kb << 10
		}
	}
	b.Errorf("no %s in /proc/self/status", field)
	return 0
}
