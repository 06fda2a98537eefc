package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/weir-stream/weir/host/broker"
	"github.com/weir-stream/weir/host/internal/assembly"
	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/operator"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/state"
)

// ErrConfig is wrapped by every error about the pipeline file itself. The
// pipeline did not start; fix the file and run again.
var ErrConfig = config.ErrInvalid

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
	Broker *broker.Broker
	// WatchPlugins makes Run reload a plugin operator's plugin when its
	// .wasm file or Go source folder changes (see ReloadPlugins).
	WatchPlugins bool
}

// Pipeline is a loaded pipeline, validated and ready to run. Run it once,
// then Close it. Run and Close must not overlap; Stats, Plugins, Reload,
// ReloadPlugins and Promote are safe from any goroutine, during and after
// Run.
type Pipeline struct {
	cfg  *config.Pipeline
	opts Options
	// ops are the loaded operators, one per config operator, each from
	// its kind's row in the operator table; plugins loaded their modules.
	ops     []operator.Operator
	plugins *operator.Plugins
	// metrics are the pipeline's Prometheus collectors; run and runState
	// describe the current run (stats.go).
	metrics  *pipelineMetrics
	run      atomic.Pointer[runInfo]
	runState atomic.Value // string
	restore  atomic.Pointer[RestoreStats]
	// closeStore closes a state store Load opened (badger); nil otherwise.
	closeStore func() error
}

// Load reads, validates and prepares the pipeline at path: every plugin is
// built if needed, compiled, checked against the ABI, and initialised once
// with its config. Nothing reads input before Run.
func Load(ctx context.Context, path string, opts Options) (*Pipeline, error) {
	opts = opts.withDefaults()
	cfg, err := config.Load(path, assembly.Schemas())
	if err != nil {
		return nil, &loadError{kind: ErrConfig, err: err}
	}
	var closeStore func() error
	if opts.Store == nil {
		if opts.Store, closeStore, err = openStore(cfg, opts); err != nil {
			return nil, err
		}
	}
	p := &Pipeline{cfg: cfg, opts: opts, closeStore: closeStore}
	p.metrics = newPipelineMetrics(p)
	p.plugins = &operator.Plugins{CacheDir: opts.CacheDir, Logger: opts.Logger, Metrics: p.metrics}
	if p.ops, err = assembly.LoadOperators(ctx, cfg, p.operatorEnv); err != nil {
		p.Close(ctx)
		if perr := (*operator.PluginError)(nil); errors.As(err, &perr) {
			return nil, &loadError{kind: ErrPlugin, err: err}
		}
		return nil, &loadError{kind: ErrConfig, err: err}
	}
	return p, nil
}

func (o Options) withDefaults() Options {
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CacheDir == "" {
		o.CacheDir = pluginbuild.DefaultCacheDir()
	}
	return o
}

// operatorEnv is what operator i is loaded with.
func (p *Pipeline) operatorEnv(i int) operator.Env {
	return operator.Env{Pipeline: p.cfg.Name, Index: i, Store: p.opts.Store, Logger: p.opts.Logger,
		ProcessingTime: assembly.ProcessingTime(p.cfg), Parallelism: max(p.cfg.Engine.Parallelism, 1),
		Plugins: p.plugins, Metrics: p.metrics, Counts: func() (any, int64, int64) { return p.stepCounts(i) }}
}

// stepCounts returns operator i's counts in the current run, with the
// run's identity.
func (p *Pipeline) stepCounts(i int) (run any, in, dead int64) {
	ri := p.run.Load()
	if ri == nil {
		return nil, 0, 0
	}
	steps := ri.ep.Stats().Summary.Steps
	if i >= len(steps) {
		return ri.ep, 0, 0
	}
	return ri.ep, steps[i].In, steps[i].Dead
}

// Name returns the pipeline's name.
func (p *Pipeline) Name() string { return p.cfg.Name }

// Close releases the operators and their plugins and closes a state store
// that Load opened, writing its cached state to disk. It is safe to call
// more than once.
func (p *Pipeline) Close(ctx context.Context) error {
	errs := []error{assembly.CloseOperators(ctx, p.ops)}
	p.ops = nil
	if p.plugins != nil {
		errs = append(errs, p.plugins.Close(ctx))
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
