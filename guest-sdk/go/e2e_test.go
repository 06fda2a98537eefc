//go:build !wasip1

package weir_test

// End-to-end tests: build real plugins with the Go toolchain and run them
// under wazero behind a small stand-in for weir's host (ABI v1 only; the
// real host lives in host/internal/wasm). They are slow and skipped with
// -short.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/state"
)

var (
	buildDir  string
	buildOnce sync.Once
	builds    sync.Map // package dir -> *buildResult
	compCache = wazero.NewCompilationCache()
)

type buildResult struct {
	once sync.Once
	wasm []byte
	err  error
}

// buildPlugin builds the plugin in dir (relative to this package) once per
// test binary and returns the module bytes.
func buildPlugin(t testing.TB, dir string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: builds wasm plugins")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	buildOnce.Do(func() {
		buildDir, err = os.MkdirTemp("", "weir-e2e-")
	})
	if buildDir == "" {
		t.Fatalf("temp dir: %v", err)
	}
	v, _ := builds.LoadOrStore(dir, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		out := filepath.Join(buildDir, strings.NewReplacer("/", "_", ".", "_").Replace(dir)+".wasm")
		cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", dir, err, msg)
			return
		}
		b.wasm, b.err = os.ReadFile(out)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.wasm
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// plugin is one instance of a plugin module behind a minimal host.
type plugin struct {
	t       testing.TB
	ctx     context.Context
	rt      wazero.Runtime
	mod     api.Module
	alloc   api.Function
	gc      api.Function
	region  uint32 // the weir_alloc region and its size
	size    uint32
	store   map[string][]byte // state, by state.Key
	keys    [][]byte          // record keys of the batch being processed
	inBatch bool
	logs    []string
	stderr  bytes.Buffer
}

// newPlugin instantiates wasm and initialises it with config.
func newPlugin(t testing.TB, wasm []byte, config string) *plugin {
	t.Helper()
	ctx := context.Background()
	p := &plugin{t: t, ctx: ctx, store: map[string][]byte{}}
	p.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(compCache))
	t.Cleanup(func() { p.rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, p.rt)
	if _, err := p.rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithFunc(p.log).Export(abi.ImportLog).
		NewFunctionBuilder().WithFunc(p.stateGet).Export(abi.ImportStateGet).
		NewFunctionBuilder().WithFunc(p.statePut).Export(abi.ImportStatePut).
		NewFunctionBuilder().WithFunc(p.stateDelete).Export(abi.ImportStateDelete).
		Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := p.rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().
		WithStartFunctions(abi.ExportInitialize).WithStderr(&p.stderr).WithStdout(&p.stderr))
	if err != nil {
		t.Fatalf("instantiate: %v (stderr: %s)", err, p.stderr.String())
	}
	p.mod = mod
	for _, name := range []string{abi.ExportVersion, abi.ExportAlloc, abi.ExportInit, abi.ExportGC, abi.ExportMap, abi.ExportFlatMap, abi.ExportFilter} {
		if mod.ExportedFunction(name) == nil {
			t.Fatalf("module does not export %s", name)
		}
	}
	p.alloc, p.gc = mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportGC)
	if msg := p.init(config); msg != "" {
		t.Fatalf("%s: %s", abi.ExportInit, msg)
	}
	return p
}

func (p *plugin) mem() api.Memory { return p.mod.Memory() }

// write puts data into the weir_alloc region, growing it as the ABI says.
func (p *plugin) write(data []byte) uint32 {
	if uint32(len(data)) > p.size || p.region == 0 {
		res, err := p.alloc.Call(p.ctx, uint64(len(data)))
		if err != nil || res[0] == 0 {
			p.t.Fatalf("%s(%d) = %v, %v", abi.ExportAlloc, len(data), res, err)
		}
		p.region, p.size = uint32(res[0]), uint32(len(data))
	}
	if !p.mem().Write(p.region, data) {
		p.t.Fatalf("region %#x+%d outside memory", p.region, len(data))
	}
	return p.region
}

