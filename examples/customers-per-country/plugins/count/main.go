// Command count is the aggregate of the customers-per-country example: the
// CustomerAggregatorByCountry of the Flink article it follows, which counts
// customer-creation events per country. Each record is a customer as JSON,
// such as
//
//	{"id":3, "first":"Yasemin", "last":"KOC", "country":"TR"}
//
// and the pipeline keys the stream by "country". The accumulator is the
// pair (country, count), as Flink's Tuple2<String, Long>:
//
//   - create: ("", 0);
//   - add: country = the record's "country", count + 1;
//   - merge: (a.country, a.count + b.count), or b's country when a has
//     none yet;
//   - result: {"country":"TR","count":13}.
//
// A record that is not a JSON object with a string "country" is rejected
// (the article's job drops such records in its map step).
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// acc is the country and the number of customers seen for it.
type acc struct {
	country string
	count   int64
}

// The accumulator is the country as a u32 length and its bytes, then the
// count as 8 bytes little-endian.
var codec = weir.Codec[acc]{
	Append: func(dst []byte, a acc) []byte {
		dst = weir.AppendString(dst, a.country)
		return weir.AppendInt64(dst, a.count)
	},
	Decode: func(b []byte) (acc, error) {
		d := weir.NewAccDecoder(b)
		country := d.Bytes()
		count := d.Int64()
		if err := d.End(); err != nil {
			return acc{}, err
		}
		return acc{country: internCountry(country), count: count}, nil
	},
}

// last is the most recent country string, reused while the country does
// not change so that a group's records cost no allocation.
var last string

func internCountry(b []byte) string {
	if string(b) != last {
		last = string(b)
	}
	return last
}

// text is scratch space for decoding the country.
var text []byte

func init() {
	weir.Aggregate(weir.AggregateFuncs[acc]{
		Create: func() acc { return acc{country: "", count: 0} },
		Add:    add,
		Merge:  merge,
		Result: result,
		Codec:  codec,
	})
}

func add(a acc, r *weir.Record) (acc, error) {
	v, err := wjson.Get(r.Value, "country")
	switch {
	case err != nil:
		return a, err
	case !v.Exists():
		return a, errors.New("missing field country")
	case v.Kind != wjson.String:
		return a, errors.New("field country is not a string")
	}
	text = v.AppendString(text[:0])
	a.country = internCountry(text)
	a.count++
	return a, nil
}

func merge(a, b acc) acc {
	if a.country == "" {
		a.country = b.country
	}
	return acc{country: a.country, count: a.count + b.count}
}

func result(dst []byte, a acc) ([]byte, error) {
	var w wjson.Writer
	w.Reset(dst)
	w.BeginObject()
	w.Key("country")
	w.String(a.country)
	w.Key("count")
	w.Int(a.count)
	w.EndObject()
	return w.Bytes(), nil
}

func main() {}
