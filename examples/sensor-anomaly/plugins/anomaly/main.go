// Command anomaly is the sensor-anomaly example's flat_map plugin. It
// reproduces LookupKeyedProcessFunction of the PyFlink job the example is
// taken from.
//
// Each input value is a JSON reading such as
//
//	{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000}
//
// and the records are keyed by sensor id (the host scopes state by record
// key). For each reading the plugin:
//
//  1. looks up the previous value for the reading's "kind" in the MapState
//     "LUT" (the kind's string content is the entry key; a non-string kind
//     uses its JSON text); without one, the previous value is the current
//     "value";
//  2. if |previous - value| > threshold, emits the alert
//     {"id":<id>,"value":<value>,"message":"Sensor offset alert!","delta":<delta>}
//     where id and value are copied as their raw JSON text from the input
//     (id is null when the reading has none) and delta is written as
//     Python's repr writes a float;
//  3. stores the value as the kind's previous value, and emits the input
//     record unchanged.
//
// A reading that is not a JSON object, lacks "kind" or "value", or whose
// "value" is not a number is rejected with an error.
//
// Config (optional JSON object): {"threshold": 1}, the default being 1.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o anomaly.wasm .
package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/guest-sdk/go/wjson"
)

// lut holds, per record key, the last value seen for each kind of reading.
var lut = weir.NewMapState("LUT")

// threshold is the change in value above which a reading raises an alert.
var threshold = 1.0

// kindKey is scratch space for the LUT entry key.
var kindKey []byte

func init() {
	weir.Init(configure)
	weir.FlatMap(detect)
}

func configure(config []byte) error {
	if len(bytes.TrimSpace(config)) == 0 {
		return nil
	}
	v, err := wjson.Get(config, "threshold")
	if err != nil {
		return fmt.Errorf("anomaly config: %w", err)
	}
	if !v.Exists() || v.Kind == wjson.Null {
		return nil
	}
	t, err := v.Float()
	if err != nil {
		return fmt.Errorf("anomaly config: threshold: %w", err)
	}
	threshold = t
	return nil
}

func detect(r *weir.Record, emit *weir.Emitter) error {
	var id, kind, value wjson.Value
	err := wjson.Each(r.Value, func(k, v wjson.Value) bool {
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
	switch {
	case err != nil:
		return err
	case !kind.Exists():
		return errors.New("missing field kind")
	case !value.Exists():
		return errors.New("missing field value")
	}
	cur, err := value.Float()
	if err != nil {
		return fmt.Errorf("field value: %w", err)
	}

	kindKey = kind.AppendString(kindKey[:0])
	prev, found, err := lut.GetFloat64(r, kindKey)
	if err != nil {
		return err
	}
	// The Python original reads `lut.get(kind) or value`, which also takes
	// the current value when the stored one is 0.0 (falsy). That is a bug
	// of the idiom, not intended behaviour, so only a missing entry falls
	// back to the current value here.
	if !found {
		prev = cur
	}
	if delta := math.Abs(prev - cur); delta > threshold {
		emit.Build(func(dst []byte) []byte {
			var w wjson.Writer
			w.Reset(dst)
			w.BeginObject()
			w.Key("id")
			if id.Exists() {
				w.Raw(id.Raw)
			} else {
				w.Null()
			}
			w.Key("value")
			w.Raw(value.Raw)
			w.Key("message")
			w.String("Sensor offset alert!")
			w.Key("delta")
			w.Float(delta)
			w.EndObject()
			return w.Bytes()
		})
	}
	if err := lut.PutFloat64(r, kindKey, cur); err != nil {
		return err
	}
	emit.Keep()
	return nil
}

func main() {}
