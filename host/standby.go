package host

import (
	"context"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// exclusive reports whether the pipeline must be the only active instance
// in its Kafka sources' consumer groups: it keeps keyed state (a window, a
// rolling operator, a plugin that uses state). That state is not
// partitioned by input partition, and its changelog has one partition and
// one writer, so a second instance sharing the group would split keys'
// state between the two and interleave their checkpoints. A second
// instance is a standby instead (awaitSoleMember), and takes over, from the
// changelog, when the first leaves the group. Pipelines without keyed
// state, checkpointed or not, scale out: their instances share the group's
// partitions, and the group's offsets are their positions.
func (p *Pipeline) exclusive() bool { return p.keyedState() }

// keyedState reports whether an operator of the pipeline keeps keyed
// state: a window, a rolling operator, or a plugin whose live version uses
// the state functions.
func (p *Pipeline) keyedState() bool {
	for i := range p.cfg.Operators {
		op := &p.cfg.Operators[i]
		switch {
		case op.Type == config.OperatorWindow, op.Type == config.OperatorRolling:
			return true
		case p.slots[i] != nil && p.slots[i].cur.Load().plug.UsesState():
			return true
		}
	}
	return false
}

// awaitSoleMember waits, as a standby, until the consumer group of every
// Kafka source has no other member, when the pipeline is exclusive. The
// run's state is StateStandby meanwhile.
func (p *Pipeline) awaitSoleMember(ctx context.Context, cc kafka.ClientConfig) error {
	if !p.exclusive() {
		return nil
	}
	for i := range p.cfg.Sources {
		s := &p.cfg.Sources[i]
		if s.Type != config.SourceKafka {
			continue
		}
		p.runState.Store(StateStandby)
		if err := kafka.AwaitSoleMember(ctx, cc, s.Group, s.InstanceID, p.opts.Logger.With("pipeline", p.cfg.Name, "source", s.Name)); err != nil {
			return err
		}
	}
	return nil
}
