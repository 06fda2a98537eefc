package join

import (
	"context"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// A forgotten key leaves memory: the watermark that expires the kept
// key's unmatched records, padding them, neither pads the forgotten key's
// nor drops them from the store.
func TestJoinForget(t *testing.T) {
	ctx := context.Background()
	store := state.NewMemory()
	o, err := New(Config{Name: "j", Left: "a", Right: "p", Bounded: true, Lower: -10, Upper: 5, Store: store, Kind: FullOuter})
	if err != nil {
		t.Fatal(err)
	}
	var out record.Output
	if err := o.Process(ctx, []record.Record{rec("a", "k", 100, 1, `"LK"`), rec("a", "x", 100, 2, `"LX"`), rec("p", "x", 200, 1, `"RX"`)}, &out); err != nil {
		t.Fatal(err)
	}
	before := storedEntries(t, store)
	o.Forget(func(k []byte) bool { return string(k) == "k" })
	if err := o.OnWatermark(ctx, 1000, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 1 || !strings.Contains(string(out.Records[0].Value), "LK") {
		t.Fatalf("padded %d records, want LK's alone: %v", len(out.Records), out.Records)
	}
	if after := storedEntries(t, store); before != 3 || after != 2 {
		t.Fatalf("%d entries stored, then %d; want 3, then x's 2", before, after)
	}
	if len(o.keys) != 0 || len(o.expiry) != 0 {
		t.Fatalf("%d keys and %d expiries in memory, want none", len(o.keys), len(o.expiry))
	}
}
