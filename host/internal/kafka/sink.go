package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// DefaultDeliveryTimeout is how long a record may take to be acknowledged,
// retries included, when SinkConfig.DeliveryTimeout is 0, and always for the
// dead-letter output.
const DefaultDeliveryTimeout = 2 * time.Minute

// Values of SinkConfig.Compression, matched without regard to case; ""
// means CompressionSnappy.
const (
	CompressionNone   = "none"   // no compression
	CompressionGzip   = "gzip"   // gzip at its default level
	CompressionSnappy = "snappy" // snappy (the default, as in franz-go and weir's config)
	CompressionLz4    = "lz4"    // LZ4
	CompressionZstd   = "zstd"   // Zstandard; needs brokers of Kafka 2.1 or later
)

// Values of SinkConfig.Acks, matched without regard to case; "" means
// AcksAll, and Kafka's numbers -1, 1 and 0 are accepted too.
const (
	AcksAll    = "all"    // every in-sync replica has the record; idempotent writes
	AcksLeader = "leader" // the partition leader has written it
	AcksNone   = "none"   // sent; the broker does not answer
)

// SinkConfig configures a Kafka sink. It is a plain value, read by NewSink
// and not kept.
type SinkConfig struct {
	// Name is the sink's stage name, used in errors and dead letters.
	Name   string
	Client ClientConfig
	// Topic is the topic every record is produced to. Exactly one of Topic
	// and TopicField is set.
	Topic string
	// TopicField is a JSON path into each record's value (a dotted path
	// split at the dots) whose string is the record's topic. A record whose
	// value is not JSON, lacks the field, or holds something other than a
	// valid topic name there becomes a dead letter. A missing topic is
	// created if the brokers create topics on first use (the sink's own
	// client allows it, as Kafka's producers do; a transaction's does
	// not); otherwise producing to it fails the pipeline once franz-go
	// gives up on it.
	TopicField []string
	// KeyField, when set, is a JSON path into each record's value whose text
	// becomes the Kafka key, as with the key_by operator: a string's decoded
	// text, or for any other value (null included) its JSON text as written.
	// A record whose value is not JSON or lacks the field becomes a dead
	// letter. Nil keeps the record's own key (nil stays a null key).
	KeyField []string
	// Compression is the batch codec: CompressionSnappy (the default:
	// cheap, a large saving on JSON, and read by every mainstream client),
	// CompressionNone, CompressionGzip, CompressionLz4 or CompressionZstd.
	// franz-go sends a batch uncompressed when compressing does not shrink
	// it.
	Compression string
	// Linger is how long a partition's batch waits for more records before
	// it is sent. The default, 0, sends at once (franz-go's own default is
	// 10ms): Write already hands over a whole batch, and since the engine
	// bounds the batches awaiting acknowledgement, lingering caps
	// throughput (BenchmarkSinkWrite, 8 batches of 512 in flight: about
	// 0.4M records/s with 10ms against 2M or more without). Negative values
	// are an error.
	Linger time.Duration
	// BatchMaxBytes caps a record batch, before compression; 0 keeps
	// franz-go's default of 1,000,012 bytes (the brokers' default
	// max.message.bytes). A record too large to fit in a batch on its own
	// (its key, value and headers within snkRecordFraming bytes of the
	// cap) goes to the dead-letter output instead of being produced.
	BatchMaxBytes int32
	// Acks is AcksAll (the default: every in-sync replica has the record),
	// AcksLeader or AcksNone. Idempotent writes, which keep franz-go's
	// retries from duplicating or reordering records, need AcksAll; with
	// any other level they are turned off.
	Acks string
	// DeliveryTimeout bounds how long a record may take from Write to
	// being acknowledged, waiting for buffer space and franz-go's retries
	// included, before its error is reported (failing the pipeline); 0
	// means DefaultDeliveryTimeout. It counts from Write, not from the
	// record's timestamp. A request already sent by an idempotent producer
	// is waited for past the timeout, since failing it could duplicate
	// records. Close waits about this long for records in flight.
	DeliveryTimeout time.Duration
	// Logger receives the sink's own messages and franz-go's warnings and
	// errors (its info messages at debug level); nil means slog.Default().
	Logger *slog.Logger
	// Txn, when set, makes the sink produce through an exactly-once run's
	// transactional client (Source.Txn) instead of a client of its own:
	// its records commit with the run's checkpoints. Compression, Linger,
	// BatchMaxBytes and Acks are then the transaction's.
	Txn *Txn
}