func (p *plugin) init(config string) string {
	ptr := p.write([]byte(config))
	res, err := p.mod.ExportedFunction(abi.ExportInit).Call(p.ctx, uint64(ptr), uint64(len(config)))
	if err != nil {
		p.t.Fatalf("%s: %v", abi.ExportInit, err)
	}
	mptr, n := abi.Unpack(res[0])
	msg, _ := p.mem().Read(mptr, n)
	return string(msg)
}

// in is an input record.
type in struct {
	key, value string
}

// call runs one batch through op and returns the output frame, copied out
// of guest memory, or the error of a dying instance.
func (p *plugin) call(op abi.Op, batch []in) ([]byte, error) {
	f := abi.AppendBatchHeader(nil, len(batch))
	p.keys = p.keys[:0]
	for _, r := range batch {
		f = abi.AppendRecord(f, 0, []byte(r.key), []byte(r.value), 0)
		p.keys = append(p.keys, []byte(r.key))
	}
	ptr := p.write(f)
	p.inBatch = true
	res, err := p.mod.ExportedFunction(op.Export()).Call(p.ctx, uint64(ptr), uint64(len(f)))
	p.inBatch = false
	if err != nil {
		return nil, err
	}
	optr, n := abi.Unpack(res[0])
	out, ok := p.mem().Read(optr, n)
	if !ok {
		p.t.Fatalf("output %#x+%d outside memory", optr, n)
	}
	return bytes.Clone(out), nil
}

// entry is a decoded output entry: an emitted record (keep resolved to the
// input) or an error.
type entry struct {
	index int
	rec   in
	err   string
}

func (p *plugin) run(op abi.Op, batch []in) []entry {
	p.t.Helper()
	out, err := p.call(op, batch)
	if err != nil {
		p.t.Fatalf("%v: %v (stderr: %s)", op, err, p.stderr.String())
	}
	var r abi.OutputReader
	if _, err := r.Reset(out); err != nil {
		p.t.Fatal(err)
	}
	var entries []entry
	prev := -1
	for {
		var e abi.Entry
		more, err := r.Next(&e)
		if err != nil {
			p.t.Fatal(err)
		}
		if !more {
			return entries
		}
		if msg := abi.CheckOrder(op, len(batch), prev, &e); msg != "" {
			p.t.Fatalf("output order: %s", msg)
		}
		prev = e.Index
		x := entry{index: e.Index, rec: batch[e.Index]}
		switch e.Kind {
		case abi.KindError:
			x.err = string(e.Message)
		case abi.KindRecord:
			if e.Flags&abi.FlagKey != 0 {
				x.rec.key = string(e.Key)
			}
			x.rec.value = string(e.Value)
		}
		entries = append(entries, x)
	}
}

// Host functions.

func (p *plugin) log(_ context.Context, m api.Module, level int32, ptr, n uint32) {
	b, _ := m.Memory().Read(ptr, n)
	p.logs = append(p.logs, fmt.Sprintf("%d:%s", level, b))
}

func (p *plugin) scope(m api.Module, index, kptr, klen uint32) ([]byte, int32) {
	if !p.inBatch {
		return nil, abi.StatusNoContext
	}
	if int(index) >= len(p.keys) {
		return nil, abi.StatusBadIndex
	}
	k, ok := m.Memory().Read(kptr, klen)
	if !ok {
		return nil, abi.StatusBadMemory
	}
	return state.Key(nil, "op", p.keys[index], k), abi.StatusOK
}

func (p *plugin) stateGet(_ context.Context, m api.Module, index, kptr, klen, vptr, vcap uint32) int32 {
	k, s := p.scope(m, index, kptr, klen)
	if s < 0 {
		return s
	}
	v, ok := p.store[string(k)]
	if !ok {
		return abi.StatusNotFound
	}
	if !m.Memory().Write(vptr, v[:min(len(v), int(vcap))]) {
		return abi.StatusBadMemory
	}
	return int32(len(v))
}

