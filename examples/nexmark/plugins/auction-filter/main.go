// Command auction-filter is Nexmark q2's filter plugin: it keeps the bids
// whose auction id is a multiple of the "modulus" in its config (123 in
// the spec's query).
//
// It uses the typed convention (ABI.md §14): it declares auction as a
// required, strict int, so the host parses each bid natively and hands the
// plugin the id alone. A record whose auction is missing, null or not an
// integer is dead-lettered by the host, with its reason (`field "auction":
// want int, found string`), and never reaches the plugin.
package main

import (
	"encoding/json"
	"errors"

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
	weir.Fields(weir.IntField("auction", weir.Required|weir.Strict))
	weir.TypedFilter(func(r *weir.Row) (bool, error) {
		id, _ := r.Int(0) // present: the field is required and strict
		return id%modulus == 0, nil
	})
}

func main() {}
