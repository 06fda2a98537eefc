package operator

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/pluginbuild"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/state"
)

// Plugins loads the plugin modules of one pipeline's operators into one
// Wasm runtime, made when the first plugin loads. It is safe for
// concurrent use; Close closes the runtime and every plugin in it.
type Plugins struct {
	CacheDir string // built Go plugins and compiled modules
	Logger   *slog.Logger
	Metrics  Metrics

	mu      sync.Mutex
	runtime *wasm.Runtime
}

// Load builds (Go source), compiles, checks and initialises the module at
// path for op, keeping its state in store, and returns it with the SHA-256
// of its module. A measured plugin's calls are timed and its sandbox
// bounds counted; a shadow candidate's are not.
func (p *Plugins) Load(ctx context.Context, op *config.Operator, path string, store state.Store, measured bool) (*wasm.Plugin, string, error) {
	rt, err := p.runtimeFor(ctx)
	if err != nil {
		return nil, "", err
	}
	bin, src, err := pluginbuild.Load(ctx, path, pluginbuild.Options{CacheDir: p.CacheDir, Logger: p.Logger, Operator: op.Name})
	if err != nil {
		return nil, "", err
	}
	pc := wasm.PluginConfig{
		Operator:          op.Name,
		Path:              path,
		Wasm:              bin,
		Op:                pluginOps[op.Type],
		InitConfig:        op.ConfigJSON,
		MemoryLimitPages:  uint32(op.MemoryLimitPages),
		Timeout:           pluginTimeout(op.Timeout),
		Limits:            wasm.Limits(op.Limits),
		Store:             store,
		StateTTL:          op.StateTTL,
		StateTTLEventTime: op.StateTTLEventTime,
		Logger:            p.Logger,
	}
	if measured && p.Metrics != nil {
		pc.ObserveCall, pc.ObserveLimit = p.Metrics.PluginCall(op.Name), p.Metrics.PluginLimit(op.Name)
	}
	plug, err := rt.Load(ctx, pc)
	if err != nil {
		return nil, "", err // wasm's Load also ran the plugin's init: a bad config fails here
	}
	p.Logger.Debug("plugin loaded", "operator", op.Name, "sha256", src.Hash)
	return plug, src.Hash, nil
}

func (p *Plugins) runtimeFor(ctx context.Context) (*wasm.Runtime, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runtime == nil {
		rt, err := wasm.NewRuntime(ctx, wasm.RuntimeOptions{CacheDir: p.CacheDir, Logger: p.Logger})
		if err != nil {
			return nil, err
		}
		p.runtime = rt
	}
	return p.runtime, nil
}

// Close closes the runtime, if one was made. It is safe to call more than
// once.
func (p *Plugins) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runtime == nil {
		return nil
	}
	err := p.runtime.Close(ctx)
	p.runtime = nil
	return err
}

// pluginTimeout maps an operator's timeout to the plugin's.
func pluginTimeout(d time.Duration) time.Duration {
	if d == config.NoTimeout {
		return wasm.NoTimeout
	}
	return d
}

// pluginOps is the ABI operation each operator kind's plugin serves.
var pluginOps = map[config.OperatorType]abi.Op{
	config.OperatorMap: abi.OpMap, config.OperatorFlatMap: abi.OpFlatMap,
	config.OperatorFilter: abi.OpFilter, config.OperatorWindow: abi.OpAggregate,
}