func (p *plugin) statePut(_ context.Context, m api.Module, index, kptr, klen, vptr, vlen uint32) int32 {
	k, s := p.scope(m, index, kptr, klen)
	if s < 0 {
		return s
	}
	v, ok := m.Memory().Read(vptr, vlen)
	if !ok {
		return abi.StatusBadMemory
	}
	p.store[string(k)] = bytes.Clone(v)
	return abi.StatusOK
}

func (p *plugin) stateDelete(_ context.Context, m api.Module, index, kptr, klen uint32) int32 {
	k, s := p.scope(m, index, kptr, klen)
	if s < 0 {
		return s
	}
	delete(p.store, string(k))
	return abi.StatusOK
}

// seedReadings are the test data of seed job 001 (sensor readings), each as
// the JSON object Python's json module would give the job, keyed by id as
// the job's key_by does.
var seedReadings = []in{
	{"123", `{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722960137000}`},
	{"456", `{"id": "456", "kind": "temp", "value": 91.2, "timestamp": 1722930000000}`},
	{"123", `{"id": "123", "kind": "temp", "value": 101.2, "timestamp": 1722920123901}`},
	{"456", `{"id": "456", "kind": "temp", "value": 38.5, "timestamp": 1722980000000}`},
	{"123", `{"id": "123", "kind": "temp", "value": 90.5, "timestamp": 1722970137908}`},
	{"789", `{"id": "789", "kind": "temp", "value": 55.1, "timestamp": 1722970137901}`},
	{"789", `{"id": "789", "kind": "temp", "value": 55.4, "timestamp": 1722960191904}`},
	{"789", `{"id": "789", "kind": "temp", "value": 50.99, "timestamp": 1722950115203}`},
}

// seedOutput is what seed job 001 prints.
const seedOutput = `id=123|kind=temp|value=90.5|timestamp=1722960137000
id=456|kind=temp|value=91.2|timestamp=1722930000000
id=123|value=101.2|message=Sensor offset alert!|delta=10.700000000000003
id=123|kind=temp|value=101.2|timestamp=1722920123901
id=456|value=38.5|message=Sensor offset alert!|delta=52.7
id=456|kind=temp|value=38.5|timestamp=1722980000000
id=123|value=90.5|message=Sensor offset alert!|delta=10.700000000000003
id=123|kind=temp|value=90.5|timestamp=1722970137908
id=789|kind=temp|value=55.1|timestamp=1722970137901
id=789|kind=temp|value=55.4|timestamp=1722960191904
id=789|value=50.99|message=Sensor offset alert!|delta=4.409999999999997
id=789|kind=temp|value=50.99|timestamp=1722950115203
`

func TestEndToEndSeed(t *testing.T) {
	anomalyWasm := buildPlugin(t, "../../examples/sensor-anomaly/plugins/anomaly")
	serializerWasm := buildPlugin(t, "../../examples/sensor-anomaly/plugins/serializer")
	tests := []struct {
		name      string
		batchSize int
	}{
		{"one batch", len(seedReadings)},
		{"batches of one", 1},
		{"batches of three", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			anomaly := newPlugin(t, anomalyWasm, `{"threshold": 1}`)
			serializer := newPlugin(t, serializerWasm, ``)
			var sb strings.Builder
			for start := 0; start < len(seedReadings); start += tc.batchSize {
				batch := seedReadings[start:min(start+tc.batchSize, len(seedReadings))]
				var mid []in
				for _, e := range anomaly.run(abi.OpFlatMap, batch) {
					if e.err != "" {
						t.Fatalf("anomaly rejected %q: %s", e.rec.value, e.err)
					}
					mid = append(mid, e.rec)
				}
				for _, e := range serializer.run(abi.OpMap, mid) {
					if e.err != "" {
						t.Fatalf("serializer rejected %q: %s", e.rec.value, e.err)
					}
					sb.WriteString(e.rec.value + "\n")
				}
			}
			if got := sb.String(); got != seedOutput {
				t.Errorf("output:\n%s\nwant:\n%s", got, seedOutput)
			}
		})
	}
}

