package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
)

func TestLoadRejects(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name   string
		cfg    func(t *testing.T) PluginConfig
		kind   error
		wantIn []string // substrings of the error message
	}{
		{
			name: "not wasm",
			cfg: func(t *testing.T) PluginConfig {
				return PluginConfig{Operator: "detect", Path: "plugins/x.wasm", Wasm: []byte("#!/bin/sh\necho hi\n"), Op: abi.OpMap}
			},
			kind:   ErrInvalidModule,
			wantIn: []string{`operator "detect" (plugins/x.wasm): not a WebAssembly module`},
		},
		{
			name: "empty file",
			cfg: func(t *testing.T) PluginConfig {
				return PluginConfig{Operator: "detect", Path: "plugins/x.wasm", Op: abi.OpMap}
			},
			kind:   ErrInvalidModule,
			wantIn: []string{"the file is empty"},
		},
		{
			name: "wasm binary version 2",
			cfg: func(t *testing.T) PluginConfig {
				return PluginConfig{Operator: "detect", Wasm: []byte("\x00asm\x02\x00\x00\x00"), Op: abi.OpMap}
			},
			kind:   ErrInvalidModule,
			wantIn: []string{"binary format version 2"},
		},
		{
			name: "corrupt wasm",
			cfg: func(t *testing.T) PluginConfig {
				b := testdata(t, "identity")
				return PluginConfig{Operator: "detect", Wasm: b[:len(b)/2], Op: abi.OpMap}
			},
			kind:   ErrInvalidModule,
			wantIn: []string{"invalid WebAssembly"},
		},
		{
			name: "missing version export",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "no_version")
				c.Operator, c.Path = "detect", "plugins/x.wasm"
				return c
			},
			kind:   ErrInvalidModule,
			wantIn: []string{`operator "detect" (plugins/x.wasm): not a weir ABI v1 module: missing export ` + abi.ExportVersion},
		},
		{
			name:   "other ABI version",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "abi_v2") },
			kind:   ErrABIVersion,
			wantIn: []string{"speaks weir ABI v2; this weir supports v1"},
		},
		{
			name:   "missing alloc",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "no_alloc") },
			kind:   ErrInvalidModule,
			wantIn: []string{"missing export " + abi.ExportAlloc},
		},
		{
			name:   "missing init",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "no_init") },
			kind:   ErrInvalidModule,
			wantIn: []string{"missing export " + abi.ExportInit},
		},
		{
			name:   "missing op export",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "filter_only") },
			kind:   ErrInvalidModule,
			wantIn: []string{"not a valid weir ABI v1 map plugin: the plugin implements filter, not map (missing export " + abi.ExportMap + ")"},
		},
		{
			name:   "wrong weir_ops signature",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "ops_bad_signature") },
			kind:   ErrInvalidModule,
			wantIn: []string{"export " + abi.ExportOps + " has type (i32) -> (i32), want () -> (i32)"},
		},
		{
			name: "wrong export signatures",
			cfg:  func(t *testing.T) PluginConfig { return watConfig(t, "bad_signature") },
			kind: ErrInvalidModule,
			wantIn: []string{
				"export " + abi.ExportGC + " has type (i32) -> (), want () -> ()",
				"export " + abi.ExportMap + " has type (i32) -> (i32), want (i32, i32) -> (i64)",
			},
		},
		{
			name:   "unknown weir import",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "unknown_import") },
			kind:   ErrInvalidModule,
			wantIn: []string{"imports " + abi.ImportModule + ".teleport, which is not a weir ABI v1 host function"},
		},
		{
			name:   "weir import with the wrong signature",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "bad_import_signature") },
			kind:   ErrInvalidModule,
			wantIn: []string{"imports " + abi.ImportModule + "." + abi.ImportLog + " with type (i32, i32) -> (), want (i32, i32, i32) -> ()"},
		},
		{
			name: "imports from other modules",
			cfg:  func(t *testing.T) PluginConfig { return watConfig(t, "foreign_import") },
			kind: ErrInvalidModule,
			wantIn: []string{
				"imports env.memcpy, which weir does not provide (of module env it provides only abort)",
				`imports js.now from module "js", which weir does not provide`,
			},
		},
		{
			name:   "imported memory",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "import_memory") },
			kind:   ErrInvalidModule,
			wantIn: []string{"imports memory env.memory; a plugin must define its own memory"},
		},
		{
			name:   "no memory",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "no_memory") },
			kind:   ErrInvalidModule,
			wantIn: []string{"defines no memory"},
		},
		{
			name:   "trap in init",
			cfg:    func(t *testing.T) PluginConfig { return watConfig(t, "init_trap") },
			kind:   ErrInit,
			wantIn: []string{`operator "init_trap" (testdata/init_trap.wasm): ` + abi.ExportInit + ` failed: trap: wasm error: unreachable`},
		},
		{
			name: "init rejects the config",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "init_config")
				c.InitConfig = []byte(`xyz`)
				return c
			},
			kind:   ErrInit,
			wantIn: []string{abi.ExportInit + " rejected the config: rejected config: xyz"},
		},
		{
			name: "no operator name",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "identity")
				c.Operator = ""
				return c
			},
			kind:   ErrConfig,
			wantIn: []string{"no operator name"},
		},
		{
			name: "unknown op",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "identity")
				c.Op = 9
				return c
			},
			kind:   ErrConfig,
			wantIn: []string{"unknown operation op(9)"},
		},
		{
			name: "memory limit over 4 GiB",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "identity")
				c.MemoryLimitPages = 65537
				return c
			},
			kind:   ErrConfig,
			wantIn: []string{"memory limit of 65537 pages"},
		},
		{
			name: "memory minimum over the limit",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "identity")
				c.MemoryLimitPages = 1 // the module declares 2
				return c
			},
			kind:   ErrInvalidModule,
			wantIn: []string{"its memory starts at 2 pages (128 KiB), over its limit of 64 KiB (memory_limit_pages: 1)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := rt.Load(context.Background(), tt.cfg(t))
			if err == nil {
				p.Close(context.Background())
				t.Fatal("Load succeeded, want an error")
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("errors.Is(err, %v) = false; err = %v", tt.kind, err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error is %T, want *Error", err)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
		})
	}
}

