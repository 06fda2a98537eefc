package checkpoint

import (
	"context"
	"time"

	"github.com/weir-stream/weir/state"
)

// WarmStandby returns what a standby does each time it finds its group
// still taken, or nil when the run takes no checkpoints: it applies the
// changelog's new checkpoints to its own store, as Kafka Streams' standby
// replicas do, so that taking over replays only what the active instance
// wrote in its last second. Failures are logged; the standby goes on
// waiting. The function is called by one goroutine at a time.
func (su Setup) WarmStandby() func(context.Context) {
	c := &su.Config.Checkpoints
	cs, ok := su.Store.(state.Checkpointer)
	if !c.Enabled || !ok {
		return nil
	}
	var meta Meta
	loaded, announced := false, false
	return func(ctx context.Context) {
		if !loaded {
			m, err := su.lastCheckpoint(cs)
			if err != nil {
				su.Logger.Warn("standby: reading the state's last checkpoint failed", "error", err)
				return
			}
			meta, loaded = m, true
		}
		start := time.Now()
		res, err := su.restorer(cs, nil).replay(ctx, &meta)
		switch {
		case err != nil && ctx.Err() == nil:
			su.Logger.Warn("standby: applying the changelog failed; trying again", "error", err)
		case err != nil:
		case !announced && res.Meta() != nil:
			announced = true
			su.Logger.Info("standby: keeping the state up to date from the changelog",
				"changes", res.Changes, "changelog_offsets", res.Next, "took", time.Since(start))
		case res.Changes > 0:
			su.Logger.Debug("standby: applied the changelog",
				"changes", res.Changes, "changelog_offsets", res.Next, "took", time.Since(start))
		}
	}
}