// Sink produces a pipeline's records to Kafka. It implements engine.Sink
// with asynchronous acknowledgements: Write hands the records to franz-go
// and returns; each batch's acknowledgement finishes, once, when all of its
// records are durable according to Acks, or as soon as one of them fails.
//
// Keyed records are partitioned as the Java client does (murmur2 of the key
// modulo the partition count); records without a key are spread by
// franz-go's uniform sticky partitioner, Java's default since Kafka 3.3.
//
// Write, Flush and Close are called by one goroutine; the promises that
// acknowledge records run on franz-go's goroutines. After Close the sink
// cannot be used again.
type Sink struct {
	name      string
	topic     string
	topicPath []string
	topicDesc string // prefix of dead-letter reasons about the topic field
	keyPath   []string
	keyDesc   string // and about the key field
	cl        *kgo.Client
	txn       *Txn // the transaction whose client cl is (closed by its Source), or nil
	log       *slog.Logger
	timeout   time.Duration
	batchMax  int64  // the client's ProducerBatchMaxBytes
	sizeDesc  string // prefix of dead-letter reasons about record size

	// Owned by the Write goroutine.
	topics  map[string]string // topic names read from records, interned
	scratch []byte
	closed  bool

	batches  sync.Pool      // *snkBatch, free for reuse
	inflight sync.WaitGroup // batches with records not yet finished
	failures atomic.Int64   // produce errors seen, for logging the first
}

var _ engine.Sink = (*Sink)(nil)

// snkMaxTopics bounds the interned topic names; names past it are still
// produced, at one allocation each.
const snkMaxTopics = 4096

// NewSink checks cfg and creates the sink's franz-go client. It does not
// contact the brokers: connection problems surface as produce errors.
func NewSink(cfg SinkConfig) (*Sink, error) {
	if cfg.Name == "" {
		return nil, errors.New("kafka sink: no name")
	}
	if (cfg.Topic == "") == (len(cfg.TopicField) == 0) {
		return nil, fmt.Errorf("sink %q: set exactly one of a topic and a topic field", cfg.Name)
	}
	if cfg.Topic != "" {
		if p := snkTopicProblem([]byte(cfg.Topic)); p != "" {
			return nil, fmt.Errorf("sink %q: topic %q %s", cfg.Name, cfg.Topic, p)
		}
	}
	for _, path := range [][]string{cfg.TopicField, cfg.KeyField} {
		for _, part := range path {
			if part == "" {
				return nil, fmt.Errorf("sink %q: field path %q has an empty part", cfg.Name, strings.Join(path, "."))
			}
		}
	}
	log := snkLogger(cfg.Logger)
	cl, timeout, err := snkClient(cfg.Client, cfg.Txn, cfg.Compression, cfg.Acks, cfg.Linger, cfg.BatchMaxBytes, cfg.DeliveryTimeout, log)
	if err != nil {
		return nil, fmt.Errorf("sink %q: %w", cfg.Name, err)
	}
	s := &Sink{
		txn:       cfg.Txn,
		name:      cfg.Name,
		topic:     cfg.Topic,
		topicPath: cfg.TopicField,
		topicDesc: "sink " + strconv.Quote(cfg.Name) + ": topic field " + strings.Join(cfg.TopicField, ".") + ": ",
		keyPath:   cfg.KeyField,
		keyDesc:   "sink " + strconv.Quote(cfg.Name) + ": key field " + strings.Join(cfg.KeyField, ".") + ": ",
		cl:        cl,
		log:       log.With("sink", cfg.Name),
		timeout:   timeout,
		topics:    make(map[string]string),
	}
	s.batchMax = int64(cl.OptValue(kgo.ProducerBatchMaxBytes).(int32))
	s.sizeDesc = "sink " + strconv.Quote(cfg.Name) + ": "
	return s, nil
}

