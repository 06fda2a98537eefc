package dbio

import (
	"bytes"
	"math"
	"testing"

	"github.com/weir-stream/weir/abi/wjson"
)

// FuzzParam checks the JSON value → SQL parameter conversion against the
// kind of every JSON document, and that the sink's upsert key takes any
// parameter.
func FuzzParam(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud800"`, `-0`, `12`, `9223372036854775808`, `1.5e300`, `1e999`, `true`, `null`, `{"a":[1]}`, `[]`, `x`} {
		f.Add([]byte(s))
	}
	s := &Sink{cfg: SinkConfig{Columns: make([]Column, 1)}, keyIdx: []int{0}, last: make(map[string]int)}
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := wjson.Parse(doc)
		if err != nil {
			return
		}
		p, err := param(v)
		switch v.Kind {
		case wjson.String:
			if p != v.String() {
				t.Fatalf("%s → %#v", doc, p)
			}
		case wjson.Number:
			if i, ierr := v.Int(); ierr == nil {
				if p != i {
					t.Fatalf("%s → %#v, want int64 %d", doc, p, i)
				}
				break
			}
			fl, ferr := v.Float()
			if ferr != nil {
				if err == nil {
					t.Fatalf("%s → %#v, want an error", doc, p)
				}
				return
			}
			if got, ok := p.(float64); !ok || got != fl || math.IsInf(got, 0) {
				t.Fatalf("%s → %#v, want float64 %v", doc, p, fl)
			}
		case wjson.Bool:
			if p != bytes.Equal(v.Raw, []byte("true")) {
				t.Fatalf("%s → %#v", doc, p)
			}
		case wjson.Null:
			if p != nil {
				t.Fatalf("%s → %#v", doc, p)
			}
		case wjson.Object, wjson.Array:
			if p != string(v.Raw) {
				t.Fatalf("%s → %#v", doc, p)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		k, ok := s.rowKey([]any{p})
		if ok == (p == nil) || ok && k == "" {
			t.Fatalf("%s: key %q, %v", doc, k, ok)
		}
	})
}

// FuzzEnrich checks that a lookup's enriched value is JSON holding each
// result column once, with its value, and every other field of the input.
func FuzzEnrich(f *testing.F) {
	f.Add([]byte(`{"id":"d1"}`), "Berlin", 1.5, false)
	f.Add([]byte(`{"city":1,"n":2,"city":3}`), "x\x00\xff", math.NaN(), true)
	f.Add([]byte(` { "c\u0069ty" : [ 1 ] , "a" : { "n" : 1 } } `), "", -0.0, false)
	f.Fuzz(func(t *testing.T, doc []byte, city string, n float64, miss bool) {
		v, err := wjson.Parse(doc)
		if err != nil || v.Kind != wjson.Object {
			return
		}
		l := &lookup{cols: []string{"city", "n"}, kinds: []colKind{colPlain, colPlain}, done: make([]bool, 2)}
		r := &row{cols: [][]byte{appendColumn(nil, colPlain, city), appendColumn(nil, colPlain, n)}}
		if miss {
			r = nil
		}
		out := l.enrich(nil, doc, r)
		if !wjson.Valid(out) {
			t.Fatalf("enrich(%s) = %s: not JSON", doc, out)
		}
		others := 0
		wjson.Each(doc, func(k, _ wjson.Value) bool {
			if !k.StringEquals("city") && !k.StringEquals("n") {
				others++
			}
			return true
		})
		seen := map[string]int{}
		outOthers := 0
		err = wjson.Each(out, func(k, val wjson.Value) bool {
			switch {
			case k.StringEquals("city"), k.StringEquals("n"):
				c := l.column(k)
				seen[l.cols[c]]++
				want := []byte("null")
				if r != nil {
					want = r.cols[c]
				}
				if !bytes.Equal(val.Raw, want) {
					t.Errorf("field %s is %s, want %s", l.cols[c], val.Raw, want)
				}
			default:
				outOthers++
			}
			return true
		})
		if err != nil {
			t.Fatalf("enrich(%s) = %s: %v", doc, out, err)
		}
		if seen["city"] != 1 || seen["n"] != 1 || outOthers != others {
			t.Fatalf("enrich(%s) = %s: columns %v, %d other fields, want %d", doc, out, seen, outOthers, others)
		}
	})
}
