package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/dedupe"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/join"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/task"
	"github.com/weir-stream/weir/host/internal/window"
	"github.com/weir-stream/weir/state"
)

var (
	_ engine.WatermarkResumer = (*join.Operator)(nil)
	_ engine.WatermarkResumer = (*dedupe.Operator)(nil)
)

// feedSource hands out its records, then stops its run (stop), as a
// SIGTERM would: what it read drains, and nothing fires for an end of
// input.
type feedSource struct {
	recs []record.Record
	stop func()
}

func (s *feedSource) Name() string                       { return "feed" }
func (s *feedSource) Snapshot() (json.RawMessage, error) { return json.RawMessage("0"), nil }
func (s *feedSource) Restore(json.RawMessage) error      { return nil }
func (s *feedSource) Run(ctx context.Context, out *engine.Out) error {
	for _, r := range s.recs {
		if err := out.Add(r); err != nil {
			return err
		}
	}
	err := out.Flush()
	s.stop()
	<-ctx.Done()
	return err
}

// lines collects what the sink is given.
type lines struct {
	mu  sync.Mutex
	out []string
}

func (l *lines) Name() string { return "lines" }
func (l *lines) Write(recs []record.Record, dead []record.DeadLetter, _ *engine.Ack) ([]record.DeadLetter, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		l.out = append(l.out, string(r.Key)+" "+string(r.Value))
	}
	return dead, nil
}
func (l *lines) Flush() error { return nil }
func (l *lines) Close() error { return nil }

// deadLines collects dead letters into a lines, marked so.
type deadLines struct{ *lines }

func (d deadLines) Write(dl *record.DeadLetter, _ *engine.Ack) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.out = append(d.out, "dead "+string(dl.Record.Key)+" "+string(dl.Record.Value))
	return nil
}

// A run that goes on with the last run's window instances, the gained
// task's restored by the run or preloaded ahead of it, emits the windows a
// run restoring every task emits, on windows that were fired and are kept
// for their allowed lateness as well as open ones. The runs differ only
// where the restoring run lowers its watermark to the adopted task's: it
// fires again the windows its own tasks fired last run and keeps for
// their lateness, which one going on with its instances does not; for the
// adopted task both fire the same windows again.
func TestKeptWindowMatchesRestore(t *testing.T) {
	const tasks = 4
	of := func(k []byte) int32 { return int32(task.Of(k, tasks)) }
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	recs := windowRecords(rand.New(rand.NewPCG(seed, 1)), 4000)
	for _, c := range keptWindows() {
		t.Run(c.name, func(t *testing.T) { keptWindowGain(t, c, of, recs) })
	}
}

// keptOp is a keyed operator the kept-window tests run: new makes an
// instance over store, its state under the name "w".
type keptOp struct {
	name string
	new  func(store state.Store) (engine.Operator, error)
}

// keptWindows are the operators the kept-window tests run: windows of
// each kind, bounded in memory or not, and a rolling operator.
func keptWindows() []keptOp {
	aggs := []window.Aggregate{{Func: window.AggSum, Field: []string{"v"}, As: "sum"}, {Func: window.AggCount, As: "n"}}
	win := func(cfg window.Config) func(state.Store) (engine.Operator, error) {
		return func(store state.Store) (engine.Operator, error) {
			c := cfg // New may be called concurrently (Kept.Preload)
			c.Store = store
			return window.New(c)
		}
	}
	tumbling := window.Config{Name: "w", Kind: window.Tumbling, Size: 10 * time.Millisecond, AllowedLateness: 25 * time.Millisecond, Aggregates: aggs}
	session := window.Config{Name: "w", Kind: window.Session, Gap: 15 * time.Millisecond, AllowedLateness: 10 * time.Millisecond, Aggregates: aggs}
	boundedT, boundedS := tumbling, session
	boundedT.MaxKeysInMemory, boundedS.MaxKeysInMemory = 5, 5
	rolling := func(store state.Store) (engine.Operator, error) {
		return window.NewRolling(window.RollingConfig{Name: "w", Windows: []window.RollingWindow{{Name: "20ms", Range: 20 * time.Millisecond}},
			Aggregates: aggs[:1], Store: store})
	}
	return []keptOp{{"tumbling", win(tumbling)}, {"session", win(session)}, {"tumbling bounded", win(boundedT)},
		{"session bounded", win(boundedS)}, {"rolling", rolling}}
}

