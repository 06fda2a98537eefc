package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

// count is an accumulator of testdata/agg_count.wat.
func countAcc(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }

// accCounts describes agg_count accumulators: their counts, or the bytes
// quoted when they are not 8 bytes.
func accCounts(accs [][]byte) string {
	s := make([]string, len(accs))
	for i, a := range accs {
		if len(a) == 8 {
			s[i] = fmt.Sprint(int64(binary.LittleEndian.Uint64(a)))
		} else {
			s[i] = fmt.Sprintf("%q", a)
		}
	}
	return strings.Join(s, " ")
}

// describeValues renders AggValues: the value quoted (or, with asCount, as
// an agg_count count), or "err: <reason>".
func describeValues(vs []AggValue, asCount bool) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		switch {
		case v.Err != "":
			s[i] = "err: " + v.Err
		case asCount:
			s[i] = accCounts([][]byte{v.Value})
		case v.Value == nil:
			s[i] = "<nil>"
		default:
			s[i] = string(v.Value)
		}
	}
	return strings.Join(s, " | ")
}

func aggWATConfig(t testing.TB, name string) PluginConfig {
	cfg := watConfig(t, name)
	cfg.Op = abi.OpAggregate
	return cfg
}

// aggAdd runs groups through w into a fresh AggOutput, failing the test on
// error.
func aggAdd(t testing.TB, w *Worker, groups ...AggGroup) *AggOutput {
	t.Helper()
	out := new(AggOutput)
	if err := w.AggAdd(context.Background(), groups, out); err != nil {
		t.Fatalf("AggAdd: %v", err)
	}
	checkDeadAt(t, groups, out)
	return out
}

// checkDeadAt checks that out.DeadAt locates each of out.Dead's records
// in groups, and each at most once.
func checkDeadAt(t testing.TB, groups []AggGroup, out *AggOutput) {
	t.Helper()
	if len(out.DeadAt) != len(out.Dead) {
		t.Fatalf("%d dead letters, %d located", len(out.Dead), len(out.DeadAt))
	}
	seen := map[AggIndex]bool{}
	for i, at := range out.DeadAt {
		if at.Group < 0 || at.Group >= len(groups) || at.Record < 0 || at.Record >= len(groups[at.Group].Records) {
			t.Fatalf("dead letter %d located at %+v, outside the input", i, at)
		}
		r, d := &groups[at.Group].Records[at.Record], &out.Dead[i].Record
		if seen[at] || !bytes.Equal(r.Value, d.Value) || r.Origin != d.Origin || !bytes.Equal(r.Key, d.Key) {
			t.Fatalf("dead letter %d (%q) located at %+v, record %q (or twice)", i, d.Value, at, r.Value)
		}
		seen[at] = true
	}
}

func TestAggWAT(t *testing.T) {
	ctx := context.Background()
	_, w := mustLoad(t, newRuntime(t, nil), aggWATConfig(t, "agg_count"))
	acc0, err := w.AggCreate(ctx)
	if err != nil || !bytes.Equal(acc0, countAcc(0)) {
		t.Fatalf("AggCreate = %x, %v", acc0, err)
	}
	in := recs("x1", "c", "x2")
	out := aggAdd(t, w,
		AggGroup{Acc: acc0, Records: recs("a", "b")},
		AggGroup{Acc: countAcc(5), Records: in},
		AggGroup{Acc: acc0},
	)
	if got := accCounts(out.Accs); got != "2 6 0" {
		t.Errorf("accumulators %s, want 2 6 0", got)
	}
	if sameBytes(out.Accs[2], acc0) {
		t.Error("an accumulator aliases its input; it must be a copy")
	}
	if got := deadValues(out.Dead); !equal(got, []string{"x1", "x2"}) {
		t.Fatalf("dead %q", got)
	}
	for i, d := range out.Dead {
		if d.Stage != "agg_count" || d.Reason != "aggregate error: rejected x" || d.Record.Origin != in[2*i].Origin {
			t.Errorf("dead letter %+v", d)
		}
	}
	if err := w.AggMerge(ctx, []AggPair{{countAcc(2), countAcc(3)}, {countAcc(1), []byte("bad")}}, out); err != nil {
		t.Fatal(err)
	}
	if err := w.AggResult(ctx, [][]byte{countAcc(42), countAcc(0), {1}}, nil, out); err != nil {
		t.Fatal(err)
	}
	want := `5 | err: aggregate error: bad accumulator | "42" | err: aggregate error: empty | err: aggregate error: bad accumulator`
	if got := describeValues(out.Values, true); got != want {
		t.Errorf("values %s\nwant   %s", got, want)
	}
	if got := string(out.Values[2].Value); got != "42" {
		t.Errorf("result %q, want 42", got)
	}
	if s := w.Stats(); s.Batches != 1 || s.Records != 5 || s.Errors != 2 || s.Calls != 3 || s.Traps != 0 {
		t.Errorf("stats = %+v", s)
	}

	// Reset makes the output reusable; an empty call changes nothing.
	out.Reset()
	if err := w.AggAdd(ctx, nil, out); err != nil || len(out.Accs)+len(out.Dead)+len(out.Values) != 0 {
		t.Errorf("empty AggAdd: %v, %+v", err, out)
	}
	if s := w.Stats(); s.Calls != 3 || s.Batches != 1 {
		t.Errorf("an empty AggAdd called the guest: %+v", s)
	}
}

