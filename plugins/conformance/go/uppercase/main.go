// Command uppercase is a conformance plugin (map). Its input is a JSON
// object; it upper-cases the ASCII letters a-z of one string field and
// leaves every other byte of the input as it was. See
// plugins/conformance/README.md for the exact contract.
//
// Config: {"field": "name"}; the default field is "name".
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/plugins/conformance/go/internal/pluginconfig"
)

var field = "name"

// text is scratch space for the decoded field.
var text []byte

func init() {
	weir.Init(func(config []byte) (err error) {
		field, err = pluginconfig.String(config, "field", field)
		return err
	})
	weir.MapTo(uppercase)
}

func uppercase(r *weir.Record, out *weir.Output) (err error) {
	out.BuildValue(func(dst []byte) []byte {
		var res []byte
		res, err = appendUpper(dst, r.Value, field)
		return res
	})
	return err
}

// appendUpper appends to dst the JSON object doc with the string field
// upper-cased (ASCII letters only), everything else byte for byte. It is
// the whole transform, so that a native benchmark can run exactly what the
// plugin runs.
func appendUpper(dst, doc []byte, field string) ([]byte, error) {
	v, err := wjson.Get(doc, field)
	switch {
	case err != nil:
		return dst, err
	case !v.Exists():
		return dst, errors.New("missing field " + field)
	case v.Kind != wjson.String:
		return dst, errors.New("field " + field + " is not a string")
	}
	text = v.AppendString(text[:0])
	for i, c := range text {
		if c >= 'a' && c <= 'z' {
			text[i] = c - ('a' - 'A')
		}
	}
	dst = append(dst, doc[:v.Offset]...)
	dst = wjson.AppendQuoteBytes(dst, text)
	return append(dst, doc[v.Offset+len(v.Raw):]...), nil
}

func main() {}
