package window

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// sensor is a seed-000 sensor reading.
func sensor(device string, d time.Duration, amp string) record.Record {
	ts := at(d)
	return ev(device, ts, fmt.Sprintf(`{"device_id":%q,"co":0.0042,"humidity":61.5,"motion":true,"temp":24.31,"ampere_hour":%s,"ts":%d}`, device, amp, ts))
}

// TestTumblingSeed000 is seed 000's FlinkSQL job: a 30 s tumbling SUM of
// ampere_hour per device, printed as Flink SQL prints it.
func TestTumblingSeed000(t *testing.T) {
	const (
		d1 = "1c:bf:ce:15:ec:4d"
		d2 = "00:0f:00:70:91:0a"
		d3 = "b8:27:eb:bf:9d:51"
	)
	h := newHarness(t, Config{Kind: Tumbling, Size: 30 * time.Second, KeyField: "device_id",
		Aggregates: []Aggregate{{Func: AggSum, Field: []string{"ampere_hour"}, As: "charge_consumed"}}})
	steps := []struct {
		name string
		in   []record.Record
		wm   int64
		want []string
	}{
		{
			name: "first window",
			in: []record.Record{sensor(d1, 1*time.Second, "1.23"), sensor(d2, 5*time.Second, "0.81"),
				sensor(d2, 10*time.Second, "1.8"), sensor(d3, 20*time.Second, "0.45"), sensor(d1, 35*time.Second, "1.66")},
			wm: at(30*time.Second) - 1,
			want: []string{
				`{"device_id":"1c:bf:ce:15:ec:4d","window_start":"2024-03-17 09:20:00","window_end":"2024-03-17 09:20:30","charge_consumed":1.23}`,
				`{"device_id":"00:0f:00:70:91:0a","window_start":"2024-03-17 09:20:00","window_end":"2024-03-17 09:20:30","charge_consumed":2.6100000000000003}`,
				`{"device_id":"b8:27:eb:bf:9d:51","window_start":"2024-03-17 09:20:00","window_end":"2024-03-17 09:20:30","charge_consumed":0.45}`,
			},
		},
		{
			name: "second window",
			in: []record.Record{sensor(d1, 40*time.Second, "1.8"), sensor(d2, 45*time.Second, "1.91"),
				sensor(d3, 50*time.Second, "1.04"), sensor(d2, 65*time.Second, "0.15")},
			wm: at(60*time.Second) - 1,
			want: []string{
				`{"device_id":"1c:bf:ce:15:ec:4d","window_start":"2024-03-17 09:20:30","window_end":"2024-03-17 09:21:00","charge_consumed":3.46}`,
				`{"device_id":"00:0f:00:70:91:0a","window_start":"2024-03-17 09:20:30","window_end":"2024-03-17 09:21:00","charge_consumed":1.91}`,
				`{"device_id":"b8:27:eb:bf:9d:51","window_start":"2024-03-17 09:20:30","window_end":"2024-03-17 09:21:00","charge_consumed":1.04}`,
			},
		},
		{
			name: "third window",
			in: []record.Record{sensor(d1, 70*time.Second, "2.26"), sensor(d3, 75*time.Second, "1.67"),
				sensor(d3, 80*time.Second, "1.8")},
			wm: at(90*time.Second) - 1,
			want: []string{
				`{"device_id":"00:0f:00:70:91:0a","window_start":"2024-03-17 09:21:00","window_end":"2024-03-17 09:21:30","charge_consumed":0.15}`,
				`{"device_id":"1c:bf:ce:15:ec:4d","window_start":"2024-03-17 09:21:00","window_end":"2024-03-17 09:21:30","charge_consumed":2.26}`,
				`{"device_id":"b8:27:eb:bf:9d:51","window_start":"2024-03-17 09:21:00","window_end":"2024-03-17 09:21:30","charge_consumed":3.4699999999999998}`,
			},
		},
	}
	for _, st := range steps {
		h.process(st.in...)
		if got := h.take(); len(got) != 0 {
			t.Fatalf("%s: Process emitted %v before the watermark", st.name, got)
		}
		h.watermark(st.wm - 1)
		if got := h.take(); len(got) != 0 {
			t.Fatalf("%s: watermark %d (end-2) emitted %v", st.name, st.wm-1, got)
		}
		h.watermark(st.wm)
		got := h.take()
		equalStrings(t, st.name, values(got), st.want)
		for _, r := range got {
			if r.TS != st.wm {
				t.Fatalf("%s: output timestamp %d, want window end - 1 = %d", st.name, r.TS, st.wm)
			}
			if !strings.Contains(r.Value, r.Key) {
				t.Fatalf("%s: output key %q does not match value %s", st.name, r.Key, r.Value)
			}
		}
	}
	if len(h.dead) != 0 {
		t.Fatalf("dead letters: %v", h.dead)
	}
	if n := h.store.Len(); n != 0 {
		t.Fatalf("store holds %d keys after every window closed", n)
	}
}

