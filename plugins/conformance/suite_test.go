package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/plugintool"
)

// The cross-language conformance suite: every SDK's folder here (go/,
// rust/, c/, assemblyscript/) holds the same eight plugins, and each must
// give, for the same inputs, exactly the outputs and error routing that
// README.md specifies. wat/ holds hand-written modules, written from
// abi/ABI.md alone, for the subset they implement.

// input is one record: a key (nil for none) and a raw value.
type input struct {
	key   *string
	value string
}

func v(s string) input          { return input{value: s} }
func kv(k, s string) input      { return input{key: &k, value: s} }
func want(s ...string) []string { return s }

// A want entry is an emitted value, "error: <msg>" for a rejection with
// exactly that message, "error:" for one with any message, or "trap" for a
// record the plugin failed on.
type conformanceCase struct {
	in   input
	want []string
}

type conformanceTest struct {
	name, plugin, op, config string
	cases                    []conformanceCase
	// result, for aggregates: the result of merging the accumulators of
	// the inputs' two halves, for group, the key and window the result
	// call is given (the zero Group: no key, no window).
	result string
	group  plugintool.Group
}

var conformanceTests = []conformanceTest{
	{name: "uppercase", plugin: "uppercase", op: "map", cases: []conformanceCase{
		{v(`{"name":"ada","n":1}`), want(`{"name":"ADA","n":1}`)},
		{v(`{ "id" : 7 , "name" : "Grace Hopper" }`), want(`{ "id" : 7 , "name" : "GRACE HOPPER" }`)},
		{v(`{"name":"caf\u00e9 \"x\""}`), want(`{"name":"CAFé \"X\""}`)},
		{v(`{"name":"a","name":"b"}`), want(`{"name":"a","name":"B"}`)},
		{v(`{"name":"tab\there"}`), want(`{"name":"TAB\tHERE"}`)},
		{v(`{"n":1}`), want("error: missing field name")},
		{v(`[1,2]`), want("error: missing field name")},
		{v(`{"name":5}`), want("error: field name is not a string")},
		{v(`not json`), want("error:")},
	}},
	{name: "uppercase configured", plugin: "uppercase", op: "map", config: `{"field":"city"}`, cases: []conformanceCase{
		{v(`{"name":"ada","city":"london"}`), want(`{"name":"ada","city":"LONDON"}`)},
		{v(`{"name":"ada"}`), want("error: missing field city")},
	}},
	{name: "words", plugin: "words", op: "flat_map", cases: []conformanceCase{
		{v("the quick  brown\tfox\n"), want("the", "quick", "brown", "fox")},
		{v("one"), want("one")},
		{v(" \r\n\v\f "), nil},
		{v(""), nil},
		{v("non\u00a0breaking"), want("non\u00a0breaking")},
	}},
	{name: "keep_even", plugin: "keep_even", op: "filter", cases: []conformanceCase{
		{v(`{"n":4}`), want(`{"n":4}`)},
		{v(`{"n":-2,"x":1}`), want(`{"n":-2,"x":1}`)},
		{v(`{"n":0}`), want(`{"n":0}`)},
		{v(`{"n":3}`), nil},
		{v(`{"n":4.0}`), want("error: field n is not an integer")},
		{v(`{"n":"4"}`), want("error: field n is not an integer")},
		{v(`{"n":99999999999999999999}`), want("error: field n is not an integer")},
		{v(`{"m":4}`), want("error: missing field n")},
		{v(`{"n":`), want("error:")},
	}},
	{name: "counter", plugin: "counter", op: "map", cases: []conformanceCase{
		{kv("a", "x"), want(`{"key":"a","count":1}`)},
		{kv("b", "x"), want(`{"key":"b","count":1}`)},
		{kv("a", "y"), want(`{"key":"a","count":2}`)},
		{kv("a", "z"), want(`{"key":"a","count":3}`)},
		{kv(`q"`, "z"), want(`{"key":"q\"","count":1}`)},
		{v("no key"), want(`{"key":null,"count":1}`)},
	}},
	{name: "fail_on", plugin: "fail_on", op: "map", cases: []conformanceCase{
		{v("good"), want("good")},
		{v("bad"), want("error: bad input: bad")},
		{v("bad "), want("bad ")},
	}},
	{name: "fail_on configured", plugin: "fail_on", op: "map", config: `{"bad":"oops"}`, cases: []conformanceCase{
		{v("bad"), want("bad")},
		{v("oops"), want("error: bad input: oops")},
	}},
	{name: "trap_on", plugin: "trap_on", op: "map", cases: []conformanceCase{
		{v("fine"), want("fine")},
		{v("trap"), want("trap")},
		{v("trap "), want("trap ")},
		{v("after"), want("after")},
	}},
	{name: "trap_on configured", plugin: "trap_on", op: "map", config: `{"trap":"boom"}`, cases: []conformanceCase{
		{v("trap"), want("trap")},
		{v("boom"), want("trap")},
	}},
	{name: "average", plugin: "average", op: "aggregate", result: `{"avg":1.75,"count":2}`, cases: []conformanceCase{
		{v(`{"n":1}`), nil},
		{v(`{"x":1}`), want("error: missing field n")},
		{v(`{"n":"1"}`), want("error: field n is not a number")},
		{v(`{"n":2.5}`), nil},
		{v(`{"n":1e400}`), want("error: field n is out of range")},
		{v(`not json`), want("error:")},
	}},
	{name: "average of nothing", plugin: "average", op: "aggregate", result: `{"avg":null,"count":0}`},
	{name: "window_info", plugin: "window_info", op: "aggregate",
		group:  plugintool.Group{Key: []byte("k"), Window: true, Start: 1436918400000, End: 1436918410000},
		result: `{"key":"k","start":1436918400000,"end":1436918410000,"count":3}`,
		cases:  []conformanceCase{{v(`{"n":1}`), nil}, {v("not json"), nil}, {kv("other", ""), nil}}},
	{name: "window_info of an odd key", plugin: "window_info", op: "aggregate",
		group:  plugintool.Group{Key: []byte("q\"é\\"), Window: true, Start: -5000, End: 0},
		result: `{"key":"q\"é\\","start":-5000,"end":0,"count":0}`},
	{name: "window_info of the empty key", plugin: "window_info", op: "aggregate",
		group:  plugintool.Group{Key: []byte{}, Window: true, Start: 7, End: 7},
		result: `{"key":"","start":7,"end":7,"count":1}`, cases: []conformanceCase{{v("x"), nil}}},
	{name: "window_info without a window", plugin: "window_info", op: "aggregate",
		result: `{"key":null,"start":null,"end":null,"count":2}`, cases: []conformanceCase{{v("a"), nil}, {v("b"), nil}}},
}