// snkRecordFraming bounds what a record batch adds around one record
// alone in it: the batch header (61 bytes) and the record's varint
// lengths, attributes and deltas (at most 5+1+1+1+5+5+5 bytes, plus 10 a
// header). A record whose key, value and headers come within it of the
// batch cap cannot be produced: franz-go fails it with MESSAGE_TOO_LARGE,
// which would fail the whole write, so the sink dead-letters it first.
// The bound errs by a few bytes: with a 4096-byte cap franz-go refuses
// records of key and value from between 4,014 and 4,023 bytes on, the
// sink from 4,001.
const snkRecordFraming = 96

// tooLarge returns a dead-letter reason when rec, produced with key,
// cannot fit in a record batch, or "".
func (s *Sink) tooLarge(key []byte, rec *record.Record) string {
	size := int64(len(key) + len(rec.Value))
	for _, h := range rec.Headers {
		size += int64(len(h.Key) + len(h.Value))
	}
	if size+snkRecordFraming+10*int64(len(rec.Headers)) <= s.batchMax {
		return ""
	}
	return fmt.Sprintf("%sthe record's key, value and headers are %d bytes, more than a record batch of %d bytes (batch_max_bytes) can hold with its framing: Kafka would refuse it",
		s.sizeDesc, size, s.batchMax)
}

// snkClient returns a producer client, and the delivery timeout in
// effect: a new one, or txn's.
func snkClient(cc ClientConfig, txn *Txn, compression, acks string, linger time.Duration, batchMax int32, timeout time.Duration, log *slog.Logger) (*kgo.Client, time.Duration, error) {
	opts, timeout, err := snkProducerOpts(cc, compression, acks, linger, batchMax, timeout, nil, log)
	if err != nil {
		return nil, 0, err
	}
	if txn != nil {
		return txn.cl, timeout, nil
	}
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation())...)
	return cl, timeout, err
}

// manualTopics are the topics, of those one producer client writes, whose
// records name their partition: changelogs, whose records go to their
// task's partition. It is safe for concurrent use; a topic is added before
// the client first produces to it.
type manualTopics struct{ m sync.Map }

func (mt *manualTopics) add(topic string) { mt.m.Store(topic, struct{}{}) }

// snkPartitioner places the manual topics' records in the partition they
// name, and every other topic's as def does.
type snkPartitioner struct {
	def    kgo.Partitioner
	manual *manualTopics // nil for none
}

func (p snkPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if p.manual != nil {
		if _, ok := p.manual.m.Load(topic); ok {
			return kgo.ManualPartitioner().ForTopic(topic)
		}
	}
	return p.def.ForTopic(topic)
}