// countOut formats a count result with epoch-millisecond bounds.
func countOut(key string, start, end int64, n int) string {
	return fmt.Sprintf(`{"key":%q,"window_start":%d,"window_end":%d,"n":%d}`, key, start, end, n)
}

var countAggs = []Aggregate{{Func: AggCount, As: "n"}}

func TestSlidingCount(t *testing.T) {
	h := newHarness(t, Config{Kind: Sliding, Size: 10 * time.Second, Slide: 2 * time.Second,
		TimeFormat: EpochMillis, Aggregates: countAggs})
	h.process(ev("a", 1000, "x"), ev("a", 3000, "x"), ev("a", 9000, "x"))
	h.process(ev("a", 3500, "x"), ev("a", 11000, "x"), ev("b", 12000, "x"))
	if h.op.pane != 2000 {
		t.Fatalf("pane = %d, want gcd(10s, 2s) = 2000", h.op.pane)
	}
	tests := []struct {
		name string
		wm   int64
		want []string
	}{
		{name: "windows ending by 10s", wm: 9999, want: []string{
			countOut("a", -8000, 2000, 1), countOut("a", -6000, 4000, 3), countOut("a", -4000, 6000, 3),
			countOut("a", -2000, 8000, 3), countOut("a", 0, 10000, 4),
		}},
		{name: "nothing new", wm: 11998},
		{name: "the rest", wm: math.MaxInt64, want: []string{
			countOut("a", 2000, 12000, 4),
			countOut("a", 4000, 14000, 2), countOut("b", 4000, 14000, 1),
			countOut("a", 6000, 16000, 2), countOut("b", 6000, 16000, 1),
			countOut("a", 8000, 18000, 2), countOut("b", 8000, 18000, 1),
			countOut("a", 10000, 20000, 1), countOut("b", 10000, 20000, 1),
			countOut("b", 12000, 22000, 1),
		}},
	}
	for _, tt := range tests {
		h.watermark(tt.wm)
		equalStrings(t, tt.name, values(h.take()), tt.want)
	}
	if n := h.store.Len(); n != 0 {
		t.Fatalf("store holds %d keys after every window closed", n)
	}
}

func TestCumulate(t *testing.T) {
	h := newHarness(t, Config{Kind: Cumulate, Size: 10 * time.Second, Slide: 2 * time.Second,
		TimeFormat: EpochMillis, Aggregates: countAggs})
	h.process(ev("a", 1000, "x"), ev("a", 3000, "x"), ev("a", 9000, "x"), ev("a", 10500, "x"), ev("b", 7000, "x"))
	tests := []struct {
		name string
		wm   int64
		want []string
	}{
		{name: "first period", wm: 9999, want: []string{
			countOut("a", 0, 2000, 1), countOut("a", 0, 4000, 2), countOut("a", 0, 6000, 2),
			countOut("a", 0, 8000, 2), countOut("b", 0, 8000, 1), countOut("a", 0, 10000, 3), countOut("b", 0, 10000, 1),
		}},
		{name: "second period", wm: 19999, want: []string{
			countOut("a", 10000, 12000, 1), countOut("a", 10000, 14000, 1), countOut("a", 10000, 16000, 1),
			countOut("a", 10000, 18000, 1), countOut("a", 10000, 20000, 1),
		}},
	}
	for _, tt := range tests {
		h.watermark(tt.wm)
		equalStrings(t, tt.name, values(h.take()), tt.want)
	}
	if n := h.store.Len(); n != 0 {
		t.Fatalf("store holds %d keys after every window closed", n)
	}
}

