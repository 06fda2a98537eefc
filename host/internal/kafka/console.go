package kafka

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/abi/wjson"
)

// ProduceConfig configures Produce. It is a plain value.
type ProduceConfig struct {
	Client ClientConfig
	// Topic receives the records; it must exist, or the brokers must
	// create topics on first use.
	Topic string
	// KeyField is the path to the key within each JSON line, the dotted
	// path split at its dots ("user.id" is {"user","id"}); nil means no
	// key. A string field's key is its decoded text; any other field's is
	// its JSON text (42, true, {"a":1}). A line where the field is missing
	// or null is produced without a key.
	KeyField []string
	// Logger receives the client's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// conProduceBufferBytes bounds the bytes buffered in the producer while
// Produce reads ahead.
const conProduceBufferBytes = 32 << 20

// Produce reads JSON lines from r and produces each to cfg.Topic, with the
// default partitioner: records with a key go to murmur2(key) mod partitions,
// as with the Java client; records without one are spread in sticky batches.
// Blank lines are skipped. label names r in errors ("label:line: ...").
//
// Produce stops at the first line that is not JSON, at the first record the
// brokers refuse, or when ctx is done; it always waits for the records
// already sent, and returns how many the brokers acknowledged. It is safe to
// call concurrently; each call uses its own client.
func Produce(ctx context.Context, cfg ProduceConfig, r io.Reader, label string) (int64, error) {
	if err := brkCheckTopicName(cfg.Topic); err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	opts, err := cfg.Client.Opts()
	if err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	// A missing topic fails at once rather than after the producer's
	// retries; brokers that cannot be asked are left to the producer.
	if missing, err := MissingTopics(ctx, cfg.Client, []string{cfg.Topic}, true); err == nil && len(missing) > 0 {
		return 0, fmt.Errorf("produce: topic %q does not exist on brokers %s; create it, or enable auto-creation (%s)",
			cfg.Topic, strings.Join(cfg.Client.Brokers, ","), AutoCreateConfig)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.WithLogger(newKgoLogger(log)),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.MaxBufferedBytes(conProduceBufferBytes),
		kgo.AllowAutoTopicCreation(), // as Kafka's producers: brokers that auto-create topics create it
	)...)
	if err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	defer cl.Close()

	var (
		acked   atomic.Int64
		mu      sync.Mutex
		sendErr error // the first record the brokers refused
		failed  atomic.Bool
	)
	promise := func(_ *kgo.Record, err error) {
		if err == nil {
			acked.Add(1)
			return
		}
		mu.Lock()
		if sendErr == nil {
			sendErr = err
		}
		mu.Unlock()
		failed.Store(true)
	}

	var readErr error
	br := bufio.NewReaderSize(r, 64<<10)
	for lineNo := 1; !failed.Load() && ctx.Err() == nil; lineNo++ {
		line, err := br.ReadBytes('\n') // a fresh slice each line: the producer keeps it
		if value := bytes.TrimSpace(line); len(value) > 0 {
			key, kerr := conKey(value, cfg.KeyField)
			if kerr != nil {
				readErr = fmt.Errorf("%s:%d: not JSON: %v", label, lineNo, kerr)
				break
			}
			cl.Produce(ctx, &kgo.Record{Key: key, Value: value}, promise)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("reading %s: %w", label, err)
			break
		}
	}
	// Wait for everything sent; if ctx is done, Flush returns early and
	// Close (deferred) fails what is left.
	ferr := cl.Flush(ctx)
	n := acked.Load()
	mu.Lock() // promises may still run if ctx ended the flush early
	refused := sendErr
	mu.Unlock()
	switch {
	case readErr != nil:
		return n, fmt.Errorf("produce: %w", readErr)
	case refused != nil:
		return n, fmt.Errorf("produce to %s: %w", cfg.Topic, refused)
	case ctx.Err() != nil:
		return n, ctx.Err()
	case ferr != nil:
		return n, fmt.Errorf("produce to %s: %w", cfg.Topic, ferr)
	}
	return n, nil
}

