package wjson

import (
	"encoding/json"
	"testing"
)

var benchDoc = []byte(`{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000, ` +
	`"tags": ["a", "b", "c"], "site": {"building": "north", "floor": 3, "note": "caf\u00e9"}}`)

func BenchmarkGet(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := Get(benchDoc, "value")
		if err != nil || v.Kind != Number {
			b.Fatal(v, err)
		}
	}
}

func BenchmarkGetNested(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := Get(benchDoc, "site", "floor")
		if err != nil || v.Kind != Number {
			b.Fatal(v, err)
		}
	}
}

// flatDoc is a sensor reading as the conformance and example plugins get
// them: a flat object, which Get reads on its fast path.
var flatDoc = []byte(`{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000}`)

// BenchmarkGetFlat and BenchmarkGetFlatFull compare Get's fast path with
// the full parser it falls back to (getFull) on a flat document. The gap is
// small natively; the fast path is for the Go Wasm guest, where branches
// and calls cost more (see getfast.go and BenchmarkTransformGo in
// host/internal/wasm).
func BenchmarkGetFlat(b *testing.B) {
	b.SetBytes(int64(len(flatDoc)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := Get(flatDoc, "kind")
		if err != nil || v.Kind != String {
			b.Fatal(v, err)
		}
	}
}

func BenchmarkGetFlatFull(b *testing.B) {
	path := []string{"kind"}
	b.SetBytes(int64(len(flatDoc)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := getFull(flatDoc, path)
		if err != nil || v.Kind != String {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkEachThreeFields reads the three fields the sensor-anomaly plugin
// needs, in one pass.
func BenchmarkEachThreeFields(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		var id, kind, value Value
		err := Each(benchDoc, func(k, v Value) bool {
			switch {
			case k.StringEquals("id"):
				id = v
			case k.StringEquals("kind"):
				kind = v
			case k.StringEquals("value"):
				value = v
			}
			return true
		})
		if err != nil || !id.Exists() || !kind.Exists() || !value.Exists() {
			b.Fatal(err)
		}
		if _, err := value.Float(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSONUnmarshal is the reflection-based baseline for the
// same three fields.
func BenchmarkEncodingJSONUnmarshal(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		var r struct {
			ID    string  `json:"id"`
			Kind  string  `json:"kind"`
			Value float64 `json:"value"`
		}
		if err := json.Unmarshal(benchDoc, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValid(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		if !Valid(benchDoc) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkWriterAlert(b *testing.B) {
	buf := make([]byte, 0, 256)
	id, value := []byte(`"123"`), []byte("101.2")
	b.ReportAllocs()
	var w Writer
	for b.Loop() {
		w.Reset(buf[:0])
		w.BeginObject()
		w.Key("id")
		w.Raw(id)
		w.Key("value")
		w.Raw(value)
		w.Key("message")
		w.String("Sensor offset alert!")
		w.Key("delta")
		w.Float(10.700000000000003)
		w.EndObject()
	}
	b.SetBytes(int64(len(w.Bytes())))
}

func BenchmarkAppendFloat(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFloat(buf[:0], 10.700000000000003)
	}
}

func BenchmarkAppendQuote(b *testing.B) {
	buf := make([]byte, 0, 256)
	s := "Sensor offset alert! \"quoted\" caf\u00e9 \n"
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendQuote(buf[:0], s)
	}
}
