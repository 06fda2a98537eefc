package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// srcQuiet is a logger that drops everything: background goroutines of
// clients may log after a test ends, when t.Log would panic.
func srcQuiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// srcBroker starts an in-memory embedded broker with topics, closed when the
// test ends, and returns it with a client configuration for it.
func srcBroker(tb testing.TB, topics map[string]int32) (*Broker, ClientConfig) {
	tb.Helper()
	b, err := StartBroker(BrokerConfig{Topics: topics, Logger: srcQuiet()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	return b, ClientConfig{Brokers: b.Addrs(), ClientID: "weir-test"}
}

// srcClient returns a plain client; the caller closes it (before the broker
// goes away, or closing waits for it).
func srcClient(tb testing.TB, cc ClientConfig, opts ...kgo.Opt) *kgo.Client {
	tb.Helper()
	base, err := cc.Opts()
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

// srcProduce produces recs and waits for all of them; their partitions and
// offsets are filled in.
func srcProduce(tb testing.TB, cc ClientConfig, recs ...*kgo.Record) []*kgo.Record {
	tb.Helper()
	cl := srcClient(tb, cc)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tb.Fatalf("producing: %v", err)
	}
	return recs
}

// srcJSONRecords makes n keyed JSON records for topic, numbered from first.
func srcJSONRecords(topic string, first, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		id := first + i
		recs[i] = &kgo.Record{
			Topic:     topic,
			Key:       []byte("k" + strconv.Itoa(id%37)),
			Value:     []byte(`{"i":` + strconv.Itoa(id) + `}`),
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(id)),
			Headers:   []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(id))}},
		}
	}
	return recs
}

// srcOffsets returns the group's committed offsets of topic, and the
// topic's end offsets.
func srcOffsets(tb testing.TB, cc ClientConfig, group, topic string) (committed, ends map[int32]int64) {
	tb.Helper()
	cl := srcClient(tb, cc)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet
	}
	if err != nil {
		tb.Fatalf("fetching offsets: %v", err)
	}
	committed = make(map[int32]int64)
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			committed[o.Partition] = o.At
		}
	})
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		tb.Fatalf("listing end offsets: %v", err)
	}
	ends = make(map[int32]int64)
	listed.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			ends[o.Partition] = o.Offset
		}
	})
	return committed, ends
}

// srcSink is a test sink that keeps copies of the records it is given.
// It acknowledges batches synchronously (on flush), or with async set on
// goroutines after random delays, so out of order; with hold set it never
// acknowledges (a sink whose writes never became durable); with delay it
// sleeps in every Write (a slow sink).
type srcSink struct {
	async bool
	delay time.Duration
	hold  atomic.Bool
	keep  bool // keep copies of the records; off to measure memory

	mu     sync.Mutex
	recs   []record.Record
	count  atomic.Int64
	writes atomic.Int64
	held   []*engine.Ack
	wg     sync.WaitGroup
}

func (s *srcSink) Name() string { return "collect" }

func (s *srcSink) Write(recs []record.Record, dead []record.DeadLetter, ack *engine.Ack) ([]record.DeadLetter, error) {
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	if s.keep {
		s.mu.Lock()
		for _, r := range recs {
			c := r
			c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			c.Headers = slices.Clone(r.Headers)
			for i := range c.Headers {
				c.Headers[i].Value = bytes.Clone(c.Headers[i].Value)
			}
			s.recs = append(s.recs, c)
		}
		s.mu.Unlock()
	}
	switch {
	case s.hold.Load():
		ack.Add(1)
		s.mu.Lock()
		s.held = append(s.held, ack)
		s.mu.Unlock()
	case s.async:
		ack.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			ack.Done(nil)
		}()
	}
	s.count.Add(int64(len(recs)))
	s.writes.Add(1)
	return dead, nil
}

func (s *srcSink) Flush() error { return nil }

// Close waits for the acknowledgements in flight, but not for held ones.
func (s *srcSink) Close() error {
	s.wg.Wait()
	return nil
}

// release acknowledges the held batches.
func (s *srcSink) release() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, a := range held {
		a.Done(nil)
	}
}

func (s *srcSink) records() []record.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// srcRun is a pipeline running in the background.
type srcRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	sum    engine.Summary
	err    error
}

// srcStart runs p until stop is called (or the test ends).
// TestSourceRepartitionStartsAtTheBeginning starts a new group at the
// input's end (start: latest): the repartition topic it also reads is
// still read from its first record, which an upstream instance may have
// written before this one joined.
func TestSourceRepartitionStartsAtTheBeginning(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 1, "rp": 2})
	srcProduce(t, cc, srcJSONRecords("events", 0, 5)...)
	srcProduce(t, cc, srcJSONRecords("rp", 100, 6)...)
	src := srcNewSource(t, cc, "g-rp", "events", func(c *SourceConfig) { c.Start, c.Repartition = StartLatest, "rp" })
	sink := &srcSink{keep: true}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
	weirtest.PollUntil(t, 20*time.Second, "the repartition topic's records", func() bool { return sink.count.Load() >= 6 })
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range sink.records() {
		if id := srcValueID(t, r.Value); r.Origin.Topic != "rp" || id < 100 {
			t.Errorf("read %s record %d; want only the repartition topic's, from the start", r.Origin.Topic, id)
		}
	}
}

