package assembly

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// A pipeline sharing its group by task whose keyed state follows a key_by
// repartitions there, as Kafka Streams does: the key_by's records go to
// the topic <pipeline>-<key_by>-repartition, created with as many
// partitions as the input, each to its new key's partition (its task),
// and the pipeline's Kafka client reads that topic too, its partitions
// being the tasks, with the changelog partitions of the same numbers.
// The inputs' partitions hold no state: their offsets are the group's.
// A pipeline may read several input topics (a join's two sides), all in
// one group: they are numbered together as the topic's upstream tasks
// (kafka.Inputs), and each record read back from the topic names the
// source it was read from upstream.

// repartTopic returns the run's repartition topic, or "" for none.
func (b *builder) repartTopic() string {
	if b.repartAt < 0 {
		return ""
	}
	return b.Config.Name + "-" + b.Config.Operators[b.repartAt].Name + "-repartition"
}

// repartitionTopic creates the run's repartition topic unless it exists,
// and learns its partitions and the input's.
func (b *builder) repartitionTopic(ctx context.Context) error {
	topic := b.repartTopic()
	if topic == "" {
		return nil
	}
	var err error
	b.repartParts, b.repartInputs, err = kafka.EnsureRepartitionTopic(ctx, b.cc, topic, inputTopics(b.Config), 0, b.Logger.With("pipeline", b.Config.Name))
	return err
}

// repartition makes the engine's Repartition: the sink writing the
// key_by's records to the topic, through the run's transaction when
// exactly once; or, for a run that routes them in process (inProcess),
// nothing, the source then leaving the topic unread.
func (b *builder) repartition(ctx context.Context) error {
	topic := b.repartTopic()
	if topic == "" {
		return nil
	}
	name := b.Config.Operators[b.repartAt].Name
	log := b.Logger.With("pipeline", b.Config.Name, "key_by", name, "topic", topic)
	rt, err := b.route(ctx, log)
	if err != nil {
		return fmt.Errorf("%s: repartitioning: %w", b.Config.Operators[b.repartAt].Pos, err)
	}
	b.Carry.source.SetRoute(rt)
	if rt.InProcess {
		b.run.RoutedInProcess = true
		return nil
	}
	snk, err := kafka.NewRepartitionSink(kafka.RepartitionSinkConfig{
		Sink:       kafka.SinkConfig{Name: name + " (repartition)", Client: b.cc, Topic: topic, Txn: b.txn, Logger: b.Logger},
		Partitions: b.repartParts, Inputs: b.repartInputs,
	})
	if err != nil {
		return fmt.Errorf("%s: repartitioning: %w", b.Config.Operators[b.repartAt].Pos, err)
	}
	b.run.Engine.Repartitions = []engine.Repartition{{After: b.repartAt, Topic: topic, Sink: snk}}
	if len(b.Carry.tasks.Begun()) > 0 {
		log.Info("the key_by's records go through the repartition topic: the pipeline's instances share the keyed state after it by task",
			"partitions", b.repartParts, "tasks", b.Carry.tasks.Begun())
	}
	return nil
}

// route decides how the run treats its repartition topic: an instance
// that owns every partition of the input and of the topic routes the
// key_by's records in process, as one instance alone does, unless the
// key_by says repartition: true, or records are left in the topic
// (kafka.InProcessUnread); then, if the topic's records are all that
// stands in the way, the run reads them alone, the input paused, and
// stops once it has (Carry.Drained), so that the next may route in
// process. A run whose input resumes before what the topic's tables
// applied (at least once, a commit to the group that failed) goes
// through the topic, which drops the records read again as repeats,
// and stops once its input has passed them, for the same reason.
func (b *builder) route(ctx context.Context, log *slog.Logger) (kafka.Route, error) {
	if b.Config.Operators[b.repartAt].Repartition == config.RepartitionAlways || !b.Carry.tasks.HoldsAll(b.repartParts, b.repartInputs.Total()) {
		return kafka.Route{}, nil
	}
	// Sharing by task, every source is Kafka, in one group, read
	// through the first's client, whose snapshot holds the topic's.
	src := &b.Config.Sources[0]
	chk := kafka.InProcessCheck{Client: b.cc, Group: src.Group, Topic: b.repartTopic(), Inputs: b.repartInputs,
		Partitions: b.repartParts, ExactlyOnce: b.txn != nil, Logger: b.Logger}
	if ck := b.run.Engine.Checkpointing; ck != nil && ck.Restore != nil && len(ck.Restore.Sources) > 0 {
		chk.Snapshot = ck.Restore.Sources[0].Snapshot
	}
	un, err := kafka.InProcessUnread(ctx, chk)
	switch {
	case err != nil:
		return kafka.Route{}, err
	case un.Records != nil:
		log.Info("this instance owns every task: it first applies what the repartition topic holds, its input paused, and then routes the key_by's records in process: "+un.Why,
			"partitions", b.repartParts)
		return kafka.Route{Drain: un.Records, Drained: b.Carry.drain(b.StopRun)}, nil
	case un.Ahead != nil:
		log.Info("this instance owns every task, but the key_by's records go through the repartition topic until its input is past what the topic's tables applied: "+un.Why,
			"partitions", b.repartParts)
		return kafka.Route{CatchUp: un.Ahead, CaughtUp: b.Carry.drain(b.StopRun)}, nil
	case un.Why != "":
		log.Info("this instance owns every task, but the key_by's records go through the repartition topic for this run: "+un.Why,
			"partitions", b.repartParts)
		return kafka.Route{}, nil
	}
	log.Info("this instance owns every task: the key_by's records are routed in process, not through the repartition topic, until the group moves tasks",
		"partitions", b.repartParts)
	return kafka.Route{InProcess: true, Tasks: b.repartParts, Inputs: b.repartInputs.Total()}, nil
}