// conKey validates the JSON line value and returns its key.
func conKey(value []byte, path []string) ([]byte, error) {
	if !json.Valid(value) {
		return nil, errors.New(srcJSONError(value))
	}
	if len(path) == 0 {
		return nil, nil
	}
	v, err := wjson.Get(value, path...)
	if err != nil {
		return nil, err
	}
	if v.Kind == wjson.Invalid || v.Kind == wjson.Null {
		return nil, nil
	}
	return v.AppendString(nil), nil
}

// ConsumeConfig configures Consume. It is a plain value.
type ConsumeConfig struct {
	Client ClientConfig
	Topic  string
	// FromBeginning starts at the oldest record; otherwise Consume starts
	// at the end and prints only records produced after it started. With
	// a Group, this applies only to partitions the group has no committed
	// offset for; the others resume where the group left off.
	FromBeginning bool
	// Max stops after this many records; 0 means no limit.
	Max int64
	// Timeout stops after this long without a new record; 0 means never.
	// With a Group, the time spent joining the group (up to 30s) does not
	// count.
	Timeout time.Duration
	// Group consumes in this consumer group and commits the offsets of the
	// records printed (after writing them); "" reads every partition
	// directly and commits nothing.
	Group string
	// Meta prints each record as a JSON envelope:
	// {"partition":…,"offset":…,"timestamp":…,"key":…,"value":…}, where
	// timestamp is in milliseconds, key is a string or null, and value is
	// embedded as JSON when it is valid JSON, else as a string (null for a
	// tombstone). Key and value bytes that are not UTF-8 become U+FFFD.
	Meta bool
	// ReadUncommitted also prints records of transactions not (yet)
	// committed, and of aborted ones. By default Consume reads committed
	// records only, as a reader of an exactly-once pipeline's output must.
	ReadUncommitted bool
	// Logger receives the client's warnings; nil means slog.Default().
	Logger *slog.Logger
}

const (
	// conCommitTimeout bounds Consume's commits, which run even after ctx
	// is done.
	conCommitTimeout = 10 * time.Second
	// conJoinWait is how long Consume waits for a group to assign
	// partitions before its Timeout starts anyway.
	conJoinWait = 30 * time.Second
	// conJoinPoll is how often Consume looks whether the group has assigned
	// partitions yet.
	conJoinPoll = 100 * time.Millisecond
)

