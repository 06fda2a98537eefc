package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// snkCluster starts a one-broker kfake cluster listening on loopback, with
// the given topics and partition counts, closed when the test ends.
func snkCluster(tb testing.TB, topics map[string]int32, opts ...kfake.Opt) ClientConfig {
	tb.Helper()
	all := []kfake.Opt{kfake.NumBrokers(1)}
	for t, n := range topics {
		all = append(all, kfake.SeedTopics(n, t))
	}
	c, err := kfake.NewCluster(append(all, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return ClientConfig{Brokers: c.ListenAddrs(), ClientID: "weir-test"}
}

// snkNewSink creates a sink that is closed, if the test has not, when the
// test ends.
func snkNewSink(tb testing.TB, cfg SinkConfig) *Sink {
	tb.Helper()
	if cfg.Name == "" {
		cfg.Name = "out"
	}
	if cfg.Logger == nil {
		cfg.Logger = snkQuiet()
	}
	s, err := NewSink(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// snkQuiet returns a logger that drops everything, for tests whose
// failures are expected.
func snkQuiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// snkAckLog records the completions of the Acks made by snkNewAck.
type snkAckLog struct {
	mu    sync.Mutex
	calls int
	errs  []error
}

func (l *snkAckLog) done(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if err != nil {
		l.errs = append(l.errs, err)
	}
}

func (l *snkAckLog) get() (calls int, errs []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls, slices.Clone(l.errs)
}

// snkNewAck returns an Ack as the engine prepares one for a batch: holding
// one count for the engine, released with Done(nil) after the writes.
func snkNewAck(tb testing.TB, log *snkAckLog) *engine.Ack {
	tb.Helper()
	return engine.NewAck(log.done)
}

// snkAckCount returns the outstanding count of a.
func snkAckCount(tb testing.TB, a *engine.Ack) int64 {
	tb.Helper()
	return a.Pending()
}

// snkConsume reads topic from the start until it has n records, and checks
// that the topic holds exactly n.
func snkConsume(tb testing.TB, cc ClientConfig, topic string, n int) []*kgo.Record {
	tb.Helper()
	opts, err := cc.Opts()
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			tb.Fatalf("topic %s: got %d records, want %d", topic, len(got), n)
		}
		fs.EachError(func(t string, p int32, err error) { tb.Fatalf("fetching %s[%d]: %v", t, p, err) })
		got = append(got, fs.Records()...)
	}
	if total := snkEndOffsets(tb, cc, topic); total != int64(n) {
		tb.Fatalf("topic %s holds %d records, want %d", topic, total, n)
	}
	return got
}

// snkEndOffsets returns the sum of topic's end offsets: its record count.
func snkEndOffsets(tb testing.TB, cc ClientConfig, topic string) int64 {
	tb.Helper()
	opts, _ := cc.Opts()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	return total
}

// snkWrite writes recs to s under a fresh Ack, releases the engine's hold,
// and returns the dead letters and the Ack's log.
func snkWrite(tb testing.TB, s *Sink, recs []record.Record) ([]record.DeadLetter, *snkAckLog) {
	tb.Helper()
	log := &snkAckLog{}
	ack := snkNewAck(tb, log)
	dead, err := s.Write(recs, nil, ack)
	if err != nil {
		tb.Fatal(err)
	}
	ack.Done(nil)
	return dead, log
}

// snkHeaders renders headers as "k=v" strings for comparison.
func snkHeaders(hs []kgo.RecordHeader) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Key+"="+string(h.Value))
	}
	return out
}

