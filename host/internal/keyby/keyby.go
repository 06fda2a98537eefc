// Package keyby is the operator table's row for key_by: it re-keys records
// by a field and makes the engine route them to workers by the new key.
// The re-keying itself is the engine's (engine.NewKeyBy), since routing by
// key is the engine's job.
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
			return engine.NewKeyBy(op.Name, op.KeyPath, op.SourceKeyPaths), nil
		}}}, nil
}}
