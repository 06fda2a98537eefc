package host

import (
	"context"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/wasm"
	"github.com/weir-stream/weir/host/internal/window"
)

var (
	windowKinds = map[config.WindowKind]window.Kind{
		config.WindowTumbling: window.Tumbling, config.WindowSliding: window.Sliding,
		config.WindowSession: window.Session, config.WindowCount: window.Count, config.WindowCumulate: window.Cumulate,
	}
	emitModes   = map[string]window.EmitMode{config.EmitOnClose: window.OnClose, config.EmitOnUpdate: window.OnUpdate, config.EmitEvery: window.Every}
	windowTimes = map[string]window.TimeFormat{config.WindowTimeSQL: window.SQL, config.WindowTimeEpochMS: window.EpochMillis, config.WindowTimeRFC3339: window.RFC3339}
	aggFuncs    = map[string]window.Func{
		"sum": window.AggSum, "count": window.AggCount, "avg": window.AggAvg, "min": window.AggMin, "max": window.AggMax,
		"first": window.AggFirst, "last": window.AggLast, "count_distinct": window.AggCountDistinct,
	}
	eventTimeFormats = map[string]engine.TimeFormat{
		"epoch_ms": engine.TimeEpochMillis, "epoch_s": engine.TimeEpochSeconds, "rfc3339": engine.TimeRFC3339, "sql": engine.TimeSQL,
	}
)

// windowStep returns the engine step of a window operator: one window
// operator per worker, each keeping its keys' windows in the pipeline's
// state store.
func (p *Pipeline) windowStep(op *config.Operator, plug *wasm.Plugin) engine.Step {
	w := &op.Window
	cfg := window.Config{
		Name: op.Name, Kind: windowKinds[w.Kind], Size: w.Size, Slide: w.Slide, Gap: w.Gap, Count: w.Count,
		AllowedLateness: w.AllowedLateness, Emit: emitModes[w.Emit], EmitInterval: w.EmitInterval,
		KeyField: w.KeyField, TimeFormat: windowTimes[w.TimeFormat], Store: p.opts.Store,
		MaxKeysInMemory: int(w.MaxKeysInMemory), ProcessingTime: p.processingTime(),
	}
	if w.Kind == config.WindowCumulate {
		cfg.Slide = w.Step
	}
	for _, a := range w.Aggregates {
		cfg.Aggregates = append(cfg.Aggregates, window.Aggregate{Func: aggFuncs[a.Func], Field: a.Path, As: a.As, Exact: a.Exact})
	}
	return engine.Step{Name: op.Name, BatchSize: op.BatchSize, KeyedState: true, New: func(ctx context.Context) (engine.Operator, error) {
		if op.Plugin == "" {
			wo, err := window.New(cfg)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", op.Pos, op.Where, err)
			}
			return wo, nil
		}
		w, err := plug.NewWorker(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", op.At("plugin"), op.FieldPath("plugin"), err)
		}
		agg, err := newWasmAggregator(ctx, w)
		if err == nil {
			c := cfg
			c.Custom = agg
			var wo *window.Operator
			if wo, err = window.New(c); err == nil {
				return &pluginWindow{Operator: wo, w: w}, nil
			}
		}
		w.Close(ctx)
		return nil, fmt.Errorf("%s: %s: %w", op.Pos, op.Where, err)
	}}
}

// processingTime reports whether the pipeline runs on processing time: no
// source says where event time comes from. Windows then assign records by
// when they are processed, whatever their timestamps (a Kafka record's is
// when it was written).
func (p *Pipeline) processingTime() bool {
	for _, s := range p.cfg.Sources {
		if s.EventTime != nil {
			return false
		}
	}
	return true
}

// eventTimes returns the engine's event-time settings, per source.
func (p *Pipeline) eventTimes() []*engine.EventTime {
	ets := make([]*engine.EventTime, len(p.cfg.Sources))
	for i, s := range p.cfg.Sources {
		if et := s.EventTime; et != nil {
			ets[i] = &engine.EventTime{Field: et.Path, Format: eventTimeFormats[et.Format],
				MaxOutOfOrderness: et.MaxOutOfOrderness, IdleTimeout: et.IdleTimeout, IdleAdvance: et.IdleAdvance}
		}
	}
	return ets
}
