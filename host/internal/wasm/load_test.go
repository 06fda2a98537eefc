package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
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
			wantIn: []string{"missing export " + abi.ExportMap + " (the operator is a map)"},
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
			wantIn: []string{"over limit of 1 pages"},
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

func TestRuntimeEngines(t *testing.T) {
	dir := t.TempDir()
	rt, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	configs := []struct {
		pages   uint32
		timeout bool
	}{{0, false}, {1024, false}, {64, false}, {64, true}, {0, true}}
	for _, c := range configs {
		cfg := watConfig(t, "identity")
		cfg.MemoryLimitPages = c.pages
		if c.timeout {
			cfg.Timeout = 1e9
		}
		p, err := rt.Load(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
	}
	// 0 and 1024 pages are the same limit.
	if n := len(rt.engines); n != 4 {
		t.Errorf("runtime has %d engines, want 4", n)
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
	if err := w.Process(context.Background(), recs("a"), new(Output)); !errors.Is(err, ErrClosed) {
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
