package main

import (
	"testing"

	"github.com/weir-stream/weir/abi/wjson"
)

// TestStr checks str() of values against what Python 3.11 prints for
// str(json.loads(text)).
func TestStr(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{"{\"a\":1,\"b\":2,\"a\":3}", "{'a': 3, 'b': 2}"},
		{"[1, 1.50, 1E-5, -0, true, null, \"it's\", \"both ' and \\\"\", \"tab\\t\\u00a0\\u200b\\ud83d\\ude00\\u00e9\\u0001\\\\\"]", "[1, 1.5, 1e-05, 0, True, None, \"it's\", 'both \\' and \"', 'tab\\t\\xa0\\u200b😀é\\x01\\\\']"},
		{"\"plain\\nline\"", "plain\nline"},
		{"123456789012345678901234567890", "123456789012345678901234567890"},
		{"{}", "{}"},
		{"[]", "[]"},
		{"{\"k\\\"q\": {\"x\": [1e400, -1e400, 2.50e-7]}}", "{'k\"q': {'x': [inf, -inf, 2.5e-07]}}"},
		{"90.50", "90.5"}, {"1.0e16", "1e+16"}, {"false", "False"}, {"null", "None"},
	} {
		v, err := wjson.Parse([]byte(c.json))
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendStr(nil, v)
		if err != nil || string(got) != c.want {
			t.Errorf("str(%s) = %q, %v; want %q", c.json, got, err, c.want)
		}
	}
}

// TestFields checks the dict json.loads builds: a repeated name keeps its
// first place and takes its last value, also past indexFrom fields.
func TestFields(t *testing.T) {
	doc := []byte(`{"a":1,"b":2,"a":3,"c":4,"d":5,"e":6,"f":7,"g":8,"h":9,"i":10,"j":11,"k":12,"l":13,"m":14,"n":15,"o":16,"p":17,"q":18,"b":19,"q":20,"r":21}`)
	var f fields
	if err := f.collect(doc); err != nil {
		t.Fatal(err)
	}
	var got string
	for i := range f.vals {
		got += string(f.key(i)) + "=" + string(f.vals[i].Raw) + " "
	}
	const want = "a=3 b=19 c=4 d=5 e=6 f=7 g=8 h=9 i=10 j=11 k=12 l=13 m=14 n=15 o=16 p=17 q=20 r=21 "
	if got != want {
		t.Errorf("fields %s, want %s", got, want)
	}
	if err := f.collect([]byte(`[1]`)); err == nil {
		t.Error("an array was taken for an object")
	}
}
