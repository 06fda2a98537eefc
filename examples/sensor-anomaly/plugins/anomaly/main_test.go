package main

import (
	"math"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi/wjson"
)

func num(t *testing.T, lit string) number {
	t.Helper()
	v, err := wjson.Parse([]byte(lit))
	if err != nil {
		t.Fatal(err)
	}
	n, err := parseNumber(v)
	if err != nil {
		t.Fatalf("parseNumber(%s): %v", lit, err)
	}
	return n
}

// TestDiff checks abs(prev - value) against what Python prints for it.
func TestDiff(t *testing.T) {
	for _, c := range []struct{ prev, cur, want string }{
		{"5", "17", "12"},                       // int - int is an int
		{"5", "17.0", "12.0"},                   // int - float is a float
		{"90.5", "101.2", "10.700000000000003"}, // the seed's
		{"true", "5", "4"},                      // bool is an int
		{"1E-5", "0", "1e-05"},                  // exponent form
		{"1.0e16", "0", "1e+16"},                // exponent form
		{"-123456789012345678901234567890", "1", "123456789012345678901234567891"}, // exact at any size
		{"123456789012345678901234567890", "0.5", "1.2345678901234568e+29"},
		{"1e400", "5", "1e999"},    // inf, written so that json.loads reads inf
		{"1e400", "1e400", "null"}, // nan: never above a threshold
	} {
		d, err := sub(num(t, c.prev), num(t, c.cur))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(d.abs().appendJSON(nil)); got != c.want {
			t.Errorf("abs(%s - %s) = %s, want %s", c.prev, c.cur, got, c.want)
		}
	}
	big := "1" + strings.Repeat("0", 400) // an int beyond the float range
	if _, err := sub(num(t, big), num(t, "1.5")); err == nil {
		t.Error("a 401-digit int minus a float did not fail as Python's OverflowError")
	}
}

// TestGreater checks Python's exact comparisons of ints and floats.
func TestGreater(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"2", "1", true}, {"1", "1", false}, {"1.0000000000000002", "1", true}, {"1.0", "1", false},
		{"9007199254740993", "9007199254740992.0", true}, // exact, not via float
		{"9007199254740992.0", "9007199254740993", false},
		{"1e400", "123456789012345678901234567890", true}, {"123456789012345678901234567890", "1e400", false},
		{"1", "0.5", true}, {"0", "0.5", false}, {"1e999", "1e999", false},
	} {
		if got := num(t, c.a).greater(num(t, c.b)); got != c.want {
			t.Errorf("%s > %s = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	nan := number{f: math.NaN()}
	if nan.greater(pyInt(0)) || pyInt(0).greater(nan) {
		t.Error("a comparison with nan is true")
	}
}

// TestTruthy checks `lut.get(kind) or value`: 0, 0.0, -0.0 and false are
// skipped.
func TestTruthy(t *testing.T) {
	for lit, want := range map[string]bool{"0": false, "-0": false, "0.0": false, "-0.0": false, "0e5": false,
		"false": false, "true": true, "1e-300": true, "5": true} {
		if got := num(t, lit).truthy(); got != want {
			t.Errorf("bool(%s) = %v", lit, got)
		}
	}
}

// TestEntryKey checks that LUT entry keys are equal exactly when Python's
// dict keys are.
func TestEntryKey(t *testing.T) {
	key := func(id, kind string) string {
		var iv, kv wjson.Value
		if id != "" {
			iv, _ = wjson.Parse([]byte(id))
		}
		if kind != "" {
			kv, _ = wjson.Parse([]byte(kind))
		}
		k, err := appendEntryKey(nil, iv, kv)
		if err != nil {
			t.Fatal(err)
		}
		return string(k)
	}
	same := [][2][2]string{
		{{`"a"`, `1`}, {`"a"`, `1.0`}}, {{`"a"`, `1`}, {`"a"`, `true`}}, {{`"a"`, `0`}, {`"a"`, `-0.0`}},
		{{`"a"`, `null`}, {`"a"`, ``}}, {{`"a"`, `"t\u0065mp"`}, {`"a"`, `"temp"`}}, {{`1`, `"t"`}, {`1.0`, `"t"`}},
		{{`"a"`, `1e20`}, {`"a"`, `100000000000000000000`}},
	}
	for _, c := range same {
		if key(c[0][0], c[0][1]) != key(c[1][0], c[1][1]) {
			t.Errorf("%v and %v have different entry keys", c[0], c[1])
		}
	}
	differ := [][2][2]string{
		{{`"a"`, `"1"`}, {`"a"`, `1`}}, {{`"7"`, `"t"`}, {`7`, `"t"`}}, {{`"a"`, `null`}, {`"a"`, `"None"`}},
		{{`"a"`, `1.5`}, {`"a"`, `1`}}, {{`"ab"`, `"c"`}, {`"a"`, `"bc"`}},
	}
	for _, c := range differ {
		if key(c[0][0], c[0][1]) == key(c[1][0], c[1][1]) {
			t.Errorf("%v and %v have the same entry key", c[0], c[1])
		}
	}
	kv, _ := wjson.Parse([]byte(`["temp"]`))
	if _, err := appendEntryKey(nil, wjson.Value{}, kv); err == nil {
		t.Error("a list kind did not fail as unhashable")
	}
}

func TestConfigure(t *testing.T) {
	defer func() { threshold = pyInt(1) }()
	if err := configure([]byte(`{"threshold": 0.5}`)); err != nil {
		t.Fatal(err)
	}
	if !pyInt(1).greater(threshold) || num(t, "0.5").greater(threshold) {
		t.Errorf("threshold %+v, want 0.5", threshold)
	}
	if err := configure([]byte(`{"threshold": "1"}`)); err == nil {
		t.Error("a string threshold was accepted")
	}
}
