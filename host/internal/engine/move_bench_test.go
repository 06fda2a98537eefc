package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/task"
	"github.com/weir-stream/weir/host/internal/window"
	"github.com/weir-stream/weir/state"
)

// quietSource reads nothing: it tells started that the run began reading
// and waits for the run to stop.
type quietSource struct{ started chan struct{} }

func (quietSource) Name() string                       { return "quiet" }
func (quietSource) Snapshot() (json.RawMessage, error) { return json.RawMessage("0"), nil }
func (quietSource) Restore(json.RawMessage) error      { return nil }
func (s quietSource) Run(ctx context.Context, out *engine.Out) error {
	close(s.started)
	<-ctx.Done()
	return out.Flush()
}

// BenchmarkMovePause measures how long a run sharing its group by task
// pauses when the group gives it one more task: an instance owning 6 of
// 12 tasks of a window holding one open window for each of 1M keys
// (WEIR_BENCH_KEYS) gains a seventh. The pause is the time the next run
// takes to start reading: restoring every task's keys (restore-all, as
// without Kept), only the gained task's (kept), or none, the gained
// task's having been loaded while the last run went on (kept+preloaded;
// the preload's own time is reported apart, as preload-s). The loss/
// cases have the instance lose its seventh task instead: the next run
// restores the six it keeps (loss/restore-all) or has its instances
// forget the seventh's keys (loss/kept).
func BenchmarkMovePause(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("WEIR_BENCH_KEYS"); s != "" {
		fmt.Sscan(s, &n)
	}
	const tasks = 12
	dir := b.TempDir()
	cfg := window.Config{Name: "sum", Kind: window.Tumbling, Size: time.Hour,
		Aggregates: []window.Aggregate{{Func: window.AggSum, Field: []string{"amount"}, As: "total"}, {Func: window.AggCount, As: "n"}}}
	open := func() *state.Badger {
		s, err := state.OpenBadger(state.BadgerOptions{Dir: dir, Checkpointed: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	fillWindow(b, open, cfg, n)
	of := func(k []byte) int32 { return int32(task.Of(k, tasks)) }
	owned := []int32{0, 1, 2, 3, 4, 5}
	gained := append(slices.Clone(owned), 6)
	for _, mode := range []string{"restore-all", "kept", "kept+preloaded", "loss/restore-all", "loss/kept"} {
		before, after := owned, gained
		if strings.HasPrefix(mode, "loss/") {
			before, after = gained, owned
		}
		b.Run(mode, func(b *testing.B) {
			var preload, pauses time.Duration
			for range b.N {
				b.StopTimer()
				st := open()
				kept := engine.NewKept()
				cp, _ := runQuiet(b, st, cfg, before, of, kept, &engine.Checkpoint{Epoch: 1,
					Sources: []engine.SourceCheckpoint{{Name: "quiet", Snapshot: json.RawMessage("0")}}, Times: make([]engine.SourceTimeCheckpoint, 1)})
				if !strings.HasSuffix(mode, "restore-all") {
					kept.Arm(false)
				}
				if mode == "kept+preloaded" {
					start := time.Now()
					if err := kept.Preload(context.Background(), []int32{6}); err != nil {
						b.Fatal(err)
					}
					preload += time.Since(start)
				}
				b.StartTimer()
				_, pause := runQuiet(b, st, cfg, after, of, kept, cp)
				pauses += pause
				b.StopTimer()
				kept.Drop(context.Background())
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(pauses.Seconds()/float64(b.N), "pause-s")
			if preload > 0 {
				b.ReportMetric(preload.Seconds()/float64(b.N), "preload-s")
			}
		})
	}
}

// fillWindow gives every one of n keys an open window in the store in
// dir, and checkpoints it.
func fillWindow(b *testing.B, open func() *state.Badger, cfg window.Config, n int) {
	st := open()
	defer st.Close()
	cfg.Store = st
	op, err := window.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	base := time.Date(2024, 3, 17, 9, 0, 0, 0, time.UTC).UnixMilli()
	batch := make([]record.Record, 512)
	var out record.Output
	for i := 0; i < n; i += len(batch) {
		m := min(len(batch), n-i)
		for j := range m {
			batch[j] = record.Record{Key: fmt.Appendf(nil, "customer-%08d", i+j), Value: []byte(`{"amount":12.5}`), Timestamp: base + int64(j)}
		}
		if err := op.Process(context.Background(), batch[:m], &out); err != nil {
			b.Fatal(err)
		}
		out.Reset()
	}
	if err := st.Checkpoint([]byte("bench")); err != nil {
		b.Fatal(err)
	}
	op.Close(context.Background())
}

// runQuiet runs the window over st with parallelism 2 as an instance
// owning tasks, from restore, until it begins reading, and returns its
// final checkpoint and how long it took to begin.
func runQuiet(b *testing.B, st *state.Badger, cfg window.Config, owned []int32, of func([]byte) int32, kept *engine.Kept, restore *engine.Checkpoint) (*engine.Checkpoint, time.Duration) {
	cfg.Store = st
	var last *engine.Checkpoint
	src := quietSource{started: make(chan struct{})}
	p := &engine.Pipeline{
		Sources: []engine.Source{src},
		Steps: []engine.Step{{Name: "sum", KeyedState: true, New: func(context.Context) (engine.Operator, error) {
			return window.New(cfg)
		}}},
		Sinks:       []engine.Sink{discard{}},
		Parallelism: 2,
		EventTime:   []*engine.EventTime{{}}, // no records: no watermark, nothing fires
		OwnsKey:     func(k []byte) bool { return slices.Contains(owned, of(k)) },
		Tasks:       &engine.Tasks{Of: of, Owned: owned, Kept: kept},
		Checkpointing: &engine.Checkpointing{Interval: time.Hour, Restore: restore,
			Commit: func(_ context.Context, cp *engine.Checkpoint) error { last = cp; return nil }},
	}
	ctx, stop := context.WithCancel(context.Background())
	var pause time.Duration
	start := time.Now()
	go func() {
		<-src.started
		pause = time.Since(start)
		stop()
	}()
	sum, err := p.Run(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if out := sum.Steps[0].Out; out > 0 {
		b.Fatalf("the window fired %d results, want none", out)
	}
	return last, pause
}

type discard struct{}

func (discard) Name() string { return "discard" }
func (discard) Write(_ []record.Record, dead []record.DeadLetter, _ *engine.Ack) ([]record.DeadLetter, error) {
	return dead, nil
}
func (discard) Flush() error { return nil }
func (discard) Close() error { return nil }

var (
	_ engine.WatermarkResumer = (*window.Operator)(nil)
	_ engine.WatermarkResumer = (*window.Rolling)(nil)
)
