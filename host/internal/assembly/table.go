package assembly

import (
	"context"
	"errors"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/dbio"
	"github.com/weir-stream/weir/host/internal/dedupe"
	"github.com/weir-stream/weir/host/internal/join"
	"github.com/weir-stream/weir/host/internal/keyby"
	"github.com/weir-stream/weir/host/internal/operator"
	"github.com/weir-stream/weir/host/internal/pluginop"
	"github.com/weir-stream/weir/host/internal/tablejoin"
	"github.com/weir-stream/weir/host/internal/window"
)

// kinds is the operator table: every operator kind a pipeline file may
// name, and the package that is its home.
var kinds = map[config.OperatorType]operator.Kind{
	config.OperatorMap:       pluginop.Kind,
	config.OperatorFlatMap:   pluginop.Kind,
	config.OperatorFilter:    pluginop.Kind,
	config.OperatorKeyBy:     keyby.Kind,
	config.OperatorWindow:    window.WindowKind,
	config.OperatorRolling:   window.RollingKind,
	config.OperatorLookup:    dbio.LookupKind,
	config.OperatorTableJoin: tablejoin.Kind,
	config.OperatorJoin:      join.Kind,
	dedupe.Type:              dedupe.Kind,
}

// Schemas returns what the table's rows add to config.Load: the types
// whose packages decode their own settings, and the kinds' checks.
func Schemas() config.Kinds {
	out := config.Kinds{}
	for t, k := range kinds {
		if k.Schema.Decode != nil || k.Schema.Check != nil {
			out[t] = k.Schema
		}
	}
	return out
}

// LoadOperators loads every operator of cfg, in order, each with the Env
// env returns for its index. On error, the operators loaded so far are
// closed. A plugin's failure is an *operator.PluginError.
func LoadOperators(ctx context.Context, cfg *config.Pipeline, env func(i int) operator.Env) ([]operator.Operator, error) {
	ops := make([]operator.Operator, 0, len(cfg.Operators))
	for i := range cfg.Operators {
		op := &cfg.Operators[i]
		k, ok := kinds[op.Type]
		if !ok {
			err := fmt.Errorf("%s: %s: operator type %q has no implementation", op.Pos, op.Where, op.Type)
			return nil, errors.Join(err, CloseOperators(ctx, ops))
		}
		o, err := k.Load(ctx, op, env(i))
		if err != nil {
			CloseOperators(ctx, ops)
			return nil, err
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// CloseOperators closes ops.
func CloseOperators(ctx context.Context, ops []operator.Operator) error {
	var errs []error
	for _, o := range ops {
		errs = append(errs, o.Close(ctx))
	}
	return errors.Join(errs...)
}

// DescribeEntry says what a stored entry of an operator of type t is, by
// its kind's layouts; false when it follows none (or t keeps no state).
func DescribeEntry(t config.OperatorType, recordKey, userKey, value []byte) (operator.KeyEntry, bool) {
	if d := kinds[t].Describe; d != nil {
		return d(recordKey, userKey, value)
	}
	return operator.KeyEntry{}, false
}
