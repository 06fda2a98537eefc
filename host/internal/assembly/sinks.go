package assembly

import (
	"context"
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/dbio"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// sinks opens the pipeline's sinks.
func (b *builder) sinks(ctx context.Context) error {
	for i := range b.Config.Sinks {
		snk, err := b.sink(ctx, &b.Config.Sinks[i])
		if err != nil {
			return err
		}
		b.run.Engine.Sinks = append(b.run.Engine.Sinks, snk)
	}
	return nil
}

// sink opens the sink s.
func (b *builder) sink(ctx context.Context, s *config.Sink) (engine.Sink, error) {
	format := engine.SinkJSON
	if s.Format == config.SinkFormatRaw {
		format = engine.SinkRaw
	}
	switch s.Type {
	case config.SinkStdout:
		return engine.NewWriterSink(s.Name, "standard output", b.Stdout, format, false), nil
	case config.SinkFile:
		return engine.NewFileSink(s.Name, s.Path, format)
	case config.SinkKafka:
		return b.kafkaSink(s)
	case config.SinkDatabase:
		return dbio.NewSinkFrom(ctx, s)
	}
	return engine.NewDiscardSink(s.Name), nil
}

// deadLetter opens the dead-letter output.
func (b *builder) deadLetter(context.Context) error {
	ep := b.run.Engine
	switch dl := &b.Config.DeadLetter; dl.Type {
	case config.DeadLetterFile:
		f, err := engine.NewDeadLetterFile(dl.Path)
		if err != nil {
			return fmt.Errorf("%s: dead_letter.path: %w", dl.At("path"), err)
		}
		ep.DeadLetter = f
	case config.DeadLetterKafka:
		ks, err := kafka.NewDeadLetterSink(kafka.DeadLetterConfig{Client: b.cc, Topic: dl.Topic, Logger: b.Logger, Txn: b.txn})
		if err != nil {
			return fmt.Errorf("%s: dead_letter: %w", dl.Pos, err)
		}
		ep.DeadLetter = ks
	default:
		ep.DeadLetter = engine.NewDeadLetterWriter("standard error", b.Stderr, false)
	}
	return nil
}
