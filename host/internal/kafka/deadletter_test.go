package kafka

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/record"
)

func TestDeadLetterHeaders(t *testing.T) {
	tests := []struct {
		name    string
		dl      record.DeadLetter
		headers []string // the produced record's headers, in order
	}{
		{
			name: "kafka origin, own headers kept first",
			dl: record.DeadLetter{
				Record: record.Record{Key: []byte("k"), Value: []byte(`{"a":1}`), Timestamp: 1_600_000_000_000,
					Headers: []record.Header{{Key: "trace", Value: []byte("t-1")}, {Key: "weir.error", Value: []byte("older")}},
					Origin:  record.Origin{Source: "orders", Topic: "orders-in", Partition: 3, Offset: 12345}},
				Stage:  "enrich",
				Reason: "plugin returned an error: bad input",
			},
			headers: []string{
				"trace=t-1", "weir.error=older",
				"weir.error=plugin returned an error: bad input", "weir.stage=enrich", "weir.source=orders",
				"weir.source.topic=orders-in", "weir.source.partition=3", "weir.source.offset=12345",
			},
		},
		{
			name: "file origin with line",
			dl: record.DeadLetter{
				Record: record.Record{Value: []byte(`{"x":`), Timestamp: 7,
					Origin: record.Origin{Source: "readings", Partition: -1, Offset: 0, Line: 41}},
				Stage:  "readings",
				Reason: "value is not JSON",
			},
			headers: []string{
				"weir.error=value is not JSON", "weir.stage=readings", "weir.source=readings",
				"weir.source.offset=0", "weir.source.line=41",
			},
		},
		{
			name: "partition 0 without topic, no key, tombstone",
			dl: record.DeadLetter{
				Record: record.Record{Key: nil, Value: nil, Timestamp: 9,
					Origin: record.Origin{Source: "gen", Partition: 0, Offset: 9_000_000_000}},
				Stage:  "out",
				Reason: "ünïcode reason",
			},
			headers: []string{
				"weir.error=ünïcode reason", "weir.stage=out", "weir.source=gen",
				"weir.source.partition=0", "weir.source.offset=9000000000",
			},
		},
	}
	cc := snkCluster(t, map[string]int32{"dlq": 1})
	d, err := NewDeadLetterSink(DeadLetterConfig{Client: cc, Topic: "dlq", Logger: snkQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	log := &snkAckLog{}
	ack := snkNewAck(t, log)
	for i := range tests {
		if err := d.Write(&tests[i].dl, ack); err != nil {
			t.Fatal(err)
		}
	}
	// The writes' Adds and Dones must balance: one completion, count 0.
	ack.Done(nil)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if calls, errs := log.get(); calls != 1 || len(errs) > 0 || snkAckCount(t, ack) != 0 {
		t.Fatalf("ack: %d completions, errors %v, count %d; want 1, none, 0", calls, errs, snkAckCount(t, ack))
	}
	got := snkConsume(t, cc, "dlq", len(tests))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, want := got[i], tt.dl.Record
			if h := snkHeaders(r.Headers); !slices.Equal(h, tt.headers) {
				t.Errorf("headers\n got %q\nwant %q", h, tt.headers)
			}
			if (r.Key == nil) != (want.Key == nil) || !bytes.Equal(r.Key, want.Key) {
				t.Errorf("key %q, want %q", r.Key, want.Key)
			}
			if (r.Value == nil) != (want.Value == nil) || !bytes.Equal(r.Value, want.Value) {
				t.Errorf("value %q, want %q", r.Value, want.Value)
			}
			if ms := r.Timestamp.UnixMilli(); ms != want.Timestamp {
				t.Errorf("timestamp %d, want %d", ms, want.Timestamp)
			}
		})
	}
	if err := d.Write(&tests[0].dl, snkNewAck(t, &snkAckLog{})); err == nil {
		t.Error("Write after Close succeeded")
	}
}

// TestDeadLetterFailure checks that a dead letter that cannot be produced
// fails its batch's Ack, naming the output.
func TestDeadLetterFailure(t *testing.T) {
	cc := snkCluster(t, map[string]int32{"a": 1})
	d, err := NewDeadLetterSink(DeadLetterConfig{Client: cc, Topic: "missing", Logger: snkQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	log := &snkAckLog{}
	ack := snkNewAck(t, log)
	dl := record.DeadLetter{Record: record.Record{Value: []byte("v"), Origin: record.Origin{Partition: -1}}, Stage: "s", Reason: "r"}
	if err := d.Write(&dl, ack); err != nil {
		t.Fatal(err)
	}
	ack.Done(nil)
	// The topic does not exist: franz-go gives up after a few metadata
	// refreshes (UnknownTopicRetries), well before the delivery timeout.
	start := time.Now()
	weirtest.PollUntil(t, 15*time.Second, "the produce error", func() bool { c, _ := log.get(); return c > 0 })
	t.Logf("failed after %v", time.Since(start).Round(time.Millisecond))
	calls, errs := log.get()
	if calls != 1 || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), `dead-letter output "missing": `) {
		t.Fatalf("%d completions, errors %v", calls, errs)
	}
}

func TestNewDeadLetterSinkErrors(t *testing.T) {
	cc := ClientConfig{Brokers: []string{"127.0.0.1:1"}}
	tests := []struct {
		name string
		cfg  DeadLetterConfig
		want string
	}{
		{"no topic", DeadLetterConfig{Client: cc}, "kafka dead-letter output: no topic"},
		{"bad topic", DeadLetterConfig{Client: cc, Topic: "a b"}, `kafka dead-letter output: topic "a b" is not a valid topic name`},
		{"no brokers", DeadLetterConfig{Topic: "dlq"}, `dead-letter output "dlq": kafka: no brokers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDeadLetterSink(tt.cfg)
			if err == nil {
				d.Close()
				t.Fatal("NewDeadLetterSink succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to start with %q", err, tt.want)
			}
		})
	}
}
