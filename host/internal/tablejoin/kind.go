package tablejoin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/operator"
)

// Kind is the operator table's row for table_join.
var Kind = operator.Kind{Load: func(_ context.Context, op *config.Operator, env operator.Env) (operator.Operator, error) {
	return tableOp{op: op, log: env.Logger}, nil
}}

// tableOp is a loaded table_join operator. Its table is loaded for each
// run, before any source reads: every record then meets at least what the
// table's topic held when the run started.
type tableOp struct {
	op  *config.Operator
	log *slog.Logger
}

// Step loads the table and returns the step: one operator per worker, all
// reading the same table, which stops following its topic when the run
// ends.
func (o tableOp) Step(ctx context.Context, run operator.Run) (engine.Step, error) {
	op := o.op
	t, err := kafka.OpenTable(ctx, kafka.TableConfig{Client: run.Kafka, Topic: op.TableJoin.Topic, Logger: o.log})
	if err != nil {
		if errors.Is(err, kafka.ErrNoTopic) {
			return engine.Step{}, fmt.Errorf("%s: %s: topic %q does not exist; create it (a compacted topic, keyed by the table key) before the run", op.At("topic"), op.FieldPath("topic"), op.TableJoin.Topic)
		}
		return engine.Step{}, operator.At(op, fmt.Errorf("loading the table: %w", err))
	}
	run.Defer(t.Close)
	cfg := Config{Name: op.Name, Table: t, KeyPath: op.TableJoin.Path, Into: op.TableJoin.Into,
		Left: op.TableJoin.Join == config.JoinLeft}
	return engine.Step{Name: op.Name, New: func(context.Context) (engine.Operator, error) {
		return New(cfg), nil
	}}, nil
}

func (tableOp) KeyedState() bool            { return false }
func (tableOp) Close(context.Context) error { return nil }
