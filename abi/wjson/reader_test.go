package wjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// docs are inputs shared by the tests that compare with encoding/json.
var docs = []struct {
	name string
	doc  string
}{
	{"empty", ""},
	{"only whitespace", " \t\r\n"},
	{"null", "null"},
	{"true", "true"},
	{"false", " false "},
	{"bad literal", "nul"},
	{"literal with suffix", "truex"},
	{"int", "123"},
	{"negative zero", "-0"},
	{"leading zero", "01"},
	{"minus alone", "-"},
	{"minus letter", "-a"},
	{"fraction", "1.25"},
	{"fraction without digits", "1."},
	{"fraction dot first", ".5"},
	{"exponent", "1e10"},
	{"exponent signs", "1E+10 "},
	{"exponent negative", "-1.5e-300"},
	{"exponent without digits", "1e"},
	{"exponent sign only", "1e+"},
	{"plus sign", "+1"},
	{"hex", "0x10"},
	{"string", `"abc"`},
	{"string escapes", `"a\"b\\c\/d\be\ff\ng\rh\ti"`},
	{"string unicode escape", `"\u00e9\u20AC"`},
	{"string surrogate pair", `"\ud83d\ude00"`},
	{"string lone high surrogate", `"\ud83d"`},
	{"string lone low surrogate", `"\ude00x"`},
	{"string high then non-low", `"\ud83d\u0041"`},
	{"string bad escape", `"\x"`},
	{"string short unicode escape", `"\u12"`},
	{"string bad hex", `"\u12g4"`},
	{"string raw newline", "\"a\nb\""},
	{"string raw tab", "\"a\tb\""},
	{"string raw del", "\"a\x7fb\""},
	{"string unterminated", `"abc`},
	{"string invalid utf8", "\"a\xffb\xc3\""},
	{"string utf8", `"héllo 世界 😀"`},
	{"empty object", "{}"},
	{"empty object spaced", "{ \n }"},
	{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
	{"object spaced", ` { "a" : 1 , "b" : 2 } `},
	{"object trailing comma", `{"a":1,}`},
	{"object missing colon", `{"a" 1}`},
	{"object missing value", `{"a":}`},
	{"object unquoted key", `{a:1}`},
	{"object number key", `{1:1}`},
	{"object unterminated", `{"a":1`},
	{"object missing comma", `{"a":1 "b":2}`},
	{"object duplicate keys", `{"a":1,"a":2}`},
	{"empty array", "[]"},
	{"array", `[1, "two", [3], {"four": 4}]`},
	{"array trailing comma", "[1,]"},
	{"array leading comma", "[,1]"},
	{"array unterminated", "[1,2"},
	{"array missing comma", "[1 2]"},
	{"array close mismatch", "[1}"},
	{"two values", "1 2"},
	{"trailing garbage", `{"a":1}x`},
	{"nested deep", strings.Repeat("[", 100) + strings.Repeat("]", 100)},
	{"depth at limit", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)},
	{"depth over limit", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)},
	{"objects at limit", strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth)},
	{"objects over limit", strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)},
	{"nul byte", "\x00"},
	{"bom", "\xef\xbb\xbf{}"},
	{"seed reading", `{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000}`},
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, tc := range docs {
		t.Run(tc.name, func(t *testing.T) {
			want := json.Valid([]byte(tc.doc))
			if got := Valid([]byte(tc.doc)); got != want {
				t.Errorf("Valid(%.40q) = %v, encoding/json says %v", tc.doc, got, want)
			}
			_, err := Parse([]byte(tc.doc))
			if (err == nil) != want {
				t.Errorf("Parse error %v, encoding/json valid %v", err, want)
			}
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("error %T is not a *SyntaxError", err)
				}
				if se.Offset < 0 || se.Offset > len(tc.doc) {
					t.Errorf("offset %d outside the document of %d bytes", se.Offset, len(tc.doc))
				}
			}
		})
	}
}