// snkProducerOpts returns the client options for a producer, with the
// delivery timeout in effect. Records of the manual topics (nil for none)
// go to the partition they name.
func snkProducerOpts(cc ClientConfig, compression, acks string, linger time.Duration, batchMax int32, timeout time.Duration, manual *manualTopics, log *slog.Logger) ([]kgo.Opt, time.Duration, error) {
	opts, err := cc.Opts()
	if err != nil {
		return nil, 0, err
	}
	var codec kgo.CompressionCodec
	switch strings.ToLower(compression) {
	case CompressionNone:
		codec = kgo.NoCompression()
	case CompressionGzip:
		codec = kgo.GzipCompression()
	case "", CompressionSnappy:
		codec = kgo.SnappyCompression()
	case CompressionLz4:
		codec = kgo.Lz4Compression()
	case CompressionZstd:
		codec = kgo.ZstdCompression()
	default:
		return nil, 0, fmt.Errorf("unknown compression %q (want none, gzip, snappy, lz4 or zstd)", compression)
	}
	if timeout < 0 {
		return nil, 0, fmt.Errorf("negative delivery timeout %v", timeout)
	}
	if timeout == 0 {
		timeout = DefaultDeliveryTimeout
	}
	if batchMax < 0 {
		return nil, 0, fmt.Errorf("negative batch max bytes %d", batchMax)
	}
	opts = append(opts,
		kgo.WithLogger(newKgoLogger(log)),
		kgo.ProducerBatchCompression(codec),
		// No kgo.RecordDeliveryTimeout: franz-go measures it from each
		// batch's first record timestamp, which here is the event time, so
		// replayed or late records would fail at once. The deadline is the
		// context each Write produces with instead.
		// kgo.UniformBytesPartitioner is franz-go's default, set here so
		// that placement does not depend on it. For a record with a non-nil
		// key it returns KafkaHasher(murmur2)(key, n) =
		// int(murmur2(key)&0x7fffffff) % n (partitioner.go), which is the
		// Java client's Utils.toPositive(Utils.murmur2(key)) % n
		// (BuiltInPartitioner.partitionForKey); TestSinkMurmur2Placement
		// checks it against Kafka's own murmur2 test vectors. Records
		// without a key stick to one partition per 64 KiB, choosing the
		// least backed-up next, as Java's KIP-794 partitioner does.
		kgo.RecordPartitioner(snkPartitioner{kgo.UniformBytesPartitioner(64<<10, true, true, nil), manual}),
	)
	switch strings.ToLower(acks) {
	case "", AcksAll, "-1":
	case AcksLeader, "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case AcksNone, "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, 0, fmt.Errorf("unknown acks %q (want all, leader or none)", acks)
	}
	if linger < 0 {
		return nil, 0, fmt.Errorf("negative linger %v", linger)
	}
	opts = append(opts, kgo.ProducerLinger(linger))
	if batchMax > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(batchMax))
	}
	return opts, timeout, nil
}

// Name returns the sink's stage name.
func (s *Sink) Name() string { return s.name }

// snkBatch holds the franz-go records of one Write until all of them are
// finished, so that producing a batch allocates nothing per record. The
// batches are reused through Sink.batches.
type snkBatch struct {
	s    *Sink
	ack  *engine.Ack
	recs []kgo.Record
	hdrs []kgo.RecordHeader
	keys []byte // decoded keys of fields with escapes
	// pending counts the records whose promise has not run; failed is set
	// by the first failure, which finishes ack at once.
	pending atomic.Int64
	failed  atomic.Bool
	promise func(*kgo.Record, error) // b.finish, bound once
	// cancel releases the context carrying the batch's delivery deadline.
	cancel context.CancelFunc
}

func (s *Sink) getBatch(n, nhdrs int) *snkBatch {
	b, _ := s.batches.Get().(*snkBatch)
	if b == nil {
		b = &snkBatch{s: s}
		b.promise = b.finish
	}
	if cap(b.recs) < n {
		b.recs = make([]kgo.Record, n)
	}
	b.recs = b.recs[:n]
	if cap(b.hdrs) < nhdrs {
		b.hdrs = make([]kgo.RecordHeader, 0, nhdrs)
	}
	return b
}

// putBatch drops b's references to the records' bytes and makes it
// reusable.
func (s *Sink) putBatch(b *snkBatch) {
	clear(b.recs[:cap(b.recs)])
	clear(b.hdrs)
	b.hdrs = b.hdrs[:0]
	b.keys = b.keys[:0]
	b.ack = nil
	b.cancel = nil
	b.failed.Store(false)
	s.batches.Put(b)
}

