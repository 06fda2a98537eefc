package meter_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/weir-stream/weir/host/internal/meter"
)

type callCase struct {
	fn   string
	args []uint64
}

func calls(fn string, args ...uint64) callCase { return callCase{fn, args} }

// Sequences of calls on each testdata module; later calls see the state
// earlier ones left.
var testdataCalls = map[string][]callCase{
	"loops.wasm": {
		calls("count", 0), calls("count", 1), calls("count", 5000),
		calls("nested", 0, 0), calls("nested", 3, 4), calls("nested", 50, 60),
		calls("fib", 0), calls("fib", 1), calls("fib", 15),
		calls("fill", 65536, 3), calls("sum", 0), calls("sum", 1000), calls("sum", 65536),
		calls("sum", 65537), // out of bounds
	},
	"calls.wasm": {
		calls("started"),
		calls("apply", 0, 7, 5), calls("apply", 1, 7, 5), calls("apply", 2, 7, 5),
		calls("apply", 3, 7, 5), calls("apply", 100, 7, 5), // null entry, out of bounds
		calls("via_ref", 9, 4), calls("via_global", 6, 7), calls("apply", 5, 1, 2),
		calls("direct", 20), calls("trap"), calls("add", 2, 3), calls("twice_again", 21),
	},
	"elems.wasm": append(append(
		tableReads(), calls("init")), append(tableReads(), calls("declared"))...),
	"multivalue.wasm": {
		calls("swap", 1, 2), calls("block_params", 10, 3), calls("loop_params", 100),
		calls("classify", 0), calls("classify", 1), calls("classify", 2),
		calls("classify", 3), calls("classify", 4), calls("classify", 1<<31),
		calls("if_params", 1, 5, 3), calls("if_params", 0, 5, 3),
		calls("table_loop", 0), calls("table_loop", 5), calls("table_loop", 10),
	},
	"simd.wasm": {
		calls("dot"), calls("shuffle"), calls("lanes"), calls("vector_sum", 1000), calls("floats"),
	},
	"bulk.wasm": {
		calls("bulk"), calls("tables"), calls("init_dropped"),
		calls("sat", api.EncodeF64(1e20)), calls("sat", api.EncodeF64(math.NaN())),
		calls("sat64", api.EncodeF32(-5)), calls("signext", 0x80), calls("signext64", 0x80000000),
		calls("grow"), calls("grow"),
	},
}

func tableReads() (cs []callCase) {
	for i := uint64(0); i < 11; i++ {
		cs = append(cs, calls("get0", i), calls("get1", i))
	}
	return cs
}

// Options that place checks sparsely, by default, and as densely as can be.
var optionSets = map[string]meter.Options{
	"defaults":    {},
	"every":       {Fuel: 1, MaxStraight: 1},
	"fuel3_line2": {Fuel: 3, MaxStraight: 2},
}

// TestSameResults runs every testdata function on the module as it is and
// instrumented, and wants the same results and traps.
func TestSameResults(t *testing.T) {
	for optName, opts := range optionSets {
		for file, cases := range testdataCalls {
			t.Run(optName+"/"+file, func(t *testing.T) {
				p := newPair(t, file, opts)
				for _, c := range cases {
					p.same(t, c.fn, c.args...)
				}
			})
		}
	}
}

// TestSpinStopsAtYield: an infinite loop keeps calling yield, and a panic
// in yield ends the call with that panic as its error.
func TestSpinStopsAtYield(t *testing.T) {
	y := &yielder{fuel: 100, stopAt: 5}
	rt := newRuntime(t, wazero.NewRuntimeConfig(), y)
	m := instantiate(t, rt, instrument(t, readTestdata(t, "loops.wasm"), meter.Options{Fuel: 100}), "loops")
	_, err := m.ExportedFunction("spin").Call(ctx)
	if !errors.Is(err, errStopped) {
		t.Fatalf("spin: %v, want %v", err, errStopped)
	}
	if y.calls != 5 {
		t.Fatalf("yield called %d times, want 5", y.calls)
	}
	if !strings.Contains(err.Error(), meter.ImportModule+"."+meter.ImportName) {
		t.Errorf("stack trace does not show yield:\n%v", err)
	}
}

