// Command fahrenheit is the kafka-sensors example's map plugin. It adds
// "temp_f", the reading's "temp" in degrees Fahrenheit rounded to two
// decimals, as the last field of each JSON reading, keeping every other byte
// as it was. A reading without a numeric "temp" is rejected with an error,
// which sends it to the dead-letter topic.
package main

import (
	"bytes"
	"errors"
	"math"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.MapTo(func(r *weir.Record, out *weir.Output) error {
		v, err := wjson.Get(r.Value, "temp")
		if err != nil {
			return err
		}
		if v.Kind != wjson.Number {
			return errors.New("reading has no numeric temp")
		}
		c, err := v.Float()
		if err != nil {
			return err
		}
		f := math.Round((c*9/5+32)*100) / 100
		end := bytes.LastIndexByte(r.Value, '}')
		out.BuildValue(func(dst []byte) []byte {
			dst = append(dst, r.Value[:end]...)
			dst = append(dst, `,"temp_f":`...)
			dst = wjson.AppendFloat(dst, f)
			return append(dst, r.Value[end:]...)
		})
		return nil
	})
}

func main() {}
