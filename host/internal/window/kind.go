package window

import (
	"context"
	"errors"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/operator"
	"github.com/weir-stream/weir/host/internal/wasm"
)

// WindowKind is the operator table's row for window. A window keeps keyed
// state always. The config package decodes its settings; the rules
// between them are the window's own (checkWindow).
var WindowKind = operator.Kind{Schema: config.Schema{Check: checkWindow}, Load: loadWindow, Describe: DescribeWindow}

// checkWindow applies to a window operator of a pipeline file the rules
// New applies (Config.problems), each at its field.
func checkWindow(op *config.Operator) []error {
	cfg := windowConfig(op, operator.Env{})
	var errs []error
	for _, p := range cfg.problems() {
		m := &op.Meta
		if p.agg >= 0 {
			m = &op.Window.Aggregates[p.agg].Meta
		}
		errs = append(errs, m.Errorf(p.field, "%s", p.msg))
	}
	return errs
}

// RollingKind is the operator table's row for rolling (OVER). A rolling
// operator keeps keyed state always.
var RollingKind = operator.Kind{Load: loadRolling, Describe: DescribeRolling}

var (
	windowKinds = map[config.WindowKind]Kind{
		config.WindowTumbling: Tumbling, config.WindowSliding: Sliding,
		config.WindowSession: Session, config.WindowCount: Count, config.WindowCumulate: Cumulate,
	}
	emitModes   = map[string]EmitMode{config.EmitOnClose: OnClose, config.EmitOnUpdate: OnUpdate, config.EmitEvery: Every}
	windowTimes = map[string]TimeFormat{config.WindowTimeSQL: SQL, config.WindowTimeEpochMS: EpochMillis, config.WindowTimeRFC3339: RFC3339}
	aggFuncs    = map[string]Func{
		"sum": AggSum, "count": AggCount, "avg": AggAvg, "min": AggMin, "max": AggMax,
		"first": AggFirst, "last": AggLast, "count_distinct": AggCountDistinct,
	}
)

// windowConfig translates op's window settings.
func windowConfig(op *config.Operator, env operator.Env) Config {
	w := &op.Window
	cfg := Config{
		Name: op.Name, Kind: windowKinds[w.Kind], Size: w.Size, Slide: w.Slide, Gap: w.Gap, Count: w.Count,
		AllowedLateness: w.AllowedLateness, Emit: emitModes[w.Emit], EmitInterval: w.EmitInterval,
		KeyField: w.KeyField, TimeFormat: windowTimes[w.TimeFormat], Store: env.Store,
		MaxKeysInMemory: int(w.MaxKeysInMemory), ProcessingTime: env.ProcessingTime,
	}
	if w.Kind == config.WindowCumulate {
		cfg.Slide = w.Step
	}
	for _, a := range w.Aggregates {
		f := aggFuncs[a.Func]
		if a.Plugin {
			f = AggCustom
		}
		cfg.Aggregates = append(cfg.Aggregates, Aggregate{Func: f, Field: a.Path, As: a.As, Exact: a.Exact})
	}
	return cfg
}

// loadWindow loads a window operator: one operator per worker, each
// keeping its keys' windows in the pipeline's state store, with the
// aggregate plugin, if any, loaded once and instantiated per worker: the
// operator's own, whose result is the output value, or one listed among
// the aggregates (AggCustom), whose result is a field of it.
func loadWindow(ctx context.Context, op *config.Operator, env operator.Env) (operator.Operator, error) {
	cfg := windowConfig(op, env)
	if op.Plugin == "" {
		st := engine.Step{Name: op.Name, BatchSize: op.BatchSize, KeyedState: true, New: func(context.Context) (engine.Operator, error) {
			wo, err := New(cfg)
			if err != nil {
				return nil, operator.At(op, err)
			}
			return wo, nil
		}}
		return fixedKeyed(ctx, st)
	}
	plug, err := env.Plugins.LoadAggregate(ctx, op, env)
	if err != nil {
		return nil, err
	}
	st := engine.Step{Name: op.Name, BatchSize: op.BatchSize, KeyedState: true, New: func(ctx context.Context) (engine.Operator, error) {
		agg, err := plug.NewAggregator(ctx)
		if err != nil {
			return nil, operator.AtAggregatePlugin(op, err)
		}
		c := cfg
		c.Custom = &pluginAgg{Aggregator: agg}
		wo, err := New(c)
		if err != nil {
			agg.Close(ctx)
			return nil, operator.At(op, err)
		}
		return &pluginWindow{instance: wo, agg: agg}, nil
	}}
	return pluginWindowOp{Fixed: operator.Fixed{S: st, Keyed: true}, plug: plug}, nil
}