func TestSinkRoundTrip(t *testing.T) {
	const ts = 1_700_000_000_123
	type want struct {
		topic   string
		key     []byte // nil: null key
		value   string
		headers []string
	}
	tests := []struct {
		name string
		cfg  SinkConfig
		recs []record.Record
		want []want
	}{
		{
			name: "static topic keeps key, headers and timestamp",
			cfg:  SinkConfig{Topic: "a"},
			recs: []record.Record{
				{Key: []byte("k1"), Value: []byte(`{"n":1}`), Timestamp: ts, Headers: []record.Header{{Key: "h", Value: []byte("v")}, {Key: "h", Value: []byte("w")}}},
				{Key: nil, Value: []byte(`not json is fine here`), Timestamp: ts + 1},
				{Key: []byte{}, Value: nil, Timestamp: ts + 2, Headers: []record.Header{{Key: "empty", Value: []byte{}}}},
			},
			want: []want{
				{topic: "a", key: []byte("k1"), value: `{"n":1}`, headers: []string{"h=v", "h=w"}},
				{topic: "a", key: nil, value: `not json is fine here`},
				{topic: "a", key: []byte{}, value: "", headers: []string{"empty="}},
			},
		},
		{
			name: "topic from field",
			cfg:  SinkConfig{TopicField: []string{"route", "to"}},
			recs: []record.Record{
				{Key: []byte("x"), Value: []byte(`{"route":{"to":"a"},"n":1}`), Timestamp: ts},
				{Key: []byte("y"), Value: []byte(`{"route":{"to":"b"},"n":2}`), Timestamp: ts + 1},
				{Key: []byte("z"), Value: []byte(`{"route":{"to":"\u0061"},"n":3}`), Timestamp: ts + 2}, // escaped "a"
			},
			want: []want{
				{topic: "a", key: []byte("x"), value: `{"route":{"to":"a"},"n":1}`},
				{topic: "b", key: []byte("y"), value: `{"route":{"to":"b"},"n":2}`},
				{topic: "a", key: []byte("z"), value: `{"route":{"to":"\u0061"},"n":3}`},
			},
		},
		{
			name: "key from field",
			cfg:  SinkConfig{Topic: "a", KeyField: []string{"id"}},
			recs: []record.Record{
				{Key: []byte("ignored"), Value: []byte(`{"id":"user-1"}`), Timestamp: ts},
				{Value: []byte(`{"id":"tab\there \"q\" \u00e9"}`), Timestamp: ts},
				{Value: []byte(`{"id": 42 }`), Timestamp: ts},
				{Value: []byte(`{"id":{"a": [1, 2]}}`), Timestamp: ts},
				{Value: []byte(`{"id":null}`), Timestamp: ts},
				{Value: []byte(`{"id":""}`), Timestamp: ts},
			},
			want: []want{
				{topic: "a", key: []byte("user-1"), value: `{"id":"user-1"}`},
				{topic: "a", key: []byte("tab\there \"q\" é"), value: `{"id":"tab\there \"q\" \u00e9"}`},
				{topic: "a", key: []byte("42"), value: `{"id": 42 }`},
				{topic: "a", key: []byte(`{"a": [1, 2]}`), value: `{"id":{"a": [1, 2]}}`},
				{topic: "a", key: []byte("null"), value: `{"id":null}`},
				{topic: "a", key: []byte{}, value: `{"id":""}`},
			},
		},
		{
			// The delivery deadline counts from Write, not from the
			// record's (event) timestamp.
			name: "old event time, short delivery timeout",
			cfg:  SinkConfig{Topic: "a", DeliveryTimeout: time.Second},
			recs: []record.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}, {Value: []byte("w"), Timestamp: -5}},
			want: []want{{topic: "a", key: []byte("k"), value: "v"}, {topic: "a", value: "w"}},
		},
		{
			name: "acks leader",
			cfg:  SinkConfig{Topic: "a", Acks: AcksLeader},
			recs: []record.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: ts}},
			want: []want{{topic: "a", key: []byte("k"), value: "v"}},
		},
		{
			name: "acks none",
			cfg:  SinkConfig{Topic: "a", Acks: AcksNone, Linger: 5 * time.Millisecond},
			recs: []record.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: ts}},
			want: []want{{topic: "a", key: []byte("k"), value: "v"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := snkCluster(t, map[string]int32{"a": 1, "b": 1})
			tt.cfg.Client = cc
			s := snkNewSink(t, tt.cfg)
			dead, log := snkWrite(t, s, tt.recs)
			if len(dead) > 0 {
				t.Fatalf("dead letters: %v", dead[0].Reason)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if calls, errs := log.get(); calls != 1 || len(errs) > 0 {
				t.Fatalf("ack completed %d times, errors %v; want once, no error", calls, errs)
			}
			count := map[string]int{}
			for _, w := range tt.want {
				count[w.topic]++
			}
			got := map[string][]*kgo.Record{}
			for topic, n := range count {
				got[topic] = snkConsume(t, cc, topic, n)
			}
			next := map[string]int{}
			for i, w := range tt.want {
				r := got[w.topic][next[w.topic]]
				next[w.topic]++
				if (r.Key == nil) != (w.key == nil) || !bytes.Equal(r.Key, w.key) {
					t.Errorf("record %d: key %q (nil %v), want %q (nil %v)", i, r.Key, r.Key == nil, w.key, w.key == nil)
				}
				if string(r.Value) != w.value {
					t.Errorf("record %d: value %q, want %q", i, r.Value, w.value)
				}
				if h := snkHeaders(r.Headers); !slices.Equal(h, w.headers) {
					t.Errorf("record %d: headers %q, want %q", i, h, w.headers)
				}
				if ms := r.Timestamp.UnixMilli(); ms != tt.recs[i].Timestamp {
					t.Errorf("record %d: timestamp %d, want %d", i, ms, tt.recs[i].Timestamp)
				}
			}
		})
	}
}