func TestSession(t *testing.T) {
	tests := []struct {
		name   string
		custom bool
		want   []string
	}{
		{name: "built-in count", want: []string{countOut("v", 100, 10100, 1), countOut("u", 0, 40000, 5)}},
		{name: "custom aggregator", custom: true, want: []string{`["v",1]`, `["u",5]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Kind: Session, Gap: 10 * time.Second, TimeFormat: EpochMillis, Aggregates: countAggs}
			agg := &countAgg{}
			if tt.custom {
				cfg.Aggregates, cfg.Custom = nil, agg
			}
			h := newHarness(t, cfg)
			h.process(ev("u", 0, "x"), ev("u", 5000, "x"), ev("v", 100, "x"))
			h.process(ev("u", 30000, "x"))
			h.process(ev("u", 20000, "x")) // touches [30000, 40000): [20000, 40000)
			if n := len(h.op.keys["u"].units); n != 2 {
				t.Fatalf("u has %d sessions before the bridge, want 2", n)
			}
			h.watermark(10098)
			equalStrings(t, "before v's end", values(h.take()), nil)
			h.watermark(14998)
			equalStrings(t, "at 14998", values(h.take()), tt.want[:1])
			// The bridge: [15000, 25000) touches [0, 15000) and [20000, 40000).
			h.process(ev("u", 15000, "x"))
			if n := len(h.op.keys["u"].units); n != 1 {
				t.Fatalf("u has %d sessions after the bridge, want 1", n)
			}
			if n := h.store.Len(); n != 1 {
				t.Fatalf("store holds %d keys after the bridge, want 1 session", n)
			}
			h.watermark(39998)
			equalStrings(t, "before u's end", values(h.take()), nil)
			h.watermark(39999)
			equalStrings(t, "u's session", values(h.take()), tt.want[1:])
			if tt.custom && agg.merges == 0 {
				t.Fatal("the bridge did not call Merge")
			}
			if n := h.store.Len(); n != 0 {
				t.Fatalf("store holds %d keys after every session closed", n)
			}
		})
	}
}

func TestCountWindows(t *testing.T) {
	h := newHarness(t, Config{Kind: Count, Count: 3, TimeFormat: EpochMillis,
		Aggregates: []Aggregate{{Func: AggCount, As: "n"}, {Func: AggSum, Field: []string{"v"}, As: "sum"}}})
	h.process(ev("a", 50, `{"v":1}`), ev("b", 10, `{"v":10}`), ev("a", 20, `{"v":2}`))
	equalStrings(t, "no window full", values(h.take()), nil)
	h.watermark(math.MaxInt64) // count windows ignore watermarks
	equalStrings(t, "watermark", values(h.take()), nil)
	h.process(ev("a", 30, `{"v":3}`), ev("a", 40, `{"v":4}`), ev("b", 11, `{"v":20}`), ev("a", 5, `{"v":5}`),
		ev("a", 6, `{"v":6}`), ev("a", 7, `{"v":7}`), ev("b", 12, `{"v":30}`))
	equalStrings(t, "full windows", values(h.take()), []string{
		`{"key":"a","window_start":20,"window_end":51,"n":3,"sum":6}`,
		`{"key":"a","window_start":5,"window_end":41,"n":3,"sum":15}`,
		`{"key":"b","window_start":10,"window_end":13,"n":3,"sum":60}`,
	})
	// a holds 7 alone; b nothing.
	if n := h.store.Len(); n != 1 {
		t.Fatalf("store holds %d keys, want a's partial window only", n)
	}
	if _, ok := h.op.keys["b"]; ok {
		t.Fatal("b's empty count window is still in memory")
	}
}

// TestCustomCountSeed004 is seed 004: a 5 s window counting customers per
// country with an AggregateFunction.
func TestCustomCountSeed004(t *testing.T) {
	agg := &countAgg{}
	h := newHarness(t, Config{Kind: Tumbling, Size: 5 * time.Second, Custom: agg})
	countries := []string{"JP", "GB", "TR", "TR", "TR", "TR", "TR", "TR", "USA", "USA",
		"JP", "GB", "TR", "TR", "TR", "TR", "TR", "TR", "TR", "USA"}
	var in []record.Record
	for i, c := range countries {
		in = append(in, ev(c, int64(i)*100, fmt.Sprintf(`{"id":%d,"country":%q}`, i+1, c)))
	}
	h.process(in...)
	h.watermark(4999)
	equalStrings(t, "counts", values(h.take()), []string{`["JP",2]`, `["GB",2]`, `["TR",13]`, `["USA",3]`})
}

func TestAggregates(t *testing.T) {
	h := newHarness(t, Config{Kind: Tumbling, Size: 10 * time.Second, TimeFormat: EpochMillis, KeyField: "k",
		Aggregates: []Aggregate{
			{Func: AggCount, As: "n"},
			{Func: AggSum, Field: []string{"v"}, As: "sum_v"},
			{Func: AggSum, Field: []string{"f"}, As: "sum_f"},
			{Func: AggAvg, Field: []string{"v"}, As: "avg_v"},
			{Func: AggMin, Field: []string{"v"}, As: "min_v"},
			{Func: AggMax, Field: []string{"v"}, As: "max_v"},
			{Func: AggMin, Field: []string{"f"}, As: "min_f"},
			{Func: AggMax, Field: []string{"f"}, As: "max_f"},
			{Func: AggFirst, Field: []string{"s"}, As: "first_s"},
			{Func: AggLast, Field: []string{"v"}, As: "last_v"},
			{Func: AggCountDistinct, Field: []string{"s"}, As: "distinct_s"},
			{Func: AggCount, Field: []string{"z"}, As: "n_z"},
			{Func: AggFirst, As: "first"},
			{Func: AggLast, Field: []string{"o", "p"}, As: "last_op"},
		}})
	h.process(
		ev("k", 1000, `{"v":3,"f":1.5,"s":"x","o":{"p":[1]}}`),
		ev("k", 500, `{"v":5, "f":2, "s":"y"}`),
		ev("k", 9000, `{"v":-2,"f":0.25,"s":"x","z":null}`),
		ev("k", 2000, `{"v":4,"f":1e1,"s":"\u0078","z":0,"o":{"p":"q"}}`),
	)
	h.watermark(9999)
	equalStrings(t, "aggregates", values(h.take()), []string{`{"k":"k","window_start":0,"window_end":10000,` +
		`"n":4,"sum_v":10,"sum_f":13.75,"avg_v":2.5,"min_v":-2,"max_v":5,"min_f":0.25,"max_f":10.0,` +
		`"first_s":"y","last_v":-2,"distinct_s":2,"n_z":1,"first":{"v":5, "f":2, "s":"y"},"last_op":"q"}`})
}

// TestNumbers checks when sums, minima and maxima stay integers.
func TestNumbers(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{name: "integers", in: []string{"1", "2", "-3"}, want: `"sum":0,"min":-3,"max":2,"avg":0.0`},
		{name: "an integral float", in: []string{"1", "2.0"}, want: `"sum":3.0,"min":1.0,"max":2.0,"avg":1.5`},
		{name: "exponent", in: []string{"1e2"}, want: `"sum":100.0,"min":100.0,"max":100.0,"avg":100.0`},
		{name: "overflow", in: []string{"9223372036854775807", "1"}, want: `"sum":9.223372036854776e+18,"min":1,"max":9223372036854775807,"avg":4.611686018427388e+18`},
		{name: "beyond int64", in: []string{"9223372036854775808"}, want: `"sum":9.223372036854776e+18,"min":9.223372036854776e+18,"max":9.223372036854776e+18,"avg":9.223372036854776e+18`},
		{name: "python floats", in: []string{"0.1", "0.2"}, want: `"sum":0.30000000000000004,"min":0.1,"max":0.2,"avg":0.15000000000000002`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, TimeFormat: EpochMillis, Aggregates: []Aggregate{
				{Func: AggSum, Field: []string{"v"}, As: "sum"}, {Func: AggMin, Field: []string{"v"}, As: "min"},
				{Func: AggMax, Field: []string{"v"}, As: "max"}, {Func: AggAvg, Field: []string{"v"}, As: "avg"}}})
			for i, v := range tt.in {
				h.process(ev("k", int64(i), `{"v":`+v+`}`))
			}
			h.watermark(999)
			want := `{"key":"k","window_start":0,"window_end":1000,` + tt.want + `}`
			equalStrings(t, "result", values(h.take()), []string{want})
		})
	}
}

func TestCountDistinctApproximate(t *testing.T) {
	tests := []struct {
		name     string
		distinct int
		exact    int
	}{
		{name: "exact", distinct: 100, exact: 100},
		{name: "just over", distinct: 101, exact: 100},
		{name: "1k", distinct: 1000, exact: 100},
		{name: "10k", distinct: 10_000, exact: 100},
		{name: "100k", distinct: 100_000, exact: 100},
		{name: "default exact", distinct: 1024, exact: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Sliding windows make each result a merge of two panes; each
			// value appears in both, so the union is tt.distinct.
			h := newHarness(t, Config{Kind: Sliding, Size: 2 * time.Second, Slide: time.Second, TimeFormat: EpochMillis,
				Aggregates: []Aggregate{{Func: AggCountDistinct, Field: []string{"u"}, As: "d", Exact: tt.exact}}})
			batch := make([]record.Record, 0, 512)
			for i := range 2 * tt.distinct {
				ts := int64(i % 2 * 1000)
				batch = append(batch, ev("k", ts, fmt.Sprintf(`{"u":"user-%d"}`, i/2)))
				if len(batch) == cap(batch) {
					h.process(batch...)
					batch = batch[:0]
				}
			}
			h.process(batch...)
			h.watermark(1999)
			got := h.take()
			var merged int64 = -1
			for _, r := range got {
				if strings.Contains(r.Value, `"window_start":0,`) {
					if _, err := fmt.Sscanf(r.Value[strings.LastIndex(r.Value, ":")+1:], "%d}", &merged); err != nil {
						t.Fatalf("parsing %s: %v", r.Value, err)
					}
				}
			}
			errRel := math.Abs(float64(merged)-float64(tt.distinct)) / float64(tt.distinct)
			limit := 3 * HLLStandardError
			if tt.distinct <= exactLimit(tt.exact) {
				limit = 0
			}
			if errRel > limit {
				t.Fatalf("estimate %d of %d distinct: error %.4f, more than %.4f", merged, tt.distinct, errRel, limit)
			}
			t.Logf("estimate %d of %d distinct: error %.4f", merged, tt.distinct, errRel)
		})
	}
}

func TestLateness(t *testing.T) {
	h := newHarness(t, Config{Kind: Tumbling, Size: 10 * time.Second, AllowedLateness: 5 * time.Second,
		TimeFormat: EpochMillis, Aggregates: countAggs})
	steps := []struct {
		name string
		in   []record.Record
		wm   int64
		want []string
		dead int
	}{
		{name: "behind the watermark but the window is open", wm: 9000, in: []record.Record{ev("a", 1000, "x")}},
		{name: "another", in: []record.Record{ev("a", 5000, "x")}},
		{name: "close", wm: 9999, want: []string{countOut("a", 0, 10000, 2)}},
		{name: "update within lateness", in: []record.Record{ev("a", 2000, "x"), ev("a", 3000, "x")},
			want: []string{countOut("a", 0, 10000, 4)}},
		{name: "last moment", wm: 14998, in: []record.Record{ev("a", 9999, "x")}, want: []string{countOut("a", 0, 10000, 5)}},
		{name: "purged", wm: 14999, in: []record.Record{ev("a", 4000, "x"), ev("a", 12000, "x")}, dead: 1},
		{name: "next window", wm: 19999, want: []string{countOut("a", 10000, 20000, 1)}, dead: 1},
	}
	for _, st := range steps {
		if st.wm != 0 {
			h.watermark(st.wm)
		}
		h.process(st.in...)
		equalStrings(t, st.name, values(h.take()), st.want)
		if len(h.dead) != st.dead {
			t.Fatalf("%s: %d dead letters, want %d: %v", st.name, len(h.dead), st.dead, h.dead)
		}
	}
	d := h.dead[0]
	if want := "late: event time 4000 (1970-01-01 00:00:04) is at or before watermark 14999 (1970-01-01 00:00:14.999) minus allowed lateness 5s: every window it falls in has closed"; d.Reason != want || d.Stage != "win" {
		t.Fatalf("dead letter %q at %q, want %q at win", d.Reason, d.Stage, want)
	}
	if d.Record.Timestamp != 4000 || string(d.Record.Key) != "a" {
		t.Fatalf("dead letter holds %+v, not the late record", d.Record)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name   string
		value  string
		reason string
	}{
		{name: "not JSON", value: `{"v":`, reason: "value is not JSON: "},
		{name: "missing", value: `{"w":1}`, reason: "sum(v): field not found"},
		{name: "string", value: `{"v":"3"}`, reason: "sum(v): field is a string, not a number"},
		{name: "null", value: `{"v":null}`, reason: "sum(v): field is null, not a number"},
		{name: "out of range", value: `{"v":1e999}`, reason: "sum(v): number 1e999 is out of range"},
		{name: "not an object", value: `[1]`, reason: "sum(v): field not found"},
		{name: "tombstone", value: "", reason: "value is not JSON: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []Kind{Tumbling, Session, Count} {
				cfg := Config{Kind: kind, TimeFormat: EpochMillis, Aggregates: []Aggregate{
					{Func: AggCount, As: "n"}, {Func: AggSum, Field: []string{"v"}, As: "sum"}}}
				switch kind {
				case Tumbling:
					cfg.Size = time.Second
				case Session:
					cfg.Gap = time.Second
				case Count:
					cfg.Count = 1
				}
				h := newHarness(t, cfg)
				bad := ev("k", 10, tt.value)
				if tt.value == "" {
					bad.Value = nil
				}
				h.process(bad, ev("k", 20, `{"v":2}`))
				h.watermark(math.MaxInt64)
				if len(h.dead) != 1 || !strings.HasPrefix(h.dead[0].Reason, tt.reason) || h.dead[0].Stage != "win" {
					t.Fatalf("%v: dead letters %+v, want one with reason %q", kind, h.dead, tt.reason)
				}
				got := values(h.take())
				if len(got) != 1 || !strings.HasSuffix(got[0], `"n":1,"sum":2}`) {
					t.Fatalf("%v: results %v, want one counting the good record alone", kind, got)
				}
			}
		})
	}
	t.Run("count reads no value", func(t *testing.T) {
		h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, TimeFormat: EpochMillis, Aggregates: countAggs})
		h.process(ev("k", 1, "not json"))
		h.watermark(999)
		equalStrings(t, "result", values(h.take()), []string{countOut("k", 0, 1000, 1)})
	})
	t.Run("custom Add error", func(t *testing.T) {
		h := newHarness(t, Config{Kind: Session, Gap: time.Second, Custom: &countAgg{fail: "bad"}})
		h.process(ev("k", 1, "bad"), ev("k", 2, "good"), ev("k", 3, "bad"))
		h.watermark(math.MaxInt64)
		equalStrings(t, "result", values(h.take()), []string{`["k",1]`})
		if len(h.dead) != 2 || h.dead[0].Reason != "aggregate: cannot add bad" {
			t.Fatalf("dead letters %+v", h.dead)
		}
	})
}

func TestEmitOnUpdate(t *testing.T) {
	h := newHarness(t, Config{Kind: Tumbling, Size: 10 * time.Second, Emit: OnUpdate, TimeFormat: EpochMillis, Aggregates: countAggs})
	h.process(ev("a", 1, "x"), ev("a", 2, "x"))
	equalStrings(t, "one result per call", values(h.take()), []string{countOut("a", 0, 10000, 2)})
	h.process(ev("a", 3, "x"), ev("b", 4, "x"), ev("a", 10001, "x"))
	equalStrings(t, "second call", values(h.take()), []string{
		countOut("a", 0, 10000, 3), countOut("a", 10000, 20000, 1), countOut("b", 0, 10000, 1)})
	h.watermark(9999)
	equalStrings(t, "close emits nothing more", values(h.take()), nil)
	if n := h.store.Len(); n != 1 {
		t.Fatalf("store holds %d keys, want the open window only", n)
	}
}

func TestEmitEvery(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, kind := range []Kind{Sliding, Session, Count} {
		t.Run(kind.String(), func(t *testing.T) {
			cfg := Config{Kind: kind, Emit: Every, EmitInterval: time.Second, Clock: clock, TimeFormat: EpochMillis, Aggregates: countAggs}
			var early, final []string
			switch kind {
			case Sliding:
				cfg.Size, cfg.Slide = 4*time.Second, 2*time.Second
				early = []string{countOut("a", -2000, 2000, 2), countOut("a", 0, 4000, 2)}
				final = []string{countOut("a", -2000, 2000, 2)}
			case Session:
				cfg.Gap = 4 * time.Second
				early = []string{countOut("a", 1, 4002, 2)}
				final = []string{countOut("a", 1, 4002, 2)}
			case Count:
				cfg.Count = 3
				early = []string{countOut("a", 1, 3, 2)}
				final = []string{countOut("a", 1, 4, 3)}
			}
			h := newHarness(t, cfg)
			h.process(ev("a", 1, "x"))
			now = now.Add(999 * time.Millisecond)
			h.process(ev("a", 2, "x"))
			equalStrings(t, "before the interval", values(h.take()), nil)
			now = now.Add(time.Millisecond)
			h.watermark(0)
			equalStrings(t, "early", values(h.take()), early)
			now = now.Add(5 * time.Second)
			h.watermark(1)
			equalStrings(t, "nothing changed", values(h.take()), nil)
			if kind == Count {
				h.process(ev("a", 3, "x"))
			} else {
				h.watermark(4001)
			}
			equalStrings(t, "final", values(h.take())[:1], final)
		})
	}
}

func TestTimeFormats(t *testing.T) {
	tests := []struct {
		name   string
		format TimeFormat
		size   time.Duration
		want   string
	}{
		{name: "sql whole seconds", format: SQL, size: time.Minute, want: `"window_start":"2024-03-17 09:20:00","window_end":"2024-03-17 09:21:00"`},
		{name: "sql fraction", format: SQL, size: 1500 * time.Millisecond, want: `"window_start":"2024-03-17 09:19:58.5","window_end":"2024-03-17 09:20:00"`},
		{name: "sql millis", format: SQL, size: 125 * time.Millisecond, want: `"window_start":"2024-03-17 09:19:59.875","window_end":"2024-03-17 09:20:00"`},
		{name: "rfc3339", format: RFC3339, size: 1500 * time.Millisecond, want: `"window_start":"2024-03-17T09:19:58.5Z","window_end":"2024-03-17T09:20:00Z"`},
		{name: "epoch", format: EpochMillis, size: time.Minute, want: fmt.Sprintf(`"window_start":%d,"window_end":%d`, at(0), at(time.Minute))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Kind: Tumbling, Size: tt.size, TimeFormat: tt.format, Aggregates: countAggs})
			ts := at(0)
			if tt.size != time.Minute {
				ts--
			}
			h.process(ev("k", ts, "x"))
			h.watermark(math.MaxInt64)
			want := `{"key":"k",` + tt.want + `,"n":1}`
			equalStrings(t, "result", values(h.take()), []string{want})
		})
	}
}

func TestNilAndEmptyKeys(t *testing.T) {
	h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, TimeFormat: EpochMillis, Aggregates: countAggs})
	empty := ev("", 1, "x")
	empty.Key = []byte{}
	h.process(ev("", 1, "x"), empty, ev("", 2, "x"))
	if n := h.store.Len(); n != 2 {
		t.Fatalf("store holds %d keys, want one for the nil key and one for the empty key", n)
	}
	h.watermark(999)
	got := h.take()
	equalStrings(t, "results", values(got), []string{
		`{"key":null,"window_start":0,"window_end":1000,"n":2}`, `{"key":"","window_start":0,"window_end":1000,"n":1}`})
	if !got[0].NilKey || got[1].NilKey {
		t.Fatalf("output keys: %+v", got)
	}
}

func TestStateLayout(t *testing.T) {
	aggs := []Aggregate{
		{Func: AggCount, As: "n"}, {Func: AggSum, Field: []string{"v"}, As: "s"}, {Func: AggAvg, Field: []string{"v"}, As: "a"},
		{Func: AggMin, Field: []string{"v"}, As: "mi"}, {Func: AggMax, Field: []string{"v"}, As: "ma"},
		{Func: AggFirst, Field: []string{"v"}, As: "f"}, {Func: AggLast, As: "l"},
		{Func: AggCountDistinct, Field: []string{"v"}, As: "d", Exact: 3},
	}
	for _, kind := range []Kind{Tumbling, Sliding, Session, Count, Cumulate} {
		t.Run(kind.String(), func(t *testing.T) {
			cfg := Config{Kind: kind, Aggregates: aggs}
			switch kind {
			case Tumbling:
				cfg.Size = 10 * time.Second
			case Sliding, Cumulate:
				cfg.Size, cfg.Slide = 10*time.Second, 2*time.Second
			case Session:
				cfg.Gap = 3 * time.Second
			case Count:
				cfg.Count = 100
			}
			h := newHarness(t, cfg)
			calls := 0
			for i := range 20 {
				h.process(ev(fmt.Sprint("k", i%3), int64(i*700), fmt.Sprintf(`{"v":%d.5}`, i%5)))
				calls++
			}
			if h.store.applies != calls {
				t.Fatalf("%d Apply calls for %d Process calls", h.store.applies, calls)
			}
			// Every open unit is in the store, encoded as appendUnit does,
			// and decodes to itself.
			n := 0
			for _, ks := range h.op.keys {
				for i := range ks.units {
					u := &ks.units[i]
					v, ok, _ := h.store.Get(h.op.stateKey(ks, u.start))
					if !ok {
						t.Fatalf("unit %+v of %q is not in the store", u, ks.key)
					}
					if want := h.op.appendUnit(nil, u); string(v) != string(want) {
						t.Fatalf("stored %x, want %x", v, want)
					}
					d, err := h.op.decodeUnit(v, u.start)
					if err != nil {
						t.Fatalf("decode: %v", err)
					}
					if again := h.op.appendUnit(nil, &d); string(again) != string(v) {
						t.Fatalf("decoded unit encodes as %x, want %x", again, v)
					}
					if _, err := h.op.decodeUnit(v[:len(v)-1], u.start); err == nil {
						t.Fatalf("a truncated unit decodes")
					}
					n++
				}
			}
			if n != h.store.Len() || n == 0 {
				t.Fatalf("store holds %d keys for %d open units", h.store.Len(), n)
			}
			before := h.store.applies
			h.watermark(math.MaxInt64)
			if want := before + 1; kind == Count && h.store.applies != before || kind != Count && h.store.applies != want {
				t.Fatalf("OnWatermark made %d Apply calls, want 1 (0 for count windows, which it leaves alone)", h.store.applies-before)
			}
			if kind != Count && h.store.Len() != 0 {
				t.Fatalf("store holds %d keys after every window closed", h.store.Len())
			}
		})
	}
}

func TestStoreError(t *testing.T) {
	h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, Aggregates: countAggs})
	h.store.fail = fmt.Errorf("disk full")
	err := h.op.Process(t.Context(), []record.Record{ev("k", 1, "x")}, &h.out)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Process error %v, want the store's", err)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Name: "w", Kind: Tumbling, Size: time.Second, Aggregates: countAggs}
	tests := []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{name: "valid", change: func(c *Config) {}},
		{name: "no name", change: func(c *Config) { c.Name = "" }, want: "Name is required"},
		{name: "no store", change: func(c *Config) { c.Store = nil }, want: "Store is required"},
		{name: "no kind", change: func(c *Config) { c.Kind = 0 }, want: "is not a window kind"},
		{name: "no size", change: func(c *Config) { c.Size = 0 }, want: "Size is required"},
		{name: "sub-millisecond", change: func(c *Config) { c.Size = time.Second + 1 }, want: "not a whole number of milliseconds"},
		{name: "slide for tumbling", change: func(c *Config) { c.Slide = time.Second }, want: "Slide does not apply to tumbling windows"},
		{name: "slide over size", change: func(c *Config) { c.Kind, c.Slide = Sliding, 2*time.Second }, want: "slide 2s is longer than size 1s"},
		{name: "cumulate step", change: func(c *Config) { c.Kind, c.Size, c.Slide = Cumulate, 5*time.Second, 2*time.Second }, want: "size 5s must be a whole number of steps 2s"},
		{name: "no gap", change: func(c *Config) { c.Kind, c.Size = Session, 0 }, want: "Gap is required"},
		{name: "count lateness", change: func(c *Config) {
			c.Kind, c.Size, c.Count, c.AllowedLateness = Count, 0, 5, time.Second
		}, want: "allowed_lateness: does not apply to a count window"},
		{name: "no count", change: func(c *Config) { c.Kind, c.Size = Count, 0 }, want: "Count must be positive"},
		{name: "negative lateness", change: func(c *Config) { c.AllowedLateness = -time.Second }, want: "AllowedLateness is negative"},
		{name: "every without interval", change: func(c *Config) { c.Emit = Every }, want: `emit: every needs a positive "emit_interval"`},
		{name: "interval without every", change: func(c *Config) { c.EmitInterval = time.Second }, want: "emit_interval: only applies with emit: every"},
		{name: "no aggregate", change: func(c *Config) { c.Aggregates = nil }, want: "an aggregate is required"},
		{name: "both", change: func(c *Config) { c.Custom = &countAgg{} }, want: "one of Aggregates must be AggCustom"},
		{name: "no as", change: func(c *Config) { c.Aggregates = []Aggregate{{Func: AggCount}} }, want: "As is required"},
		{name: "reserved as", change: func(c *Config) { c.Aggregates = []Aggregate{{Func: AggCount, As: "window_end"}} }, want: `output field "window_end" is already used`},
		{name: "key field as", change: func(c *Config) { c.KeyField = "n" }, want: `output field "n" is already used`},
		{name: "sum without field", change: func(c *Config) { c.Aggregates = []Aggregate{{Func: AggSum, As: "s"}} }, want: "sum needs a Field"},
		{name: "exact on sum", change: func(c *Config) {
			c.Aggregates = []Aggregate{{Func: AggSum, Field: []string{"v"}, As: "s", Exact: 3}}
		}, want: "exact: only applies to count_distinct"},
		{name: "exact too big", change: func(c *Config) {
			c.Aggregates = []Aggregate{{Func: AggCountDistinct, Field: []string{"v"}, As: "s", Exact: MaxExact + 1}}
		}, want: "is not within"},
		{name: "bad func", change: func(c *Config) { c.Aggregates = []Aggregate{{Func: 99, As: "x"}} }, want: "is not an aggregate function"},
		{name: "empty path part", change: func(c *Config) {
			c.Aggregates = []Aggregate{{Func: AggSum, Field: []string{"a", ""}, As: "x"}}
		}, want: "has an empty part"},
		{name: "bad emit", change: func(c *Config) { c.Emit = 9 }, want: "is not an emit mode"},
		{name: "bad format", change: func(c *Config) { c.TimeFormat = 9 }, want: "is not a time format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			c.Store = newHarness(t, ok).store
			tt.change(&c)
			_, err := New(c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestCustomSliding merges a Custom aggregator's pane accumulators.
func TestCustomSliding(t *testing.T) {
	agg := &countAgg{}
	h := newHarness(t, Config{Kind: Sliding, Size: 10 * time.Second, Slide: 5 * time.Second, Custom: agg})
	h.process(ev("TR", 1000, "x"), ev("TR", 6000, "x"), ev("TR", 7000, "x"), ev("JP", 8000, "x"))
	h.watermark(math.MaxInt64)
	equalStrings(t, "results", values(h.take()), []string{
		`["TR",1]`,             // [-5s, 5s)
		`["TR",3]`, `["JP",1]`, // [0s, 10s): two panes merged
		`["TR",2]`, `["JP",1]`, // [5s, 15s)
	})
	if agg.merges == 0 {
		t.Fatal("Merge was not called")
	}
}

// TestIdleKeys checks that a key without data is forgotten after a purge
// more than its last, or once nothing is open.
func TestIdleKeys(t *testing.T) {
	h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, Aggregates: countAggs})
	h.process(ev("a", 0, "x"), ev("b", 0, "x"), ev("c", 5000, "x"))
	h.watermark(999)
	if len(h.op.keys) != 3 {
		t.Fatalf("%d keys after the first purge, want 3: a and b kept idle", len(h.op.keys))
	}
	h.process(ev("b", 1000, "x"))
	h.watermark(1999)
	if _, ok := h.op.keys["a"]; ok || len(h.op.keys) != 2 {
		t.Fatalf("keys after the second purge: %v, want b (idle) and c", h.op.keys)
	}
	h.watermark(5999)
	if len(h.op.keys) != 0 || h.store.Len() != 0 {
		t.Fatalf("%d keys in memory, %d in the store after every window closed", len(h.op.keys), h.store.Len())
	}
}

func TestClosed(t *testing.T) {
	h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, Aggregates: countAggs})
	if err := h.op.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := h.op.Process(t.Context(), []record.Record{ev("k", 1, "x")}, &h.out); err == nil {
		t.Fatal("Process after Close succeeded")
	}
	if err := h.op.OnWatermark(t.Context(), 5, &h.out); err == nil {
		t.Fatal("OnWatermark after Close succeeded")
	}
}

func TestTimeOutOfRange(t *testing.T) {
	for _, kind := range []Kind{Sliding, Session} {
		cfg := Config{Kind: kind, Size: 10 * time.Second, Slide: 3 * time.Second, Aggregates: countAggs}
		if kind == Session {
			cfg = Config{Kind: kind, Gap: time.Second, Aggregates: countAggs}
		}
		h := newHarness(t, cfg)
		h.process(ev("k", math.MaxInt64-5, "x"), ev("k", math.MinInt64+5, "x"), ev("k", 1, "x"))
		if len(h.dead) != 2 || !strings.Contains(h.dead[0].Reason, "out of range") {
			t.Fatalf("%v: dead letters %+v", kind, h.dead)
		}
	}
}
