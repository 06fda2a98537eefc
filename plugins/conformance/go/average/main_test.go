package main

import (
	"fmt"
	"testing"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func TestAverage(t *testing.T) {
	var a acc
	var errs []string
	for _, doc := range []string{`{"n":1}`, `{"n":2.5}`, `{"x":1}`, `{"n":"2"}`, `{"n":1e400}`, `nope`, `{"n":-0.5}`} {
		next, err := add(a, &weir.Record{Value: []byte(doc)})
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		a = next
	}
	if a != (acc{sum: 3, count: 3}) {
		t.Errorf("accumulator %+v", a)
	}
	if len(errs) != 4 || errs[0] != "missing field n" || errs[1] != "field n is not a number" || errs[2] != "field n is out of range" {
		t.Errorf("errors %q", errs)
	}
	b, err := codec.Decode(codec.Append(nil, a))
	if err != nil || b != a {
		t.Errorf("codec round trip: %+v, %v", b, err)
	}
	for _, tc := range []struct {
		a    acc
		want string
	}{
		{a, `{"avg":1.0,"count":3}`},
		{acc{sum: 7, count: 2}, `{"avg":3.5,"count":2}`},
		{acc{}, `{"avg":null,"count":0}`},
	} {
		if got, err := result(nil, tc.a); err != nil || string(got) != tc.want {
			t.Errorf("result(%+v) = %s, %v; want %s", tc.a, got, err, tc.want)
		}
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
		var a acc
		for i := range recs {
			var err error
			if a, err = add(a, &recs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
