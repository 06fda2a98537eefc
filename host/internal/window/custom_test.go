package window

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// describeCtxs renders the contexts a countAgg's Result was given.
func describeCtxs(cs []ResultContext) []string {
	var out []string
	for _, c := range cs {
		key := "<nil>"
		if c.Key != nil {
			key = fmt.Sprintf("%q", c.Key)
		}
		out = append(out, fmt.Sprintf("%s %v [%d,%d)", key, c.Windowed, c.Start, c.End))
	}
	return out
}

// TestResultContext: a Custom aggregator's Result gets each window's key
// (nil for the nil key, present for the empty one) and bounds, those the
// built-in output writes.
func TestResultContext(t *testing.T) {
	emptyKey := ev("", 200, "x")
	emptyKey.Key = []byte{}
	for _, tt := range []struct {
		name string
		cfg  Config
		in   []record.Record
		want []string
	}{
		{
			name: "tumbling",
			cfg:  Config{Kind: Tumbling, Size: 5 * time.Second},
			in:   []record.Record{ev("a", 100, "x"), emptyKey, ev("", 300, "x"), ev("a", 5100, "x")},
			want: []string{`"a" true [0,5000)`, `"" true [0,5000)`, `<nil> true [0,5000)`, `"a" true [5000,10000)`},
		},
		{
			name: "sliding",
			cfg:  Config{Kind: Sliding, Size: 4 * time.Second, Slide: 2 * time.Second},
			in:   []record.Record{ev("a", 2500, "x")},
			want: []string{`"a" true [0,4000)`, `"a" true [2000,6000)`},
		},
		{
			name: "session",
			cfg:  Config{Kind: Session, Gap: time.Second},
			in:   []record.Record{ev("a", 100, "x"), ev("a", 600, "x")},
			want: []string{`"a" true [100,1600)`},
		},
		{
			name: "count",
			cfg:  Config{Kind: Count, Count: 2},
			in:   []record.Record{ev("a", 700, "x"), ev("a", 300, "x")},
			want: []string{`"a" true [300,701)`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agg := &countAgg{}
			cfg := tt.cfg
			cfg.Custom = agg
			h := newHarness(t, cfg)
			h.process(tt.in...)
			h.watermark(20000)
			if got := len(h.take()); got != len(tt.want) {
				t.Fatalf("%d windows, want %d", got, len(tt.want))
			}
			equalStrings(t, "contexts", describeCtxs(agg.ctxs), tt.want)
		})
	}
}

// TestMixedAggregates: a Custom aggregator listed among built-in
// aggregates (AggCustom) gives its result, as JSON, as the field it is
// listed as, in the built-in layout; records it rejects are not counted
// by the built-in aggregates either.
func TestMixedAggregates(t *testing.T) {
	for _, tt := range []struct {
		name string
		aggs []Aggregate
		want []string
	}{
		{
			name: "between",
			aggs: []Aggregate{{Func: AggCount, As: "n"}, {Func: AggCustom, As: "c"}, {Func: AggSum, Field: []string{"v"}, As: "sum"}},
			want: []string{
				`{"key":"a","window_start":0,"window_end":5000,"n":2,"c":["a",2],"sum":3}`,
				`{"key":"b","window_start":0,"window_end":5000,"n":1,"c":["b",1],"sum":5}`,
			},
		},
		{
			name: "first",
			aggs: []Aggregate{{Func: AggCustom, As: "c"}, {Func: AggCount, As: "n"}},
			want: []string{
				`{"key":"a","window_start":0,"window_end":5000,"c":["a",2],"n":2}`,
				`{"key":"b","window_start":0,"window_end":5000,"c":["b",1],"n":1}`,
			},
		},
		{
			name: "last",
			aggs: []Aggregate{{Func: AggCount, As: "n"}, {Func: AggCustom, As: "c"}},
			want: []string{
				`{"key":"a","window_start":0,"window_end":5000,"n":2,"c":["a",2]}`,
				`{"key":"b","window_start":0,"window_end":5000,"n":1,"c":["b",1]}`,
			},
		},
		{
			name: "alone",
			aggs: []Aggregate{{Func: AggCustom, As: "c"}},
			want: []string{
				`{"key":"a","window_start":0,"window_end":5000,"c":["a",2]}`,
				`{"key":"b","window_start":0,"window_end":5000,"c":["b",1]}`,
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agg := &countAgg{fail: "bad"}
			h := newHarness(t, Config{Kind: Tumbling, Size: 5 * time.Second, TimeFormat: EpochMillis,
				Aggregates: tt.aggs, Custom: agg})
			h.process(ev("a", 100, `{"v":1}`), ev("a", 200, `{"v":2}`), ev("b", 300, `{"v":5}`), ev("a", 400, `{"v":100,"bad":1}`))
			if len(h.dead) != 1 || !strings.Contains(h.dead[0].Reason, "aggregate: cannot add") {
				t.Fatalf("dead letters %+v, want the bad record, rejected by the Custom aggregator", h.dead)
			}
			h.watermark(4999)
			equalStrings(t, "output", values(h.take()), tt.want)
			equalStrings(t, "contexts", describeCtxs(agg.ctxs), []string{`"a" true [0,5000)`, `"b" true [0,5000)`})
		})
	}
}

