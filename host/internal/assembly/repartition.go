package assembly

import (
	"context"
	"fmt"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// A pipeline sharing its group by task whose keyed state follows a key_by
// repartitions there, as Kafka Streams does: the key_by's records go to
// the topic <pipeline>-<key_by>-repartition, created with as many
// partitions as the input, each to its new key's partition (its task),
// and the pipeline's one Kafka source reads that topic too, its
// partitions being the tasks, with the changelog partitions of the same
// numbers. The input's partitions hold no state: their offsets are the
// group's.

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
	input := b.Config.Sources[0].Topics[0]
	var err error
	b.repartParts, b.repartInputs, err = kafka.EnsureRepartitionTopic(ctx, b.cc, topic, input, 0, b.Logger.With("pipeline", b.Config.Name))
	return err
}

// repartition makes the engine's Repartition: the sink writing the
// key_by's records to the topic, through the run's transaction when
// exactly once.
func (b *builder) repartition(context.Context) error {
	topic := b.repartTopic()
	if topic == "" {
		return nil
	}
	name := b.Config.Operators[b.repartAt].Name
	snk, err := kafka.NewRepartitionSink(kafka.RepartitionSinkConfig{
		Sink:       kafka.SinkConfig{Name: name + " (repartition)", Client: b.cc, Topic: topic, Txn: b.txn, Logger: b.Logger},
		Partitions: b.repartParts, Inputs: b.repartInputs,
	})
	if err != nil {
		return fmt.Errorf("%s: repartitioning: %w", b.Config.Operators[b.repartAt].Pos, err)
	}
	b.run.Engine.Repartitions = []engine.Repartition{{After: b.repartAt, Topic: topic, Sink: snk}}
	if b.resumed {
		return nil
	}
	b.Logger.Info("the pipeline repartitions after a key_by: its instances share the keyed state after it by task", "pipeline", b.Config.Name,
		"key_by", name, "topic", topic, "partitions", b.repartParts)
	return nil
}
