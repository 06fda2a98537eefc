// Command uppercase is a conformance plugin (map). Its input is a JSON
// object; it upper-cases the ASCII letters a-z of one string field and
// leaves every other byte of the input as it was. See
// plugins/conformance/README.md for the exact contract.
//
// Config: {"field": "name"}; the default field is "name".
package main

import (
	"errors"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/guest-sdk/go/wjson"
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

func uppercase(r *weir.Record, out *weir.Output) error {
	v, err := wjson.Get(r.Value, field)
	switch {
	case err != nil:
		return err
	case !v.Exists():
		return errors.New("missing field " + field)
	case v.Kind != wjson.String:
		return errors.New("field " + field + " is not a string")
	}
	text = v.AppendString(text[:0])
	for i, c := range text {
		if c >= 'a' && c <= 'z' {
			text[i] = c - ('a' - 'A')
		}
	}
	out.BuildValue(func(dst []byte) []byte {
		dst = append(dst, r.Value[:v.Offset]...)
		dst = wjson.AppendQuoteBytes(dst, text)
		return append(dst, r.Value[v.Offset+len(v.Raw):]...)
	})
	return nil
}

func main() {}
