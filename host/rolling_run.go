package host

import (
	"context"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/window"
)

// rollingStep returns the engine step of a rolling (OVER) operator: one
// operator per worker, each keeping its keys' rows in the pipeline's state
// store.
func (p *Pipeline) rollingStep(op *config.Operator) engine.Step {
	r := &op.Rolling
	cfg := window.RollingConfig{Name: op.Name, Store: p.opts.Store, ProcessingTime: p.processingTime()}
	if r.Order == config.RollingRows {
		cfg.Order = window.ByRows
	}
	for _, w := range r.Windows {
		cfg.Windows = append(cfg.Windows, window.RollingWindow{Name: w.Name, Range: w.Range, Rows: w.Rows})
	}
	for _, a := range r.Aggregates {
		cfg.Aggregates = append(cfg.Aggregates, window.Aggregate{Func: aggFuncs[a.Func], Field: a.Path, As: a.As})
	}
	return engine.Step{Name: op.Name, BatchSize: op.BatchSize, KeyedState: true, New: func(context.Context) (engine.Operator, error) {
		ro, err := window.NewRolling(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", op.Pos, op.Where, err)
		}
		return ro, nil
	}}
}
