package window

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// The restore tests are differential: a random run through one operator
// must give exactly the output of the same run stopped at random points,
// each time closing the operator and restoring a new one from the store.

// step is one call of a run: Process(recs), or OnWatermark(wm) when isWM,
// at processing time now.
type step struct {
	recs []record.Record
	wm   int64
	isWM bool
	now  time.Time
}

// opUnderTest is what the runs drive: an Operator or a Rolling.
type opUnderTest interface {
	Process(context.Context, []record.Record, *record.Output) error
	OnWatermark(context.Context, int64, *record.Output) error
	Restore(context.Context, int64, func([]byte) bool) error
	Close(context.Context) error
}

// listAgg is a Custom aggregator whose accumulator lists the values of
// field v in the order added (merged: a's, then b's): any difference in
// what was added, or in which order, shows in its result.
type listAgg struct{}

func (listAgg) Create() []byte { return []byte{} }

func (listAgg) Add(acc []byte, rec *record.Record) ([]byte, error) {
	v, err := wjson.Get(rec.Value, "v")
	if err != nil {
		return nil, err
	}
	i, err := v.Int()
	if err != nil {
		return nil, fmt.Errorf("v: %w", err)
	}
	return binary.AppendVarint(acc, i), nil
}

func (listAgg) Merge(a, b []byte) ([]byte, error) { return append(a, b...), nil }

