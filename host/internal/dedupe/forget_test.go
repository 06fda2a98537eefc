package dedupe

import (
	"context"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// A forgotten key leaves memory and its expiries: the watermark that
// expires the kept key's times leaves the forgotten key's in the store.
func TestDedupeForget(t *testing.T) {
	ctx := context.Background()
	store := state.NewMemory()
	o, err := New(Config{Name: "dd", Within: 100, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var out record.Output
	if err := o.Process(ctx, []record.Record{{Key: []byte("a"), Timestamp: 1000}, {Key: []byte("b"), Timestamp: 1000}}, &out); err != nil {
		t.Fatal(err)
	}
	o.Forget(func(k []byte) bool { return string(k) == "a" })
	if err := o.OnWatermark(ctx, 5000, &out); err != nil {
		t.Fatal(err)
	}
	var keys []string
	store.Scan(nil, func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	if len(o.passed) != 0 || len(o.expiry) != 0 || len(keys) != 1 {
		t.Fatalf("after forgetting b and expiring a: %v in memory, %d expiries, %d stored; want b's one entry stored alone", o.passed, len(o.expiry), len(keys))
	}
}
