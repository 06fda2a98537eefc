// Command counter is a conformance plugin (map) that exercises keyed state.
// It keeps a ValueState "count" (an int64) per record key; for each record
// it increments the count and outputs
//
//	{"key":<the record key as a JSON string>,"count":<the new count>}
//
// The key's bytes are written as a JSON string (invalid UTF-8 bytes become
// \ufffd); a record without a key gets "key":null, and the count the host
// keeps for key-less records.
package main

import (
	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

var count = weir.NewValueState("count")

func init() {
	weir.MapTo(counter)
}

func counter(r *weir.Record, out *weir.Output) error {
	n, _, err := count.GetInt64(r)
	if err != nil {
		return err
	}
	n++
	if err := count.PutInt64(r, n); err != nil {
		return err
	}
	out.BuildValue(func(dst []byte) []byte {
		var w wjson.Writer
		w.Reset(dst)
		w.BeginObject()
		w.Key("key")
		if r.Key == nil {
			w.Null()
		} else {
			w.StringBytes(r.Key)
		}
		w.Key("count")
		w.Int(n)
		w.EndObject()
		return w.Bytes()
	})
	return nil
}

func main() {}
