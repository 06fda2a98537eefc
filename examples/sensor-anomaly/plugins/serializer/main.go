// Command serializer is the sensor-anomaly example's map plugin. It
// reproduces SerializerMapFunction of the PyFlink job the example is taken
// from, which prints a dict as
//
//	'|'.join([k + '=' + str(v) for k, v in value.items()])
//
// Each input value must be a JSON object; the output is its fields in
// document order as name=text joined by '|', where text is:
//
//   - for a string, its decoded content, without quotes or escapes;
//   - for a number, its raw JSON text as written in the input (so 90.5
//     stays 90.5 and 1722960137000 stays 1722960137000; unlike Python,
//     which would print the parsed float, 1E2 stays 1E2 and 90.50 stays
//     90.50);
//   - true and false as True and False, null as None, as Python prints them;
//   - for a nested object or array, its raw JSON text. (Python would print
//     its repr, such as {'a': 1}; weir's records are JSON, and the raw text
//     is the faithful, language-neutral choice.)
//
// For example {"id":"123","value":101.2,"message":"Sensor offset alert!","delta":10.700000000000003}
// becomes id=123|value=101.2|message=Sensor offset alert!|delta=10.700000000000003.
// A value that is not a JSON object is rejected with an error. The output
// is written in place into the output frame, without intermediate copies.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o serializer.wasm .
package main

import (
	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/guest-sdk/go/wjson"
)

func init() {
	weir.MapTo(serialize)
}

func serialize(r *weir.Record, out *weir.Output) error {
	var err error
	out.BuildValue(func(dst []byte) []byte {
		first := true
		err = wjson.Each(r.Value, func(k, v wjson.Value) bool {
			if !first {
				dst = append(dst, '|')
			}
			first = false
			dst = k.AppendString(dst)
			dst = append(dst, '=')
			dst = appendPython(dst, v)
			return true
		})
		return dst
	})
	return err
}

// appendPython appends v the way the serializer prints a field value.
func appendPython(dst []byte, v wjson.Value) []byte {
	switch v.Kind {
	case wjson.String:
		return v.AppendString(dst)
	case wjson.Bool:
		if b, _ := v.Bool(); b {
			return append(dst, "True"...)
		}
		return append(dst, "False"...)
	case wjson.Null:
		return append(dst, "None"...)
	}
	return append(dst, v.Raw...)
}

func main() {}
