package wasm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Tests and benchmarks with real Go guests, built from the repository's
// plugin sources with pluginbuild (cached on disk by content hash, so only
// the first run pays for the builds).

// repoRoot is the module root, relative to this package.
var repoRoot = filepath.Join("..", "..", "..")

var goBuilds struct {
	sync.Mutex
	wasm map[string][]byte
}

// goPlugin builds the Go plugin in dir (relative to the repository root),
// once per test process. It skips the test when dir does not exist.
func goPlugin(t testing.TB, dir string) []byte {
	t.Helper()
	path := filepath.Join(repoRoot, dir)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("Go plugin %s is not in the tree: %v", dir, err)
	}
	goBuilds.Lock()
	defer goBuilds.Unlock()
	if b, ok := goBuilds.wasm[dir]; ok {
		return b
	}
	b, _, err := pluginbuild.Load(context.Background(), path, pluginbuild.Options{})
	if err != nil {
		t.Fatalf("building %s: %v", dir, err)
	}
	if goBuilds.wasm == nil {
		goBuilds.wasm = make(map[string][]byte)
	}
	goBuilds.wasm[dir] = b
	return b
}

var goRuntime struct {
	once sync.Once
	rt   *Runtime
	err  error
}

// sharedRuntime returns one Runtime for every Go-plugin test, with an
// on-disk compilation cache, since compiling a Go module takes seconds.
// It lives as long as the test process.
func sharedRuntime(t testing.TB) *Runtime {
	t.Helper()
	goRuntime.once.Do(func() {
		goRuntime.rt, goRuntime.err = NewRuntime(context.Background(), RuntimeOptions{
			CacheDir: pluginbuild.DefaultCacheDir(),
			Logger:   newLogCapture().logger(),
		})
	})
	if goRuntime.err != nil {
		t.Fatal(goRuntime.err)
	}
	return goRuntime.rt
}

func goConfig(t testing.TB, dir string, op abi.Op) PluginConfig {
	return PluginConfig{
		Operator: filepath.Base(dir),
		Path:     dir,
		Wasm:     goPlugin(t, dir),
		Op:       op,
	}
}

func TestGoIdentity(t *testing.T) {
	_, w := mustLoad(t, sharedRuntime(t), goConfig(t, "plugins/identity", abi.OpMap))
	for _, n := range []int{1, 64, 1000} {
		in := benchRecords(n, 100)
		in[0].Headers = []record.Header{{Key: "h", Value: []byte("v")}}
		in[n-1].Key = nil
		out := process(t, w, in)
		if len(out.Records) != n || len(out.Dead) != 0 {
			t.Fatalf("batch of %d: %d records, %d dead", n, len(out.Records), len(out.Dead))
		}
		for i, r := range out.Records {
			if !sameBytes(r.Value, in[i].Value) || r.Origin != in[i].Origin || len(r.Headers) != len(in[i].Headers) {
				t.Fatalf("batch of %d: record %d is not the kept input", n, i)
			}
		}
	}
}

// goCase is one conformance case: batches in, records and dead letters out.
type goCase struct {
	name     string
	dir      string
	op       abi.Op
	config   string
	batches  [][]string // "<key>=<value>" records
	want     [][]string // output values per batch
	wantDead []string   // reasons, in order, over all batches
}