func (listAgg) Result(acc []byte, _ ResultContext) ([]byte, error) {
	out := []byte{'['}
	for len(acc) > 0 {
		x, n := binary.Varint(acc)
		if n <= 0 {
			return nil, errors.New("bad accumulator")
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(out, x, 10)
		acc = acc[n:]
	}
	return append(out, ']'), nil
}

// restoreAggs are the built-in aggregates of the window tests; the small
// Exact makes count_distinct switch to its HyperLogLog.
var restoreAggs = []Aggregate{
	{Func: AggCount, As: "n"},
	{Func: AggCount, Field: []string{"v"}, As: "nv"},
	{Func: AggSum, Field: []string{"v"}, As: "sum"},
	{Func: AggMin, Field: []string{"v"}, As: "min"},
	{Func: AggMax, Field: []string{"v"}, As: "max"},
	{Func: AggFirst, Field: []string{"v"}, As: "first"},
	{Func: AggLast, As: "last"},
	{Func: AggCountDistinct, Field: []string{"v"}, As: "d", Exact: 4},
	{Func: AggAvg, Field: []string{"v"}, As: "avg"},
}

var restoreKeys = []string{"a", "b", "c", "dd", "", "\x00nil"} // "\x00nil": the nil key

func restoreKey(k string) []byte {
	switch k {
	case "\x00nil":
		return nil
	case "":
		return []byte{}
	}
	return []byte(k)
}

// windowSteps returns a random run over a window operator: batches of
// out-of-order, late and malformed records, and watermarks, some going
// back, ending with the final watermark.
func windowSteps(rng *rand.Rand) []step {
	var steps []step
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	cur := rng.Int64N(20000) - 10000
	wm := int64(math.MinInt64)
	// Half the runs have times in steps of 100 ms: keys then often have
	// windows or sessions closing together.
	quantum := 1 + 99*rng.Int64N(2)
	var id int64
	for n := 150 + rng.IntN(150); id < int64(n); {
		batch := make([]record.Record, 1+rng.IntN(12))
		for i := range batch {
			cur += rng.Int64N(60)
			ts := cur - rng.Int64N(1200)
			if rng.IntN(20) == 0 {
				ts = cur - 3000 - rng.Int64N(3000) // very late
			}
			ts = record.FloorDiv(ts, quantum) * quantum
			var v string
			switch rng.IntN(30) {
			case 0:
				v = `{"v":1.5}` // the custom aggregator rejects it
			case 1:
				v = `{"w":1}` // no v: sum and the others reject it
			case 2:
				v = `not json`
			default:
				v = fmt.Sprintf(`{"v":%d}`, rng.Int64N(21)-10)
			}
			batch[i] = record.Record{Key: restoreKey(restoreKeys[rng.IntN(len(restoreKeys))]), Value: []byte(v), Timestamp: ts,
				Origin: record.Origin{Partition: -1, Offset: id}}
			id++
		}
		now = now.Add(time.Duration(rng.IntN(150)) * time.Millisecond)
		steps = append(steps, step{recs: batch, now: now})
		switch rng.IntN(10) {
		case 0, 1, 2, 3:
			wm = max(wm, cur-rng.Int64N(1500))
			steps = append(steps, step{isWM: true, wm: wm, now: now})
		case 4:
			if wm > math.MinInt64+100 {
				steps = append(steps, step{isWM: true, wm: wm - 100, now: now}) // ignored
			}
		}
	}
	return append(steps, step{isWM: true, wm: math.MaxInt64, now: now.Add(time.Second)})
}

// rollingSteps is windowSteps for a Rolling operator.
func rollingSteps(rng *rand.Rand) []step {
	var steps []step
	cur := rng.Int64N(20000) - 10000
	wm := int64(math.MinInt64)
	var id int64
	for n := 150 + rng.IntN(150); id < int64(n); {
		batch := make([]record.Record, 1+rng.IntN(12))
		for i := range batch {
			cur += rng.Int64N(8)
			ts := cur - rng.Int64N(25)
			var v string
			switch rng.IntN(30) {
			case 0:
				v = `{"id":0}` // no amount
			case 1:
				v = `[1]`
			default:
				amt := strconv.FormatInt(rng.Int64N(21)-5, 10)
				if rng.IntN(2) == 0 {
					amt = strconv.FormatFloat(math.Round(rng.Float64()*2000-500)/100, 'f', 2, 64)
				}
				v = fmt.Sprintf(`{"id":%d,"amount":%s`, id, amt)
				if rng.IntN(3) > 0 {
					v += `,"opt":1`
				}
				v += "}"
			}
			batch[i] = record.Record{Key: restoreKey(restoreKeys[rng.IntN(len(restoreKeys))]), Value: []byte(v), Timestamp: ts,
				Origin: record.Origin{Partition: -1, Offset: id}}
			id++
		}
		steps = append(steps, step{recs: batch})
		switch rng.IntN(4) {
		case 0, 1:
			wm = max(wm, cur-rng.Int64N(20))
			steps = append(steps, step{isWM: true, wm: wm})
		case 2:
			if wm > math.MinInt64+100 {
				steps = append(steps, step{isWM: true, wm: wm - 5}) // ignored
			}
		}
	}
	return append(steps, step{isWM: true, wm: math.MaxInt64})
}

// logOutput appends what out holds, tagged with the step, to log and
// resets out.
func logOutput(log []string, i int, out *record.Output) []string {
	for _, r := range out.Records {
		log = append(log, fmt.Sprintf("step %d: %s @%d %s origin=%+v", i, keyText(r.Key), r.Timestamp, r.Value, r.Origin))
	}
	for _, d := range out.Dead {
		log = append(log, fmt.Sprintf("step %d: dead %s #%d %s: %s", i, keyText(d.Record.Key), d.Record.Origin.Offset, d.Stage, d.Reason))
	}
	out.Reset()
	return log
}

// storeLike is a Store that Restore can scan.
type storeLike interface {
	state.Store
	state.Scanner
}

// runner runs steps through operators made by newOp on a store, restarting
// at the given steps.
type runner struct {
	t     *testing.T
	newOp func(st state.Store) opUnderTest
	now   *time.Time // the operators' clock
	// reopen, if set, is called at each restart with the store, after the
	// operator is closed, and returns the store to use from then on (the
	// same database, reopened).
	reopen func(storeLike) storeLike
}

func (r *runner) run(st storeLike, steps []step, cuts []int) []string {
	ctx := context.Background()
	op := r.newOp(st)
	var (
		log []string
		out record.Output
	)
	wm := int64(math.MinInt64)
	for i, s := range steps {
		if slices.Contains(cuts, i) {
			if err := op.Close(ctx); err != nil {
				r.t.Fatal(err)
			}
			if r.reopen != nil {
				st = r.reopen(st)
			}
			op = r.newOp(st)
			if err := op.Restore(ctx, wm, nil); err != nil {
				r.t.Fatalf("step %d: Restore: %v", i, err)
			}
		}
		*r.now = s.now
		var err error
		if s.isWM {
			err = op.OnWatermark(ctx, s.wm, &out)
			wm = max(wm, s.wm)
		} else {
			err = op.Process(ctx, s.recs, &out)
		}
		if err != nil {
			r.t.Fatalf("step %d: %v", i, err)
		}
		log = logOutput(log, i, &out)
	}
	return log
}

// dump returns every entry of st under operator name.
func dump(t *testing.T, st state.Scanner, name string) []string {
	t.Helper()
	var d []string
	if err := st.Scan(scanPrefix(name), func(k, v []byte) error {
		d = append(d, fmt.Sprintf("%x=%x", k, v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return d
}

// windowDump is dump for a window operator, op, with the ranks of mode
// Every normalized: a run restarted gives a unit that becomes pending a
// different rank (the counter restarts from the highest stored), in the
// same order. Ranks become their place among the pending units' ranks, 0
// for units not pending; the operator entry keeps only the next tick.
func windowDump(t *testing.T, st state.Scanner, op *Operator) []string {
	t.Helper()
	type entry struct{ k, v []byte }
	var es []entry
	var mark uint64
	prefix := scanPrefix(op.cfg.Name)
	if err := st.Scan(prefix, func(k, v []byte) error {
		es = append(es, entry{slices.Clone(k), slices.Clone(v)})
		if _, uk, err := splitKey(k[len(prefix):]); err == nil && uk[0] == tagMeta {
			mark, _, err = decodeMeta(v)
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	units := make([]unit, len(es))
	var ranks []uint64
	for i, e := range es {
		_, uk, err := splitKey(e.k[len(prefix):])
		if err != nil {
			t.Fatal(err)
		}
		if uk[0] == tagMeta {
			continue
		}
		var start int64
		if len(uk) == 9 {
			start = int64(binary.BigEndian.Uint64(uk[1:]) ^ 1<<63)
		}
		if units[i], err = op.decodeUnit(e.v, start); err != nil {
			t.Fatalf("%x: %v", e.k, err)
		}
		if units[i].rank <= mark {
			units[i].rank = 0
		} else {
			ranks = append(ranks, units[i].rank)
		}
	}
	slices.Sort(ranks)
	var d []string
	for i, e := range es {
		if _, uk, _ := splitKey(e.k[len(prefix):]); uk[0] == tagMeta {
			_, next, _ := decodeMeta(e.v)
			d = append(d, fmt.Sprintf("%x=next tick %d", e.k, next))
			continue
		}
		u := &units[i]
		if u.rank != 0 {
			r, _ := slices.BinarySearch(ranks, u.rank)
			u.rank = uint64(r + 1)
		}
		d = append(d, fmt.Sprintf("%x=%x", e.k, op.appendUnit(nil, u)))
	}
	return d
}

// randomCuts returns 1 to 3 distinct steps to restart at.
func randomCuts(rng *rand.Rand, n int) []int {
	var cuts []int
	for range 1 + rng.IntN(3) {
		cuts = append(cuts, rng.IntN(n))
	}
	return cuts
}

func openBadger(t *testing.T, dir string) *state.Badger {
	t.Helper()
	b, err := state.OpenBadger(state.BadgerOptions{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// badgerStore returns a Badger store in a new directory, and makes r close
// and reopen it at each restart (r.reopen ignores its argument: it reopens
// the store open last).
func badgerStore(t *testing.T, r *runner) storeLike {
	dir := t.TempDir()
	var open *state.Badger
	r.reopen = func(storeLike) storeLike {
		if err := open.Close(); err != nil {
			t.Fatal(err)
		}
		open = openBadger(t, dir)
		return open
	}
	open = openBadger(t, dir)
	t.Cleanup(func() { open.Close() })
	return open
}

// compareRuns checks that the restarted run's output and final store equal
// the uninterrupted run's.
func compareRuns(t *testing.T, what string, want, got []string, wantStore, gotStore []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the run emitted nothing", what)
	}
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("%s: output %d of %d differs:\ngot  %s\nwant %s", what, i, len(want), got[i], want[i])
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s: %d outputs, want %d; first extra or missing: %q", what, len(got), len(want),
			append(got[min(len(want), len(got)):], want[min(len(want), len(got)):]...)[0])
	}
	equalStrings(t, what+": final store", gotStore, wantStore)
}

type windowCase struct {
	name string
	cfg  Config
}

// windowCases are the window configurations of the restore tests: every
// kind, with and without lateness, in every emit mode, with built-in
// aggregates and a Custom aggregator; and, with lateness in mode Every,
// both together (AggCustom).
func windowCases() []windowCase {
	var cases []windowCase
	for _, kind := range []Kind{Tumbling, Sliding, Session, Count, Cumulate} {
		for _, late := range []time.Duration{0, 700 * time.Millisecond} {
			if kind == Count && late > 0 {
				continue
			}
			for _, emit := range []EmitMode{OnClose, OnUpdate, Every} {
				for _, custom := range []int{0, 1, 2} { // built-in, custom, mixed
					if custom == 2 && (late == 0 && kind != Count || emit != Every) {
						continue
					}
					cfg := Config{Kind: kind, AllowedLateness: late, Emit: emit, TimeFormat: EpochMillis}
					switch kind {
					case Tumbling:
						cfg.Size = time.Second
					case Sliding:
						cfg.Size, cfg.Slide = time.Second, 400*time.Millisecond
					case Session:
						cfg.Gap = 300 * time.Millisecond
					case Count:
						cfg.Count = 4
					case Cumulate:
						cfg.Size, cfg.Slide = 1200*time.Millisecond, 400*time.Millisecond
					}
					if emit == Every {
						cfg.EmitInterval = 200 * time.Millisecond
					}
					agg := "builtin"
					switch custom {
					case 0:
						cfg.Aggregates = restoreAggs
					case 1:
						cfg.Custom, agg = listAgg{}, "custom"
					case 2:
						mixed := append(slices.Clone(restoreAggs[:4]), Aggregate{Func: AggCustom, As: "list"})
						cfg.Custom, cfg.Aggregates, agg = listAgg{}, append(mixed, restoreAggs[4:]...), "mixed"
					}
					cases = append(cases, windowCase{fmt.Sprintf("%v/late=%v/%v/%s", kind, late, emit, agg), cfg})
				}
			}
		}
	}
	return cases
}

func (c windowCase) runner(t *testing.T) *runner {
	r := &runner{t: t, now: new(time.Time)}
	cfg := c.cfg
	cfg.Name = "win"
	cfg.Clock = func() time.Time { return *r.now }
	r.newOp = func(st state.Store) opUnderTest {
		cfg := cfg
		cfg.Store = st
		op, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	return r
}

// TestRestoreWindowDifferential: for random runs and every window
// configuration, restarting at random steps (at the watermark reached
// then) on the same store changes neither the output, nor its order, nor
// the final store.
func TestRestoreWindowDifferential(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for ci, c := range windowCases() {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(seeds) {
				rng := rand.New(rand.NewPCG(seed, uint64(ci)))
				steps := windowSteps(rng)
				r := c.runner(t)
				base := state.NewMemory()
				want := r.run(base, steps, nil)
				st := state.NewMemory()
				cuts := randomCuts(rng, len(steps))
				got := r.run(st, steps, cuts)
				op := r.newOp(state.NewMemory()).(*Operator)
				compareRuns(t, fmt.Sprintf("seed %d, restarts before steps %v", seed, cuts), want, got, windowDump(t, base, op), windowDump(t, st, op))
				// Bounded mode, uninterrupted and restarted, emits and
				// stores exactly what the unbounded operator does.
				for _, bound := range []int{1, 3} {
					rb := c.bounded(bound).runner(t)
					for _, cuts := range [][]int{nil, cuts} {
						st := state.NewMemory()
						got := rb.run(st, steps, cuts)
						compareRuns(t, fmt.Sprintf("seed %d, MaxKeysInMemory %d, restarts before steps %v", seed, bound, cuts), want, got, windowDump(t, base, op), windowDump(t, st, op))
					}
				}
			}
		})
	}
}

// bounded returns c with MaxKeysInMemory set.
func (c windowCase) bounded(n int) windowCase {
	c.cfg.MaxKeysInMemory = n
	return c
}

// TestRestoreWindowBadger is TestRestoreWindowDifferential on a Badger
// store closed and reopened at each restart, for one configuration of each
// kind.
func TestRestoreWindowBadger(t *testing.T) {
	for ci, c := range windowCases() {
		if c.cfg.AllowedLateness == 0 && c.cfg.Kind != Count || c.cfg.Emit != Every && c.cfg.Emit != OnUpdate ||
			c.cfg.Emit == OnUpdate && c.cfg.Custom == nil || c.cfg.Emit == Every && c.cfg.Custom != nil {
			continue // Every with built-ins, OnUpdate with Custom, with lateness
		}
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(99, uint64(ci)))
			steps := windowSteps(rng)
			r := c.runner(t)
			base := state.NewMemory()
			want := r.run(base, steps, nil)
			st := badgerStore(t, r)
			cuts := randomCuts(rng, len(steps))
			got := r.run(st, steps, cuts)
			// The last reopened store is the one to read.
			final := r.reopen(nil)
			op := r.newOp(state.NewMemory()).(*Operator)
			compareRuns(t, fmt.Sprintf("restarts before steps %v", cuts), want, got, windowDump(t, base, op), windowDump(t, final, op))
			// Bounded mode on Badger, which the operator reads back.
			for _, bound := range []int{1, 3} {
				rb := c.bounded(bound).runner(t)
				st := badgerStore(t, rb)
				got := rb.run(st, steps, cuts)
				final := rb.reopen(nil)
				compareRuns(t, fmt.Sprintf("MaxKeysInMemory %d, restarts before steps %v", bound, cuts), want, got, windowDump(t, base, op), windowDump(t, final, op))
			}
		})
	}
}

// TestBoundedWindowBadger runs every window configuration in bounded mode
// on a Badger store with a small write-back cache, so that the operator
// reads evicted keys back from badger itself, without restarts, and
// requires the unbounded operator's output and final state.
func TestBoundedWindowBadger(t *testing.T) {
	for ci, c := range windowCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(ci)))
			steps := windowSteps(rng)
			r := c.runner(t)
			base := state.NewMemory()
			want := r.run(base, steps, nil)
			op := r.newOp(state.NewMemory()).(*Operator)
			rb := c.bounded(2).runner(t)
			st, err := state.OpenBadger(state.BadgerOptions{Dir: t.TempDir(), CacheBytes: 512, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got := rb.run(st, steps, nil)
			compareRuns(t, "MaxKeysInMemory 2", want, got, windowDump(t, base, op), windowDump(t, st, op))
		})
	}
}

type rollingCase struct {
	name  string
	order Order
	wins  []RollingWindow
}

var rollingCases = []rollingCase{
	{"range", ByRange, []RollingWindow{{Name: "a", Range: 30 * time.Millisecond}, {Name: "b", Range: 100 * time.Millisecond}, {Name: "c", Range: 7 * time.Millisecond}}},
	{"rows", ByRows, []RollingWindow{{Name: "one", Rows: 1}, {Name: "five", Rows: 5}, {Name: "x", Rows: 17}}},
}

func (c rollingCase) runner(t *testing.T) *runner {
	return &runner{t: t, now: new(time.Time), newOp: func(st state.Store) opUnderTest {
		op, err := NewRolling(RollingConfig{Name: "roll", Order: c.order, Windows: c.wins, Aggregates: rollAggs, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return op
	}}
}

// TestRestoreRollingDifferential is TestRestoreWindowDifferential for the
// rolling operator, on a Memory store and on a Badger store reopened at
// each restart.
func TestRestoreRollingDifferential(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	for ci, c := range rollingCases {
		for _, storeKind := range []string{"memory", "badger"} {
			t.Run(c.name+"/"+storeKind, func(t *testing.T) {
				for seed := range uint64(seeds) {
					if storeKind == "badger" && seed >= 2 {
						break
					}
					rng := rand.New(rand.NewPCG(seed, uint64(ci)))
					steps := rollingSteps(rng)
					r := c.runner(t)
					base := state.NewMemory()
					want := r.run(base, steps, nil)
					var st storeLike = state.NewMemory()
					if storeKind == "badger" {
						st = badgerStore(t, r)
					}
					cuts := randomCuts(rng, len(steps))
					got := r.run(st, steps, cuts)
					if r.reopen != nil {
						st = r.reopen(nil)
					}
					compareRuns(t, fmt.Sprintf("seed %d, restarts before steps %v", seed, cuts), want, got, dump(t, base, "roll"), dump(t, st, "roll"))
				}
			})
		}
	}
}

// byKey groups log lines by their record key (the text after "step N: ",
// up to the first space, and for dead letters after "dead ").
func byKey(log []string) map[string][]string {
	m := map[string][]string{}
	for _, l := range log {
		_, rest, _ := strings.Cut(l, ": ")
		k := rest
		if d, ok := strings.CutPrefix(rest, "dead "); ok {
			k = d
		}
		k, _, _ = strings.Cut(k, " ")
		m[k] = append(m[k], l)
	}
	return m
}

// TestRestoreOwns restores two operators from one store, each owning half
// the keys, and feeds each its keys' records: together they give, key by
// key, the output of one operator that never stopped.
func TestRestoreOwns(t *testing.T) {
	owner := func(k []byte) int { // the nil key goes to 0, as does the empty one
		if len(k) == 0 {
			return 0
		}
		return int(k[0] % 2)
	}
	type tc struct {
		name   string
		runner func(*testing.T) *runner
		steps  func(*rand.Rand) []step
		opName string
	}
	var cases []tc
	for _, c := range windowCases() {
		if c.cfg.Emit != Every && (c.cfg.AllowedLateness > 0 || c.cfg.Kind == Count) && c.cfg.Custom == nil {
			cases = append(cases, tc{c.name, c.runner, windowSteps, "win"})
		}
	}
	for _, c := range rollingCases {
		cases = append(cases, tc{"rolling/" + c.name, c.runner, rollingSteps, "roll"})
	}
	ctx := context.Background()
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.runner(t)
			rng := rand.New(rand.NewPCG(5, uint64(ci)))
			steps := c.steps(rng)
			base := state.NewMemory()
			want := byKey(r.run(base, steps, nil))
			cut := len(steps)/3 + rng.IntN(len(steps)/3)
			st := state.NewMemory()
			got := r.run(st, steps[:cut], nil)
			wm := int64(math.MinInt64)
			for _, s := range steps[:cut] {
				if s.isWM {
					wm = max(wm, s.wm)
				}
			}
			var ops [2]opUnderTest
			for i := range ops {
				ops[i] = r.newOp(st)
				if err := ops[i].Restore(ctx, wm, func(k []byte) bool { return owner(k) == i }); err != nil {
					t.Fatal(err)
				}
			}
			if op, ok := ops[1].(*Operator); ok {
				if op.global != nil || op.keys[""] != nil || op.keys["b"] != nil || op.keys["dd"] != nil {
					t.Fatalf("instance 1 restored a key of instance 0")
				}
			}
			var out record.Output
			for i, s := range steps[cut:] {
				*r.now = s.now
				for j, op := range ops {
					var err error
					if s.isWM {
						err = op.OnWatermark(ctx, s.wm, &out)
					} else {
						var mine []record.Record
						for _, rec := range s.recs {
							if owner(rec.Key) == j {
								mine = append(mine, rec)
							}
						}
						err = op.Process(ctx, mine, &out)
					}
					if err != nil {
						t.Fatal(err)
					}
					got = logOutput(got, cut+i, &out)
				}
			}
			gotByKey := byKey(got)
			if len(gotByKey) != len(want) {
				t.Fatalf("output for %d keys, want %d", len(gotByKey), len(want))
			}
			for k, w := range want {
				equalStrings(t, "key "+k, gotByKey[k], w)
			}
			equalStrings(t, "final store", dump(t, st, c.opName), dump(t, base, c.opName))
		})
	}
}

