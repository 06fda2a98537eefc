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
//	window:    true: window_start and window_end (epoch ms) at the front of
//	           the result, the bounds of the window it is the result of
//	           (q7), which the host gives the result call with the group's
//	           key (weir.AggContext, weir_agg_result_ctx in ABI.md §12.5);
//	           a result without a window then fails
//
// Unknown config fields fail init (window_ms and time, which computed a
// tumbling window's bounds from a row before the host gave them, are
// gone).
//
// The result is one JSON object, its fields in this order: window_start
// and window_end (with window), the copy fields, by with the maximum, then
// rows: the kept fields of every record with the maximum, in the order
// they were added (merged accumulators: a's rows, then b's). For example,
// for q7:
//
//	{"window_start":1436918400000,"window_end":1436918410000,"price":99970203,"bids":[{"auction":1007,"bidder":1001,"price":99970203,"dateTime":1436918404242}]}
//
// It uses the typed convention (ABI.md §14): at init it declares by as a
// required, strict int and the keep and copy fields as raw JSON text, so
// the host parses each record natively and the plugin reads the fields
// from the typed batch, parsing nothing. A record whose by field is
// missing, null or not an integer is dead-lettered by the host, with its
// reason (`field "price": want int, found string`). Missing keep or copy
// fields are written as null, and others as their JSON text, as it is; a
// keep or copy field that is the by field is written as the integer.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

var cfg struct {
	By     string   `json:"by"`
	Keep   []string `json:"keep"`
	Rows   string   `json:"rows"`
	Copy   []string `json:"copy"`
	Window bool     `json:"window"`
}

// member is one field a row or the head writes: its quoted name and
// colon, and its declared field (0 is by).
type member struct {
	key   []byte
	field int
}

// keep and copy are the members of a row and of the head; byKey and
// rowsKey the result's by and rows names, quoted, with the colon.
var (
	keep, copyFields []member
	byKey, rowsKey   []byte
)

// acc holds the maximum so far and the rows that have it. head is the
// copy fields of the window's first record, as object members each
// followed by a comma; rows are the rows' JSON objects, separated by
// commas. own says whether rows is the scratch buffer (after an add), not
// the decoded input: only then may rows be appended to in place. Encoded:
// 0 for none, or 1, max, head, rows.
type acc struct {
	has  bool
	max  int64
	head []byte
	rows []byte
	own  bool
}

// Scratch space for the accumulator of the group being folded: the SDK
// folds one group at a time and encodes its accumulator before the next.
var headBuf, rowsBuf []byte

var codec = weir.Codec[acc]{
	Append: func(dst []byte, a acc) []byte {
		if !a.has {
			return append(dst, 0)
		}
		dst = append(dst, 1)
		dst = weir.AppendInt64(dst, a.max)
		dst = weir.AppendBytes(dst, a.head)
		return weir.AppendBytes(dst, a.rows)
	},
	Decode: func(b []byte) (acc, error) {
		if len(b) == 0 {
			return acc{}, errors.New("empty accumulator")
		}
		if b[0] == 0 {
			return acc{}, nil
		}
		d := weir.NewAccDecoder(b[1:])
		a := acc{has: true, max: d.Int64(), head: d.Bytes(), rows: d.Bytes()}
		if err := d.End(); err != nil {
			return acc{}, err
		}
		return a, nil
	},
}

func init() {
	weir.Init(func(config []byte) error {
		dec := json.NewDecoder(bytes.NewReader(config))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return err
		}
		if cfg.By == "" || len(cfg.Keep) == 0 {
			return errors.New(`config needs "by" and "keep"`)
		}
		if cfg.Rows == "" {
			cfg.Rows = "rows"
		}
		declare()
		return nil
	})
	weir.TypedAggregate(weir.TypedAggregateFuncs[acc]{
		Create:    func() acc { return acc{} },
		Add:       add,
		Merge:     merge,
		ResultCtx: result,
		Codec:     codec,
	})
}