// typedTests are the cases of the typed-convention plugins (ABI.md §14),
// which every SDK has; wat/ has some of them. Rejections at field extraction are the host's,
// and the same for every language.
var typedTests = []conformanceTest{
	{name: "typed_double", plugin: "typed_double", op: "map", cases: []conformanceCase{
		{v(`{"price":12}`), want(`{"price":24}`)},
		{v(`{ "id" : 7 , "price" : 21 , "tag" : "x" }`), want(`{ "id" : 7 , "price" : 42 , "tag" : "x" }`)},
		{v(`{"price":1e3,"price":-4}`), want(`{"price":1e3,"price":-8}`)},
		{v(`{"price":9007199254740993}`), want(`{"price":18014398509481986}`)},
		{v(`{"price":2.0}`), want(`{"price":4}`)},
		{v(`{"price":"12"}`), want(`error: field "price": want int, found string`)},
		{v(`{"price":1.5}`), want(`error: field "price": want int, found number 1.5 (not an integer)`)},
		{v(`{"price":4611686018427387903}`), want(`{"price":9223372036854775806}`)},
		{v(`{"price":-4611686018427387904}`), want(`{"price":-9223372036854775808}`)},
		{v(`{"price":4611686018427387904}`), want("error: price overflows")},
		{v(`{"price":-4611686018427387905}`), want("error: price overflows")},
		{v(`{"price":null}`), want("error: price is null")},
		{v(`{"cost":12}`), want("error: price is missing")},
		{v(`[12]`), want("error: price is missing")},
		{v(`{"price":`), want("error:")},
	}},
	{name: "typed_uppercase", plugin: "typed_uppercase", op: "map", cases: []conformanceCase{
		{v(`{"name":"ada","n":1}`), want(`{"name":"ADA","n":1}`)},
		{v(`{ "id" : 7 , "name" : "Grace Hopper" }`), want(`{ "id" : 7 , "name" : "GRACE HOPPER" }`)},
		{v(`{"name":"caf\u00e9 \"x\""}`), want(`{"name":"CAFé \"X\""}`)},
		{v(`{"name":"a","name":"b"}`), want(`{"name":"a","name":"B"}`)},
		{v(`{"name":"tab\there"}`), want(`{"name":"TAB\tHERE"}`)},
		{v(`{"n":1}`), want(`error: field "name": missing`)},
		{v(`{"name":null}`), want(`error: field "name": null`)},
		{v(`{"name":5}`), want(`error: field "name": want string, found number`)},
		{v(`not json`), want("error:")},
	}},
	{name: "typed_uppercase configured", plugin: "typed_uppercase", op: "map", config: `{"field":"city"}`, cases: []conformanceCase{
		{v(`{"name":"ada","city":"london"}`), want(`{"name":"ada","city":"LONDON"}`)},
		{v(`{"name":"ada"}`), want(`error: field "city": missing`)},
	}},
	{name: "keep_active", plugin: "keep_active", op: "filter", cases: []conformanceCase{
		{v(`{"active":true,"id":1}`), want(`{"active":true,"id":1}`)},
		{v(`{"active":false}`), nil},
		{v(`{"id":3}`), nil},
		{v(`{"active":null}`), nil},
		{v(`{"active":"yes"}`), want("error: active is not a bool")},
		{v(`{"active":1}`), want("error: active is not a bool")},
		{v(`{"active":false,"active":true}`), want(`{"active":false,"active":true}`)},
		{v(`{"active":true,}`), want("error:")},
	}},
	// typed_average is average typed: the records its declaration rejects
	// are the host's dead letters, with the host's reasons; the others are
	// folded in, however n is spelled (the last occurrence counts).
	{name: "typed_average", plugin: "typed_average", op: "aggregate", result: `{"avg":3.0,"count":6}`, cases: []conformanceCase{
		{v(`{"n":1}`), nil},
		{v(`{"x":1}`), want(`error: field "n": missing`)},
		{v(`{"n":"1"}`), want(`error: field "n": want float, found string`)},
		{v(`{"n":2.5}`), nil},
		{v(`{"n":1e400}`), want(`error: field "n": want float, found number 1e400 (outside float64)`)},
		{v(`{"n":null}`), want(`error: field "n": null`)},
		{v(`not json`), want("error:")},
		{v(`{"n":1e1}`), nil},
		{v(`{"n":-0.5,"x":[1]}`), nil},
		{v(`{"n":"x","n":3}`), nil},
		{v(`{"n":2.0}`), nil},
	}},
	{name: "typed_average of nothing", plugin: "typed_average", op: "aggregate", result: `{"avg":null,"count":0}`},
}

