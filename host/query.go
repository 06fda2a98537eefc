package host

import (
	"errors"
	"fmt"

	"github.com/weir-stream/weir/host/statetool"
	"github.com/weir-stream/weir/state"
)

// ErrNoSuchOperator is returned by QueryState for an operator the pipeline
// does not have.
var ErrNoSuchOperator = errors.New("no such operator")

// QueryState returns the state entries a running (or stopped) pipeline's
// operator holds for recordKey, read from its state store now, as Kafka
// Streams' interactive queries read a store. A plugin's state is current;
// a window or rolling operator keeps its open state in memory and writes
// it to the store at checkpoints (or when it spills, with
// max_keys_in_memory), so the store shows it as of then. It is safe to
// call while the pipeline runs.
func (p *Pipeline) QueryState(operator string, recordKey []byte) ([]statetool.Entry, error) {
	for i := range p.cfg.Operators {
		if op := &p.cfg.Operators[i]; op.Name == operator {
			sc, ok := p.opts.Store.(state.Scanner)
			if !ok {
				return nil, fmt.Errorf("the state store (%T) cannot be queried", p.opts.Store)
			}
			return statetool.Query(sc, string(op.Type), operator, recordKey)
		}
	}
	return nil, fmt.Errorf("%w %q in pipeline %s", ErrNoSuchOperator, operator, p.cfg.Name)
}
