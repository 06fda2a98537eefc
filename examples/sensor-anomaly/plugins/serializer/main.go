// Command serializer is the sensor-anomaly example's map plugin. It
// reproduces SerializerMapFunction of the PyFlink job the example is taken
// from, which prints a dict as
//
//	'|'.join([k + '=' + str(v) for k, v in value.items()])
//
// The dict is what json.loads made of the record (the seed reads its
// readings with json.loads), so the plugin prints, for each field of the
// input JSON object, name=str(value) as Python would print the value
// json.loads reads:
//
//   - a string as its decoded content, without quotes or escapes;
//   - a number written without a fraction or an exponent as a Python int:
//     its digits, at any length (-0 as 0);
//   - any other number as a Python float, repr's shortest round-trip
//     digits: 90.50 as 90.5, 12.0 as 12.0, 1E2 as 100.0, 1E-5 as 1e-05,
//     1.0e16 as 1e+16, and a number beyond the double range as inf or -inf
//     (package pyfmt);
//   - true, false and null as True, False and None;
//   - an array or an object as Python's repr of the list or dict: [1, 'a'],
//     {'k': 2.5, 'x': None}, strings quoted and escaped as repr does.
//
// A name that occurs more than once in an object is printed once, where it
// first occurs, with its last value, as a dict built by json.loads has it.
//
// For example {"id":"123","value":101.2,"message":"Sensor offset alert!","delta":10.700000000000003}
// becomes id=123|value=101.2|message=Sensor offset alert!|delta=10.700000000000003.
// A value that is not a JSON object is rejected with an error. The output
// is written in place into the output frame.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o serializer.wasm .
package main

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/guest-sdk/go/pyfmt"
)

func init() {
	weir.MapTo(serialize)
}

// top holds the fields of the record being serialised, reused from record
// to record.
var top fields

func serialize(r *weir.Record, out *weir.Output) error {
	if err := top.collect(r.Value); err != nil {
		return err
	}
	var err error
	out.BuildValue(func(dst []byte) []byte {
		for i := range top.vals {
			if i > 0 {
				dst = append(dst, '|')
			}
			dst = append(dst, top.key(i)...)
			dst = append(dst, '=')
			if dst, err = appendStr(dst, top.vals[i]); err != nil {
				return dst
			}
		}
		return dst
	})
	return err
}

// fields are an object's fields as a Python dict holds them: each name
// once, in the order names first occur, with the last value given for it.
type fields struct {
	names []byte         // the decoded names, one after the other
	ends  []int          // where each name ends in names
	vals  []wjson.Value  // each name's value
	index map[string]int // name → field, for objects with many fields
}

// indexFrom is the number of fields from which collect looks names up in
// a map rather than by comparing with each field before.
const indexFrom = 16

// collect sets f to the fields of the JSON object doc.
func (f *fields) collect(doc []byte) error {
	f.names, f.ends, f.vals = f.names[:0], f.ends[:0], f.vals[:0]
	if f.index != nil {
		clear(f.index)
	}
	return wjson.Each(doc, func(k, v wjson.Value) bool {
		start := len(f.names)
		f.names = k.AppendString(f.names)
		if i := f.find(f.names[start:]); i >= 0 {
			f.vals[i] = v // a repeated name keeps its place and takes the new value
			f.names = f.names[:start]
			return true
		}
		f.ends = append(f.ends, len(f.names))
		f.vals = append(f.vals, v)
		if n := len(f.vals); n >= indexFrom {
			if f.index == nil {
				f.index = make(map[string]int)
			}
			if n == indexFrom {
				for i := range n - 1 {
					f.index[string(f.key(i))] = i
				}
			}
			f.index[string(f.names[start:])] = n - 1
		}
		return true
	})
}

// key returns the name of field i.
func (f *fields) key(i int) []byte {
	start := 0
	if i > 0 {
		start = f.ends[i-1]
	}
	return f.names[start:f.ends[i]]
}

// find returns the field called name, or -1.
func (f *fields) find(name []byte) int {
	if len(f.vals) >= indexFrom {
		if i, ok := f.index[string(name)]; ok {
			return i
		}
		return -1
	}
	for i := range f.vals {
		if bytes.Equal(f.key(i), name) {
			return i
		}
	}
	return -1
}

// appendStr appends str(v) for the Python value json.loads reads from v.
func appendStr(dst []byte, v wjson.Value) ([]byte, error) {
	if v.Kind == wjson.String {
		return v.AppendString(dst), nil
	}
	return appendRepr(dst, v)
}

// appendRepr appends repr(v) for the Python value json.loads reads from v.
func appendRepr(dst []byte, v wjson.Value) ([]byte, error) {
	switch v.Kind {
	case wjson.String:
		// Decode the content after dst's end, then write its repr there.
		start := len(dst)
		dst = v.AppendString(dst)
		n := len(dst) - start
		dst = appendStringRepr(dst, dst[start:])
		return append(dst[:start], dst[start+n:]...), nil
	case wjson.Number:
		return pyfmt.AppendNumber(dst, v.Raw)
	case wjson.Bool:
		if b, _ := v.Bool(); b {
			return append(dst, "True"...), nil
		}
		return append(dst, "False"...), nil
	case wjson.Null:
		return append(dst, "None"...), nil
	case wjson.Array:
		var err error
		dst = append(dst, '[')
		if e := v.ArrayEach(func(i int, item wjson.Value) bool {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst, err = appendRepr(dst, item)
			return err == nil
		}); e != nil {
			return dst, e
		}
		return append(dst, ']'), err
	case wjson.Object:
		var f fields // nested objects are rare: a fresh list each
		if err := f.collect(v.Raw); err != nil {
			return dst, err
		}
		dst = append(dst, '{')
		for i := range f.vals {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendStringRepr(dst, f.key(i))
			dst = append(dst, ": "...)
			var err error
			if dst, err = appendRepr(dst, f.vals[i]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return append(dst, v.Raw...), nil
}

const hexDigits = "0123456789abcdef"

// appendStringRepr appends repr(s) for the UTF-8 text s as Python 3 writes
// it: in single quotes, or double quotes when s has a single quote and no
// double quote; the quote and the backslash escaped with a backslash; \t,
// \n and \r; other ASCII control characters and DEL as \xhh; a non-ASCII
// character that is not printable (Unicode categories C* and Z*) as \xhh,
// \uhhhh or \Uhhhhhhhh; every other character as it is. (Printable is
// unicode.IsPrint, of Go's Unicode version; Python's may differ for the
// characters one of the two versions has not assigned.) dst and s must not
// overlap past len(dst).
func appendStringRepr(dst, s []byte) []byte {
	quote := byte('\'')
	if bytes.IndexByte(s, '\'') >= 0 && bytes.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	dst = append(dst, quote)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == quote || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c < ' ' || c == 0x7f:
				dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case unicode.IsPrint(r):
			dst = append(dst, s[i:i+size]...)
		case r <= 0xff:
			dst = append(dst, '\\', 'x')
			dst = appendHex(dst, uint32(r), 2)
		case r <= 0xffff:
			dst = append(dst, '\\', 'u')
			dst = appendHex(dst, uint32(r), 4)
		default:
			dst = append(dst, '\\', 'U')
			dst = appendHex(dst, uint32(r), 8)
		}
		i += size
	}
	return append(dst, quote)
}

// appendHex appends the n low hex digits of u, lower case.
func appendHex(dst []byte, u uint32, n int) []byte {
	for shift := 4 * (n - 1); shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(u>>uint(shift))&15])
	}
	return dst
}

func main() {}
