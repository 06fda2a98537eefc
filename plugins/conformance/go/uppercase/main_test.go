package main

import (
	"fmt"
	"testing"
)

// BenchmarkTransformNative runs the plugin's transform as native Go, on the
// same records as the Wasm benchmark BenchmarkTransformGo in
// host/internal/wasm, so the two give the cost of running it in the guest:
//
//	go test -run='^$' -bench=TransformNative ./plugins/conformance/go/uppercase/
//	go test -run='^$' -bench=TransformGo ./host/internal/wasm/
func BenchmarkTransformNative(b *testing.B) {
	docs := make([][]byte, 512)
	kinds := []string{"temp", "humidity", "pressure"}
	for i := range docs {
		docs[i] = fmt.Appendf(nil, `{"id": "%d", "kind": "%s", "value": %.2f, "timestamp": %d}`,
			100+i%50, kinds[i%len(kinds)], 20.0+float64(i%5)*0.25, 1722960137000+int64(i))
	}
	var dst []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, doc := range docs {
			var err error
			if dst, err = appendUpper(dst[:0], doc, "kind"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/record")
}

func TestAppendUpper(t *testing.T) {
	tests := []struct {
		name, doc, want, err string
	}{
		{name: "upper-cases only the field", doc: `{"name":"abc","x":"abc"}`, want: `{"name":"ABC","x":"abc"}`},
		{name: "escapes survive", doc: `{"name": "a\"b\u00e9"}`, want: `{"name": "A\"Bé"}`},
		{name: "missing", doc: `{"x":1}`, err: "missing field name"},
		{name: "not a string", doc: `{"name":1}`, err: "field name is not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendUpper(nil, []byte(tt.doc), "name")
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("appendUpper = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
