package fields

import (
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/abi/wjson"
)

// patchOps builds the operations of one patch with w's methods.
func patchOps(t testing.TB, build func(w *abi.TypedOutputWriter)) abi.PatchOps {
	var w abi.TypedOutputWriter
	w.Reset()
	w.BeginPatch(0, 0, nil, 0)
	build(&w)
	return decodePatch(t, w.Bytes())
}

func TestApplyPatch(t *testing.T) {
	type w = abi.TypedOutputWriter
	tests := []struct {
		name  string
		doc   string // "<nil>" for no value
		build func(*w)
		want  string // the value, "<nil>", or "error: " and the error's text
	}{
		{"set an existing field keeps the rest", `{ "a" : 1 ,"b":[1, 2],  "c":"x" }`, func(w *w) { w.SetInt("a", 2) },
			`{ "a" : 2 ,"b":[1, 2],  "c":"x" }`},
		{"set appends a new field", `{"a":1 }`, func(w *w) { w.SetString("b", "é\"") }, `{"a":1,"b":"é\"" }`},
		{"set on an empty object", ` { } `, func(w *w) { w.SetBool("t", true) }, ` {"t":true } `},
		{"set creates objects", `{"a":1}`, func(w *w) { w.SetInt("x.y.z", 1) }, `{"a":1,"x":{"y":{"z":1}}}`},
		{"set through an existing object", `{"u":{"n":"a","m":1},"v":2}`, func(w *w) { w.SetNull("u.n") }, `{"u":{"n":null,"m":1},"v":2}`},
		{"set through null", `{"u":null}`, func(w *w) { w.SetInt("u.a.b", 3) }, `{"u":{"a":{"b":3}}}`},
		{"set through a string", `{"u":"x"}`, func(w *w) { w.SetInt("u.a.b", 3) }, `error: patch op 0 (set "u.a.b"): "u" is a string, not an object`},
		{"set through a nested array", `{"u":{"a":[]}}`, func(w *w) { w.SetInt("u.a.b", 3) }, `error: patch op 0 (set "u.a.b"): "u.a" is an array, not an object`},
		{"set replaces the last of repeated names", `{"a":1,"b":2,"a":3}`, func(w *w) { w.SetInt("a", 4) }, `{"a":1,"b":2,"a":4}`},
		{"escaped names match", `{"caf\u00e9":1,"x.y":2}`, func(w *w) { w.SetInt("café", 5); w.SetInt(`x\.y`, 6) }, `{"caf\u00e9":5,"x.y":6}`},
		{"floats shortest round trip", `{}`, func(w *w) {
			w.SetFloat("a", 0.30000000000000004)
			w.SetFloat("b", 1e16)
			w.SetFloat("c", 2)
			w.SetFloat("d", math.NaN())
			w.SetInt("e", 9007199254740993)
		}, `{"a":0.30000000000000004,"b":1e+16,"c":2.0,"d":null,"e":9007199254740993}`},
		{"raw values", `{"a":1}`, func(w *w) { w.SetRaw("a", []byte(` [1, {"b":2}] `)) }, `{"a":[1, {"b":2}]}`},
		{"a bad raw value", `{"a":1}`, func(w *w) { w.SetRaw("a", []byte(`[1,`)) }, `error: patch op 0 (set "a"): the raw value is not one JSON value: wjson: unexpected end of JSON input at byte offset 3`},
		{"remove the first", `{"a":1, "b":2, "c":3}`, func(w *w) { w.Remove("a") }, `{"b":2, "c":3}`},
		{"remove the middle", `{"a":1, "b":2, "c":3}`, func(w *w) { w.Remove("b") }, `{"a":1, "c":3}`},
		{"remove the last", `{"a":1, "b":2, "c":3 }`, func(w *w) { w.Remove("c") }, `{"a":1, "b":2 }`},
		{"remove the only", `{ "a":1 }`, func(w *w) { w.Remove("a") }, `{  }`},
		{"remove every occurrence", `{"a":1,"b":2,"a":3}`, func(w *w) { w.Remove("a") }, `{"b":2}`},
		{"remove nested", `{"u":{"a":1,"b":2},"v":3}`, func(w *w) { w.Remove("u.a") }, `{"u":{"b":2},"v":3}`},
		{"remove what is not there", `{"u":{"a":1},"v":[]}`, func(w *w) { w.Remove("x"); w.Remove("u.x"); w.Remove("v.x"); w.Remove("u.a.b") }, `{"u":{"a":1},"v":[]}`},
		{"operations apply in order", `{"a":1}`, func(w *w) { w.SetInt("b", 2); w.Remove("a"); w.SetInt("a", 3) }, `{"b":2,"a":3}`},
		{"set the whole value", `{"a":1}`, func(w *w) { w.SetRaw("", []byte(`[1]`)) }, `[1]`},
		{"set the whole value then a field", `{"a":1}`, func(w *w) { w.SetRaw("", []byte(`{}`)); w.SetInt("z", 1) }, `{"z":1}`},
		{"set on no value", `<nil>`, func(w *w) { w.SetInt("a", 1) }, `{"a":1}`},
		{"remove on no value", `<nil>`, func(w *w) { w.Remove("a") }, `<nil>`},
		{"set on null", ` null `, func(w *w) { w.SetInt("a", 1) }, ` {"a":1} `},
		{"remove on null", `null`, func(w *w) { w.Remove("a") }, `null`},
		{"set on an array", `[1]`, func(w *w) { w.SetInt("a", 1) }, `error: patch op 0 (set "a"): the value is an array, not an object`},
		{"remove on a number", `5`, func(w *w) { w.Remove("a") }, `5`},
		{"no operations", `{"a" : 1}`, func(w *w) {}, `{"a" : 1}`},
		{"a value that is not JSON", `{"a":1,}`, func(w *w) { w.SetInt("b", 1) }, `error: patch op 0 (set "b"): the value is not JSON: wjson: invalid character '}' looking for beginning of object key string at byte offset 7`},
		{"a scalar that is not JSON", `tru`, func(w *w) { w.Remove("b") }, `error: patch op 0 (remove "b"): the value is not JSON: wjson: unexpected end of JSON input at byte offset 3`},
	}
	var p Patcher
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc []byte
			if tt.doc != "<nil>" {
				doc = []byte(tt.doc)
			}
			out, err := p.ApplyPatch(doc, patchOps(t, tt.build))
			got := string(out)
			switch {
			case err != nil:
				got = "error: " + err.Error()
			case out == nil:
				got = "<nil>"
			}
			if got != tt.want {
				t.Fatalf("ApplyPatch = %s\n          want %s", got, tt.want)
			}
		})
	}
}

