// Command epoch-ms is the map plugin of the device-charge example's
// producer. The seed's producer stamps each reading with
//
//	event_ts = int(time.time() * 1000)
//
// the wall clock in epoch milliseconds. weir's generator has no such clock
// that is also reproducible, so produce.yaml generates "ts" as a sequence
// of epoch seconds, one reading a second, and "ms" as a random 0..999; this
// plugin writes the reading's fields in their order with "ts" set to
// ts*1000 + ms, epoch milliseconds like the seed's, and without "ms":
//
//	{"device_id":"1c:bf:ce:15:ec:4d",...,"ts":1722960000,"ms":123}
//	→ {"device_id":"1c:bf:ce:15:ec:4d",...,"ts":1722960000123}
//
// A reading without an integer "ts", or with an "ms" that is not an
// integer in 0..999, is rejected with an error. A reading without "ms"
// gets ts*1000.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o epoch-ms.wasm .
package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.MapTo(toMillis)
}

// name is scratch space for a field name.
var name []byte

func toMillis(r *weir.Record, out *weir.Output) error {
	var secs, ms int64
	var haveTS bool
	err := wjson.Each(r.Value, func(k, v wjson.Value) bool {
		switch {
		case k.StringEquals("ts"):
			secs, haveTS = 0, false
			if i, err := v.Int(); err == nil {
				secs, haveTS = i, true
			}
		case k.StringEquals("ms"):
			ms = -1
			if i, err := v.Int(); err == nil && i >= 0 && i <= 999 {
				ms = i
			}
		}
		return true
	})
	switch {
	case err != nil:
		return err
	case !haveTS:
		return errors.New("no integer field ts")
	case ms < 0:
		return errors.New("field ms is not an integer in 0..999")
	case secs > (math.MaxInt64-999)/1000 || secs < math.MinInt64/1000:
		return fmt.Errorf("ts %d s is beyond the int64 milliseconds", secs)
	}
	out.BuildValue(func(dst []byte) []byte {
		var w wjson.Writer
		w.Reset(dst)
		w.BeginObject()
		_ = wjson.Each(r.Value, func(k, v wjson.Value) bool { // read once above: no error
			switch {
			case k.StringEquals("ms"):
				return true
			case k.StringEquals("ts"):
				w.Key("ts")
				w.Int(secs*1000 + ms)
			default:
				name = k.AppendString(name[:0])
				w.KeyBytes(name)
				w.Raw(v.Raw)
			}
			return true
		})
		w.EndObject()
		return w.Bytes()
	})
	return nil
}

func main() {}