func TestGoConformance(t *testing.T) {
	rt := sharedRuntime(t)
	tests := []goCase{
		{
			name:    "uppercase",
			dir:     "plugins/conformance/go/uppercase",
			op:      abi.OpMap,
			config:  `{"field":"name"}`,
			batches: [][]string{{`k={"name":"ada","x":1}`, `k={"x":1}`, `k={"name":"b\u00e9a"}`}},
			want:    [][]string{{`{"name":"ADA","x":1}`, `{"name":"BéA"}`}},
			wantDead: []string{
				"map error: missing field name",
			},
		},
		{
			name:    "words",
			dir:     "plugins/conformance/go/words",
			op:      abi.OpFlatMap,
			batches: [][]string{{"k=the quick\tfox", "k=", "k=  ", "k=jumps"}},
			want:    [][]string{{"the", "quick", "fox", "jumps"}},
		},
		{
			name:     "keep_even",
			dir:      "plugins/conformance/go/keep_even",
			op:       abi.OpFilter,
			batches:  [][]string{{`k={"n":2}`, `k={"n":3}`, `k={"n":"x"}`, `k={"n":-4}`}},
			want:     [][]string{{`{"n":2}`, `{"n":-4}`}},
			wantDead: []string{"filter error: field n is not an integer"},
		},
		{
			name:    "counter",
			dir:     "plugins/conformance/go/counter",
			op:      abi.OpMap,
			batches: [][]string{{"a=x", "a=x", "b=x"}, {"a=x"}},
			want: [][]string{
				{`{"key":"a","count":1}`, `{"key":"a","count":2}`, `{"key":"b","count":1}`},
				{`{"key":"a","count":3}`},
			},
		},
		{
			name:     "fail_on",
			dir:      "plugins/conformance/go/fail_on",
			op:       abi.OpMap,
			config:   `{"bad":"nope"}`,
			batches:  [][]string{{"k=a", "k=nope", "k=b"}},
			want:     [][]string{{"a", "b"}},
			wantDead: []string{"map error: bad input: nope"},
		},
		{
			name:     "trap_on",
			dir:      "plugins/conformance/go/trap_on",
			op:       abi.OpMap,
			config:   `{"trap":"die"}`,
			batches:  [][]string{{"k=a", "k=die", "k=b"}, {"k=c"}},
			want:     [][]string{{"a", "b"}, {"c"}},
			wantDead: []string{"exited with code 3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := goConfig(t, tt.dir, tt.op)
			cfg.InitConfig = []byte(tt.config)
			_, w := mustLoad(t, rt, cfg)
			var dead []string
			for i, b := range tt.batches {
				out := process(t, w, recs(b...))
				if got := values(out.Records); !equal(got, tt.want[i]) {
					t.Errorf("batch %d: got %q, want %q", i, got, tt.want[i])
				}
				for _, d := range out.Dead {
					dead = append(dead, d.Reason)
				}
			}
			if !equal(dead, tt.wantDead) {
				t.Errorf("dead letters %q, want %q", dead, tt.wantDead)
			}
			if s := w.Stats(); s.Restarts != s.Traps || s.Traps < s.Trapped {
				t.Errorf("stats = %+v", s)
			}
		})
	}
}

func TestGoWordsInherit(t *testing.T) {
	_, w := mustLoad(t, sharedRuntime(t), goConfig(t, "plugins/conformance/go/words", abi.OpFlatMap))
	in := recs("key=one two")
	out := process(t, w, in)
	if len(out.Records) != 2 {
		t.Fatalf("got %q", values(out.Records))
	}
	for _, r := range out.Records {
		if string(r.Key) != "key" || r.Timestamp != in[0].Timestamp || r.Origin != in[0].Origin ||
			fmt.Sprint(r.Headers) != fmt.Sprint(in[0].Headers) {
			t.Errorf("record %+v does not inherit from %+v", r, in[0])
		}
	}
}

// TestGoGCHook runs the Go identity plugin for a million single-record
// calls and checks that the instance's memory stays bounded. The host calls
// weir_gc every abi.GCEveryCalls calls so that the Go runtime can run its
// collector; TestGCHookWAT checks that cadence exactly. (The identity guest
// allocates nothing per call, so this test guards against leaks on the
// host-guest path more than it proves the hook necessary.)
func TestGoGCHook(t *testing.T) {
	if testing.Short() {
		t.Skip("a million calls; skipped with -short")
	}
	_, w := mustLoad(t, sharedRuntime(t), goConfig(t, "plugins/identity", abi.OpMap))
	in := benchRecords(1, 100)
	out := new(record.Output)
	ctx := context.Background()
	const calls = 1_000_000
	const limit = 64 << 20
	for i := 0; i < calls; i++ {
		out.Reset()
		if err := w.Process(ctx, in, out); err != nil {
			t.Fatal(err)
		}
		if i%100_000 == 0 {
			if size := w.inst.mem.Size(); size >= limit {
				t.Fatalf("after %d calls the guest's memory is %d MiB", i, size>>20)
			}
		}
	}
	size := w.inst.mem.Size()
	t.Logf("guest memory after %d calls: %.1f MiB", calls, float64(size)/(1<<20))
	if size >= limit {
		t.Fatalf("guest memory grew to %d MiB", size>>20)
	}
	if s := w.Stats(); s.Traps != 0 || s.Calls != calls {
		t.Errorf("stats = %+v", s)
	}
}

