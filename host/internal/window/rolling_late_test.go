package window

import (
	"cmp"
	"context"
	"fmt"
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

// The lateness tests hold the rolling operator to Flink's OVER
// aggregation (RowTimeRangeBoundedPrecedingFunction and
// RowTimeRowsBoundedPrecedingFunction): a row is late only when its own
// key has already emitted rows at or after its event time, whatever the
// watermark and the other keys have done.

// overRow is one generated input row: amount is its JSON text.
type overRow struct {
	id     int
	key    string
	ts     int64
	amount string
	opt    bool
}

func (o overRow) value() string {
	v := fmt.Sprintf(`{"id":%d,"amount":%s`, o.id, o.amount)
	if o.opt {
		v += `,"opt":1`
	}
	return v + "}"
}

func (o overRow) record() record.Record {
	return record.Record{Key: append([]byte{}, o.key...), Value: []byte(o.value()), Timestamp: o.ts,
		Origin: record.Origin{Partition: -1, Offset: int64(o.id)}}
}

// overAmount returns an amount for a key of class c. Each class keeps
// every sum exact, so that the operator's running sums and the
// reference's must agree to the bit: small integers, integers up to
// 2^50, multiples of 2^900 and of 2^-1000 (huge and tiny floats), and
// small integers mixed with multiples of 2^-8.
func overAmount(rng *rand.Rand, c int) string {
	k := rng.Int64N(1<<31) - 1<<30
	switch c {
	case 0:
		return strconv.FormatInt(rng.Int64N(21)-5, 10)
	case 1:
		return strconv.FormatInt(rng.Int64N(1<<51)-1<<50, 10)
	case 2:
		return strconv.FormatFloat(math.Ldexp(float64(k), 900), 'g', -1, 64)
	case 3:
		return strconv.FormatFloat(math.Ldexp(float64(k), -1000), 'g', -1, 64)
	}
	if rng.IntN(2) == 0 {
		return strconv.FormatInt(rng.Int64N(21)-5, 10)
	}
	return strconv.FormatFloat(math.Ldexp(float64(k>>10), -8), 'g', -1, 64)
}

// genOver returns n rows over keys keys (the first is the empty key),
// about one a ms from base, out of order by up to ooo ms, with ties within
// and across keys (a row in eight repeats the previous row's time) and
// about a row in twenty up to 500 ms behind the watermark, often behind
// its key's emitted rows.
func genOver(rng *rand.Rand, n, keys int, ooo, base int64) []overRow {
	rows := make([]overRow, n)
	cur := base
	for i := range rows {
		ki := rng.IntN(keys)
		r := overRow{id: i, key: fmt.Sprintf("c%02d", ki), opt: rng.IntN(3) > 0, amount: overAmount(rng, ki%5)}
		if ki == 0 {
			r.key = ""
		}
		cur += rng.Int64N(3)
		r.ts = cur - rng.Int64N(ooo+1)
		switch {
		case rng.IntN(8) == 0 && i > 0:
			r.ts = rows[i-1].ts
		case rng.IntN(20) == 0:
			r.ts = cur - ooo - 1 - rng.Int64N(500)
		}
		rows[i] = r
	}
	return rows
}

// overRef is the reference: it schedules rows as the operator's contract
// says, deciding lateness per key, then computes each emitted row's
// aggregates directly from its key's accepted rows, sorted.
type overRef struct {
	order Order
	wins  []RollingWindow
	// Filled by schedule:
	emitted  map[string]int64     // per key, the latest time emitted
	pending  map[string][]overRow // per key, in arrival order
	accepted map[string][]overRow
	out      []overRow     // emitted rows, in emission order
	dead     []string      // "key @ts #id"
	deadLast map[int]int64 // per dead row, its key's emitted time then
	behind   int           // rows accepted at or before the watermark
}

// schedule runs rows through the reference in batches of batch rows, the
// watermark following each batch at the highest time seen minus ooo.
func (f *overRef) schedule(rows []overRow, batch int, ooo int64) {
	f.emitted, f.pending, f.accepted = map[string]int64{}, map[string][]overRow{}, map[string][]overRow{}
	f.deadLast = map[int]int64{}
	wm, maxTS := int64(math.MinInt64), int64(math.MinInt64)
	for i := 0; i < len(rows); i += batch {
		for _, r := range rows[i:min(i+batch, len(rows))] {
			maxTS = max(maxTS, r.ts)
			if last, ok := f.emitted[r.key]; ok && r.ts <= last {
				f.dead = append(f.dead, fmt.Sprintf("%q @%d #%d", r.key, r.ts, r.id))
				f.deadLast[r.id] = last
				continue
			}
			if r.ts <= wm {
				f.behind++
			}
			f.pending[r.key] = append(f.pending[r.key], r)
			f.accepted[r.key] = append(f.accepted[r.key], r)
		}
		if maxTS-ooo > wm {
			wm = maxTS - ooo
			f.fire(wm)
		}
	}
	f.fire(math.MaxInt64)
}

// fire emits the pending rows at or before wm: keys in order of their
// earliest pending time, then of the key; a key's rows by time, then
// arrival.
func (f *overRef) fire(wm int64) {
	type due struct {
		key   string
		first int64
	}
	var keys []due
	for k, p := range f.pending {
		first := slices.MinFunc(p, func(a, b overRow) int { return cmp.Compare(a.ts, b.ts) }).ts
		if first <= wm {
			keys = append(keys, due{k, first})
		}
	}
	slices.SortFunc(keys, func(a, b due) int { return cmp.Or(cmp.Compare(a.first, b.first), cmp.Compare(a.key, b.key)) })
	for _, d := range keys {
		p := f.pending[d.key]
		slices.SortStableFunc(p, func(a, b overRow) int { return cmp.Compare(a.ts, b.ts) })
		n := 0
		for n < len(p) && p[n].ts <= wm {
			n++
		}
		f.out = append(f.out, p[:n]...)
		f.emitted[d.key] = p[n-1].ts
		f.pending[d.key] = slices.Clone(p[n:])
		if len(f.pending[d.key]) == 0 {
			delete(f.pending, d.key)
		}
	}
}

// expected returns the emitted rows as "key @ts value", each value the
// input with its aggregates appended.
func (f *overRef) expected() []string {
	byID := map[int]string{}
	for _, rows := range f.accepted {
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b overRow) int { return cmp.Compare(a.ts, b.ts) })
		for p, r := range rows {
			v := strings.TrimSuffix(r.value(), "}")
			for _, w := range f.wins {
				v += f.aggregates(rows, p, w)
			}
			byID[r.id] = fmt.Sprintf("%q @%d %s}", r.key, r.ts, v)
		}
	}
	var want []string
	for _, r := range f.out {
		want = append(want, byID[r.id])
	}
	return want
}

