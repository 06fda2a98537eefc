package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weir-stream/weir/host/internal/task"

	"github.com/weir-stream/weir/host/statetool"
	"github.com/weir-stream/weir/state"
)

// ErrNoSuchOperator is returned by QueryState for an operator the pipeline
// does not have.
var ErrNoSuchOperator = errors.New("no such operator")

// NotLocalError is returned by QueryState when the pipeline's instances
// share its consumer group by task and the record key belongs to a task
// another instance runs: this instance's store has no current copy of it.
// Owner names the instance to ask, as Kafka Streams' queryMetadataForKey
// does; it is nil when no instance owns the task at the moment (the group
// is moving tasks). It is a plain value.
type NotLocalError struct {
	Task  int32
	Owner *TaskOwner
}

// TaskOwner is the instance that runs a task: its instance_id (static
// membership; empty without one), Kafka client id and host.
type TaskOwner struct {
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
}

func (e *NotLocalError) Error() string {
	if e.Owner == nil {
		return fmt.Sprintf("the key belongs to task %d, which no instance owns at the moment (the group is moving tasks): ask again", e.Task)
	}
	who := e.Owner.ClientID + " on " + e.Owner.Host
	if e.Owner.InstanceID != "" {
		who = e.Owner.InstanceID + " (" + who + ")"
	}
	return fmt.Sprintf("the key belongs to task %d, which another instance owns: ask %s", e.Task, who)
}

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
			if err := p.checkLocal(recordKey); err != nil {
				return nil, err
			}
			return statetool.Query(sc, string(op.Type), operator, recordKey)
		}
	}
	return nil, fmt.Errorf("%w %q in pipeline %s", ErrNoSuchOperator, operator, p.cfg.Name)
}

// checkLocal returns a *NotLocalError when the current run shares its
// group by task and recordKey's task is not one of its own.
func (p *Pipeline) checkLocal(recordKey []byte) error {
	ri := p.run.Load()
	if ri == nil || ri.tasks == nil || len(ri.sources) != 1 {
		return nil
	}
	t := int32(task.Of(recordKey, ri.tasks.Count()))
	if slices.Contains(ri.tasks.Begun(), t) {
		return nil
	}
	e := &NotLocalError{Task: t}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if o, ok, err := ri.sources[0].TaskOwner(ctx, t); err == nil && ok {
		e.Owner = &TaskOwner{InstanceID: o.InstanceID, ClientID: o.ClientID, Host: o.Host}
	}
	return e
}
