// Command maxby is an aggregate plugin for window operators: the records
// of a window with the largest value of an integer field — SQL's "the rows
// where x = (SELECT max(x) …)", which needs a join in Flink's Nexmark
// queries. It serves q5 (the auctions with the most bids in a window) and
// q7 (the highest bid of a window).
//
// Config:
//
//	by:        the integer field to maximise (required)
//	keep:      the fields copied into each row of the result (required)
//	rows:      the result's field holding the rows, default "rows"
//	copy:      fields copied once, from the window's first record, to the
//	           front of the result (q5: window_start, window_end)
//	window_ms: with time, add window_start and window_end (epoch ms) for a
//	time:      tumbling window of window_ms, from the time field of a row
//
// The result is one JSON object, its fields in this order: the copy fields
// (or window_start and window_end), by with the maximum, then rows: the
// kept fields of every record with the maximum, in the order they were
// added (merged accumulators: a's rows, then b's). For example, for q7:
//
//	{"window_start":1436918400000,"window_end":1436918410000,"price":99970203,"bids":[{"auction":1007,"bidder":1001,"price":99970203,"dateTime":1436918404242}]}
//
// A record without an integer by field is rejected, to the dead-letter
// output. Missing keep or copy fields are written as null.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

var cfg struct {
	By       string   `json:"by"`
	Keep     []string `json:"keep"`
	Rows     string   `json:"rows"`
	Copy     []string `json:"copy"`
	WindowMS int64    `json:"window_ms"`
	Time     string   `json:"time"`
}

// acc holds the maximum so far and the rows that have it. head is a JSON
// object of the copied fields, from the first record; rows are JSON
// objects.
type acc struct {
	has  bool
	max  int64
	head []byte
	rows [][]byte
}

var codec = weir.Codec[acc]{
	Append: func(dst []byte, a acc) []byte {
		if !a.has {
			return append(dst, 0)
		}
		dst = append(dst, 1)
		dst = weir.AppendInt64(dst, a.max)
		dst = weir.AppendBytes(dst, a.head)
		dst = weir.AppendUint64(dst, uint64(len(a.rows)))
		for _, r := range a.rows {
			dst = weir.AppendBytes(dst, r)
		}
		return dst
	},
	Decode: func(b []byte) (acc, error) {
		if len(b) == 0 {
			return acc{}, errors.New("empty accumulator")
		}
		if b[0] == 0 {
			return acc{}, nil
		}
		d := weir.NewAccDecoder(b[1:])
		a := acc{has: true, max: d.Int64(), head: d.Bytes()}
		n := d.Uint64()
		if n > uint64(len(b)) {
			return acc{}, errors.New("corrupt accumulator")
		}
		a.rows = make([][]byte, 0, n)
		for range n {
			a.rows = append(a.rows, d.Bytes())
		}
		return a, d.End()
	},
}

func init() {
	weir.Init(func(config []byte) error {
		if err := json.Unmarshal(config, &cfg); err != nil {
			return err
		}
		if cfg.By == "" || len(cfg.Keep) == 0 {
			return errors.New(`config needs "by" and "keep"`)
		}
		if cfg.Rows == "" {
			cfg.Rows = "rows"
		}
		if (cfg.WindowMS > 0) != (cfg.Time != "") {
			return errors.New(`"window_ms" and "time" go together`)
		}
		return nil
	})
	weir.Aggregate(weir.AggregateFuncs[acc]{
		Create: func() acc { return acc{} },
		Add:    add,
		Merge:  merge,
		Result: result,
		Codec:  codec,
	})
}

// fields writes the named fields of the JSON object v as members.
func fields(w *wjson.Writer, v []byte, names []string) error {
	for _, f := range names {
		x, err := wjson.Get(v, f)
		if err != nil {
			return err
		}
		w.Key(f)
		if x.Exists() {
			w.Raw(x.Raw)
		} else {
			w.Null()
		}
	}
	return nil
}

func add(a acc, r *weir.Record) (acc, error) {
	x, err := wjson.Get(r.Value, cfg.By)
	if err != nil {
		return a, err
	}
	v, err := x.Int()
	if err != nil {
		return a, fmt.Errorf("field %q is not an integer", cfg.By)
	}
	if a.has && v < a.max {
		return a, nil
	}
	var w wjson.Writer
	w.BeginObject()
	if err := fields(&w, r.Value, cfg.Keep); err != nil {
		return a, err
	}
	w.EndObject()
	row := w.Bytes()
	if !a.has {
		var h wjson.Writer
		h.BeginObject()
		if err := fields(&h, r.Value, cfg.Copy); err != nil {
			return a, err
		}
		h.EndObject()
		a.has, a.head = true, h.Bytes()
	}
	if v > a.max || len(a.rows) == 0 {
		a.max, a.rows = v, a.rows[:0]
	}
	a.rows = append(a.rows, row)
	return a, nil
}

func merge(a, b acc) acc {
	switch {
	case !b.has:
		return a
	case !a.has:
		return b
	case b.max > a.max:
		b.head = a.head
		return b
	case b.max == a.max:
		a.rows = append(a.rows[:len(a.rows):len(a.rows)], b.rows...)
	}
	return a
}

func result(dst []byte, a acc) ([]byte, error) {
	var w wjson.Writer
	w.Reset(dst)
	w.BeginObject()
	if cfg.WindowMS > 0 && len(a.rows) > 0 {
		t, err := wjson.Get(a.rows[0], cfg.Time)
		if err != nil {
			return nil, err
		}
		ms, err := t.Int()
		if err != nil {
			return nil, fmt.Errorf("field %q is not an integer", cfg.Time)
		}
		start := int64(math.Floor(float64(ms)/float64(cfg.WindowMS))) * cfg.WindowMS
		w.Key("window_start")
		w.Int(start)
		w.Key("window_end")
		w.Int(start + cfg.WindowMS)
	}
	if a.has {
		if err := fields(&w, a.head, cfg.Copy); err != nil {
			return nil, err
		}
	}
	w.Key(cfg.By)
	w.Int(a.max)
	w.Key(cfg.Rows)
	w.BeginArray()
	for _, r := range a.rows {
		w.Raw(r)
	}
	w.EndArray()
	w.EndObject()
	return w.Bytes(), nil
}

func main() {}
