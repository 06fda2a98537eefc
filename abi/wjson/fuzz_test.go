package wjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"
)

func addDocSeeds(f *testing.F, extra ...any) {
	for _, tc := range docs {
		if len(tc.doc) > 1000 {
			continue
		}
		f.Add(append([]any{[]byte(tc.doc)}, extra...)...)
	}
}

// isObject reports whether a valid document's top-level value is an object.
func isObject(doc []byte) bool {
	t := bytes.TrimLeft(doc, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

func FuzzGet(f *testing.F) {
	addDocSeeds(f, "a")
	f.Add([]byte(`{"a":{"b":1},"a":"x"}`), "a")
	f.Add([]byte(`{"\u0061":1}`), "a")
	f.Fuzz(func(t *testing.T, doc []byte, key string) {
		v, err := Get(doc, key)
		valid := json.Valid(doc)
		if (err == nil) != valid {
			t.Fatalf("Get error %v, encoding/json valid %v", err, valid)
		}
		if !valid {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(doc) {
				t.Fatalf("error %v is not a *SyntaxError within the document", err)
			}
			return
		}
		std, found := stdLookup(t, doc, []string{key})
		if found != v.Exists() {
			t.Fatalf("Get found %v, encoding/json found %v", v.Exists(), found)
		}
		if found {
			if !bytes.Equal(doc[v.Offset:v.Offset+len(v.Raw)], v.Raw) {
				t.Fatalf("Offset %d does not locate Raw", v.Offset)
			}
			if got := stdDecode(t, v.Raw); !reflect.DeepEqual(got, std) {
				t.Fatalf("Get = %s, encoding/json = %v", v.Raw, std)
			}
		}
		whole, err := Get(doc)
		if err != nil || !bytes.Equal(whole.Raw, bytes.Trim(doc, " \t\r\n")) {
			t.Fatalf("Get with no path = %s, %v", whole.Raw, err)
		}
	})
}

func FuzzEach(f *testing.F) {
	addDocSeeds(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		type kv struct {
			key string
			val any
		}
		var got []kv
		err := Each(doc, func(k, v Value) bool {
			if !bytes.Equal(doc[k.Offset:k.Offset+len(k.Raw)], k.Raw) || !bytes.Equal(doc[v.Offset:v.Offset+len(v.Raw)], v.Raw) {
				t.Fatalf("Offsets do not locate Raw")
			}
			got = append(got, kv{k.String(), v})
			return true
		})
		valid := json.Valid(doc)
		switch {
		case !valid:
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Each error = %v on invalid JSON, want a *SyntaxError", err)
			}
			return
		case !isObject(doc):
			if !errors.Is(err, ErrKind) || len(got) > 0 {
				t.Fatalf("Each error = %v after %d calls on a non-object, want ErrKind and none", err, len(got))
			}
			return
		case err != nil:
			t.Fatalf("Each error = %v on a valid object", err)
		}
		// Compare names and values, in order, with encoding/json's tokens.
		d := json.NewDecoder(bytes.NewReader(doc))
		d.UseNumber()
		if _, err := d.Token(); err != nil {
			t.Fatal(err)
		}
		for i := 0; d.More(); i++ {
			tok, err := d.Token()
			if err != nil {
				t.Fatal(err)
			}
			var val any
			if err := d.Decode(&val); err != nil {
				t.Fatal(err)
			}
			if i >= len(got) {
				t.Fatalf("Each reported %d members, encoding/json has more", len(got))
			}
			v := got[i].val.(Value)
			if got[i].key != tok.(string) || !reflect.DeepEqual(stdDecode(t, v.Raw), val) {
				t.Fatalf("member %d: Each %q=%s, encoding/json %q=%v", i, got[i].key, v.Raw, tok, val)
			}
			if i == len(got)-1 && d.More() {
				t.Fatalf("Each reported %d members, encoding/json has more", len(got))
			}
		}
	})
}

