package wasm

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// ttlStep is one batch of the TTL scenario: the records (key=value, with
// event times), the wall clock at the call, the watermark before it, and
// what the rmw guest answers for each: the value it read (empty when absent
// or expired).
type ttlStep struct {
	recs  []string
	times []int64
	clock int64
	wm    int64
	want  []string
}

func runTTL(t *testing.T, event bool, steps []ttlStep) (*Worker, *state.Memory) {
	t.Helper()
	var now time.Time
	cfg := watConfig(t, "statebench")
	cfg.InitConfig = []byte(`{"op":"rmw"}`)
	cfg.StateTTL, cfg.StateTTLEventTime = time.Second, event
	cfg.Clock = func() time.Time { return now }
	st := state.NewMemory()
	cfg.Store = st
	_, w := mustLoad(t, newRuntime(t, nil), cfg)
	for i, s := range steps {
		now = time.UnixMilli(s.clock)
		w.SetWatermark(s.wm)
		in := recs(s.recs...)
		for j := range in {
			in[j].Timestamp = s.times[j]
		}
		var out record.Output
		if err := w.Process(context.Background(), in, &out); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := strings.Join(values(out.Records), ","); got != strings.Join(s.want, ",") {
			t.Fatalf("step %d: read %q, want %q", i, got, strings.Join(s.want, ","))
		}
	}
	return w, st
}

// State expires a TTL after it was last written, in processing time (the
// wall clock at the call) or in event time (the reading record's time, or
// the watermark if later), and the sweep deletes what expired.
func TestStateTTL(t *testing.T) {
	t.Run("processing time", func(t *testing.T) {
		w, st := runTTL(t, false, []ttlStep{
			{recs: []string{"a=1", "b=1"}, times: []int64{0, 0}, clock: 10_000, want: []string{"", ""}},
			{recs: []string{"a=2"}, times: []int64{0}, clock: 10_999, want: []string{"1"}},              // 999 ms: alive
			{recs: []string{"a=3", "b=2"}, times: []int64{0, 0}, clock: 11_999, want: []string{"", ""}}, // a 1000 ms after its write, b 1999
			{recs: []string{"a=4"}, times: []int64{0}, clock: 12_500, want: []string{"3"}},
		})
		// Everything was written at 12,500 or before; at 13,499 a is
		// alive and b (written at 11,999) expired.
		w.p.ttl.now = func() time.Time { return time.UnixMilli(13_499) }
		n, err := w.SweepExpired(nil)
		if err != nil || n != 1 || st.Len() != 1 {
			t.Fatalf("sweep deleted %d (err %v), %d left; want 1 and 1", n, err, st.Len())
		}
	})
	t.Run("event time", func(t *testing.T) {
		w, st := runTTL(t, true, []ttlStep{
			{recs: []string{"a=1", "b=1"}, times: []int64{100, 100}, wm: math.MinInt64, want: []string{"", ""}},
			{recs: []string{"a=2"}, times: []int64{1099}, wm: 0, want: []string{"1"}},    // 999 ms of event time
			{recs: []string{"a=3"}, times: []int64{2099}, wm: 500, want: []string{""}},   // 1000 ms after a's write at 1099
			{recs: []string{"b=2"}, times: []int64{600}, wm: 1100, want: []string{""}},   // the watermark, not the record, expires b
			{recs: []string{"a=4"}, times: []int64{2200}, wm: 1100, want: []string{"3"}}, // a rewritten at 2099
		})
		w.SetWatermark(2599) // b written at 600 expires; a at 2200 does not
		if n, err := w.SweepExpired(nil); err != nil || n != 1 || st.Len() != 1 {
			t.Fatalf("sweep deleted %d (err %v), %d left; want 1 and 1", n, err, st.Len())
		}
		w.SetWatermark(math.MaxInt64)
		if n, err := w.SweepExpired(nil); err != nil || n != 1 || st.Len() != 0 {
			t.Fatalf("final sweep deleted %d (err %v), %d left; want 1 and 0", n, err, st.Len())
		}
	})
	t.Run("sweep keeps other workers' keys", func(t *testing.T) {
		w, st := runTTL(t, false, []ttlStep{
			{recs: []string{"a=1", "b=1"}, times: []int64{0, 0}, clock: 0, want: []string{"", ""}},
		})
		w.p.ttl.now = func() time.Time { return time.UnixMilli(5000) }
		n, err := w.SweepExpired(func(k []byte) bool { return string(k) == "a" })
		if err != nil || n != 1 || st.Len() != 1 {
			t.Fatalf("sweep deleted %d (err %v), %d left; want 1 and 1", n, err, st.Len())
		}
	})
}

// Turning a TTL on over state written without one fails the call with
// ErrState rather than reading garbage.
func TestStateTTLUnstampedValue(t *testing.T) {
	cfg := watConfig(t, "statebench")
	cfg.InitConfig = []byte(`{"op":"rmw"}`)
	cfg.StateTTL = time.Second
	st := state.NewMemory()
	st.Apply([]state.Mutation{{Key: state.Key(nil, cfg.Operator, []byte("a"), []byte("v")), Value: []byte("old")}})
	cfg.Store = st
	_, w := mustLoad(t, newRuntime(t, nil), cfg)
	var out record.Output
	err := w.Process(context.Background(), []record.Record{{Key: []byte("a"), Value: []byte("x")}}, &out)
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "no TTL stamp") {
		t.Fatalf("error %v, want ErrState about the missing stamp", err)
	}
}

func TestStateTTLConfig(t *testing.T) {
	cfg := watConfig(t, "statebench")
	cfg.InitConfig = []byte(`{"op":"rmw"}`)
	cfg.StateTTL = 1500 * time.Microsecond
	if _, err := newRuntime(t, nil).Load(context.Background(), cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("sub-millisecond TTL: %v, want ErrConfig", err)
	}
}
