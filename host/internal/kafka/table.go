package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weir-stream/weir/abi/wjson"
)

// TableConfig configures a Table.
type TableConfig struct {
	Client ClientConfig
	// Topic is read as the table: every partition, from its start.
	Topic  string
	Logger *slog.Logger
}

// Table is a Kafka topic read as a table, as Kafka Streams' GlobalKTable:
// each key's latest value, over every partition of the topic, read
// committed. A record with a null value (a tombstone) deletes its key.
// Values must be JSON; a record without a key or with a value that is not
// JSON leaves the table as it was and is kept as a bad record (TakeBad).
//
// OpenTable reads the topic up to the end it has when the table opens (its
// last stable offsets), so a table starts with everything committed before
// it; a goroutine then follows the topic and applies new records as they
// come, until Close. Readers see the table as of the last applied fetch,
// with no relation to their own records' times: a join against it is a
// processing-time join.
//
// Every method is safe for concurrent use. A View holds updates back, so
// views are meant to be held for one batch of lookups.
type Table struct {
	topic string
	cl    *kgo.Client
	log   *slog.Logger

	// mu guards rows: updates take it for writing, once per fetch.
	mu   sync.RWMutex
	rows map[string][]byte

	// badMu guards bad.
	badMu sync.Mutex
	bad   []TableRecord

	applied atomic.Int64 // records applied, tombstones included
	stop    context.CancelFunc
	done    chan struct{}
}

// TableRecord is a record of a table's topic that the table could not take.
type TableRecord struct {
	Topic      string
	Partition  int32
	Offset     int64
	Key, Value []byte
	Reason     string
}

// ErrNoTopic is returned by OpenTable when the table's topic does not exist.
var ErrNoTopic = errors.New("the topic does not exist")

// OpenTable reads cfg.Topic into a table up to the topic's current end, and
// then keeps following it until Close. It fails if the topic does not
// exist (ErrNoTopic), or if ctx ends before the table is loaded.
func OpenTable(ctx context.Context, cfg TableConfig) (*Table, error) {
	log := snkLogger(cfg.Logger).With("table", cfg.Topic)
	opts, err := cfg.Client.Opts()
	if err != nil {
		return nil, err
	}
	// Control records (transaction markers) take offsets too: keeping them
	// shows that a partition reached its end when one is last.
	opts = append(opts, kgo.WithLogger(newKgoLogger(log)), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	t := &Table{topic: cfg.Topic, cl: cl, log: log, rows: make(map[string][]byte), done: make(chan struct{})}
	start := time.Now()
	if err := t.load(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("table %q: %w", cfg.Topic, err)
	}
	log.Info("table loaded", "keys", t.Len(), "records", t.applied.Load(), "took", time.Since(start))
	fctx, stop := context.WithCancel(context.Background())
	t.stop = stop
	go t.follow(fctx)
	return t, nil
}

// load reads every partition up to the end it has now.
func (t *Table) load(ctx context.Context) error {
	adm := kadm.NewClient(t.cl)
	ends, err := adm.ListCommittedOffsets(ctx, t.topic)
	if err != nil {
		return fmt.Errorf("listing the topic's end: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, t.topic)
	if err != nil {
		return fmt.Errorf("listing the topic's start: %w", err)
	}
	todo := make(map[int32]int64) // partition → end, for those with records to read
	parts := 0
	for _, end := range ends[t.topic] {
		if errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
			return ErrNoTopic
		}
		if end.Err != nil {
			return fmt.Errorf("listing partition %d's end: %w", end.Partition, end.Err)
		}
		parts++
		if st, ok := starts.Lookup(t.topic, end.Partition); ok && st.Err == nil && st.Offset >= end.Offset {
			continue // empty
		}
		todo[end.Partition] = end.Offset
	}
	if parts == 0 {
		return ErrNoTopic
	}
	for len(todo) > 0 {
		fs := t.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("reading partition %d: %w", p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		t.apply(fs, func(p int32, next int64) {
			if end, ok := todo[p]; ok && next >= end {
				delete(todo, p)
			}
		})
	}
	return nil
}

// follow applies the topic's new records until ctx ends. Errors that the
// client does not retry by itself are logged (a persisting one once), and
// reading goes on.
func (t *Table) follow(ctx context.Context) {
	defer close(t.done)
	lastErr := ""
	for {
		fs := t.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(_ string, p int32, err error) {
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				t.log.Warn("table: reading the topic failed; retrying", "partition", p, "error", err)
			}
		})
		t.apply(fs, nil)
	}
}

// apply applies the fetched records to the table, and calls reached (if
// not nil) with each partition's offset after its last fetched record.
func (t *Table) apply(fs kgo.Fetches, reached func(partition int32, next int64)) {
	t.mu.Lock()
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		for _, r := range fp.Records {
			if reached != nil {
				reached(fp.Partition, r.Offset+1)
			}
			if r.Attrs.IsControl() {
				continue
			}
			t.applied.Add(1)
			var reason string
			switch {
			case r.Key == nil:
				reason = "the record has no key"
			case r.Value == nil:
				delete(t.rows, string(r.Key))
				continue
			default:
				v, err := wjson.Parse(r.Value)
				if err != nil {
					reason = "the value is not JSON: " + err.Error()
					break
				}
				t.rows[string(r.Key)] = bytes.Clone(v.Raw) // without surrounding white space
				continue
			}
			t.badMu.Lock()
			t.bad = append(t.bad, TableRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
				Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value), Reason: reason})
			t.badMu.Unlock()
			t.log.Warn("table: a record was left out", "partition", r.Partition, "offset", r.Offset, "reason", reason)
		}
	})
	t.mu.Unlock()
}

// Len returns the number of keys in the table.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.rows)
}

// Topic returns the table's topic.
func (t *Table) Topic() string { return t.topic }

// TakeBad appends to dst the records the table left out since the last
// call, and forgets them.
func (t *Table) TakeBad(dst []TableRecord) []TableRecord {
	t.badMu.Lock()
	defer t.badMu.Unlock()
	dst = append(dst, t.bad...)
	clear(t.bad)
	t.bad = t.bad[:0]
	return dst
}

// View returns a view of the table as it is now: updates wait until it is
// released.
func (t *Table) View() TableView {
	t.mu.RLock()
	return TableView{t: t}
}

// TableView reads a Table held still. It is used by one goroutine, and
// must be released, once.
type TableView struct{ t *Table }

// Get returns the value of key, and whether the table has it. The value is
// the table's, read-only, and stays valid after the view is released.
func (v TableView) Get(key []byte) ([]byte, bool) {
	val, ok := v.t.rows[string(key)]
	return val, ok
}

// Release lets updates go on.
func (v TableView) Release() { v.t.mu.RUnlock() }

// Close stops following the topic and closes the table's client. The
// table's values stay readable.
func (t *Table) Close() {
	t.stop()
	<-t.done
	t.cl.Close()
}
