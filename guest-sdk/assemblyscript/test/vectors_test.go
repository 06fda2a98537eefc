// Package astest runs the AssemblyScript SDK's tests: json_vectors.ts,
// the JSON test vectors every weir SDK shares, built with the SDK's own
// compiler and plugin options and run under wazero, as plugins run.
package astest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

const vectorsFile = "../../../abi/testdata/json-vectors.json"

// build compiles the test module with the SDK's asc (or $WEIR_ASC),
// skipping the test when the toolchain (scripts/install-toolchains.sh) is
// not installed, or failing it where toolchains are required.
func build(t *testing.T) []byte {
	t.Helper()
	weirtest.NeedToolchain(t, "assemblyscript")
	asc, err := filepath.Abs(filepath.Join("..", "node_modules", ".bin", "asc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(asc); err != nil {
		asc = os.Getenv("WEIR_ASC")
	}
	out := filepath.Join(t.TempDir(), "json_vectors.wasm")
	cmd := exec.Command(asc, "--config", "asconfig.json", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("asc --config test/asconfig.json: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

func TestJSONVectors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with asc: skipped with -short")
	}
	wasm := build(t)
	vectors, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	var aborted string
	_, err = rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(_ context.Context, m api.Module, msg, file, line, col uint32) {
			aborted = fmt.Sprintf("(abort at line %d, column %d)", line, col)
			panic(aborted)
		}).Export("abort").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	checkExports(t, compiled)
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig())
	if err != nil {
		t.Fatalf("instantiating: %v %s", err, aborted)
	}
	// The SDK builds reactors: the host runs _initialize first (ABI.md §4).
	if _, err := mod.ExportedFunction(abi.ExportInitialize).Call(ctx); err != nil {
		t.Fatalf("%s: %v %s", abi.ExportInitialize, err, aborted)
	}
	res, err := mod.ExportedFunction("vectorsAlloc").Call(ctx, uint64(len(vectors)))
	if err != nil {
		t.Fatal(err)
	}
	if !mod.Memory().Write(uint32(res[0]), vectors) {
		t.Fatal("vectorsAlloc's region is outside memory")
	}
	res, err = mod.ExportedFunction("vectorsRun").Call(ctx)
	if err != nil {
		t.Fatalf("vectorsRun: %v %s", err, aborted)
	}
	ptr, n := abi.Unpack(res[0])
	report, ok := mod.Memory().Read(ptr, n)
	if !ok {
		t.Fatal("the report is outside memory")
	}
	head, failures, _ := strings.Cut(string(report), "\n")
	var cases, failed int
	if _, err := fmt.Sscanf(head, "cases %d failures %d", &cases, &failed); err != nil {
		t.Fatalf("report %q: %v", head, err)
	}
	if cases < 1000 {
		t.Errorf("only %d cases ran", cases)
	}
	if failed > 0 {
		t.Errorf("%d of %d JSON vectors fail (the first ones):\n%s", failed, cases, failures)
	}
}

// checkExports checks the SDK's exports (exports.ts, which spells them as
// function names) against package abi.
func checkExports(t *testing.T, m wazero.CompiledModule) {
	t.Helper()
	got := m.ExportedFunctions()
	want := []string{abi.ExportVersion, abi.ExportAlloc, abi.ExportInit, abi.ExportMap, abi.ExportFlatMap,
		abi.ExportFilter, abi.ExportOps, abi.ExportGC, abi.ExportInitialize}
	want = append(want, abi.AggregateExports[:]...)
	known := map[string]bool{}
	for _, name := range want {
		known[name] = true
		if _, ok := got[name]; !ok {
			t.Errorf("exports.ts does not export %s", name)
		}
	}
	for name := range got {
		if strings.HasPrefix(name, "weir_") && !known[name] {
			t.Errorf("exports.ts exports %s, which is not an ABI export", name)
		}
	}
}
