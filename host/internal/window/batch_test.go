package window

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// seqAgg is an order-sensitive test Aggregator: its accumulator is the
// values added, comma-separated, and it rejects values containing "bad".
type seqAgg struct{}

func (seqAgg) Create() []byte { return []byte{} }

func (seqAgg) Add(acc []byte, rec *record.Record) ([]byte, error) {
	if strings.Contains(string(rec.Value), "bad") {
		return nil, errors.New("cannot add " + string(rec.Value))
	}
	out := append([]byte(nil), acc...)
	if len(out) > 0 {
		out = append(out, ',')
	}
	return append(out, rec.Value...), nil
}

func (seqAgg) Merge(a, b []byte) ([]byte, error) {
	switch {
	case len(a) == 0:
		return append([]byte(nil), b...), nil
	case len(b) == 0:
		return append([]byte(nil), a...), nil
	}
	return append(append(append([]byte(nil), a...), ';'), b...), nil
}

func (seqAgg) Result(acc []byte, _ ResultContext) ([]byte, error) {
	return []byte(strconv.Quote(string(acc))), nil
}

// batchSeqAgg is seqAgg with AddBatch, which reuses the accumulators'
// memory, as the plugin adapter does.
type batchSeqAgg struct {
	seqAgg
	calls, groups int
}

func (b *batchSeqAgg) AddBatch(groups []AddGroup) error {
	b.calls++
	b.groups += len(groups)
	for i := range groups {
		g := &groups[i]
		acc := append([]byte(nil), g.Acc...)
		for k := range g.Records {
			a, err := b.Add(acc, &g.Records[k])
			if err != nil {
				g.Errs[k] = err
				continue
			}
			acc = a
		}
		g.Acc = append(g.Acc[:0], acc...)
	}
	return nil
}

// TestBatchedAdds: a time window whose Custom aggregator batches its adds
// (BatchAggregator) emits exactly what it emits adding record by record,
// with the same dead letters in the same order, over generated input:
// many keys, records of one call in several panes, late, out-of-range,
// unreadable and rejected records, keys all of whose records are
// rejected, plugin-only and mixed windows, every emit mode.
func TestBatchedAdds(t *testing.T) {
	kinds := []Config{
		{Kind: Tumbling, Size: time.Second},
		{Kind: Sliding, Size: 3 * time.Second, Slide: time.Second},
		{Kind: Cumulate, Size: 4 * time.Second, Slide: time.Second},
	}
	aggs := map[string][]Aggregate{
		"plugin": nil,
		"mixed":  {{Func: AggCount, As: "n"}, {Func: AggCustom, As: "c"}, {Func: AggSum, Field: []string{"v"}, As: "sum"}, {Func: AggLast, As: "last"}},
	}
	for _, kc := range kinds {
		for aname, as := range aggs {
			for _, emit := range []EmitMode{OnClose, OnUpdate, Every} {
				for _, late := range []time.Duration{0, 2 * time.Second} {
					name := fmt.Sprintf("%s/%s/%s/late%v", kc.Kind, aname, emit, late)
					t.Run(name, func(t *testing.T) {
						testBatchedAdds(t, kc, as, emit, late)
					})
				}
			}
		}
	}
}

