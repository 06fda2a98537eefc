package host

import (
	"context"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// exclusive reports whether the pipeline must be the only active instance
// in its Kafka sources' consumer groups: it keeps keyed state (a window, a
// rolling operator, a plugin that uses state) or takes checkpoints. Its
// state is not partitioned by input partition, and its changelog has one
// partition and one writer, so a second instance sharing the group would
// split keys' state between the two and interleave their checkpoints. A
// second instance is a standby instead (awaitSoleMember), and takes over,
// from the changelog, when the first leaves the group.
func (p *Pipeline) exclusive() bool {
	if p.cfg.Checkpoints.Enabled {
		return true
	}
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
