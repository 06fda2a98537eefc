package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

func TestWatermarks(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { return now }
	rec := func(part int32, ts int64) record.Record {
		return record.Record{Timestamp: ts, Origin: record.Origin{Topic: "t", Partition: part}}
	}
	et := &EventTime{MaxOutOfOrderness: 5 * time.Millisecond, IdleTimeout: time.Second, IdleAdvance: true}
	w := newWatermarks([]*EventTime{et}, 1, nil, clock)
	if got := w.current(); got != NoWatermark {
		t.Fatalf("before any record: %d", got)
	}
	w.observe(0, []record.Record{rec(0, 100), rec(1, 50), rec(0, 90)})
	if got := w.current(); got != 45 {
		t.Fatalf("watermark %d, want min(100, 50) - 5 = 45", got)
	}
	now = now.Add(500 * time.Millisecond)
	w.observe(0, []record.Record{rec(0, 200)})
	if got := w.current(); got != 45 {
		t.Fatalf("watermark %d, want 45: partition 1 is behind and not yet idle", got)
	}
	now = now.Add(600 * time.Millisecond) // partition 1 quiet for 1.1 s
	if got := w.current(); got != 195 {
		t.Fatalf("watermark %d, want 195: idle partition 1 no longer holds it back", got)
	}
	now = now.Add(2 * time.Second) // everything quiet, 2.6 s since the last record
	if got := w.current(); got != 195+2600 {
		t.Fatalf("watermark %d, want 195 + 2600: advancing with the wall clock while all is idle", got)
	}
	// Processing time: the wall clock.
	pw := newWatermarks(nil, 1, nil, clock)
	if got := pw.current(); got != now.UnixMilli()-1 {
		t.Fatalf("processing-time watermark %d", got)
	}
}

func TestEventTimeField(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		format  TimeFormat
		want    int64
		wantErr string
	}{
		{name: "millis", value: `{"ts":1722960137000}`, format: TimeEpochMillis, want: 1722960137000},
		{name: "seconds", value: `{"ts":1722960137.5}`, format: TimeEpochSeconds, want: 1722960137500},
		{name: "rfc3339", value: `{"ts":"2024-08-06T16:02:17Z"}`, format: TimeRFC3339, want: 1722960137000},
		{name: "sql", value: `{"ts":"2024-08-06 16:02:17.250"}`, format: TimeSQL, want: 1722960137250},
		{name: "missing", value: `{"x":1}`, format: TimeEpochMillis, wantErr: "field not found"},
		{name: "wrong kind", value: `{"ts":"soon"}`, format: TimeEpochMillis, wantErr: "want a number"},
		{name: "not json", value: `nope`, format: TimeEpochMillis, wantErr: "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := record.Record{Value: []byte(tt.value)}
			err := (&EventTime{Field: []string{"ts"}, Format: tt.format}).stamp(&r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || r.Timestamp != tt.want {
				t.Fatalf("timestamp %d, %v; want %d", r.Timestamp, err, tt.want)
			}
		})
	}
}

// windowCounter is a test event-time operator: it counts records per key
// and 100 ms tumbling window, and emits "key start count" for each window
// the watermark closes. It also checks that watermarks never go back.
type windowCounter struct {
	counts map[string]map[int64]int
	last   int64
	back   *bool
	mu     *sync.Mutex
}

func (c *windowCounter) Name() string                { return "window" }
func (c *windowCounter) Close(context.Context) error { return nil }
func (c *windowCounter) Process(_ context.Context, in []record.Record, _ *record.Output) error {
	for _, r := range in {
		k := string(r.Key)
		if c.counts[k] == nil {
			c.counts[k] = map[int64]int{}
		}
		c.counts[k][r.Timestamp/100*100]++
	}
	return nil
}
func (c *windowCounter) OnWatermark(_ context.Context, wm int64, out *record.Output) error {
	if wm < c.last {
		c.mu.Lock()
		*c.back = true
		c.mu.Unlock()
	}
	c.last = wm
	for k, ws := range c.counts {
		for start, n := range ws {
			if start+100-1 <= wm {
				out.Records = append(out.Records, record.Record{Key: out.Arena.Copy([]byte(k)),
					Value: out.Arena.Copy(fmt.Appendf(nil, "%s %d %d", k, start, n))})
				delete(ws, start)
			}
		}
	}
	return nil
}

// windowCounts reads windowCounter's output, "key start count" lines,
// into counts by "key start", failing the test if a window came out twice
// (a record arrived after the watermark had passed it).
func windowCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var k string
		var start int64
		var c int
		fmt.Sscanf(line, "%s %d %d", &k, &start, &c)
		key := fmt.Sprintf("%s %d", k, start)
		if _, dup := got[key]; dup {
			t.Fatalf("window %s emitted twice: a record came after the watermark passed it", key)
		}
		got[key] = c
	}
	return got
}

