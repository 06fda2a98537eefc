package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/join"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/tablejoin"
)

// openTables loads the table of each table_join operator, by operator
// index, before any source reads: every record then meets at least what
// the table's topic held when the run started. closeAll stops following
// the topics.
func (p *Pipeline) openTables(ctx context.Context, cc kafka.ClientConfig) (tables map[int]*kafka.Table, closeAll func(), err error) {
	tables = make(map[int]*kafka.Table)
	closeAll = func() {
		for _, t := range tables {
			t.Close()
		}
	}
	for i := range p.cfg.Operators {
		op := &p.cfg.Operators[i]
		if op.Type != config.OperatorTableJoin {
			continue
		}
		t, err := kafka.OpenTable(ctx, kafka.TableConfig{Client: cc, Topic: op.TableJoin.Topic, Logger: p.opts.Logger})
		if err != nil {
			closeAll()
			if errors.Is(err, kafka.ErrNoTopic) {
				return nil, nil, fmt.Errorf("%s: %s: topic %q does not exist; create it (a compacted topic, keyed by the table key) before the run", op.At("topic"), op.FieldPath("topic"), op.TableJoin.Topic)
			}
			return nil, nil, fmt.Errorf("%s: %s: loading the table: %w", op.Pos, op.Where, err)
		}
		tables[i] = t
	}
	return tables, closeAll, nil
}

// tableJoinStep returns the engine step of a table_join operator: one
// operator per worker, all reading the same table.
func tableJoinStep(op *config.Operator, t *kafka.Table) engine.Step {
	cfg := tablejoin.Config{Name: op.Name, Table: t, KeyPath: op.TableJoin.Path, Into: op.TableJoin.Into,
		Left: op.TableJoin.Join == config.JoinLeft}
	return engine.Step{Name: op.Name, New: func(context.Context) (engine.Operator, error) {
		return tablejoin.New(cfg), nil
	}}
}

// joinStep returns the engine step of a join operator: one operator per
// worker, each indexing the stored records of the keys it owns.
func (p *Pipeline) joinStep(op *config.Operator) engine.Step {
	j := &op.Join
	cfg := join.Config{Name: op.Name, Left: j.Left, Right: j.Right, Bounded: j.Between,
		Lower: j.Lower.Milliseconds(), Upper: j.Upper.Milliseconds(), Window: j.Window.Milliseconds(), TTL: j.TTL.Milliseconds(), Store: p.opts.Store}
	return engine.Step{Name: op.Name, KeyedState: true, New: func(ctx context.Context) (engine.Operator, error) {
		c := cfg
		c.Owns = engine.KeyOwner(ctx)
		o, err := join.New(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", op.Pos, op.Where, err)
		}
		return o, nil
	}}
}
