package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/meter"
)

// RuntimeOptions configure NewRuntime.
type RuntimeOptions struct {
	// CacheDir, when set, keeps wazero's compiled machine code on disk in
	// <CacheDir>/wazero, so that a restarted process does not compile the
	// same module again. Empty means an in-memory cache only.
	CacheDir string
	// Logger receives the runtime's log lines, and is the default logger of
	// plugins loaded without one. Nil means slog.Default().
	Logger *slog.Logger
}

// Runtime runs weir plugins. It is process-wide and safe for concurrent
// use; Close it when the process is done with every plugin it loaded.
//
// It keeps one wazero.Runtime ("engine"), with weir's host modules,
// created on first use. Every plugin shares it: memory limits are each
// instance's own (memory.go), and deadlines each call's (sandbox.go).
type Runtime struct {
	log   *slog.Logger
	cache wazero.CompilationCache
	// seq numbers instances, so that each has a unique module name.
	seq atomic.Uint64

	// unmetered loads modules as they are, without the sandbox's checks:
	// a looping guest then stalls the process and no deadline holds. Only
	// the benchmarks that measure the sandbox's cost set it.
	unmetered bool

	mu     sync.Mutex
	eng    *engine
	closed bool
}

// engine is one wazero.Runtime with weir's host modules instantiated.
type engine struct {
	rt wazero.Runtime
	// provided maps an import module name to the functions weir provides
	// in it, with their signatures, for validating imports at Load.
	provided map[string]map[string]Signature
}

// NewRuntime returns a Runtime. With opts.CacheDir set, it creates the
// on-disk compilation cache there.
func NewRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	r := &Runtime{log: opts.Logger}
	if r.log == nil {
		r.log = slog.Default()
	}
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(filepath.Join(opts.CacheDir, "wazero"))
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		r.cache = c
	} else {
		r.cache = wazero.NewCompilationCache()
	}
	return r, nil
}

// Close closes every engine, and with them every plugin and worker still
// open, then the compilation cache. Calls in progress fail.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.eng != nil {
		errs = append(errs, r.eng.rt.Close(ctx))
		r.eng = nil
	}
	errs = append(errs, r.cache.Close(ctx))
	return errors.Join(errs...)
}

// engine returns the engine, creating it on first use.
func (r *Runtime) engine(ctx context.Context) (*engine, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("wasm: runtime %w", ErrClosed)
	}
	if r.eng != nil {
		return r.eng, nil
	}
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(r.cache).
		WithMemoryLimitPages(maxMemoryLimitPages)
	e, err := newEngine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.eng = e
	return e, nil
}

// compile instruments the plugin's module for the sandbox (package meter),
// when metered, and compiles it.
func (e *engine) compile(ctx context.Context, cfg *PluginConfig, metered bool) (wazero.CompiledModule, error) {
	bin := cfg.Wasm
	if metered {
		// Instrument reads the whole module first, so a module it refuses
		// never reaches wazero (which would, for one declaring a vector of
		// billions of entries, allocate it before reading it).
		var err error
		if bin, err = meter.Instrument(cfg.Wasm, meter.Options{Fuel: yieldFuel}); err != nil {
			return nil, cfg.errorf(ErrInvalidModule, err, "invalid WebAssembly, or a feature the sandbox does not support")
		}
	}
	c, err := e.rt.CompileModule(ctx, bin)
	if err != nil {
		return nil, cfg.errorf(ErrInvalidModule, err, "invalid WebAssembly")
	}
	return c, nil
}

// newEngine creates a wazero runtime and instantiates into it every host
// module a weir plugin may import: WASI preview 1, abi.ImportModule and
// env.abort.
func newEngine(ctx context.Context, cfg wazero.RuntimeConfig) (*engine, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	e := &engine{rt: rt, provided: make(map[string]map[string]Signature)}
	if err := e.instantiateHostModules(ctx); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: host modules: %w", err)
	}
	return e, nil
}

func (e *engine) instantiateHostModules(ctx context.Context) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		return err
	}
	if err := instantiateHost(ctx, e.rt, abi.ImportModule, weirFuncs); err != nil {
		return err
	}
	if err := instantiateHost(ctx, e.rt, meter.ImportModule, sandboxFuncs); err != nil {
		return err
	}
	env := e.rt.NewHostModuleBuilder(envModule)
	env.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostAbort), abortSig.Params, abortSig.Results).
		WithParameterNames("msg", "file", "line", "col").
		Export(envAbort)
	if _, err := env.Instantiate(ctx); err != nil {
		return err
	}
	for _, name := range []string{wasi_snapshot_preview1.ModuleName, abi.ImportModule, meter.ImportModule, envModule} {
		m := e.rt.Module(name)
		fns := make(map[string]Signature)
		for n, d := range m.ExportedFunctionDefinitions() {
			fns[n] = signatureOf(d)
		}
		e.provided[name] = fns
	}
	return nil
}

// instantiateHost instantiates the host module name with fns.
func instantiateHost(ctx context.Context, rt wazero.Runtime, name string, fns []hostFunc) error {
	b := rt.NewHostModuleBuilder(name)
	for _, f := range fns {
		b.NewFunctionBuilder().
			WithGoModuleFunction(f.fn, f.sig.Params, f.sig.Results).
			WithParameterNames(f.paramNames...).
			Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}
