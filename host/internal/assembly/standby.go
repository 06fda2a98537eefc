package assembly

import (
	"context"
	"slices"

	"github.com/weir-stream/weir/host/internal/checkpoint"
	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/task"
)

// awaitSoleMember waits, as a standby, until the consumer group of every
// Kafka source has no other member, when the pipeline keeps keyed state.
// That state is not partitioned by input partition, and its changelog has
// one partition and one writer, so a second instance sharing the group
// would split keys' state between the two and interleave their
// checkpoints. A second instance is a standby instead, and takes over,
// from the changelog, when the first leaves the group; meanwhile it keeps
// its store warm (checkpoint.Setup.WarmStandby). Pipelines without keyed
// state, checkpointed or not, scale out: their instances share the
// group's partitions, and the group's offsets are their positions.
func (b *builder) awaitSoleMember(ctx context.Context) error {
	if !b.keyed || b.byTask {
		return nil
	}
	warm := b.checkpointSetup().WarmStandby()
	groups := map[string]bool{}
	for i := range b.Config.Sources {
		s := &b.Config.Sources[i]
		if s.Type != config.SourceKafka || groups[s.Group] {
			continue // one client per group reads its sources
		}
		groups[s.Group] = true
		if b.OnStandby != nil {
			b.OnStandby()
		}
		sb := kafka.Standby{Group: s.Group, InstanceID: s.InstanceID, SessionTimeout: s.SessionTimeout}
		if err := kafka.AwaitSoleMember(ctx, b.cc, sb, b.Logger.With("pipeline", b.Config.Name, "source", s.Name), warm); err != nil {
			return err
		}
	}
	return nil
}

// checkpointSetup is what the run's checkpoints are set up from.
func (b *builder) checkpointSetup() checkpoint.Setup {
	return checkpoint.Setup{Config: b.Config, Store: b.Store, Logger: b.Logger.With("pipeline", b.Config.Name),
		Kafka: b.cc, Txn: b.txn, KafkaRun: b.kafkaRun, Keyed: b.keyed, SyncOutputs: b.run.Engine.SyncOutputs, OnRestore: b.OnRestore, OnCommit: b.OnCommit,
		Tasks: b.taskSet(), TasksTopic: b.repartTopic(), Resumed: b.resumed, StandbyTasks: b.standbyTasks(),
		Preload: b.preload(), Replayed: b.replayed()}
}

// preload returns what makes, while a run sharing its group by task
// catches up with tasks it was given, the keyed operators' instances of
// those tasks for the next run (engine.Kept.Preload); nil for another.
func (b *builder) preload() func(context.Context, []int32) error {
	if b.taskSet() == nil {
		return nil
	}
	return b.Carry.kept().Preload
}

// replayed returns what is told that a run's set-up replayed changes
// into the store: the instances the last run kept may no longer match it.
func (b *builder) replayed() func() {
	if b.taskSet() == nil {
		return nil
	}
	return func() {
		if err := b.Carry.DropOperators(context.Background()); err != nil {
			b.Logger.Warn("closing the operators the last run kept", "pipeline", b.Config.Name, "error", err)
		}
	}
}

// checkpoints brings the state to the last checkpoint and sets up the
// run's checkpoints, once its sources exist.
func (b *builder) checkpoints(ctx context.Context) error {
	ck, closeChangelog, err := b.checkpointSetup().Run(ctx)
	if err != nil {
		return err
	}
	b.run.Engine.Checkpointing = ck
	b.run.stops = append(b.run.stops, closeChangelog)
	if t := b.taskSet(); t != nil {
		b.run.Tasks = t
		if n := t.Count(); n > 1 {
			b.run.Engine.OwnsKey = t.OwnsKey()
			b.run.Engine.Tasks = &engine.Tasks{Of: func(k []byte) int32 { return int32(task.Of(k, n)) },
				Owned: slices.Clone(t.Begun()), Kept: b.Carry.kept(), OnKept: b.onKept}
		}
	}
	return nil
}

// standbyTasks returns what tells a run sharing its group by task which
// tasks it keeps standby copies of: its standby replicas' and the tasks
// it warms up to take over; nil for another run.
func (b *builder) standbyTasks() func(context.Context) ([]int32, error) {
	n := b.Config.Checkpoints.StandbyReplicas
	if !b.byTask {
		return nil
	}
	return func(ctx context.Context) ([]int32, error) { return b.Carry.source.StandbyTasks(ctx, n) }
}

// taskSet returns the tasks of a run sharing its group by task, or nil.
func (b *builder) taskSet() *kafka.Tasks {
	if !b.byTask {
		return nil
	}
	return b.Carry.tasks
}

// onKept logs that a run goes on with the keyed operators' instances of
// the last (engine.Tasks.OnKept).
func (b *builder) onKept(kept, preloaded int) {
	b.Logger.Info("the run goes on with the last run's keyed operators: they forget the tasks taken away, and only the tasks given since restore their state",
		"pipeline", b.Config.Name, "instances", kept, "preloaded", preloaded)
}