// aggregates returns the fields rollAggs append for window w of row p of
// a key's sorted rows.
func (f *overRef) aggregates(rows []overRow, p int, w RollingWindow) string {
	var in []overRow
	for q, o := range rows {
		if f.order == ByRange && o.ts >= rows[p].ts-w.Range.Milliseconds() && o.ts <= rows[p].ts ||
			f.order == ByRows && q <= p && int64(q) > int64(p)-w.Rows {
			in = append(in, o)
		}
	}
	var isum int64
	var fsum float64
	floats, opts := 0, 0
	lo, hi := in[0], in[0]
	for _, o := range in {
		if i, err := strconv.ParseInt(o.amount, 10, 64); err == nil {
			isum += i
		} else {
			x, _ := strconv.ParseFloat(o.amount, 64)
			fsum += x
			floats++
		}
		if o.opt {
			opts++
		}
		// Of equal values, the latest is reported, as the deques keep it.
		if amountOf(o) <= amountOf(lo) {
			lo = o
		}
		if amountOf(o) >= amountOf(hi) {
			hi = o
		}
	}
	sum := strconv.FormatInt(isum, 10)
	if floats > 0 {
		sum = string(wjson.AppendFloat(nil, float64(isum)+fsum))
	}
	avg := string(wjson.AppendFloat(nil, (float64(isum)+fsum)/float64(len(in))))
	return fmt.Sprintf(`,"s_%[1]s":%[2]s,"n_%[1]s":%[3]d,"o_%[1]s":%[4]d,"a_%[1]s":%[5]s,"lo_%[1]s":%[6]s,"hi_%[1]s":%[7]s`,
		w.Name, sum, len(in), opts, avg, minMaxText(lo), minMaxText(hi))
}

func amountOf(o overRow) float64 {
	x, _ := strconv.ParseFloat(o.amount, 64)
	return x
}