// TestSourcePurgesRepartition checks that a checkpointed source deletes
// the repartition topic's records its checkpoints covered, as Kafka
// Streams purges its repartition topics, and keeps the input's.
func TestSourcePurgesRepartition(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 1, "rp": 2})
	srcProduce(t, cc, srcJSONRecords("events", 0, 4)...)
	srcProduce(t, cc, srcJSONRecords("rp", 100, 6)...)
	src := srcNewSource(t, cc, "g-purge", "events", func(c *SourceConfig) {
		c.Repartition, c.Checkpointed, c.RepartitionPurge = "rp", true, 10*time.Millisecond
	})
	sink := &srcSink{keep: true}
	ck := &engine.Checkpointing{Interval: 20 * time.Millisecond, Commit: func(context.Context, *engine.Checkpoint) error { return nil }}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, Checkpointing: ck})
	adm := kadm.NewClient(srcClient(t, cc))
	weirtest.PollUntil(t, 20*time.Second, "the repartition topic's read records deleted", func() bool {
		starts, err := adm.ListStartOffsets(context.Background(), "rp")
		if err != nil || sink.count.Load() < 10 {
			return false
		}
		ends, err := adm.ListEndOffsets(context.Background(), "rp")
		if err != nil {
			return false
		}
		deleted := true
		starts.Each(func(o kadm.ListedOffset) {
			end, _ := ends.Lookup("rp", o.Partition)
			deleted = deleted && o.Offset == end.Offset
		})
		return deleted
	})
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	starts, err := adm.ListStartOffsets(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("events", 0); o.Offset != 0 {
		t.Errorf("the input topic starts at %d now, want 0: only the repartition topic is purged", o.Offset)
	}
}

func srcStart(tb testing.TB, p *engine.Pipeline) *srcRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &srcRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.sum, r.err = p.Run(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// stop cancels the pipeline and waits for Run to return.
func (r *srcRun) stop(tb testing.TB) (engine.Summary, error) {
	tb.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		tb.Fatal("the pipeline did not stop")
	}
	return r.sum, r.err
}

// srcNewSource creates a source reading topic in group, committing every
// 100ms.
func srcNewSource(tb testing.TB, cc ClientConfig, group, topic string, edit func(*SourceConfig)) *Source {
	tb.Helper()
	cfg := SourceConfig{Name: "in", Client: cc, Topics: []string{topic}, Group: group, Logger: srcQuiet(), CommitInterval: 100 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	s, err := NewSource(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// srcWaitAll waits until the sinks together hold each of the records
// {"i":0} to {"i":total-1}.
func srcWaitAll(t *testing.T, total int, sinks ...*srcSink) {
	t.Helper()
	weirtest.PollUntil(t, 90*time.Second, "every record", func() bool {
		seen := map[int]bool{}
		for _, s := range sinks {
			for _, r := range s.records() {
				seen[srcValueID(t, r.Value)] = true
			}
		}
		return len(seen) == total
	})
}

// srcValueID returns the "i" of a {"i":n} value.
func srcValueID(tb testing.TB, v []byte) int {
	tb.Helper()
	var m struct{ I int }
	if err := json.Unmarshal(v, &m); err != nil {
		tb.Fatalf("value %q: %v", v, err)
	}
	return m.I
}

func TestSourceDeliversEachRecordOnceInOrder(t *testing.T) {
	tests := []struct {
		name      string
		async     bool
		batchSize int
	}{
		{name: "synchronous acks", batchSize: 64},
		{name: "asynchronous acks out of order", async: true, batchSize: 16},
		{name: "default batches", batchSize: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 3000
			_, cc := srcBroker(t, map[string]int32{"events": 3})
			produced := srcProduce(t, cc, srcJSONRecords("events", 0, n)...)
			src := srcNewSource(t, cc, "g", "events", nil)
			sink := &srcSink{async: tc.async, keep: true}
			run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: tc.batchSize})
			weirtest.PollUntil(t, 30*time.Second, "all records", func() bool { return sink.count.Load() >= n })
			sum, err := run.stop(t)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if sum.Sources[0].Out != n {
				t.Errorf("source read %d records, want %d", sum.Sources[0].Out, n)
			}

			got := sink.records()
			if len(got) != n {
				t.Fatalf("sink got %d records, want %d", len(got), n)
			}
			next := map[int32]int64{} // per partition, the offset expected next
			seen := make([]bool, n)
			for _, r := range got {
				id := srcValueID(t, r.Value)
				if seen[id] {
					t.Fatalf("record %d delivered twice", id)
				}
				seen[id] = true
				want := produced[id]
				o := r.Origin
				if o.Source != "in" || o.Topic != "events" || o.Partition != want.Partition || o.Offset != want.Offset {
					t.Fatalf("record %d: origin %+v, want in events[%d]@%d", id, o, want.Partition, want.Offset)
				}
				if o.Offset != next[o.Partition] {
					t.Fatalf("partition %d: offset %d after %d: out of order", o.Partition, o.Offset, next[o.Partition]-1)
				}
				next[o.Partition]++
				if string(r.Key) != string(want.Key) || r.Timestamp != want.Timestamp.UnixMilli() {
					t.Fatalf("record %d: key %q timestamp %d, want %q %d", id, r.Key, r.Timestamp, want.Key, want.Timestamp.UnixMilli())
				}
				if len(r.Headers) != 1 || r.Headers[0].Key != "n" || string(r.Headers[0].Value) != strconv.Itoa(id) {
					t.Fatalf("record %d: headers %+v", id, r.Headers)
				}
			}
			if len(next) != 3 {
				t.Errorf("records came from %d partitions, want 3", len(next))
			}

			committed, ends := srcOffsets(t, cc, "g", "events")
			if fmt.Sprint(committed) != fmt.Sprint(ends) {
				t.Errorf("committed offsets %v, want the end offsets %v", committed, ends)
			}
		})
	}
}