func TestEndToEndInitError(t *testing.T) {
	wasm := buildPlugin(t, "../../examples/sensor-anomaly/plugins/anomaly")
	p := newPlugin(t, wasm, ``)
	if msg := p.init(`{"threshold": "high"}`); !strings.Contains(msg, "threshold") {
		t.Errorf("init with a bad threshold: %q", msg)
	}
	// A module without a flat_map function still answers the other calls.
	entries := p.run(abi.OpMap, []in{{"k", "v"}})
	if len(entries) != 1 || entries[0].err != "plugin has no map handler" {
		t.Errorf("map on a flat_map plugin: %+v", entries)
	}
}

// TestEndToEndGCHook makes about a million single-record map calls, calling
// weir_gc every abi.GCEveryCalls calls as the host does, and checks that the
// instance's memory stays small.
func TestEndToEndGCHook(t *testing.T) {
	const (
		calls    = 1_000_000
		maxBytes = 64 << 20
	)
	tests := []struct {
		name, dir string
	}{
		{"identity", "../../plugins/identity"},
		{"allocating 1KiB per call", "testdata/allocating"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, buildPlugin(t, tc.dir), ``)
			batch := abi.AppendRecord(abi.AppendBatchHeader(nil, 1), 0, nil, []byte(`{"n":1}`), 0)
			ptr := p.write(batch)
			fn := p.mod.ExportedFunction(abi.ExportMap)
			stack := make([]uint64, 2)
			start := time.Now()
			for i := 1; i <= calls; i++ {
				stack[0], stack[1] = uint64(ptr), uint64(len(batch))
				if err := fn.CallWithStack(p.ctx, stack); err != nil {
					t.Fatalf("call %d: %v (stderr %s)", i, err, p.stderr.String())
				}
				if i%abi.GCEveryCalls == 0 {
					if err := p.gc.CallWithStack(p.ctx, stack); err != nil {
						t.Fatalf("%s: %v", abi.ExportGC, err)
					}
				}
			}
			elapsed := time.Since(start)
			size := p.mem().Size()
			t.Logf("%d calls in %v (%v per call), memory %d MiB", calls, elapsed, elapsed/calls, size>>20)
			if size > maxBytes {
				t.Errorf("memory grew to %d MiB, want at most %d MiB", size>>20, maxBytes>>20)
			}
		})
	}
}

// conformanceCase is one row of plugins/conformance/README.md.
type conformanceCase struct {
	in   in
	want []string // emitted values; "error: msg" for a rejection, "error:" for any message
}

