// Command uppercase_batch is the typed_uppercase conformance map as a
// batch function (TypedMapBatch): it upper-cases the ASCII letters of the
// string field named by its config's "field" ("name" by default). The
// transform benchmarks compare it with the per-record typed_uppercase.
package main

import (
	"encoding/json"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

var field = "name"

// text is scratch space for the upper-cased field.
var text []byte

func init() {
	weir.Init(func(config []byte) error {
		var c struct{ Field string }
		if err := json.Unmarshal(config, &c); err != nil {
			return err
		}
		if c.Field != "" {
			field = c.Field
		}
		weir.Fields(weir.StringField(field, weir.Required|weir.Strict))
		return nil
	})
	weir.TypedMapBatch(func(b *weir.Batch) error {
		col := b.Strings(0)
		for i := range b.Len() {
			s, _ := col.Get(i) // present: the field is required and strict
			text = append(text[:0], s...)
			for j, c := range text {
				if c >= 'a' && c <= 'z' {
					text[j] = c - ('a' - 'A')
				}
			}
			b.Patch(i).SetStringBytes(field, text)
		}
		return nil
	})
}

func main() {}
