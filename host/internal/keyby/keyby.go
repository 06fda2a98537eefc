package keyby

import (
	"context"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/operator"
)

// Kind is the operator table's row for key_by.
var Kind = operator.Kind{Load: func(_ context.Context, op *config.Operator, _ operator.Env) (operator.Operator, error) {
	return operator.Fixed{S: engine.Step{Name: op.Name, BatchSize: op.BatchSize, KeyBy: true,
		New: func(context.Context) (engine.Operator, error) {
			return New(op.Name, op.KeyPath, op.SourceKeyPaths), nil
		}}}, nil
}}
