package wjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are the inputs, besides docs, that TestValidMatchesStd checks
// and FuzzValidMatchesStd starts from: the places where a hand-written
// validator most often parts from encoding/json.
var validCases = []struct {
	name string
	doc  string
}{
	{"deep arrays under limit", strings.Repeat("[", MaxDepth-1) + "{}" + strings.Repeat("]", MaxDepth-1)},
	{"deep arrays over limit by object", strings.Repeat("[", MaxDepth) + "{}" + strings.Repeat("]", MaxDepth)},
	{"deep mixed at limit", strings.Repeat(`[{"a":`, MaxDepth/2) + "0" + strings.Repeat("}]", MaxDepth/2)},
	{"deep mixed over limit", strings.Repeat(`[{"a":`, MaxDepth/2) + "[]" + strings.Repeat("}]", MaxDepth/2)},
	{"deep unclosed", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth-1)},
	{"deep over-closed", strings.Repeat("[", 50) + strings.Repeat("]", 51)},
	{"escape nul", `"\u0000"`},
	{"escape ffff", `"\uFFFF"`},
	{"lone high surrogate", `"\uD800"`},
	{"max surrogate pair", `"\uDBFF\uDFFF"`},
	{"reversed surrogates", `"\uDC00\uD800"`},
	{"short low surrogate", `"\uD83D\uDE0"`},
	{"empty second escape", `"\uD83D\u"`},
	{"empty escape", `"\u"`},
	{"capital U escape", `"\U0041"`},
	{"bad hex digit", `"\u00G0"`},
	{"surrogate key and value", `{"\ud800":"\udfff"}`},
	{"overlong nul", "\"\xc0\x80\""},
	{"utf8 surrogate", "\"\xed\xa0\x80\""},
	{"above max rune", "\"\xf4\x90\x80\x80\""},
	{"truncated rune", "\"\xe2\x82\""},
	{"lone continuation", "\"\x80\""},
	{"ff fe", "\"\xff\xfe\""},
	{"bare invalid byte", "\xff"},
	{"invalid utf8 in array", "[\"\xc3\"]"},
	{"invalid utf8 key", "{\"\xe9\":1}"},
	{"utf8 accent", "\"é\""},
	{"negative zero", "-0"},
	{"negative zero fraction", "-0.0"},
	{"negative zero exponent", "-0e0"},
	{"zero negative exponent", "0e-0"},
	{"huge exponent", "1e999"},
	{"negative huge exponent", "-1e999"},
	{"tiny exponent", "1e-999"},
	{"capital exponent", "1E+2"},
	{"leading zero", "01"},
	{"negative leading zero", "-01"},
	{"double zero", "00"},
	{"zero dot", "0."},
	{"dot zero", ".0"},
	{"exponent cut", "1.5e"},
	{"two exponent signs", "1e+-2"},
	{"double minus", "--1"},
	{"infinity", "Infinity"},
	{"nan", "NaN"},
	{"underscore digits", "1_000"},
	{"long integer", "123456789012345678901234567890"},
	{"long fraction", "0.000000000000000000000001"},
	{"padded exponent", "1.0e+0001"},
	{"two objects", "{} {}"},
	{"extra bracket", "[]]"},
	{"extra brace", "{}}"},
	{"garbage after number", "1 x"},
	{"two literals", "true false"},
	{"trailing nul", "null\x00"},
	{"two strings", `"a""b"`},
	{"line comment", "[1]//"},
	{"block comment", "{}/* */"},
	{"all whitespace kinds", " \t\r\n[ \t\r\n1 \t\r\n, \t\r\n2 \t\r\n] \t\r\n"},
	{"form feed", "\f1"},
	{"vertical tab", "1\v"},
	{"leading nbsp", "\u00a01"},
	{"trailing nbsp", "1\u00a0"},
	{"leading bom rune", "\ufeff1"},
	{"line separator", "\u20281"},
	{"ideographic space", "[1,\u3000 2]"},
	{"crlf object", "\r\n{\r\n\"a\"\r\n:\r\n1\r\n}\r\n"},
	{"short true", "tru"},
	{"long null", "nulll"},
	{"capital true", "True"},
	{"capital null", "NULL"},
	{"short false in array", "[true,fals]"},
	{"joined literals", "falsenull"},
}

// TestValidMatchesStd checks Valid against encoding/json.Valid on
// validCases, including those too long to give the fuzzer.
func TestValidMatchesStd(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) { sameValid(t, []byte(tc.doc)) })
	}
}

// maxFuzzSeed is the longest seed given to the fuzzer: mutating and
// minimizing the deep-nesting documents stalls it, and TestValidMatchesStd
// covers them.
const maxFuzzSeed = 1000

// FuzzValidMatchesStd holds Valid to encoding/json.Valid: they must agree on
// every input, and on every prefix of a short one, where the end-of-input
// paths are. Parse must agree with Valid.
func FuzzValidMatchesStd(f *testing.F) {
	for _, tc := range append(docs[:len(docs):len(docs)], validCases...) {
		if len(tc.doc) <= maxFuzzSeed {
			f.Add([]byte(tc.doc))
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		sameValid(t, doc)
		if len(doc) <= 64 {
			for k := range len(doc) {
				sameValid(t, doc[:k])
			}
		}
	})
}

// sameValid fails t unless Valid, Parse and encoding/json.Valid agree on doc.
func sameValid(t *testing.T, doc []byte) {
	t.Helper()
	want := json.Valid(doc)
	if got := Valid(doc); got != want {
		t.Fatalf("Valid(%q) = %v, encoding/json says %v", doc, got, want)
	}
	if _, err := Parse(doc); (err == nil) != want {
		t.Fatalf("Parse(%q) error %v, encoding/json valid %v", doc, err, want)
	}
}