func TestAggTrapReplay(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name       string
		groups     []AggGroup
		wantAccs   string
		wantDead   []string
		wantReason []string // per dead letter, a substring of its reason
		traps      uint64
	}{
		{
			name: "poison record in one group",
			groups: []AggGroup{
				{Acc: countAcc(0), Records: recs("a")},
				{Acc: countAcc(0), Records: recs("b", "!", "c")},
				{Acc: countAcc(0), Records: recs("d")},
			},
			wantAccs:   "1 2 1",
			wantDead:   []string{"!"},
			wantReason: []string{"trap: wasm error: unreachable"},
			traps:      3, // the call, the group alone, the record alone
		},
		{
			name:       "invalid output",
			groups:     []AggGroup{{Acc: countAcc(0), Records: recs("a", "?")}},
			wantAccs:   "1",
			wantDead:   []string{"?"},
			wantReason: []string{"invalid output: add output rejects record 1000 of group 0, which has 1 records"},
			traps:      2,
		},
		{
			name: "every record of a group",
			groups: []AggGroup{
				{Acc: countAcc(0), Records: recs("!1", "!2")},
				{Acc: countAcc(3), Records: recs("a")},
			},
			wantAccs: "0 4",
			wantDead: []string{"!1", "!2"},
			traps:    4,
		},
		{
			name:     "single-record group",
			groups:   []AggGroup{{Acc: countAcc(7), Records: recs("!")}},
			wantAccs: "7",
			wantDead: []string{"!"},
			traps:    1,
		},
		{
			name:       "rejections survive the replay",
			groups:     []AggGroup{{Acc: countAcc(0), Records: recs("x", "!", "a")}},
			wantAccs:   "1",
			wantDead:   []string{"x", "!"},
			wantReason: []string{"aggregate error: rejected x", "trap: wasm error: unreachable"},
			traps:      2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, w := mustLoad(t, rt, aggWATConfig(t, "agg_count"))
			out := aggAdd(t, w, tt.groups...)
			if got := accCounts(out.Accs); got != tt.wantAccs {
				t.Errorf("accumulators %s, want %s", got, tt.wantAccs)
			}
			if got := deadValues(out.Dead); !equal(got, tt.wantDead) {
				t.Errorf("dead = %q, want %q", got, tt.wantDead)
			}
			for i, want := range tt.wantReason {
				if i < len(out.Dead) && !strings.Contains(out.Dead[i].Reason, want) {
					t.Errorf("reason %q does not contain %q", out.Dead[i].Reason, want)
				}
			}
			s := w.Stats()
			if s.Traps != tt.traps {
				t.Errorf("stats = %+v, want %d traps", s, tt.traps)
			}
			// The worker carries on with a fresh instance.
			if got := accCounts(aggAdd(t, w, AggGroup{Acc: countAcc(1), Records: recs("a")}).Accs); got != "2" {
				t.Errorf("after the trap: %s", got)
			}
			if s := w.Stats(); s.Restarts != tt.traps {
				t.Errorf("restarts = %d, want %d", s.Restarts, tt.traps)
			}
		})
	}
}

