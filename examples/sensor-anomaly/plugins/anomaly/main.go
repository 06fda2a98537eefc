// Command anomaly is the sensor-anomaly example's flat_map plugin. It
// reproduces LookupKeyedProcessFunction of the PyFlink job the example is
// taken from:
//
//	lut = self.lut_state.get_internal_state()
//	prev = lut.get(value.get("kind")) or value.get("value")
//	diff = abs(prev - value.get("value"))
//	if diff > 1:
//	    yield {'id': value.get("id"), 'value': value.get("value"), 'message': 'Sensor offset alert!', 'delta': diff}
//	self.lut_state.put(value.get("kind"), value.get("value"))
//	yield value
//
// on the Python values json.loads makes of each JSON reading, such as
//
//	{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000}
//
// The records are keyed by sensor id (the host scopes state by record key),
// and the MapState "LUT" holds, per sensor, the last value of each kind.
// For each reading the plugin:
//
//  1. looks up the previous value of the reading's "kind" (a missing kind
//     is Python's None, a key like any other); without one, or when it is
//     0, 0.0 or false (falsy: Python's `or` takes the current value then),
//     the previous value is the current "value";
//  2. computes diff = abs(prev - value) with Python's arithmetic: two ints
//     (numbers written without a fraction or exponent; true and false count
//     as 1 and 0) give an exact int of any size, anything else a float, the
//     int converted to the nearest float first;
//  3. if diff > threshold, compared exactly as Python compares an int or a
//     float with an int or a float, emits the alert
//     {"id":<id>,"value":<value>,"message":"Sensor offset alert!","delta":<diff>}
//     where id and value are the input's JSON text (id null when there is
//     none), and diff is written so that json.loads reads back the same
//     Python value: an int as its digits, a float as repr writes it
//     (12.0, 1e-05), and inf as 1e999;
//  4. stores the value as the kind's previous value, and emits the input
//     record unchanged.
//
// The serializer plugin then prints these records as the seed's
// SerializerMapFunction prints the dicts.
//
// A reading that Python's code would fail on is rejected with an error
// naming Python's: one that is not an object; a kind that is an array or
// an object (unhashable); a value that is missing, null, a string, an array
// or an object, or is one while the previous value is a number (TypeError);
// an int too large for a float subtracted from a float or the other way
// round (OverflowError).
//
// Python compares the keys of the LUT as dict keys: "1" and 1 differ, while
// 1, 1.0 and true are one key. The entry key of a kind is therefore its
// decoded text for a string, and its numeric value for a number or a
// boolean. The id is part of the entry key in the same way, because the
// host gives "7" and 7 the same record key, which Python does not. (The
// host gives 7 and 7.0 different record keys, which Python does not
// either; the seed's ids are strings: its key type is Types.STRING().)
//
// Config (optional JSON object): {"threshold": 1}, the default being the
// seed's int 1; it may be any JSON number, read as Python reads it.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o anomaly.wasm .
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/guest-sdk/go/pyfmt"
)

// lut holds, per record key, the last value seen for each kind of reading,
// as the JSON text of the value.
var lut = weir.NewMapState("LUT")

// threshold is the change in value above which a reading raises an alert.
var threshold = pyInt(1)

// entryKey is scratch space for the LUT entry key.
var entryKey []byte

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
	if v.Kind != wjson.Number {
		return fmt.Errorf("anomaly config: threshold: %s is not a number", v.Raw)
	}
	t, err := parseNumber(v)
	if err != nil {
		return fmt.Errorf("anomaly config: threshold: %w", err)
	}
	threshold = t
	return nil
}

