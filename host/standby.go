package host

import (
	"context"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
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
	warm := p.warmStandby(cc)
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

// warmStandby returns what a standby does each time it finds its group
// still taken, or nil: with checkpoints, it applies the changelog's new
// checkpoints to its own store, as Kafka Streams' standby replicas do, so
// that taking over replays only what the active instance wrote in its
// last second. Failures are logged; the standby goes on waiting.
func (p *Pipeline) warmStandby(cc kafka.ClientConfig) func(context.Context) {
	c := &p.cfg.Checkpoints
	cs, ok := p.opts.Store.(state.Checkpointer)
	if !c.Enabled || !ok {
		return nil
	}
	ck := &checkpointer{p: p, cs: cs}
	var meta storeMeta
	loaded, announced := false, false
	return func(ctx context.Context) {
		if !loaded {
			m, err := p.lastCheckpoint(cs)
			if err != nil {
				p.opts.Logger.Warn("standby: reading the state's last checkpoint failed", "pipeline", p.cfg.Name, "error", err)
				return
			}
			meta, loaded = m, true
		}
		start := time.Now()
		res, err := ck.replay(ctx, cc, c.ChangelogTopic, &meta)
		switch {
		case err != nil && ctx.Err() == nil:
			p.opts.Logger.Warn("standby: applying the changelog failed; trying again", "pipeline", p.cfg.Name, "error", err)
		case err != nil:
		case !announced && res.Meta != nil:
			announced = true
			p.opts.Logger.Info("standby: keeping the state up to date from the changelog", "pipeline", p.cfg.Name,
				"changes", res.Changes, "changelog_next", res.Next, "took", time.Since(start))
		case res.Changes > 0:
			p.opts.Logger.Debug("standby: applied the changelog", "pipeline", p.cfg.Name,
				"changes", res.Changes, "changelog_next", res.Next, "took", time.Since(start))
		}
	}
}
