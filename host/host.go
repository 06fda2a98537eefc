package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/state"
)

// ErrConfig is wrapped by every error about the pipeline file itself. The
// pipeline did not start; fix the file and run again.
var ErrConfig = errors.New("invalid pipeline")

// ErrPlugin is wrapped by every error building, compiling, validating or
// initialising a plugin. The pipeline did not start.
var ErrPlugin = errors.New("plugin failed to load")

// Options configure Load. The zero value reads the process's standard
// streams and logs nowhere.
type Options struct {
	Stdin  io.Reader // for stdin sources; default os.Stdin
	Stdout io.Writer // for stdout sinks; default os.Stdout
	Stderr io.Writer // for the stderr dead-letter output; default os.Stderr
	Logger *slog.Logger
	// CacheDir holds built Go plugins and compiled modules; default
	// pluginbuild.DefaultCacheDir().
	CacheDir string
	// Store holds keyed state; default a new in-memory store.
	Store state.Store
	// Broker, when set, is the embedded Kafka broker for a pipeline that
	// names no brokers, shared with other pipelines; without it such a
	// pipeline starts its own for the length of the run.
	Broker *Broker
	// WatchPlugins makes Run reload a plugin operator's plugin when its
	// .wasm file or Go source folder changes (see ReloadPlugins).
	WatchPlugins bool
}

// Pipeline is a loaded pipeline, validated and ready to run. Run it once,
// then Close it. A Pipeline is not safe for concurrent use.
type Pipeline struct {
	cfg     *config.Pipeline
	opts    Options
	runtime *wasm.Runtime
	plugins []*wasm.Plugin // per operator; nil for native operators
	// slots holds the live, reloadable version of each map, flat_map and
	// filter operator's plugin (per operator; nil for the others).
	slots []*pluginSlot
	// metrics are the pipeline's Prometheus collectors; run and runState
	// describe the current run (stats.go).
	metrics  *pipelineMetrics
	run      atomic.Pointer[runInfo]
	runState atomic.Value // string
	// closeStore closes a state store Load opened (badger); nil otherwise.
	closeStore func() error
}

// Load reads, validates and prepares the pipeline at path: every plugin is
// built if needed, compiled, checked against the ABI, and initialised once
// with its config. Nothing reads input before Run.
func Load(ctx context.Context, path string, opts Options) (*Pipeline, error) {
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.CacheDir == "" {
		opts.CacheDir = pluginbuild.DefaultCacheDir()
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, &loadError{kind: ErrConfig, err: err}
	}
	var closeStore func() error
	if opts.Store == nil {
		if opts.Store, closeStore, err = openStore(cfg, opts); err != nil {
			return nil, err
		}
	}
	p := &Pipeline{cfg: cfg, opts: opts, plugins: make([]*wasm.Plugin, len(cfg.Operators)),
		slots: make([]*pluginSlot, len(cfg.Operators)), closeStore: closeStore}
	p.metrics = newPipelineMetrics(p)
	for i := range cfg.Operators {
		op := &cfg.Operators[i]
		var native *engine.Step
		switch {
		case op.Type == config.OperatorWindow && op.Plugin == "":
			st := p.windowStep(op, nil)
			native = &st
		case op.Type == config.OperatorRolling:
			st := p.rollingStep(op)
			native = &st
		case op.Type == config.OperatorLookup:
			// Connects and prepares the query: a bad DSN or query is a load error.
			st := lookupStep(op)
			native = &st
		}
		if native != nil {
			// Build one now, so settings the operator rejects are a load error.
			o, err := native.New(ctx)
			if err != nil {
				p.Close(ctx)
				return nil, &loadError{kind: ErrConfig, err: err}
			}
			o.Close(ctx)
			continue
		}
		if !op.Type.IsPlugin() && op.Plugin == "" {
			continue
		}
		if p.runtime == nil {
			p.runtime, err = wasm.NewRuntime(ctx, wasm.RuntimeOptions{CacheDir: opts.CacheDir, Logger: opts.Logger})
			if err != nil {
				p.Close(ctx)
				return nil, err
			}
		}
		plug, hash, err := p.loadPlugin(ctx, op)
		if err != nil {
			p.Close(ctx)
			return nil, &loadError{kind: ErrPlugin, err: err, pos: op.At("plugin").String(), path: op.FieldPath("plugin")}
		}
		if op.Type.IsPlugin() {
			p.slots[i] = newPluginSlot(p, op, plug, hash)
			if op.Shadow != "" {
				if err := p.slots[i].startShadow(ctx, op.Shadow); err != nil {
					p.Close(ctx)
					return nil, &loadError{kind: ErrPlugin, err: err, pos: op.At("shadow").String(), path: op.FieldPath("shadow")}
				}
			}
		} else {
			p.plugins[i] = plug
		}
	}
	return p, nil
}