// TestYieldEveryFuelChecks counts yields exactly: one check per function
// entry and per loop header run, and a yield at check Fuel, 2*Fuel...
func TestYieldEveryFuelChecks(t *testing.T) {
	callsOfFib := func(n int) int {
		a, b := 1, 1 // calls of fib(0), fib(1)
		for i := 2; i <= n; i++ {
			a, b = b, 1+a+b
		}
		if n == 0 {
			return a
		}
		return b
	}
	tests := []struct {
		name   string
		fuel   int32
		fn     string
		args   []uint64
		checks int // checks the call runs
	}{
		{"count 0", 1, "count", []uint64{0}, 2},
		{"count 10000 by 100", 100, "count", []uint64{10000}, 10002},
		{"count 97 by 100", 100, "count", []uint64{97}, 99},
		{"count 98 by 100", 100, "count", []uint64{98}, 100},
		{"count default fuel", 0, "count", []uint64{1 << 20}, 1<<20 + 2},
		{"nested 7x9", 1, "nested", []uint64{7, 9}, 1 + 8 + 7*10},
		{"nested 30x40 by 7", 7, "nested", []uint64{30, 40}, 1 + 31 + 30*41},
		{"fib 20", 1, "fib", []uint64{20}, callsOfFib(20)},
		{"fib 20 by 1000", 1000, "fib", []uint64{20}, callsOfFib(20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, "loops.wasm", meter.Options{Fuel: tt.fuel})
			p.same(t, tt.fn, tt.args...)
			fuel := int(p.y.fuel)
			if want := tt.checks / fuel; p.y.calls != want {
				t.Errorf("yield called %d times, want %d (%d checks, fuel %d)", p.y.calls, want, tt.checks, fuel)
			}
		})
	}
}

// TestStraightLine counts the checks of an exported function of n nops:
// one at the entry, and one before every MaxStraight instructions after
// it (the end counts as one). With a fuel of 1, each check yields.
func TestStraightLine(t *testing.T) {
	tests := []struct {
		nops, maxStraight, checks int
	}{
		{0, 0, 1}, {999, 0, 1}, {1000, 0, 2}, {2500, 0, 3},
		{0, 1, 1}, {1, 1, 2}, {10, 1, 11}, {10, 3, 4}, {12, 3, 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d nops by %d", tt.nops, tt.maxStraight), func(t *testing.T) {
			code := bytes.Repeat([]byte{0x01}, tt.nops)
			y := &yielder{fuel: 1}
			rt := newRuntime(t, wazero.NewRuntimeConfig(), y)
			out := instrument(t, oneFunction(code...), meter.Options{Fuel: 1, MaxStraight: tt.maxStraight})
			if _, err := call(instantiate(t, rt, out, ""), "f"); err != nil {
				t.Fatal(err)
			}
			if y.calls != tt.checks {
				t.Errorf("%d checks, want %d", y.calls, tt.checks)
			}
		})
	}
}

// TestStackTraceNames: the name section, renumbered, still names the
// functions of a trap's stack trace.
func TestStackTraceNames(t *testing.T) {
	p := newPair(t, "calls.wasm", meter.Options{})
	_, want := call(p.orig, "trap")
	_, got := call(p.inst, "trap")
	if got == nil || got.Error() != want.Error() {
		t.Fatalf("trap error:\n%v\nwant:\n%v", got, want)
	}
	for _, fn := range []string{"calls.boom()", "calls.middle()"} {
		if !strings.Contains(got.Error(), fn) {
			t.Errorf("stack trace lacks %s:\n%v", fn, got)
		}
	}
}

