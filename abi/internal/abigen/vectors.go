package abigen

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weir-stream/weir/abi/wjson"
)

// The JSON test vectors: documents with the results of looking a field up
// in them (or of parsing them whole), strings with their JSON quoting, and
// floats with their Python repr. The expected results are package wjson's,
// checked against encoding/json and strconv while they are made (wjson's
// tests check the floats against python3 too), so every SDK is held to the
// same answers. vectorsDoc documents the format in the file itself.

const vectorsDoc = `JSON test vectors that the JSON tests of every weir guest SDK read. ` + header + ` ` +
	`"lookups": each case has "doc" (or "doc_hex", the document's bytes in hex, when they are not UTF-8) and optionally "field"; ` +
	`the result is the document's top-level field of that name (the last when it repeats), or with no "field" the document parsed whole. ` +
	`"error": true when the document is not JSON (a syntax error), otherwise "kind" (invalid, null, bool, number, string, array, object; invalid when the field is missing or the document is not an object), ` +
	`and when found "raw" (or "raw_hex": the value's exact text) and "offset" (of raw in the document); ` +
	`for a string "string", its decoded content; for a bool "bool"; for a number "float" (the bits of the nearest float64, in hex, ` +
	`+-Inf beyond its range, "float_range": true then) and "int" (in decimal, only for a number written as an integer within int64). ` +
	`"quotes": "in" (or "in_hex") quoted as a JSON string with minimal escaping is "out". ` +
	`"floats": the float64 of bits "bits" (hex) formatted as Python's repr is "repr"; a JSON writer writes it so, except nan, inf and -inf as null.`

// Vectors returns the content of VectorsJSON.
func Vectors() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	b.WriteString(`"comment": ` + string(wjson.AppendQuote(nil, vectorsDoc)) + ",\n")
	sections := []struct {
		name  string
		cases func() ([][2]string, error)
	}{
		{"lookups", lookupCases},
		{"quotes", quoteCases},
		{"floats", floatCases},
	}
	for i, s := range sections {
		cases, err := s.cases()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		b.WriteString(string(wjson.AppendQuote(nil, s.name)) + ": {\n")
		seen := map[string]bool{}
		for j, c := range cases {
			if seen[c[0]] {
				return nil, fmt.Errorf("%s: two cases named %q", s.name, c[0])
			}
			seen[c[0]] = true
			b.WriteString(string(wjson.AppendQuote(nil, c[0])) + ": " + c[1])
			if j < len(cases)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("}")
		if i < len(sections)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	if !json.Valid(b.Bytes()) {
		return nil, errors.New("the vectors are not JSON")
	}
	return b.Bytes(), nil
}

// obj writes one case object, its members in order.
type obj struct {
	w wjson.Writer
}

func newObj() *obj {
	o := &obj{}
	o.w.BeginObject()
	return o
}

// text writes name as a string when s is UTF-8, else name_hex as hex.
func (o *obj) text(name string, s []byte) {
	if utf8.Valid(s) {
		o.w.Key(name)
		o.w.StringBytes(s)
		return
	}
	o.w.Key(name + "_hex")
	o.w.String(hex.EncodeToString(s))
}

func (o *obj) str(name, s string) {
	o.w.Key(name)
	o.w.String(s)
}

func (o *obj) boolean(name string, v bool) {
	o.w.Key(name)
	o.w.Bool(v)
}

func (o *obj) int(name string, v int) {
	o.w.Key(name)
	o.w.Int(int64(v))
}

func (o *obj) done() string {
	o.w.EndObject()
	return string(o.w.Bytes())
}

func bitsHex(f float64) string { return fmt.Sprintf("%016x", math.Float64bits(f)) }

// lookup is a lookup case: a document, and the field looked up, or none to
// parse the document whole.
type lookup struct {
	name  string
	doc   string
	field *string
}

func field(s string) *string { return &s }

// expect computes a lookup case's expected results with wjson, and checks
// them against encoding/json.
func (l lookup) expect() (string, error) {
	doc := []byte(l.doc)
	var v wjson.Value
	var err error
	if l.field == nil {
		v, err = wjson.Parse(doc)
	} else {
		v, err = wjson.Get(doc, *l.field)
	}
	o := newObj()
	o.text("doc", doc)
	if l.field != nil {
		o.str("field", *l.field)
	}
	if valid := json.Valid(doc); valid != (err == nil) {
		return "", fmt.Errorf("wjson's error %v, encoding/json.Valid %v", err, valid)
	}
	if err != nil {
		o.boolean("error", true)
		return o.done(), nil
	}
	if err := crossCheck(l, doc, v); err != nil {
		return "", err
	}
	o.str("kind", v.Kind.String())
	if !v.Exists() {
		return o.done(), nil
	}
	o.text("raw", v.Raw)
	o.int("offset", v.Offset)
	switch v.Kind {
	case wjson.String:
		s := v.AppendString(nil)
		var want string
		if err := json.Unmarshal(v.Raw, &want); err != nil || want != string(s) {
			return "", fmt.Errorf("wjson decodes %q, encoding/json %q, %v", s, want, err)
		}
		o.str("string", string(s))
	case wjson.Bool:
		b, _ := v.Bool()
		o.boolean("bool", b)
	case wjson.Number:
		f, err := v.Float()
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return "", err
		}
		if (err != nil) != math.IsInf(f, 0) {
			return "", fmt.Errorf("float %v with error %v", f, err)
		}
		o.str("float", bitsHex(f))
		if math.IsInf(f, 0) {
			o.boolean("float_range", true)
		}
		if i, err := v.Int(); err == nil {
			o.str("int", strconv.FormatInt(i, 10))
		}
	}
	return o.done(), nil
}