func keptWindowGain(t *testing.T, cfg keptOp, of func([]byte) int32, recs []record.Record) {
	var ref []string
	for _, mode := range []string{"restore-all", "kept", "kept+preloaded"} {
		t.Run(mode, func(t *testing.T) {
			store := state.NewMemory()
			kept := engine.NewKept()
			half := len(recs) / 2
			mine, other, gained := []int32{0, 1}, []int32{2, 3}, []int32{0, 1, 2}
			sink := &lines{}
			cpA := runWindow(t, store, cfg, of, mine, kept, pick(recs[:half], of, mine), nil, sink)
			cpB := runWindow(t, store, cfg, of, other, nil, pick(recs[:half], of, other), nil, sink)
			if mode != "restore-all" {
				kept.Arm(false)
			}
			if mode == "kept+preloaded" {
				if err := kept.Preload(context.Background(), []int32{2}); err != nil {
					t.Fatal(err)
				}
			}
			// The run adopting task 2 goes on from the least of its own
			// watermark and the task's.
			cp := *cpA
			cp.Watermark = min(cpA.Watermark, cpB.Watermark)
			_, preloaded := runWindowKept(t, store, cfg, of, gained, kept, pick(recs[half:], of, gained), &cp, sink)
			if mode == "kept+preloaded" && preloaded != 2 {
				t.Fatalf("the run took %d preloaded instances, want 2", preloaded)
			}
			kept.Drop(context.Background())
			got := slices.Sorted(slices.Values(pickLines(sink.out, of, gained)))
			if len(got) == 0 || strings.HasPrefix(got[0], "dead") {
				t.Fatalf("%d results, the first %q: want some, and no record late", len(got), first(got))
			}
			if ref == nil {
				ref = got
				return
			}
			if a, b := slices.Compact(slices.Clone(got)), slices.Compact(slices.Clone(ref)); !slices.Equal(a, b) {
				extra, missing := diff(a, b), diff(b, a)
				t.Fatalf("%d windows, want the %d of a run restoring every task; %d not in it (first %q), %d missing (first %q)",
					len(a), len(b), len(extra), first(extra), len(missing), first(missing))
			}
			if d := diff(got, slices.Compact(slices.Clone(got))); len(pickLines(d, of, []int32{0, 1})) > 0 {
				t.Fatalf("the kept tasks' windows fired again: %q", d)
			}
			again, refAgain := diff(got, slices.Compact(slices.Clone(got))), diff(ref, slices.Compact(slices.Clone(ref)))
			if a, b := pickLines(again, of, []int32{2}), pickLines(refAgain, of, []int32{2}); !slices.Equal(a, b) {
				t.Fatalf("the adopted task's windows fired again %d times, want the %d of a run restoring every task: %q", len(a), len(b), a)
			}
		})
	}
}

// pickLines returns the sink lines whose keys belong to tasks.
func pickLines(lines []string, of func([]byte) int32, tasks []int32) []string {
	var out []string
	for _, l := range lines {
		k, _, _ := strings.Cut(strings.TrimPrefix(l, "dead "), " ")
		if slices.Contains(tasks, of([]byte(k))) {
			out = append(out, l)
		}
	}
	return out
}

// windowRecords returns n records of 60 keys with event times that
// advance a millisecond at a time, one in ten up to 5 ms behind (never
// behind the watermark).
func windowRecords(rng *rand.Rand, n int) []record.Record {
	var out []record.Record
	for i := range n {
		ts := int64(i)
		if rng.IntN(10) == 0 {
			ts -= rng.Int64N(6)
		}
		out = append(out, record.Record{Key: fmt.Appendf(nil, "key-%d-é", rng.IntN(60)), Value: fmt.Appendf(nil, `{"v":%d}`, rng.Int64N(1e6)-5e5),
			Timestamp: ts, Origin: record.Origin{Partition: -1}})
	}
	return out
}

// pick returns the records of tasks.
func pick(recs []record.Record, of func([]byte) int32, tasks []int32) []record.Record {
	var out []record.Record
	for _, r := range recs {
		if slices.Contains(tasks, of(r.Key)) {
			out = append(out, r)
		}
	}
	return out
}

// runWindow runs the window with parallelism 2 as an instance owning
// tasks over recs, from restore, until it has read them, and returns its
// final checkpoint.
func runWindow(t *testing.T, store state.Store, cfg keptOp, of func([]byte) int32, owned []int32, kept *engine.Kept,
	recs []record.Record, restore *engine.Checkpoint, sink *lines) *engine.Checkpoint {
	cp, _ := runWindowKept(t, store, cfg, of, owned, kept, recs, restore, sink)
	return cp
}