func TestSourceDeadLetters(t *testing.T) {
	tests := []struct {
		name      string
		format    Format
		wantRecs  []string
		wantDead  []string // reason prefixes, by offset
		batchSize int
	}{
		{
			name:     "json",
			format:   FormatJSON,
			wantRecs: []string{`{"a":1}`, ` [2] `, `"s"`},
			wantDead: []string{"bad[0]@1: not JSON: invalid character 'o' in literal null", "bad[0]@3: not JSON: the value is null (a tombstone)", "bad[0]@5: not JSON: unexpected end of JSON input"},
		},
		{
			name:      "json, one record per batch",
			format:    FormatJSON,
			batchSize: 1,
			wantRecs:  []string{`{"a":1}`, ` [2] `, `"s"`},
			wantDead:  []string{"bad[0]@1: not JSON:", "bad[0]@3: not JSON:", "bad[0]@5: not JSON:"},
		},
		{
			name:     "raw",
			format:   FormatRaw,
			wantRecs: []string{`{"a":1}`, `not json`, ` [2] `, ``, `"s"`, ``},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, cc := srcBroker(t, map[string]int32{"bad": 1})
			values := [][]byte{[]byte(`{"a":1}`), []byte("not json"), []byte(` [2] `), nil, []byte(`"s"`), {}}
			var recs []*kgo.Record
			for i, v := range values {
				recs = append(recs, &kgo.Record{Topic: "bad", Value: v, Key: []byte("key" + strconv.Itoa(i))})
			}
			srcProduce(t, cc, recs...)
			src := srcNewSource(t, cc, "g", "bad", func(c *SourceConfig) { c.Format = tc.format })
			sink := &srcSink{keep: true}
			var dlq bytes.Buffer
			run := srcStart(t, &engine.Pipeline{
				Sources:    []engine.Source{src},
				Sinks:      []engine.Sink{sink},
				DeadLetter: engine.NewDeadLetterWriter("buffer", &dlq, false),
				BatchSize:  tc.batchSize,
			})
			weirtest.PollUntil(t, 20*time.Second, "the records to be committed", func() bool {
				committed, _ := srcOffsets(t, cc, "g", "bad")
				return committed[0] == int64(len(values))
			})
			if _, err := run.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			var got []string
			for _, r := range sink.records() {
				got = append(got, string(r.Value))
			}
			if !slices.Equal(got, tc.wantRecs) {
				t.Errorf("records %q, want %q", got, tc.wantRecs)
			}
			var dead []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(dlq.String()), "\n") {
				if line == "" {
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("dead letter %q: %v", line, err)
				}
				dead = append(dead, m)
			}
			if len(dead) != len(tc.wantDead) {
				t.Fatalf("dead letters:\n%s\nwant %d", dlq.String(), len(tc.wantDead))
			}
			for i, d := range dead {
				reason, _ := d["reason"].(string)
				if !strings.HasPrefix(reason, tc.wantDead[i]) {
					t.Errorf("dead letter %d: reason %q, want prefix %q", i, reason, tc.wantDead[i])
				}
				wantOffset := []float64{1, 3, 5}[i]
				if d["stage"] != "in" || d["source"] != "in" || d["topic"] != "bad" || d["partition"] != 0.0 || d["offset"] != wantOffset {
					t.Errorf("dead letter %d: %v, want stage and source in, bad[0]@%v", i, d, wantOffset)
				}
				if d["key"] != "key"+strconv.Itoa(int(wantOffset)) {
					t.Errorf("dead letter %d: key %v", i, d["key"])
				}
			}
		})
	}
}

