package join

import (
	"context"
	"fmt"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// BenchmarkIntervalJoin feeds one instance batches of 512 records, left
// and right in turn, over 1,000 keys, event time rising 1 ms a record, an
// interval of ±500 ms, and the watermark after each batch: each record
// finds about one record of the other side of its key to pair with, and
// the stored records stay about a thousand. ns/op is per record.
func BenchmarkIntervalJoin(b *testing.B) {
	for _, tc := range []struct {
		name  string
		store func(b *testing.B) state.Store
	}{
		{"memory", func(*testing.B) state.Store { return state.NewMemory() }},
		{"badger", func(b *testing.B) state.Store {
			s, err := state.OpenBadger(state.BadgerOptions{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			o, err := New(Config{Name: "j", Left: "a", Right: "p", Bounded: true, Lower: -500, Upper: 500, Store: tc.store(b)})
			if err != nil {
				b.Fatal(err)
			}
			const batch, keys = 512, 1000
			in := make([]record.Record, batch)
			value := []byte(`{"v":1}`)
			var out record.Output
			ts, pairs, n := int64(0), 0, 0
			b.ReportAllocs()
			for b.Loop() {
				for i := range in {
					src := "a"
					if ts%2 == 1 {
						src = "p"
					}
					in[i] = record.Record{Key: fmt.Appendf(in[i].Key[:0], "k%d", (ts/2)%keys), Value: value, Timestamp: ts,
						Origin: record.Origin{Source: src, Offset: ts}}
					ts++
				}
				out.Reset()
				if err := o.Process(ctx, in, &out); err != nil {
					b.Fatal(err)
				}
				if err := o.OnWatermark(ctx, ts-600, &out); err != nil {
					b.Fatal(err)
				}
				pairs += len(out.Records)
				n += batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
			b.ReportMetric(float64(pairs)/float64(n), "pairs/record")
		})
	}
}
