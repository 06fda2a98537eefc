package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// Headers the dead-letter output adds to each dead letter, after the
// record's own headers (so a consumer reading the last header of a name gets
// the dead letter's, should the record already carry one). Values are UTF-8
// text; numbers are decimal.
const (
	// DeadLetterErrorHeader holds the reason the record was rejected.
	DeadLetterErrorHeader = "weir.error"
	// DeadLetterStageHeader names the stage that rejected it: a source, an
	// operator or a sink.
	DeadLetterStageHeader = "weir.stage"
	// DeadLetterSourceHeader names the source the record came from.
	DeadLetterSourceHeader = "weir.source"
	// DeadLetterSourceTopicHeader is the Kafka topic the record was read
	// from; absent for sources without topics.
	DeadLetterSourceTopicHeader = "weir.source.topic"
	// DeadLetterSourcePartitionHeader is the partition it was read from;
	// absent for unpartitioned sources.
	DeadLetterSourcePartitionHeader = "weir.source.partition"
	// DeadLetterSourceOffsetHeader is its offset in that partition, or for
	// files and stdin its 0-based index; always present.
	DeadLetterSourceOffsetHeader = "weir.source.offset"
	// DeadLetterSourceLineHeader is the 1-based line where the record
	// starts in a text input; absent when unknown.
	DeadLetterSourceLineHeader = "weir.source.line"
)

// DeadLetterConfig configures a Kafka dead-letter output. It is a plain
// value, read by NewDeadLetterSink and not kept.
type DeadLetterConfig struct {
	Client ClientConfig
	// Topic receives the dead letters; it must exist.
	Topic string
	// Logger receives the output's messages and franz-go's warnings; nil
	// means slog.Default().
	Logger *slog.Logger
	// Txn, when set, makes the output produce through an exactly-once
	// run's transactional client, as SinkConfig.Txn.
	Txn *Txn
}

// DeadLetterSink produces dead letters to a Kafka topic. It implements
// engine.DeadLetterSink. Each dead letter becomes one record with the
// original record's key, value, headers and timestamp (as Kafka Connect's
// dead-letter queue does; mind that a topic's time-based retention counts
// from those timestamps), plus the DeadLetter*Header headers. It produces as
// a Sink with the default settings does: acks from all in-sync replicas,
// idempotent, snappy-compressed, partitioned by the original key, retried for up
// to DefaultDeliveryTimeout.
//
// Write, Flush and Close are called by one goroutine; each dead letter
// registers one piece of work on its batch's acknowledgement and finishes it
// from franz-go's goroutine when the record is durable or has failed. After
// Close the output cannot be used again.
type DeadLetterSink struct {
	topic    string
	cl       *kgo.Client
	txn      *Txn // the transaction whose client cl is, or nil
	log      *slog.Logger
	timeout  time.Duration
	inflight sync.WaitGroup
	closed   bool
	label    string
}

var _ engine.DeadLetterSink = (*DeadLetterSink)(nil)

// NewDeadLetterSink checks cfg and creates the output's franz-go client. It
// does not contact the brokers.
func NewDeadLetterSink(cfg DeadLetterConfig) (*DeadLetterSink, error) {
	if cfg.Topic == "" {
		return nil, errors.New("kafka dead-letter output: no topic")
	}
	label := "dead-letter output " + strconv.Quote(cfg.Topic)
	if p := snkTopicProblem([]byte(cfg.Topic)); p != "" {
		return nil, fmt.Errorf("kafka dead-letter output: topic %q %s", cfg.Topic, p)
	}
	log := snkLogger(cfg.Logger)
	cl, timeout, err := snkClient(cfg.Client, cfg.Txn, "", "", 0, 0, 0, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return &DeadLetterSink{topic: cfg.Topic, cl: cl, txn: cfg.Txn, log: log.With("dead_letter_topic", cfg.Topic), timeout: timeout, label: label}, nil
}

// dlqPending is one dead letter on its way: the record, storage for its
// headers, and the acknowledgement to finish.
type dlqPending struct {
	d   *DeadLetterSink
	ack *engine.Ack
	rec kgo.Record
	num [3 * 20]byte // decimal partition, offset and line
	// cancel releases the context carrying the delivery deadline.
	cancel context.CancelFunc
}

// Write produces dl, registering one piece of work on ack. The record's
// bytes are handed to franz-go as they are and must stay unchanged until
// ack's batch completes.
func (d *DeadLetterSink) Write(dl *record.DeadLetter, ack *engine.Ack) error {
	if d.closed {
		return fmt.Errorf("%s: write after close", d.label)
	}
	r := &dl.Record
	o := &r.Origin
	p := &dlqPending{d: d, ack: ack}
	hs := make([]kgo.RecordHeader, len(r.Headers), len(r.Headers)+7)
	for i, h := range r.Headers {
		hs[i] = kgo.RecordHeader(h)
	}
	hs = append(hs,
		kgo.RecordHeader{Key: DeadLetterErrorHeader, Value: []byte(dl.Reason)},
		kgo.RecordHeader{Key: DeadLetterStageHeader, Value: []byte(dl.Stage)},
		kgo.RecordHeader{Key: DeadLetterSourceHeader, Value: []byte(o.Source)},
	)
	if o.Topic != "" {
		hs = append(hs, kgo.RecordHeader{Key: DeadLetterSourceTopicHeader, Value: []byte(o.Topic)})
	}
	num := p.num[:0]
	if o.Partition >= 0 {
		num = strconv.AppendInt(num, int64(o.Partition), 10)
		hs = append(hs, kgo.RecordHeader{Key: DeadLetterSourcePartitionHeader, Value: num[:len(num):len(num)]})
		num = num[len(num):]
	}
	num = strconv.AppendInt(num, o.Offset, 10)
	hs = append(hs, kgo.RecordHeader{Key: DeadLetterSourceOffsetHeader, Value: num[:len(num):len(num)]})
	num = num[len(num):]
	if o.Line > 0 {
		num = strconv.AppendInt(num, o.Line, 10)
		hs = append(hs, kgo.RecordHeader{Key: DeadLetterSourceLineHeader, Value: num[:len(num):len(num)]})
	}
	p.rec = kgo.Record{
		Topic:     d.topic,
		Key:       r.Key,
		Value:     r.Value,
		Headers:   hs,
		Timestamp: time.UnixMilli(r.Timestamp),
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	p.cancel = cancel
	ack.Add(1)
	d.inflight.Add(1)
	d.cl.Produce(ctx, &p.rec, p.finish)
	return nil
}

func (p *dlqPending) finish(_ *kgo.Record, err error) {
	d := p.d
	p.cancel()
	if err != nil {
		err = fmt.Errorf("%s: %w", d.label, snkDeliveryErr(d.txn.explain(err), d.timeout))
		d.log.Error("producing a dead letter failed", "err", err)
	}
	p.ack.Done(err)
	d.inflight.Done()
}

// Flush returns nil: dead letters become durable asynchronously and report
// through their batch's acknowledgement.
func (d *DeadLetterSink) Flush() error { return nil }

// Close waits up to DefaultDeliveryTimeout for the dead letters in flight,
// then closes the client, failing whatever is unfinished. When Close returns
// every acknowledgement the output registered has been finished.
func (d *DeadLetterSink) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	return snkClose(d.cl, d.txn != nil, &d.inflight, d.timeout, d.log, d.label)
}
