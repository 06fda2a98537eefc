package broker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/weir-stream/weir/host/internal/kafka"
)

// Options configure Start and Run. It is a plain value.
type Options struct {
	Listen  string // host:port; empty for 127.0.0.1 on a free port
	Topics  string // "name:partitions,…", created at start
	DataDir string // persist topics here; empty keeps them in memory
	// AutoCreateTopics creates a topic, with one partition, when a client
	// first asks for it allowing creation (producers do), as Kafka's
	// auto.create.topics.enable.
	AutoCreateTopics bool
	Logger           *slog.Logger
	// Ready, if set, is called by Run with the broker's addresses once it
	// listens; Start ignores it.
	Ready func(addrs []string)
}

// Broker is an embedded Kafka broker (kfake, the real wire protocol) that
// pipelines naming no brokers can share (host.Options.Broker). It is safe
// for concurrent use. Close it after the pipelines that use it have
// finished; after Close only Addrs and Close may be called.
type Broker struct {
	b *kafka.Broker
}

// Start starts an embedded broker as opts say (Topics, DataDir, Listen,
// AutoCreateTopics). The caller closes it.
func Start(opts Options) (*Broker, error) {
	topics, err := kafka.ParseTopics(opts.Topics)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	b, err := kafka.StartBroker(kafka.BrokerConfig{Listen: opts.Listen, Topics: topics, DataDir: opts.DataDir, Logger: opts.Logger,
		AutoCreateTopics: opts.AutoCreateTopics})
	if err != nil {
		return nil, err
	}
	return &Broker{b: b}, nil
}

// Run runs an embedded broker until ctx is done, then closes it.
func Run(ctx context.Context, opts Options) error {
	b, err := Start(opts)
	if err != nil {
		return err
	}
	defer b.Close()
	if opts.Ready != nil {
		opts.Ready(b.Addrs())
	}
	<-ctx.Done()
	return nil
}

// Addrs returns the addresses the broker listens on, host:port.
func (b *Broker) Addrs() []string { return b.b.Addrs() }

// CreateTopic creates a topic with the given number of partitions. A topic
// that already exists is left alone, whatever its partition count, and is
// not an error.
func (b *Broker) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	return b.b.CreateTopic(ctx, topic, partitions)
}

// Close stops the broker, saving its topics first when it has a DataDir.
// It is idempotent.
func (b *Broker) Close() { b.b.Close() }
