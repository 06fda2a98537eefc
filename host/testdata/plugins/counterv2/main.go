// Command counterv2 is the conformance counter plugin's next version, for
// the test that state survives a plugin upgrade: it keeps the same
// ValueState "count" per record key, counts by one as before, and adds
// "version":2 to its output.
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
		w.StringBytes(r.Key)
		w.Key("count")
		w.Int(n)
		w.Key("version")
		w.Int(2)
		w.EndObject()
		return w.Bytes()
	})
	return nil
}

func main() {}
