// Command auction-filter is Nexmark q2's filter plugin: it keeps the bids
// whose auction id is a multiple of the "modulus" in its config (123 in
// the spec's query). A record without an integer "auction" is rejected, to
// the dead-letter output.
package main

import (
	"encoding/json"
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

var modulus int64 = 123

func init() {
	weir.Init(func(config []byte) error {
		var c struct {
			Modulus *int64 `json:"modulus"`
		}
		if err := json.Unmarshal(config, &c); err != nil {
			return err
		}
		if c.Modulus != nil {
			if *c.Modulus <= 0 {
				return errors.New("modulus must be positive")
			}
			modulus = *c.Modulus
		}
		return nil
	})
	weir.Filter(func(r *weir.Record) (bool, error) {
		v, err := wjson.Get(r.Value, "auction")
		if err != nil {
			return false, err
		}
		id, err := v.Int()
		if err != nil {
			return false, errors.New("bid has no integer auction")
		}
		return id%modulus == 0, nil
	})
}

func main() {}
