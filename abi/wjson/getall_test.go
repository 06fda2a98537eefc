package wjson

import (
	"strings"
	"testing"
)

// splitPaths reads "a.b|c|" as the paths [a b], [c] and [] (the whole
// document).
func splitPaths(s string) [][]string {
	var paths [][]string
	for _, p := range strings.Split(s, "|") {
		var path []string
		if p != "" {
			path = strings.Split(p, ".")
		}
		paths = append(paths, path)
	}
	return paths
}

// checkGetAll holds GetAll to Get, path by path.
func checkGetAll(t *testing.T, doc []byte, paths [][]string) {
	t.Helper()
	s, err := NewPathSet(paths...)
	if err != nil {
		return
	}
	out := make([]Value, s.Len())
	err = s.GetAll(doc, out)
	for k, path := range paths {
		want, werr := Get(doc, path...)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("path %q: GetAll error %v, Get error %v", path, err, werr)
		}
		got := out[k]
		if got.Kind != want.Kind || string(got.Raw) != string(want.Raw) || got.Offset != want.Offset ||
			got.String() != want.String() {
			t.Fatalf("path %q: GetAll = %v %q at %d, Get = %v %q at %d", path, got.Kind, got.Raw, got.Offset, want.Kind, want.Raw, want.Offset)
		}
	}
}

func TestGetAll(t *testing.T) {
	tests := []struct {
		name, doc, paths string
	}{
		{"flat", `{"a":1,"b":"x","c":true}`, "a|c|missing"},
		{"nested", `{"user":{"name":"Al","age":30},"id":7}`, "user.name|user.age|id|user.none"},
		{"prefix and its extension", `{"a":{"b":{"c":1}}}`, "a|a.b|a.b.c"},
		{"the whole document", ` {"a":1} `, "|a"},
		{"last occurrence wins", `{"a":1,"a":2}`, "a"},
		{"a later scalar hides an object", `{"a":{"b":1},"a":5}`, "a.b|a"},
		{"a later object replaces an object", `{"a":{"b":1,"c":2},"a":{"c":3}}`, "a.b|a.c"},
		{"through an array", `{"a":[{"b":1}]}`, "a.b|a"},
		{"escaped names", `{"caf\u00e9":1,"a\"b":{"x\/y":2}}`, "café|a\"b.x/y"},
		{"not an object", `[1,2]`, "a|"},
		{"scalar document", `5`, "a"},
		{"empty object", `{}`, "a|"},
		{"syntax error after the field", `{"a":1,}`, "a"},
		{"syntax error in a skipped value", `{"a":1,"b":[1,]}`, "a"},
		{"deep", strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100), strings.Repeat("a.", 99) + "a"},
		{"too deep", strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1), "a.a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGetAll(t, []byte(tt.doc), splitPaths(tt.paths))
		})
	}
}

func TestNewPathSetRejectsEqualPaths(t *testing.T) {
	if _, err := NewPathSet([]string{"a", "b"}, []string{"c"}, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "paths 0 and 2 are equal") {
		t.Fatalf("NewPathSet = %v", err)
	}
}

func TestGetAllZeroAllocs(t *testing.T) {
	s, err := NewPathSet([]string{"site", "floor"}, []string{"kind"}, []string{"value"})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Value, s.Len())
	allocs := testing.AllocsPerRun(100, func() {
		if err := s.GetAll(benchDoc, out); err != nil || !out[0].Exists() {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// FuzzGetAll holds GetAll to Get for every path of a set.
func FuzzGetAll(f *testing.F) {
	addDocSeeds(f, "a|a.b|c")
	f.Add([]byte(`{"a":{"b":1},"a":{"c":2},"c":[{"a":1}]}`), "a|a.b|a.c|c")
	f.Add([]byte(`{"x":{"y":{"z":"\ud83d\ude00"}},"x":{"y":{"w":null}}}`), "x.y.z|x.y.w|x.y|")
	f.Add([]byte("{\"\xff\":1,\"é\":{\"a\":[2]},\"k\\u0065y\":3}"), "\ufffd|é|é.a|key")
	f.Fuzz(func(t *testing.T, doc []byte, paths string) {
		checkGetAll(t, doc, splitPaths(paths))
	})
}
