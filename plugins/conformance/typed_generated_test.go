package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/plugintool"
)

// The typed convention against the raw one and a reference, on generated
// records: nested objects and arrays, missing fields, nulls, unicode
// escapes, integers beyond 2^53 and floats that need 17 digits, in every
// SDK (and the WAT modules, for what they implement).

// genRecords returns n JSON objects, seeded, that may hold "name" (a
// string, often with escapes and non-ASCII text; sometimes null, a number
// or missing) and "price" (an integer of any size, sometimes a float, a
// string or missing), among other members of every kind.
func genRecords(seed uint64, n int) []plugintool.Input {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ins := make([]plugintool.Input, n)
	for i := range ins {
		var members []string
		for range r.IntN(4) {
			members = append(members, genName(r)+":"+genValue(r, 2))
		}
		if r.IntN(8) > 0 {
			members = append(members, `"name":`+genNameValue(r))
		}
		if r.IntN(8) > 0 {
			members = append(members, `"price":`+genPrice(r))
		}
		r.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
		sep := [...]string{",", " , ", ",\n\t"}[r.IntN(3)]
		ins[i].Value = []byte("{" + strings.Join(members, sep) + "}")
	}
	return ins
}

var genTexts = []string{"ada", "Grace Hopper", "café", "naïve ß", "日本語", "😀 x", `a\"b`, `tab\there`,
	`\u0041\u00e9\ud83d\ude00`, `\\back\/slash`, "", "MiXeD 123 z"}

func genName(r *rand.Rand) string {
	return `"` + [...]string{"id", "tags", "nested", "n\\u0061me", "x.y", "é"}[r.IntN(6)] + `"`
}

func genNameValue(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return "null"
	case 1:
		return "42"
	case 2:
		return `{"name":"inner"}`
	}
	return `"` + genTexts[r.IntN(len(genTexts))] + `"`
}

func genPrice(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0:
		return strconv.FormatFloat(r.Float64()*1e6, 'g', 17, 64) // 17 digits, not an integer
	case 1:
		return `"12"`
	case 2:
		return "null"
	case 3:
		return strconv.FormatUint(r.Uint64(), 10) // often beyond int64
	case 4:
		return strconv.FormatInt(r.Int64N(1<<62)-1<<61, 10) + "e0"
	}
	return strconv.FormatInt(r.Int64N(1<<60)-1<<59, 10) // beyond 2^53, within range
}

func genValue(r *rand.Rand, depth int) string {
	switch k := r.IntN(8); {
	case k == 0 && depth > 0:
		return `{"name":` + genNameValue(r) + `,"price":` + genPrice(r) + `,"deep":` + genValue(r, depth-1) + `}`
	case k == 1 && depth > 0:
		return "[" + genValue(r, depth-1) + "," + genValue(r, depth-1) + "]"
	case k == 2:
		return strconv.FormatFloat(math.Float64frombits(r.Uint64()>>2), 'g', -1, 64)
	case k == 3:
		return "true"
	case k == 4:
		return "null"
	}
	return `"` + genTexts[r.IntN(len(genTexts))] + `"`
}

// runPlugin runs the plugin at path on ins and returns each input's
// outputs, an error as "error", as runConformance does.
func runPlugin(t *testing.T, path, op, config string, ins []plugintool.Input) [][]string {
	t.Helper()
	outs, err := plugintool.Run(context.Background(), path, op, []byte(config), ins, "")
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]string, len(ins))
	for _, o := range outs {
		switch {
		case o.Error != "":
			got[o.Input] = append(got[o.Input], "error")
		case o.Trap != "":
			got[o.Input] = append(got[o.Input], "trap")
		default:
			got[o.Input] = append(got[o.Input], string(o.Value))
		}
	}
	return got
}

// TestTypedMatchesRaw runs each SDK's raw uppercase and typed
// typed_uppercase on the same generated records: both must upper-case the
// same records to the same bytes and reject the same others.
func TestTypedMatchesRaw(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every SDK's plugins")
	}
	ins := genRecords(1, 3000)
	for _, lang := range languages(t) {
		t.Run(lang, func(t *testing.T) {
			weirtest.NeedToolchain(t, lang)
			have := plugins(t, lang)
			raw := runPlugin(t, have["uppercase"], "map", "", ins)
			typed := runPlugin(t, have["typed_uppercase"], "map", "", ins)
			kept := 0
			for i := range ins {
				if fmt.Sprint(raw[i]) != fmt.Sprint(typed[i]) {
					t.Fatalf("record %d %s:\nraw   %q\ntyped %q", i, ins[i].Value, raw[i], typed[i])
				}
				if raw[i][0] != "error" {
					kept++
				}
			}
			if kept < len(ins)/2 {
				t.Fatalf("only %d of %d records upper-cased: the generator is off", kept, len(ins))
			}
		})
	}
}

// TestTypedDoubleGenerated holds every SDK's typed_double (and the WAT
// module) to a reference built on encoding/json and math/big, on
// generated records.
func TestTypedDoubleGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every SDK's plugins")
	}
	ins := genRecords(2, 3000)
	want := make([]string, len(ins))
	for i, in := range ins {
		want[i] = refDouble(t, in.Value)
	}
	for _, lang := range append(languages(t), "wat") {
		t.Run(lang, func(t *testing.T) {
			if lang != "wat" {
				weirtest.NeedToolchain(t, lang)
			}
			got := runPlugin(t, plugins(t, lang)["typed_double"], "map", "", ins)
			for i := range ins {
				if len(got[i]) != 1 || got[i][0] != want[i] {
					t.Fatalf("record %d %s: got %q, want %s", i, ins[i].Value, got[i], want[i])
				}
			}
		})
	}
}

// refDouble returns the record typed_double must write for doc (doc with
// the value of its last top-level price replaced by the doubled price),
// or "error" for a record it must reject.
func refDouble(t *testing.T, doc []byte) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("generated %s: %v", doc, err)
	}
	raw, ok := m["price"]
	if !ok || string(raw) == "null" || raw[0] == '"' {
		return "error"
	}
	f, ok := new(big.Float).SetPrec(2000).SetString(string(raw))
	if !ok || !f.IsInt() {
		return "error"
	}
	v, _ := f.Int(nil)
	v.Lsh(v, 1)
	if !v.IsInt64() {
		return "error" // the price, or its double, is outside int64
	}
	at, err := wjson.Get(doc, "price")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc[:at.Offset]) + v.String() + string(doc[at.Offset+len(at.Raw):])
}