// finish is the promise of every record of b.
func (b *snkBatch) finish(r *kgo.Record, err error) {
	s := b.s
	if err != nil && b.failed.CompareAndSwap(false, true) {
		err = fmt.Errorf("sink %q: producing to topic %q: %w", s.name, r.Topic, snkDeliveryErr(s.txn.explain(err), s.timeout))
		if s.failures.Add(1) == 1 {
			s.log.Error("producing failed", "topic", r.Topic, "err", err)
		}
		b.ack.Done(err)
	}
	if b.pending.Add(-1) == 0 {
		if !b.failed.Load() {
			b.ack.Done(nil)
		}
		b.cancel()
		s.putBatch(b)
		s.inflight.Done()
	}
}

// Write produces recs, registering one piece of work on ack for the lot. A
// record whose topic or key field cannot be read is appended to dead instead
// of being produced. The records' bytes are handed to franz-go as they are,
// so they must stay unchanged until ack's batch completes.
func (s *Sink) Write(recs []record.Record, dead []record.DeadLetter, ack *engine.Ack) ([]record.DeadLetter, error) {
	if s.closed {
		return dead, fmt.Errorf("sink %q: write after close", s.name)
	}
	if len(recs) == 0 {
		return dead, nil
	}
	nh := 0
	for i := range recs {
		nh += len(recs[i].Headers)
	}
	b := s.getBatch(len(recs), nh)
	n := 0
	for i := range recs {
		rec := &recs[i]
		topic := s.topic
		if s.topicPath != nil {
			var reason string
			if topic, reason = s.topicOf(rec.Value); reason != "" {
				dead = append(dead, record.DeadLetter{Record: *rec, Stage: s.name,
					Reason: s.topicDesc + reason})
				continue
			}
		}
		key := rec.Key
		if s.keyPath != nil {
			var reason string
			if key, reason = s.keyOf(b, rec.Value); reason != "" {
				dead = append(dead, record.DeadLetter{Record: *rec, Stage: s.name,
					Reason: s.keyDesc + reason})
				continue
			}
		}
		if reason := s.tooLarge(key, rec); reason != "" {
			dead = append(dead, record.DeadLetter{Record: *rec, Stage: s.name, Reason: reason})
			continue
		}
		kr := &b.recs[n]
		n++
		kr.Topic = topic
		kr.Key = key
		kr.Value = rec.Value
		kr.Timestamp = time.UnixMilli(rec.Timestamp)
		if len(rec.Headers) > 0 {
			start := len(b.hdrs)
			for _, h := range rec.Headers {
				b.hdrs = append(b.hdrs, kgo.RecordHeader(h))
			}
			kr.Headers = b.hdrs[start:len(b.hdrs):len(b.hdrs)]
		}
	}
	if n == 0 {
		s.putBatch(b)
		return dead, nil
	}
	kept := b.recs[:n]
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	b.ack = ack
	b.cancel = cancel
	b.pending.Store(int64(n))
	ack.Add(1)
	s.inflight.Add(1)
	// The last promise releases b, clearing its records, and it cannot
	// run before the last Produce call: nothing of b is touched after it.
	promise := b.promise
	for i := range kept {
		s.cl.Produce(ctx, &kept[i], promise)
	}
	return dead, nil
}

// snkDeliveryErr explains an expired delivery deadline.
func snkDeliveryErr(err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("not delivered within the delivery timeout of %v: %w", timeout, err)
	}
	return err
}