func FuzzArrayEach(f *testing.F) {
	addDocSeeds(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		var got []any
		err := ArrayEach(doc, func(i int, v Value) bool {
			got = append(got, stdDecode(t, v.Raw))
			return true
		})
		if !json.Valid(doc) {
			if err == nil {
				t.Fatal("ArrayEach accepted invalid JSON")
			}
			return
		}
		var std any
		d := json.NewDecoder(bytes.NewReader(doc))
		d.UseNumber()
		if err := d.Decode(&std); err != nil {
			t.Fatal(err)
		}
		arr, isArr := std.([]any)
		if !isArr {
			if !errors.Is(err, ErrKind) {
				t.Fatalf("ArrayEach error = %v on a non-array", err)
			}
			return
		}
		if err != nil || len(got) != len(arr) || len(arr) > 0 && !reflect.DeepEqual(got, arr) {
			t.Fatalf("ArrayEach = %v, %v; encoding/json = %v", got, err, arr)
		}
	})
}

func FuzzString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\ud83d\ude00"`, `"\ud83d\u0041"`, "\"\xff\"", `"\u0000"`, `"\ude00\ud83d"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := Parse(raw)
		if err != nil || v.Kind != String {
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if got := v.String(); got != want {
			t.Fatalf("String() = %q, encoding/json = %q", got, want)
		}
		if !v.StringEquals(want) {
			t.Fatalf("StringEquals(%q) = false", want)
		}
		// Re-quoting the decoded text must give a string that decodes to it.
		q := AppendQuote(nil, want)
		var back string
		if err := json.Unmarshal(q, &back); err != nil || back != want {
			t.Fatalf("AppendQuote(%q) = %s, decodes to %q, %v", want, q, back, err)
		}
	})
}

func FuzzWriterRoundTrip(f *testing.F) {
	f.Add("key", "value", int64(42), 10.700000000000003, true)
	f.Add("", "\x00\xff\"\\", int64(math.MinInt64), math.Copysign(0, -1), false)
	f.Add("k\n", "😀", int64(-1), 1e16, true)
	f.Add("a", "b", int64(0), 5e-324, false)
	f.Fuzz(func(t *testing.T, key, str string, i int64, fl float64, b bool) {
		var w Writer
		w.BeginObject()
		w.Key(key)
		w.BeginArray()
		w.String(str)
		w.Int(i)
		w.Float(fl)
		w.Bool(b)
		w.Null()
		w.EndArray()
		w.EndObject()
		out := w.Bytes()
		if !json.Valid(out) || !Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		var got map[string][]any
		d := json.NewDecoder(bytes.NewReader(out))
		d.UseNumber()
		if err := d.Decode(&got); err != nil {
			t.Fatal(err)
		}
		wantKey, wantStr := stdString(key), stdString(str)
		arr, ok := got[wantKey]
		if !ok || len(got) != 1 || len(arr) != 5 {
			t.Fatalf("decoded %v, want one key %q with 5 elements", got, wantKey)
		}
		if arr[0] != wantStr {
			t.Errorf("string %q, want %q", arr[0], wantStr)
		}
		if arr[1].(json.Number).String() != strconv.FormatInt(i, 10) {
			t.Errorf("int %v, want %d", arr[1], i)
		}
		if math.IsNaN(fl) || math.IsInf(fl, 0) {
			if arr[2] != nil {
				t.Errorf("non-finite float written as %v, want null", arr[2])
			}
		} else {
			back, err := strconv.ParseFloat(arr[2].(json.Number).String(), 64)
			if err != nil || math.Float64bits(back) != math.Float64bits(fl) {
				t.Errorf("float %v reads back as %v, %v", fl, back, err)
			}
		}
		if arr[3] != b || arr[4] != nil {
			t.Errorf("bool/null = %v %v", arr[3], arr[4])
		}
	})
}

// stdString is what encoding/json preserves of s: invalid UTF-8 replaced.
func stdString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var out string
	enc, _ := json.Marshal(s)
	_ = json.Unmarshal(enc, &out)
	return out
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 52.7, 1e16, 1e-5, 1e-4, 9999999999999998, 5e-324, math.MaxFloat64, -1.5e-7} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		out := string(AppendFloat(nil, v))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		back, err := strconv.ParseFloat(out, 64)
		if err != nil || math.Float64bits(back) != math.Float64bits(v) {
			t.Fatalf("AppendFloat(%v) = %q, parses back as %v, %v", v, out, back, err)
		}
		// The digits must be the shortest: those of strconv's 'g', -1.
		digits := func(s string) string {
			var d []byte
			for _, c := range []byte(s) {
				if c == 'e' {
					break
				}
				if c >= '0' && c <= '9' {
					d = append(d, c)
				}
			}
			return string(bytes.Trim(d, "0"))
		}
		if got, want := digits(out), digits(strconv.FormatFloat(v, 'e', -1, 64)); got != want {
			t.Fatalf("AppendFloat(%v) = %q: digits %s, want %s", v, out, got, want)
		}
		abs := math.Abs(v)
		exp := bytes.ContainsRune([]byte(out), 'e')
		if wantExp := abs != 0 && (abs < 1e-4 || abs >= 1e16); exp != wantExp {
			t.Fatalf("AppendFloat(%v) = %q: exponent form %v, want %v", v, out, exp, wantExp)
		}
		if !exp && !bytes.ContainsRune([]byte(out), '.') {
			t.Fatalf("AppendFloat(%v) = %q has no decimal point", v, out)
		}
	})
}

// FuzzGetFastMatchesFull checks Get, with its fast path, against getFull,
// the full parser: for any document and path they must return the same
// Value, field for field and aliasing the same bytes of the document, and
// the same error. Besides the fuzzed names it tries paths made of the
// document's own names (so that most lookups find something) and, for
// short documents, every truncation of the document.
func FuzzGetFastMatchesFull(f *testing.F) {
	addDocSeeds(f, "a", "b")
	for _, doc := range getFastSeeds {
		f.Add([]byte(doc), "kind", "x")
	}
	f.Fuzz(func(t *testing.T, doc []byte, key1, key2 string) {
		paths := [][]string{{key1}, {key1, key2}}
		names := 0
		_ = Each(doc, func(k, v Value) bool {
			name := k.String()
			paths = append(paths, []string{name}, []string{name, key2})
			if v.Kind == Object {
				nested := 0
				_ = v.Each(func(k, _ Value) bool {
					paths = append(paths, []string{name, k.String()})
					nested++
					return nested < 4
				})
			}
			names++
			return names < 8
		})
		for _, path := range paths {
			sameGet(t, doc, path)
			if len(doc) <= 256 {
				for k := 8; k < len(doc); k++ {
					sameGet(t, doc[:k], path)
				}
			}
		}
	})
}

// sameGet fails t unless Get(doc, path...) and getFull(doc, path) agree
// exactly.
func sameGet(t *testing.T, doc []byte, path []string) {
	t.Helper()
	got, gotErr := Get(doc, path...)
	want, wantErr := getFull(doc, path)
	if errText(gotErr) != errText(wantErr) || reflect.TypeOf(gotErr) != reflect.TypeOf(wantErr) {
		t.Fatalf("Get(%q, %q): error %v, getFull: %v", doc, path, gotErr, wantErr)
	}
	if got.Kind != want.Kind || got.Offset != want.Offset || got.plain != want.plain ||
		!bytes.Equal(got.Raw, want.Raw) || (got.Raw == nil) != (want.Raw == nil) ||
		len(got.Raw) > 0 && &got.Raw[0] != &want.Raw[0] || cap(got.Raw) != cap(want.Raw) {
		t.Fatalf("Get(%q, %q) = %s %q at %d plain %v, getFull = %s %q at %d plain %v", doc, path,
			got.Kind, got.Raw, got.Offset, got.plain, want.Kind, want.Raw, want.Offset, want.plain)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// getFastSeeds are documents for FuzzGetFastMatchesFull that exercise Get's
// fast path: objects of every shape, its word loads at the end of the
// document, and its ways out to the full parser.
var getFastSeeds = []string{
	// Flat objects, as sensors send them.
	`{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000}`,
	`{"id":"123","kind":"temp","value":90.5,"timestamp":1722960137000}`,
	`{"kind":"temp"}`,
	`{"kind":""}`,
	`{"":"kind","kind":1}`,
	`{"k":1,"ki":2,"kin":3,"kind":4,"kinds":5,"kind_":6,"kindxyz":7,"kindxyzw":8}`,
	`{"a_long_name_of_many_bytes":"and a long value of more than eight bytes","kind":null}`,
	`{"kind":true,"x":false,"y":null}`,
	// Nested containers and longer paths.
	`{"kind":{"x":{"y":[1,{"z":[]}]},"w":{}},"v":[[],[{}]]}`,
	`{"a":{"b":{"c":1}},"kind":{"x":2,"x":3}}`,
	`{"kind":[1,2,{"x":1}],"x":{"kind":1}}`,
	`{"kind":{"x":1} , "kind" : "s"}`,
	`{"kind":"s","kind":{"x":1}}`,
	`{"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],"kind":1}`,
	`{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":{"x":1}}}}}}}}}}}}}}}},"kind":"deep"}`,
	// Duplicate names: the last counts.
	`{"kind":1,"kind":2}`,
	`{"kind":"a","x":1,"kind":"b","kind":"c"}`,
	`{"kind":{"x":1},"kind":2}`,
	`{"kind":1,"k\u0069nd":2}`,
	// Escapes, control characters, Unicode.
	`{"kind":"a\"b\\c\/d\be\ff\ng\rh\ti\u00e9"}`,
	`{"k\u0069nd":"temp"}`,
	`{"kind\\":"temp","kind":1}`,
	"{\"kind\":\"a\tb\"}",
	"{\"kind\":\"ab\x01\"}",
	"{\"ki\x00d\":1,\"kind\":\"\x7f\"}",
	`{"kind":"héllo 世界 😀","clé":"valeur"}`,
	"{\"kind\":\"\xff\xfe\",\"\xc3\":1}",
	`{"kind":"\ud83d\ude00","x":"\ud83d"}`,
	`{"kind":"\u12g4"}`,
	`{"kind":"\x"}`,
	// Numbers of every shape, valid and not.
	`{"a":0,"b":-0,"c":1,"d":-1,"e":1234567890123456789,"kind":-9876543210.0123456789e+123}`,
	`{"a":0.5,"b":1e5,"c":1E-5,"d":-0.0e0,"kind":12345678}`,
	`{"kind":01}`,
	`{"kind":-}`,
	`{"kind":-a}`,
	`{"kind":1.}`,
	`{"kind":1.e5}`,
	`{"kind":.5}`,
	`{"kind":1e}`,
	`{"kind":1e+}`,
	`{"kind":+1}`,
	`{"kind":0x10}`,
	`{"kind":1.5.3}`,
	`{"kind":12345678901234567890}`,
	`{"kind":1234567`,
	// Literals, and broken ones.
	`{"kind":tru}`,
	`{"kind":truex}`,
	`{"kind":fals}`,
	`{"kind":nul,"x":1}`,
	`{"kind":nulll}`,
	// Whitespace everywhere, and not where it is not allowed.
	" \t\r\n{ \t\r\n\"kind\" \t\r\n: \t\r\n\"v\" \t\r\n, \"x\" : [ 1 , 2 ] \t\r\n} \t\r\n",
	"{\"kind\":1}\f",
	"{\"kind\":1}\v",
	"{\"kind\":\u00a01}",
	// Broken structure.
	`{"kind":1,}`,
	`{"kind" 1}`,
	`{"kind":}`,
	`{kind:1}`,
	`{"kind":1 "x":2}`,
	`{"kind":[1,]}`,
	`{"kind":[1}}`,
	`{"kind":{"x":1]}`,
	`{"kind":1}}`,
	`{"kind":1} x`,
	`{"kind":1}{}`,
	`{"kind":"v"`,
	`{"kind":"v`,
	`{"kind`,
	`{"kind":[`,
	// Other top-level values, and documents shorter than eight bytes.
	`["kind",{"kind":1}]`,
	`"kind"`,
	`  1234  `,
	`{}`,
	`{"a":1}`,
	`{"":0}`,
	`{ }    `,
	`{}      `,
	`{"k":1}`,
	`{"kind"}`,
}
