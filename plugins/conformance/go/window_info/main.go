// Command window_info is a conformance plugin (aggregate) whose result
// depends on the group it is the result of: it counts a group's records
// and writes, from the result's context (weir.AggContext, ABI.md §12.5),
//
//	{"key":<key>,"start":<window start>,"end":<window end>,"count":<count>}
//
// with the key as a JSON string (null when the group has none) and the
// window's bounds in milliseconds since the Unix epoch (null when the
// group is not a window's). Every record counts; none is rejected.
//
// The accumulator is the count, an int64, 8 bytes little-endian
// (weir.AppendInt64).
package main

import (
	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

var codec = weir.Codec[int64]{
	Append: weir.AppendInt64,
	Decode: func(b []byte) (int64, error) {
		d := weir.NewAccDecoder(b)
		n := d.Int64()
		return n, d.End()
	},
}

func init() {
	weir.Aggregate(weir.AggregateFuncs[int64]{
		Add:       func(n int64, _ *weir.Record) (int64, error) { return n + 1, nil },
		Merge:     func(a, b int64) int64 { return a + b },
		ResultCtx: result,
		Codec:     codec,
	})
}

func result(dst []byte, n int64, c weir.AggContext) ([]byte, error) {
	var w wjson.Writer
	w.Reset(dst)
	w.BeginObject()
	w.Key("key")
	if c.Key == nil {
		w.Null()
	} else {
		w.StringBytes(c.Key)
	}
	for _, b := range []struct {
		name string
		ms   int64
	}{{"start", c.Start}, {"end", c.End}} {
		w.Key(b.name)
		if c.Windowed {
			w.Int(b.ms)
		} else {
			w.Null()
		}
	}
	w.Key("count")
	w.Int(n)
	w.EndObject()
	return w.Bytes(), nil
}

func main() {}