// TestStartAndImports: the start function, moved up by one, runs at
// instantiation and calls an import, whose index does not move.
func TestStartAndImports(t *testing.T) {
	y := &yielder{fuel: 1}
	rt := newRuntime(t, wazero.NewRuntimeConfig(), y)
	m := instantiate(t, rt, instrument(t, readTestdata(t, "calls.wasm"), meter.Options{Fuel: 1}), "calls")
	if got := rt.Module("env").ExportedGlobal("noted").Get(); got != 142 {
		t.Errorf("start function noted %d, want 142", got)
	}
	if got, err := call(m, "started"); err != nil || got[0] != 142 {
		t.Errorf("started() = %v, %v; want 142", got, err)
	}
	if y.calls == 0 {
		t.Error("the start function did not check its fuel")
	}
}

// TestExportsAndImports compares the function definitions wazero reads from
// the module as it is and instrumented: yield is the last import, exports
// keep their names and function names, and move up by one unless they
// re-export an import.
func TestExportsAndImports(t *testing.T) {
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for file := range testdataCalls {
		bin := readTestdata(t, file)
		orig, err := rt.CompileModule(ctx, bin)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := rt.CompileModule(ctx, instrument(t, bin, meter.Options{}))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		imports := inst.ImportedFunctions()
		k := uint32(len(orig.ImportedFunctions()))
		if len(imports) != int(k)+1 {
			t.Fatalf("%s: %d imports, want %d", file, len(imports), k+1)
		}
		mod, name, _ := imports[k].Import()
		if mod != meter.ImportModule || name != meter.ImportName || imports[k].Index() != k ||
			len(imports[k].ParamTypes()) != 0 || !slices.Equal(imports[k].ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
			t.Errorf("%s: import %d is %s.%s %v -> %v", file, k, mod, name, imports[k].ParamTypes(), imports[k].ResultTypes())
		}
		for export, want := range orig.ExportedFunctions() {
			got := inst.ExportedFunctions()[export]
			wantIndex := want.Index()
			if wantIndex >= k {
				wantIndex++
			}
			if got == nil || got.Index() != wantIndex || got.Name() != want.Name() ||
				want.Name() != "" && got.DebugName() != want.DebugName() {
				t.Errorf("%s: export %s is %v, want index %d name %q", file, export, got, wantIndex, want.Name())
			}
		}
	}
}

// TestNewSections: a module without sections gets the type, import and
// global sections, in order, exactly as the rewrite describes them.
func TestNewSections(t *testing.T) {
	out := instrument(t, readTestdata(t, "empty.wasm"), meter.Options{Fuel: 5})
	ids, contents := sections(t, out)
	want := [][]byte{
		{1, 0x60, 0x00, 0x01, 0x7f},
		slices.Concat([]byte{1}, str(meter.ImportModule), str(meter.ImportName), []byte{0x00, 0x00}),
		{1, 0x7f, 0x01, 0x41, 0x05, 0x0b},
	}
	if !bytes.Equal(ids, []byte{1, 2, 6}) || !slices.EqualFunc(contents, want, bytes.Equal) {
		t.Fatalf("sections %v %x, want [1 2 6] %x", ids, contents, want)
	}
	rt := newRuntime(t, wazero.NewRuntimeConfig(), &yielder{fuel: 1})
	instantiate(t, rt, out, "empty")
}

// TestCheckBytes looks at the exact output for a one-function module whose
// type () -> (i32) yield reuses.
func TestCheckBytes(t *testing.T) {
	bin := readTestdata(t, "tiny.wasm")
	out := instrument(t, bin, meter.Options{})
	inIDs, inContents := sections(t, bin)
	ids, contents := sections(t, out)
	if !bytes.Equal(ids, []byte{1, 2, 3, 6, 7, 10}) || !bytes.Equal(inIDs, []byte{1, 3, 7, 10}) {
		t.Fatalf("sections %v from %v", ids, inIDs)
	}
	// The exported function keeps its entry check.
	body := slices.Concat([]byte{0x00}, check, []byte{0x41, 42, 0x0b})
	want := [][]byte{
		inContents[0], // the type () -> (i32) is reused
		slices.Concat([]byte{1}, str(meter.ImportModule), str(meter.ImportName), []byte{0x00, 0x00}),
		inContents[1],
		{1, 0x7f, 0x01, 0x41, 0x80, 0x80, 0x04, 0x0b}, // i32.const 65536
		slices.Concat([]byte{1}, str("answer"), []byte{0x00, 0x01}),
		slices.Concat([]byte{1}, u32(uint32(len(body))), body),
	}
	for i := range want {
		if !bytes.Equal(contents[i], want[i]) {
			t.Errorf("section %d: %x, want %x", ids[i], contents[i], want[i])
		}
	}
}