// pluginWindowOp is a window operator with an aggregate plugin, which it
// closes.
type pluginWindowOp struct {
	operator.Fixed
	plug *operator.AggregatePlugin
}

func (o pluginWindowOp) Close(ctx context.Context) error { return o.plug.Close(ctx) }

// pluginWindow is a window instance whose aggregate is a Wasm plugin; it
// closes the plugin's worker with the instance. It is no
// engine.WatermarkResumer, so no run keeps it for the next (see
// engine.Tasks): its plugin's calls use the context of the run it was
// made for.
type pluginWindow struct {
	instance
	agg *operator.Aggregator
}

// instance is what a pluginWindow runs of its Operator.
type instance interface {
	engine.Operator
	engine.Watermarker
	engine.Restorer
}

func (p *pluginWindow) Close(ctx context.Context) error {
	return errors.Join(p.instance.Close(ctx), p.agg.Close(ctx))
}

// pluginAgg is an aggregate plugin's Aggregator, which batches adds.
type pluginAgg struct {
	*operator.Aggregator
	groups []wasm.AggGroup
	errs   [][]error
}

// AddBatch implements BatchAggregator with one call to the plugin.
func (p *pluginAgg) AddBatch(groups []AddGroup) error {
	p.groups, p.errs = p.groups[:0], p.errs[:0]
	for i := range groups {
		g := &groups[i]
		p.groups = append(p.groups, wasm.AggGroup{Acc: g.Acc, Records: g.Records})
		p.errs = append(p.errs, g.Errs)
	}
	err := p.AddGroups(p.groups, p.errs)
	if err == nil {
		for i := range groups {
			groups[i].Acc = p.groups[i].Acc
		}
	}
	clear(p.groups)
	clear(p.errs)
	return err
}

// loadRolling loads a rolling (OVER) operator: one operator per worker,
// each keeping its keys' rows in the pipeline's state store.
func loadRolling(ctx context.Context, op *config.Operator, env operator.Env) (operator.Operator, error) {
	r := &op.Rolling
	cfg := RollingConfig{Name: op.Name, Store: env.Store, ProcessingTime: env.ProcessingTime}
	if r.Order == config.RollingRows {
		cfg.Order = ByRows
	}
	for _, w := range r.Windows {
		cfg.Windows = append(cfg.Windows, RollingWindow{Name: w.Name, Range: w.Range, Rows: w.Rows})
	}
	for _, a := range r.Aggregates {
		cfg.Aggregates = append(cfg.Aggregates, Aggregate{Func: aggFuncs[a.Func], Field: a.Path, As: a.As})
	}
	st := engine.Step{Name: op.Name, BatchSize: op.BatchSize, KeyedState: true, New: func(context.Context) (engine.Operator, error) {
		ro, err := NewRolling(cfg)
		if err != nil {
			return nil, operator.At(op, err)
		}
		return ro, nil
	}}
	return fixedKeyed(ctx, st)
}

// fixedKeyed is the keyed operator of st, once one instance of it was made
// (operator.TryStep).
func fixedKeyed(ctx context.Context, st engine.Step) (operator.Operator, error) {
	if err := operator.TryStep(ctx, st); err != nil {
		return nil, err
	}
	return operator.Fixed{S: st, Keyed: true}, nil
}
