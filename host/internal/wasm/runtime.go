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
// wazero fixes the memory limit and the context-cancellation behaviour per
// wazero.Runtime, so a Runtime keeps one wazero.Runtime ("engine") per
// distinct (memory limit, timeout enabled) pair among its plugins. All
// engines share one compilation cache.
type Runtime struct {
	log   *slog.Logger
	cache wazero.CompilationCache
	// seq numbers instances, so that each has a unique module name.
	seq atomic.Uint64

	mu      sync.Mutex
	engines map[engineKey]*engine
	closed  bool
}

// engineKey is the part of a plugin's config that wazero fixes per runtime.
type engineKey struct {
	memoryLimitPages uint32
	// closeOnDone enables wazero's WithCloseOnContextDone. It costs 3-10x
	// in call overhead, so only plugins with a Timeout get it.
	closeOnDone bool
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
	r := &Runtime{log: opts.Logger, engines: make(map[engineKey]*engine)}
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
	for _, e := range r.engines {
		errs = append(errs, e.rt.Close(ctx))
	}
	r.engines = nil
	errs = append(errs, r.cache.Close(ctx))
	return errors.Join(errs...)
}

// engine returns the engine for key, creating it on first use.
func (r *Runtime) engine(ctx context.Context, key engineKey) (*engine, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("wasm: runtime %w", ErrClosed)
	}
	if e := r.engines[key]; e != nil {
		return e, nil
	}
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(r.cache).
		WithMemoryLimitPages(key.memoryLimitPages).
		WithCloseOnContextDone(key.closeOnDone)
	e, err := newEngine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.engines[key] = e
	return e, nil
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
	weir := e.rt.NewHostModuleBuilder(abi.ImportModule)
	for _, f := range weirFuncs {
		weir.NewFunctionBuilder().
			WithGoModuleFunction(f.fn, f.sig.Params, f.sig.Results).
			WithParameterNames(f.paramNames...).
			Export(f.name)
	}
	if _, err := weir.Instantiate(ctx); err != nil {
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
	for _, name := range []string{wasi_snapshot_preview1.ModuleName, abi.ImportModule, envModule} {
		m := e.rt.Module(name)
		fns := make(map[string]Signature)
		for n, d := range m.ExportedFunctionDefinitions() {
			fns[n] = signatureOf(d)
		}
		e.provided[name] = fns
	}
	return nil
}