// minMaxText is how min and max write a value: as read, an integer or a
// float.
func minMaxText(o overRow) string {
	if _, err := strconv.ParseInt(o.amount, 10, 64); err == nil {
		return o.amount
	}
	return string(wjson.AppendFloat(nil, amountOf(o)))
}

// overRun is what the operator emitted for one run.
type overRun struct {
	rows    []string
	dead    []string
	reasons map[int]string // by row id
}

// runOver feeds rows to a Rolling operator in batches of batch rows, with
// the watermark after each batch at the highest time seen minus ooo, as
// the engine's bounded-out-of-orderness watermark. With restart, the
// operator is closed halfway and a new one restored from the store.
func runOver(t *testing.T, rows []overRow, batch int, ooo int64, order Order, wins []RollingWindow, restart bool) overRun {
	t.Helper()
	ctx := context.Background()
	st := state.NewMemory()
	newOp := func() *Rolling {
		op, err := NewRolling(RollingConfig{Name: "roll", Order: order, Windows: wins, Aggregates: rollAggs, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := newOp()
	run := overRun{reasons: map[int]string{}}
	var out record.Output
	wm, maxTS := int64(math.MinInt64), int64(math.MinInt64)
	for i := 0; i < len(rows); i += batch {
		if restart && i >= len(rows)/2 && i < len(rows)/2+batch {
			if err := op.Close(ctx); err != nil {
				t.Fatal(err)
			}
			op = newOp()
			if err := op.Restore(ctx, wm, nil); err != nil {
				t.Fatal(err)
			}
		}
		var recs []record.Record
		for _, r := range rows[i:min(i+batch, len(rows))] {
			recs = append(recs, r.record())
			maxTS = max(maxTS, r.ts)
		}
		if err := op.Process(ctx, recs, &out); err != nil {
			t.Fatal(err)
		}
		if maxTS-ooo > wm {
			wm = maxTS - ooo
			if err := op.OnWatermark(ctx, wm, &out); err != nil {
				t.Fatal(err)
			}
		}
		run.collect(&out)
	}
	if err := op.OnWatermark(ctx, math.MaxInt64, &out); err != nil {
		t.Fatal(err)
	}
	run.collect(&out)
	return run
}

func (run *overRun) collect(out *record.Output) {
	for _, r := range out.Records {
		run.rows = append(run.rows, fmt.Sprintf("%q @%d %s", r.Key, r.Timestamp, r.Value))
	}
	for _, d := range out.Dead {
		id := int(d.Record.Origin.Offset)
		run.dead = append(run.dead, fmt.Sprintf("%q @%d #%d", d.Record.Key, d.Record.Timestamp, id))
		run.reasons[id] = d.Stage + ": " + d.Reason
	}
	out.Reset()
}

// TestRollingLatenessProperty compares every emitted row and every dead
// letter of the operator with the reference's, for RANGE and ROWS
// windows, many keys and few, in batches of 1, 7, 64 and 512 rows, with
// and without a restart halfway.
func TestRollingLatenessProperty(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order Order
		wins  []RollingWindow
		keys  int
		ooo   int64
		base  int64
	}{
		{"range/40 keys/ooo 0", ByRange, rangeWins, 40, 0, 1_700_000_000_000},
		{"range/5 keys/ooo 3", ByRange, rangeWins, 5, 3, -4000},
		{"range/1 key/ooo 2", ByRange, rangeWins, 1, 2, 0},
		{"rows/40 keys/ooo 0", ByRows, rowsWins, 40, 0, 1_700_000_000_000},
		{"rows/5 keys/ooo 3", ByRows, rowsWins, 5, 3, -4000},
		{"rows/1 key/ooo 2", ByRows, rowsWins, 1, 2, 0},
	} {
		behind := 0 // rows of the case accepted at or before the watermark
		for seed := range uint64(3) {
			rows := genOver(rand.New(rand.NewPCG(seed, uint64(tc.keys))), 1200, tc.keys, tc.ooo, tc.base)
			for _, batch := range []int{1, 7, 64, 512} {
				ref := &overRef{order: tc.order, wins: tc.wins}
				ref.schedule(rows, batch, tc.ooo)
				want := ref.expected()
				if len(ref.dead) == 0 {
					t.Fatalf("%s/seed %d/batch %d: no row is late", tc.name, seed, batch)
				}
				behind += ref.behind
				for _, restart := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/seed %d/batch %d/restart %v", tc.name, seed, batch, restart), func(t *testing.T) {
						got := runOver(t, rows, batch, tc.ooo, tc.order, tc.wins, restart)
						equalStrings(t, "dead letters", got.dead, ref.dead)
						equalStrings(t, "emitted rows", got.rows, want)
						checkLateReasons(t, ref, got)
					})
				}
			}
		}
		if tc.keys > 1 && behind == 0 {
			t.Fatalf("%s: no row is accepted at or before the watermark", tc.name)
		}
	}
}

