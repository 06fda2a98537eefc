package wasm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

func TestInspect(t *testing.T) {
	tests := []struct {
		module       string
		abiVersion   int
		ops          []abi.Op
		exports      []string // a subset, "name signature"
		imports      []string // all, "module.name kind"
		memory       string   // "" for none known
		fields       string   // the declared fields, as fmt prints them; "" for none
		problemsLike []string // substrings, in order; none means no problems
	}{
		{
			module:     "identity",
			abiVersion: 1,
			ops:        []abi.Op{abi.OpMap, abi.OpFlatMap, abi.OpFilter},
			exports:    []string{abi.ExportAlloc + " (i32) -> (i32)", abi.ExportMap + " (i32, i32) -> (i64)", abi.ExportGC + " () -> ()"},
			memory:     "export memory, min 2",
		},
		{
			module:     "counter",
			abiVersion: 1,
			ops:        []abi.Op{abi.OpMap},
			imports: []string{
				abi.ImportModule + "." + abi.ImportStateGet + " func",
				abi.ImportModule + "." + abi.ImportStatePut + " func",
				abi.ImportModule + "." + abi.ImportStateDelete + " func",
			},
			memory: "export memory, min 2",
		},
		{
			module:       "abi_v2",
			abiVersion:   2,
			ops:          []abi.Op{abi.OpMap},
			memory:       "export memory, min 2",
			problemsLike: []string{"speaks weir ABI v2"},
		},
		{
			module:       "no_version",
			ops:          []abi.Op{abi.OpMap},
			memory:       "export memory, min 2",
			problemsLike: []string{"missing export " + abi.ExportVersion},
		},
		{
			module:       "bad_signature",
			abiVersion:   1,
			memory:       "export memory, min 2",
			problemsLike: []string{"exports none of", "export " + abi.ExportGC + " has type", "export " + abi.ExportMap + " has type"},
		},
		{
			module:       "foreign_import",
			abiVersion:   1,
			ops:          []abi.Op{abi.OpMap},
			imports:      []string{"env.memcpy func", "js.now func"},
			memory:       "export memory, min 2",
			problemsLike: []string{"env.memcpy", "js.now"},
		},
		{
			module:       "import_memory",
			abiVersion:   1,
			ops:          []abi.Op{abi.OpMap},
			imports:      []string{"env.memory memory"},
			memory:       "import, min 1",
			problemsLike: []string{"imports memory env.memory"},
		},
		{
			module:       "ops",
			abiVersion:   1,
			ops:          []abi.Op{abi.OpMap, abi.OpFlatMap, abi.OpFilter},
			exports:      []string{abi.ExportOps + " () -> (i32)"},
			memory:       "export memory, min 2",
			problemsLike: []string{"with the config {}, it does not start: " + abi.ExportInit + " rejected the config: want a one-byte config"},
		},
		{
			module:       "ops_none",
			abiVersion:   1,
			memory:       "export memory, min 2",
			problemsLike: []string{"with the config {}, it registers none of the operations it exports (map and filter)"},
		},
		{
			module:       "ops_bad_signature",
			abiVersion:   1,
			ops:          []abi.Op{abi.OpMap},
			memory:       "export memory, min 2",
			problemsLike: []string{"export " + abi.ExportOps + " has type (i32) -> (i32), want () -> (i32)"},
		},
		{
			module:     "typed_sum",
			abiVersion: 1,
			ops:        []abi.Op{abi.OpAggregate},
			exports:    []string{abi.ExportFields + " () -> (i64)", abi.ExportTypedAggAdd + " (i32, i32) -> (i64)"},
			memory:     "export memory, min 2",
			fields:     "[{n int 2}]",
		},
		{
			module:       "typed_echo",
			abiVersion:   1,
			ops:          []abi.Op{abi.OpMap, abi.OpFlatMap},
			imports:      []string{abi.ImportModule + "." + abi.ImportStatePut + " func"},
			memory:       "export memory, min 2",
			problemsLike: []string{"with the config {}, it does not start: invalid field declaration from " + abi.ExportFields},
		},
	}
	for _, tt := range tests {
		t.Run(tt.module, func(t *testing.T) {
			wasm := testdata(t, tt.module)
			info, err := Inspect(wasm)
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != len(wasm) {
				t.Errorf("Size = %d, want %d", info.Size, len(wasm))
			}
			if info.ABIVersion != tt.abiVersion {
				t.Errorf("ABIVersion = %d, want %d", info.ABIVersion, tt.abiVersion)
			}
			if fmt.Sprint(info.Ops) != fmt.Sprint(tt.ops) {
				t.Errorf("Ops = %v, want %v", info.Ops, tt.ops)
			}
			exports := make(map[string]bool)
			for _, e := range info.Exports {
				exports[e.Name+" "+e.Signature.String()] = true
			}
			for _, want := range tt.exports {
				if !exports[want] {
					t.Errorf("no export %q in %v", want, info.Exports)
				}
			}
			var imports []string
			for _, im := range info.Imports {
				imports = append(imports, fmt.Sprintf("%s.%s %s", im.Module, im.Name, im.Kind))
			}
			if !equal(imports, tt.imports) {
				t.Errorf("Imports = %q, want %q", imports, tt.imports)
			}
			var mem string
			if m := info.Memory; m != nil {
				if m.Imported {
					mem = fmt.Sprintf("import, min %d", m.Min)
				} else {
					mem = fmt.Sprintf("export %s, min %d", m.Export, m.Min)
				}
			}
			if mem != tt.memory {
				t.Errorf("Memory = %q, want %q", mem, tt.memory)
			}
			if fields := fmt.Sprint(info.Fields); fields != tt.fields && !(tt.fields == "" && fields == "[]") {
				t.Errorf("Fields = %s, want %s", fields, tt.fields)
			}
			if len(info.Problems) != len(tt.problemsLike) {
				t.Fatalf("Problems = %q, want %d like %q", info.Problems, len(tt.problemsLike), tt.problemsLike)
			}
			for i, want := range tt.problemsLike {
				if !strings.Contains(info.Problems[i], want) {
					t.Errorf("problem %d = %q, want it to mention %q", i, info.Problems[i], want)
				}
			}
		})
	}
}

func TestInspectNotWasm(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("hello world"), testdata(t, "identity")[:40]} {
		if _, err := Inspect(b); !errors.Is(err, ErrInvalidModule) {
			t.Errorf("Inspect(%q...): err = %v, want ErrInvalidModule", b[:min(len(b), 8)], err)
		}
	}
}

// TestInspectGo inspects Go SDK plugins, which export every operation's
// entry points: Inspect lists the operations they registered.
func TestInspectGo(t *testing.T) {
	tests := []struct {
		name, dir string
		ops       []abi.Op
	}{
		{"map", "plugins/identity", []abi.Op{abi.OpMap}},
		{"flat_map", "plugins/conformance/go/words", []abi.Op{abi.OpFlatMap}},
		{"filter", "plugins/conformance/go/keep_even", []abi.Op{abi.OpFilter}},
		{"aggregate", "plugins/conformance/go/average", []abi.Op{abi.OpAggregate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Inspect(goPlugin(t, tt.dir))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(info.Ops) != fmt.Sprint(tt.ops) || len(info.Problems) != 0 {
				t.Errorf("Ops = %v, problems %q; want %v and none", info.Ops, info.Problems, tt.ops)
			}
		})
	}
}
