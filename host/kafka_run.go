package host

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// Broker is an embedded Kafka broker (kfake, the real wire protocol) that
// pipelines naming no brokers can share. Close it after the pipelines that
// use it have finished. It is safe for concurrent use.
type Broker struct {
	b *kafka.Broker
}

// StartBroker starts an embedded broker as BrokerOptions say (Topics,
// DataDir, Listen).
func StartBroker(opts BrokerOptions) (*Broker, error) {
	topics, err := kafka.ParseTopics(opts.Topics)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	b, err := kafka.StartBroker(kafka.BrokerConfig{Listen: opts.Listen, Topics: topics, DataDir: opts.DataDir, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return &Broker{b: b}, nil
}

// Addrs returns the addresses the broker listens on.
func (b *Broker) Addrs() []string { return b.b.Addrs() }

// Close stops the broker.
func (b *Broker) Close() { b.b.Close() }

// kafkaClient returns the client config for the pipeline's Kafka stages,
// starting an embedded broker (or using Options.Broker) when the pipeline
// names no brokers, and creating there every topic the pipeline names. The
// returned stop function closes a broker started here.
func (p *Pipeline) kafkaClient(ctx context.Context) (kafka.ClientConfig, func(), error) {
	k := p.cfg.Kafka
	cc := kafka.ClientConfig{
		Brokers:  k.Brokers,
		ClientID: k.ClientID,
		SASL:     kafka.SASLConfig{Mechanism: string(k.SASL.Mechanism), User: k.SASL.User, Password: k.SASL.Password},
		TLS: kafka.TLSConfig{Enabled: k.TLS.Enabled, CAFile: k.TLS.CAFile, CertFile: k.TLS.CertFile, KeyFile: k.TLS.KeyFile,
			ServerName: k.TLS.ServerName, InsecureSkipVerify: k.TLS.InsecureSkipVerify},
	}
	if !k.IsEmbedded() {
		return cc, func() {}, nil
	}
	stop := func() {}
	b, partitions := p.opts.Broker, int32(k.Embedded.Partitions)
	if b == nil {
		kb, err := kafka.StartBroker(kafka.BrokerConfig{Listen: k.Embedded.Listen, DataDir: k.Embedded.DataDir, Logger: p.opts.Logger})
		if err != nil {
			return cc, nil, fmt.Errorf("%s: starting the embedded Kafka broker: %w", k.Embedded.Pos, err)
		}
		b = &Broker{b: kb}
		stop = kb.Close
	}
	var topics []string
	for _, s := range p.cfg.Sources {
		topics = append(topics, s.Topics...)
	}
	for _, s := range p.cfg.Sinks {
		if s.Type == config.SinkKafka && s.Topic != "" {
			topics = append(topics, s.Topic)
		}
	}
	if p.cfg.DeadLetter.Type == config.DeadLetterKafka {
		topics = append(topics, p.cfg.DeadLetter.Topic)
	}
	for _, op := range p.cfg.Operators {
		if op.Type == config.OperatorTableJoin {
			topics = append(topics, op.TableJoin.Topic)
		}
	}
	for _, t := range topics {
		if err := b.b.CreateTopic(ctx, t, partitions); err != nil {
			stop()
			return cc, nil, fmt.Errorf("embedded Kafka broker: creating topic %q: %w", t, err)
		}
	}
	cc.Brokers = b.Addrs()
	p.opts.Logger.Info("no Kafka brokers configured: using an embedded broker",
		"pipeline", p.cfg.Name, "addrs", cc.Brokers, "topics", topics, "partitions", partitions)
	return cc, stop, nil
}

func (p *Pipeline) kafkaSource(s *config.Source, cc kafka.ClientConfig) (*kafka.Source, error) {
	start := map[config.StartPosition]kafka.StartPosition{
		config.StartEarliest: kafka.StartEarliest, config.StartLatest: kafka.StartLatest,
		config.StartCommitted: kafka.StartCommitted, config.StartTimestamp: kafka.StartTimestamp,
	}[s.Start]
	format := kafka.FormatJSON
	if s.Format == config.KafkaFormatRaw {
		format = kafka.FormatRaw
	}
	c := &p.cfg.Checkpoints
	var txn *kafka.TxnConfig
	if c.Enabled && c.Delivery == config.ExactlyOnce {
		txn = &kafka.TxnConfig{ID: p.transactionalID(s), Timeout: max(time.Minute, 2*c.Interval)}
		for i := range p.cfg.Sinks {
			// The transaction's producer takes the first Kafka sink's settings.
			if k := &p.cfg.Sinks[i]; k.Type == config.SinkKafka {
				txn.Compression, txn.Linger, txn.BatchMaxBytes = string(k.Compression), k.Linger, k.BatchMaxBytes
				break
			}
		}
	}
	src, err := kafka.NewSource(kafka.SourceConfig{
		Name: s.Name, Client: cc, Topics: s.Topics, TopicRegex: s.TopicRegex, Group: s.Group, InstanceID: s.InstanceID,
		Start: start, StartTimestamp: s.StartTimestamp, Format: format, Logger: p.opts.Logger,
		StopAtEnd: s.StopAt == config.StopAtLatest, Checkpointed: c.Enabled, Txn: txn,
		SessionTimeout: s.SessionTimeout, Exclusive: p.exclusive(), PositionsFromGroup: !p.keyedState(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Pos, s.Where, err)
	}
	return src, nil
}

// transactionalID returns the transactional id of an exactly-once run
// reading the Kafka source s. A pipeline with keyed state runs one active
// instance, and its standbys share its id, so that one taking over fences
// the one it replaces. The instances of a pipeline without keyed state run
// side by side, so by default each gets its own id: the pipeline's, then
// the source's instance_id or, without one, the host name. Restarted with
// the same suffix, an instance fences its predecessor; two instances on
// one host need their own instance_id.
func (p *Pipeline) transactionalID(s *config.Source) string {
	c := &p.cfg.Checkpoints
	if !c.DefaultTransactionalID || p.keyedState() {
		return c.TransactionalID
	}
	suffix := s.InstanceID
	if suffix == "" {
		suffix, _ = os.Hostname()
	}
	if suffix == "" {
		return c.TransactionalID
	}
	return c.TransactionalID + "-" + suffix
}

func kafkaSink(s *config.Sink, cc kafka.ClientConfig, log *slog.Logger, txn *kafka.Txn) (engine.Sink, error) {
	snk, err := kafka.NewSink(kafka.SinkConfig{
		Name: s.Name, Client: cc, Topic: s.Topic, TopicField: s.TopicPath, KeyField: s.KeyPath,
		Compression: string(s.Compression), Linger: s.Linger, BatchMaxBytes: s.BatchMaxBytes,
		Acks: string(s.Acks), DeliveryTimeout: s.DeliveryTimeout, Logger: log, Txn: txn,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Pos, s.Where, err)
	}
	return snk, nil
}