// TestRestoreSharedStore: operators restore only their own state from a
// store that other operators, of either type and with similar names, also
// use.
func TestRestoreSharedStore(t *testing.T) {
	ctx := context.Background()
	st := state.NewMemory()
	names := []string{"w", "w2", "ww", ""}
	mk := func(name string) (*Operator, *Rolling) {
		op, err := New(Config{Name: name + "win", Kind: Tumbling, Size: time.Second, Store: st, Aggregates: countAggs})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRolling(RollingConfig{Name: name + "roll", Windows: []RollingWindow{{Name: "a", Rows: 2}}, Order: ByRows,
			Aggregates: []Aggregate{{Func: AggCount, As: "n"}}, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return op, r
	}
	var out record.Output
	for i, name := range names {
		op, r := mk(name)
		var recs []record.Record
		for j := range i + 1 {
			recs = append(recs, ev(fmt.Sprint("k", j), int64(j*10), `{"v":1}`))
		}
		if err := op.Process(ctx, recs, &out); err != nil {
			t.Fatal(err)
		}
		if err := r.Process(ctx, recs, &out); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range names {
		op, r := mk(name)
		if err := op.Restore(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
		if len(op.keys) != i+1 || len(r.keys) != i+1 {
			t.Errorf("%q: restored %d window keys and %d rolling keys, want %d", name, len(op.keys), len(r.keys), i+1)
		}
		out.Reset()
		if err := op.OnWatermark(ctx, math.MaxInt64, &out); err != nil {
			t.Fatal(err)
		}
		if err := r.OnWatermark(ctx, math.MaxInt64, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Records) != 2*(i+1) {
			t.Errorf("%q: %d results, want %d", name, len(out.Records), 2*(i+1))
		}
	}
}

// noScan is a Store without Scan.
type noScan struct{ state.Store }

// TestRestoreErrors: a store that cannot scan, state that does not decode,
// and misuse.
func TestRestoreErrors(t *testing.T) {
	ctx := context.Background()
	winCfg := func(st state.Store) Config {
		return Config{Name: "win", Kind: Tumbling, Size: time.Second, Store: st, Aggregates: []Aggregate{{Func: AggSum, Field: []string{"v"}, As: "s"}}}
	}
	rollCfg := func(st state.Store) RollingConfig {
		return RollingConfig{Name: "roll", Windows: []RollingWindow{{Name: "a", Rows: 3}}, Order: ByRows,
			Aggregates: []Aggregate{{Func: AggSum, Field: []string{"v"}, As: "s"}}, Store: st}
	}
	// seed writes some state through operators of both kinds.
	seed := func(t *testing.T, st state.Store) {
		op, err := New(winCfg(st))
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRolling(rollCfg(st))
		if err != nil {
			t.Fatal(err)
		}
		var out record.Output
		recs := []record.Record{ev("k", 100, `{"v":2}`), ev("k", 200, `{"v":3}`), ev("", 300, `{"v":4}`)}
		for _, o := range []opUnderTest{op, r} {
			if err := o.Process(ctx, recs, &out); err != nil {
				t.Fatal(err)
			}
			if err := o.OnWatermark(ctx, 250, &out); err != nil {
				t.Fatal(err)
			}
		}
	}
	put := func(t *testing.T, st state.Store, k, v []byte) {
		if err := st.Apply([]state.Mutation{{Key: k, Value: v}}); err != nil {
			t.Fatal(err)
		}
	}
	paneKey := func(rk []byte, start int64) []byte {
		uk := binary.BigEndian.AppendUint64([]byte{tagPane}, uint64(start)^1<<63)
		return state.Key(nil, "win", rk, uk)
	}
	rowKey := func(rk []byte, idx int64) []byte {
		return state.Key(nil, "roll", rk, binary.BigEndian.AppendUint64([]byte{tagRollingRow}, uint64(idx)))
	}
	for _, tc := range []struct {
		name    string
		rolling bool
		noScan  bool
		corrupt func(t *testing.T, st state.Store)
		want    []string // substrings of the error
	}{
		{name: "window/not a scanner", noScan: true, want: []string{`window "win"`, "does not implement state.Scanner"}},
		{name: "rolling/not a scanner", rolling: true, noScan: true, want: []string{`rolling "roll"`, "does not implement state.Scanner"}},
		{name: "window/truncated pane", corrupt: func(t *testing.T, st state.Store) {
			put(t, st, paneKey([]byte("k"), 0), []byte{0, 0, 1})
		}, want: []string{`record key "k"`, fmt.Sprintf("store key %x", paneKey([]byte("k"), 0)), "pane", "starting at 0", "does not decode", "corrupt"}},
		{name: "window/bad sum mode", corrupt: func(t *testing.T, st state.Store) {
			put(t, st, paneKey([]byte("k"), 0), []byte{0, 0, 7})
		}, want: []string{`record key "k"`, "corrupt"}},
		{name: "window/nil key pane", corrupt: func(t *testing.T, st state.Store) {
			uk := binary.BigEndian.AppendUint64([]byte{tagPane | tagNilKey}, uint64(0)^1<<63)
			put(t, st, state.Key(nil, "win", nil, uk), []byte{0, 0})
		}, want: []string{"record key nil", "corrupt"}},
		{name: "window/misaligned pane", corrupt: func(t *testing.T, st state.Store) {
			put(t, st, paneKey([]byte("k"), 500), []byte{0, 0, 0})
		}, want: []string{`record key "k"`, "pane starting at 500", "not a multiple of the pane length, 1000 ms"}},
		{name: "window/session entry", corrupt: func(t *testing.T, st state.Store) {
			put(t, st, state.Key(nil, "win", []byte("k"), binary.BigEndian.AppendUint64([]byte{tagSession}, 1<<63)), []byte{1, 0, 0})
		}, want: []string{"the entry is a session, but this is a tumbling window operator"}},
		{name: "window/nil key tag with a record key", corrupt: func(t *testing.T, st state.Store) {
			put(t, st, state.Key(nil, "win", []byte("k"), binary.BigEndian.AppendUint64([]byte{tagPane | tagNilKey}, 1<<63)), []byte{0, 0, 0})
		}, want: []string{"malformed key"}},
		{name: "window/operator entry", corrupt: func(t *testing.T, st state.Store) {
			put(t, st, state.Key(nil, "win", nil, []byte{tagMeta}), []byte{0x80})
		}, want: []string{"the operator entry", "corrupt"}},
		{name: "rolling/header", rolling: true, corrupt: func(t *testing.T, st state.Store) {
			put(t, st, state.Key(nil, "roll", []byte("k"), []byte{tagRolling}), []byte{rollingVersion, 5})
		}, want: []string{`rolling "roll"`, `record key "k"`, fmt.Sprintf("store key %x", state.Key(nil, "roll", []byte("k"), []byte{tagRolling})), "corrupt"}},
		{name: "rolling/version", rolling: true, corrupt: func(t *testing.T, st state.Store) {
			put(t, st, state.Key(nil, "roll", nil, []byte{tagRolling | tagNilKey}), []byte{9})
		}, want: []string{"record key nil", "corrupt"}},
		{name: "rolling/missing row", rolling: true, corrupt: func(t *testing.T, st state.Store) {
			if err := st.Apply([]state.Mutation{{Key: rowKey([]byte("k"), 0), Delete: true}}); err != nil {
				t.Fatal(err)
			}
		}, want: []string{`record key "k"`, "history row 0 (of 0..1) is missing"}},
		{name: "rolling/bad row", rolling: true, corrupt: func(t *testing.T, st state.Store) {
			put(t, st, rowKey([]byte("k"), 1), []byte{2, 9})
		}, want: []string{`record key "k"`, "history row 1", "corrupt"}},
		{name: "rolling/buffered row before the last emitted", rolling: true, corrupt: func(t *testing.T, st state.Store) {
			// k's header as seeded (rows 100 and 200 emitted), with a
			// row of time 150 buffered, which cannot happen.
			v := []byte(`{"v":1}`)
			h := binary.AppendVarint([]byte{rollingVersion, 1}, 150)
			h = append(binary.AppendUvarint(h, uint64(len(v))), v...)
			h = binary.AppendUvarint(binary.AppendVarint(h, 0), 2) // rows 0 and 1
			h = binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(binary.AppendUvarint(h, 0), 2), 5), 0)
			put(t, st, state.Key(nil, "roll", []byte("k"), []byte{tagRolling}), binary.LittleEndian.AppendUint64(h, 0))
		}, want: []string{`record key "k"`, "buffered row of time 150 is not after 200, the last emitted", "corrupt"}},
		{name: "rolling/window entry", rolling: true, corrupt: func(t *testing.T, st state.Store) {
			put(t, st, state.Key(nil, "roll", []byte("k"), []byte{tagCount}), []byte{1})
		}, want: []string{"the entry is a count window, not a rolling operator's"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := state.NewMemory()
			seed(t, mem)
			if tc.corrupt != nil {
				tc.corrupt(t, mem)
			}
			var st state.Store = mem
			if tc.noScan {
				st = noScan{mem}
			}
			var err error
			if tc.rolling {
				r, e := NewRolling(rollCfg(st))
				if e != nil {
					t.Fatal(e)
				}
				err = r.Restore(ctx, 250, nil)
			} else {
				op, e := New(winCfg(st))
				if e != nil {
					t.Fatal(e)
				}
				err = op.Restore(ctx, 250, nil)
			}
			if err == nil {
				t.Fatal("Restore succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("misuse", func(t *testing.T) {
		st := state.NewMemory()
		seed(t, st)
		var out record.Output
		op, _ := New(winCfg(st))
		r, _ := NewRolling(rollCfg(st))
		for _, o := range []opUnderTest{op, r} {
			if err := o.Restore(ctx, 250, nil); err != nil {
				t.Fatal(err)
			}
			if err := o.Restore(ctx, 250, nil); err == nil || !strings.Contains(err.Error(), "once, before the first Process") {
				t.Errorf("second Restore: %v", err)
			}
		}
		op, _ = New(winCfg(st))
		r, _ = NewRolling(rollCfg(st))
		for _, o := range []opUnderTest{op, r} {
			if err := o.OnWatermark(ctx, 250, &out); err != nil {
				t.Fatal(err)
			}
			if err := o.Restore(ctx, 250, nil); err == nil || !strings.Contains(err.Error(), "once, before the first Process") {
				t.Errorf("Restore after OnWatermark: %v", err)
			}
		}
		op, _ = New(winCfg(st))
		r, _ = NewRolling(rollCfg(st))
		for _, o := range []opUnderTest{op, r} {
			_ = o.Close(ctx)
			if err := o.Restore(ctx, 250, nil); err == nil || !strings.Contains(err.Error(), "after Close") {
				t.Errorf("Restore after Close: %v", err)
			}
		}
	})
}
