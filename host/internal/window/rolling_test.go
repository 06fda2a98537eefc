package window

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// rollEvent is one generated input row.
type rollEvent struct {
	id     int
	key    string
	ts     int64
	amount float64
	isInt  bool
	opt    bool // has the optional field
}

func (e rollEvent) record() record.Record {
	amt := fmt.Sprintf("%g", e.amount)
	if !e.isInt {
		amt = fmt.Sprintf("%.2f", e.amount)
	}
	v := fmt.Sprintf(`{"id":%d,"amount":%s`, e.id, amt)
	if e.opt {
		v += `,"opt":1`
	}
	return record.Record{Key: []byte(e.key), Value: []byte(v + "}"), Timestamp: e.ts}
}

var rollAggs = []Aggregate{
	{Func: AggSum, Field: []string{"amount"}, As: "s"},
	{Func: AggCount, As: "n"},
	{Func: AggCount, Field: []string{"opt"}, As: "o"},
	{Func: AggAvg, Field: []string{"amount"}, As: "a"},
	{Func: AggMin, Field: []string{"amount"}, As: "lo"},
	{Func: AggMax, Field: []string{"amount"}, As: "hi"},
}

// genRolling returns n events over keys, roughly one every step ms, out of
// order by up to disorder ms.
func genRolling(rng *rand.Rand, n, keys int, step, disorder int64) []rollEvent {
	evs := make([]rollEvent, n)
	for i := range evs {
		e := rollEvent{id: i, key: fmt.Sprintf("k%d", rng.IntN(keys)), ts: int64(i)*step + rng.Int64N(disorder+1), opt: rng.IntN(3) > 0}
		if rng.IntN(2) == 0 {
			e.amount, e.isInt = float64(rng.IntN(21)-5), true
		} else {
			e.amount = math.Round(rng.Float64()*2000-500) / 100
		}
		if rng.IntN(10) == 0 && i > 0 {
			e.ts = evs[i-1].ts // peers
		}
		evs[i] = e
	}
	return evs
}

// rollDriver feeds events to operators in batches with watermarks lag ms
// behind the highest time seen, and collects the output by id. It expects
// an event to be late when its key has emitted rows at or after its time
// (see TestRollingLatenessProperty).
type rollDriver struct {
	t       *testing.T
	op      *Rolling
	out     record.Output
	got     map[int]map[string]any
	dead    []record.DeadLetter
	wm      int64
	maxTS   int64
	ok      []rollEvent        // accepted events, in arrival order
	pending map[string][]int64 // per key, the times of its accepted events not yet emitted
	emitted map[string]int64   // per key, the latest time emitted
}

func (d *rollDriver) collect() {
	for _, r := range d.out.Records {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			d.t.Fatalf("output %s: %v", r.Value, err)
		}
		id := int(m["id"].(float64))
		if _, dup := d.got[id]; dup {
			d.t.Fatalf("id %d emitted twice", id)
		}
		if string(r.Key) != fmt.Sprintf("k%s", "") && r.Timestamp < 0 {
			d.t.Fatal("bad timestamp")
		}
		d.got[id] = m
	}
	d.dead = append(d.dead, d.out.Dead...)
	d.out.Reset()
}

func (d *rollDriver) feed(evs []rollEvent, batch int, lag int64) {
	ctx := context.Background()
	for i := 0; i < len(evs); i += batch {
		var recs []record.Record
		for _, e := range evs[i:min(i+batch, len(evs))] {
			recs = append(recs, e.record())
			if last, done := d.emitted[e.key]; !done || e.ts > last {
				d.ok = append(d.ok, e)
				d.pending[e.key] = append(d.pending[e.key], e.ts)
			}
			d.maxTS = max(d.maxTS, e.ts)
		}
		if err := d.op.Process(ctx, recs, &d.out); err != nil {
			d.t.Fatal(err)
		}
		d.collect()
		if wm := d.maxTS - lag; wm > d.wm {
			d.wm = wm
			d.expectEmitted(wm)
			if err := d.op.OnWatermark(ctx, wm, &d.out); err != nil {
				d.t.Fatal(err)
			}
			d.collect()
		}
	}
}