func TestAggValuesTrapReplay(t *testing.T) {
	ctx := context.Background()
	_, w := mustLoad(t, newRuntime(t, nil), aggWATConfig(t, "agg_count"))
	out := new(AggOutput)
	if err := w.AggResult(ctx, [][]byte{countAcc(1), countAcc(666), countAcc(2)}, nil, out); err != nil {
		t.Fatal(err)
	}
	if got := describeValues(out.Values, false); got != "1 | err: trap: wasm error: unreachable | 2" {
		t.Errorf("results %q", got)
	}
	out.Reset()
	if err := w.AggMerge(ctx, []AggPair{{countAcc(1), countAcc(2)}, {countAcc(666), countAcc(0)}}, out); err != nil {
		t.Fatal(err)
	}
	if err := w.AggMerge(ctx, []AggPair{{countAcc(0), countAcc(666)}}, out); err != nil {
		t.Fatal(err)
	}
	got := describeValues(out.Values, true)
	if !strings.HasPrefix(got, "3 | err: trap: ") || strings.Count(got, "err: trap: wasm error: unreachable") != 2 {
		t.Errorf("merges %q", got)
	}
	// 2 traps for the result call (the call, the input alone), 2 for the
	// first merge, 1 for the second.
	if s := w.Stats(); s.Traps != 5 {
		t.Errorf("stats = %+v", s)
	}
	// The next call replaces the instance the last trap dropped.
	out.Reset()
	if err := w.AggResult(ctx, [][]byte{countAcc(3)}, nil, out); err != nil || describeValues(out.Values, false) != "3" {
		t.Errorf("after the traps: %+v, %v", out.Values, err)
	}
	if s := w.Stats(); s.Traps != 5 || s.Restarts != 5 {
		t.Errorf("stats = %+v", s)
	}
}

