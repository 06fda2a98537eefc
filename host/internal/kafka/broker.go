package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BrokerConfig configures the embedded broker. It is a plain value.
type BrokerConfig struct {
	// Listen is the host:port to listen on; "" means 127.0.0.1 on an
	// ephemeral port. The broker advertises this address to its clients,
	// so a wildcard host (":9092", "0.0.0.0:9092") serves local clients
	// only; give a routable host name or address for remote ones.
	Listen string
	// Topics are created at start, name → partitions. With a DataDir,
	// topics that already exist are kept as they are.
	Topics map[string]int32
	// DataDir persists the broker's log and group offsets in this
	// directory, and reloads them on the next start; "" keeps everything
	// in memory, lost on Close.
	DataDir string
	// Logger receives the broker's warnings and errors; nil means
	// slog.Default().
	Logger *slog.Logger
	// AutoCreateTopics creates a topic, with one partition, the first
	// time a client that allows it (a producer, as Kafka's own do) asks
	// for it, as Kafka's auto.create.topics.enable; the broker reports
	// the setting under that name either way.
	AutoCreateTopics bool
}

// Broker is an embedded single-node Kafka broker (franz-go's kfake), for
// pipelines that name no brokers and for tests. Its consumer groups keep
// a member waiting in a JoinGroup as Kafka does (broker_joins.go). Topics are not created
// automatically on first use unless BrokerConfig.AutoCreateTopics is set:
// create them in BrokerConfig.Topics or with CreateTopic.
//
// Its methods are safe for concurrent use. Close stops it; after Close only
// Addrs and Close may be called.
type Broker struct {
	c       *kfake.Cluster
	log     *slog.Logger
	addrs   []string
	admin   *kadm.Client
	adminCl *kgo.Client
	joins   *joinKeeper
	once    sync.Once
}

const brkStartTimeout = 15 * time.Second

// StartBroker starts a broker listening on cfg.Listen and creates
// cfg.Topics.
func StartBroker(cfg BrokerConfig) (*Broker, error) {
	listen := cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return nil, fmt.Errorf("kafka broker: listen address %q: %v", cfg.Listen, err)
	}
	for name, n := range cfg.Topics {
		if err := brkCheckTopic(name, n); err != nil {
			return nil, fmt.Errorf("kafka broker: %w", err)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "kafka broker")
	c, err := kfake.NewCluster(brkKfakeOpts(cfg, listen, log)...)
	if err != nil {
		return nil, fmt.Errorf("kafka broker: %w", err)
	}
	b := &Broker{c: c, log: log, addrs: c.ListenAddrs()}
	if b.joins, err = startJoinKeeper(c, b.addrs, log, joinKeeperForget); err != nil {
		c.Close()
		return nil, fmt.Errorf("kafka broker: %w", err)
	}
	b.adminCl, err = kgo.NewClient(kgo.SeedBrokers(b.addrs...), kgo.ClientID("weir-broker-admin"))
	if err != nil {
		b.joins.close()
		c.Close()
		return nil, fmt.Errorf("kafka broker: %w", err)
	}
	b.admin = kadm.NewClient(b.adminCl)
	if cfg.DataDir != "" && len(cfg.Topics) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), brkStartTimeout)
		defer cancel()
		if err := b.ensureTopics(ctx, cfg.Topics); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// brkKfakeOpts are the kfake options of a broker listening on listen.
func brkKfakeOpts(cfg BrokerConfig, listen string, log *slog.Logger) []kfake.Opt {
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, listen) }),
		kfake.WithLogger(brkKfakeLogger{log}),
		kfake.BrokerConfigs(map[string]string{AutoCreateConfig: strconv.FormatBool(cfg.AutoCreateTopics)}),
	}
	if cfg.AutoCreateTopics {
		opts = append(opts, kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	}
	// Seed topics grouped by partition count. A broker reloaded from
	// DataDir ignores seeds; StartBroker ensures the topics.
	byCount := make(map[int32][]string)
	for name, n := range cfg.Topics {
		byCount[n] = append(byCount[n], name)
	}
	for n, names := range byCount {
		opts = append(opts, kfake.SeedTopics(n, names...))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	return opts
}

// ensureTopics creates the topics that do not exist and warns about those
// that exist with another partition count.
func (b *Broker) ensureTopics(ctx context.Context, topics map[string]int32) error {
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	sort.Strings(names)
	details, err := b.admin.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("kafka broker: listing topics: %w", err)
	}
	for _, name := range names {
		if d, ok := details[name]; ok && d.Err == nil {
			if have := int32(len(d.Partitions)); have != topics[name] {
				b.log.Warn("topic exists with a different partition count; keeping it", "topic", name, "partitions", have, "configured", topics[name])
			}
			continue
		}
		if err := b.CreateTopic(ctx, name, topics[name]); err != nil {
			return err
		}
	}
	return nil
}

