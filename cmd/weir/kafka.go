package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weir-stream/weir/host/broker"
)

// kafkaFlags are the connection flags shared by produce and consume.
type kafkaFlags struct {
	brokers  string
	clientID string
	sasl     string
	user     string
	password string
	tls      bool
	caFile   string
}

func (k *kafkaFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&k.brokers, "brokers", "", "seed brokers, host:port[,host:port…] (required)")
	f.StringVar(&k.clientID, "client-id", "weir", "client id sent to the brokers")
	f.StringVar(&k.sasl, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	f.StringVar(&k.user, "sasl-user", "", "SASL user")
	f.StringVar(&k.password, "sasl-password", "", "SASL password (or $WEIR_SASL_PASSWORD)")
	f.BoolVar(&k.tls, "tls", false, "connect with TLS")
	f.StringVar(&k.caFile, "tls-ca", "", "PEM file of extra certificate authorities")
}

// setup checks the flags every Kafka tool needs and returns its logger and
// client.
func (k *kafkaFlags) setup(g *globalFlags, cmd *cobra.Command, topic string) (*slog.Logger, broker.Client, error) {
	log, err := g.logger(cmd.ErrOrStderr())
	if err != nil {
		return nil, broker.Client{}, err
	}
	client, err := k.client()
	if err != nil {
		return nil, broker.Client{}, err
	}
	if topic == "" {
		return nil, broker.Client{}, usageErrorf("--topic is required")
	}
	return log, client, nil
}

func (k *kafkaFlags) client() (broker.Client, error) {
	if k.brokers == "" {
		return broker.Client{}, usageErrorf("--brokers is required")
	}
	pw := k.password
	if pw == "" {
		pw = os.Getenv("WEIR_SASL_PASSWORD")
	}
	return broker.Client{
		Brokers: strings.Split(k.brokers, ","), ClientID: k.clientID,
		SASLMechanism: k.sasl, SASLUser: k.user, SASLPassword: pw,
		TLS: k.tls || k.caFile != "", TLSCAFile: k.caFile,
	}, nil
}

func newBrokerCmd(g *globalFlags) *cobra.Command {
	var opts broker.Options
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a standalone in-process Kafka broker for tutorials and tests",
		Long: `Run a Kafka broker (kfake, the real wire protocol) in this process until
SIGINT or SIGTERM. Any Kafka client can connect to it. Its address is printed
on standard output once it listens. As Kafka's auto.create.topics.enable, a
topic is created, with one partition, the first time a client that allows
it (a producer, such as weir produce or a Kafka sink) asks for it; turn that
off with --auto-create-topics=false.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx, stop := drainOnSignal(cmd.Context())
			defer stop()
			opts.Logger = log
			opts.Ready = func(addrs []string) {
				fmt.Fprintln(cmd.OutOrStdout(), strings.Join(addrs, ","))
			}
			return broker.Run(ctx, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:9092", "address to listen on, host:port")
	cmd.Flags().StringVar(&opts.Topics, "topics", "", "topics to create, name:partitions[,name:partitions…]")
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "keep topics in this directory across restarts (default: in memory)")
	cmd.Flags().BoolVar(&opts.AutoCreateTopics, "auto-create-topics", true, "create a topic on first use, as Kafka's auto.create.topics.enable")
	return cmd
}

func newProduceCmd(g *globalFlags) *cobra.Command {
	var (
		k    kafkaFlags
		opts broker.ProduceOptions
	)
	cmd := &cobra.Command{
		Use:   "produce --brokers B --topic T [--key-field F] [FILE]",
		Short: "Write JSON lines from standard input or a file to a topic",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("want at most one file, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			log, client, err := k.setup(g, cmd, opts.Topic)
			if err != nil {
				return err
			}
			opts.Client, opts.Logger = client, log
			in, label := cmd.InOrStdin(), "standard input"
			if len(args) == 1 {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in, label = f, args[0]
			}
			n, err := broker.Produce(cmd.Context(), opts, in, label)
			log.Info("produced", "topic", opts.Topic, "records", n)
			return err
		},
	}
	k.register(cmd)
	cmd.Flags().StringVar(&opts.Topic, "topic", "", "topic to write to (required)")
	cmd.Flags().StringVar(&opts.KeyField, "key-field", "", "dotted JSON path whose value becomes each record's key")
	return cmd
}

func newConsumeCmd(g *globalFlags) *cobra.Command {
	var (
		k    kafkaFlags
		opts broker.ConsumeOptions
	)
	cmd := &cobra.Command{
		Use:   "consume --brokers B --topic T [--from-beginning] [--max N] [--timeout D] [--group G]",
		Short: "Print a topic's records as JSON lines",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, client, err := k.setup(g, cmd, opts.Topic)
			if err != nil {
				return err
			}
			opts.Client, opts.Logger = client, log
			ctx, stop := drainOnSignal(cmd.Context())
			defer stop()
			n, err := broker.Consume(ctx, opts, cmd.OutOrStdout())
			log.Debug("consumed", "topic", opts.Topic, "records", n)
			if ctx.Err() != nil && err != nil && ctx.Err() == context.Canceled {
				return nil
			}
			return err
		},
	}
	k.register(cmd)
	f := cmd.Flags()
	f.StringVar(&opts.Topic, "topic", "", "topic to read (required)")
	f.BoolVar(&opts.FromBeginning, "from-beginning", false, "start at the oldest record instead of the newest")
	f.Int64Var(&opts.Max, "max", 0, "stop after this many records (0: no limit)")
	f.DurationVar(&opts.Timeout, "timeout", 0, "stop after this long without a record (0: never)")
	f.StringVar(&opts.Group, "group", "", "consume in this consumer group and commit offsets")
	f.BoolVar(&opts.Meta, "meta", false, "print partition, offset, timestamp and key with each value")
	f.BoolVar(&opts.ReadUncommitted, "read-uncommitted", false, "also print records of open and aborted transactions (default: committed records only)")
	return cmd
}