func TestABIVersionErrorIsInvalidModule(t *testing.T) {
	rt := newRuntime(t, nil)
	_, err := rt.Load(context.Background(), watConfig(t, "abi_v2"))
	if !errors.Is(err, ErrInvalidModule) || !errors.Is(err, ErrABIVersion) {
		t.Fatalf("err = %v; want both ErrInvalidModule and ErrABIVersion", err)
	}
}

func TestLoadOtherOps(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name   string
		module string
		op     abi.Op
		in     []string
		want   []string
	}{
		{name: "filter drops", module: "filter_only", op: abi.OpFilter, in: []string{"a", "-b", "c"}, want: []string{"a", "c"}},
		{name: "identity map", module: "identity", op: abi.OpMap, in: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "identity flat_map", module: "identity", op: abi.OpFlatMap, in: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "identity filter", module: "identity", op: abi.OpFilter, in: []string{"a", "b"}, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := watConfig(t, tt.module)
			cfg.Op = tt.op
			_, w := mustLoad(t, rt, cfg)
			out := process(t, w, recs(tt.in...))
			if got := values(out.Records); !equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInitConfig(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "init_config")
	cfg.InitConfig = []byte(`{"threshold":3}`)
	p, w := mustLoad(t, rt, cfg)
	out := process(t, w, recs("a", "b"))
	want := []string{`{"threshold":3}`, `{"threshold":3}`}
	if got := values(out.Records); !equal(got, want) {
		t.Fatalf("got %q, want %q (the guest echoes its config)", got, want)
	}
	// A second worker runs the whole lifecycle again.
	w2, err := p.NewWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close(context.Background())
	if got := values(process(t, w2, recs("c")).Records); !equal(got, want[:1]) {
		t.Fatalf("second worker: got %q", got)
	}
}

// TestRuntimeEngine checks that plugins of every memory limit and timeout
// share the Runtime's one engine and its compilation cache.
func TestRuntimeEngine(t *testing.T) {
	dir := t.TempDir()
	rt, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	configs := []struct {
		pages   uint32
		timeout time.Duration
	}{{0, 0}, {1024, 0}, {64, NoTimeout}, {64, time.Second}}
	var engines []*engine
	for _, c := range configs {
		cfg := watConfig(t, "identity")
		cfg.MemoryLimitPages, cfg.Timeout = c.pages, c.timeout
		p, err := rt.Load(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		engines = append(engines, p.eng)
	}
	for _, e := range engines {
		if e != engines[0] {
			t.Fatal("plugins run on more than one engine")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "wazero")); err != nil {
		t.Errorf("compilation cache directory: %v", err)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Load(context.Background(), watConfig(t, "identity")); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close: err = %v, want ErrClosed", err)
	}
}

func TestClosed(t *testing.T) {
	rt := newRuntime(t, nil)
	p, w := mustLoad(t, rt, watConfig(t, "identity"))
	w.Close(context.Background())
	if err := w.Process(context.Background(), recs("a"), new(record.Output)); !errors.Is(err, ErrClosed) {
		t.Errorf("Process after Close: err = %v, want ErrClosed", err)
	}
	p.Close(context.Background())
	if _, err := p.NewWorker(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("NewWorker after Close: err = %v, want ErrClosed", err)
	}
}

func TestErrorFormat(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"operator and path", &Error{Operator: "op", Path: "p.wasm", Kind: ErrInit, Msg: "failed", Err: cause}, `operator "op" (p.wasm): failed: boom`},
		{"operator only", &Error{Operator: "op", Kind: ErrInit, Msg: "failed"}, `operator "op": failed`},
		{"path only", &Error{Path: "p.wasm", Kind: ErrInvalidModule, Msg: "bad"}, `p.wasm: bad`},
		{"neither", &Error{Kind: ErrInvalidModule, Msg: "bad"}, `bad`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !errors.Is(tt.err, tt.err.Kind) {
				t.Error("errors.Is(err, Kind) = false")
			}
			if tt.err.Err != nil && !errors.Is(tt.err, cause) {
				t.Error("errors.Is(err, cause) = false")
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// opsConfig is testdata/ops.wasm as operator "f" of op, reporting the
// operations in the one-byte config ops.
func opsConfig(t testing.TB, op abi.Op, ops byte) PluginConfig {
	return PluginConfig{Operator: "f", Path: "plugins/x.wasm", Wasm: testdata(t, "ops"), Op: op, InitConfig: []byte{ops}}
}

// TestLoadOps loads modules that report the operations they registered
// (abi.ExportOps) as operators of each kind: the operator's must be among
// them, whatever the module exports; a module that does not report them
// is judged by its exports.
func TestLoadOps(t *testing.T) {
	rt := newRuntime(t, nil)
	tests := []struct {
		name    string
		cfg     func(t *testing.T) PluginConfig
		kind    error  // nil: Load succeeds
		wantErr string // the whole message
	}{
		{name: "reports map, as map", cfg: func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpMap, 1) }},
		{
			name:    "reports map, as filter",
			cfg:     func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpFilter, 1) },
			kind:    ErrInvalidModule,
			wantErr: `operator "f" (plugins/x.wasm): the plugin implements map, not filter`,
		},
		{
			name:    "reports map, as flat_map",
			cfg:     func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpFlatMap, 1) },
			kind:    ErrInvalidModule,
			wantErr: `operator "f" (plugins/x.wasm): the plugin implements map, not flat_map`,
		},
		{name: "reports map and filter, as filter", cfg: func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpFilter, 5) }},
		{
			name:    "reports map, flat_map and aggregate, as filter",
			cfg:     func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpFilter, 11) },
			kind:    ErrInvalidModule,
			wantErr: `operator "f" (plugins/x.wasm): the plugin implements map, flat_map and aggregate, not filter`,
		},
		{
			name:    "reports nothing",
			cfg:     func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpMap, 0) },
			kind:    ErrInvalidModule,
			wantErr: `operator "f" (plugins/x.wasm): the plugin implements nothing, not map`,
		},
		{name: "reserved bits are ignored", cfg: func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpFlatMap, 0xf2) }},
		{
			name:    "reserved bits alone",
			cfg:     func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpMap, 0xf0) },
			kind:    ErrInvalidModule,
			wantErr: `operator "f" (plugins/x.wasm): the plugin implements nothing, not map`,
		},
		{
			name:    "weir_ops traps",
			cfg:     func(t *testing.T) PluginConfig { return opsConfig(t, abi.OpMap, 0xff) },
			kind:    ErrInit,
			wantErr: `operator "f" (plugins/x.wasm): ` + abi.ExportOps + ` failed: trap: wasm error: unreachable`,
		},
		{
			name: "no weir_ops: judged by its exports",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "identity")
				c.Op = abi.OpFilter
				return c
			},
		},
		{
			name: "no weir_ops, another operation",
			cfg: func(t *testing.T) PluginConfig {
				c := watConfig(t, "filter_only")
				c.Operator, c.Path = "f", "plugins/x.wasm"
				c.Op = abi.OpFlatMap
				return c
			},
			kind:    ErrInvalidModule,
			wantErr: `operator "f" (plugins/x.wasm): not a valid weir ABI v1 flat_map plugin: the plugin implements filter, not flat_map (missing export ` + abi.ExportFlatMap + `)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := rt.Load(context.Background(), tt.cfg(t))
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				checkLoaded(t, p)
				return
			}
			if err == nil {
				p.Close(context.Background())
				t.Fatal("Load succeeded, want an error")
			}
			if !errors.Is(err, tt.kind) || err.Error() != tt.wantErr {
				t.Errorf("err = %v (errors.Is(err, %v) = %v), want %q", err, tt.kind, errors.Is(err, tt.kind), tt.wantErr)
			}
		})
	}
}

// checkLoaded runs a batch through p and closes it.
func checkLoaded(t *testing.T, p *Plugin) {
	t.Helper()
	ctx := context.Background()
	defer p.Close(ctx)
	w, err := p.NewWorker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	if out := process(t, w, recs("a", "b")); !equal(values(out.Records), []string{"a", "b"}) {
		t.Errorf("outputs %q, want a and b kept", values(out.Records))
	}
}
