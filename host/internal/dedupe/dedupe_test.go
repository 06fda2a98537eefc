package dedupe

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// input is a generated stream: records, each followed by the watermark
// a source with the given bound on out-of-orderness would send after it.
type input struct {
	recs []record.Record
	wms  []int64 // wms[i]: the watermark after recs[i]
}

// generate makes n records over keys keys (unicode, empty, long and
// binary ones among them), repeats close together and far apart, equal
// times, and times out of order by up to disorder ms, none late. Some
// times sit near the ends of int64.
func generate(seed uint64, n, keys int, disorder int64, extreme bool) input {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := []string{"", "café ☕", "Ω", strings.Repeat("k", 300), "a\x00b", "\xff\xfe"}
	for len(names) < keys {
		names = append(names, fmt.Sprintf("key-%d", len(names)))
	}
	base := int64(1_700_000_000_000)
	if extreme {
		base = 1<<62 + 1<<61
	}
	var in input
	maxSeen, t := int64(-1<<63), base
	for i := range n {
		t += r.Int64N(40) // many equal times
		ts := t - r.Int64N(disorder+1)
		key := names[r.IntN(len(names))]
		if r.IntN(4) == 0 && i > 0 { // a retry: the same key again, soon
			key = string(in.recs[r.IntN(i)].Key)
		}
		in.recs = append(in.recs, record.Record{Key: []byte(key), Value: []byte(fmt.Sprintf(`{"i":%d}`, i)), Timestamp: ts,
			Origin: record.Origin{Source: "in", Partition: -1, Offset: int64(i)}})
		maxSeen = max(maxSeen, ts)
		in.wms = append(in.wms, maxSeen-disorder)
	}
	return in
}

// reference is dedupe by brute force: per key, in arrival order, a record
// passes when the key passed none before, or (with within) none less than
// within from its time.
func reference(in input, within int64) []int64 {
	passed := map[string][]int64{}
	var out []int64
	for _, r := range in.recs {
		k := string(r.Key)
		if slices.ContainsFunc(passed[k], func(f int64) bool { return within == 0 || distance(r.Timestamp, f) < within }) {
			continue
		}
		passed[k] = append(passed[k], r.Timestamp)
		out = append(out, r.Origin.Offset)
	}
	return out
}

func owner(key []byte, par int) int {
	h := fnv.New32a()
	h.Write(key)
	return int(h.Sum32() % uint32(par))
}