// jsonAgg is a Custom aggregator whose result is fixed bytes.
type jsonAgg struct{ result []byte }

func (jsonAgg) Create() []byte                                   { return []byte{} }
func (jsonAgg) Add(acc []byte, _ *record.Record) ([]byte, error) { return acc, nil }
func (jsonAgg) Merge(a, _ []byte) ([]byte, error)                { return a, nil }
func (j jsonAgg) Result([]byte, ResultContext) ([]byte, error)   { return j.result, nil }

func TestMixedResultValues(t *testing.T) {
	for _, tt := range []struct {
		name, result string
		absent       bool
		want, err    string
	}{
		{name: "absent", absent: true, want: `{"key":"a","window_start":0,"window_end":1000,"n":1,"p":null}`},
		{name: "kept as it is", result: ` {"x": [1, 2.50]} `, want: `{"key":"a","window_start":0,"window_end":1000,"n":1,"p": {"x": [1, 2.50]} }`},
		{name: "not JSON", result: `{"x":`, err: `window "win": aggregate Result: the value of "p" is not JSON: "{\"x\":"`},
		{name: "empty", result: ``, err: `is not JSON: ""`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := []byte(tt.result)
			if tt.absent {
				res = nil
			}
			h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, TimeFormat: EpochMillis,
				Aggregates: []Aggregate{{Func: AggCount, As: "n"}, {Func: AggCustom, As: "p"}}, Custom: jsonAgg{res}})
			h.process(ev("a", 1, "x"))
			err := h.op.OnWatermark(t.Context(), 999, &h.out)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			h.collect()
			equalStrings(t, "output", values(h.take()), []string{tt.want})
		})
	}
}

func TestMixedConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{
			name: "custom and built-ins without AggCustom",
			cfg:  Config{Aggregates: []Aggregate{{Func: AggCount, As: "n"}}, Custom: &countAgg{}},
			want: "one of Aggregates must be AggCustom",
		},
		{
			name: "AggCustom without custom",
			cfg:  Config{Aggregates: []Aggregate{{Func: AggCustom, As: "c"}}},
			want: "an AggCustom aggregate needs Custom",
		},
		{
			name: "two AggCustom",
			cfg:  Config{Aggregates: []Aggregate{{Func: AggCustom, As: "c"}, {Func: AggCustom, As: "d"}}, Custom: &countAgg{}},
			want: "aggregates[1].plugin: a window takes one plugin aggregate; aggregates[0] is one already",
		},
		{
			name: "AggCustom with a field",
			cfg:  Config{Aggregates: []Aggregate{{Func: AggCustom, As: "c", Field: []string{"x"}}}, Custom: &countAgg{}},
			want: "custom takes no Field",
		},
		{
			name: "AggCustom named as the key",
			cfg:  Config{Aggregates: []Aggregate{{Func: AggCustom, As: "key"}}, Custom: &countAgg{}},
			want: `aggregates[0].as: output field "key" is already used`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Name, cfg.Kind, cfg.Size, cfg.Store = "win", Tumbling, time.Second, state.NewMemory()
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