// Addrs returns the addresses the broker listens on, host:port, to use as
// ClientConfig.Brokers.
func (b *Broker) Addrs() []string { return slices.Clone(b.addrs) }

// CreateTopic creates a topic with the given number of partitions. A topic
// that already exists is left alone (whatever its partition count) and is not
// an error.
func (b *Broker) CreateTopic(ctx context.Context, name string, partitions int32) error {
	if err := brkCheckTopic(name, partitions); err != nil {
		return fmt.Errorf("kafka broker: %w", err)
	}
	_, err := b.admin.CreateTopic(ctx, partitions, 1, nil, name)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka broker: creating topic %q: %w", name, err)
	}
	return nil
}

// Close stops the broker, saving its state first when it has a DataDir.
// It is idempotent.
func (b *Broker) Close() {
	b.once.Do(func() {
		b.adminCl.Close()
		b.joins.close()
		b.c.Close()
	})
}

// brkMaxPartitions bounds partition counts to something a single embedded
// broker can reasonably serve.
const brkMaxPartitions = 10000

// brkCheckTopic validates a topic name as Kafka does, and a partition count.
func brkCheckTopic(name string, partitions int32) error {
	if err := brkCheckTopicName(name); err != nil {
		return err
	}
	if partitions < 1 || partitions > brkMaxPartitions {
		return fmt.Errorf("topic %q: partitions must be between 1 and %d, not %d", name, brkMaxPartitions, partitions)
	}
	return nil
}

func brkCheckTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("empty topic name")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > 249:
		return fmt.Errorf("topic name %q is longer than 249 characters", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q: %q is not allowed (use letters, digits, '.', '_' and '-')", name, c)
		}
	}
	return nil
}

// ParseTopics parses a topics flag, "name:partitions,name2:3": a comma
// separated list of topic names, each with an optional partition count that
// defaults to 1. Spaces around items are ignored; "" gives an empty map.
func ParseTopics(s string) (map[string]int32, error) {
	topics := make(map[string]int32)
	if strings.TrimSpace(s) == "" {
		return topics, nil
	}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("topics %q: item %d is empty", s, i+1)
		}
		name, count, hasCount := strings.Cut(item, ":")
		name = strings.TrimSpace(name)
		partitions := int32(1)
		if hasCount {
			count = strings.TrimSpace(count)
			n, err := strconv.ParseInt(count, 10, 32)
			if err != nil || n < 1 || n > brkMaxPartitions {
				return nil, fmt.Errorf("topics %q: %q: the partition count must be a whole number from 1 to %d", s, item, brkMaxPartitions)
			}
			partitions = int32(n)
		}
		if err := brkCheckTopicName(name); err != nil {
			return nil, fmt.Errorf("topics %q: %w", s, err)
		}
		if _, dup := topics[name]; dup {
			return nil, fmt.Errorf("topics %q: topic %q is listed twice", s, name)
		}
		topics[name] = partitions
	}
	return topics, nil
}

// brkKfakeLogger sends kfake's log to slog: errors and warnings as such,
// informational messages (every request) as debug, debug messages dropped.
type brkKfakeLogger struct{ log *slog.Logger }

func (l brkKfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	lv := slog.LevelDebug
	switch level {
	case kfake.LogLevelError:
		lv = slog.LevelError
	case kfake.LogLevelWarn:
		lv = slog.LevelWarn
	case kfake.LogLevelInfo:
	default:
		return
	}
	ctx := context.Background()
	if l.log.Enabled(ctx, lv) {
		l.log.Log(ctx, lv, fmt.Sprintf(format, args...))
	}
}