func TestApplyPatchErrors(t *testing.T) {
	var p Patcher
	deep := []byte(strings.Repeat(`{"a":`, wjson.MaxDepth-1) + "{}" + strings.Repeat("}", wjson.MaxDepth-1))
	if _, err := p.ApplyPatch(deep, patchOps(t, func(w *abi.TypedOutputWriter) { w.SetInt("a", 1) })); err != nil {
		t.Fatalf("a set at the top of a deep value: %v", err)
	}
	raw := []byte(strings.Repeat("[", wjson.MaxDepth) + strings.Repeat("]", wjson.MaxDepth))
	_, err := p.ApplyPatch([]byte(`{}`), patchOps(t, func(w *abi.TypedOutputWriter) { w.SetRaw("a", raw) }))
	if err == nil || !strings.Contains(err.Error(), "nests deeper than 10000") {
		t.Fatalf("a set nesting too deep: %v", err)
	}
	_, err = p.ApplyPatch([]byte(`{}`), patchOps(t, func(w *abi.TypedOutputWriter) { w.SetInt("a", 1); w.SetRaw("b", []byte("x")) }))
	var pe *PatchError
	if !errors.As(err, &pe) || pe.Op != 1 || pe.Path != "b" || !errors.Is(err, ErrBadRawValue) {
		t.Fatalf("a bad raw value: %#v", err)
	}
	_, err = p.ApplyPatch([]byte(`[]`), patchOps(t, func(w *abi.TypedOutputWriter) { w.SetInt("a", 1) }))
	if !errors.As(err, &pe) || errors.Is(err, ErrBadRawValue) || !strings.Contains(pe.Reason, "not an object") {
		t.Fatalf("a set on an array: %#v", err)
	}
}

func TestApplyPatchNoAllocs(t *testing.T) {
	ops := patchOps(t, func(w *abi.TypedOutputWriter) {
		w.SetFloat("price", 1.5)
		w.SetString("user.name", "x")
		w.Remove("extra")
	})
	doc := bid(1)
	var p Patcher
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := p.ApplyPatch(doc, ops); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// TestWorkedExample runs the host's side of ABI.md §14.6: the record is
// extracted into the frame given there, and the guest's patch makes
// {"price":24}; a price of another type dead-letters the record.
func TestWorkedExample(t *testing.T) {
	d := mustDecl(t, abi.FieldDecl{Path: "price", Type: abi.TypeInt, Flags: abi.FieldStrict})
	b, err := NewExtractor(d).Extract([]Record{{Timestamp: 5, Key: []byte("k"), Value: []byte(`{"price":12}`)}, {Value: []byte(`{"price":"12"}`)}})
	want := "0100000001000000010000000000000038000000000000000400000040000000480000005000000001000000580000006000000000000000" +
		"0500000000000000000000000000000000000000010000006b0000000000000000000000000000000c00000000000000"
	if err != nil || hex.EncodeToString(b.Frame) != want {
		t.Fatalf("frame (%v)\n got %x\nwant %s", err, b.Frame, want)
	}
	if len(b.Rejects) != 1 || b.Rejects[0].Reason != `field "price": want int, found string` {
		t.Fatalf("rejects %+v", b.Rejects)
	}
	out, err := hex.DecodeString("010000000300000000000100000001050000007072696365011800000000000000")
	if err != nil {
		t.Fatal(err)
	}
	var p Patcher
	if v, err := p.ApplyPatch([]byte(`{"price":12}`), decodePatch(t, out)); err != nil || string(v) != `{"price":24}` {
		t.Fatalf("ApplyPatch = %s, %v", v, err)
	}
}