// trap_on's trapping value, per test, which the table writes as "trap".
func isTrapCase(tc conformanceTest, c conformanceCase) bool {
	trap := "trap"
	if strings.Contains(tc.config, "boom") {
		trap = "boom"
	}
	return tc.plugin == "trap_on" && c.in.value == trap
}

// plugins lists the conformance plugins of language dir: source folders,
// or, for wat/, .wasm modules by name.
func plugins(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		switch {
		case e.IsDir() && e.Name() != "internal" && e.Name() != "node_modules" && e.Name() != "target":
			out[e.Name()] = filepath.Join(dir, e.Name())
		case strings.HasSuffix(e.Name(), ".wasm"):
			out[strings.TrimSuffix(e.Name(), ".wasm")] = filepath.Join(dir, e.Name())
		}
	}
	return out
}

// languages lists the SDK folders: every folder here but wat/.
func languages(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var langs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "wat" {
			langs = append(langs, e.Name())
		}
	}
	return langs
}

// TestConformance runs every SDK's plugins through the table. Every SDK
// must have every plugin.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every SDK's plugins")
	}
	names := map[string]bool{}
	for _, tc := range conformanceTests {
		names[tc.plugin] = true
	}
	for _, lang := range languages(t) {
		t.Run(lang, func(t *testing.T) {
			weirtest.NeedToolchain(t, lang)
			have := plugins(t, lang)
			for name := range names {
				if _, ok := have[name]; !ok {
					t.Errorf("the %s SDK has no %s conformance plugin", lang, name)
				}
			}
			for _, tc := range conformanceTests {
				t.Run(tc.name, func(t *testing.T) {
					if path, ok := have[tc.plugin]; ok {
						runConformance(t, path, tc)
					}
				})
			}
			runTyped(t, have, true)
		})
	}
}