func detect(r *weir.Record, emit *weir.Emitter) error {
	var id, kind, value wjson.Value
	// value.get(name): the last of repeated names, as in a dict.
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
	if err != nil {
		return err
	}
	cur, err := parseOperand(value)
	if err != nil {
		return err
	}

	entryKey, err = appendEntryKey(entryKey[:0], id, kind)
	if err != nil {
		return err
	}
	stored, found, err := lut.Get(r, entryKey)
	if err != nil {
		return err
	}
	prev := cur
	if found {
		p, err := parseNumber(wjson.Value{Kind: storedKind(stored), Raw: stored})
		if err != nil {
			return fmt.Errorf("LUT entry %q: %w", stored, err)
		}
		if p.truthy() { // `lut.get(kind) or value`
			prev = p
		}
	}
	diff, err := sub(prev, cur)
	if err != nil {
		return err
	}
	diff = diff.abs()
	if diff.greater(threshold) {
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
			w.Raw(diff.appendJSON(nil))
			w.EndObject()
			return w.Bytes()
		})
	}
	if err := lut.Put(r, entryKey, value.Raw); err != nil {
		return err
	}
	emit.Keep()
	return nil
}

// storedKind is the JSON kind of a LUT entry: the raw text of a number or
// of true or false.
func storedKind(b []byte) wjson.Kind {
	if len(b) > 0 && (b[0] == 't' || b[0] == 'f') {
		return wjson.Bool
	}
	return wjson.Number
}

// number is a Python int or float.
type number struct {
	isInt bool
	i     *big.Int // when isInt
	f     float64  // when not
}

func pyInt(i int64) number { return number{isInt: true, i: big.NewInt(i)} }

// parseOperand reads the reading's value as an operand of Python's `-`.
func parseOperand(v wjson.Value) (number, error) {
	switch v.Kind {
	case wjson.Invalid, wjson.Null:
		return number{}, errors.New("TypeError: unsupported operand type(s) for -: 'NoneType' and 'NoneType' (the reading has no value)")
	case wjson.Number, wjson.Bool:
		return parseNumber(v)
	}
	t := pyType(v.Kind)
	return number{}, fmt.Errorf("TypeError: unsupported operand type(s) for -: '%s' and '%s' (value %s)", t, t, v.Raw)
}

// parseNumber reads a JSON number or boolean as json.loads does: an int
// literal as an int, any other number as a float, true and false as the
// ints 1 and 0 (Python's bool is an int).
func parseNumber(v wjson.Value) (number, error) {
	if v.Kind == wjson.Bool {
		b, _ := v.Bool()
		if b {
			return pyInt(1), nil
		}
		return pyInt(0), nil
	}
	if !pyfmt.Valid(v.Raw) {
		return number{}, fmt.Errorf("%q is not a JSON number", v.Raw)
	}
	if pyfmt.IsInt(v.Raw) {
		i, ok := new(big.Int).SetString(string(v.Raw), 10)
		if !ok {
			return number{}, fmt.Errorf("%q is not an integer", v.Raw)
		}
		return number{isInt: true, i: i}, nil
	}
	f, err := pyfmt.ParseFloat(v.Raw)
	return number{f: f}, err
}

// pyType is the name of the Python type json.loads gives a JSON kind.
func pyType(k wjson.Kind) string {
	switch k {
	case wjson.String:
		return "str"
	case wjson.Array:
		return "list"
	case wjson.Object:
		return "dict"
	case wjson.Bool:
		return "bool"
	case wjson.Number:
		return "int or float"
	}
	return "NoneType"
}

// truthy reports bool(n).
func (n number) truthy() bool {
	if n.isInt {
		return n.i.Sign() != 0
	}
	return n.f != 0 // NaN is truthy, as in Python
}

// float returns float(n); an int beyond the float range is Python's
// OverflowError.
func (n number) float() (float64, error) {
	if !n.isInt {
		return n.f, nil
	}
	f, err := pyfmt.ParseFloat([]byte(n.i.String()))
	if err != nil || math.IsInf(f, 0) {
		return 0, errors.New("OverflowError: int too large to convert to float")
	}
	return f, nil
}