// Consume prints the records of cfg.Topic to w, one line each: the value as
// it is (JSON values spanning several lines are compacted), or with Meta the
// envelope. It stops after Max records, after Timeout without a record, or
// when ctx is done, all of which are normal ends returning a nil error, and
// returns how many records it printed. It fails on a write error, on
// authentication or authorisation errors, and when a commit fails. It is safe
// to call concurrently; each call uses its own client.
func Consume(ctx context.Context, cfg ConsumeConfig, w io.Writer) (int64, error) {
	if err := brkCheckTopicName(cfg.Topic); err != nil {
		return 0, fmt.Errorf("consume: %w", err)
	}
	if cfg.Max < 0 || cfg.Timeout < 0 {
		return 0, errors.New("consume: negative max or timeout")
	}
	opts, err := cfg.Client.Opts()
	if err != nil {
		return 0, fmt.Errorf("consume: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	start := kgo.NewOffset().AtEnd()
	if cfg.FromBeginning {
		start = kgo.NewOffset().AtStart()
	}
	opts = append(opts,
		kgo.WithLogger(newKgoLogger(log)),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeStartOffset(start),
		kgo.FetchMaxBytes(srcDefaultFetchMaxBytes),
	)
	if !cfg.ReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	var assignedAt atomic.Int64 // when the group first assigned partitions, in Unix nanoseconds
	joinStart := time.Now()
	if cfg.Group != "" {
		opts = append(opts, kgo.ConsumerGroup(cfg.Group), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				assignedAt.CompareAndSwap(0, time.Now().UnixNano())
			}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("consume: %w", err)
	}
	defer cl.Close()

	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		n       int64
		line    []byte
		tmp     bytes.Buffer
		printed []*kgo.Record
		lastErr string
	)
	// The inactivity clock runs from the last record, and in a group not
	// before the first assignment: joining may take seconds (a real
	// broker delays a new group's first rebalance). A group that assigns
	// nothing within conJoinWait counts as inactive from then on.
	lastActive := time.Now()
	idleSince := func() time.Time {
		if cfg.Group == "" {
			return lastActive
		}
		at := assignedAt.Load()
		if at == 0 {
			return conLater(lastActive, joinStart.Add(conJoinWait))
		}
		return conLater(lastActive, time.Unix(0, at))
	}
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if cfg.Timeout > 0 {
			wait := time.Until(idleSince().Add(cfg.Timeout))
			if cfg.Group != "" && assignedAt.Load() == 0 {
				wait = min(wait, conJoinPoll) // look again once assigned
			}
			pctx, cancel = context.WithTimeout(ctx, max(wait, 0))
		}
		limit := srcDefaultMaxPoll
		if cfg.Max > 0 {
			limit = int(min(cfg.Max-n, int64(limit)))
		}
		fs := cl.PollRecords(pctx, limit)
		cancel()
		if ctx.Err() != nil {
			return n, nil
		}
		var fatal error
		fs.EachError(func(topic string, partition int32, err error) {
			switch {
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			case errors.Is(err, kgo.ErrClientClosed), srcFatal(err):
				fatal = err
			default:
				if msg := err.Error(); msg != lastErr {
					lastErr = msg
					log.Warn("consume", "topic", topic, "partition", partition, "error", err)
				}
			}
		})
		if fatal != nil {
			return n, fmt.Errorf("consume %s: %w", cfg.Topic, fatal)
		}
		printed = printed[:0]
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			line = conFormat(line[:0], r, cfg.Meta, &tmp)
			if _, err := bw.Write(line); err != nil {
				return n, fmt.Errorf("consume: writing: %w", err)
			}
			printed = append(printed, r)
			n++
			if cfg.Max > 0 && n >= cfg.Max {
				break
			}
		}
		if err := bw.Flush(); err != nil {
			return n, fmt.Errorf("consume: writing: %w", err)
		}
		if cfg.Group != "" && len(printed) > 0 {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), conCommitTimeout)
			err := cl.CommitRecords(cctx, printed...)
			cancel()
			if err != nil {
				return n, fmt.Errorf("consume: committing offsets of group %s: %w", cfg.Group, err)
			}
		}
		if cfg.Max > 0 && n >= cfg.Max {
			return n, nil
		}
		if len(printed) > 0 {
			lastActive = time.Now()
		} else if cfg.Timeout > 0 && !time.Now().Before(idleSince().Add(cfg.Timeout)) {
			return n, nil
		}
	}
}

// conLater returns the later of a and b.
func conLater(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// conFormat appends r's output line to dst.
func conFormat(dst []byte, r *kgo.Record, meta bool, tmp *bytes.Buffer) []byte {
	value := r.Value
	valid := value != nil && json.Valid(value)
	if valid && bytes.IndexByte(value, '\n') >= 0 {
		tmp.Reset()
		json.Compact(tmp, value)
		value = tmp.Bytes()
	}
	if !meta {
		dst = append(dst, value...)
		return append(dst, '\n')
	}
	dst = append(dst, `{"partition":`...)
	dst = strconv.AppendInt(dst, int64(r.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, r.Offset, 10)
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
	dst = append(dst, `,"key":`...)
	if r.Key == nil {
		dst = append(dst, "null"...)
	} else {
		dst = wjson.AppendQuoteBytes(dst, r.Key)
	}
	dst = append(dst, `,"value":`...)
	switch {
	case r.Value == nil:
		dst = append(dst, "null"...)
	case valid:
		dst = append(dst, bytes.TrimSpace(value)...)
	default:
		dst = wjson.AppendQuoteBytes(dst, value)
	}
	return append(dst, "}\n"...)
}