func TestSourceResumesFromCommittedOffsets(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 3})
	srcProduce(t, cc, srcJSONRecords("events", 0, 500)...)
	for round, want := range []struct{ first, n int }{{0, 500}, {500, 200}} {
		if round > 0 {
			srcProduce(t, cc, srcJSONRecords("events", want.first, want.n)...)
		}
		src := srcNewSource(t, cc, "g", "events", nil)
		sink := &srcSink{keep: true}
		run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: 50})
		weirtest.PollUntil(t, 20*time.Second, "the records", func() bool { return sink.count.Load() >= int64(want.n) })
		if _, err := run.stop(t); err != nil {
			t.Fatalf("round %d: Run: %v", round, err)
		}
		got := sink.records()
		if len(got) != want.n {
			t.Fatalf("round %d: got %d records, want %d", round, len(got), want.n)
		}
		for _, r := range got {
			if id := srcValueID(t, r.Value); id < want.first || id >= want.first+want.n {
				t.Fatalf("round %d: got record %d, want only %d to %d", round, id, want.first, want.first+want.n-1)
			}
		}
		committed, ends := srcOffsets(t, cc, "g", "events")
		if fmt.Sprint(committed) != fmt.Sprint(ends) {
			t.Errorf("round %d: committed %v, want the end offsets %v", round, committed, ends)
		}
	}
}

// TestSourceRedeliversUnacknowledged simulates a crash: the sink stops
// acknowledging (its writes never become durable) and the pipeline stops;
// what was not acknowledged must not be committed, and must be read again.
func TestSourceRedeliversUnacknowledged(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 3})
	srcProduce(t, cc, srcJSONRecords("events", 0, 300)...)
	src := srcNewSource(t, cc, "g", "events", nil)
	sink := &srcSink{keep: true}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: 32})
	weirtest.PollUntil(t, 20*time.Second, "the first records", func() bool { return sink.count.Load() >= 300 })
	weirtest.PollUntil(t, 20*time.Second, "the first commit", func() bool {
		committed, ends := srcOffsets(t, cc, "g", "events")
		return fmt.Sprint(committed) == fmt.Sprint(ends)
	})
	committedBefore, _ := srcOffsets(t, cc, "g", "events")

	sink.hold.Store(true)
	srcProduce(t, cc, srcJSONRecords("events", 300, 100)...)
	weirtest.PollUntil(t, 20*time.Second, "the held records", func() bool { return sink.count.Load() >= 400 })
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if committed, _ := srcOffsets(t, cc, "g", "events"); fmt.Sprint(committed) != fmt.Sprint(committedBefore) {
		t.Fatalf("committed %v after unacknowledged batches, want still %v", committed, committedBefore)
	}

	src2 := srcNewSource(t, cc, "g", "events", nil)
	sink2 := &srcSink{keep: true}
	run2 := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src2}, Sinks: []engine.Sink{sink2}})
	weirtest.PollUntil(t, 20*time.Second, "the redelivered records", func() bool { return sink2.count.Load() >= 100 })
	if _, err := run2.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var ids []int
	for _, r := range sink2.records() {
		ids = append(ids, srcValueID(t, r.Value))
	}
	slices.Sort(ids)
	if len(ids) != 100 || ids[0] != 300 || ids[99] != 399 {
		t.Fatalf("redelivered %d records %v..., want exactly 300 to 399", len(ids), ids[:min(len(ids), 5)])
	}
	committed, ends := srcOffsets(t, cc, "g", "events")
	if fmt.Sprint(committed) != fmt.Sprint(ends) {
		t.Errorf("committed %v, want the end offsets %v", committed, ends)
	}
}

