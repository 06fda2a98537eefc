package window

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// A forgotten key leaves a rolling operator's memory: the watermark emits
// the kept key's buffered rows, not the forgotten key's, whose rows stay
// in the store.
func TestRollingForget(t *testing.T) {
	store := state.NewMemory()
	op, err := NewRolling(RollingConfig{Name: "r", Windows: []RollingWindow{{Name: "1m", Range: time.Minute}},
		Aggregates: []Aggregate{{Func: AggSum, Field: []string{"v"}, As: "sum"}}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out record.Output
	in := []record.Record{{Key: []byte("a"), Value: []byte(`{"v":1}`), Timestamp: 10}, {Key: []byte("b"), Value: []byte(`{"v":2}`), Timestamp: 20}}
	if err := op.Process(ctx, in, &out); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		store.Scan(scanPrefix("r"), func(k, _ []byte) error {
			if rk, _, _ := splitKey(k[len(scanPrefix("r")):]); string(rk) == "b" {
				n++
			}
			return nil
		})
		return n
	}
	before := count()
	op.Forget(func(k []byte) bool { return string(k) == "a" })
	if err := op.OnWatermark(ctx, 1000, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 1 || !strings.Contains(string(out.Records[0].Value), `"sum_1m":1`) {
		t.Fatalf("emitted %d rows, want a's alone: %v", len(out.Records), out.Records)
	}
	if before == 0 || count() != before {
		t.Fatalf("b's entries: %d before, %d after; want them kept", before, count())
	}
	if len(op.keys) != 1 || len(op.timers) != 0 {
		t.Fatalf("%d keys, %d timers in memory; want a's key alone", len(op.keys), len(op.timers))
	}
}
