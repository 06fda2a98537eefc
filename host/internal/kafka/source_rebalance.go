package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A source sharing its group by task whose run can ask for a checkpoint at
// once (Tasks.SetCheckpointNow: at least once) lets the group's rebalances
// proceed only at checkpoints, as Kafka Streams commits its tasks before
// it gives one up. The client blocks rebalances from a poll that returned
// records until AllowRebalance (kgo.BlockRebalanceOnPoll); the source
// calls it once a checkpoint has covered everything it handed out, not
// after every poll. A rebalance that comes meanwhile (onBlocked) asks for
// a checkpoint at once; the source puts back what it has not handed out
// of the poll (hurried), polls nothing more, passes the checkpoint's
// barrier, and lets the rebalance proceed after it: a move of tasks then
// finds everything the run read checkpointed, and the run that ends for
// it redoes nothing. A rebalance that does not wait (no records polled
// since the last checkpoint) finds the same. The exception is a session
// the group has ended (the callback waiting is OnPartitionsLost): the
// group has given the tasks to others, so the source writes nothing more
// for them and lets the callback run at once, the run rolling back to its
// last checkpoint as before. Exactly once, rebalances proceed after every
// poll (see checkpoint.Setup.Run for why).

// memberCheckTimeout bounds the question whether the group still lists
// this member.
const memberCheckTimeout = 5 * time.Second

// onBlocked is told, on a goroutine of its own, that a rebalance callback
// waits for the poll being handed out (kgo.OnPartitionsCallbackBlocked).
func (s *Source) onBlocked(ctx context.Context, _ *kgo.Client) {
	if s.tasks != nil && s.tasks.atCheckpoints() && s.memberLive(ctx) && s.tasks.askCheckpoint() {
		s.log.Debug("kafka source: a rebalance waits; it proceeds at the checkpoint asked for now", "group", s.group)
		return // the checkpoint's request wakes the poll (engine.Out.PollContext)
	}
	s.hurry.Store(true)
	s.cancelPoll()
}

// memberLive reports whether the group lists this member: a rebalance of
// its session, not one that ended it.
func (s *Source) memberLive(ctx context.Context) bool {
	member, _ := s.cl.GroupMetadata()
	if member == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, memberCheckTimeout)
	defer cancel()
	groups, err := kadm.NewClient(s.cl).DescribeGroups(ctx, s.group)
	if err != nil {
		s.log.Debug("kafka source: describing the group for a waiting rebalance", "group", s.group, "error", err)
		return false
	}
	g, ok := groups[s.group]
	if !ok || g.Err != nil {
		return false
	}
	for _, m := range g.Members {
		if m.MemberID == member {
			return true
		}
	}
	return false
}

// pollContext returns the context of one poll, which onBlocked cancels
// for a rebalance that must not wait for input.
func (s *Source) pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.pollCancel = cancel
	s.mu.Unlock()
	if s.hurry.Load() {
		cancel() // told before the poll began
	}
	return ctx, cancel
}

// cancelPoll wakes the poll in progress, if any.
func (s *Source) cancelPoll() {
	s.mu.Lock()
	cancel := s.pollCancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// atCheckpoint reports whether the rebalances the source blocks wait for
// its next checkpoint: it shares its group by task, its run can ask for a
// checkpoint at once, and no ended session waits.
func (s *Source) atCheckpoint() bool {
	return s.tasks != nil && s.tasks.atCheckpoints() && !s.hurry.Load()
}

// allowRebalance lets a rebalance the polls blocked proceed.
func (s *Source) allowRebalance() {
	s.hurry.Store(false)
	s.cl.AllowRebalance()
}

// awaitCheckpoint, while the run awaits a checkpoint (Tasks.askCheckpoint),
// waits without polling until the checkpoint asks for the run's barrier,
// and reports whether it did (false: the run ends, or an ended session
// waits).
func (r *sourceRun) awaitCheckpoint(pollCtx context.Context) bool {
	s := r.s
	if !s.tasks.awaitingCheckpoint() || s.hurry.Load() {
		return false
	}
	wait, cancel := s.pollContext(r.out.PollContext(pollCtx))
	defer cancel()
	<-wait.Done()
	return pollCtx.Err() == nil && !s.hurry.Load()
}

// afterCheckpoint lets the rebalances blocked so far proceed once a
// checkpoint covered everything the run handed out (its barrier just
// passed one).
func (r *sourceRun) afterCheckpoint() {
	s := r.s
	if s.tookCheckpoint.Swap(false) && s.tasks != nil && s.tasks.atCheckpoints() {
		s.tasks.checkpointed()
		s.allowRebalance()
	}
}