// expectEmitted moves the pending times at or before wm to d.emitted.
func (d *rollDriver) expectEmitted(wm int64) {
	for k, ts := range d.pending {
		var rest []int64
		for _, t := range ts {
			if t > wm {
				rest = append(rest, t)
			} else if last, done := d.emitted[k]; !done || t > last {
				d.emitted[k] = t
			}
		}
		d.pending[k] = rest
	}
}

func (d *rollDriver) finish() {
	if err := d.op.OnWatermark(context.Background(), math.MaxInt64, &d.out); err != nil {
		d.t.Fatal(err)
	}
	d.collect()
}

// bruteRolling computes every accepted event's expected output fields.
func bruteRolling(ok []rollEvent, order Order, wins []RollingWindow) map[int]map[string]float64 {
	byKey := map[string][]rollEvent{}
	for _, e := range ok {
		byKey[e.key] = append(byKey[e.key], e)
	}
	want := map[int]map[string]float64{}
	for _, evs := range byKey {
		slices.SortStableFunc(evs, func(a, b rollEvent) int { return int(a.ts - b.ts) })
		for p, e := range evs {
			m := map[string]float64{}
			for _, w := range wins {
				var in []rollEvent
				for q, o := range evs {
					if order == ByRange && o.ts >= e.ts-w.Range.Milliseconds() && o.ts <= e.ts ||
						order == ByRows && q <= p && q > p-int(w.Rows) {
						in = append(in, o)
					}
				}
				var sum float64
				lo, hi := math.Inf(1), math.Inf(-1)
				opt := 0
				for _, o := range in {
					sum += o.amount
					lo, hi = min(lo, o.amount), max(hi, o.amount)
					if o.opt {
						opt++
					}
				}
				m["s_"+w.Name], m["n_"+w.Name], m["o_"+w.Name] = sum, float64(len(in)), float64(opt)
				m["a_"+w.Name], m["lo_"+w.Name], m["hi_"+w.Name] = sum/float64(len(in)), lo, hi
			}
			want[e.id] = m
		}
	}
	return want
}

func checkRolling(t *testing.T, d *rollDriver, want map[int]map[string]float64) {
	t.Helper()
	if len(d.got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(d.got), len(want))
	}
	bad := 0
	for id, w := range want {
		g := d.got[id]
		if g == nil {
			t.Fatalf("id %d not emitted", id)
		}
		for f, x := range w {
			y, ok := g[f].(float64)
			if !ok || math.Abs(x-y) > 1e-6*max(1, math.Abs(x)) {
				if bad++; bad < 10 {
					t.Errorf("id %d: %s = %v, want %v", id, f, g[f], x)
				}
			}
		}
	}
}

func newRollDriver(t *testing.T, order Order, wins []RollingWindow, st state.Store) *rollDriver {
	op, err := NewRolling(RollingConfig{Name: "roll", Order: order, Windows: wins, Aggregates: rollAggs, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return &rollDriver{t: t, op: op, got: map[int]map[string]any{}, wm: math.MinInt64,
		pending: map[string][]int64{}, emitted: map[string]int64{}}
}

var (
	rangeWins = []RollingWindow{{Name: "a", Range: 30 * time.Millisecond}, {Name: "b", Range: 100 * time.Millisecond},
		{Name: "c", Range: 7 * time.Millisecond}, {Name: "d", Range: time.Second}}
	rowsWins = []RollingWindow{{Name: "one", Rows: 1}, {Name: "five", Rows: 5}, {Name: "x", Rows: 17}}
)

func TestRollingBruteForce(t *testing.T) {
	for _, tc := range []struct {
		order Order
		wins  []RollingWindow
	}{{ByRange, rangeWins}, {ByRows, rowsWins}} {
		for seed := range uint64(5) {
			t.Run(fmt.Sprintf("%v/%d", tc.order, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				evs := genRolling(rng, 600, 1+int(seed), 3, 20)
				d := newRollDriver(t, tc.order, tc.wins, state.NewMemory())
				d.feed(evs, 1+rng.IntN(30), 10) // lag < disorder: some rows may be late
				d.finish()
				if len(d.dead)+len(d.ok) != len(evs) {
					t.Fatalf("%d dead, %d accepted of %d", len(d.dead), len(d.ok), len(evs))
				}
				for _, dl := range d.dead {
					if !strings.HasPrefix(dl.Reason, "late: ") || dl.Stage != "roll" {
						t.Fatalf("dead letter %+v", dl)
					}
				}
				checkRolling(t, d, bruteRolling(d.ok, tc.order, tc.wins))
			})
		}
	}
}

// TestRollingStateRoundTrip restarts the operator halfway on the same
// store: the second operator loads each key's state on its next record.
func TestRollingStateRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		order Order
		wins  []RollingWindow
	}{{ByRange, rangeWins}, {ByRows, rowsWins}} {
		rng := rand.New(rand.NewPCG(3, 3))
		evs := genRolling(rng, 1000, 3, 3, 20)
		st := state.NewMemory()
		d := newRollDriver(t, tc.order, tc.wins, st)
		d.feed(evs[:500], 7, 10)
		if err := d.op.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		d2 := newRollDriver(t, tc.order, tc.wins, st)
		d2.got, d2.ok, d2.wm, d2.maxTS, d2.pending, d2.emitted = d.got, d.ok, d.wm, d.maxTS, d.pending, d.emitted
		d2.op.wm = d.wm // the engine repeats the watermark on restart; here it is set directly
		d2.feed(evs[500:], 7, 10)
		d2.finish()
		checkRolling(t, d2, bruteRolling(d2.ok, tc.order, tc.wins))
	}
}

