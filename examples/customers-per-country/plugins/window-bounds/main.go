// Command window-bounds is the customers-per-country example's map plugin:
// it writes into each window's result the window it belongs to, as a
// Flink job gets it by passing a ProcessWindowFunction beside its
// AggregateFunction (.aggregate(aggFn, windowFn), context.window()).
//
// The window operator gives each result it emits the timestamp of its
// window's last millisecond, end − 1 (Flink's window.maxTimestamp()). For
// a tumbling window of the configured size, the plugin therefore writes
// window_end = timestamp + 1 and window_start = window_end − size into the
// result object, after its first field, the way seed 000's FlinkSQL output
// has them:
//
//	{"country":"TR","count":13}   at timestamp 2024-08-06 16:00:04.999
//	→ {"country":"TR","window_start":"2024-08-06 16:00:00","window_end":"2024-08-06 16:00:05","count":13}
//
// The bounds are written as Flink SQL writes a TIMESTAMP(3) (and as weir's
// window operator writes its own window_start and window_end): UTC
// "yyyy-MM-dd HH:mm:ss", with the milliseconds as a fraction only when
// not zero.
//
// Config (JSON object, required): {"size": "5s"}, the tumbling window's
// size as a Go duration of whole milliseconds; give it from the window's
// own size with a YAML alias (size: &window 5s … config: {size: *window}).
// A result that is not a JSON object, or whose timestamp is not the last
// millisecond of a window of that size (tumbling windows are aligned to
// the epoch), is rejected with an error: its window is not one of size.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o window-bounds.wasm .
package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// sizeMs is the windows' size in milliseconds.
var sizeMs int64

func init() {
	weir.Init(configure)
	weir.MapTo(addBounds)
}

func configure(config []byte) error {
	v, err := wjson.Get(config, "size")
	switch {
	case err != nil:
		return fmt.Errorf("window-bounds config: %w", err)
	case v.Kind != wjson.String:
		return errors.New(`window-bounds config: "size" is required: the window's size, such as "5s"`)
	}
	d, err := time.ParseDuration(v.String())
	switch {
	case err != nil:
		return fmt.Errorf("window-bounds config: size: %w", err)
	case d <= 0 || d%time.Millisecond != 0:
		return fmt.Errorf("window-bounds config: size %s is not a positive whole number of milliseconds", d)
	}
	sizeMs = d.Milliseconds()
	return nil
}

func addBounds(r *weir.Record, out *weir.Output) error {
	var err error
	out.BuildValue(func(dst []byte) []byte {
		dst, err = appendWithBounds(dst, r.Value, r.Timestamp)
		return dst
	})
	return err
}

// name is scratch space for a field name.
var name []byte

// appendWithBounds appends the result object value with window_start and
// window_end after its first field, for the window whose last millisecond
// is ts.
func appendWithBounds(dst, value []byte, ts int64) ([]byte, error) {
	if sizeMs <= 0 {
		return dst, errors.New("window-bounds: no size configured")
	}
	end := ts + 1
	if end%sizeMs != 0 {
		return dst, fmt.Errorf("timestamp %d is not the last millisecond of a %s window", ts, time.Duration(sizeMs)*time.Millisecond)
	}
	start := end - sizeMs
	if !wjson.IsObject(value) {
		return dst, errors.New("the result is not a JSON object")
	}
	var w wjson.Writer
	w.Reset(dst)
	w.BeginObject()
	bounds := func() {
		w.Key("window_start")
		w.String(sqlTime(start))
		w.Key("window_end")
		w.String(sqlTime(end))
	}
	first := true
	err := wjson.Each(value, func(k, v wjson.Value) bool {
		name = k.AppendString(name[:0])
		w.KeyBytes(name)
		w.Raw(v.Raw)
		if first {
			bounds()
			first = false
		}
		return true
	})
	if first { // an empty object
		bounds()
	}
	w.EndObject()
	return w.Bytes(), err
}

// sqlTime formats epoch milliseconds as Flink SQL writes a TIMESTAMP(3):
// UTC yyyy-MM-dd HH:mm:ss, and .f, .ff or .fff when the milliseconds are
// not zero.
func sqlTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.999")
}

func main() {}
