package host

import (
	"context"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/dbio"
	"github.com/weir-stream/weir/host/internal/engine"
)

// lookupStep returns the engine step of a lookup operator: one operator per
// worker, each with its own prepared query and cache.
func lookupStep(op *config.Operator) engine.Step {
	l := &op.Lookup
	cfg := dbio.LookupConfig{
		Name:      op.Name,
		DB:        dbio.DB{Driver: l.Database.Driver, DSN: l.Database.DSN},
		Query:     l.Query,
		KeyPath:   l.Path,
		Left:      l.Join == config.JoinLeft,
		CacheTTL:  l.CacheTTL,
		CacheSize: l.CacheSize,
	}
	return engine.Step{Name: op.Name, BatchSize: op.BatchSize, New: func(ctx context.Context) (engine.Operator, error) {
		lo, err := dbio.NewLookup(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", op.Pos, op.Where, err)
		}
		return lo, nil
	}}
}

// databaseSink opens the database sink s, checking its table and columns.
func databaseSink(ctx context.Context, s *config.Sink) (engine.Sink, error) {
	cfg := dbio.SinkConfig{
		Name:  s.Name,
		DB:    dbio.DB{Driver: s.Database.Driver, DSN: s.Database.DSN},
		Table: s.Table,
		Key:   s.Key,
	}
	for _, c := range s.Columns {
		cfg.Columns = append(cfg.Columns, dbio.Column{Name: c.Name, Path: c.Path})
	}
	ds, err := dbio.NewSink(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Pos, s.Where, err)
	}
	return ds, nil
}