// runTyped runs typedTests for the plugins of have, which must have every
// one when all is set, and otherwise only some.
func runTyped(t *testing.T, have map[string]string, all bool) {
	for _, tc := range typedTests {
		t.Run(tc.name, func(t *testing.T) {
			path, ok := have[tc.plugin]
			switch {
			case !ok && all:
				t.Fatalf("no %s plugin", tc.plugin)
			case !ok:
				t.Skipf("no %s plugin", tc.plugin)
			}
			runConformance(t, path, tc)
		})
	}
}

// TestConformanceWAT runs the hand-written modules through the cases of
// the plugins they implement.
func TestConformanceWAT(t *testing.T) {
	have := plugins(t, "wat")
	if len(have) == 0 {
		t.Fatal("no hand-written modules in wat/")
	}
	for _, tc := range conformanceTests {
		path, ok := have[tc.plugin]
		if !ok || tc.config != "" {
			continue // the WAT modules implement the default configs
		}
		t.Run(tc.name, func(t *testing.T) { runConformance(t, path, tc) })
	}
	for _, name := range []string{"typed_double", "keep_active"} {
		if _, ok := have[name]; !ok {
			t.Errorf("no hand-written %s module in wat/", name)
		}
	}
	runTyped(t, have, false)
}

// opsTests load plugins as operators of each kind: a plugin used as an
// operator of a kind it does not implement is refused at load, with a
// message naming what it implements, whether it reports the operations it
// registered (abi.ExportOps: every SDK) or not (the WAT modules, judged by
// their exports).
var opsTests = []struct {
	name, plugin, op string
	wantErr          string // "" when the plugin must load and run
}{
	{name: "map as filter", plugin: "fail_on", op: "filter", wantErr: "the plugin implements map, not filter"},
	{name: "filter as map", plugin: "keep_even", op: "map", wantErr: "the plugin implements filter, not map"},
	{name: "flat_map as map", plugin: "words", op: "map", wantErr: "the plugin implements flat_map, not map"},
	{name: "map as map", plugin: "fail_on", op: "map"},
	{name: "flat_map as flat_map", plugin: "words", op: "flat_map"},
	{name: "typed map as filter", plugin: "typed_double", op: "filter", wantErr: "the plugin implements map, not filter"},
	{name: "typed filter as map", plugin: "keep_active", op: "map", wantErr: "the plugin implements filter, not map"},
	{name: "typed map as map", plugin: "typed_double", op: "map"},
}

