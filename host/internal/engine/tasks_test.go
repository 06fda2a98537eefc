package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// listSource hands out its records once per run; it snapshots nothing
// (each run of the tests gets the records it should read). during, if
// set, is called once half of them are handed out, the rest waiting.
type listSource struct {
	recs   []record.Record
	during func()
}

func (s *listSource) Name() string                       { return "list" }
func (s *listSource) Snapshot() (json.RawMessage, error) { return json.RawMessage("0"), nil }
func (s *listSource) Restore(json.RawMessage) error      { return nil }
func (s *listSource) Run(ctx context.Context, out *Out) error {
	for i, r := range s.recs {
		if ctx.Err() != nil {
			break
		}
		if i == len(s.recs)/2 && s.during != nil {
			if err := out.Flush(); err != nil {
				return err
			}
			s.during()
		}
		if err := out.Add(r); err != nil {
			return err
		}
	}
	return out.Flush()
}

// restoreCount counts what the summers of a test restored.
type restoreCount struct {
	mu    sync.Mutex
	calls int
	keys  map[string]int // restored key → times
}

func (c *restoreCount) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[key]++
}

func (c *restoreCount) reset() (calls int, keys map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, keys = c.calls, c.keys
	c.calls, c.keys = 0, map[string]int{}
	return calls, keys
}

// countingSummer is a summer that counts what it restores.
type countingSummer struct {
	summer
	count *restoreCount
}

func (o *countingSummer) Restore(ctx context.Context, wm int64, owns func([]byte) bool) error {
	o.count.mu.Lock()
	o.count.calls++
	o.count.mu.Unlock()
	return o.summer.Restore(ctx, wm, func(k []byte) bool {
		if owns(k) {
			o.count.add(string(k))
			return true
		}
		return false
	})
}

// ResumeWatermark makes a countingSummer an engine.WatermarkResumer; it
// has no watermark.
func (o *countingSummer) ResumeWatermark(int64) {}

// Forget makes a countingSummer an engine.Forgetter.
func (o *countingSummer) Forget(owns func([]byte) bool) {
	for k := range o.sums {
		if !owns([]byte(k)) {
			delete(o.sums, k)
		}
	}
}

// taskRig runs the summing pipeline as one instance of several sharing
// 4 tasks by key, each run reading the records of the tasks it owns.
type taskRig struct {
	t     *testing.T
	store *state.Memory
	keys  []string
	recs  []record.Record // all records, in order
	count *restoreCount
	of    func([]byte) int32
	sink  *memSink
	// preloaded is how many preloaded instances the last run took
	// (Tasks.OnKept).
	preloaded int
	// during, if set, is called by the next run's source once it has
	// handed out half of its records (listSource.during).
	during func()
}

func newTaskRig(t *testing.T, seed uint64) *taskRig {
	rng := rand.New(rand.NewPCG(seed, 1))
	rg := &taskRig{t: t, store: state.NewMemory(), count: &restoreCount{keys: map[string]int{}}, sink: &memSink{}}
	for i := range 300 {
		rg.keys = append(rg.keys, fmt.Sprintf("k%d-%x", i, rng.Uint64()))
	}
	for i := range 6000 {
		k := rg.keys[rng.IntN(len(rg.keys))]
		rg.recs = append(rg.recs, record.Record{Key: []byte(k), Value: fmt.Appendf(nil, `{"i":%d}`, rng.Int64N(2000)-1000),
			Timestamp: int64(i), Origin: record.Origin{Partition: -1}})
	}
	rg.of = func(k []byte) int32 { return int32(hashKey(append([]byte("task"), k...)) % 4) }
	return rg
}

// part returns the records in [from, to) of the tasks owned.
func (rg *taskRig) part(from, to int, owned []int32) []record.Record {
	var out []record.Record
	for _, r := range rg.recs[from:to] {
		if slices.Contains(owned, rg.of(r.Key)) {
			out = append(out, r)
		}
	}
	return out
}

// run runs the records of owned tasks in [from, to), from restore, and
// returns its final checkpoint.
func (rg *taskRig) run(from, to int, owned []int32, kept *Kept, restore *Checkpoint) *Checkpoint {
	rg.t.Helper()
	var last *Checkpoint
	rg.preloaded = 0
	p := &Pipeline{
		Sources: []Source{&listSource{recs: rg.part(from, to, owned), during: rg.during}},
		Steps: []Step{{Name: "sum", KeyedState: true, New: func(context.Context) (Operator, error) {
			return &countingSummer{summer: summer{store: rg.store, sums: map[string]int64{}, restored: new(atomic.Int64)}, count: rg.count}, nil
		}}},
		Sinks:       []Sink{rg.sink},
		BatchSize:   16,
		Parallelism: 2,
		OwnsKey:     func(k []byte) bool { return slices.Contains(owned, rg.of(k)) },
		Tasks:       &Tasks{Of: rg.of, Owned: owned, Kept: kept, OnKept: func(_, p int) { rg.preloaded = p }},
		Checkpointing: &Checkpointing{Interval: time.Hour, Restore: restore,
			Commit: func(_ context.Context, cp *Checkpoint) error { last = cp; return nil }},
	}
	if _, err := p.Run(context.Background()); err != nil {
		rg.t.Fatal(err)
	}
	return last
}

