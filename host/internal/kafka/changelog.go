package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A changelog topic holds a pipeline's state changes, checkpoint by
// checkpoint, so that the state can be rebuilt on another machine (as Kafka
// Streams' changelog topics): compacted, one partition, each checkpoint's
// changed keys followed by a marker record carrying the checkpoint's
// metadata. Values are prefixed so that a deletion (a null value, which
// compaction removes) never looks like an empty value:
//
//	state put     key = state key        value = 'v' value
//	state delete  key = state key        value = null
//	marker        key = ChangelogMarker  value = 'm' metadata
//
// Replaying the topic in order, read_committed, rebuilds the state of the
// last marker; with exactly-once delivery each checkpoint's records and
// marker commit in its Kafka transaction, so an aborted checkpoint leaves
// nothing a replay sees.
const ChangelogMarker = "\x00\x00weir-checkpoint"

// changelogPartition is the changelog's only partition.
const changelogPartition = 0

// Changelog writes and replays a changelog topic. Write is called by one
// goroutine at a time; Replay and EnsureTopic may run before it.
type Changelog struct {
	topic string
	cl    *kgo.Client
	owned bool // cl is the changelog's own, closed by Close
	txn   *Txn // the transaction whose client cl is, or nil
	log   *slog.Logger
}

// NewChangelog returns a changelog on topic, writing with an idempotent
// producer of its own (at-least-once runs), or through txn's transactional
// client when txn is not nil (exactly-once runs), so that the changes
// commit with the checkpoint's transaction.
func NewChangelog(cc ClientConfig, topic string, txn *Txn, log *slog.Logger) (*Changelog, error) {
	log = snkLogger(log).With("changelog", topic)
	if p := snkTopicProblem([]byte(topic)); p != "" {
		return nil, fmt.Errorf("changelog topic %q %s", topic, p)
	}
	c := &Changelog{topic: topic, log: log}
	if txn != nil {
		c.cl, c.txn = txn.cl, txn
		return c, nil
	}
	opts, _, err := snkProducerOpts(cc, CompressionLz4, AcksAll, 0, 0, 0, log)
	if err != nil {
		return nil, err
	}
	if c.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, err
	}
	c.owned = true
	return c, nil
}

// Topic returns the changelog's topic.
func (c *Changelog) Topic() string { return c.topic }

// EnsureTopic creates the topic, compacted with one partition, unless it
// exists; an existing topic must have one partition.
func (c *Changelog) EnsureTopic(ctx context.Context) error {
	adm := kadm.NewClient(c.cl)
	compact := "compact"
	_, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, c.topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("changelog: creating topic %q: %w", c.topic, err)
	}
	td, err := adm.ListTopics(ctx, c.topic)
	if err != nil {
		return fmt.Errorf("changelog: describing topic %q: %w", c.topic, err)
	}
	if d, ok := td[c.topic]; ok && d.Err == nil && len(d.Partitions) != 1 {
		return fmt.Errorf("changelog: topic %q has %d partitions; a changelog has one", c.topic, len(d.Partitions))
	}
	return nil
}

// Write produces a checkpoint's changes, which each calls yield for, then
// its marker with meta, and waits until all are acknowledged (written, or,
// in a transaction, written pending its commit). It returns the offset
// after the marker, where the next checkpoint's records begin.
func (c *Changelog) Write(ctx context.Context, each func(yield func(key, value []byte, deleted bool) error) error, meta []byte) (next int64, err error) {
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		n        int
		marker   int64 = -1
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		wg.Done()
	}
	err = each(func(key, value []byte, deleted bool) error {
		r := &kgo.Record{Topic: c.topic, Partition: changelogPartition, Key: bytes.Clone(key)}
		if !deleted {
			r.Value = append([]byte{'v'}, value...)
		}
		n++
		wg.Add(1)
		c.cl.Produce(ctx, r, promise)
		return nil
	})
	if err == nil {
		// The marker comes last: one partition keeps the order.
		wg.Add(1)
		c.cl.Produce(ctx, &kgo.Record{Topic: c.topic, Partition: changelogPartition, Key: []byte(ChangelogMarker), Value: append([]byte{'m'}, meta...)},
			func(r *kgo.Record, err error) {
				if err == nil {
					marker = r.Offset
				}
				promise(r, err)
			})
	}
	wg.Wait()
	if err != nil {
		return 0, fmt.Errorf("changelog: listing changes: %w", err)
	}
	if firstErr != nil {
		return 0, fmt.Errorf("changelog: writing %d changes to %q: %w", n, c.topic, c.txn.explain(firstErr))
	}
	return marker + 1, nil
}

// ReplayResult is what Replay found.
type ReplayResult struct {
	// Next is the offset after the last record read.
	Next int64
	// Meta is the last marker's metadata, and MarkerNext the offset after
	// it; Meta is nil if no marker was read.
	Meta       []byte
	MarkerNext int64
	// Changes counts the state records applied.
	Changes int
}

// Replay reads the changelog from offset from up to its end, read
// committed, calling apply for each state record in order. It reads a
// consistent end: the last stable offset when it starts.
func Replay(ctx context.Context, cc ClientConfig, topic string, from int64, apply func(key, value []byte, deleted bool) error, log *slog.Logger) (ReplayResult, error) {
	res := ReplayResult{Next: from}
	opts, err := cc.Opts()
	if err != nil {
		return res, err
	}
	log = snkLogger(log)
	// Control records (transaction markers) take offsets too; keeping them
	// lets the replay see that it reached the end when one is last.
	opts = append(opts, kgo.WithLogger(newKgoLogger(log)), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {changelogPartition: kgo.NewOffset().At(from)}}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return res, fmt.Errorf("changelog %q: listing its end: %w", topic, err)
	}
	end, ok := ends.Lookup(topic, changelogPartition)
	if !ok {
		return res, fmt.Errorf("changelog %q: no partition %d", topic, changelogPartition)
	}
	if end.Err != nil {
		if errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
			return res, nil // no changelog yet
		}
		return res, fmt.Errorf("changelog %q: listing its end: %w", topic, end.Err)
	}
	start := time.Now()
	log.Debug("changelog: replaying", "topic", topic, "from", from, "to", end.Offset)
	for res.Next < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return res, fmt.Errorf("changelog %q: reading: %w", topic, ferr)
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset >= end.Offset {
				break
			}
			res.Next = r.Offset + 1
			switch {
			case r.Attrs.IsControl():
				continue
			case string(r.Key) == ChangelogMarker:
				if len(r.Value) == 0 || r.Value[0] != 'm' {
					return res, fmt.Errorf("changelog %q: offset %d: malformed checkpoint marker", topic, r.Offset)
				}
				res.Meta = bytes.Clone(r.Value[1:])
				res.MarkerNext = r.Offset + 1
			case r.Value == nil:
				err = apply(r.Key, nil, true)
				res.Changes++
			case len(r.Value) > 0 && r.Value[0] == 'v':
				err = apply(r.Key, r.Value[1:], false)
				res.Changes++
			default:
				return res, fmt.Errorf("changelog %q: offset %d: value without the 'v' prefix", topic, r.Offset)
			}
			if err != nil {
				return res, fmt.Errorf("changelog %q: offset %d: %w", topic, r.Offset, err)
			}
		}
	}
	if res.Changes > 0 || res.Meta != nil {
		log.Info("replayed the changelog", "topic", topic, "from", from, "to", res.Next, "changes", res.Changes, "took", time.Since(start))
	}
	return res, nil
}

// Close closes the changelog's own client (not a transaction's).
func (c *Changelog) Close() {
	if c.owned {
		c.cl.Close()
	}
}
