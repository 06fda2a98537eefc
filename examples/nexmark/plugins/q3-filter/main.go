// Command q3-filter is Nexmark q3's selection, before its join: it keeps
// the persons in Oregon, Idaho or California and the auctions of category
// 10 (Flink's WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')).
// Any other event is dropped; an event without a type is rejected.
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.Filter(func(r *weir.Record) (bool, error) {
		typ, err := wjson.Get(r.Value, "type")
		if err != nil {
			return false, err
		}
		switch {
		case typ.StringEquals("person"):
			st, err := wjson.Get(r.Value, "state")
			if err != nil {
				return false, err
			}
			return st.StringEquals("OR") || st.StringEquals("ID") || st.StringEquals("CA"), nil
		case typ.StringEquals("auction"):
			c, err := wjson.Get(r.Value, "category")
			if err != nil {
				return false, err
			}
			n, err := c.Int()
			return err == nil && n == 10, nil
		case !typ.Exists():
			return false, errors.New("event has no type")
		}
		return false, nil
	})
}

func main() {}
