package dedupe

import (
	"context"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// BenchmarkDedupe runs batches of 512 generated records (40 keys, a
// quarter of them retries) through a dedupe within 250 ms, with a
// watermark after each batch: ns and allocations per record.
func BenchmarkDedupe(b *testing.B) {
	in := generate(1, 512*64, 40, 300, false)
	o, err := New(Config{Name: "dd", Within: 250, Store: state.NewMemory()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var out record.Output
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		for start := 0; start < len(in.recs) && i < b.N; start += 512 {
			batch := in.recs[start : start+512]
			out.Records, out.Dead = out.Records[:0], out.Dead[:0]
			if err := o.Process(ctx, batch, &out); err != nil {
				b.Fatal(err)
			}
			if err := o.OnWatermark(ctx, in.wms[start+511], &out); err != nil {
				b.Fatal(err)
			}
			i += len(batch)
		}
	}
}