func TestSyntaxErrorOffset(t *testing.T) {
	tests := []struct {
		name, doc string
		offset    int
		msg       string
	}{
		{"empty", "", 0, "unexpected end of JSON input"},
		{"bad start", "  x", 2, "invalid character 'x' looking for beginning of value"},
		{"object key", `{"a":1, 2}`, 8, "invalid character '2' looking for beginning of object key string"},
		{"colon", `{"a" 1}`, 5, "invalid character '1' after object key"},
		{"unterminated", `{"a":1`, 6, "unexpected end of JSON input"},
		{"trailing", `{} {}`, 3, "invalid character '{' after top-level value"},
		{"control in string", "[\"a\nb\"]", 3, `invalid character '\n' in string literal`},
		{"bad escape", `"\q"`, 2, "invalid character 'q' in string escape code"},
		{"bad literal", "[tru ]", 4, "invalid character ' ' in literal true (expecting 'e')"},
		{"array separator", "[1;2]", 2, "invalid character ';' after array element"},
		{"exponent", "1e+x", 3, "invalid character 'x' in exponent of numeric literal"},
		{"depth", strings.Repeat("[", MaxDepth+1), MaxDepth, "exceeded max depth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error = %v, want a *SyntaxError", err)
			}
			if se.Offset != tc.offset || se.Msg != tc.msg {
				t.Errorf("got offset %d %q, want %d %q", se.Offset, se.Msg, tc.offset, tc.msg)
			}
			if want := "at byte offset " + strconv.Itoa(tc.offset); !strings.Contains(err.Error(), want) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), want)
			}
		})
	}
}

// stdLookup follows path through a document decoded by encoding/json.
func stdLookup(t testing.TB, doc []byte, path []string) (any, bool) {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

func stdDecode(t testing.TB, raw []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json on %q: %v", raw, err)
	}
	return v
}

func TestGet(t *testing.T) {
	const doc = `{"id":"123","kind":"temp","value":90.5,"nested":{"a":{"b":[1,2]},"s":"x\u00e9"},` +
		`"dup":1,"dup":{"x":true},"esc\u0061ped":null,"empty":"","n":-0}`
	tests := []struct {
		name    string
		path    []string
		kind    Kind
		raw     string
		missing bool
	}{
		{name: "whole document", path: nil, kind: Object, raw: doc},
		{name: "string field", path: []string{"id"}, kind: String, raw: `"123"`},
		{name: "number field", path: []string{"value"}, kind: Number, raw: "90.5"},
		{name: "nested object", path: []string{"nested", "a"}, kind: Object, raw: `{"b":[1,2]}`},
		{name: "nested array", path: []string{"nested", "a", "b"}, kind: Array, raw: "[1,2]"},
		{name: "nested string with escape", path: []string{"nested", "s"}, kind: String, raw: `"x\u00e9"`},
		{name: "duplicate key takes last", path: []string{"dup"}, kind: Object, raw: `{"x":true}`},
		{name: "through duplicate", path: []string{"dup", "x"}, kind: Bool, raw: "true"},
		{name: "escaped key", path: []string{"escaped"}, kind: Null, raw: "null"},
		{name: "empty string", path: []string{"empty"}, kind: String, raw: `""`},
		{name: "negative zero", path: []string{"n"}, kind: Number, raw: "-0"},
		{name: "missing field", path: []string{"nope"}, missing: true},
		{name: "missing nested", path: []string{"nested", "nope"}, missing: true},
		{name: "through a string", path: []string{"id", "x"}, missing: true},
		{name: "through an array", path: []string{"nested", "a", "b", "0"}, missing: true},
		{name: "raw key does not match", path: []string{`esc\u0061ped`}, missing: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Get([]byte(doc), tc.path...)
			if err != nil {
				t.Fatal(err)
			}
			std, found := stdLookup(t, []byte(doc), tc.path)
			if tc.missing {
				if v.Exists() || found {
					t.Fatalf("got %v (exists %v), encoding/json found %v; want missing", v, v.Exists(), found)
				}
				return
			}
			if v.Kind != tc.kind || string(v.Raw) != tc.raw {
				t.Fatalf("got %v %s, want %v %s", v.Kind, v.Raw, tc.kind, tc.raw)
			}
			if doc[v.Offset:v.Offset+len(v.Raw)] != tc.raw {
				t.Errorf("Offset %d does not locate Raw in the document", v.Offset)
			}
			if !found || !reflect.DeepEqual(stdDecode(t, v.Raw), std) {
				t.Errorf("value %s disagrees with encoding/json's %v", v.Raw, std)
			}
		})
	}
}