// declare declares the fields: by, then each other keep or copy field
// once, as raw text. Each is a member of the record's value, as its name
// says, even with a '.' in it: the declared paths escape it.
func declare() {
	fields := []weir.Field{weir.IntField(path(cfg.By), weir.Required|weir.Strict)}
	index := map[string]int{cfg.By: 0}
	members := func(names []string) []member {
		var ms []member
		for _, name := range names {
			f, ok := index[name]
			if !ok {
				f = len(fields)
				index[name] = f
				fields = append(fields, weir.RawField(path(name), 0))
			}
			ms = append(ms, member{key: quoted(name), field: f})
		}
		return ms
	}
	keep, copyFields = members(cfg.Keep), members(cfg.Copy)
	byKey, rowsKey = quoted(cfg.By), quoted(cfg.Rows)
	weir.Fields(fields...)
}

func quoted(name string) []byte { return append(wjson.AppendQuote(nil, name), ':') }

// path is the field path of the member name (ABI.md §14.1).
func path(name string) string { return string(abi.AppendPath(nil, name)) }

// appendMember appends m's name and its value in r.
func appendMember(dst []byte, m member, r *weir.Row) []byte {
	dst = append(dst, m.key...)
	if m.field == 0 {
		v, _ := r.Int(0)
		return strconv.AppendInt(dst, v, 10)
	}
	if v, ok := r.Bytes(m.field); ok {
		return append(dst, v...)
	}
	return append(dst, "null"...)
}

// appendRow appends r's row: its keep fields, as a JSON object.
func appendRow(dst []byte, r *weir.Row) []byte {
	dst = append(dst, '{')
	for i, m := range keep {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMember(dst, m, r)
	}
	return append(dst, '}')
}

func add(a acc, r *weir.Row) (acc, error) {
	v, _ := r.Int(0) // present: by is required and strict
	if a.has && v < a.max {
		return a, nil
	}
	if !a.has {
		headBuf = headBuf[:0]
		for _, m := range copyFields {
			headBuf = append(appendMember(headBuf, m, r), ',')
		}
		a.has, a.head = true, headBuf
	}
	if v > a.max || len(a.rows) == 0 {
		rowsBuf = appendRow(rowsBuf[:0], r)
		a.max, a.rows, a.own = v, rowsBuf, true
		return a, nil
	}
	if a.own {
		rowsBuf = a.rows
	} else {
		rowsBuf = append(rowsBuf[:0], a.rows...)
	}
	rowsBuf = appendRow(append(rowsBuf, ','), r)
	a.rows, a.own = rowsBuf, true
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
	case b.max == a.max && len(b.rows) > 0:
		if len(a.rows) == 0 {
			a.rows = b.rows
			break
		}
		rows := make([]byte, 0, len(a.rows)+1+len(b.rows))
		a.rows = append(append(append(rows, a.rows...), ','), b.rows...)
	}
	return a
}

// result writes the group's result; with window, the bounds of the
// window c says it is the result of.
func result(dst []byte, a acc, c weir.AggContext) ([]byte, error) {
	dst = append(dst, '{')
	if cfg.Window {
		if !c.Windowed {
			return nil, errors.New(`config "window": the result has no window (maxby runs in a window operator, on a host that gives the result call its window)`)
		}
		dst = strconv.AppendInt(append(dst, `"window_start":`...), c.Start, 10)
		dst = strconv.AppendInt(append(dst, `,"window_end":`...), c.End, 10)
		dst = append(dst, ',')
	}
	if a.has {
		dst = append(dst, a.head...)
	}
	dst = strconv.AppendInt(append(dst, byKey...), a.max, 10)
	dst = append(append(append(dst, ','), rowsKey...), '[')
	dst = append(dst, a.rows...)
	return append(dst, "]}"...), nil
}

func main() {}
