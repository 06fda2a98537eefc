package nexmark_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/nexmark"
	"github.com/weir-stream/weir/host/internal/record"
)

// nativeQ1 is Nexmark q1's map as native Go: the same work as the
// examples/nexmark/plugins/currency Wasm plugin (find the price, write
// price × 0.908 in its place, keep every other byte).
type nativeQ1 struct{ buf []byte }

func (nativeQ1) Name() string                { return "to-euros" }
func (nativeQ1) Close(context.Context) error { return nil }
func (o *nativeQ1) Process(_ context.Context, in []record.Record, out *record.Output) error {
	for _, r := range in {
		v, err := wjson.Get(r.Value, "price")
		if err != nil || v.Kind != wjson.Number {
			return errors.New("bid has no numeric price")
		}
		p, err := v.Float()
		if err != nil {
			return err
		}
		at := cap(r.Value) - cap(v.Raw)
		o.buf = append(o.buf[:0], r.Value[:at]...)
		o.buf = wjson.AppendFloat(o.buf, p*0.908)
		o.buf = append(o.buf, r.Value[at+len(v.Raw):]...)
		r.Value = out.Arena.Copy(o.buf)
		out.Records = append(out.Records, r)
	}
	return nil
}

// BenchmarkQ1 runs Nexmark q1 (bids → currency map → discard) with the map
// as native Go and as the Go SDK Wasm plugin, over the bids of b.N events,
// event time from the dateTime field as in examples/nexmark/q1.yaml. Run
// it on one core for per-core figures:
//
//	go test -run='^$' -bench=Q1 -cpu=1 -benchtime=2000000x ./host/internal/nexmark/
func BenchmarkQ1(b *testing.B) {
	src := func(n int) engine.Source {
		return nexmark.NewSource("bids", nexmark.SourceConfig{Count: int64(n), Kinds: nexmark.KindBid,
			Config: nexmark.Config{FirstEventRate: 100_000}})
	}
	et := []*engine.EventTime{{Field: []string{"dateTime"}}}
	b.Run("native", func(b *testing.B) {
		p := &engine.Pipeline{
			Sources:   []engine.Source{src(b.N)},
			Steps:     []engine.Step{{Name: "to-euros", New: func(context.Context) (engine.Operator, error) { return &nativeQ1{}, nil }}},
			Sinks:     []engine.Sink{engine.NewDiscardSink("out")},
			EventTime: et,
		}
		start, cpu := time.Now(), cpuTime()
		sum, err := p.Run(context.Background())
		report(b, start, cpu, sum.Sinks[0].In, err)
	})
	b.Run("wasm", func(b *testing.B) {
		plugin, err := filepath.Abs("../../../examples/nexmark/plugins/currency")
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), "q1.yaml")
		doc := fmt.Sprintf(`name: q1
sources: [{name: bids, type: nexmark, count: %d, kinds: [bid], first_event_rate: 100000, event_time: {field: dateTime}}]
operators: [{name: to-euros, type: map, plugin: %q}]
sinks: [{name: out, type: discard}]
`, b.N, plugin)
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		p, err := host.Load(ctx, path, host.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		b.ResetTimer()
		start, cpu := time.Now(), cpuTime()
		sum, err := p.Run(ctx)
		var n int64
		if err == nil {
			n = sum.Stages[len(sum.Stages)-1].In
		}
		report(b, start, cpu, n, err)
	})
}

// cpuTime is the process's user and system CPU time so far: on a shared
// machine, a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(b *testing.B, start time.Time, cpu0 time.Duration, bids int64, err error) {
	b.Helper()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if want := int64(b.N) / 50 * 46; bids < want {
		b.Fatalf("%d bids reached the sink, want at least %d", bids, want)
	}
	b.ReportMetric(float64(bids)/elapsed.Seconds(), "bids/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(bids), "ns/bid")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(bids), "cpu-ns/bid")
}