func BenchmarkIdentityGo(b *testing.B) {
	sandboxModes(b, func(b *testing.B, rt *Runtime) {
		_, w := mustLoad(b, rt, goConfig(b, "plugins/identity", abi.OpMap))
		for _, n := range benchBatchSizes {
			b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
				benchProcess(b, w, benchRecords(n, 100))
			})
		}
	})
}

// readings makes n sensor readings keyed by sensor id, as the
// sensor-anomaly example's key_by produces them; every 7th reading jumps.
func readings(n int) []record.Record {
	in := make([]record.Record, n)
	kinds := []string{"temp", "humidity", "pressure"}
	for i := range in {
		id := fmt.Sprint(100 + i%50)
		v := 20.0 + float64(i%5)*0.25
		if i%7 == 0 {
			v += 10
		}
		in[i] = record.Record{
			Key: []byte(id),
			Value: fmt.Appendf(nil, `{"id": "%s", "kind": "%s", "value": %.2f, "timestamp": %d}`,
				id, kinds[i%len(kinds)], v, 1722960137000+int64(i)),
			Timestamp: 1722960137000 + int64(i),
			Origin:    record.Origin{Source: "readings", Partition: -1, Offset: int64(i)},
		}
	}
	return in
}

func TestGoSeedFlatMap(t *testing.T) {
	cfg := goConfig(t, "examples/sensor-anomaly/plugins/anomaly", abi.OpFlatMap)
	cfg.InitConfig = []byte(`{"threshold": 1}`)
	cfg.Store = state.NewMemory()
	_, w := mustLoad(t, sharedRuntime(t), cfg)
	in := readings(3)
	in = append(in, in[0]) // the same reading again: no alert this time
	in[3].Value = bytes.Replace(in[3].Value, []byte("30.00"), []byte("30.50"), 1)
	out := process(t, w, in)
	var alerts int
	for _, r := range out.Records {
		if strings.Contains(string(r.Value), "Sensor offset alert!") {
			alerts++
		}
	}
	// Readings 0-2 are first of their kind for their sensor; reading 3 is
	// 0.5 from reading 0, under the threshold.
	if alerts != 0 || len(out.Records) != 4 || len(out.Dead) != 0 {
		t.Fatalf("got %q, dead %+v", values(out.Records), out.Dead)
	}
	in[3].Value = bytes.Replace(in[0].Value, []byte("30.00"), []byte("35.00"), 1)
	out = process(t, w, in[3:])
	if len(out.Records) != 2 || !strings.Contains(string(out.Records[0].Value), `"delta":4.5`) {
		t.Fatalf("got %q", values(out.Records))
	}
}

func BenchmarkSeedFlatMap(b *testing.B) {
	cfg := goConfig(b, "examples/sensor-anomaly/plugins/anomaly", abi.OpFlatMap)
	cfg.InitConfig = []byte(`{"threshold": 1}`)
	cfg.Store = state.NewMemory()
	_, w := mustLoad(b, sharedRuntime(b), cfg)
	for _, n := range benchBatchSizes {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			benchProcess(b, w, readings(n))
		})
	}
}

// BenchmarkTransformGo runs the uppercase conformance plugin on the "kind"
// field of sensor readings: a JSON field transform through the whole ABI
// path. Compare with BenchmarkTransformNative in
// plugins/conformance/go/uppercase, the same transform in native Go.
func BenchmarkTransformGo(b *testing.B) {
	sandboxModes(b, func(b *testing.B, rt *Runtime) {
		cfg := goConfig(b, "plugins/conformance/go/uppercase", abi.OpMap)
		cfg.InitConfig = []byte(`{"field":"kind"}`)
		_, w := mustLoad(b, rt, cfg)
		benchProcess(b, w, readings(512))
	})
}
