// Command rekey is a map plugin that sets each record's key to the value
// of a JSON field (config "field"; a string's text, another value's JSON
// text), leaving the value as it is: key_by without starting a new segment
// of the chain.
//
// q5 needs it because of an engine limit (see the README): the results a
// window emits when a watermark fires it reach an event-time operator
// behind a key_by only after that operator has seen the watermark, so
// they arrive late. A plugin map stays in the window's segment, where
// fired results pass through the rest of the segment before the next
// operator's watermark. Records are not re-partitioned, so a pipeline
// using it for grouping must run with parallelism 1.
package main

import (
	"encoding/json"
	"errors"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/guest-sdk/go/wjson"
)

var (
	field string
	key   []byte
)

func init() {
	weir.Init(func(config []byte) error {
		var c struct {
			Field string `json:"field"`
		}
		if err := json.Unmarshal(config, &c); err != nil {
			return err
		}
		if c.Field == "" {
			return errors.New(`config needs "field"`)
		}
		field = c.Field
		return nil
	})
	weir.MapTo(func(r *weir.Record, out *weir.Output) error {
		v, err := wjson.Get(r.Value, field)
		if err != nil {
			return err
		}
		switch v.Kind {
		case wjson.Invalid:
			return errors.New("missing field " + field)
		case wjson.String:
			key = v.AppendString(key[:0])
		default:
			key = append(key[:0], v.Raw...)
		}
		out.SetKey(key)
		return nil
	})
}

func main() {}