func customSection(name string, data string) []byte {
	return section(0, str(name), []byte(data))
}

// TestCustomSections: sections about code offsets are dropped, others kept
// as they were.
func TestCustomSections(t *testing.T) {
	bin := slices.Concat(readTestdata(t, "tiny.wasm"),
		customSection(".debug_info", "\x01\x02"),
		customSection("producers", "\x01\x08language\x01\x03WAT\x00"),
		customSection(".debug_line", "\x03"),
		customSection("sourceMappingURL", "\x08main.map"),
		customSection("external_debug_info", "\x05x.dwp"))
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCustomSections(true))
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, instrument(t, bin, meter.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range m.CustomSections() {
		got = append(got, c.Name()+"="+string(c.Data()))
	}
	want := []string{"producers=\x01\x08language\x01\x03WAT\x00", "external_debug_info=\x05x.dwp"}
	if !slices.Equal(got, want) {
		t.Errorf("custom sections %q, want %q", got, want)
	}
}

// moveNameSection returns bin with its name section moved to the front.
func moveNameSection(t *testing.T, bin []byte) []byte {
	ids, contents := sections(t, bin)
	var names, rest [][]byte
	for i, id := range ids {
		s := section(id, contents[i])
		if id == 0 && bytes.HasPrefix(contents[i], str("name")) {
			names = append(names, s)
		} else {
			rest = append(rest, s)
		}
	}
	if len(names) != 1 {
		t.Fatalf("%d name sections", len(names))
	}
	return module(append(names, rest...)...)
}

// TestNameSectionFirst: a name section before the imports is renumbered
// too.
func TestNameSectionFirst(t *testing.T) {
	bin := moveNameSection(t, readTestdata(t, "calls.wasm"))
	y := &yielder{fuel: 1}
	orig := instantiate(t, newRuntime(t, wazero.NewRuntimeConfig(), y), bin, "calls")
	inst := instantiate(t, newRuntime(t, wazero.NewRuntimeConfig(), y), instrument(t, bin, meter.Options{}), "calls")
	_, want := call(orig, "trap")
	_, got := call(inst, "trap")
	if got == nil || got.Error() != want.Error() || !strings.Contains(got.Error(), "calls.boom()") {
		t.Fatalf("trap error:\n%v\nwant:\n%v", got, want)
	}
}

// TestMalformedNameSection: a name section that does not decode is
// dropped, as engines ignore it; the rest is instrumented.
func TestMalformedNameSection(t *testing.T) {
	tiny := readTestdata(t, "tiny.wasm")
	for name, names := range map[string][]byte{
		"bad subsection size": section(0, str("name"), []byte{1, 9, 1, 0}),
		"bad name length":     section(0, str("name"), []byte{1, 4, 1, 0, 9, 'x'}),
		"index out of range":  section(0, str("name"), slices.Concat([]byte{1, 8, 1}, u32(math.MaxUint32), str("f"))),
	} {
		t.Run(name, func(t *testing.T) {
			out := instrument(t, slices.Concat(tiny, names), meter.Options{})
			ids, _ := sections(t, out)
			if !bytes.Equal(ids, []byte{1, 2, 3, 6, 7, 10}) {
				t.Errorf("sections %v: the name section was kept", ids)
			}
		})
	}
}

