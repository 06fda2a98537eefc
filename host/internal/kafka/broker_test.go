package kafka

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// brkPartitions returns each topic's partition count; missing topics are
// absent.
func brkPartitions(tb testing.TB, cc ClientConfig, topics ...string) map[string]int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := srcClient(tb, cc)
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err != nil {
		tb.Fatal(err)
	}
	got := map[string]int{}
	for name, d := range details {
		if d.Err == nil {
			got[name] = len(d.Partitions)
		}
	}
	return got
}

// brkReadAll reads every record of topic from the start, directly.
func brkReadAll(tb testing.TB, cc ClientConfig, topic string, n int) []string {
	tb.Helper()
	cl := srcClient(tb, cc, kgo.ConsumeTopics(topic))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			tb.Fatalf("read %d of %d records of %s: %v", len(got), n, topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func TestBrokerRoundTrip(t *testing.T) {
	t.Parallel()
	b, cc := srcBroker(t, map[string]int32{"a": 3})
	if addrs := b.Addrs(); len(addrs) != 1 || !strings.HasPrefix(addrs[0], "127.0.0.1:") {
		t.Errorf("Addrs() = %v, want one loopback address", addrs)
	}
	ctx := context.Background()
	for range 2 { // idempotent
		if err := b.CreateTopic(ctx, "b", 2); err != nil {
			t.Fatalf("CreateTopic: %v", err)
		}
	}
	if err := b.CreateTopic(ctx, "a", 5); err != nil {
		t.Fatalf("CreateTopic of an existing topic: %v", err)
	}
	if got, want := brkPartitions(t, cc, "a", "b", "missing"), map[string]int{"a": 3, "b": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("partitions %v, want %v", got, want)
	}

	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "b", Value: []byte(strconv.Itoa(i))})
	}
	srcProduce(t, cc, recs...)
	got := brkReadAll(t, cc, "b", 10)
	seen := map[string]bool{}
	for _, v := range got {
		seen[v] = true
	}
	if len(got) != 10 || len(seen) != 10 {
		t.Errorf("read back %q, want 0 to 9 once each", got)
	}

	// Topics are not created by producing to them.
	cl := srcClient(t, cc, kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(0))
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "auto", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("producing to a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

func TestBrokerErrors(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		cfg  BrokerConfig
		want string
	}{
		{"listen without port", BrokerConfig{Listen: "localhost"}, "missing port"},
		{"listen on a busy port", BrokerConfig{Listen: busy.Addr().String()}, "address already in use"},
		{"bad topic name", BrokerConfig{Topics: map[string]int32{"a b": 1}}, `topic name "a b": ' ' is not allowed`},
		{"no partitions", BrokerConfig{Topics: map[string]int32{"a": 0}}, "partitions must be between 1 and 10000, not 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Logger = srcQuiet()
			b, err := StartBroker(tc.cfg)
			if err == nil {
				b.Close()
				t.Fatalf("StartBroker succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}

	b, _ := srcBroker(t, nil)
	for _, tc := range []struct {
		topic      string
		partitions int32
		want       string
	}{
		{"", 1, "empty topic name"},
		{"..", 1, `topic name ".." is not allowed`},
		{strings.Repeat("x", 250), 1, "longer than 249"},
		{"ok", -1, "partitions must be between"},
	} {
		if err := b.CreateTopic(context.Background(), tc.topic, tc.partitions); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CreateTopic(%.10q, %d): %v, want an error containing %q", tc.topic, tc.partitions, err, tc.want)
		}
	}
}

func TestBrokerListen(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b, err := StartBroker(BrokerConfig{Listen: addr, Topics: map[string]int32{"t": 1}, Logger: srcQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.Addrs(); len(got) != 1 || got[0] != addr {
		t.Errorf("Addrs() = %v, want [%s]", got, addr)
	}
	cc := ClientConfig{Brokers: []string{addr}}
	srcProduce(t, cc, &kgo.Record{Topic: "t", Value: []byte("hello")})
	if got := brkReadAll(t, cc, "t", 1); got[0] != "hello" {
		t.Errorf("read %q", got)
	}
	b.Close()
	b.Close() // idempotent
}

func TestBrokerDataDirPersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := StartBroker(BrokerConfig{DataDir: dir, Topics: map[string]int32{"t": 2}, Logger: srcQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	cc := ClientConfig{Brokers: b.Addrs()}
	if err := b.CreateTopic(context.Background(), "extra", 1); err != nil {
		t.Fatal(err)
	}
	var want []string
	var recs []*kgo.Record
	for i := range 20 {
		v := `{"n":` + strconv.Itoa(i) + `}`
		want = append(want, v)
		recs = append(recs, &kgo.Record{Topic: "t", Key: []byte(strconv.Itoa(i)), Value: []byte(v)})
	}
	srcProduce(t, cc, recs...)
	// Commit a group offset too.
	src := srcNewSource(t, cc, "g", "t", nil)
	sink := &srcSink{}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}})
	weirtest.PollUntil(t, 20*time.Second, "the records", func() bool { return sink.count.Load() >= 20 })
	if _, err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	b.Close()

	var logs weirtest.SyncBuffer
	b2, err := StartBroker(BrokerConfig{
		DataDir: dir,
		Topics:  map[string]int32{"t": 4, "new": 3},
		Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("restarting: %v", err)
	}
	defer b2.Close()
	cc2 := ClientConfig{Brokers: b2.Addrs()}
	if got, want := brkPartitions(t, cc2, "t", "extra", "new"), map[string]int{"t": 2, "extra": 1, "new": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("partitions after restart %v, want %v", got, want)
	}
	if !strings.Contains(logs.String(), "different partition count") {
		t.Errorf("no warning about t's partition count:\n%s", logs.String())
	}
	got := brkReadAll(t, cc2, "t", 20)
	seen := map[string]bool{}
	for _, v := range got {
		seen[v] = true
	}
	for _, v := range want {
		if !seen[v] {
			t.Errorf("record %s lost across the restart", v)
		}
	}
	committed, ends := srcOffsets(t, cc2, "g", "t")
	if len(committed) == 0 || !reflect.DeepEqual(committed, ends) {
		t.Errorf("committed offsets after restart %v, want the end offsets %v", committed, ends)
	}
}

func TestParseTopics(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]int32
		err  string
	}{
		{name: "empty", in: "", want: map[string]int32{}},
		{name: "one, default partitions", in: "orders", want: map[string]int32{"orders": 1}},
		{name: "several", in: "orders:3,payments, audit.log-v2:12", want: map[string]int32{"orders": 3, "payments": 1, "audit.log-v2": 12}},
		{name: "spaces", in: " a : 2 , b ", want: map[string]int32{"a": 2, "b": 1}},
		{name: "empty item", in: "a,,b", err: "item 2 is empty"},
		{name: "trailing comma", in: "a,", err: "item 2 is empty"},
		{name: "no name", in: ":3", err: "empty topic name"},
		{name: "zero partitions", in: "a:0", err: "partition count must be a whole number from 1 to 10000"},
		{name: "not a number", in: "a:x", err: `"a:x": the partition count`},
		{name: "empty count", in: "a:", err: "the partition count"},
		{name: "too many", in: "a:10001", err: "from 1 to 10000"},
		{name: "bad name", in: "a/b:2", err: `'/' is not allowed`},
		{name: "duplicate", in: "a:1,a:2", err: `topic "a" is listed twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTopics(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseTopics(%q) error %v, want one containing %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseTopics(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