// run feeds in to par instances on store in Process calls of up to batch
// records, each instance owning the keys owner gives it, with a
// watermark after every wmEvery records; after restartAt records (if
// >= 0) the instances are replaced by restartPar new ones restored from
// the store. It returns the offsets passed, in order, and checks that
// each key's records stay in arrival order.
func run(t *testing.T, in input, within int64, store state.Store, par, batch, wmEvery, restartAt, restartPar int) []int64 {
	t.Helper()
	ctx := context.Background()
	wm := int64(-1 << 63)
	newOps := func(par int, restore bool) []*Operator {
		ops := make([]*Operator, par)
		for w := range par {
			owns := func(key []byte) bool { return owner(key, par) == w }
			o, err := New(Config{Name: "dd", Within: within, Store: store, Owns: owns})
			if err != nil {
				t.Fatal(err)
			}
			if restore {
				if err := o.Restore(ctx, wm, owns); err != nil {
					t.Fatal(err)
				}
			}
			ops[w] = o
		}
		return ops
	}
	ops := newOps(par, false)
	var got []int64
	var pending []record.Record
	flush := func() {
		for start := 0; start < len(pending); start += batch {
			parts := make([][]record.Record, len(ops))
			for _, r := range pending[start:min(start+batch, len(pending))] {
				w := owner(r.Key, len(ops))
				parts[w] = append(parts[w], r)
			}
			for w, part := range parts {
				var out record.Output
				if err := ops[w].Process(ctx, part, &out); err != nil {
					t.Fatal(err)
				}
				if len(out.Dead) > 0 {
					t.Fatalf("dead letters: %+v", out.Dead)
				}
				for _, r := range out.Records {
					got = append(got, r.Origin.Offset)
				}
			}
		}
		pending = pending[:0]
	}
	for i, r := range in.recs {
		pending = append(pending, r)
		if (i+1)%wmEvery == 0 {
			flush()
			wm = in.wms[i]
			for _, o := range ops {
				if err := o.OnWatermark(ctx, wm, &record.Output{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if i+1 == restartAt {
			flush()
			ops = newOps(restartPar, true)
		}
	}
	flush()
	return got
}

// TestDedupeReference runs generated inputs through dedupe with and
// without a bound, on one and three instances, several batch sizes and
// watermark rates, across a restart onto another number of instances,
// and requires exactly the brute-force reference's records.
func TestDedupeReference(t *testing.T) {
	type tc struct {
		name                  string
		within, disorder      int64
		keys                  int
		extreme               bool
		par, batch, wmEvery   int
		restartAt, restartPar int
	}
	var cases []tc
	for _, within := range []int64{0, 1, 250, 5_000} {
		for _, shape := range []struct {
			par, batch, wmEvery, restartAt, restartPar int
		}{{1, 1, 1, -1, 0}, {1, 7, 50, -1, 0}, {3, 64, 13, -1, 0}, {1, 512, 512, 900, 3}, {3, 5, 3, 1200, 1}} {
			cases = append(cases, tc{name: fmt.Sprintf("within %d par %d batch %d wm/%d restart %d→%d", within, shape.par, shape.batch, shape.wmEvery, shape.restartAt, shape.restartPar),
				within: within, disorder: 300, keys: 40, par: shape.par, batch: shape.batch, wmEvery: shape.wmEvery,
				restartAt: shape.restartAt, restartPar: shape.restartPar})
		}
	}
	cases = append(cases,
		tc{name: "in order, many keys", within: 100, disorder: 0, keys: 2_000, par: 2, batch: 100, wmEvery: 10, restartAt: -1},
		tc{name: "times near the end of int64", within: 1 << 40, disorder: 1000, keys: 10, extreme: true, par: 2, batch: 9, wmEvery: 4, restartAt: 700, restartPar: 2},
	)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := generate(uint64(i+1), 3_000, c.keys, c.disorder, c.extreme)
			want := reference(in, c.within)
			got := run(t, in, c.within, state.NewMemory(), c.par, c.batch, c.wmEvery, c.restartAt, c.restartPar)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("passed %d records, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
			if c.within > 0 && len(want) == len(in.recs) || len(want) == 0 {
				t.Fatalf("the input has no repeats to drop (%d of %d pass)", len(want), len(in.recs))
			}
		})
	}
}

func firstDiff(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDedupeDropsExpiredEntries checks that the state holds only the
// entries the watermark has not passed, in memory and in the store, and
// what a late record meets: it passes once its key's entry is gone.
func TestDedupeDropsExpiredEntries(t *testing.T) {
	ctx := context.Background()
	store := state.NewMemory()
	o, err := New(Config{Name: "dd", Within: 100, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(key string, ts int64) record.Record {
		return record.Record{Key: []byte(key), Timestamp: ts}
	}
	pass := func(recs ...record.Record) int {
		var out record.Output
		if err := o.Process(ctx, recs, &out); err != nil {
			t.Fatal(err)
		}
		return len(out.Records)
	}
	if n := pass(rec("a", 1000), rec("b", 1050), rec("a", 1099), rec("a", 901), rec("a", 800), rec("a", 899), rec("a", 1100)); n != 4 {
		t.Fatalf("%d passed, want a@1000, b@1050, a@800 and a@1100", n)
	}
	if err := o.OnWatermark(ctx, 1100, &record.Output{}); err != nil {
		t.Fatal(err)
	}
	entries := 0
	store.Scan(nil, func(k, v []byte) error { entries++; return nil })
	if entries != 2 || len(o.passed) != 2 || len(o.passed["a"]) != 1 {
		t.Fatalf("after the watermark passed a@800 and a@1000: %d stored, %v in memory; want a@1100 and b@1050", entries, o.passed)
	}
	if n := pass(rec("a", 990)); n != 1 {
		t.Errorf("a late record whose key's near entry is gone: %d passed, want 1", n)
	}
	if n := pass(rec("b", 1000)); n != 0 {
		t.Errorf("a late record within b's live entry: %d passed, want 0", n)
	}
}

func TestDedupeNeedsAKey(t *testing.T) {
	o, err := New(Config{Name: "dd", Store: state.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	var out record.Output
	in := []record.Record{{Value: []byte(`{}`), Origin: record.Origin{Source: "in", Offset: 3}}, {Key: []byte{}, Value: []byte(`{}`)}}
	if err := o.Process(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Dead) != 1 || out.Dead[0].Stage != "dd" || !strings.Contains(out.Dead[0].Reason, "key_by") || out.Dead[0].Record.Origin.Offset != 3 {
		t.Errorf("dead letters = %+v", out.Dead)
	}
	if len(out.Records) != 1 {
		t.Errorf("the empty key is a key: %d passed, want 1", len(out.Records))
	}
}

func TestDescribe(t *testing.T) {
	store := state.NewMemory()
	o, _ := New(Config{Name: "dd", Store: store})
	if err := o.Process(context.Background(), []record.Record{{Key: []byte("k"), Timestamp: 1710667200000}}, &record.Output{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	store.Scan(nil, func(k, v []byte) error {
		_, rk, uk, _ := state.SplitKey(k)
		e, ok := describe(rk, uk, v)
		got = append(got, fmt.Sprintf("%v %s %v", ok, e.Text, e.Attrs["event_time"]))
		return nil
	})
	if want := "true dedupe: passed a record at 2024-03-17T09:20:00Z 1710667200000"; len(got) != 1 || got[0] != want {
		t.Errorf("described %q, want %q", got, want)
	}
	if _, ok := describe(nil, []byte{1}, nil); ok {
		t.Error("a user key that is not a time is not dedupe's")
	}
}