func TestGetMalformed(t *testing.T) {
	tests := []struct {
		name, doc string
		path      []string
	}{
		{"error after the match", `{"a":1,"b":}`, []string{"a"}},
		{"error inside the match", `{"a":[1,}`, []string{"a"}},
		{"trailing data", `{"a":1} 1`, []string{"a"}},
		{"truncated", `{"a":{"b":1}`, []string{"a", "b"}},
		{"empty", ``, []string{"a"}},
		{"bad key", `{"\x":1}`, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Get([]byte(tc.doc), tc.path...)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Get = %v, %v; want a *SyntaxError", v, err)
			}
			if v.Exists() {
				t.Errorf("Get returned a value %v with an error", v)
			}
		})
	}
}

type member struct {
	key  string
	kind Kind
	raw  string
}

func TestEach(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		stop    int // stop after this many members; 0 means never
		want    []member
		wantErr error
	}{
		{name: "seed reading", doc: `{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000}`,
			want: []member{{"id", String, `"123"`}, {"kind", String, `"temp"`}, {"value", Number, "90.5"}, {"timestamp", Number, "1722960137000"}}},
		{name: "empty object", doc: " {} ", want: nil},
		{name: "document order not sorted", doc: `{"z":1,"a":2,"m":3}`,
			want: []member{{"z", Number, "1"}, {"a", Number, "2"}, {"m", Number, "3"}}},
		{name: "duplicates reported", doc: `{"a":1,"a":[2]}`,
			want: []member{{"a", Number, "1"}, {"a", Array, "[2]"}}},
		{name: "escaped key", doc: `{"\u00e9\n":{"x":[]}}`, want: []member{{"é\n", Object, `{"x":[]}`}}},
		{name: "stop early", doc: `{"a":1,"b":2,"c":3}`, stop: 2, want: []member{{"a", Number, "1"}, {"b", Number, "2"}}},
		{name: "stop early then malformed", doc: `{"a":1,"b":2,"c":}`, stop: 1, want: []member{{"a", Number, "1"}},
			wantErr: &SyntaxError{}},
		{name: "malformed after members", doc: `{"a":1,"b":2`, want: []member{{"a", Number, "1"}, {"b", Number, "2"}},
			wantErr: &SyntaxError{}},
		{name: "array is a kind error", doc: `[1]`, wantErr: &KindError{Want: Object, Got: Array}},
		{name: "string is a kind error", doc: ` "x" `, wantErr: &KindError{Want: Object, Got: String}},
		{name: "malformed non-object is a syntax error", doc: `[1,`, wantErr: &SyntaxError{}},
		{name: "empty is a syntax error", doc: ``, wantErr: &SyntaxError{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []member
			err := Each([]byte(tc.doc), func(k, v Value) bool {
				if k.Kind != String || tc.doc[k.Offset:k.Offset+len(k.Raw)] != string(k.Raw) ||
					tc.doc[v.Offset:v.Offset+len(v.Raw)] != string(v.Raw) {
					t.Errorf("bad key or value view: %+v %+v", k, v)
				}
				got = append(got, member{k.String(), v.Kind, string(v.Raw)})
				return tc.stop == 0 || len(got) < tc.stop
			})
			checkErr(t, err, tc.wantErr)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("members = %v, want %v", got, tc.want)
			}
		})
	}
}

func checkErr(t *testing.T, err, want error) {
	t.Helper()
	switch w := want.(type) {
	case nil:
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
	case *SyntaxError:
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("error = %v, want a *SyntaxError", err)
		}
	case *KindError:
		var ke *KindError
		if !errors.As(err, &ke) || *ke != *w || !errors.Is(err, ErrKind) {
			t.Fatalf("error = %v, want %v", err, w)
		}
	}
}