func TestEndToEndConformance(t *testing.T) {
	tests := []struct {
		name   string
		dir    string
		op     abi.Op
		config string
		cases  []conformanceCase
	}{
		{"uppercase", "../../plugins/conformance/go/uppercase", abi.OpMap, ``, []conformanceCase{
			{in{"", `{"name":"ada","n":1}`}, []string{`{"name":"ADA","n":1}`}},
			{in{"", `{ "id" : 7 , "name" : "Grace Hopper" }`}, []string{`{ "id" : 7 , "name" : "GRACE HOPPER" }`}},
			{in{"", `{"name":"caf\u00e9 \"x\""}`}, []string{`{"name":"CAFé \"X\""}`}},
			{in{"", `{"name":"a","name":"b"}`}, []string{`{"name":"a","name":"B"}`}},
			{in{"", `{"name":"tab\there"}`}, []string{`{"name":"TAB\tHERE"}`}},
			{in{"", `{"n":1}`}, []string{"error: missing field name"}},
			{in{"", `[1,2]`}, []string{"error: missing field name"}},
			{in{"", `{"name":5}`}, []string{"error: field name is not a string"}},
			{in{"", `not json`}, []string{"error:"}},
		}},
		{"uppercase configured", "../../plugins/conformance/go/uppercase", abi.OpMap, `{"field":"city"}`, []conformanceCase{
			{in{"", `{"name":"ada","city":"london"}`}, []string{`{"name":"ada","city":"LONDON"}`}},
			{in{"", `{"name":"ada"}`}, []string{"error: missing field city"}},
		}},
		{"words", "../../plugins/conformance/go/words", abi.OpFlatMap, ``, []conformanceCase{
			{in{"k", "the quick  brown\tfox\n"}, []string{"the", "quick", "brown", "fox"}},
			{in{"k", "one"}, []string{"one"}},
			{in{"k", " \r\n\v\f "}, nil},
			{in{"k", ""}, nil},
			{in{"k", "non\u00a0breaking"}, []string{"non\u00a0breaking"}},
		}},
		{"keep_even", "../../plugins/conformance/go/keep_even", abi.OpFilter, ``, []conformanceCase{
			{in{"", `{"n":4}`}, []string{`{"n":4}`}},
			{in{"", `{"n":-2,"x":1}`}, []string{`{"n":-2,"x":1}`}},
			{in{"", `{"n":0}`}, []string{`{"n":0}`}},
			{in{"", `{"n":3}`}, nil},
			{in{"", `{"n":4.0}`}, []string{"error: field n is not an integer"}},
			{in{"", `{"n":"4"}`}, []string{"error: field n is not an integer"}},
			{in{"", `{"n":99999999999999999999}`}, []string{"error: field n is not an integer"}},
			{in{"", `{"m":4}`}, []string{"error: missing field n"}},
			{in{"", `{"n":`}, []string{"error:"}},
		}},
		{"counter", "../../plugins/conformance/go/counter", abi.OpMap, ``, []conformanceCase{
			{in{"a", "x"}, []string{`{"key":"a","count":1}`}},
			{in{"b", "x"}, []string{`{"key":"b","count":1}`}},
			{in{"a", "y"}, []string{`{"key":"a","count":2}`}},
			{in{"a", "z"}, []string{`{"key":"a","count":3}`}},
			{in{"q\"", "z"}, []string{`{"key":"q\"","count":1}`}},
		}},
		{"fail_on", "../../plugins/conformance/go/fail_on", abi.OpMap, ``, []conformanceCase{
			{in{"", "good"}, []string{"good"}},
			{in{"", "bad"}, []string{"error: bad input: bad"}},
			{in{"", "bad "}, []string{"bad "}},
		}},
		{"fail_on configured", "../../plugins/conformance/go/fail_on", abi.OpMap, `{"bad":"oops"}`, []conformanceCase{
			{in{"", "bad"}, []string{"bad"}},
			{in{"", "oops"}, []string{"error: bad input: oops"}},
		}},
		{"trap_on passes other values", "../../plugins/conformance/go/trap_on", abi.OpMap, ``, []conformanceCase{
			{in{"", "fine"}, []string{"fine"}},
			{in{"", "trap "}, []string{"trap "}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, buildPlugin(t, tc.dir), tc.config)
			// The whole table as one batch, then each row alone (on a fresh
			// instance, since state persists).
			batch := make([]in, len(tc.cases))
			for i, c := range tc.cases {
				batch[i] = c.in
			}
			got := make([][]string, len(batch))
			for _, e := range p.run(tc.op, batch) {
				if e.err != "" {
					got[e.index] = append(got[e.index], "error: "+e.err)
				} else {
					got[e.index] = append(got[e.index], e.rec.value)
				}
			}
			for i, c := range tc.cases {
				if !matches(got[i], c.want) {
					t.Errorf("input %q: got %q, want %q", c.in.value, got[i], c.want)
				}
			}
		})
	}
}

