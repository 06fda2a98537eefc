package assembly

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

// ConfigError is a problem with the pipeline file found only when its
// brokers are asked (a topic it writes is missing): the run does not
// start. Fix the file or the cluster and run again.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ClientConfig is the client config of the pipeline's kafka block.
func ClientConfig(cfg *config.Pipeline) kafka.ClientConfig {
	k := cfg.Kafka
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
func (b *builder) kafkaClient(ctx context.Context) error {
	k := b.Config.Kafka
	b.cc = ClientConfig(b.Config)
	if !k.IsEmbedded() {
		logBrokers(b.Config, b.Logger)
		return checkOutputTopics(ctx, b.Config, b.cc, b.Logger, true)
	}
	br, partitions := b.Broker, int32(k.Embedded.Partitions)
	if br == nil {
		kb, err := kafka.StartBroker(kafka.BrokerConfig{Listen: k.Embedded.Listen, DataDir: k.Embedded.DataDir, Logger: b.Logger})
		if err != nil {
			return fmt.Errorf("%s: starting the embedded Kafka broker: %w", k.Embedded.Pos, err)
		}
		br = kb
		b.run.stops = append(b.run.stops, kb.Close)
	}
	topics := namedTopics(b.Config)
	for _, t := range topics {
		if err := br.CreateTopic(ctx, t, partitions); err != nil {
			return fmt.Errorf("embedded Kafka broker: creating topic %q: %w", t, err)
		}
	}
	b.cc.Brokers = br.Addrs()
	b.Logger.Info("no Kafka brokers configured: using an embedded broker",
		"pipeline", b.Config.Name, "addrs", b.cc.Brokers, "topics", topics, "partitions", partitions)
	return nil
}

// namedTopics are the topics the pipeline names: its Kafka sources',
// sinks', dead-letter output's and tables'.
func namedTopics(cfg *config.Pipeline) []string {
	var topics []string
	for _, s := range cfg.Sources {
		topics = append(topics, s.Topics...)
	}
	for _, s := range cfg.Sinks {
		if s.Type == config.SinkKafka && s.Topic != "" {
			topics = append(topics, s.Topic)
		}
	}
	if cfg.DeadLetter.Type == config.DeadLetterKafka {
		topics = append(topics, cfg.DeadLetter.Topic)
	}
	for _, op := range cfg.Operators {
		if op.Type == config.OperatorTableJoin {
			topics = append(topics, op.TableJoin.Topic)
		}
	}
	return topics
}

// kafkaSource opens the Kafka source s, which reads the topics of the
// config sources others through its client.
func (b *builder) kafkaSource(s *config.Source, others []int) (*kafka.Source, error) {
	start := map[config.StartPosition]kafka.StartPosition{
		config.StartEarliest: kafka.StartEarliest, config.StartLatest: kafka.StartLatest,
		config.StartCommitted: kafka.StartCommitted, config.StartTimestamp: kafka.StartTimestamp,
	}[s.Start]
	var views []kafka.ViewConfig
	for _, j := range others {
		o := &b.Config.Sources[j]
		views = append(views, kafka.ViewConfig{Name: o.Name, Topics: o.Topics, Format: kafkaFormat(o)})
	}
	c := &b.Config.Checkpoints
	var txn *kafka.TxnConfig
	if c.Enabled && c.Delivery == config.ExactlyOnce {
		txn = &kafka.TxnConfig{ID: transactionalID(b.Config, s, b.keyed && !b.byTask), Timeout: txnTimeout(c.Interval, b.byTask)}
		for i := range b.Config.Sinks {
			// The transaction's producer takes the first Kafka sink's settings.
			if k := &b.Config.Sinks[i]; k.Type == config.SinkKafka {
				txn.Compression, txn.Linger, txn.BatchMaxBytes = string(k.Compression), k.Linger, k.BatchMaxBytes
				break
			}
		}
	}
	src, err := kafka.NewSource(kafka.SourceConfig{
		Name: s.Name, Client: b.cc, Topics: s.Topics, TopicRegex: s.TopicRegex, Group: s.Group, InstanceID: s.InstanceID,
		Start: start, StartTimestamp: s.StartTimestamp, Format: kafkaFormat(s), Logger: b.Logger, Others: views, Inputs: b.repartInputs,
		StopAtEnd: s.StopAt == config.StopAtLatest, Checkpointed: c.Enabled, Txn: txn,
		SessionTimeout: s.SessionTimeout, Exclusive: b.keyed && !b.byTask, PositionsFromGroup: !b.keyed,
		Tasks: b.taskSet(), Repartition: b.repartTopic(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Pos, s.Where, err)
	}
	return src, nil
}

// kafkaFormat is how the Kafka source s decodes values.
func kafkaFormat(s *config.Source) kafka.Format {
	if s.Format == config.KafkaFormatRaw {
		return kafka.FormatRaw
	}
	return kafka.FormatJSON
}

// txnTimeout is how long the brokers let a transaction stay open: a
// minute, or two checkpoint intervals if longer. Instances sharing their
// group by task get Kafka Streams' 10 seconds instead: a crashed
// instance's open transaction holds back every read_committed reader of
// the partitions it wrote, the new owners of its tasks included, until
// the brokers abort it.
func txnTimeout(interval time.Duration, byTask bool) time.Duration {
	if byTask {
		return max(10*time.Second, 2*interval)
	}
	return max(time.Minute, 2*interval)
}

// transactionalID returns the transactional id of an exactly-once run
// reading the Kafka source s. A pipeline with keyed state that runs one
// active instance (one) has its standbys share its id, so that one taking
// over fences the one it replaces. The instances of other pipelines run
// side by side, so by default each gets its own id: the pipeline's, then
// the source's instance_id or, without one, the host name. Restarted with
// the same suffix, an instance fences its predecessor; two instances on
// one host need their own instance_id.
func transactionalID(cfg *config.Pipeline, s *config.Source, one bool) string {
	c := &cfg.Checkpoints
	if !c.DefaultTransactionalID || one {
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

func (b *builder) kafkaSink(s *config.Sink) (engine.Sink, error) {
	snk, err := kafka.NewSink(kafka.SinkConfig{
		Name: s.Name, Client: b.cc, Topic: s.Topic, TopicField: s.TopicPath, KeyField: s.KeyPath,
		Compression: string(s.Compression), Linger: s.Linger, BatchMaxBytes: s.BatchMaxBytes,
		Acks: string(s.Acks), DeliveryTimeout: s.DeliveryTimeout, Logger: b.Logger, Txn: b.txn,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Pos, s.Where, err)
	}
	return snk, nil
}

// logBrokers logs which Kafka cluster the pipeline uses, and why: the
// brokers of the file, or of the environment, which win over the file's
// embedded block.
func logBrokers(cfg *config.Pipeline, log *slog.Logger) {
	k := &cfg.Kafka
	at := k.At("brokers")
	msg := fmt.Sprintf("using brokers %s from %s", strings.Join(k.Brokers, ","), at)
	if _, embedded := k.Positions["embedded"]; embedded && at.IsEnv() {
		msg += "; the embedded broker settings are ignored"
	}
	log.Info(msg, "pipeline", cfg.Name)
}

// CheckKafka checks, for a pipeline that names brokers, that every topic
// it writes (its Kafka sinks' and dead-letter output's) exists there, or
// that the brokers create topics on first use. It creates nothing. A run
// checks the same before it reads a record; weir validate calls it after
// loading.
func CheckKafka(ctx context.Context, cfg *config.Pipeline, log *slog.Logger) error {
	if !cfg.UsesKafka() || cfg.Kafka.IsEmbedded() {
		return nil
	}
	return checkOutputTopics(ctx, cfg, ClientConfig(cfg), log, false)
}

// outputTopic is a fixed topic the pipeline writes, and what writes it.
type outputTopic struct {
	pos          config.Pos
	stage, topic string
}

// outputTopics returns the fixed topics of the pipeline's Kafka sinks and
// dead-letter output.
func outputTopics(cfg *config.Pipeline) []outputTopic {
	var out []outputTopic
	for i := range cfg.Sinks {
		if s := &cfg.Sinks[i]; s.Type == config.SinkKafka && s.Topic != "" {
			out = append(out, outputTopic{s.At("topic"), "sink " + strconv.Quote(s.Name), s.Topic})
		}
	}
	if dl := &cfg.DeadLetter; dl.Type == config.DeadLetterKafka {
		out = append(out, outputTopic{dl.At("topic"), "dead_letter", dl.Topic})
	}
	return out
}

// checkOutputTopics fails, as a config error, when a topic the pipeline
// writes is missing on its brokers and they do not create topics on first
// use; with create, those they do create are created now (see
// kafka.MissingTopics). Brokers that cannot be asked are only warned
// about: the run's clients go on trying them.
func checkOutputTopics(ctx context.Context, cfg *config.Pipeline, cc kafka.ClientConfig, log *slog.Logger, create bool) error {
	outs := outputTopics(cfg)
	if len(outs) == 0 {
		return nil
	}
	topics := make([]string, len(outs))
	for i, o := range outs {
		topics[i] = o.topic
	}
	missing, err := kafka.MissingTopics(ctx, cc, topics, create)
	if err != nil {
		log.Warn("could not check that the output topics exist", "pipeline", cfg.Name, "brokers", cc.Brokers, "error", err)
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
	return &ConfigError{Err: errors.Join(errs...)}
}