// topicOf reads the topic field of a record's value, returning the topic or
// why there is none.
func (s *Sink) topicOf(v []byte) (string, string) {
	f, reason := snkField(v, s.topicPath)
	if reason != "" {
		return "", reason
	}
	if f.Kind != wjson.String {
		return "", "the field is " + snkArticle(f.Kind) + ", not a string"
	}
	name := f.Raw[1 : len(f.Raw)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		s.scratch = f.AppendString(s.scratch[:0])
		name = s.scratch
	}
	if t, ok := s.topics[string(name)]; ok {
		return t, ""
	}
	if p := snkTopicProblem(name); p != "" {
		return "", strconv.Quote(string(name)) + " " + p
	}
	t := string(name)
	if len(s.topics) < snkMaxTopics {
		s.topics[t] = t
	}
	return t, ""
}

// keyOf reads the key field of a record's value. The key aliases the value
// when it can; an escaped string is decoded into b.keys.
func (s *Sink) keyOf(b *snkBatch, v []byte) ([]byte, string) {
	f, reason := snkField(v, s.keyPath)
	if reason != "" {
		return nil, reason
	}
	raw := f.Raw
	switch {
	case f.Kind != wjson.String:
		return raw, ""
	case bytes.IndexByte(raw, '\\') < 0:
		return raw[1 : len(raw)-1 : len(raw)-1], ""
	}
	start := len(b.keys)
	b.keys = f.AppendString(b.keys)
	return b.keys[start:len(b.keys):len(b.keys)], ""
}

// snkField looks path up in v, returning the field or why it cannot be read.
func snkField(v []byte, path []string) (wjson.Value, string) {
	if v == nil {
		return wjson.Value{}, "the record has no value"
	}
	f, err := wjson.Get(v, path...)
	if err != nil {
		return f, "the value is not JSON: " + err.Error()
	}
	if !f.Exists() {
		return f, "field not found"
	}
	return f, ""
}

func snkArticle(k wjson.Kind) string {
	switch k {
	case wjson.Array, wjson.Object:
		return "an " + k.String()
	case wjson.Null:
		return "null"
	}
	return "a " + k.String()
}

// snkTopicProblem says what makes name an invalid Kafka topic name, as the
// brokers' Topic.validate would, or returns "".
func snkTopicProblem(name []byte) string {
	switch {
	case len(name) == 0:
		return "is empty, which is not a valid topic name"
	case string(name) == "." || string(name) == "..":
		return "is not a valid topic name"
	case len(name) > 249:
		return "is longer than the 249 characters a topic name may have"
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "is not a valid topic name (use ASCII letters, digits, '.', '_' and '-')"
		}
	}
	return ""
}

// Flush returns nil: records become durable asynchronously and report
// through their batch's acknowledgement. It does not wait for franz-go,
// which would stall the pipeline for a round trip after every batch.
func (s *Sink) Flush() error { return nil }

// Close waits up to the delivery timeout for the records in flight, then
// closes the client, which fails whatever is still unfinished (failing its
// acknowledgement). When Close returns every acknowledgement the sink
// registered has been finished. It returns an error if records were still
// in flight at the deadline.
func (s *Sink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return snkClose(s.cl, s.txn != nil, &s.inflight, s.timeout, s.log, "sink "+strconv.Quote(s.name))
}

// snkClose flushes cl for up to timeout, closes it unless it is shared (a
// transaction's), and waits for the promises that are still due.
func snkClose(cl *kgo.Client, shared bool, inflight *sync.WaitGroup, timeout time.Duration, log *slog.Logger, what string) error {
	// Lingering records are sent at once by Flush. A little more than the
	// delivery timeout lets franz-go fail expired records itself.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
	ferr := cl.Flush(ctx)
	cancel()
	if ferr != nil {
		log.Error("records still in flight at close", "timeout", timeout)
		ferr = fmt.Errorf("%s: records still in flight after %v: %w", what, timeout, ferr)
	}
	if shared {
		inflight.Wait()
		return ferr
	}
	cl.Close()
	// Closing fails every buffered record; its promises run on franz-go's
	// promise goroutine, possibly after Close returned.
	inflight.Wait()
	return ferr
}

// snkLogger returns l, or slog.Default() for nil.
func snkLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