func testBatchedAdds(t *testing.T, kc Config, as []Aggregate, emit EmitMode, late time.Duration) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mk := func(custom Aggregator) *harness {
		cfg := kc
		cfg.Aggregates, cfg.Custom, cfg.Emit, cfg.AllowedLateness, cfg.Clock = as, custom, emit, late, clock
		if emit == Every {
			cfg.EmitInterval = 3 * time.Second
		}
		return newHarness(t, cfg)
	}
	batched := &batchSeqAgg{}
	one, many := mk(seqAgg{}), mk(batched)
	if many.op.batch.agg == nil || one.op.batch.agg != nil {
		t.Fatal("the operator with a BatchAggregator should batch, the other not")
	}
	rng := rand.New(rand.NewSource(int64(kc.Kind)*100 + int64(emit)*10 + int64(late/time.Second)))
	keys := []string{"", "a", "b", "c", "allbad"}
	for i := range 40 {
		keys = append(keys, "k"+strconv.Itoa(i))
	}
	base := int64(10_000)
	wm := int64(0)
	for step := range 60 {
		var in []record.Record
		for range rng.Intn(200) {
			k := keys[rng.Intn(len(keys))]
			ts := base + int64(rng.Intn(4000)) - 1500
			v := strconv.Itoa(rng.Intn(1000))
			val := `{"v":` + v + `}`
			switch r := rng.Intn(20); {
			case k == "allbad" || r == 0:
				val = `{"v":` + v + `,"s":"bad"}`
			case r == 1:
				val = `not json ` + v
			case r == 2:
				ts = 1 << 62 // out of range
			}
			rec := ev(k, ts, val)
			if k == "" && rng.Intn(2) == 0 {
				rec.Key = []byte{} // the empty key, not the nil one
			}
			in = append(in, rec)
		}
		// Process gets its own copy: both operators may keep nothing of it.
		one.process(clone(in)...)
		many.process(clone(in)...)
		now = now.Add(time.Second)
		if step%3 == 2 {
			wm = base - int64(rng.Intn(1500))
			one.watermark(wm)
			many.watermark(wm)
		}
		base += int64(rng.Intn(1200))
		compareHarnesses(t, step, one, many)
	}
	one.watermark(1 << 60)
	many.watermark(1 << 60)
	compareHarnesses(t, -1, one, many)
	if batched.calls == 0 {
		t.Fatal("AddBatch was never called")
	}
	if batched.groups <= batched.calls {
		t.Fatalf("%d groups over %d AddBatch calls: the calls should have many groups", batched.groups, batched.calls)
	}
}

func clone(in []record.Record) []record.Record {
	out := make([]record.Record, len(in))
	for i, r := range in {
		r.Value = append([]byte(nil), r.Value...)
		if r.Key != nil {
			r.Key = append([]byte{}, r.Key...)
		}
		out[i] = r
	}
	return out
}

func compareHarnesses(t *testing.T, step int, one, many *harness) {
	t.Helper()
	a, b := one.take(), many.take()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("step %d: results differ:\nper record:\n  %v\nbatched:\n  %v", step, a, b)
	}
	if len(one.dead) != len(many.dead) {
		t.Fatalf("step %d: %d dead letters per record, %d batched", step, len(one.dead), len(many.dead))
	}
	for i := range one.dead {
		x, y := one.dead[i], many.dead[i]
		if x.Reason != y.Reason || x.Stage != y.Stage || string(x.Record.Key) != string(y.Record.Key) ||
			string(x.Record.Value) != string(y.Record.Value) || x.Record.Timestamp != y.Record.Timestamp {
			t.Fatalf("step %d: dead letter %d differs:\nper record: %+v\nbatched:    %+v", step, i, x, y)
		}
	}
	one.dead, many.dead = nil, nil
}

// failingBatchAgg is batchSeqAgg whose AddBatch fails while fail is set.
type failingBatchAgg struct {
	batchSeqAgg
	fail bool
}

func (f *failingBatchAgg) AddBatch(groups []AddGroup) error {
	if f.fail {
		return errors.New("guest gone")
	}
	return f.batchSeqAgg.AddBatch(groups)
}

// TestBatchedAddFails: an AddBatch error rejects every record of the
// call, late ones keeping their own reason, as Add's errors reject their
// records, and changes no window.
func TestBatchedAddFails(t *testing.T) {
	agg := &failingBatchAgg{}
	h := newHarness(t, Config{Kind: Tumbling, Size: time.Second, Custom: agg})
	h.process(ev("a", 100, "1"), ev("b", 1100, "2"))
	h.watermark(999)
	equalStrings(t, "results", values(h.take()), []string{`"1"`})
	agg.fail = true
	h.process(ev("b", 1200, "3"), ev("a", 500, "4"), ev("c", 1300, "5"))
	agg.fail = false
	h.watermark(5000)
	equalStrings(t, "results", values(h.take()), []string{`"2"`})
	var dead []string
	for _, d := range h.dead {
		dead = append(dead, string(d.Record.Value)+": "+strings.SplitN(d.Reason, " (", 2)[0])
	}
	equalStrings(t, "dead letters", dead, []string{"3: aggregate: guest gone", "4: late: event time 500", "5: aggregate: guest gone"})
}
