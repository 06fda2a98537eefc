package pluginop

import (
	"context"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/operator"
)

// Kind is the operator table's row for map, flat_map and filter.
var Kind = operator.Kind{Load: func(ctx context.Context, op *config.Operator, env operator.Env) (operator.Operator, error) {
	return Load(ctx, op, env)
}, Describe: Describe}

// Load loads op's plugin (and its shadow candidate, if any) and returns the
// operator holding it. A load error is already positioned in the file.
func Load(ctx context.Context, op *config.Operator, env operator.Env) (*Operator, error) {
	plug, hash, err := env.Plugins.Load(ctx, op, op.Plugin, env.Store, true)
	if err != nil {
		return nil, operator.AtPlugin(op, err)
	}
	s := newOperator(env, op, plug, hash)
	if op.Shadow != "" {
		if err := s.startShadow(ctx, op.Shadow); err != nil {
			s.Close(ctx)
			return nil, operator.PluginAt(op, "shadow", err)
		}
	}
	return s, nil
}

// Name is the operator's name.
func (s *Operator) Name() string { return s.op.Name }

// KeyedState reports whether the live version uses the state functions.
func (s *Operator) KeyedState() bool { return s.cur.Load().plug.UsesState() }

// Step returns the operator's engine step: one instance per worker, each
// with its own worker of the live version, swapping to a new version
// between batches.
func (s *Operator) Step(_ context.Context, run operator.Run) (engine.Step, error) {
	s.unkeyed.Store(run.Unkeyed)
	s.scaledOut.Store(run.ScaledOut)
	op := s.op
	return engine.Step{Name: op.Name, BatchSize: op.BatchSize, KeyedState: s.KeyedState(),
		New: func(ctx context.Context) (engine.Operator, error) {
			o := &instance{name: op.Name, slot: s}
			if err := o.swap(ctx, s.cur.Load()); err != nil {
				return nil, operator.AtPlugin(op, err)
			}
			if op.StateTTL > 0 {
				return newTTLOperator(o, op, engine.KeyOwner(ctx)), nil
			}
			return o, nil
		}}, nil
}

// Close closes every version the operator loaded. It is safe to call more
// than once.
func (s *Operator) Close(ctx context.Context) error {
	s.close(ctx)
	return nil
}

// Reload loads the plugin again from its live path; see reload. The
// ticket's Result says what happened.
func (s *Operator) Reload(ctx context.Context) Ticket { return s.reload(ctx) }

// Promote makes the shadow candidate the live version.
func (s *Operator) Promote(ctx context.Context) error { return s.promote(ctx) }

// Status describes the live version, for the admin API.
func (s *Operator) Status() PluginStatus { return s.status() }

// Err is why the reload's new version was refused, naming the operator, or
// nil.
func (t *Ticket) Err() error {
	if t.err == nil {
		return nil
	}
	return fmt.Errorf("operator %q: %w", t.res.Operator, t.err)
}
