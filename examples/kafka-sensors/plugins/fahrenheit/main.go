// Command fahrenheit is the kafka-sensors example's map plugin. It adds
// "temp_f", the reading's "temp" in degrees Fahrenheit rounded to two
// decimals, as the last field of each JSON reading (or in place of a
// temp_f it already has), keeping every other byte as it was.
//
// It uses the typed convention: it declares the fields, the host reads
// them from each reading, natively, and writes the plugin's answer into
// the reading. temp is required and must be a number, so the host sends a
// reading without one to the dead-letter topic with the reason (such as
// field "temp": want float, found string) before the plugin sees it.
// temp_f is declared too, though the plugin only writes it: that lets the
// host add it without reading the record again.
package main

import (
	"math"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// The declared fields, by index.
const (
	temp = iota
	tempF
)

func init() {
	weir.Fields(
		weir.FloatField("temp", weir.Required|weir.Strict),
		weir.FloatField("temp_f", 0),
	)
	weir.TypedMap(func(r *weir.Row, p *weir.Patch) error {
		c, _ := r.Float(temp) // present: required
		p.SetFloat("temp_f", math.Round((c*9/5+32)*100)/100)
		return nil
	})
}

func main() {}
