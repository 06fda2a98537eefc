package main

import (
	"fmt"
	"testing"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/plugins/conformance/go/internal/avgacc"
)

func TestAverage(t *testing.T) {
	var a avgacc.Acc
	var errs []string
	for _, doc := range []string{`{"n":1}`, `{"n":2.5}`, `{"x":1}`, `{"n":"2"}`, `{"n":1e400}`, `nope`, `{"n":-0.5}`} {
		next, err := add(a, &weir.Record{Value: []byte(doc)})
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		a = next
	}
	if a != (avgacc.Acc{Sum: 3, Count: 3}) {
		t.Errorf("accumulator %+v", a)
	}
	if len(errs) != 4 || errs[0] != "missing field n" || errs[1] != "field n is not a number" || errs[2] != "field n is out of range" {
		t.Errorf("errors %q", errs)
	}
}

// BenchmarkAddNative folds the records of BenchmarkAggAddGo in
// host/internal/wasm as native Go, for the cost of running the plugin in
// the guest:
//
//	go test -run='^$' -bench=AddNative ./plugins/conformance/go/average/
//	go test -run='^$' -bench=AggAddGo ./host/internal/wasm/
func BenchmarkAddNative(b *testing.B) {
	recs := make([]weir.Record, 512)
	for i := range recs {
		recs[i].Value = fmt.Appendf(nil, `{"id": "%d", "kind": "temp", "n": %.2f, "timestamp": %d}`,
			100+i%50, 20+float64(i%5)*0.25, 1722960137000+int64(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		var a avgacc.Acc
		for i := range recs {
			var err error
			if a, err = add(a, &recs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