// TestConformanceOps runs opsTests for every SDK and for the WAT modules.
func TestConformanceOps(t *testing.T) {
	for _, lang := range append(languages(t), "wat") {
		t.Run(lang, func(t *testing.T) {
			if testing.Short() && lang != "wat" {
				t.Skip("builds the SDK's plugins")
			}
			weirtest.NeedToolchain(t, lang)
			have := plugins(t, lang)
			for _, tc := range opsTests {
				t.Run(tc.name, func(t *testing.T) {
					path, ok := have[tc.plugin]
					if !ok {
						t.Skipf("no %s plugin in %s/", tc.plugin, lang)
					}
					runOps(t, path, tc.op, tc.wantErr)
				})
			}
		})
	}
}

// runOps loads the plugin at path as an operator of op, with one input:
// refused with wantErr, or, for "", running.
func runOps(t *testing.T, path, op, wantErr string) {
	t.Helper()
	in := []plugintool.Input{{Value: []byte(`{"name":"x","n":2}`)}}
	_, err := plugintool.Run(context.Background(), path, op, nil, in, "")
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("as a %s: %v", op, err)
	case wantErr == "":
		return
	case err == nil:
		t.Fatalf("as a %s: loaded, want it refused: %s", op, wantErr)
	}
	if !errors.Is(err, host.ErrPlugin) || !strings.Contains(err.Error(), fmt.Sprintf("operator %q (%s): ", "test", path)) ||
		!strings.Contains(err.Error(), wantErr) {
		t.Errorf("as a %s: %v\nwant a plugin error naming the operator and saying %q", op, err, wantErr)
	}
	t.Log(err)
}

func runConformance(t *testing.T, path string, tc conformanceTest) {
	t.Helper()
	var ins []plugintool.Input
	for _, c := range tc.cases {
		in := plugintool.Input{Value: []byte(c.in.value)}
		if c.in.key != nil {
			in.Key = []byte(*c.in.key)
		}
		ins = append(ins, in)
	}
	outs, err := plugintool.RunGroup(context.Background(), path, tc.op, []byte(tc.config), ins, "", tc.group)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]string, len(tc.cases))
	var result *string
	for _, o := range outs {
		var s string
		switch {
		case o.Input < 0:
			r := string(o.Value)
			result = &r
			continue
		case o.Error != "":
			s = "error: " + o.Error
		case o.Trap != "":
			s = "trap"
		default:
			s = string(o.Value)
		}
		got[o.Input] = append(got[o.Input], s)
	}
	for i, c := range tc.cases {
		w := c.want
		if isTrapCase(tc, c) {
			w = want("trap")
		}
		if !matches(got[i], w) {
			t.Errorf("input %q: got %q, want %q", c.in.value, got[i], w)
		}
	}
	if tc.op == "aggregate" && (result == nil || *result != tc.result) {
		t.Errorf("result %v, want %s", deref(result), tc.result)
	}
}

func matches(got, want []string) bool {
	return slices.EqualFunc(got, want, func(g, w string) bool {
		return g == w || (w == "error:" && strings.HasPrefix(g, "error: "))
	})
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return fmt.Sprintf("%q", *s)
}

// TestWATBuilt checks that each hand-written module's .wasm is its .wat's
// current build (when wabt's wat2wasm is installed).
func TestWATBuilt(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm is not installed")
	}
	srcs, _ := filepath.Glob("wat/*.wat")
	for _, src := range srcs {
		out := filepath.Join(t.TempDir(), "m.wasm")
		if b, err := exec.Command("wat2wasm", src, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", src, err, b)
		}
		want, _ := os.ReadFile(out)
		got, err := os.ReadFile(strings.TrimSuffix(src, ".wat") + ".wasm")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run plugins/conformance/wat/gen.sh", src)
		}
	}
}