// TestSourceRebalance runs two members of one group while records flow: the
// second one's arrival revokes partitions from the first. Every record must
// be processed (duplicates are allowed only for records in flight during the
// revocation), and in the end everything is committed.
func TestSourceRebalance(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 4})
	const total = 4000
	srcProduce(t, cc, srcJSONRecords("events", 0, 1000)...)

	sinkA := &srcSink{keep: true, async: true}
	srcA := srcNewSource(t, cc, "g", "events", nil)
	runA := srcStart(t, &engine.Pipeline{Sources: []engine.Source{srcA}, Sinks: []engine.Sink{sinkA}, BatchSize: 20})
	weirtest.PollUntil(t, 20*time.Second, "the first member to read", func() bool { return sinkA.count.Load() >= 1000 })

	sinkB := &srcSink{keep: true, async: true}
	srcB := srcNewSource(t, cc, "g", "events", nil)
	runB := srcStart(t, &engine.Pipeline{Sources: []engine.Source{srcB}, Sinks: []engine.Sink{sinkB}, BatchSize: 20})
	// Keep producing while the group rebalances.
	for first := 1000; first < total; first += 500 {
		srcProduce(t, cc, srcJSONRecords("events", first, 500)...)
		time.Sleep(200 * time.Millisecond)
	}
	// The waits are long for a loaded machine (the race pass runs beside
	// the others): the rebalance waits for the first member's revocation.
	weirtest.PollUntil(t, 90*time.Second, "the second member to get partitions", func() bool { return sinkB.count.Load() > 0 })
	srcWaitAll(t, total, sinkA, sinkB)
	for _, r := range []*srcRun{runB, runA} {
		if _, err := r.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	dups := sinkA.count.Load() + sinkB.count.Load() - total
	t.Logf("member A read %d, member B %d, duplicates %d", sinkA.count.Load(), sinkB.count.Load(), dups)
	committed, ends := srcOffsets(t, cc, "g", "events")
	if fmt.Sprint(committed) != fmt.Sprint(ends) {
		t.Errorf("committed %v, want the end offsets %v", committed, ends)
	}
}

// TestSourceRevokeTimeout revokes a partition whose batches the pipeline
// never completes: the revocation gives up after RevokeTimeout without
// committing them, the new owner reads them again, and the old owner's late
// acknowledgements are ignored.
func TestSourceRevokeTimeout(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 2})
	produced := srcProduce(t, cc, srcJSONRecords("events", 0, 200)...)
	perPartition := map[int32]int64{}
	for _, r := range produced {
		perPartition[r.Partition]++
	}

	var logs weirtest.SyncBuffer
	srcA := srcNewSource(t, cc, "g", "events", func(c *SourceConfig) {
		c.RevokeTimeout = 200 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	sinkA := &srcSink{keep: true}
	sinkA.hold.Store(true)
	runA := srcStart(t, &engine.Pipeline{Sources: []engine.Source{srcA}, Sinks: []engine.Sink{sinkA}})
	weirtest.PollUntil(t, 20*time.Second, "the first member to read everything", func() bool { return sinkA.count.Load() >= 200 })

	srcB := srcNewSource(t, cc, "g", "events", nil)
	sinkB := &srcSink{keep: true}
	runB := srcStart(t, &engine.Pipeline{Sources: []engine.Source{srcB}, Sinks: []engine.Sink{sinkB}})
	weirtest.PollUntil(t, 30*time.Second, "the second member to read a revoked partition again", func() bool {
		n := sinkB.count.Load()
		return n == perPartition[0] || n == perPartition[1]
	})
	if !strings.Contains(logs.String(), "partitions revoked with batches still in flight") {
		t.Errorf("no warning about the revoked in-flight batches:\n%s", logs.String())
	}
	moved := sinkB.records()[0].Origin.Partition
	for _, r := range sinkB.records() {
		if r.Origin.Partition != moved {
			t.Fatalf("the second member read partitions %d and %d", moved, r.Origin.Partition)
		}
	}

	sinkA.release() // late: the moved partition's acknowledgements must be ignored
	for _, r := range []*srcRun{runB, runA} {
		if _, err := r.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	committed, ends := srcOffsets(t, cc, "g", "events")
	if fmt.Sprint(committed) != fmt.Sprint(ends) {
		t.Errorf("committed %v, want the end offsets %v", committed, ends)
	}
}

func TestSourceStartPositions(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 2})
	old := srcJSONRecords("events", 0, 10)
	for i, r := range old {
		r.Timestamp = time.UnixMilli(1000 + int64(i)) // 1000..1009
	}
	srcProduce(t, cc, old...)

	tests := []struct {
		name string
		edit func(*SourceConfig)
		min  int // the lowest record id that may be read
	}{
		{name: "earliest", edit: func(c *SourceConfig) { c.Start = StartEarliest }, min: 0},
		{name: "committed", edit: func(c *SourceConfig) { c.Start = StartCommitted }, min: 0},
		{name: "timestamp", edit: func(c *SourceConfig) { c.Start, c.StartTimestamp = StartTimestamp, 1005 }, min: 5},
		{name: "latest", edit: func(c *SourceConfig) { c.Start = StartLatest }, min: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := srcNewSource(t, cc, "g-"+tc.name, "events", tc.edit)
			sink := &srcSink{keep: true}
			run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
			if tc.min < 10 {
				weirtest.PollUntil(t, 20*time.Second, "the old records", func() bool { return sink.count.Load() >= int64(10-tc.min) })
			} else {
				// The end is resolved once the member is assigned; new
				// records arrive from then on.
				next := 10
				weirtest.PollUntil(t, 20*time.Second, "a new record", func() bool {
					srcProduce(t, cc, srcJSONRecords("events", next, 1)...)
					next++
					time.Sleep(20 * time.Millisecond)
					return sink.count.Load() > 0
				})
			}
			if _, err := run.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			ids := map[int]bool{}
			for _, r := range sink.records() {
				id := srcValueID(t, r.Value)
				if id < tc.min {
					t.Errorf("read record %d, want none before %d", id, tc.min)
				}
				ids[id] = true
			}
			for id := tc.min; id < 10; id++ {
				if !ids[id] {
					t.Errorf("record %d not read", id)
				}
			}
		})
	}
}

