package dbio

import (
	"context"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/operator"
)

// LookupKind is the operator table's row for lookup. Loading connects and
// prepares the query once, so that a bad DSN or query is a load error.
var LookupKind = operator.Kind{Load: loadLookup}

// loadLookup loads a lookup operator: one operator per worker, each with
// its own prepared query and cache.
func loadLookup(ctx context.Context, op *config.Operator, _ operator.Env) (operator.Operator, error) {
	l := &op.Lookup
	cfg := LookupConfig{
		Name:      op.Name,
		DB:        DB{Driver: l.Database.Driver, DSN: l.Database.DSN},
		Query:     l.Query,
		KeyPath:   l.Path,
		Left:      l.Join == config.JoinLeft,
		CacheTTL:  l.CacheTTL,
		CacheSize: l.CacheSize,
	}
	st := engine.Step{Name: op.Name, BatchSize: op.BatchSize, New: func(ctx context.Context) (engine.Operator, error) {
		lo, err := NewLookup(ctx, cfg)
		if err != nil {
			return nil, operator.At(op, err)
		}
		return lo, nil
	}}
	if err := operator.TryStep(ctx, st); err != nil {
		return nil, err
	}
	return operator.Fixed{S: st}, nil
}

// NewSinkFrom opens the database sink s, checking its table and columns.
func NewSinkFrom(ctx context.Context, s *config.Sink) (engine.Sink, error) {
	cfg := SinkConfig{
		Name:  s.Name,
		DB:    DB{Driver: s.Database.Driver, DSN: s.Database.DSN},
		Table: s.Table,
		Key:   s.Key,
	}
	for _, c := range s.Columns {
		cfg.Columns = append(cfg.Columns, Column{Name: c.Name, Path: c.Path})
	}
	ds, err := NewSink(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Pos, s.Where, err)
	}
	return ds, nil
}
