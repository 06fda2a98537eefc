package meter_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/host/internal/meter"
)

var ctx = context.Background()

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func instrument(t testing.TB, bin []byte, opts meter.Options) []byte {
	t.Helper()
	out, err := meter.Instrument(bin, opts)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	return out
}

// yielder serves weir_sandbox.yield: it counts the calls, returns fuel,
// and panics with errStopped at call stopAt when that is not zero.
type yielder struct {
	fuel   int32
	calls  int
	stopAt int
}

var errStopped = errors.New("stopped by yield")

func (y *yielder) yield(_ context.Context, _ api.Module, stack []uint64) {
	y.calls++
	if y.stopAt > 0 && y.calls >= y.stopAt {
		panic(errStopped)
	}
	stack[0] = api.EncodeI32(y.fuel)
}

// newRuntime returns a runtime, closed with the test, where y serves
// weir_sandbox.yield and testdata/env.wasm is instantiated as "env".
func newRuntime(t testing.TB, cfg wazero.RuntimeConfig, y *yielder) wazero.Runtime {
	t.Helper()
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { rt.Close(ctx) })
	_, err := rt.NewHostModuleBuilder(meter.ImportModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(y.yield), nil, []api.ValueType{api.ValueTypeI32}).
		Export(meter.ImportName).
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	instantiate(t, rt, readTestdata(t, "env.wasm"), "env")
	return rt
}

func instantiate(t testing.TB, rt wazero.Runtime, bin []byte, name string) api.Module {
	t.Helper()
	m, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName(name))
	if err != nil {
		t.Fatalf("instantiate %s: %v", name, err)
	}
	return m
}

// pair is a testdata module instantiated as it is and instrumented, each
// in a runtime of its own.
type pair struct {
	orig, inst api.Module
	y          *yielder
}

func newPair(t *testing.T, file string, opts meter.Options) *pair {
	t.Helper()
	bin := readTestdata(t, file)
	out := instrument(t, bin, opts)
	fuel := opts.Fuel
	if fuel == 0 {
		fuel = meter.DefaultFuel
	}
	p := &pair{y: &yielder{fuel: fuel}}
	name := strings.TrimSuffix(file, ".wasm")
	p.orig = instantiate(t, newRuntime(t, wazero.NewRuntimeConfig(), &yielder{fuel: fuel}), bin, name)
	p.inst = instantiate(t, newRuntime(t, wazero.NewRuntimeConfig(), p.y), out, name)
	return p
}

// same calls fn on both modules, fails the test unless they return the
// same results or the same error, and returns the results.
func (p *pair) same(t *testing.T, fn string, args ...uint64) ([]uint64, error) {
	t.Helper()
	want, werr := call(p.orig, fn, args...)
	got, gerr := call(p.inst, fn, args...)
	if firstLine(werr) != firstLine(gerr) {
		t.Fatalf("%s%v: error %q, want %q", fn, args, firstLine(gerr), firstLine(werr))
	}
	def := p.orig.ExportedFunction(fn).Definition()
	if !sameResults(def.ResultTypes(), got, want) {
		t.Fatalf("%s%v = %v, want %v", fn, args, got, want)
	}
	return got, gerr
}

func call(m api.Module, fn string, args ...uint64) ([]uint64, error) {
	f := m.ExportedFunction(fn)
	if f == nil {
		return nil, errors.New("no function " + fn)
	}
	return f.Call(ctx, args...)
}

// sameResults compares results, taking any two NaNs of a float type as
// equal.
func sameResults(types []api.ValueType, got, want []uint64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] == want[i] || i < len(types) && bothNaN(types[i], got[i], want[i]) {
			continue
		}
		return false
	}
	return true
}

func bothNaN(vt api.ValueType, a, b uint64) bool {
	switch vt {
	case api.ValueTypeF32:
		return math.IsNaN(float64(api.DecodeF32(a))) && math.IsNaN(float64(api.DecodeF32(b)))
	case api.ValueTypeF64:
		return math.IsNaN(api.DecodeF64(a)) && math.IsNaN(api.DecodeF64(b))
	}
	return false
}

func firstLine(err error) string {
	if err == nil {
		return ""
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// A few helpers to assemble modules byte by byte.

func u32(v uint32) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func str(s string) []byte { return append(u32(uint32(len(s))), s...) }

func vec(items ...[]byte) []byte {
	return append(u32(uint32(len(items))), slices.Concat(items...)...)
}

func section(id byte, content ...[]byte) []byte {
	c := slices.Concat(content...)
	return slices.Concat([]byte{id}, u32(uint32(len(c))), c)
}

func module(sections ...[]byte) []byte {
	return slices.Concat(append([][]byte{{0, 'a', 's', 'm', 1, 0, 0, 0}}, sections...)...)
}

// oneFunction is a module with one exported function "f" of type
// () -> (), no locals, and the given instructions before its end.
func oneFunction(code ...byte) []byte {
	body := slices.Concat([]byte{0x00}, code, []byte{0x0b})
	return module(
		section(1, vec([]byte{0x60, 0x00, 0x00})),
		section(3, vec(u32(0))),
		section(7, vec(slices.Concat(str("f"), []byte{0x00}, u32(0)))),
		section(10, vec(append(u32(uint32(len(body))), body...))),
	)
}

// manyLocals is oneFunction with n i32 locals declared.
func manyLocals(n uint32) []byte {
	body := slices.Concat([]byte{0x01}, u32(n), []byte{0x7f, 0x0b})
	return module(
		section(1, vec([]byte{0x60, 0x00, 0x00})),
		section(3, vec(u32(0))),
		section(10, vec(append(u32(uint32(len(body))), body...))),
	)
}

// sections splits a module into its sections, for tests that look at the
// output's structure.
func sections(t testing.TB, bin []byte) (ids []byte, contents [][]byte) {
	t.Helper()
	for p := 8; p < len(bin); {
		id := bin[p]
		size, n := readU32(bin[p+1:])
		start := p + 1 + n
		ids = append(ids, id)
		contents = append(contents, bin[start:start+int(size)])
		p = start + int(size)
	}
	return ids, contents
}

func readU32(b []byte) (v uint32, n int) {
	for shift := 0; ; shift += 7 {
		c := b[n]
		n++
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v, n
		}
	}
}