func TestSourceWaitsForMissingTopic(t *testing.T) {
	t.Parallel()
	b, cc := srcBroker(t, nil)
	var logs weirtest.SyncBuffer
	src := srcNewSource(t, cc, "g", "later", func(c *SourceConfig) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	sink := &srcSink{keep: true}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
	weirtest.PollUntil(t, 10*time.Second, "the missing topic warning", func() bool {
		return strings.Contains(logs.String(), "topic does not exist; waiting for it to be created")
	})
	if err := b.CreateTopic(context.Background(), "later", 2); err != nil {
		t.Fatal(err)
	}
	srcProduce(t, cc, srcJSONRecords("later", 0, 20)...)
	weirtest.PollUntil(t, 30*time.Second, "records of the new topic", func() bool { return sink.count.Load() >= 20 })
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := strings.Count(logs.String(), "topic does not exist"); n != 1 {
		t.Errorf("the missing topic was logged %d times, want once:\n%s", n, logs.String())
	}
}

func TestSourceTopicRegex(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"orders-eu": 1, "orders-us": 2, "payments": 1})
	srcProduce(t, cc, srcJSONRecords("orders-eu", 0, 10)...)
	srcProduce(t, cc, srcJSONRecords("orders-us", 10, 10)...)
	srcProduce(t, cc, srcJSONRecords("payments", 100, 10)...)
	src := srcNewSource(t, cc, "g", "", func(c *SourceConfig) { c.Topics, c.TopicRegex = nil, "^orders-" })
	sink := &srcSink{keep: true}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
	weirtest.PollUntil(t, 20*time.Second, "the orders", func() bool { return sink.count.Load() >= 20 })
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range sink.records() {
		if !strings.HasPrefix(r.Origin.Topic, "orders-") {
			t.Errorf("read %s from %s", r.Value, r.Origin.Topic)
		}
	}
	if n := len(sink.records()); n != 20 {
		t.Errorf("read %d records, want 20", n)
	}
}

