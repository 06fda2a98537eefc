// Package astest runs the AssemblyScript SDK's tests: json_vectors.ts,
// the JSON test vectors every weir SDK shares, and typed.ts, the typed
// convention's Row reader and Patch writer (typed_test.go), built with the
// SDK's own compiler and plugin options and run under wazero, as plugins
// run.
package astest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

const vectorsFile = "../../../abi/testdata/json-vectors.json"

// build compiles the test module of the asc config file config with the
// SDK's asc (or $WEIR_ASC), skipping the test when the toolchain
// (scripts/install-toolchains.sh) is not installed, or failing it where
// toolchains are required.
func build(t *testing.T, config string) []byte {
	t.Helper()
	weirtest.NeedToolchain(t, "assemblyscript")
	if wasm, ok := built[config]; ok {
		return wasm
	}
	asc, err := filepath.Abs(filepath.Join("..", "node_modules", ".bin", "asc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(asc); err != nil {
		asc = os.Getenv("WEIR_ASC")
	}
	out := filepath.Join(t.TempDir(), "test.wasm")
	cmd := exec.Command(asc, "--config", config, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("asc --config test/%s: %v\n%s", config, err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	built[config] = wasm
	return wasm
}

// built holds the modules build compiled, by config file: the tests, which
// do not run in parallel, build each once.
var built = map[string][]byte{}

func TestJSONVectors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with asc: skipped with -short")
	}
	vectors, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mod, aborted := instantiate(t, build(t, "asconfig.json"))
	// A module that registers no typed function stays a raw one (ABI.md §14).
	if res := call(t, mod, aborted, abi.ExportFields); res != 0 {
		t.Errorf("%s = %#x, want the empty region: the module registers no typed function", abi.ExportFields, res)
	}
	res, err := mod.ExportedFunction("vectorsAlloc").Call(ctx, uint64(len(vectors)))
	if err != nil {
		t.Fatal(err)
	}
	if !mod.Memory().Write(uint32(res[0]), vectors) {
		t.Fatal("vectorsAlloc's region is outside memory")
	}
	ptr, n := abi.Unpack(call(t, mod, aborted, "vectorsRun"))
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
		abi.ExportFilter, abi.ExportOps, abi.ExportGC, abi.ExportInitialize,
		abi.ExportFields, abi.ExportTypedMap, abi.ExportTypedFlatMap, abi.ExportTypedFilter, abi.ExportTypedAggAdd,
		abi.ExportAggResultCtx}
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

// instantiate compiles and instantiates a test module, checking its
// exports, and runs its _initialize (the SDK builds reactors: the host
// runs it first, ABI.md §4). The module's runtime is closed with the test.
// aborted holds the message of the last env.abort.
func instantiate(t *testing.T, wasm []byte) (mod api.Module, aborted *string) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	aborted = new(string)
	_, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(_ context.Context, m api.Module, msg, file, line, col uint32) {
			*aborted = fmt.Sprintf("(abort: %q at line %d, column %d)", asString(m, msg), line, col)
			panic(*aborted)
		}).Export("abort").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	checkExports(t, compiled)
	mod, err = rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig())
	if err != nil {
		t.Fatalf("instantiating: %v %s", err, *aborted)
	}
	call(t, mod, aborted, abi.ExportInitialize)
	return mod, aborted
}

// call calls the module's export name with args and returns its result
// (0 for none), failing the test when it traps.
func call(t *testing.T, mod api.Module, aborted *string, name string, args ...uint64) uint64 {
	t.Helper()
	res, err := mod.ExportedFunction(name).Call(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s: %v %s", name, err, *aborted)
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

// asString reads the AssemblyScript string at ptr (UTF-16, its byte
// length in the 4 bytes before it), for abort messages.
func asString(m api.Module, ptr uint32) string {
	n, ok := m.Memory().ReadUint32Le(ptr - 4)
	if !ok || ptr == 0 {
		return ""
	}
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		return ""
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return string(utf16.Decode(u))
}