// TestErrors: malformed modules, modules already instrumented, and opcodes
// outside CoreFeaturesV2 are refused, with the function and offset.
func TestErrors(t *testing.T) {
	tiny := readTestdata(t, "tiny.wasm")
	instrumented := instrument(t, tiny, meter.Options{})
	tests := []struct {
		name string
		bin  []byte
		opts meter.Options
		want string
	}{
		{"empty input", nil, meter.Options{}, "not a WebAssembly 1.0 binary"},
		{"bad magic", []byte("\x00asn\x01\x00\x00\x00"), meter.Options{}, "not a WebAssembly 1.0 binary"},
		{"truncated section", tiny[:len(tiny)-1], meter.Options{}, "truncated"},
		{"unknown section", module(section(14)), meter.Options{}, "unknown section"},
		{"sections out of order", module(section(3, vec()), section(1, vec())), meter.Options{}, "out of order"},
		{"more functions than bytes", module(section(3, u32(1<<30))), meter.Options{}, "section id 3 at offset 0x8: truncated"},
		{"more data segments than bytes", module(section(11, u32(1<<30))), meter.Options{}, "section id 11 at offset 0x8: truncated"},
		{"tag section", module(section(13, vec())), meter.Options{}, "exception handling"},
		{"instrumented twice", instrumented, meter.Options{}, "already imports from weir_sandbox"},
		{"negative fuel", tiny, meter.Options{Fuel: -1}, "negative"},
		{"atomics", oneFunction(0xfe, 0x03, 0x00), meter.Options{}, "function 0: opcode 0xfe is not in CoreFeaturesV2"},
		{"return_call", oneFunction(0x12, 0x00), meter.Options{}, "function 0: opcode 0x12 is not"},
		{"try_table", oneFunction(0x1f, 0x40, 0x00, 0x0b), meter.Options{}, "function 0: opcode 0x1f is not"},
		{"unassigned SIMD", oneFunction(0xfd, 0x9a, 0x01), meter.Options{}, "opcode 0xfd 154 is not"},
		{"relaxed SIMD", oneFunction(0xfd, 0x80, 0x02), meter.Options{}, "opcode 0xfd 256 is not"},
		{"unknown 0xfc", oneFunction(0xfc, 0x12), meter.Options{}, "opcode 0xfc 18 is not"},
		{"else outside if", oneFunction(0x05), meter.Options{}, "function 0: else outside an if"},
		{"unknown label", oneFunction(0x0c, 0x01), meter.Options{}, "function 0: branch to an unknown label"},
		{"no end", oneFunction(0x02, 0x40), meter.Options{}, "function 0: truncated"},
		{"bytes after end", oneFunction(0x0b, 0x01), meter.Options{}, "function 0: bytes after the end"},
		{"bad LEB128", oneFunction(0x20, 0xff, 0xff, 0xff, 0xff, 0x7f), meter.Options{}, "malformed LEB128"},
		{"billions of locals", manyLocals(1 << 31), meter.Options{}, "function 0: more than 50000 locals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := meter.Instrument(tt.bin, tt.opts)
			if err == nil || out != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Instrument: %v, want an error with %q", err, tt.want)
			}
			if strings.Contains(tt.want, "function 0") && !strings.Contains(err.Error(), "at offset 0x") {
				t.Errorf("%v: no offset", err)
			}
		})
	}
	// The offset is the opcode's, in bin.
	code := []byte{0xfe, 0x03, 0x00}
	bin := oneFunction(code...)
	_, err := meter.Instrument(bin, meter.Options{})
	if want := fmt.Sprintf("at offset %#x", len(bin)-len(code)-1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v: want %q", err, want)
	}
}

// TestConcurrentInstrument: Instrument keeps no state between calls (run
// with -race).
func TestConcurrentInstrument(t *testing.T) {
	bin := readTestdata(t, "calls.wasm")
	want := instrument(t, bin, meter.Options{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if got, err := meter.Instrument(bin, meter.Options{}); err != nil || !bytes.Equal(got, want) {
					t.Errorf("concurrent Instrument differs: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