func TestSinkBadFields(t *testing.T) {
	tests := []struct {
		name   string
		cfg    SinkConfig
		value  string
		nilVal bool
		reason string
	}{
		{name: "value not JSON", cfg: SinkConfig{TopicField: []string{"t"}}, value: `{"t":"a"`,
			reason: `sink "out": topic field t: the value is not JSON: wjson: unexpected end of JSON input at byte offset 8`},
		{name: "no value", cfg: SinkConfig{TopicField: []string{"t"}}, nilVal: true,
			reason: `sink "out": topic field t: the record has no value`},
		{name: "topic field missing", cfg: SinkConfig{TopicField: []string{"r", "t"}}, value: `{"r":{"x":"a"}}`,
			reason: `sink "out": topic field r.t: field not found`},
		{name: "topic field a number", cfg: SinkConfig{TopicField: []string{"t"}}, value: `{"t":7}`,
			reason: `sink "out": topic field t: the field is a number, not a string`},
		{name: "topic field an object", cfg: SinkConfig{TopicField: []string{"t"}}, value: `{"t":{}}`,
			reason: `sink "out": topic field t: the field is an object, not a string`},
		{name: "topic field null", cfg: SinkConfig{TopicField: []string{"t"}}, value: `{"t":null}`,
			reason: `sink "out": topic field t: the field is null, not a string`},
		{name: "topic name empty", cfg: SinkConfig{TopicField: []string{"t"}}, value: `{"t":""}`,
			reason: `sink "out": topic field t: "" is empty, which is not a valid topic name`},
		{name: "topic name invalid", cfg: SinkConfig{TopicField: []string{"t"}}, value: `{"t":"a b"}`,
			reason: `sink "out": topic field t: "a b" is not a valid topic name (use ASCII letters, digits, '.', '_' and '-')`},
		{name: "topic name too long", cfg: SinkConfig{TopicField: []string{"t"}}, value: `{"t":"` + strings.Repeat("x", 250) + `"}`,
			reason: `sink "out": topic field t: "` + strings.Repeat("x", 250) + `" is longer than the 249 characters a topic name may have`},
		{name: "key field missing", cfg: SinkConfig{Topic: "a", KeyField: []string{"id"}}, value: `{"t":"a"}`,
			reason: `sink "out": key field id: field not found`},
		{name: "record too large for a batch", cfg: SinkConfig{Topic: "a", BatchMaxBytes: 4096}, value: `{"t":"` + strings.Repeat("x", 4000) + `"}`,
			reason: `sink "out": the record's key, value and headers are 4011 bytes, more than a record batch of 4096 bytes (batch_max_bytes) can hold with its framing: Kafka would refuse it`},
		{name: "key value not JSON", cfg: SinkConfig{Topic: "a", KeyField: []string{"id"}}, value: `id=1`,
			reason: `sink "out": key field id: the value is not JSON: wjson: invalid character 'i' looking for beginning of value at byte offset 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := snkCluster(t, map[string]int32{"a": 1})
			tt.cfg.Client = cc
			s := snkNewSink(t, tt.cfg)
			bad := record.Record{Key: []byte("bad"), Value: []byte(tt.value), Timestamp: 5,
				Origin: record.Origin{Source: "in", Partition: -1, Offset: 1}}
			if tt.nilVal {
				bad.Value = nil
			}
			good := record.Record{Key: []byte("good"), Value: []byte(`{"t":"a","id":"k","r":{"t":"a"}}`), Timestamp: 6}
			dead, log := snkWrite(t, s, []record.Record{good, bad, good})
			if len(dead) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dead))
			}
			if d := dead[0]; d.Reason != tt.reason || d.Stage != "out" || !bytes.Equal(d.Record.Value, bad.Value) || d.Record.Origin != bad.Origin {
				t.Fatalf("dead letter %+v\nwant reason %s", d, tt.reason)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if calls, errs := log.get(); calls != 1 || len(errs) > 0 {
				t.Fatalf("ack completed %d times, errors %v", calls, errs)
			}
			snkConsume(t, cc, "a", 2)
		})
	}
}

// snkJavaMurmur2 is Kafka's Utils.murmur2 transcribed with Java's int
// arithmetic (>>> becomes a shift of the uint32), independently of
// franz-go's version.
func snkJavaMurmur2(data []byte) int32 {
	length := int32(len(data))
	const seed = -1756908916 // 0x9747b28c as a Java int
	const m int32 = 0x5bd1e995
	const r = 24
	h := int32(seed) ^ length
	for i := int32(0); i < length/4; i++ {
		i4 := i * 4
		k := int32(data[i4]) + int32(data[i4+1])<<8 + int32(data[i4+2])<<16 + int32(data[i4+3])<<24
		k *= m
		k ^= int32(uint32(k) >> r)
		k *= m
		h *= m
		h ^= k
	}
	tail := length &^ 3
	switch length % 4 {
	case 3:
		h ^= int32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= int32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= int32(data[tail])
		h *= m
	}
	h ^= int32(uint32(h) >> 13)
	h *= m
	h ^= int32(uint32(h) >> 15)
	return h
}

// snkJavaPartition is BuiltInPartitioner.partitionForKey:
// Utils.toPositive(Utils.murmur2(key)) % numPartitions.
func snkJavaPartition(key []byte, n int32) int32 { return (snkJavaMurmur2(key) & 0x7fffffff) % n }

// TestSinkMurmur2Placement checks that keyed records land where the Java
// producer would put them.
func TestSinkMurmur2Placement(t *testing.T) {
	// Kafka's UtilsTest.testMurmur2 vectors pin the transcription.
	for _, c := range []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := snkJavaMurmur2([]byte(c.in)); got != c.want {
			t.Fatalf("snkJavaMurmur2(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	// Partitions printed by a JVM (OpenJDK 17) running Kafka's
	// Utils.murmur2, Utils.toPositive and BuiltInPartitioner.partitionForKey
	// verbatim, for topics of 7 and 12 partitions.
	b, err := os.ReadFile("../task/testdata/java-partitions.json")
	if err != nil {
		t.Fatal(err)
	}
	var known []struct {
		Key      string `json:"key"`
		P7       int32  `json:"p7"`
		P12      int32  `json:"p12"`
		JavaHash int32  `json:"java_hash"`
	}
	if err := json.Unmarshal(b, &known); err != nil || len(known) == 0 {
		t.Fatalf("java-partitions.json: %v (%d rows)", err, len(known))
	}
	want := map[string]map[string]int32{"p7": {}, "p12": {}} // topic → key → partition
	var keys []string
	for _, k := range known {
		if h := snkJavaMurmur2([]byte(k.Key)); h != k.JavaHash {
			t.Fatalf("snkJavaMurmur2(%q) = %d, Java says %d", k.Key, h, k.JavaHash)
		}
		want["p7"][k.Key], want["p12"][k.Key] = k.P7, k.P12
		keys = append(keys, k.Key)
	}
	for i := range 200 {
		k := "key-" + strconv.Itoa(i)
		want["p7"][k], want["p12"][k] = snkJavaPartition([]byte(k), 7), snkJavaPartition([]byte(k), 12)
		keys = append(keys, k)
	}
	cc := snkCluster(t, map[string]int32{"p7": 7, "p12": 12})
	for _, topic := range []string{"p7", "p12"} {
		t.Run(topic, func(t *testing.T) {
			s := snkNewSink(t, SinkConfig{Client: cc, Topic: topic})
			recs := make([]record.Record, len(keys))
			for i, k := range keys {
				recs[i] = record.Record{Key: []byte(k), Value: []byte(`{}`), Timestamp: 1}
			}
			snkWrite(t, s, recs)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, r := range snkConsume(t, cc, topic, len(keys)) {
				if w := want[topic][string(r.Key)]; r.Partition != w {
					t.Errorf("key %q landed in partition %d, Java puts it in %d", r.Key, r.Partition, w)
				}
			}
		})
	}
}

func TestSinkCompression(t *testing.T) {
	tests := []struct {
		name  string
		codec string
		want  uint8 // the batch attribute's codec: 0 none … 4 zstd
	}{
		{"default", "", 2},
		{"none", CompressionNone, 0},
		{"gzip", CompressionGzip, 1},
		{"snappy", CompressionSnappy, 2},
		{"lz4", CompressionLz4, 3},
		{"zstd", CompressionZstd, 4},
		{"upper case", "ZSTD", 4},
	}
	cc := snkCluster(t, map[string]int32{"c": 1})
	total := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snkNewSink(t, SinkConfig{Client: cc, Topic: "c", Compression: tt.codec})
			// Compressible values, so that franz-go does compress.
			recs := make([]record.Record, 50)
			for i := range recs {
				v := fmt.Sprintf(`{"codec":%q,"i":%d,"pad":%q}`, tt.name, i, strings.Repeat("abc", 100))
				recs[i] = record.Record{Key: []byte(tt.name), Value: []byte(v), Timestamp: 1}
			}
			snkWrite(t, s, recs)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			total += len(recs)
			got := snkConsume(t, cc, "c", total)[total-len(recs):]
			for i, r := range got {
				if string(r.Value) != string(recs[i].Value) {
					t.Fatalf("record %d: value %q, want %q", i, r.Value, recs[i].Value)
				}
				if c := r.Attrs.CompressionType(); c != tt.want {
					t.Fatalf("record %d: compression %d, want %d", i, c, tt.want)
				}
			}
		})
	}
}

// TestSinkAcks checks that each Write registers one piece of work when it
// produces anything, finished exactly once when its records are durable,
// without a Flush or Close, and that Close finishes everything.
func TestSinkAcks(t *testing.T) {
	cc := snkCluster(t, map[string]int32{"a": 3})
	rec := func(i int) record.Record {
		return record.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(`{"id":"` + strconv.Itoa(i) + `"}`), Timestamp: int64(i)}
	}
	t.Run("durable without flush", func(t *testing.T) {
		s := snkNewSink(t, SinkConfig{Client: cc, Topic: "a", KeyField: []string{"id"}})
		var logs []*snkAckLog
		var acks []*engine.Ack
		for _, n := range []int{1, 100, 0, 513} {
			log := &snkAckLog{}
			ack := snkNewAck(t, log)
			recs := make([]record.Record, n)
			for i := range recs {
				recs[i] = rec(i)
			}
			if _, err := s.Write(recs, nil, ack); err != nil {
				t.Fatal(err)
			}
			if want := int64(1 + min(n, 1)); snkAckCount(t, ack) > want {
				t.Fatalf("%d records: count %d after Write, want at most %d", n, snkAckCount(t, ack), want)
			}
			ack.Done(nil) // the engine's hold
			logs, acks = append(logs, log), append(acks, ack)
		}
		for i, log := range logs {
			weirtest.PollUntil(t, 15*time.Second, "ack "+strconv.Itoa(i), func() bool { c, _ := log.get(); return c > 0 })
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for i, log := range logs {
			if calls, errs := log.get(); calls != 1 || len(errs) > 0 || snkAckCount(t, acks[i]) != 0 {
				t.Errorf("ack %d: %d completions, errors %v, count %d; want 1, none, 0", i, calls, errs, snkAckCount(t, acks[i]))
			}
		}
	})
	t.Run("all dead registers nothing", func(t *testing.T) {
		s := snkNewSink(t, SinkConfig{Client: cc, Topic: "a", KeyField: []string{"id"}})
		log := &snkAckLog{}
		ack := snkNewAck(t, log)
		dead, err := s.Write([]record.Record{{Value: []byte(`{}`)}, {Value: []byte(`[`)}}, nil, ack)
		if err != nil || len(dead) != 2 || snkAckCount(t, ack) != 1 {
			t.Fatalf("Write: %d dead, err %v, count %d; want 2, nil, 1", len(dead), err, snkAckCount(t, ack))
		}
	})
	t.Run("close finishes everything", func(t *testing.T) {
		// A long linger keeps the records buffered until Close flushes.
		s := snkNewSink(t, SinkConfig{Client: cc, Topic: "a", Linger: time.Minute})
		var logs []*snkAckLog
		for b := range 20 {
			log := &snkAckLog{}
			ack := snkNewAck(t, log)
			recs := make([]record.Record, 50)
			for i := range recs {
				recs[i] = rec(b*50 + i)
			}
			if _, err := s.Write(recs, nil, ack); err != nil {
				t.Fatal(err)
			}
			ack.Done(nil)
			logs = append(logs, log)
		}
		start := time.Now()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Close took %v despite flushing", d)
		}
		for i, log := range logs {
			if calls, errs := log.get(); calls != 1 || len(errs) > 0 {
				t.Errorf("ack %d: %d completions, errors %v after Close", i, calls, errs)
			}
		}
		if _, err := s.Write([]record.Record{rec(0)}, nil, snkNewAck(t, &snkAckLog{})); err == nil {
			t.Error("Write after Close succeeded")
		}
	})
}

// TestSinkDeliveryFailure produces to a topic that does not exist, on a
// cluster that does not create topics: franz-go gives up and the error
// reaches the batch's Ack, once, naming the sink and the topic.
func TestSinkDeliveryFailure(t *testing.T) {
	cc := snkCluster(t, map[string]int32{"a": 1})
	s := snkNewSink(t, SinkConfig{Client: cc, Topic: "missing", DeliveryTimeout: time.Second})
	log := &snkAckLog{}
	ack := snkNewAck(t, log)
	recs := []record.Record{{Value: []byte("1")}, {Value: []byte("2")}, {Value: []byte("3")}}
	if _, err := s.Write(recs, nil, ack); err != nil {
		t.Fatal(err)
	}
	ack.Done(nil)
	start := time.Now()
	weirtest.PollUntil(t, 15*time.Second, "the delivery error", func() bool { c, _ := log.get(); return c > 0 })
	t.Logf("failed after %v", time.Since(start).Round(time.Millisecond))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	calls, errs := log.get()
	if calls != 1 || len(errs) != 1 {
		t.Fatalf("%d completions with %d errors, want one error", calls, len(errs))
	}
	if msg := errs[0].Error(); !strings.HasPrefix(msg, `sink "out": producing to topic "missing": `) {
		t.Fatalf("error %q does not name the sink and topic", msg)
	}
	t.Log(errs[0])
	if snkAckCount(t, ack) != 1 {
		t.Fatalf("count %d: a failed batch must never complete", snkAckCount(t, ack))
	}
}

func TestNewSinkErrors(t *testing.T) {
	cc := ClientConfig{Brokers: []string{"127.0.0.1:1"}}
	tests := []struct {
		name string
		cfg  SinkConfig
		want string
	}{
		{"no name", SinkConfig{Client: cc, Topic: "a"}, "kafka sink: no name"},
		{"no topic", SinkConfig{Name: "o", Client: cc}, `sink "o": set exactly one of a topic and a topic field`},
		{"both topics", SinkConfig{Name: "o", Client: cc, Topic: "a", TopicField: []string{"t"}}, `sink "o": set exactly one of a topic and a topic field`},
		{"bad topic", SinkConfig{Name: "o", Client: cc, Topic: "a/b"}, `sink "o": topic "a/b" is not a valid topic name`},
		{"empty path part", SinkConfig{Name: "o", Client: cc, Topic: "a", KeyField: []string{"a", ""}}, `sink "o": field path "a." has an empty part`},
		{"bad compression", SinkConfig{Name: "o", Client: cc, Topic: "a", Compression: "brotli"}, `sink "o": unknown compression "brotli"`},
		{"bad acks", SinkConfig{Name: "o", Client: cc, Topic: "a", Acks: "most"}, `sink "o": unknown acks "most"`},
		{"negative timeout", SinkConfig{Name: "o", Client: cc, Topic: "a", DeliveryTimeout: -1}, `sink "o": negative delivery timeout`},
		{"negative linger", SinkConfig{Name: "o", Client: cc, Topic: "a", Linger: -1}, `sink "o": negative linger`},
		{"negative batch bytes", SinkConfig{Name: "o", Client: cc, Topic: "a", BatchMaxBytes: -1}, `sink "o": negative batch max bytes`},
		{"no brokers", SinkConfig{Name: "o", Topic: "a"}, `sink "o": kafka: no brokers`},
		{"batch too small", SinkConfig{Name: "o", Client: cc, Topic: "a", BatchMaxBytes: 10}, `sink "o": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSink(tt.cfg)
			if err == nil {
				s.Close()
				t.Fatal("NewSink succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

// snkSource is an engine source that emits recs and records which
// positions the engine acknowledges.
type snkSource struct {
	recs  []record.Record
	mu    sync.Mutex
	acks  int
	acked map[int32]int64
}

func (s *snkSource) Name() string { return "in" }
func (s *snkSource) Run(_ context.Context, out *engine.Out) error {
	for _, r := range s.recs {
		if err := out.Add(r); err != nil {
			return err
		}
	}
	return out.Flush()
}
func (s *snkSource) Ack(ps []engine.Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acks++
	for _, p := range ps {
		s.acked[p.Partition] = max(s.acked[p.Partition], p.Offset)
	}
}

// TestSinkInPipeline runs the sink and the dead-letter output under the
// engine: every batch is acknowledged once, after its records and dead
// letters are in Kafka.
func TestSinkInPipeline(t *testing.T) {
	const n, batch = 1000, 64
	cc := snkCluster(t, map[string]int32{"out": 3, "dlq": 1})
	src := &snkSource{acked: map[int32]int64{}}
	for i := range n {
		v := fmt.Sprintf(`{"user":"u%d","i":%d}`, i%17, i)
		if i%100 == 7 {
			v = `{"i":` + strconv.Itoa(i) + `}` // no user: a dead letter
		}
		src.recs = append(src.recs, record.Record{Value: []byte(v), Timestamp: int64(i),
			Origin: record.Origin{Topic: "in", Partition: int32(i % 4), Offset: int64(i / 4)}})
	}
	sink := snkNewSink(t, SinkConfig{Name: "to-kafka", Client: cc, Topic: "out", KeyField: []string{"user"}})
	dlq, err := NewDeadLetterSink(DeadLetterConfig{Client: cc, Topic: "dlq", Logger: snkQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	p := &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, DeadLetter: dlq, BatchSize: batch}
	sum, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sinks[0].Out != n-10 || sum.Sinks[0].Dead != 10 || sum.DeadLetter != 10 {
		t.Fatalf("summary %+v", sum)
	}
	if want := (n + batch - 1) / batch; src.acks != want {
		t.Errorf("%d batches acknowledged, want %d", src.acks, want)
	}
	for part := range int32(4) {
		if want := int64((n - 4 + int(part)) / 4); src.acked[part] != want {
			t.Errorf("partition %d acknowledged to %d, want %d", part, src.acked[part], want)
		}
	}
	for _, r := range snkConsume(t, cc, "out", n-10) {
		if want := snkJavaPartition(r.Key, 3); r.Partition != want {
			t.Errorf("key %s in partition %d, want %d", r.Key, r.Partition, want)
		}
	}
	for _, r := range snkConsume(t, cc, "dlq", 10) {
		h := snkHeaders(r.Headers)
		if !slices.Contains(h, "weir.stage=to-kafka") || !slices.Contains(h, "weir.source.topic=in") ||
			!slices.Contains(h, `weir.error=sink "to-kafka": key field user: field not found`) {
			t.Errorf("dead letter headers %q", h)
		}
	}
}

// TestSinkPipelineFailure checks that a delivery failure stops the pipeline
// with the sink's error and that nothing is acknowledged to the source.
func TestSinkPipelineFailure(t *testing.T) {
	cc := snkCluster(t, map[string]int32{"dlq": 1})
	src := &snkSource{acked: map[int32]int64{}}
	for i := range 100 {
		src.recs = append(src.recs, record.Record{Value: []byte(`{}`), Origin: record.Origin{Topic: "in", Partition: 0, Offset: int64(i)}})
	}
	sink := snkNewSink(t, SinkConfig{Name: "to-kafka", Client: cc, Topic: "nope", DeliveryTimeout: time.Second})
	p := &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: 10}
	_, err := p.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `sink "to-kafka": producing to topic "nope": `) {
		t.Fatalf("Run = %v", err)
	}
	if src.acks != 0 {
		t.Fatalf("%d batches acknowledged after a failed delivery", src.acks)
	}
}

// BenchmarkSinkWrite measures producing into kfake (with BlackholeProduce,
// so the broker does not keep the records). One op is one record, written
// in batches of 512 as the engine does, with at most 8 batches in flight:
// a batch's input is reused only after its Ack completed, as the engine's
// bounded batch pool does. allocs/record counts every allocation of the
// process while it runs, the in-process kfake broker's included.
func BenchmarkSinkWrite(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  SinkConfig
	}{
		{"static-topic", SinkConfig{Topic: "bench"}},
		{"key-and-topic-fields", SinkConfig{TopicField: []string{"topic"}, KeyField: []string{"user"}}},
		{"static-topic-linger-10ms", SinkConfig{Topic: "bench", Linger: 10 * time.Millisecond}},
		{"static-topic-zstd", SinkConfig{Topic: "bench", Compression: CompressionZstd}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cc := snkCluster(b, map[string]int32{"bench": 8}, kfake.BlackholeProduce())
			bc.cfg.Client = cc
			s := snkNewSink(b, bc.cfg)
			const batch, slots = 512, 8
			type slot struct {
				recs []record.Record
				ack  *engine.Ack
				done chan error
			}
			var in [slots]slot
			for j := range in {
				sl := &in[j]
				sl.recs = make([]record.Record, batch)
				for i := range sl.recs {
					v := fmt.Sprintf(`{"topic":"bench","user":"user-%d","temp":21.5,"seq":%d}`, (j*batch+i)%1000, i)
					sl.recs[i] = record.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v), Timestamp: 1_700_000_000_000,
						Headers: []record.Header{{Key: "h", Value: []byte("v")}}}
				}
				sl.done = make(chan error, 1)
				sl.done <- nil // free
			}
			var dead []record.DeadLetter
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for written, j := 0, 0; written < b.N; j++ {
				sl := &in[j%slots]
				if err := <-sl.done; err != nil {
					b.Fatal(err)
				}
				n := min(batch, b.N-written)
				sl.ack = engine.NewAck(func(err error) { sl.done <- err }) // the engine's hold, as for a batch
				var err error
				if dead, err = s.Write(sl.recs[:n], dead[:0], sl.ack); err != nil || len(dead) > 0 {
					b.Fatal(err, dead)
				}
				sl.ack.Done(nil)
				written += n
			}
			for j := range in {
				if err := <-in[j].done; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			elapsed := time.Since(start)
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N), "allocs/record")
		})
	}
}