// checkLateReasons checks that each dead letter names the latest time its
// key had emitted.
func checkLateReasons(t *testing.T, ref *overRef, got overRun) {
	t.Helper()
	for id, reason := range got.reasons {
		last := ref.deadLast[id]
		if !strings.HasPrefix(reason, "roll: late: event time ") || !strings.Contains(reason, fmt.Sprintf(" is at or before %d (", last)) {
			t.Fatalf("row #%d: reason %q does not say its key emitted up to %d", id, reason, last)
		}
	}
}

// TestRollingTieAcrossBatches is the regression: with a watermark at the
// highest time seen (max_out_of_orderness 0), card A's row at 1000 ends
// batch 1 and is emitted; card B's row at 1000 starts batch 2 and must be
// emitted too, since B had emitted nothing at 1000, while A's second row
// at 1000 is late. Restarting between the batches, restored or reading
// the keys back lazily, changes nothing.
func TestRollingTieAcrossBatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		order   Order
		win     RollingWindow
		restart string // "", "restore" or "lazy"
	}{
		{"range", ByRange, RollingWindow{Name: "w", Range: 10 * time.Millisecond}, ""},
		{"range/restore", ByRange, RollingWindow{Name: "w", Range: 10 * time.Millisecond}, "restore"},
		{"range/lazy", ByRange, RollingWindow{Name: "w", Range: 10 * time.Millisecond}, "lazy"},
		{"rows", ByRows, RollingWindow{Name: "w", Rows: 2}, ""},
		{"rows/restore", ByRows, RollingWindow{Name: "w", Rows: 2}, "restore"},
		{"rows/lazy", ByRows, RollingWindow{Name: "w", Rows: 2}, "lazy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, dead := tieAcrossBatches(t, tc.order, tc.win, tc.restart)
			equalStrings(t, "emitted", got, []string{
				`A @1000 {"amount":1,"s_w":1}`,
				`B @1000 {"amount":2,"s_w":2}`,
				`B @1005 {"amount":5,"s_w":7}`,
			})
			if len(dead) != 1 || !strings.HasPrefix(dead[0], `A @1000 {"amount":3}: late: event time 1000 (`) {
				t.Fatalf("dead letters %q, want A's second row at 1000", dead)
			}
		})
	}
}

// tieAcrossBatches runs TestRollingTieAcrossBatches's input and returns
// the emitted rows and the dead letters.
func tieAcrossBatches(t *testing.T, order Order, win RollingWindow, restart string) (got, dead []string) {
	ctx := context.Background()
	st := state.NewMemory()
	cfg := RollingConfig{Name: "roll", Order: order, Windows: []RollingWindow{win},
		Aggregates: []Aggregate{{Func: AggSum, Field: []string{"amount"}, As: "s"}}, Store: st}
	op, err := NewRolling(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out record.Output
	step := func(wm int64, recs ...record.Record) {
		t.Helper()
		if err := op.Process(ctx, recs, &out); err != nil {
			t.Fatal(err)
		}
		if err := op.OnWatermark(ctx, wm, &out); err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Records {
			got = append(got, fmt.Sprintf("%s @%d %s", r.Key, r.Timestamp, r.Value))
		}
		for _, d := range out.Dead {
			dead = append(dead, fmt.Sprintf("%s @%d %s: %s", d.Record.Key, d.Record.Timestamp, d.Record.Value, d.Reason))
		}
		out.Reset()
	}
	step(1000, ev("A", 1000, `{"amount":1}`))
	if restart != "" {
		if err := op.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if op, err = NewRolling(cfg); err != nil {
			t.Fatal(err)
		}
		if restart == "restore" {
			if err := op.Restore(ctx, 1000, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	step(1005, ev("B", 1000, `{"amount":2}`), ev("A", 1000, `{"amount":3}`), ev("B", 1005, `{"amount":5}`))
	step(math.MaxInt64)
	return got, dead
}