// sub returns a - b.
func sub(a, b number) (number, error) {
	if a.isInt && b.isInt {
		return number{isInt: true, i: new(big.Int).Sub(a.i, b.i)}, nil
	}
	x, err := a.float()
	if err != nil {
		return number{}, err
	}
	y, err := b.float()
	if err != nil {
		return number{}, err
	}
	return number{f: x - y}, nil
}

// abs returns abs(n).
func (n number) abs() number {
	if n.isInt {
		return number{isInt: true, i: new(big.Int).Abs(n.i)}
	}
	return number{f: math.Abs(n.f)}
}

// greater reports n > m as Python compares ints and floats: exactly, by
// their values, without rounding the int to a float; NaN compares false.
func (n number) greater(m number) bool {
	switch {
	case n.isInt && m.isInt:
		return n.i.Cmp(m.i) > 0
	case !n.isInt && !m.isInt:
		return n.f > m.f
	case !n.isInt && (math.IsNaN(n.f) || math.IsInf(n.f, 0)):
		return n.f > 0 // inf > any int; NaN > nothing
	case !m.isInt && (math.IsNaN(m.f) || math.IsInf(m.f, 0)):
		return m.f < 0 // any int > -inf; nothing > NaN
	}
	return n.rat().Cmp(m.rat()) > 0
}

// rat returns the exact value of a finite n.
func (n number) rat() *big.Rat {
	if n.isInt {
		return new(big.Rat).SetInt(n.i)
	}
	return new(big.Rat).SetFloat64(n.f)
}

// appendJSON appends n as JSON that json.loads reads back as n: an int as
// its digits, a float as repr writes it (with a '.' or an exponent, so it
// reads back as a float), +Inf as 1e999 (beyond the double range, which
// json.loads reads as inf) and NaN, which an alert never carries, as null.
func (n number) appendJSON(dst []byte) []byte {
	switch {
	case n.isInt:
		return n.i.Append(dst, 10)
	case math.IsNaN(n.f):
		return append(dst, "null"...)
	case math.IsInf(n.f, 1):
		return append(dst, "1e999"...)
	case math.IsInf(n.f, -1):
		return append(dst, "-1e999"...)
	}
	return pyfmt.AppendFloat(dst, n.f)
}

// appendEntryKey appends the LUT entry key of a reading: the Python dict
// keys of its id and its kind, the id's length-prefixed.
func appendEntryKey(dst []byte, id, kind wjson.Value) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := appendDictKey(dst, id, "id")
	if err != nil {
		return dst, err
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return appendDictKey(dst, kind, "kind")
}

// appendDictKey appends a text that is the same for two JSON values exactly
// when the Python values json.loads gives them are equal dict keys: "s"
// and a string's decoded text; "n" for null or no value (None); for a
// number or a boolean, "i" and the integer when its value is integral (so
// 1, 1.0 and true are one key), or "f" and its repr. An array or an object
// is unhashable: an error.
func appendDictKey(dst []byte, v wjson.Value, field string) ([]byte, error) {
	switch v.Kind {
	case wjson.Invalid, wjson.Null:
		return append(dst, 'n'), nil
	case wjson.String:
		return v.AppendString(append(dst, 's')), nil
	case wjson.Array, wjson.Object:
		return dst, fmt.Errorf("TypeError: unhashable type: '%s' (%s %s)", pyType(v.Kind), field, v.Raw)
	}
	n, err := parseNumber(v)
	if err != nil {
		return dst, fmt.Errorf("%s: %w", field, err)
	}
	if n.isInt {
		return n.i.Append(append(dst, 'i'), 10), nil
	}
	if math.IsInf(n.f, 0) || n.f != math.Trunc(n.f) {
		return pyfmt.AppendFloat(append(dst, 'f'), n.f), nil
	}
	i, _ := new(big.Float).SetFloat64(n.f).Int(nil)
	return i.Append(append(dst, 'i'), 10), nil
}

func main() {}