// TestSourceBackpressure feeds a slow sink from a topic filled faster than
// it drains and checks that the heap stays bounded: the source must stop
// fetching while the pipeline is full.
func TestSourceBackpressure(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 100k records")
	}
	const (
		n         = 100_000
		valueSize = 2048
	)
	b, err := StartBroker(BrokerConfig{Topics: map[string]int32{"big": 3}, DataDir: t.TempDir(), Logger: srcQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cc := ClientConfig{Brokers: b.Addrs()}

	// Produce on the side, as fast as the broker takes it.
	prodErr := make(chan error, 1)
	go func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(cc.Brokers...), kgo.MaxBufferedBytes(8<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			prodErr <- err
			return
		}
		defer cl.Close()
		filler := strings.Repeat("x", valueSize-40)
		var failed atomic.Value
		for i := range n {
			v := []byte(`{"i":` + strconv.Itoa(i) + `,"pad":"` + filler + `"}`)
			cl.Produce(context.Background(), &kgo.Record{Topic: "big", Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Store(err)
				}
			})
		}
		err = cl.Flush(context.Background())
		if e, ok := failed.Load().(error); ok {
			err = e
		}
		prodErr <- err
	}()

	src := srcNewSource(t, cc, "g", "big", nil)
	sink := &srcSink{delay: 4 * time.Millisecond}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: 256})

	var (
		peak     uint64
		ms       runtime.MemStats
		produced = int64(-1) // records through the sink when the producer finished
		perr     error
	)
	deadline := time.Now().Add(60 * time.Second)
	for sink.count.Load() < n {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		if produced < 0 {
			select {
			case perr = <-prodErr:
				produced = sink.count.Load()
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d records after a minute", sink.count.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if produced < 0 {
		perr = <-prodErr
		produced = n
	}
	if perr != nil {
		t.Fatalf("producing: %v", perr)
	}
	t.Logf("%d records of %d bytes (%d MiB) through a slow sink, which had taken %d when the producer finished; peak heap in use %d MiB (%d writes)",
		n, valueSize, n*valueSize>>20, produced, peak>>20, sink.writes.Load())
	// Everything buffered would take more than the data's 195 MiB.
	if limit := uint64(150 << 20); peak > limit {
		t.Errorf("peak heap in use %d MiB, want under %d MiB", peak>>20, limit>>20)
	}
}

func TestNewSourceErrors(t *testing.T) {
	cc := ClientConfig{Brokers: []string{"127.0.0.1:1"}}
	tests := []struct {
		name string
		cfg  SourceConfig
		want string
	}{
		{"no name", SourceConfig{Client: cc, Topics: []string{"t"}, Group: "g"}, "no name"},
		{"no group", SourceConfig{Name: "in", Client: cc, Topics: []string{"t"}}, "no consumer group"},
		{"no topics", SourceConfig{Name: "in", Client: cc, Group: "g"}, "no topics and no topic regex"},
		{"empty topic", SourceConfig{Name: "in", Client: cc, Topics: []string{""}, Group: "g"}, "no topics and no topic regex"},
		{"both", SourceConfig{Name: "in", Client: cc, Topics: []string{"t"}, TopicRegex: "t", Group: "g"}, "both topics and a topic regex"},
		{"bad regex", SourceConfig{Name: "in", Client: cc, TopicRegex: "(", Group: "g"}, "topic regex: error parsing regexp"},
		{"bad start", SourceConfig{Name: "in", Client: cc, Topics: []string{"t"}, Group: "g", Start: 9}, "unknown start position 9"},
		{"negative timestamp", SourceConfig{Name: "in", Client: cc, Topics: []string{"t"}, Group: "g", Start: StartTimestamp, StartTimestamp: -1}, "negative start timestamp"},
		{"bad format", SourceConfig{Name: "in", Client: cc, Topics: []string{"t"}, Group: "g", Format: 7}, "unknown format 7"},
		{"negative interval", SourceConfig{Name: "in", Client: cc, Topics: []string{"t"}, Group: "g", CommitInterval: -1}, "negative"},
		{"no brokers", SourceConfig{Name: "in", Topics: []string{"t"}, Group: "g"}, "no brokers"},
		{"bad sasl", SourceConfig{Name: "in", Client: ClientConfig{Brokers: cc.Brokers, SASL: SASLConfig{Mechanism: "GSSAPI"}}, Topics: []string{"t"}, Group: "g"}, "unknown SASL mechanism"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSource(tc.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("NewSource succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseStartPosition(t *testing.T) {
	tests := []struct {
		in     string
		want   StartPosition
		wantTS int64
		err    bool
	}{
		{in: "", want: StartEarliest},
		{in: "earliest", want: StartEarliest},
		{in: "Latest", want: StartLatest},
		{in: "committed", want: StartCommitted},
		{in: "1700000000000", want: StartTimestamp, wantTS: 1_700_000_000_000},
		{in: "2023-11-14T22:13:20Z", want: StartTimestamp, wantTS: 1_700_000_000_000},
		{in: "-5", err: true},
		{in: "yesterday", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ts, err := ParseStartPosition(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if !tc.err && (got != tc.want || ts != tc.wantTS) {
				t.Errorf("got %v %d, want %v %d", got, ts, tc.want, tc.wantTS)
			}
		})
	}
}

// TestSourceCommitBookkeeping drives the completed-prefix tracking directly:
// batches are registered as Run sends them and acknowledged in various
// orders, and across a revocation.
func TestSourceCommitBookkeeping(t *testing.T) {
	type step struct {
		op  string // "open": Run took a partition's first record; "send": Run sent a batch; "ack": the batch completed; "release": the partition was revoked
		pos []engine.Position
	}
	p := func(partition int32, offset int64) engine.Position {
		return engine.Position{Topic: "t", Partition: partition, Offset: offset}
	}
	send := func(ps ...engine.Position) step { return step{"send", ps} }
	ack := func(ps ...engine.Position) step { return step{"ack", ps} }
	release := func(ps ...engine.Position) step { return step{"release", ps} }
	open := func(ps ...engine.Position) step { return step{"open", ps} }
	tests := []struct {
		name  string
		steps []step
		want  map[int32]int64 // next offset to commit; -1 = nothing completed
	}{
		{"in order", []step{send(p(0, 9)), send(p(0, 19)), ack(p(0, 9)), ack(p(0, 19))}, map[int32]int64{0: 20}},
		{"later batch first waits", []step{send(p(0, 9)), send(p(0, 19)), ack(p(0, 19))}, map[int32]int64{0: -1}},
		{"later batch first then earlier", []step{send(p(0, 9)), send(p(0, 19)), send(p(0, 29)), ack(p(0, 29)), ack(p(0, 9))}, map[int32]int64{0: 10}},
		{"all out of order", []step{send(p(0, 9)), send(p(0, 19)), send(p(0, 29)), ack(p(0, 29)), ack(p(0, 19)), ack(p(0, 9))}, map[int32]int64{0: 30}},
		{"ack before send is recorded", []step{open(p(0, 0)), ack(p(0, 9)), send(p(0, 9))}, map[int32]int64{0: 10}},
		{"batches spanning partitions", []step{send(p(0, 9), p(1, 4)), send(p(0, 19)), send(p(1, 8)), ack(p(0, 19)), ack(p(1, 8)), ack(p(0, 9), p(1, 4))}, map[int32]int64{0: 20, 1: 9}},
		{"partitions are independent", []step{send(p(0, 9), p(1, 4)), send(p(1, 8)), ack(p(0, 9), p(1, 4))}, map[int32]int64{0: 10, 1: 5}},
		{
			"late ack of a revoked batch is not credited to the next session",
			[]step{send(p(0, 9)), release(p(0, 0)), send(p(0, 9)), ack(p(0, 9))},
			map[int32]int64{0: -1},
		},
		{
			"both acks of the same end after a revocation",
			[]step{send(p(0, 9)), release(p(0, 0)), send(p(0, 9)), ack(p(0, 9)), ack(p(0, 9))},
			map[int32]int64{0: 10},
		},
		{
			"completed batches are not owed",
			[]step{send(p(0, 9)), send(p(0, 19)), ack(p(0, 19)), release(p(0, 0)), send(p(0, 19)), ack(p(0, 19))},
			map[int32]int64{0: 20},
		},
		{"acks of a released partition are dropped", []step{send(p(0, 9)), ack(p(0, 9)), release(p(0, 0)), ack(p(0, 19))}, map[int32]int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Source{parts: make(map[srcTP]*srcPart)}
			for _, st := range tc.steps {
				switch st.op {
				case "open":
					for _, pos := range st.pos {
						s.session(srcTP{pos.Topic, pos.Partition})
					}
				case "send":
					var open []srcOpen
					for _, pos := range st.pos {
						tp := srcTP{pos.Topic, pos.Partition}
						open = append(open, srcOpen{tp: tp, p: s.session(tp), end: srcEnd{offset: pos.Offset}})
					}
					s.addInflight(open)
				case "ack":
					s.Ack(st.pos)
				case "release":
					m := map[string][]int32{}
					for _, pos := range st.pos {
						m[pos.Topic] = append(m[pos.Topic], pos.Partition)
					}
					s.release(m)
				}
			}
			got := map[int32]int64{}
			for tp, p := range s.parts {
				if p.owned {
					got[tp.partition] = p.commit.Offset
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("commit offsets %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSourceHurriesForRebalance: member A hands a large poll to a slow
// pipeline when B joins. The rebalance waits for A's poll
// (BlockRebalanceOnPoll), so A puts back what it has not handed out and
// lets it go on: B reads before A has handed out its first poll, and
// every record is read, the ones put back included, with the group's
// offsets at the ends.
func TestSourceHurriesForRebalance(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 2})
	const total, maxPoll = 4000, 2000
	srcProduce(t, cc, srcJSONRecords("events", 0, total)...)
	slow := func(c *SourceConfig) { c.MaxPollRecords = maxPoll }
	sinkA := &srcSink{keep: true, delay: 50 * time.Millisecond}
	srcA := srcNewSource(t, cc, "g", "events", slow)
	runA := srcStart(t, &engine.Pipeline{Sources: []engine.Source{srcA}, Sinks: []engine.Sink{sinkA}, BatchSize: 10})
	weirtest.PollUntil(t, 20*time.Second, "the first member to read", func() bool { return sinkA.count.Load() > 0 })

	sinkB := &srcSink{keep: true}
	srcB := srcNewSource(t, cc, "g", "events", slow)
	runB := srcStart(t, &engine.Pipeline{Sources: []engine.Source{srcB}, Sinks: []engine.Sink{sinkB}, BatchSize: 10})
	var aWhenB int64
	weirtest.PollUntil(t, 90*time.Second, "the second member to read", func() bool {
		aWhenB = sinkA.count.Load()
		return sinkB.count.Load() > 0
	})
	if aWhenB >= maxPoll {
		t.Errorf("the first member had handed out %d records when the second read: the rebalance waited for its whole poll of up to %d", aWhenB, maxPoll)
	}
	srcWaitAll(t, total, sinkA, sinkB)
	for _, r := range []*srcRun{runB, runA} {
		if _, err := r.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	t.Logf("the first member had handed out %d records when the second read; A read %d, B %d", aWhenB, sinkA.count.Load(), sinkB.count.Load())
	committed, ends := srcOffsets(t, cc, "g", "events")
	if fmt.Sprint(committed) != fmt.Sprint(ends) {
		t.Errorf("committed %v, want the end offsets %v", committed, ends)
	}
}
