package host

import (
	"context"

	"github.com/weir-stream/weir/host/internal/checkpoint"
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
// state now: a window, a rolling operator, a join, or a plugin whose live
// version uses the state functions.
func (p *Pipeline) keyedState() bool {
	for _, o := range p.ops {
		if o.KeyedState() {
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
	warm := p.checkpointSetup(cc).WarmStandby()
	for i := range p.cfg.Sources {
		s := &p.cfg.Sources[i]
		if s.Type != config.SourceKafka {
			continue
		}
		p.runState.Store(StateStandby)
		sb := kafka.Standby{Group: s.Group, InstanceID: s.InstanceID, SessionTimeout: s.SessionTimeout}
		if err := kafka.AwaitSoleMember(ctx, cc, sb, p.opts.Logger.With("pipeline", p.cfg.Name, "source", s.Name), warm); err != nil {
			return err
		}
	}
	return nil
}

// checkpointSetup is what the run's checkpoints are set up from.
func (p *Pipeline) checkpointSetup(cc kafka.ClientConfig) checkpoint.Setup {
	return checkpoint.Setup{Config: p.cfg, Store: p.opts.Store, Logger: p.opts.Logger.With("pipeline", p.cfg.Name),
		Kafka: cc, Keyed: p.keyedState()}
}