func TestAggLoad(t *testing.T) {
	rt := newRuntime(t, nil)
	ctx := context.Background()
	tests := []struct {
		name   string
		cfg    PluginConfig
		wantIn []string
	}{
		{
			name: "map module as aggregate",
			cfg:  aggWATConfig(t, "identity"),
			wantIn: []string{
				"not a valid weir ABI v1 aggregate plugin: the plugin implements map, flat_map and filter, not aggregate " +
					"(missing exports " + strings.Join(abi.AggregateExports[:], ", ") + ")",
			},
		},
		{
			name:   "aggregate module as map",
			cfg:    watConfig(t, "agg_count"),
			wantIn: []string{"the plugin implements aggregate, not map (missing export " + abi.ExportMap + ")"},
		},
		{
			name: "bad signature",
			cfg:  aggWATConfig(t, "agg_bad_signature"),
			wantIn: []string{
				"missing export " + abi.ExportAggResult,
				"export " + abi.ExportAggCreate + " has type (i32) -> (i64), want () -> (i64)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rt.Load(ctx, tt.cfg)
			if !errors.Is(err, ErrInvalidModule) {
				t.Fatalf("err = %v, want ErrInvalidModule", err)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}

	info, err := Inspect(testdata(t, "agg_count"))
	if err != nil || fmt.Sprint(info.Ops) != "[aggregate]" || len(info.Problems) != 0 {
		t.Errorf("Inspect(agg_count) = ops %v, problems %q, %v", info.Ops, info.Problems, err)
	}
	info, err = Inspect(testdata(t, "agg_bad_signature"))
	if err != nil || len(info.Ops) != 0 || len(info.Problems) != 2 ||
		!strings.Contains(info.Problems[0], "nor all of the aggregate exports") {
		t.Errorf("Inspect(agg_bad_signature) = ops %v, problems %q, %v", info.Ops, info.Problems, err)
	}
}

func TestAggWrongOp(t *testing.T) {
	rt := newRuntime(t, nil)
	ctx := context.Background()
	_, agg := mustLoad(t, rt, aggWATConfig(t, "agg_count"))
	if err := agg.Process(ctx, recs("a"), new(record.Output)); !errors.Is(err, ErrConfig) {
		t.Errorf("Process on an aggregate worker: %v, want ErrConfig", err)
	}
	_, m := mustLoad(t, rt, watConfig(t, "identity"))
	out := new(AggOutput)
	for name, err := range map[string]error{
		"AggCreate": func() error { _, err := m.AggCreate(ctx); return err }(),
		"AggAdd":    m.AggAdd(ctx, []AggGroup{{Acc: countAcc(0), Records: recs("a")}}, out),
		"AggMerge":  m.AggMerge(ctx, []AggPair{{}}, out),
		"AggResult": m.AggResult(ctx, [][]byte{nil}, nil, out),
	} {
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "aggregate calls need a plugin loaded as aggregate, not map") {
			t.Errorf("%s on a map worker: %v", name, err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := agg.AggAdd(canceled, []AggGroup{{Acc: countAcc(0)}}, out); !errors.Is(err, context.Canceled) {
		t.Errorf("AggAdd with a canceled context: %v", err)
	}
	agg.Close(ctx)
	if _, err := agg.AggCreate(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("AggCreate after Close: %v", err)
	}
}

func TestAggSplit(t *testing.T) {
	saved := aggCallRecords
	aggCallRecords = 3
	t.Cleanup(func() { aggCallRecords = saved })
	_, w := mustLoad(t, newRuntime(t, nil), aggWATConfig(t, "agg_count"))
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = fmt.Sprint("r", i)
	}
	ten[4] = "x"
	out := aggAdd(t, w,
		AggGroup{Acc: countAcc(0), Records: recs(ten...)},
		AggGroup{Acc: countAcc(0), Records: recs("a", "b")},
		AggGroup{Acc: countAcc(0), Records: recs("c", "x5")},
		AggGroup{Acc: countAcc(1)},
	)
	if got := accCounts(out.Accs); got != "9 2 1 1" {
		t.Errorf("accumulators %s, want 9 2 1 1", got)
	}
	if got := deadValues(out.Dead); !equal(got, []string{"x", "x5"}) {
		t.Errorf("dead %q", got)
	}
	// The group of 10 takes 4 calls; then [a b], then [c d] and the empty
	// group.
	if s := w.Stats(); s.Calls != 6 {
		t.Errorf("stats = %+v, want 6 calls", s)
	}
}

func TestZeroAllocAggAdd(t *testing.T) {
	_, w := mustLoad(t, newRuntime(t, nil), aggWATConfig(t, "agg_count"))
	groups := benchGroups(8, 8, func(i int) []byte { return []byte("value") })
	out := new(AggOutput)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		out.Reset()
		if err := w.AggAdd(ctx, groups, out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AggAdd allocates %.1f times per call, want 0", allocs)
	}
}

// benchGroups makes n groups of size records each, with the given values,
// each group's accumulator nil (set by the caller).
func benchGroups(n, size int, value func(i int) []byte) []AggGroup {
	groups := make([]AggGroup, n)
	for g := range groups {
		rs := make([]record.Record, size)
		for i := range rs {
			j := g*size + i
			rs[i] = record.Record{
				Key:       []byte(fmt.Sprintf("group-%03d", g)),
				Value:     value(j),
				Timestamp: 1722960137000 + int64(j),
				Origin:    record.Origin{Source: "bench", Partition: -1, Offset: int64(j)},
			}
		}
		groups[g] = AggGroup{Acc: countAcc(0), Records: rs}
	}
	return groups
}

// benchAggAdd runs groups through w b.N times and reports ns/record and
// records/s.
func benchAggAdd(b *testing.B, w *Worker, groups []AggGroup) {
	ctx := context.Background()
	out := new(AggOutput)
	n := 0
	for _, g := range groups {
		n += len(g.Records)
	}
	if err := w.AggAdd(ctx, groups, out); err != nil {
		b.Fatal(err)
	}
	if len(out.Dead) > 0 {
		b.Fatalf("dead letters: %+v", out.Dead[0])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := w.AggAdd(ctx, groups, out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N*n)
	b.ReportMetric(ns, "ns/record")
	b.ReportMetric(1e9/ns, "records/s")
}

func BenchmarkAggAddWAT(b *testing.B) {
	_, w := mustLoad(b, newRuntime(b, nil), aggWATConfig(b, "agg_count"))
	for _, groups := range []int{1, 8} {
		b.Run(fmt.Sprintf("groups=%dx64", groups), func(b *testing.B) {
			benchAggAdd(b, w, benchGroups(groups, 64, func(i int) []byte { return []byte("value") }))
		})
	}
}

// ctxEcho decodes the results of testdata/agg_ctx.wasm, which answers each
// entry of a result context frame with the entry itself: "key@start-end
// count", with "-" for no key and no window, or "err: <reason>".
func ctxEcho(t *testing.T, vs []AggValue) string {
	t.Helper()
	s := make([]string, len(vs))
	for i, v := range vs {
		if v.Err != "" {
			s[i] = "err: " + v.Err
			continue
		}
		var r abi.AccContextReader
		if _, err := r.Reset(append(abi.AppendAggCount(nil, 1), v.Value...)); err != nil {
			t.Fatal(err)
		}
		c, acc, ok, err := r.Next()
		if !ok || err != nil {
			t.Fatalf("value %d (%x) is not an entry of a result context frame: %v", i, v.Value, err)
		}
		key, win := "-", "-"
		if c.Key != nil {
			key = fmt.Sprintf("%q", c.Key)
		}
		if c.Windowed {
			win = fmt.Sprintf("%d-%d", c.Start, c.End)
		}
		s[i] = fmt.Sprintf("%s@%s %s", key, win, accCounts([][]byte{acc}))
	}
	return strings.Join(s, " | ")
}

func TestAggResultCtx(t *testing.T) {
	ctx := context.Background()
	_, w := mustLoad(t, newRuntime(t, nil), aggWATConfig(t, "agg_ctx"))
	accs := [][]byte{countAcc(1), countAcc(2), countAcc(3)}
	ctxs := []AggContext{
		{Key: []byte("k"), Windowed: true, Start: 1000, End: 2000},
		{Key: []byte{}, Windowed: true, Start: -10, End: -5},
		{Start: 7, End: 8}, // not windowed: the bounds are not sent
	}
	out := new(AggOutput)
	if err := w.AggResult(ctx, accs, ctxs, out); err != nil {
		t.Fatal(err)
	}
	want := `"k"@1000-2000 1 | ""@-10--5 2 | -@- 3`
	if got := ctxEcho(t, out.Values); got != want {
		t.Errorf("results %s\nwant    %s", got, want)
	}

	// Without contexts, the module gets empty ones.
	out.Reset()
	if err := w.AggResult(ctx, accs[:1], nil, out); err != nil {
		t.Fatal(err)
	}
	if got := ctxEcho(t, out.Values); got != "-@- 1" {
		t.Errorf("without contexts: %s", got)
	}

	// A trap is replayed one input at a time, each with its context.
	out.Reset()
	accs[1] = countAcc(666)
	if err := w.AggResult(ctx, accs, ctxs, out); err != nil {
		t.Fatal(err)
	}
	want = `"k"@1000-2000 1 | err: trap: wasm error: unreachable | -@- 3`
	if got := ctxEcho(t, out.Values); got != want {
		t.Errorf("after a trap: %s\nwant         %s", got, want)
	}
	if s := w.Stats(); s.Traps != 2 {
		t.Errorf("stats = %+v, want 2 traps (the call, the input alone)", s)
	}

	if err := w.AggResult(ctx, accs, ctxs[:1], out); !errors.Is(err, ErrConfig) {
		t.Errorf("AggResult with 1 context for 3 accumulators: %v, want ErrConfig", err)
	}

	// A module without weir_agg_result_ctx ignores the contexts.
	_, wc := mustLoad(t, newRuntime(t, nil), aggWATConfig(t, "agg_count"))
	out.Reset()
	if err := wc.AggResult(ctx, [][]byte{countAcc(4)}, ctxs[:1], out); err != nil || describeValues(out.Values, false) != "4" {
		t.Errorf("agg_count with a context: %+v, %v", out.Values, err)
	}
}