// loadPlugin builds (Go source), compiles, checks and initialises op's
// plugin, and returns it with the SHA-256 of its module.
func (p *Pipeline) loadPlugin(ctx context.Context, op *config.Operator) (*wasm.Plugin, string, error) {
	return p.loadPluginWith(ctx, op, op.Plugin, p.opts.Store, p.metrics.observeCall(op.Name))
}

// loadPluginWith is loadPlugin for the module at path, keeping state in
// store and timing its calls with observe (nil: not timed, nor its
// sandbox bounds counted: a shadow candidate).
func (p *Pipeline) loadPluginWith(ctx context.Context, op *config.Operator, path string, store state.Store, observe func(time.Duration)) (*wasm.Plugin, string, error) {
	bin, src, err := pluginbuild.Load(ctx, path, pluginbuild.Options{CacheDir: p.opts.CacheDir, Logger: p.opts.Logger, Operator: op.Name})
	if err != nil {
		return nil, "", err
	}
	plug, err := p.runtime.Load(ctx, wasm.PluginConfig{
		Operator:          op.Name,
		Path:              path,
		Wasm:              bin,
		Op:                pluginOp(op.Type),
		InitConfig:        op.ConfigJSON,
		MemoryLimitPages:  uint32(op.MemoryLimitPages),
		Timeout:           pluginTimeout(op.Timeout),
		Limits:            wasm.Limits(op.Limits),
		Store:             store,
		StateTTL:          op.StateTTL,
		StateTTLEventTime: op.StateTTLEventTime,
		ObserveCall:       observe,
		ObserveLimit:      p.metrics.observeLimit(op.Name, observe != nil),
		Logger:            p.opts.Logger,
	})
	if err != nil {
		return nil, "", err // wasm's Load also ran the plugin's init: a bad config fails here
	}
	p.opts.Logger.Debug("plugin loaded", "operator", op.Name, "sha256", src.Hash)
	return plug, src.Hash, nil
}

// pluginTimeout maps an operator's timeout to the plugin's.
func pluginTimeout(d time.Duration) time.Duration {
	if d == config.NoTimeout {
		return wasm.NoTimeout
	}
	return d
}

func pluginOp(t config.OperatorType) abi.Op {
	switch t {
	case config.OperatorMap:
		return abi.OpMap
	case config.OperatorFlatMap:
		return abi.OpFlatMap
	case config.OperatorFilter:
		return abi.OpFilter
	case config.OperatorWindow:
		return abi.OpAggregate
	}
	return 0
}

// Name returns the pipeline's name.
func (p *Pipeline) Name() string { return p.cfg.Name }

// Close releases the compiled plugins and closes a state store that Load
// opened, writing its cached state to disk. It is safe to call more than
// once.
func (p *Pipeline) Close(ctx context.Context) error {
	var errs []error
	for i, s := range p.slots {
		if s != nil {
			s.close(ctx)
			p.slots[i] = nil
		}
	}
	if p.runtime != nil {
		errs = append(errs, p.runtime.Close(ctx))
		p.runtime = nil
	}
	if p.closeStore != nil {
		errs = append(errs, p.closeStore())
		p.closeStore = nil
	}
	return errors.Join(errs...)
}

// loadError marks an error from Load with its kind, and, for plugin errors,
// the position in the pipeline file of the plugin that failed.
type loadError struct {
	kind error
	err  error
	pos  string
	path string
}

func (e *loadError) Error() string {
	if e.pos != "" {
		return fmt.Sprintf("%s: %s: %v", e.pos, e.path, e.err)
	}
	return e.err.Error()
}

func (e *loadError) Unwrap() []error { return []error{e.kind, e.err} }