func TestArrayEach(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		stop    int
		want    []string
		wantErr error
	}{
		{name: "mixed", doc: `[1, "two", [3], {"four": 4}, null]`, want: []string{"1", `"two"`, "[3]", `{"four": 4}`, "null"}},
		{name: "empty", doc: `[ ]`, want: nil},
		{name: "stop", doc: `[1,2,3]`, stop: 1, want: []string{"1"}},
		{name: "malformed", doc: `[1,2`, want: []string{"1", "2"}, wantErr: &SyntaxError{}},
		{name: "object", doc: `{}`, wantErr: &KindError{Want: Array, Got: Object}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := ArrayEach([]byte(tc.doc), func(i int, v Value) bool {
				if i != len(got) {
					t.Errorf("index %d, want %d", i, len(got))
				}
				got = append(got, string(v.Raw))
				return tc.stop == 0 || len(got) < tc.stop
			})
			checkErr(t, err, tc.wantErr)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("elements = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValueMethods(t *testing.T) {
	v, err := Parse([]byte(`{"a":{"b":[10,20]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Get("a", "b")
	if err != nil || string(b.Raw) != "[10,20]" {
		t.Fatalf("Get = %v, %v", b, err)
	}
	var sum int64
	if err := b.ArrayEach(func(_ int, e Value) bool {
		n, err := e.Int()
		if err != nil {
			t.Fatal(err)
		}
		sum += n
		return true
	}); err != nil || sum != 30 {
		t.Fatalf("ArrayEach sum %d, err %v", sum, err)
	}
	a, _ := v.Get("a")
	var keys []string
	if err := a.Each(func(k, _ Value) bool { keys = append(keys, k.String()); return true }); err != nil || !reflect.DeepEqual(keys, []string{"b"}) {
		t.Fatalf("Each keys %v, err %v", keys, err)
	}
}

func TestStringDecoding(t *testing.T) {
	tests := []struct {
		name, raw string
	}{
		{"plain", `"hello"`},
		{"empty", `""`},
		{"simple escapes", `"a\"b\\c\/d\be\ff\ng\rh\ti"`},
		{"unicode escapes", `"\u0041\u00e9\u20ac\uFFFF"`},
		{"nul escape", `"a\u0000b"`},
		{"surrogate pair", `"\ud83d\ude00!"`},
		{"upper-case surrogate pair", `"\uD83D\uDE00"`},
		{"lone high surrogate at end", `"\ud83d"`},
		{"lone high surrogate then text", `"\ud83dabc"`},
		{"high surrogate then non-surrogate escape", `"\ud83d\u0041"`},
		{"two high surrogates then low", `"\ud83d\ud83d\ude00"`},
		{"lone low surrogate", `"\ude00"`},
		{"raw utf8", `"héllo 世界 😀"`},
		{"invalid utf8 byte", "\"a\xffb\""},
		{"truncated utf8", "\"a\xe4\xb8\""},
		{"overlong utf8", "\"\xc0\xaf\""},
		{"encoded surrogate utf8", "\"\xed\xa0\x80\""},
		{"del", "\"\x7f\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			var want string
			if err := json.Unmarshal([]byte(tc.raw), &want); err != nil {
				t.Fatal(err)
			}
			if got := string(v.AppendString([]byte("prefix:"))); got != "prefix:"+want {
				t.Errorf("AppendString = %q, want %q", got, "prefix:"+want)
			}
			if got := v.String(); got != want {
				t.Errorf("String = %q, want %q", got, want)
			}
			if !v.StringEquals(want) {
				t.Errorf("StringEquals(%q) = false", want)
			}
			if v.StringEquals(want + "x") {
				t.Errorf("StringEquals(%q) = true", want+"x")
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		float   float64
		floatOK bool
		int     int64
		intOK   bool
		boolean bool
		boolOK  bool
		str     string
	}{
		{name: "integer", doc: "42", float: 42, floatOK: true, int: 42, intOK: true, str: "42"},
		{name: "negative integer", doc: "-7", float: -7, floatOK: true, int: -7, intOK: true, str: "-7"},
		{name: "fraction", doc: "90.5", float: 90.5, floatOK: true, str: "90.5"},
		{name: "integral fraction is not an int", doc: "4.0", float: 4, floatOK: true, str: "4.0"},
		{name: "exponent is not an int", doc: "1e3", float: 1000, floatOK: true, str: "1e3"},
		{name: "int64 max", doc: "9223372036854775807", float: 9223372036854775807, floatOK: true, int: math.MaxInt64, intOK: true, str: "9223372036854775807"},
		{name: "int64 overflow", doc: "9223372036854775808", float: 9223372036854775808, floatOK: true, str: "9223372036854775808"},
		{name: "float overflow", doc: "1e400", str: "1e400"},
		{name: "true", doc: "true", boolean: true, boolOK: true, str: "true"},
		{name: "false", doc: "false", boolOK: true, str: "false"},
		{name: "null", doc: "null", str: "null"},
		{name: "string", doc: `"12"`, str: "12"},
		{name: "object", doc: `{"a":1}`, str: `{"a":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if f, err := v.Float(); (err == nil) != tc.floatOK || tc.floatOK && f != tc.float {
				t.Errorf("Float = %v, %v", f, err)
			}
			if i, err := v.Int(); (err == nil) != tc.intOK || tc.intOK && i != tc.int {
				t.Errorf("Int = %v, %v", i, err)
			}
			if b, err := v.Bool(); (err == nil) != tc.boolOK || tc.boolOK && b != tc.boolean {
				t.Errorf("Bool = %v, %v", b, err)
			}
			if s := v.String(); s != tc.str {
				t.Errorf("String = %q, want %q", s, tc.str)
			}
		})
	}
}

func TestKindErrors(t *testing.T) {
	var missing Value
	if missing.Exists() {
		t.Error("zero Value exists")
	}
	_, err := missing.Float()
	checkErr(t, err, &KindError{Want: Number, Got: Invalid})
	_, err = Value{Kind: String, Raw: []byte(`"1"`)}.Int()
	checkErr(t, err, &KindError{Want: Number, Got: String})
	_, err = Value{Kind: Number, Raw: []byte(`1`)}.Bool()
	checkErr(t, err, &KindError{Want: Bool, Got: Number})
	if got := Kind(99).String(); got != "kind(99)" {
		t.Errorf("Kind(99).String() = %q", got)
	}
}

// TestHandMadeValues checks that accessors do not panic on malformed Raw.
func TestHandMadeValues(t *testing.T) {
	for _, raw := range []string{``, `"`, `"\`, `"\u12`, `"\uZZZZ"`, `"\q"`, "\"\x01\"", `"\ud800\u"`} {
		v := Value{Kind: String, Raw: []byte(raw)}
		_ = v.String()
		_ = v.StringEquals("x")
		_, _ = v.Get("a")
		_ = v.Each(func(_, _ Value) bool { return true })
	}
}

func TestZeroAllocs(t *testing.T) {
	doc := []byte(`{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000, "n\u00e9": "\u00e9"}`)
	tests := []struct {
		name string
		fn   func()
	}{
		{"Get", func() { _, _ = Get(doc, "value") }},
		{"Get escaped key", func() { _, _ = Get(doc, "né") }},
		{"Each", func() {
			_ = Each(doc, func(k, v Value) bool {
				if k.StringEquals("value") {
					_, _ = v.Float()
				}
				return true
			})
		}},
		{"Valid", func() { _ = Valid(doc) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
				t.Errorf("%v allocations per run, want 0", n)
			}
		})
	}
}

func TestIsObject(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want bool
	}{
		{`{}`, true}, {" \t\r\n{\"a\":1}", true}, {`[1]`, false}, {`"{"`, false}, {` 1`, false}, {``, false}, {`   `, false},
	} {
		if got := IsObject([]byte(tt.doc)); got != tt.want {
			t.Errorf("IsObject(%q) = %v, want %v", tt.doc, got, tt.want)
		}
	}
}