// TestEventTimeWindowsFire runs a keyed window operator on two workers over
// records with an event-time field, out of order within the bound, and
// checks that every window comes out once with its full count: the last
// windows close on the final watermark at the end of the input.
func TestEventTimeWindowsFire(t *testing.T) {
	const n, keys = 5000, 7
	var lines []string
	want := map[string]int{}
	for i := range n {
		ts := int64(i) - int64(i%3) // slightly out of order
		k := fmt.Sprintf("k%d", i%keys)
		lines = append(lines, fmt.Sprintf(`{"k":%q,"ts":%d}`, k, ts))
		want[fmt.Sprintf("%s %d", k, ts/100*100)]++
	}
	src := NewFileSource("in", writeFile(t, strings.Join(lines, "\n")), FormatJSONLines)
	var back bool
	var mu sync.Mutex
	var out bytes.Buffer
	p := &Pipeline{
		Sources: []Source{src},
		Steps: []Step{keyByStep("by", []string{"k"}), {Name: "window", New: func(context.Context) (Operator, error) {
			return &windowCounter{counts: map[string]map[int64]int{}, last: math.MinInt64, back: &back, mu: &mu}, nil
		}}},
		Sinks:             []Sink{NewWriterSink("out", "buffer", &out, SinkRaw, false)},
		DeadLetter:        NewDeadLetterWriter("discard", io.Discard, false),
		BatchSize:         64,
		Parallelism:       2,
		EventTime:         []*EventTime{{Field: []string{"ts"}, MaxOutOfOrderness: 5 * time.Millisecond}},
		WatermarkInterval: 10 * time.Millisecond,
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if back {
		t.Error("a worker saw its watermark go back")
	}
	got := windowCounts(t, out.String())
	if len(got) != len(want) {
		var missing []string
		for k := range want {
			if _, ok := got[k]; !ok {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		t.Fatalf("%d windows emitted, want %d; missing %v", len(got), len(want), missing[:min(5, len(missing))])
	}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("window %s counted %d, want %d", k, got[k], c)
		}
	}
}

// firer emits, on every watermark, one record stamped with it, as a window
// emits a result stamped with its last instant when the watermark closes
// it. It drops its input.
type firer struct{ fired *atomic.Int64 }

func (f *firer) Name() string                { return "firer" }
func (f *firer) Close(context.Context) error { return nil }
func (f *firer) Process(context.Context, []record.Record, *record.Output) error {
	return nil
}
func (f *firer) OnWatermark(_ context.Context, wm int64, out *record.Output) error {
	if wm == math.MaxInt64 {
		return nil
	}
	f.fired.Add(1)
	out.Records = append(out.Records, record.Record{Value: []byte(fmt.Sprintf(`{"k":"k%d"}`, wm%5)), Timestamp: wm})
	return nil
}

// lateCounter counts the records that reach it at or behind its watermark.
type lateCounter struct {
	wm         int64
	seen, late *atomic.Int64
}

func (l *lateCounter) Name() string                { return "late" }
func (l *lateCounter) Close(context.Context) error { return nil }
func (l *lateCounter) Process(_ context.Context, in []record.Record, _ *record.Output) error {
	for _, r := range in {
		l.seen.Add(1)
		if r.Timestamp <= l.wm {
			l.late.Add(1)
		}
	}
	return nil
}
func (l *lateCounter) OnWatermark(_ context.Context, wm int64, _ *record.Output) error {
	l.wm = wm
	return nil
}

// TestFiredResultsAreNotLateDownstream: what an operator emits when the
// watermark advances reaches the operators after a key_by before that
// watermark does, so a window there does not drop it as late.
func TestFiredResultsAreNotLateDownstream(t *testing.T) {
	var fired, seen, late atomic.Int64
	p := &Pipeline{
		Sources: []Source{&countSource{n: 5000, keys: 7}},
		Steps: []Step{
			{Name: "firer", New: func(context.Context) (Operator, error) { return &firer{fired: &fired}, nil }},
			keyByStep("key", []string{"k"}),
			{Name: "late", New: func(context.Context) (Operator, error) {
				return &lateCounter{wm: NoWatermark, seen: &seen, late: &late}, nil
			}},
		},
		Sinks:       []Sink{&memSink{}},
		BatchSize:   16,
		Parallelism: 3,
		EventTime:   []*EventTime{{}},
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fired.Load() == 0 || seen.Load() != fired.Load() || late.Load() != 0 {
		t.Fatalf("fired %d, seen downstream %d, of which late %d; want all seen, none late", fired.Load(), seen.Load(), late.Load())
	}
}

// burst emits n records the first time the watermark moves.
type burst struct {
	n    int
	done bool
}

func (b *burst) Name() string                                                   { return "burst" }
func (b *burst) Close(context.Context) error                                    { return nil }
func (b *burst) Process(context.Context, []record.Record, *record.Output) error { return nil }
func (b *burst) OnWatermark(_ context.Context, _ int64, out *record.Output) error {
	if !b.done {
		b.done = true
		for i := range b.n {
			out.Records = append(out.Records, record.Record{Value: []byte(fmt.Sprint(i)), Timestamp: 1})
		}
	}
	return nil
}

// maxBatch records the largest batch it was given, and how many records.
type maxBatch struct{ largest, total *atomic.Int64 }

func (m *maxBatch) Name() string                { return "max" }
func (m *maxBatch) Close(context.Context) error { return nil }
func (m *maxBatch) Process(_ context.Context, in []record.Record, _ *record.Output) error {
	m.total.Add(int64(len(in)))
	for {
		cur := m.largest.Load()
		if int64(len(in)) <= cur || m.largest.CompareAndSwap(cur, int64(len(in))) {
			return nil
		}
	}
}

// TestFiredResultsAreChunked: what a watermark fires reaches the next
// operator in batches of its batch size, not all at once.
func TestFiredResultsAreChunked(t *testing.T) {
	var largest, total atomic.Int64
	p := &Pipeline{
		Sources: []Source{&countSource{n: 100, keys: 7}},
		Steps: []Step{
			{Name: "burst", New: func(context.Context) (Operator, error) { return &burst{n: 1000}, nil }},
			{Name: "max", BatchSize: 16, New: func(context.Context) (Operator, error) { return &maxBatch{largest: &largest, total: &total}, nil }},
		},
		Sinks:     []Sink{&memSink{}},
		BatchSize: 64,
		EventTime: []*EventTime{{}},
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if total.Load() != 1000 || largest.Load() > 16 {
		t.Fatalf("%d records, largest batch %d; want 1000 in batches of at most 16", total.Load(), largest.Load())
	}
}
