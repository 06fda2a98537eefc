// Command trap_on is a conformance plugin (map) for instance failure. When a
// record's raw value equals the configured trap value, the plugin kills its
// instance; every other record is kept unchanged.
//
// A plugin in another language would execute a WebAssembly trap
// (unreachable). Go has no statement for that: the Go runtime only traps
// when a panic goes unrecovered, and the SDK recovers panics in registered
// functions, turning them into per-record errors. os.Exit is the Go
// stand-in: under wasip1 the Go runtime implements it with WASI proc_exit,
// which ends the instance's execution in the middle of the batch call, so
// the host sees the instance die as it would on a trap (under wazero, the
// call returns a *sys.ExitError instead of a trap error) and must discard
// the instance and the batch's output. The exit code is 3.
//
// Config: {"trap": "trap"}; the default trap value is "trap".
package main

import (
	"os"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/plugins/conformance/go/internal/pluginconfig"
)

var trap = "trap"

func init() {
	weir.Init(func(config []byte) (err error) {
		trap, err = pluginconfig.String(config, "trap", trap)
		return err
	})
	weir.Map(func(r *weir.Record) ([]byte, error) {
		if string(r.Value) == trap {
			os.Exit(3)
		}
		return r.Value, nil
	})
}

func main() {}
