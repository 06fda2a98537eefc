// Command auction-filter is Nexmark q2's filter plugin: it keeps the bids
// whose auction id is a multiple of the "modulus" in its config (123 in
// the spec's query).
//
// It uses the typed convention (ABI.md §14): it declares auction as a
// required, strict int, so the host parses each bid natively and hands the
// plugin the id alone. A record whose auction is missing, null or not an
// integer is dead-lettered by the host, with its reason (`field "auction":
// want int, found string`), and never reaches the plugin. It is a batch
// function: one call a batch, keeping the records it means to.
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
	weir.TypedFilterBatch(func(b *weir.Batch) error {
		ids := b.Ints(0)
		for i := range b.Len() {
			if id, _ := ids.Get(i); id%modulus == 0 { // present: required and strict
				b.Keep(i)
			}
		}
		return nil
	})
}

func main() {}