// crossCheck compares a lookup's value with what encoding/json finds.
func crossCheck(l lookup, doc []byte, v wjson.Value) error {
	if l.field == nil {
		if want := bytes.TrimSpace(doc); !bytes.Equal(v.Raw, want) || &doc[v.Offset] != &v.Raw[0] {
			return fmt.Errorf("parsed %q at %d, want %q", v.Raw, v.Offset, want)
		}
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return err
		}
	}
	want, ok := m[*l.field]
	if ok != v.Exists() || !bytes.Equal(v.Raw, want) {
		return fmt.Errorf("found %q (%v), encoding/json %q (%v)", v.Raw, v.Exists(), want, ok)
	}
	if ok && !bytes.Equal(doc[v.Offset:v.Offset+len(v.Raw)], v.Raw) {
		return fmt.Errorf("offset %d is not the value's", v.Offset)
	}
	return nil
}

// stringLiterals are JSON string literals, well-formed and not, that the
// lookups read both as a whole document and as a field.
func stringLiterals() [][2]string {
	lits := [][2]string{
		{"empty", `""`},
		{"ascii", `"ada"`},
		{"simple escapes", `"\"\\\/\b\f\n\r\t"`},
		{"escaped solidus", `"a\/b"`},
		{"escape u0000", `"\u0000"`},
		{"escape u001f", `"\u001f"`},
		{"escape u007f", `"\u007f"`},
		{"escape e acute", `"caf\u00e9 \"x\""`},
		{"escape upper hex", `"\u00E9\u00c9"`},
		{"escape euro", `"\u20ac"`},
		{"escape uffff", `"\uffff"`},
		{"escape ufffd", `"\ufffd"`},
		{"surrogate pair", `"\ud83d\ude00"`},
		{"surrogate pair upper hex", `"\uD83D\uDE00"`},
		{"surrogate pair first plane", `"\ud800\udc00"`},
		{"surrogate pair last plane", `"\udbff\udfff"`},
		{"lone high surrogate", `"\ud83d"`},
		{"lone low surrogate", `"\ude00"`},
		{"high surrogate then letter escape", `"\ud83d\u0041"`},
		{"high surrogate then pair", `"\ud83d\ud83d\ude00"`},
		{"high surrogate then letter", `"\ud83dx"`},
		{"low then high surrogate", `"\ude00\ud83d"`},
		{"high surrogate then escape", `"\ud83d\n"`},
		{"raw e acute", `"café"`},
		{"raw emoji", `"😀 ok"`},
		{"raw line separator", "\"a\u2028b\u2029c\""},
		{"raw del", "\"a\x7fb\""},
		{"raw last code point", "\"\U0010ffff\""},
		{"invalid continuation byte", "\"\x80\""},
		{"invalid byte ff", "\"a\xffb\""},
		{"invalid overlong slash", "\"\xc0\xaf\""},
		{"invalid truncated euro", "\"\xe2\x82\""},
		{"invalid encoded surrogate", "\"\xed\xa0\x80\""},
		{"invalid beyond last code point", "\"\xf4\x90\x80\x80\""},
		{"invalid five bytes", "\"\xf8\x88\x80\x80\x80\""},
		{"invalid latin-1", "\"caf\xe9\""},
		{"valid then truncated", "\"\xe2\x82\xac\xe2\x82\""},
		{"truncated emoji", "\"ab\xf0\x9f\x98\""},
		{"invalid byte and escape", "\"a\xffb\\n\""},
		{"long ascii", `"` + strings.Repeat("a", 200) + `"`},
		{"long with escape", `"` + strings.Repeat("b", 130) + `\n"`},
		{"long with unicode", `"` + strings.Repeat("é", 70) + `"`},
		{"bad control byte 01", "\"\x01\""},
		{"bad raw tab", "\"a\tb\""},
		{"bad raw newline", "\"a\nb\""},
		{"bad control byte 1f", "\"\x1f\""},
		{"bad escape x", `"\x41"`},
		{"bad escape capital U", `"\U0041"`},
		{"bad escape quote", `"\'"`},
		{"bad short u escape", `"\u12"`},
		{"bad u escape digit", `"\u12G4"`},
		{"bad unterminated", `"abc`},
		{"bad ends in backslash", `"abc\`},
		{"bad ends in escaped quote", `"\"`},
	}
	// Every position of a byte to escape or decode in a string of 17, for
	// readers and writers that scan 8 bytes at a time.
	for pos := 0; pos <= 16; pos++ {
		for _, x := range [][2]string{{"quote", `\"`}, {"newline", `\n`}, {"e acute", "é"}, {"byte ff", "\xff"}} {
			lits = append(lits, [2]string{fmt.Sprintf("%s at %d", x[0], pos), `"` + strings.Repeat("a", pos) + x[1] + strings.Repeat("z", 16-pos) + `"`})
		}
	}
	return lits
}

// numberLiterals are number texts, well-formed and not.
func numberLiterals() [][2]string {
	lits := [][2]string{}
	for _, s := range []string{
		"0", "-0", "1", "-1", "0.0", "-0.0", "1.0", "1.5", "0.1", "0.3", "12.0", "90.50", "4.35",
		"1e16", "1E16", "1e+16", "1.0e16", "1e-4", "1E-4", "0.0001", "1e-5", "100e-2", "0.1e1", "5e-1", "1e22", "1e23",
		"8.589973e9", "123e-20", "1e-7", "2.5e-8", "-0e-5", "0e99999999999",
		"123456789012345678901234567890", "100000000000000000000000", "1" + strings.Repeat("0", 30),
		"0." + strings.Repeat("0", 30) + "1", strings.Repeat("9", 400), "0." + strings.Repeat("0", 400) + "1",
		"1e400", "-1e400", "1e-400", "-1e-400", "1e2147483648", "1e-2147483649", "1e99999999999999999999",
		"4.9e-324", "5e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
		"2.2250738585072011e-308", "2.2250738585072012e-308", "2.2250738585072014e-308",
		"1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "-1.7976931348623159e308",
		"9007199254740991", "9007199254740992", "9007199254740993", "9007199254740994", "9007199254740995",
		"-9007199254740993", "9007199254740993.0000000000000001", "9007199254740993.00000000000000000000000000001",
		"18014398509481985", "18014398509481987",
		"1.00000000000000011102230246251565404236316680908203125",
		"1.00000000000000011102230246251565404236316680908203124",
		"1.00000000000000011102230246251565404236316680908203126",
		"0.500000000000000166533453693773481063544750213623046875",
		"7.3177701707893310e+15",
		"1234567890123456789", "12345678901234567890", "9999999999999999999", "99999999999999999999",
		"0.12345678901234567890123", "-9223372036854775808", "9223372036854775807",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616",
		"01", "-01", "1.", ".5", "-", "+1", "1e", "1e+", "1.e3", "0x1", "NaN", "Infinity", "-Infinity", "1_000", "--1", "1e1.5",
	} {
		name := s
		if len(s) > 40 {
			name = fmt.Sprintf("%s...%s (%d bytes)", s[:20], s[len(s)-4:], len(s))
		}
		lits = append(lits, [2]string{name, s})
	}
	// Halfway between two neighbouring floats, and just above and below:
	// correct rounding needs every digit.
	r := newRand(7)
	for i := 0; i < 24; i++ {
		d := math.Ldexp(1+r.float(), int(r.next()%70)-20)
		up := math.Nextafter(d, math.Inf(1))
		mid := new(big.Float).SetPrec(200).SetFloat64(d)
		mid.Add(mid, new(big.Float).SetPrec(200).SetFloat64(up))
		mid.Quo(mid, big.NewFloat(2))
		exact := strings.TrimRight(mid.Text('f', 1100), "0")
		last := len(exact) - 1
		below := exact[:last] + string(exact[last]-1) + "9999"
		lits = append(lits,
			[2]string{fmt.Sprintf("halfway %d", i), exact},
			[2]string{fmt.Sprintf("above halfway %d", i), exact + "0000001"},
			[2]string{fmt.Sprintf("below halfway %d", i), below},
		)
	}
	// Numbers as printers write them: shortest digits, 17 digits, more.
	for i := 0; i < 40; i++ {
		f := r.finite()
		lits = append(lits,
			[2]string{fmt.Sprintf("random shortest %d", i), strconv.FormatFloat(f, 'g', -1, 64)},
			[2]string{fmt.Sprintf("random 17 digits %d", i), strconv.FormatFloat(f, 'e', 16, 64)},
			[2]string{fmt.Sprintf("random 25 digits %d", i), strconv.FormatFloat(f, 'e', 24, 64)},
		)
	}
	for i := 0; i < 40; i++ {
		f := r.moderate()
		lits = append(lits,
			[2]string{fmt.Sprintf("moderate shortest %d", i), strconv.FormatFloat(f, 'f', -1, 64)},
			[2]string{fmt.Sprintf("moderate 17 digits %d", i), strconv.FormatFloat(f, 'g', 17, 64)},
		)
	}
	return lits
}

func lookupCases() ([][2]string, error) {
	var ls []lookup
	for _, s := range stringLiterals() {
		ls = append(ls,
			lookup{"string " + s[0], s[1], nil},
			lookup{"string field " + s[0], `{"s":` + s[1] + `}`, field("s")},
		)
	}
	for _, n := range numberLiterals() {
		ls = append(ls, lookup{"number " + n[0], n[1], nil})
	}
	for _, n := range []string{"0", "-0", "1.5", "1e16", "9007199254740993", "-9223372036854775808", "1e400", "01", "1.", "-"} {
		ls = append(ls, lookup{"number field " + n, `{"n":` + n + `}`, field("n")})
	}
	fields := []struct {
		name, doc, field string
	}{
		{"flat", `{"name":"ada","n":1}`, "name"},
		{"spaces", `{ "id" : 7 , "name" : "Grace Hopper" }`, "name"},
		{"every whitespace", "\t\n\r {\t\"n\"\n:\r1 ,\"m\" : 2\n}\r\n", "n"},
		{"repeated name", `{"name":"a","name":"b"}`, "name"},
		{"repeated name, other kinds", `{"n":"a","n":[1],"n":null}`, "n"},
		{"missing", `{"n":1}`, "name"},
		{"empty object", `{}`, "n"},
		{"empty object with spaces", ` { } `, "n"},
		{"array", `[1,2]`, "n"},
		{"top-level string", `"n"`, "n"},
		{"top-level number", `1`, "n"},
		{"top-level null", `null`, "n"},
		{"top-level true", ` true `, "n"},
		{"nested object value", `{"n":{"n":2}}`, "n"},
		{"only nested", `{"a":{"n":1}}`, "n"},
		{"nested then array", `{"a":{"n":1},"n":[1,{"x":null}]}`, "n"},
		{"brace in string", `{"a":"}","n":1}`, "n"},
		{"escaped quote in string", `{"a":"\"}","n":1}`, "n"},
		{"escaped key", `{"\u006e":true}`, "n"},
		{"escaped unicode key", `{"caf\u00e9":1}`, "café"},
		{"raw unicode key", `{"café":1}`, "café"},
		{"escaped unicode key, ascii name", `{"caf\u00e9":1}`, "cafe"},
		{"surrogate pair key", `{"\ud83d\ude00":1}`, "😀"},
		{"lone surrogate key", `{"\ud83d":1}`, "\ufffd"},
		{"invalid byte key", "{\"\xff\":1}", "\ufffd"},
		{"invalid byte key, other name", "{\"\xff\":1}", "\xc3\xbf"},
		{"empty key", `{"":1}`, ""},
		{"empty name missing", `{"n":1}`, ""},
		{"longer key first", `{"nn":1,"n":2}`, "n"},
		{"longer key last", `{"n":1,"nn":2}`, "n"},
		{"key prefix", `{"n":1}`, "nn"},
		{"case differs", `{"N":1}`, "n"},
		{"key with quote", `{"a\"b":1}`, `a"b`},
		{"key with backslash", `{"a\\b":1}`, `a\b`},
		{"key with nul", `{"n\u0000":1}`, "n\x00"},
		{"name with nul", `{"n":1}`, "n\x00"},
		{"long key", `{"` + strings.Repeat("k", 200) + `":1}`, strings.Repeat("k", 200)},
		{"long escaped key", `{"` + strings.Repeat("k", 140) + `\u006b":1}`, strings.Repeat("k", 141)},
		{"true", `{"n":true}`, "n"},
		{"false", `{"n":false}`, "n"},
		{"null", `{"n":null}`, "n"},
		{"empty array", `{"n":[]}`, "n"},
		{"empty object value", `{"n":{}}`, "n"},
		{"value before more fields", `{"n":"x","a":[1,2,{"b":[]}],"c":-1.5e3}`, "n"},
		{"last of many", `{"a":1,"b":2,"c":3,"d":4,"e":5,"n":6}`, "n"},
		{"bad trailing comma", `{"n":1,}`, "n"},
		{"bad trailing text", `{"n":1} x`, "n"},
		{"bad second value", `{"n":1}{}`, "n"},
		{"bad missing value", `{"n":}`, "n"},
		{"bad missing colon", `{"n" 1}`, "n"},
		{"bad unquoted key", `{n:1}`, "n"},
		{"bad single-quoted key", `{'n':1}`, "n"},
		{"bad unterminated object", `{"n":1`, "n"},
		{"bad unterminated array", `{"n":[1,2}`, "n"},
		{"bad literal tru", `{"n":tru}`, "n"},
		{"bad literal nul", `{"n":nul}`, "n"},
		{"bad literal True", `{"n":True}`, "n"},
		{"bad missing comma", `{"a":1 "n":2}`, "n"},
		{"bad extra brace", `{"n":1}}`, "n"},
		{"bad trailing comma after object", `{"n":1},`, "n"},
		{"bad byte order mark", "\xef\xbb\xbf{\"n\":1}", "n"},
		{"bad control byte in value", "{\"n\":\"\x01\"}", "n"},
		{"bad trailing nul", "{\"n\":1}\x00", "n"},
		{"bad after found", `{"n":1,"a":}`, "n"},
		{"bad after missing", `{"a":1,"b":[}`, "n"},
		{"bad nested error", `{"a":{"b":[1,}},"n":1}`, "n"},
		{"bad form feed", "{\f\"n\":1}", "n"},
		{"bad vertical tab", "{\v\"n\":1}", "n"},
		{"bad no-break space", "{\u00a0\"n\":1}", "n"},
		{"bad empty", ``, "n"},
		{"bad only spaces", `   `, "n"},
		{"bad comment", `{"n":1 /* x */}`, "n"},
		{"bad key not a string", `{1:1}`, "n"},
		{"after the depth limit", `{"a":` + strings.Repeat("[", wjson.MaxDepth-1) + strings.Repeat("]", wjson.MaxDepth-1) + `,"n":1}`, "n"},
	}
	for _, f := range fields {
		ls = append(ls, lookup{"field " + f.name, f.doc, field(f.field)})
	}
	for _, p := range [][2]string{
		{"null", `null`}, {"true", `true`}, {"false", ` false `}, {"empty array", `[]`}, {"array", ` [1, "a", [null], {}] `},
		{"object", "\n{\"a\": {\"b\": [1, 2]}}\n"}, {"bad array trailing comma", `[1,]`}, {"bad two values", `1 2`},
		{"bad literal nulls", `nulls`}, {"bad empty", ``}, {"bad close", `]`},
		{"bad beyond depth limit", strings.Repeat("[", wjson.MaxDepth) + "{}" + strings.Repeat("]", wjson.MaxDepth)},
	} {
		ls = append(ls, lookup{"parse " + p[0], p[1], nil})
	}
	out := make([][2]string, len(ls))
	for i, l := range ls {
		c, err := l.expect()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		out[i] = [2]string{l.name, c}
	}
	return out, nil
}

func quoteCases() ([][2]string, error) {
	ins := [][2]string{
		{"empty", ""},
		{"ascii", "Grace Hopper"},
		{"quote and backslash", `a"b\c`},
		{"solidus", "a/b"},
		{"named controls", "\b\f\n\r\t"},
		{"nul", "a\x00b"},
		{"del", "\x7f"},
		{"e acute", "café"},
		{"emoji", "😀"},
		{"line separators", "\u2028\u2029"},
		{"html", "<a href='x'>&</a>"},
		{"replacement character", "\ufffd"},
		{"last code point", "\U0010ffff"},
		{"invalid continuation byte", "\x80"},
		{"invalid byte ff", "a\xffb"},
		{"invalid overlong slash", "\xc0\xaf"},
		{"invalid truncated euro", "\xe2\x82"},
		{"invalid encoded surrogate", "\xed\xa0\x80"},
		{"invalid beyond last code point", "\xf4\x90\x80\x80"},
		{"invalid five bytes", "\xf8\x88\x80\x80\x80"},
		{"valid then truncated", "\xe2\x82\xac\xe2\x82"},
		{"invalid then escape", "\xff\n"},
		{"long plain", strings.Repeat("x", 100)},
		{"long with escape at end", strings.Repeat("x", 100) + "\""},
	}
	var all [32]byte
	for i := range all {
		all[i] = byte(i)
	}
	ins = append(ins, [2]string{"every control", string(all[:])})
	for pos := 0; pos <= 16; pos++ {
		for _, x := range [][2]string{{"quote", `"`}, {"control", "\x1f"}, {"e acute", "é"}, {"byte ff", "\xff"}} {
			ins = append(ins, [2]string{fmt.Sprintf("%s at %d", x[0], pos), strings.Repeat("a", pos) + x[1] + strings.Repeat("z", 16-pos)})
		}
	}
	out := make([][2]string, len(ins))
	for i, in := range ins {
		q := wjson.AppendQuote(nil, in[1])
		var back string
		if err := json.Unmarshal(q, &back); err != nil || back != replaceInvalid(in[1]) {
			return nil, fmt.Errorf("%s: %s reads back as %q, %v", in[0], q, back, err)
		}
		o := newObj()
		o.text("in", []byte(in[1]))
		o.str("out", string(q))
		out[i] = [2]string{in[0], o.done()}
	}
	return out, nil
}

// replaceInvalid replaces each byte of s that is not part of valid UTF-8
// with U+FFFD, as encoding/json does.
func replaceInvalid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

func floatCases() ([][2]string, error) {
	type fc struct {
		name string
		f    float64
	}
	var fs []fc
	add := func(name string, f float64) { fs = append(fs, fc{name, f}) }
	add("zero", 0)
	add("negative zero", math.Copysign(0, -1))
	add("nan", math.NaN())
	add("negative nan", math.Float64frombits(0xfff8000000000000))
	add("nan payload", math.Float64frombits(0x7ff0000000000001))
	add("inf", math.Inf(1))
	add("negative inf", math.Inf(-1))
	add("max", math.MaxFloat64)
	add("negative max", -math.MaxFloat64)
	add("smallest normal", 0x1p-1022)
	add("largest subnormal", math.Nextafter(0x1p-1022, 0))
	add("smallest subnormal", math.SmallestNonzeroFloat64)
	add("two smallest subnormals", 2*math.SmallestNonzeroFloat64)
	add("three smallest subnormals", 3*math.SmallestNonzeroFloat64)
	for _, s := range []string{
		"1", "-1", "0.1", "0.2", "0.3", "0.5", "1.5", "2.5", "-2.5", "100", "123.456", "4.35", "0.000123",
		"5e-05", "-1.5e-07", "123456789.123", "1e15", "1e16", "1.2345e16", "9999999999999998", "1e21", "1e22", "1e23",
		"0.0001", "1e-05", "0.00012345", "123456789012345.6", "1234567890123456.7", "9007199254740992",
		"9223372036854775808", "18446744073709551616", "1e100", "1e-100", "1.7976931348623157e308", "2.2250738585072014e-308",
		"5e-324", "1e-323", "299792458", "6.02214076e23", "6.62607015e-34", "3.141592653589793", "2.718281828459045",
	} {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		add("number "+s, f)
	}
	add("one third", 1.0/3)
	add("two thirds", 2.0/3)
	add("0.1 + 0.2", 0.1+0.2)
	add("below 1e16", math.Nextafter(1e16, 0))
	add("above 1e16", math.Nextafter(1e16, 2e16))
	add("below 1e-4", math.Nextafter(1e-4, 0))
	add("above 1e-4", math.Nextafter(1e-4, 1))
	add("negative below 1e16", -math.Nextafter(1e16, 0))
	add("negative below 1e-4", -math.Nextafter(1e-4, 0))
	for k := -20; k <= 20; k++ {
		add(fmt.Sprintf("integer %d", k), float64(k))
	}
	for k := 50; k <= 55; k++ {
		if k != 53 {
			add(fmt.Sprintf("2^%d - 1", k), math.Ldexp(1, k)-1)
		}
	}
	for k := 0; k <= 8; k++ {
		add(fmt.Sprintf("2^53 + %d", k), float64(1<<53+k))
		add(fmt.Sprintf("-(2^53 + %d)", k), -float64(1<<53+k))
		add(fmt.Sprintf("2^53 - %d", k), float64(1<<53-k))
	}
	for e := -1074; e <= 1023; e += 7 {
		add(fmt.Sprintf("2^%d", e), math.Ldexp(1, e))
	}
	for e := -323; e <= 308; e += 3 {
		f, _ := strconv.ParseFloat(fmt.Sprintf("1e%d", e), 64)
		add(fmt.Sprintf("1e%d", e), f)
	}
	r := newRand(11)
	for i := 0; i < 300; i++ {
		add(fmt.Sprintf("random bits %d", i), r.finite())
	}
	for i := 0; i < 300; i++ {
		add(fmt.Sprintf("random moderate %d", i), r.moderate())
	}
	for i := 0; i < 200; i++ {
		digits := 1 + int(r.next()%17)
		m := r.next() % uint64(math.Pow10(digits))
		f, _ := strconv.ParseFloat(fmt.Sprintf("%de%d", m, int(r.next()%50)-25), 64)
		add(fmt.Sprintf("random short %d", i), f)
	}
	out := make([][2]string, len(fs))
	for i, c := range fs {
		repr := string(wjson.AppendFloat(nil, c.f))
		if !math.IsNaN(c.f) && !math.IsInf(c.f, 0) {
			if back, err := strconv.ParseFloat(repr, 64); err != nil || back != c.f {
				return nil, fmt.Errorf("%s: %s reads back as %v, %v", c.name, repr, back, err)
			}
		}
		o := newObj()
		o.str("bits", bitsHex(c.f))
		o.str("repr", repr)
		out[i] = [2]string{c.name, o.done()}
	}
	return out, nil
}

// rng is splitmix64: a generator whose sequence is fixed forever, so that
// the vectors do not change when Go's math/rand does.
type rng struct{ s uint64 }

func newRand(seed uint64) *rng { return &rng{seed} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float returns a float in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// finite returns a float of uniformly random bits that is not NaN or ±Inf.
func (r *rng) finite() float64 {
	for {
		f := math.Float64frombits(r.next())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

// moderate returns a float of random sign and digits between 1e-7 and
// 1e20, the magnitudes of everyday data.
func (r *rng) moderate() float64 {
	f := math.Ldexp(1+r.float(), int(r.next()%90)-24)
	if r.next()&1 != 0 {
		f = -f
	}
	return f
}

// cVectorsFile is guest-sdk/c/test/json_vectors.h: the vectors file as a C
// string, for the C SDK's tests, which run where there is no file system
// (under wazero, as plugins do).
func cVectorsFile(vectors []byte) []byte {
	var b bytes.Buffer
	b.WriteString("/* " + header + " */\n")
	b.WriteString("/* The text of " + VectorsJSON + ", for test/weir_test.c. */\n")
	b.WriteString("static const char weir_json_vectors[] =\n")
	for _, line := range bytes.SplitAfter(vectors, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		b.WriteString("    \"")
		for _, c := range line {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '?':
				b.WriteString(`\?`)
			case c < 0x20 || c >= 0x7f:
				fmt.Fprintf(&b, "\\%03o", c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteString("\"\n")
	}
	b.WriteString("    ;\n")
	return b.Bytes()
}
