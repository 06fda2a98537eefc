// Command typed_uppercase is a conformance plugin (map) of the typed
// convention, doing what uppercase does: it declares one string field,
// required and strict, so that the host dead-letters records where it is
// missing, null or not a string, and patches it upper-cased (ASCII
// letters only). The host leaves every other byte of the record as it
// was. See plugins/conformance/README.md for the exact contract.
//
// Config: {"field": "name"}; the default field is "name".
package main

import (
	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/plugins/conformance/go/internal/pluginconfig"
)

var field = "name"

// text is scratch space for the upper-cased field.
var text []byte

func init() {
	weir.Init(func(config []byte) (err error) {
		if field, err = pluginconfig.String(config, "field", field); err != nil {
			return err
		}
		weir.Fields(weir.StringField(field, weir.Required|weir.Strict))
		return nil
	})
	weir.TypedMap(uppercase)
}

func uppercase(r *weir.Row, p *weir.Patch) error {
	s, _ := r.Bytes(0) // present: the field is required
	text = append(text[:0], s...)
	for i, c := range text {
		if c >= 'a' && c <= 'z' {
			text[i] = c - ('a' - 'A')
		}
	}
	p.SetStringBytes(field, text)
	return nil
}

func main() {}
