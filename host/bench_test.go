package host_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weir-stream/weir/host"
)

// BenchmarkEngine measures whole-pipeline throughput, generator → operators
// → discard, with records of about 100 bytes. Run it on one core:
//
//	go test -run='^$' -bench=Engine -cpu=1 ./host/
func BenchmarkEngine(b *testing.B) {
	cases := []struct {
		name string
		ops  string
	}{
		{name: "no-operator"},
		{name: "identity-map", ops: `operators: [{name: id, type: map, plugin: "{{root}}/plugins/identity"}]`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			path := writePipeline(b, fmt.Sprintf(`name: bench
sources:
  - name: gen
    type: generator
    count: %d
    fields:
      - {name: id, kind: sequence, start: 1}
      - {name: device, kind: random_choice, values: [b8:27:eb:bf:9d:51, 00:0f:00:70:91:0a]}
      - {name: temp, kind: random_float, min: 17, max: 36, decimals: 2}
      - {name: note, kind: random_string, length: 24}
%s
sinks: [{name: out, type: discard}]
`, b.N, c.ops))
			ctx := context.Background()
			p, err := host.Load(ctx, path, host.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			sum, err := p.Run(ctx)
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if got := sum.Stages[len(sum.Stages)-1].Out; got != int64(b.N) {
				b.Fatalf("sink wrote %d records, want %d", got, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
		})
	}
}
