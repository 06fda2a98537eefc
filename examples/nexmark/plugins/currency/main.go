// Command currency is Nexmark q1's map plugin: it converts each bid's price
// from dollars to euros, price × 0.908, keeping every other byte of the
// bid as it was.
//
// It uses the typed convention (ABI.md §14): it declares price as a
// required, strict float, so the host parses each bid natively and hands
// the plugin the price alone, and the plugin answers with a patch setting
// price to the product, which the host writes into the bid as the
// shortest decimal that reads back as the same float64 (as Python's repr
// and wjson.AppendFloat do). A record whose price is missing, null or not
// a number is dead-lettered by the host, with its reason (`field "price":
// missing`), and never reaches the plugin. It is a batch function: one
// call a batch, its own loop over the price column, which in Go's wasm
// code costs a fraction of a call a record. plugins/currency-c is the same
// map in C through the raw ABI, which parses the bid in the guest.
package main

import (
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// Rate is the dollar to euro rate of the Nexmark spec.
const Rate = 0.908

func init() {
	weir.Fields(weir.FloatField("price", weir.Required|weir.Strict))
	weir.TypedMapBatch(func(b *weir.Batch) error {
		prices := b.Floats(0)
		for i := range b.Len() {
			price, _ := prices.Get(i) // present: the field is required and strict
			b.Patch(i).SetFloat("price", price*Rate)
		}
		return nil
	})
}

func main() {}