// runWindowKept is runWindow, also reporting how many instances the run
// went on with from the last, and how many of them took preloaded ones
// (Tasks.OnKept; -1 if it went on with none).
func runWindowKept(t *testing.T, store state.Store, cfg keptOp, of func([]byte) int32, owned []int32, kept *engine.Kept,
	recs []record.Record, restore *engine.Checkpoint, sink *lines) (*engine.Checkpoint, int) {
	t.Helper()
	if sink == nil {
		sink = &lines{}
	}
	dead := deadLines{sink}
	if restore == nil {
		restore = &engine.Checkpoint{Epoch: 1, Sources: []engine.SourceCheckpoint{{Name: "feed", Snapshot: json.RawMessage("0")}},
			Times: make([]engine.SourceTimeCheckpoint, 1), Watermark: engine.NoWatermark}
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var last *engine.Checkpoint
	p := &engine.Pipeline{
		Sources: []engine.Source{&feedSource{recs: recs, stop: stop}},
		Steps: []engine.Step{{Name: "w", KeyedState: true, New: func(ctx context.Context) (engine.Operator, error) {
			return cfg.new(store)
		}}},
		Sinks:       []engine.Sink{sink},
		DeadLetter:  dead,
		BatchSize:   32,
		Parallelism: 2,
		EventTime:   []*engine.EventTime{{MaxOutOfOrderness: 5 * time.Millisecond}},
		OwnsKey:     func(k []byte) bool { return slices.Contains(owned, of(k)) },
		Checkpointing: &engine.Checkpointing{Interval: time.Hour, Restore: restore,
			Commit: func(_ context.Context, cp *engine.Checkpoint) error { last = cp; return nil }},
	}
	preloaded := -1
	if kept != nil {
		p.Tasks = &engine.Tasks{Of: of, Owned: owned, Kept: kept, OnKept: func(_, n int) { preloaded = n }}
	}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return last, preloaded
}

// diff returns the lines of a, sorted, that b lacks, as multisets.
func diff(a, b []string) []string {
	var out []string
	i := 0
	for _, x := range a {
		for i < len(b) && b[i] < x {
			i++
		}
		if i < len(b) && b[i] == x {
			i++
			continue
		}
		out = append(out, x)
	}
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// A run whose instance lost a task goes on with the last run's window
// instances, which forget the lost task's keys: it emits what a run
// restoring the tasks it kept emits, nothing for the lost task's keys,
// and leaves their state in the store as it was.
func TestKeptWindowLoss(t *testing.T) {
	const tasks = 4
	of := func(k []byte) int32 { return int32(task.Of(k, tasks)) }
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	recs := windowRecords(rand.New(rand.NewPCG(seed, 1)), 4000)
	half := len(recs) / 2
	all, rest := []int32{0, 1, 2}, []int32{0, 1}
	for _, c := range keptWindows() {
		t.Run(c.name, func(t *testing.T) {
			var ref []string
			for _, mode := range []string{"restore-all", "kept"} {
				store := state.NewMemory()
				kept := engine.NewKept()
				cp := runWindow(t, store, c, of, all, kept, pick(recs[:half], of, all), nil, nil)
				lost := entriesOf(t, store, "w", of, 2)
				if mode == "kept" {
					kept.Arm(false)
				}
				sink := &lines{}
				_, preloaded := runWindowKept(t, store, c, of, rest, kept, pick(recs[half:], of, rest), cp, sink)
				if wentOn := preloaded >= 0; wentOn != (mode == "kept") {
					t.Fatalf("%s: the run went on with the kept instances: %t", mode, wentOn)
				}
				kept.Drop(context.Background())
				if after := entriesOf(t, store, "w", of, 2); !slices.Equal(after, lost) || len(lost) == 0 {
					t.Fatalf("%s: the lost task's %d store entries became %d", mode, len(lost), len(after))
				}
				got := slices.Sorted(slices.Values(sink.out))
				if l := pickLines(got, of, []int32{2}); len(l) > 0 {
					t.Fatalf("%s: %d results for the lost task's keys, the first %q", mode, len(l), l[0])
				}
				if ref == nil {
					ref = got
					continue
				}
				if !slices.Equal(got, ref) {
					extra, missing := diff(got, ref), diff(ref, got)
					t.Fatalf("%d results, want the %d of a run restoring its tasks; %d not in it (first %q), %d missing (first %q)",
						len(got), len(ref), len(extra), first(extra), len(missing), first(missing))
				}
			}
		})
	}
}

// entriesOf returns the store's entries of operator name for the keys of
// task, as key=value lines.
func entriesOf(t *testing.T, store *state.Memory, name string, of func([]byte) int32, task int32) []string {
	t.Helper()
	prefix := state.OperatorPrefix(nil, name)
	var out []string
	err := store.Scan(prefix, func(k, v []byte) error {
		rk, _, ok := state.SplitRest(k[len(prefix):])
		if ok && rk != nil && of(rk) == task {
			out = append(out, fmt.Sprintf("%x=%x", k, v))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