// check compares each key's sums with a brute-force reference over the
// records of [0, to).
func (rg *taskRig) check(to int) {
	rg.t.Helper()
	want := map[string][]string{}
	sums := map[string]int64{}
	for _, r := range rg.recs[:to] {
		var v struct{ I int64 }
		json.Unmarshal(r.Value, &v)
		k := string(r.Key)
		sums[k] += v.I
		want[k] = append(want[k], fmt.Sprintf(`{"k":%q,"i":%d,"sum":%d}`, k, v.I, sums[k]))
	}
	got := byKey(rg.t, rg.sink.snapshot())
	for _, k := range rg.keys {
		if !slices.Equal(got[k], want[k]) {
			rg.t.Fatalf("key %s: got %d results %v, want %d %v", k, len(got[k]), got[k], len(want[k]), want[k])
		}
	}
}

// keysOf returns the keys of tasks that records of [0, to) have.
func (rg *taskRig) keysOf(to int, tasks ...int32) map[string]int {
	out := map[string]int{}
	for _, r := range rg.recs[:to] {
		if slices.Contains(tasks, rg.of(r.Key)) {
			out[string(r.Key)] = 1
		}
	}
	return out
}

// A run that the group only gave tasks goes on with the last run's
// instances: only the gained tasks' keys are restored, by the next run or
// ahead of it (Preload), and every key's results continue exactly. A run
// whose Kept was not armed restores every key it owns, as before.
func TestKeptAcrossGain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		arm     bool
		preload bool
	}{
		{name: "gain restores only the new task", arm: true},
		{name: "gain preloaded ahead of the run", arm: true, preload: true},
		{name: "not armed restores everything"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newTaskRig(t, uint64(len(tc.name)))
			kept := NewKept()
			// Two instances: this one with tasks 0 and 1, another with 2
			// and 3; then this one gains task 2.
			cp := rg.run(0, 3000, []int32{0, 1}, kept, nil)
			other := rg.run(0, 3000, []int32{2, 3}, nil, nil)
			rg.run(3000, 4500, []int32{3}, nil, other)
			rg.count.reset()
			if tc.arm {
				kept.Arm(false)
			}
			if tc.preload {
				if err := kept.Preload(context.Background(), []int32{2}); err != nil {
					t.Fatal(err)
				}
				_, keys := rg.count.reset()
				if want := rg.keysOf(3000, 2); !maps.Equal(keys, want) {
					t.Fatalf("preloaded %d keys, want the %d of task 2", len(keys), len(want))
				}
			}
			rg.run(3000, 4500, []int32{0, 1, 2}, kept, cp)
			_, keys := rg.count.reset()
			var want map[string]int
			switch {
			case tc.preload:
				want = map[string]int{}
				if got := rg.preloaded; got != 2 {
					t.Fatalf("the run took %d preloaded instances, want 2 (one per worker)", got)
				}
			case tc.arm:
				want = rg.keysOf(3000, 2)
			default:
				want = rg.keysOf(3000, 0, 1, 2)
			}
			if !maps.Equal(keys, want) {
				t.Fatalf("the run restored %d keys, want %d", len(keys), len(want))
			}
			rg.check(4500)
			if err := kept.Drop(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A run whose instance lost a task goes on with the last run's instances,
// which forget the lost task's keys: it restores nothing, and every key's
// results continue exactly, the lost task's at its new owner.
func TestKeptAcrossLoss(t *testing.T) {
	rg := newTaskRig(t, 11)
	kept := NewKept()
	cp := rg.run(0, 3000, []int32{0, 1, 2}, kept, nil)
	other := rg.run(0, 3000, []int32{3}, nil, nil)
	kept.Arm(false)
	rg.count.reset()
	rg.run(3000, 4500, []int32{0, 1}, kept, cp)
	if calls, keys := rg.count.reset(); calls != 0 || len(keys) != 0 {
		t.Fatalf("the run that lost task 2 restored %d times, %d keys; want none", calls, len(keys))
	}
	rg.run(3000, 4500, []int32{2, 3}, nil, other)
	rg.check(4500)
	kept.Drop(context.Background())
}

// Preload makes the gained task's instances while the run goes on with
// its own tasks, reading the store they write (run with -race), and the
// next run takes them, restoring nothing.
func TestPreloadBesideRun(t *testing.T) {
	rg := newTaskRig(t, 5)
	kept := NewKept()
	other := rg.run(0, 3000, []int32{2, 3}, nil, nil)
	rg.during = func() {
		if err := kept.Preload(context.Background(), []int32{2}); err != nil {
			t.Error(err)
		}
	}
	cp := rg.run(0, 3000, []int32{0, 1}, kept, nil)
	rg.during = nil
	kept.Arm(false)
	rg.count.reset()
	rg.run(3000, 4500, []int32{0, 1, 2}, kept, cp)
	if calls, keys := rg.count.reset(); calls != 0 || len(keys) != 0 || rg.preloaded != 2 {
		t.Fatalf("the run restored %d times (%d keys) and took %d preloaded instances; want none, and 2", calls, len(keys), rg.preloaded)
	}
	rg.run(3000, 4500, []int32{3}, nil, other)
	rg.check(4500)
	kept.Drop(context.Background())
}