func TestRollingOutput(t *testing.T) {
	op, err := NewRolling(RollingConfig{Name: "r", Windows: []RollingWindow{{Name: "10m", Range: 10 * time.Minute}, {Name: "1h", Range: time.Hour}},
		Aggregates: []Aggregate{{Func: AggSum, Field: []string{"amount"}, As: "amount_sum"}, {Func: AggMax, Field: []string{"amount"}, As: "amount_max"}},
		Store:      state.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out record.Output
	min := int64(time.Minute / time.Millisecond)
	in := []record.Record{
		{Key: []byte("c"), Value: []byte(`{"card":1, "amount":2.5}`), Timestamp: 30 * min},
		{Key: []byte("c"), Value: []byte(`{"amount":4}`), Timestamp: 0},
		{Key: []byte("c"), Value: []byte(`{ }`), Timestamp: 5 * min},
		{Key: []byte("c"), Value: []byte(`{"amount":1}`), Timestamp: 10 * min},
		{Key: []byte("c"), Value: []byte(`{"amount":1}`), Timestamp: 10 * min},
		{Key: []byte("c"), Value: []byte(`[1]`), Timestamp: 10 * min},
	}
	if err := op.Process(ctx, in, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 0 || len(out.Dead) != 2 {
		t.Fatalf("before the watermark: %d records, %d dead", len(out.Records), len(out.Dead))
	}
	if err := op.OnWatermark(ctx, 10*min, &out); err != nil {
		t.Fatal(err)
	}
	if err := op.Process(ctx, []record.Record{{Key: []byte("c"), Value: []byte(`{"amount":9}`), Timestamp: 10 * min}}, &out); err != nil {
		t.Fatal(err)
	}
	if err := op.OnWatermark(ctx, math.MaxInt64, &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Records {
		got = append(got, fmt.Sprintf("%d %s", r.Timestamp/min, r.Value))
	}
	want := []string{
		`0 {"amount":4,"amount_sum_10m":4,"amount_max_10m":4,"amount_sum_1h":4,"amount_max_1h":4}`,
		`10 {"amount":1,"amount_sum_10m":6,"amount_max_10m":4,"amount_sum_1h":6,"amount_max_1h":4}`,
		`10 {"amount":1,"amount_sum_10m":6,"amount_max_10m":4,"amount_sum_1h":6,"amount_max_1h":4}`,
		`30 {"card":1, "amount":2.5,"amount_sum_10m":2.5,"amount_max_10m":2.5,"amount_sum_1h":8.5,"amount_max_1h":4}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	reasons := []string{}
	for _, d := range out.Dead {
		reasons = append(reasons, d.Reason)
	}
	if len(reasons) != 3 || !strings.Contains(reasons[0], "sum(amount): field not found") ||
		!strings.Contains(reasons[1], "not a JSON object") || !strings.HasPrefix(reasons[2], "late: event time 600000") {
		t.Errorf("dead letters: %q", reasons)
	}
}

func TestRollingConfigErrors(t *testing.T) {
	st := state.NewMemory()
	sum := []Aggregate{{Func: AggSum, Field: []string{"x"}, As: "s"}}
	for _, tc := range []struct {
		cfg  RollingConfig
		want string
	}{
		{RollingConfig{Name: "r", Store: st, Aggregates: sum}, "a window is required"},
		{RollingConfig{Name: "r", Store: st, Aggregates: sum, Windows: []RollingWindow{{Name: "a", Range: time.Second, Rows: 2}}}, "Rows does not apply"},
		{RollingConfig{Name: "r", Store: st, Order: ByRows, Aggregates: sum, Windows: []RollingWindow{{Name: "a"}}}, "Rows 0 is not within"},
		{RollingConfig{Name: "r", Store: st, Aggregates: sum, Windows: []RollingWindow{{Name: "a", Range: time.Second}, {Name: "a", Range: time.Minute}}}, "used twice"},
		{RollingConfig{Name: "r", Store: st, Windows: []RollingWindow{{Name: "a", Range: time.Second}}, Aggregates: []Aggregate{{Func: AggFirst, As: "f"}}}, "not a rolling aggregate"},
		{RollingConfig{Name: "r", Store: st, Windows: []RollingWindow{{Name: "a", Range: time.Microsecond}}, Aggregates: sum}, "whole number of milliseconds"},
	} {
		_, err := NewRolling(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// BenchmarkRolling4Ranges: 1000 keys, sum and max over 10m, 1h, 1d and 7d
// ranges, one event per key a minute, in batches of 1000 with a watermark
// after each.
func BenchmarkRolling4Ranges(b *testing.B) {
	op, err := NewRolling(RollingConfig{Name: "r", Store: state.NewMemory(),
		Windows:    []RollingWindow{{Name: "10m", Range: 10 * time.Minute}, {Name: "1h", Range: time.Hour}, {Name: "1d", Range: 24 * time.Hour}, {Name: "7d", Range: 7 * 24 * time.Hour}},
		Aggregates: []Aggregate{{Func: AggSum, Field: []string{"amount"}, As: "s"}, {Func: AggMax, Field: []string{"amount"}, As: "m"}}})
	if err != nil {
		b.Fatal(err)
	}
	const keys, batch = 1000, 1000
	recs := make([]record.Record, batch)
	vals := make([][]byte, 64)
	for i := range vals {
		vals[i] = []byte(fmt.Sprintf(`{"card":"x","amount":%d.%02d}`, i, i))
	}
	ctx := context.Background()
	var out record.Output
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		minute := int64(n/keys) * 60000
		for i := range recs {
			recs[i] = record.Record{Key: []byte(fmt.Sprint(i % keys)), Value: vals[(n+i)%64], Timestamp: minute + int64(i)}
		}
		if err := op.Process(ctx, recs, &out); err != nil {
			b.Fatal(err)
		}
		if err := op.OnWatermark(ctx, minute+batch, &out); err != nil {
			b.Fatal(err)
		}
		out.Reset()
		n += batch
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

func TestRollingNilKey(t *testing.T) {
	st := state.NewMemory()
	cfg := RollingConfig{Name: "r", Order: ByRows, Windows: []RollingWindow{{Name: "2", Rows: 2}},
		Aggregates: []Aggregate{{Func: AggMin, Field: []string{"x"}, As: "m"}}, Store: st}
	op, err := NewRolling(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out record.Output
	in := []record.Record{{Value: []byte(`{"x":3}`), Timestamp: 1}, {Value: []byte(`{"x":1}`), Timestamp: 2}}
	if err := op.Process(ctx, in, &out); err != nil {
		t.Fatal(err)
	}
	// A new operator on the same store picks up the buffered rows.
	op2, err := NewRolling(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := op2.Process(ctx, []record.Record{{Value: []byte(`{"x":2}`), Timestamp: 3}}, &out); err != nil {
		t.Fatal(err)
	}
	if err := op2.OnWatermark(ctx, math.MaxInt64, &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Records {
		if r.Key != nil {
			t.Errorf("key %q, want nil", r.Key)
		}
		got = append(got, string(r.Value))
	}
	if want := `{"x":3,"m_2":3} {"x":1,"m_2":1} {"x":2,"m_2":1}`; strings.Join(got, " ") != want {
		t.Errorf("got %s, want %s", strings.Join(got, " "), want)
	}
}
