package join

import (
	"context"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/operator"
)

// Kind is the operator table's row for join. A join keeps keyed state
// always.
var Kind = operator.Kind{Load: load, Describe: Describe}

// load loads a join operator: one operator per worker, each indexing the
// stored records of the keys it owns.
func load(_ context.Context, op *config.Operator, env operator.Env) (operator.Operator, error) {
	j := &op.Join
	cfg := Config{Name: op.Name, Left: j.Left, Right: j.Right, Bounded: j.Between,
		Lower: j.Lower.Milliseconds(), Upper: j.Upper.Milliseconds(), Window: j.Window.Milliseconds(), TTL: j.TTL.Milliseconds(), Kind: j.Kind, Store: env.Store}
	st := engine.Step{Name: op.Name, KeyedState: true, New: func(ctx context.Context) (engine.Operator, error) {
		c := cfg
		c.Owns = engine.KeyOwner(ctx)
		o, err := New(c)
		if err != nil {
			return nil, operator.At(op, err)
		}
		return o, nil
	}}
	return operator.Fixed{S: st, Keyed: true}, nil
}
