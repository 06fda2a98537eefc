package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
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
	b, err := kafka.StartBroker(kafka.BrokerConfig{Listen: opts.Listen, Topics: topics, DataDir: opts.DataDir, Logger: opts.Logger,
		AutoCreateTopics: opts.AutoCreateTopics})
	if err != nil {
		return nil, err
	}
	return &Broker{b: b}, nil
}

// Addrs returns the addresses the broker listens on.
func (b *Broker) Addrs() []string { return b.b.Addrs() }

// Close stops the broker.
func (b *Broker) Close() { b.b.Close() }

// clientConfig is the client config of the pipeline's kafka block.
func (p *Pipeline) clientConfig() kafka.ClientConfig {
	k := p.cfg.Kafka
	return kafka.ClientConfig{
		Brokers:  k.Brokers,
		ClientID: k.ClientID,
		SASL:     kafka.SASLConfig{Mechanism: string(k.SASL.Mechanism), User: k.SASL.User, Password: k.SASL.Password},
		TLS: kafka.TLSConfig{Enabled: k.TLS.Enabled, CAFile: k.TLS.CAFile, CertFile: k.TLS.CertFile, KeyFile: k.TLS.KeyFile,
			ServerName: k.TLS.ServerName, InsecureSkipVerify: k.TLS.InsecureSkipVerify},
	}
}

// kafkaClient returns the client config for the pipeline's Kafka stages,
// starting an embedded broker (or using Options.Broker) when the pipeline
// names no brokers, and creating there every topic the pipeline names.
// With brokers, it logs which and why, and fails if a topic the pipeline
// writes is missing there (checkOutputTopics). The returned stop function
// closes a broker started here.
func (p *Pipeline) kafkaClient(ctx context.Context) (kafka.ClientConfig, func(), error) {
	k := p.cfg.Kafka
	cc := p.clientConfig()
	if !k.IsEmbedded() {
		p.logBrokers()
		if err := p.checkOutputTopics(ctx, cc, true); err != nil {
			return cc, nil, err
		}
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

// logBrokers logs which Kafka cluster the pipeline uses, and why: the
// brokers of the file, or of the environment, which win over the file's
// embedded block.
func (p *Pipeline) logBrokers() {
	k := &p.cfg.Kafka
	at := k.At("brokers")
	msg := fmt.Sprintf("using brokers %s from %s", strings.Join(k.Brokers, ","), at)
	if _, embedded := k.Positions["embedded"]; embedded && at.IsEnv() {
		msg += "; the embedded broker settings are ignored"
	}
	p.opts.Logger.Info(msg, "pipeline", p.cfg.Name)
}

// CheckKafka checks, for a pipeline that names brokers, that every topic
// it writes (its Kafka sinks' and dead-letter output's) exists there, or
// that the brokers create topics on first use. It creates nothing. A run
// checks the same before it reads a record; weir validate calls it after
// Load.
func (p *Pipeline) CheckKafka(ctx context.Context) error {
	if !p.cfg.UsesKafka() || p.cfg.Kafka.IsEmbedded() {
		return nil
	}
	return p.checkOutputTopics(ctx, p.clientConfig(), false)
}

// outputTopic is a fixed topic the pipeline writes, and what writes it.
type outputTopic struct {
	pos          config.Pos
	stage, topic string
}

// outputTopics returns the fixed topics of the pipeline's Kafka sinks and
// dead-letter output.
func (p *Pipeline) outputTopics() []outputTopic {
	var out []outputTopic
	for i := range p.cfg.Sinks {
		if s := &p.cfg.Sinks[i]; s.Type == config.SinkKafka && s.Topic != "" {
			out = append(out, outputTopic{s.At("topic"), "sink " + strconv.Quote(s.Name), s.Topic})
		}
	}
	if dl := &p.cfg.DeadLetter; dl.Type == config.DeadLetterKafka {
		out = append(out, outputTopic{dl.At("topic"), "dead_letter", dl.Topic})
	}
	return out
}

// checkOutputTopics fails, as a config error, when a topic the pipeline
// writes is missing on its brokers and they do not create topics on first
// use; with create, those they do create are created now (see
// kafka.MissingTopics). Brokers that cannot be asked are only warned
// about: the run's clients go on trying them.
func (p *Pipeline) checkOutputTopics(ctx context.Context, cc kafka.ClientConfig, create bool) error {
	outs := p.outputTopics()
	if len(outs) == 0 {
		return nil
	}
	topics := make([]string, len(outs))
	for i, o := range outs {
		topics[i] = o.topic
	}
	missing, err := kafka.MissingTopics(ctx, cc, topics, create)
	if err != nil {
		p.opts.Logger.Warn("could not check that the output topics exist", "pipeline", p.cfg.Name, "brokers", cc.Brokers, "error", err)
		return nil
	}
	var errs []error
	for _, o := range outs {
		if slices.Contains(missing, o.topic) {
			errs = append(errs, fmt.Errorf("%s: %s: topic %q does not exist on brokers %s; create it, or enable auto-creation (%s)",
				o.pos, o.stage, o.topic, strings.Join(cc.Brokers, ","), kafka.AutoCreateConfig))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &loadError{kind: ErrConfig, err: errors.Join(errs...)}
}

// consumerLag sums the Kafka sources' consumer lag, or is nil while it is
// unknown: a source holds no partition (it has not joined its group yet,
// or members of an earlier run still hold them), when 0 would read as
// caught up.
func consumerLag(sources []*kafka.Source) *int64 {
	var sum int64
	for _, s := range sources {
		n, known := s.LagKnown()
		if !known {
			return nil
		}
		sum += n
	}
	return &sum
}
