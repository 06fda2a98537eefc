package weir

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// TestDirectivesMatchABI checks the one place ABI names are spelled as
// literals: //go:wasmexport and //go:wasmimport directives, which cannot
// name a constant. It parses the wasip1 source files and compares each
// directive with the constant in package abi its function implements.
func TestDirectivesMatchABI(t *testing.T) {
	wantExports := map[string]string{
		"exportVersion": abi.ExportVersion,
		"exportAlloc":   abi.ExportAlloc,
		"exportInit":    abi.ExportInit,
		"exportMap":     abi.ExportMap,
		"exportFlatMap": abi.ExportFlatMap,
		"exportFilter":  abi.ExportFilter,
		"exportGC":      abi.ExportGC,
		"exportOps":     abi.ExportOps,

		"exportFields":       abi.ExportFields,
		"exportTypedMap":     abi.ExportTypedMap,
		"exportTypedFlatMap": abi.ExportTypedFlatMap,
		"exportTypedFilter":  abi.ExportTypedFilter,

		"exportAggCreate": abi.ExportAggCreate,
		"exportAggAdd":    abi.ExportAggAdd,
		"exportAggMerge":  abi.ExportAggMerge,
		"exportAggResult": abi.ExportAggResult,

		"exportAggResultCtx": abi.ExportAggResultCtx,
	}
	wantImports := map[string]string{
		"hostLog":         abi.ImportModule + " " + abi.ImportLog,
		"hostStateGet":    abi.ImportModule + " " + abi.ImportStateGet,
		"hostStatePut":    abi.ImportModule + " " + abi.ImportStatePut,
		"hostStateDelete": abi.ImportModule + " " + abi.ImportStateDelete,
	}
	if v, ok := abi.ParseVersionExport(abi.ExportVersion); !ok || v != abi.Version {
		t.Fatalf("abi.ExportVersion %q does not declare version %d", abi.ExportVersion, abi.Version)
	}
	for _, op := range abi.Ops {
		found := false
		for _, name := range wantExports {
			found = found || name == op.Export()
		}
		if !found {
			t.Errorf("no export implements %v (%s)", op, op.Export())
		}
	}

	for _, name := range abi.AggregateExports {
		found := false
		for _, n := range wantExports {
			found = found || n == name
		}
		if !found {
			t.Errorf("no export implements %s", name)
		}
	}

	gotExports := directives(t, "exports_wasip1.go", "//go:wasmexport ")
	gotImports := directives(t, "host_wasip1.go", "//go:wasmimport ")
	compare(t, "wasmexport", gotExports, wantExports)
	compare(t, "wasmimport", gotImports, wantImports)
}

// directives returns, for each function in file with a directive starting
// with prefix, the directive's argument text.
func directives(t *testing.T, file, prefix string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Doc == nil {
			continue
		}
		for _, c := range fn.Doc.List {
			if arg, ok := strings.CutPrefix(c.Text, prefix); ok {
				if _, dup := got[fn.Name.Name]; dup {
					t.Errorf("%s: %s has two directives", file, fn.Name.Name)
				}
				got[fn.Name.Name] = strings.TrimSpace(arg)
			}
		}
	}
	// A directive not attached to a function would be a compile error, but
	// count them anyway so none can hide from this test.
	src := 0
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, prefix) {
				src++
			}
		}
	}
	if src != len(got) {
		t.Errorf("%s: %d %s directives, %d on functions", file, src, strings.TrimSpace(prefix), len(got))
	}
	return got
}

func compare(t *testing.T, kind string, got, want map[string]string) {
	t.Helper()
	for fn, w := range want {
		if g, ok := got[fn]; !ok {
			t.Errorf("%s: %s has no directive, want %q", kind, fn, w)
		} else if g != w {
			t.Errorf("%s: %s directive says %q, package abi says %q", kind, fn, g, w)
		}
	}
	for fn, g := range got {
		if _, ok := want[fn]; !ok {
			t.Errorf("%s: %s (%q) is not a known ABI name; add it to this test", kind, fn, g)
		}
	}
}
