// Command q3-project is Nexmark q3's projection, after its join: from a
// joined pair {"auctions": {...}, "persons": {...}} it writes
// {"name": P.name, "city": P.city, "state": P.state, "id": A.id}.
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.MapTo(func(r *weir.Record, out *weir.Output) error {
		p, err := wjson.Get(r.Value, "persons")
		if err != nil {
			return err
		}
		id, err := wjson.Get(r.Value, "auctions", "id")
		if err != nil {
			return err
		}
		if !p.Exists() || !id.Exists() {
			return errors.New("not a joined person and auction")
		}
		var fields [3]wjson.Value
		for i, name := range []string{"name", "city", "state"} {
			if fields[i], err = p.Get(name); err != nil {
				return err
			}
		}
		out.BuildValue(func(dst []byte) []byte {
			var w wjson.Writer
			w.Reset(dst)
			w.BeginObject()
			for i, name := range []string{"name", "city", "state"} {
				w.Key(name)
				w.Raw(fields[i].Raw)
			}
			w.Key("id")
			w.Raw(id.Raw)
			w.EndObject()
			return w.Bytes()
		})
		return nil
	})
}

func main() {}