func matches(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if want[i] == "error:" && strings.HasPrefix(got[i], "error: ") {
			continue
		}
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestEndToEndTrap(t *testing.T) {
	tests := []struct {
		name, config, value string
	}{
		{"default", ``, "trap"},
		{"configured", `{"trap":"boom"}`, "boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, buildPlugin(t, "../../plugins/conformance/go/trap_on"), tc.config)
			_, err := p.call(abi.OpMap, []in{{"", "ok"}, {"", tc.value}, {"", "never"}})
			var exit *sys.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 3 {
				t.Fatalf("call error = %v, want exit code 3", err)
			}
			if _, err := p.call(abi.OpMap, []in{{"", "ok"}}); err == nil {
				t.Error("the instance still answers after exiting")
			}
		})
	}
}

func TestEndToEndMalformedCall(t *testing.T) {
	wasm := buildPlugin(t, "../../plugins/identity")
	tests := []struct {
		name   string
		call   func(p *plugin) error
		stderr string
	}{
		{"truncated frame", func(p *plugin) error {
			f := abi.AppendRecord(abi.AppendBatchHeader(nil, 2), 0, nil, []byte("v"), 0)
			ptr := p.write(f)
			_, err := p.mod.ExportedFunction(abi.ExportMap).Call(p.ctx, uint64(ptr), uint64(len(f)))
			return err
		}, "malformed frame"},
		{"input outside the region", func(p *plugin) error {
			ptr := p.write([]byte{0, 0, 0, 0})
			_, err := p.mod.ExportedFunction(abi.ExportMap).Call(p.ctx, uint64(ptr)+uint64(p.size)+1<<20, 4)
			return err
		}, "outside the weir_alloc region"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, wasm, ``)
			// The SDK panics; unrecovered, the Go runtime prints the panic and
			// aborts with an unreachable trap.
			if err := tc.call(p); err == nil || !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("call error = %v, want a trap", err)
			}
			if !strings.Contains(p.stderr.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", p.stderr.String(), tc.stderr)
			}
		})
	}
}

// BenchmarkEndToEndIdentity measures a whole batch call of the identity
// plugin under wazero, per record.
func BenchmarkEndToEndIdentity(b *testing.B) {
	wasm := buildPlugin(b, "../../plugins/identity")
	for _, n := range []int{1, 64, 1024} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			p := newPlugin(b, wasm, ``)
			f := abi.AppendBatchHeader(nil, n)
			for range n {
				f = abi.AppendRecord(f, 0, []byte("sensor-123"), []byte(seedReadings[0].value), 0)
			}
			ptr := p.write(f)
			fn := p.mod.ExportedFunction(abi.ExportMap)
			stack := make([]uint64, 2)
			calls := 0
			b.ResetTimer()
			for b.Loop() {
				stack[0], stack[1] = uint64(ptr), uint64(len(f))
				if err := fn.CallWithStack(p.ctx, stack); err != nil {
					b.Fatal(err)
				}
				if calls++; calls%abi.GCEveryCalls == 0 {
					p.gc.CallWithStack(p.ctx, stack)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

// BenchmarkEndToEndSeed runs the seed job's two plugins on batches of the
// eight seed readings.
func BenchmarkEndToEndSeed(b *testing.B) {
	anomaly := newPlugin(b, buildPlugin(b, "../../examples/sensor-anomaly/plugins/anomaly"), `{"threshold": 1}`)
	serializer := newPlugin(b, buildPlugin(b, "../../examples/sensor-anomaly/plugins/serializer"), ``)
	calls := 0
	for b.Loop() {
		out := anomaly.run(abi.OpFlatMap, seedReadings)
		mid := make([]in, len(out))
		for i, e := range out {
			mid[i] = e.rec
		}
		serializer.run(abi.OpMap, mid)
		if calls++; calls%abi.GCEveryCalls == 0 {
			anomaly.gc.Call(anomaly.ctx)
			serializer.gc.Call(serializer.ctx)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seedReadings)), "ns/reading")
}
