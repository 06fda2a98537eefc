package join

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

func rec(source, key string, ts, offset int64, value string) record.Record {
	return record.Record{Key: []byte(key), Value: []byte(value), Timestamp: ts,
		Origin: record.Origin{Source: source, Partition: 0, Offset: offset}}
}

// storedEntries counts the operator's entries in the store.
func storedEntries(t *testing.T, s state.Scanner) int {
	t.Helper()
	n := 0
	if err := s.Scan(state.OperatorPrefix(nil, "j"), func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIntervalJoin drives one instance step by step: pairs within the
// bound, none outside it, stored records dropped when the watermark passes
// what they could match, a late record refused, and the index rebuilt by a
// new instance on the same store.
func TestIntervalJoin(t *testing.T) {
	ctx := context.Background()
	store := state.NewMemory()
	newOp := func() *Operator {
		o, err := New(Config{Name: "j", Left: "a", Right: "p", Bounded: true, Lower: -10, Upper: 5, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := newOp()
	steps := []struct {
		name  string
		in    []record.Record
		wm    int64 // then this watermark, if not 0
		pairs []string
		dead  string // a dead letter's reason contains this
		left  int    // entries stored after the step
	}{
		{name: "a right within the bound before the left", in: []record.Record{rec("p", "k", 95, 1, `"R1"`), rec("a", "k", 100, 1, `"L1"`)},
			pairs: []string{`{"a":"L1","p":"R1"}@100`}, left: 2},
		{name: "a right after the bound", in: []record.Record{rec("p", "k", 120, 2, `"R2"`)}, left: 3},
		{name: "another key", in: []record.Record{rec("p", "x", 100, 3, `"RX"`)}, left: 4},
		{name: "watermark 105 drops L1 (100+5) and R1 (95+10), RX (100+10) stays", wm: 105, left: 2},
		{name: "a late left", in: []record.Record{rec("a", "k", 90, 2, `"L2"`)}, dead: "late", left: 2},
		{name: "a left that R2 matches", in: []record.Record{rec("a", "k", 125, 3, `"L3"`)},
			pairs: []string{`{"a":"L3","p":"R2"}@125`}, left: 3},
		{name: "a third source", in: []record.Record{rec("z", "k", 125, 1, `"Z"`)}, dead: "neither side", left: 3},
	}
	for _, st := range steps {
		var out record.Output
		if len(st.in) > 0 {
			if err := o.Process(ctx, st.in, &out); err != nil {
				t.Fatal(err)
			}
		}
		if st.wm != 0 {
			if err := o.OnWatermark(ctx, st.wm, &out); err != nil {
				t.Fatal(err)
			}
		}
		var pairs []string
		for _, r := range out.Records {
			pairs = append(pairs, string(r.Value)+"@"+strconv.FormatInt(r.Timestamp, 10))
		}
		if strings.Join(pairs, " ") != strings.Join(st.pairs, " ") {
			t.Errorf("%s: pairs %v, want %v", st.name, pairs, st.pairs)
		}
		if (st.dead == "") != (len(out.Dead) == 0) || (st.dead != "" && !strings.Contains(out.Dead[0].Reason, st.dead)) {
			t.Errorf("%s: dead letters %v, want one saying %q", st.name, out.Dead, st.dead)
		}
		if n := storedEntries(t, store); n != st.left {
			t.Errorf("%s: %d entries stored, want %d", st.name, n, st.left)
		}
	}
	// A new instance (a restart) indexes what the store holds.
	o = newOp()
	var out record.Output
	if err := o.OnWatermark(ctx, 130, &out); err != nil {
		t.Fatal(err)
	}
	if n := storedEntries(t, store); n != 0 {
		t.Errorf("after a restart and watermark 130, %d entries stored, want 0", n)
	}
}

// TestWindowJoin: records pair only within one tumbling window, are
// dropped when it closes, and one for a closed window is late.
func TestWindowJoin(t *testing.T) {
	ctx := context.Background()
	store := state.NewMemory()
	o, err := New(Config{Name: "j", Left: "a", Right: "p", Window: 10, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var out record.Output
	// Windows [0,10) and [10,20): L@5 pairs with R@9, not with R@10.
	if err := o.Process(ctx, []record.Record{rec("a", "k", 5, 1, `"L5"`), rec("p", "k", 9, 1, `"R9"`), rec("p", "k", 10, 2, `"R10"`)}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 1 || string(out.Records[0].Value) != `{"a":"L5","p":"R9"}` || out.Records[0].Timestamp != 9 {
		t.Fatalf("pairs %v", out.Records)
	}
	out.Reset()
	if err := o.OnWatermark(ctx, 9, &out); err != nil { // [0,10) closes
		t.Fatal(err)
	}
	if n := storedEntries(t, store); n != 1 {
		t.Fatalf("%d stored after the first window closed, want R10 alone", n)
	}
	if err := o.Process(ctx, []record.Record{rec("a", "k", 3, 2, `"L3"`), rec("a", "k", 15, 3, `"L15"`)}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Dead) != 1 || !strings.Contains(out.Dead[0].Reason, "late") || len(out.Records) != 1 ||
		string(out.Records[0].Value) != `{"a":"L15","p":"R10"}` {
		t.Fatalf("after the close: pairs %v, dead %v", out.Records, out.Dead)
	}
	if _, err := New(Config{Name: "j", Left: "a", Right: "p", Window: 10, Bounded: true, Store: store}); err == nil {
		t.Error("a window join with an interval was accepted")
	}
}

// TestRegularJoinTTL: a regular join with a TTL pairs across any time
// span, and drops each record once the watermark passes it by the TTL.
func TestRegularJoinTTL(t *testing.T) {
	ctx := context.Background()
	store := state.NewMemory()
	o, err := New(Config{Name: "j", Left: "a", Right: "p", TTL: 100, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var out record.Output
	if err := o.Process(ctx, []record.Record{rec("a", "k", 0, 1, `"L0"`), rec("p", "k", 90, 1, `"R90"`)}, &out); err != nil {
		t.Fatal(err)
	}
	if err := o.OnWatermark(ctx, 100, &out); err != nil { // L0 (0+100) goes, R90 stays
		t.Fatal(err)
	}
	if err := o.Process(ctx, []record.Record{rec("a", "k", 150, 2, `"L150"`), rec("a", "k", -5, 3, `"late"`)}, &out); err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, r := range out.Records {
		pairs = append(pairs, string(r.Value))
	}
	if strings.Join(pairs, " ") != `{"a":"L0","p":"R90"} {"a":"L150","p":"R90"}` || len(out.Dead) != 1 {
		t.Fatalf("pairs %v, dead %v", pairs, out.Dead)
	}
	if n := storedEntries(t, store); n != 2 {
		t.Fatalf("%d stored, want R90 and L150", n)
	}
}
