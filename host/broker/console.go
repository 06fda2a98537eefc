package broker

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/weir-stream/weir/host/internal/kafka"
)

// Client says how the console tools reach a cluster. It is a plain value.
type Client struct {
	Brokers  []string // host:port seed brokers
	ClientID string   // default "weir"
	// SASLMechanism is "", PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	SASLMechanism, SASLUser, SASLPassword string
	TLS                                   bool
	TLSCAFile                             string
}

func (c Client) config() kafka.ClientConfig {
	return kafka.ClientConfig{
		Brokers:  c.Brokers,
		ClientID: c.ClientID,
		SASL:     kafka.SASLConfig{Mechanism: c.SASLMechanism, User: c.SASLUser, Password: c.SASLPassword},
		TLS:      kafka.TLSConfig{Enabled: c.TLS, CAFile: c.TLSCAFile},
	}
}

// ProduceOptions configure Produce. It is a plain value.
type ProduceOptions struct {
	Client   Client
	Topic    string
	KeyField string // dotted JSON path whose value becomes the key; empty for none
	Logger   *slog.Logger
}

// Produce writes the JSON lines read from r (named label in errors) to a
// topic and returns how many it wrote. It returns once every record is
// acknowledged. Each call uses its own client, so calls may run
// concurrently.
func Produce(ctx context.Context, opts ProduceOptions, r io.Reader, label string) (int64, error) {
	var key []string
	if opts.KeyField != "" {
		key = strings.Split(opts.KeyField, ".")
	}
	return kafka.Produce(ctx, kafka.ProduceConfig{Client: opts.Client.config(), Topic: opts.Topic, KeyField: key, Logger: opts.Logger}, r, label)
}

// ConsumeOptions configure Consume. It is a plain value.
type ConsumeOptions struct {
	Client        Client
	Topic         string
	FromBeginning bool
	Max           int64         // stop after this many records; 0 for no limit
	Timeout       time.Duration // stop after this long without a record; 0 for never
	Group         string        // consume in this group and commit; empty for none
	Meta          bool          // print partition, offset, timestamp and key around each value
	// ReadUncommitted also prints records of open and aborted transactions;
	// by default only committed records are printed (read_committed).
	ReadUncommitted bool
	Logger          *slog.Logger
}

// Consume prints a topic's records to w as JSON lines and returns how many
// it printed. Each call uses its own client, so calls may run
// concurrently.
func Consume(ctx context.Context, opts ConsumeOptions, w io.Writer) (int64, error) {
	return kafka.Consume(ctx, kafka.ConsumeConfig{
		Client: opts.Client.config(), Topic: opts.Topic, FromBeginning: opts.FromBeginning,
		Max: opts.Max, Timeout: opts.Timeout, Group: opts.Group, Meta: opts.Meta, Logger: opts.Logger,
		ReadUncommitted: opts.ReadUncommitted,
	}, w)
}
