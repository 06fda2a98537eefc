// Command fail_on is a conformance plugin (map) for per-record errors. A
// record whose raw value equals the configured bad value is rejected with
// the error "bad input: <value>"; every other record is kept unchanged. An
// absent value compares as empty.
//
// Config: {"bad": "bad"}; the default bad value is "bad".
package main

import (
	"errors"

	weir "github.com/weir-stream/weir/guest-sdk/go"
	"github.com/weir-stream/weir/plugins/conformance/go/internal/pluginconfig"
)

var bad = "bad"

func init() {
	weir.Init(func(config []byte) (err error) {
		bad, err = pluginconfig.String(config, "bad", bad)
		return err
	})
	weir.Map(func(r *weir.Record) ([]byte, error) {
		if string(r.Value) == bad {
			return nil, errors.New("bad input: " + string(r.Value))
		}
		return r.Value, nil
	})
}

func main() {}
