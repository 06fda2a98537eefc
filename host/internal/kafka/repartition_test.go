package kafka

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/host/internal/task"
)

// TestEnsureRepartitionTopic creates a repartition topic from three
// instances at once, with the input's partitions (with two inputs, the
// most either has), and finds an existing one with the partitions it was
// made with; an instance whose input does not exist yet waits for it.
func TestEnsureRepartitionTopic(t *testing.T) {
	br, err := StartBroker(BrokerConfig{Topics: map[string]int32{"in": 12, "bids": 5, "rp-old": 3}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	cc := ClientConfig{Brokers: br.Addrs()}
	log := slog.New(slog.DiscardHandler)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			p, in, err := EnsureRepartitionTopic(context.Background(), cc, "rp", []string{"in"}, 0, log)
			if err != nil || p != 12 || in.Total() != 12 {
				t.Errorf("new topic: %d partitions of %d inputs, %v; want 12 of 12", p, in.Total(), err)
			}
		})
	}
	wg.Wait()
	tests := []struct {
		name          string
		topic         string
		inputs        []string
		parts, total  int32
		bidsAt, inAt0 int32 // upstream tasks of bids[0] and in[0]
	}{
		{name: "existing topic", topic: "rp-old", inputs: []string{"in"}, parts: 3, total: 12, bidsAt: -1, inAt0: 0},
		{name: "two inputs", topic: "rp-two", inputs: []string{"in", "bids"}, parts: 12, total: 17, bidsAt: 0, inAt0: 5},
	}
	for _, tt := range tests {
		p, in, err := EnsureRepartitionTopic(context.Background(), cc, tt.topic, tt.inputs, 0, log)
		if err != nil || p != tt.parts || in.Total() != tt.total {
			t.Errorf("%s: %d partitions of %d inputs, %v; want %d of %d", tt.name, p, in.Total(), err, tt.parts, tt.total)
		}
		if id, ok := in.ID("bids", 0); tt.bidsAt >= 0 && (!ok || id != tt.bidsAt) {
			t.Errorf("%s: bids[0] is upstream task %d, %v; want %d", tt.name, id, ok, tt.bidsAt)
		}
		if id, ok := in.ID("in", 0); !ok || id != tt.inAt0 {
			t.Errorf("%s: in[0] is upstream task %d, %v; want %d", tt.name, id, ok, tt.inAt0)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if _, _, err := EnsureRepartitionTopic(ctx, cc, "rp-x", []string{"in", "missing"}, 0, log); err == nil {
		t.Error("no error without an input topic")
	}
}

// TestUpstreamTimes checks a repartition partition's event time: none
// until every upstream task has written a watermark, then the least of
// the last ones, each task's last winning whoever wrote it; and that the
// tables survive a source snapshot and its restore, as the tasks of a
// checkpoint moved to another instance (AddTaskSnapshot).
func TestUpstreamTimes(t *testing.T) {
	u := &upstreamTimes{}
	steps := []struct {
		mark  repartitionMark
		least int64
		ok    bool
	}{
		{repartitionMark{Tasks: []int32{0, 2}, WMs: []int64{50, 70}, Of: 3}, 0, false},
		{repartitionMark{Tasks: []int32{1}, WMs: []int64{60}, Of: 3}, 50, true},
		{repartitionMark{Tasks: []int32{0}, WMs: []int64{90}, Of: 3}, 60, true},
		{repartitionMark{Tasks: []int32{1, 2}, WMs: []int64{100, 95}, Of: 3}, 90, true},
		// Task 0 goes idle: it no longer holds the others back.
		{repartitionMark{Tasks: []int32{0}, WMs: []int64{90}, Of: 3, Idle: []int32{0}}, 95, true},
		{repartitionMark{Tasks: []int32{1, 2}, WMs: []int64{100, 97}, Of: 3, Idle: []int32{1, 2}}, 0, false},
		// Back from idleness, each again counts from its watermark.
		{repartitionMark{Tasks: []int32{1, 2}, WMs: []int64{100, 98}, Of: 3}, 98, true},
		{repartitionMark{Tasks: []int32{0}, WMs: []int64{99}, Of: 3}, 98, true},
	}
	for i, s := range steps {
		if least, ok := u.note(s.mark); ok != s.ok || (ok && least != s.least) {
			t.Fatalf("mark %d: least %d ok %v, want %d %v", i, least, ok, s.least, s.ok)
		}
	}
	snap := map[string]int64{"4": 123}
	putUpstream(snap, map[int32]*upstreamTimes{4: u, 5: {of: 3, wm: map[int32]int64{0: 1}}})
	b, _ := json.Marshal(sourceSnapshot{"rp": snap, "in": {"4": 7}})
	moved, err := AddTaskSnapshot(nil, b, "rp", 4)
	if err != nil {
		t.Fatal(err)
	}
	s := &Source{name: "s", repartition: "rp", gate: newRestoreGate()}
	if err := s.Restore(moved); err != nil {
		t.Fatal(err)
	}
	got := s.restoredUp[4]
	if len(s.restoredUp) != 1 || got == nil || got.of != 3 {
		t.Fatalf("restored tables %v, want partition 4's alone", s.restoredUp)
	}
	if least, ok := got.least(); !ok || least != 98 {
		t.Errorf("restored partition 4: least %d ok %v, want 98", least, ok)
	}
	if off := s.restore[srcTP{"rp", 4}]; off != 123 || len(s.restore) != 1 {
		t.Errorf("restored offsets %v, want rp[4] at 123 alone", s.restore)
	}
}

// TestPartitionKeys checks that the watermark records' keys land, under
// Kafka's default partitioner, on the partition they are for.
func TestPartitionKeys(t *testing.T) {
	for _, n := range []int{1, 2, 12, 50} {
		keys := partitionKeys(n)
		for p, k := range keys {
			if task.Of(k, n) != p {
				t.Errorf("%d partitions: key %q lands on %d, want %d", n, k, task.Of(k, n), p)
			}
		}
		seen := map[string]bool{}
		for _, k := range keys {
			seen[string(k)] = true
		}
		if len(seen) != n {
			t.Errorf("%d partitions: keys %q repeat", n, keys)
		}
	}
}

// FuzzRepartitionMark checks that a watermark record's decoder never
// panics, and that what it accepts names only tasks below Of, with a
// watermark each.
func FuzzRepartitionMark(f *testing.F) {
	for _, s := range []string{`{"tasks":[0,3],"wms":[5,6],"of":4}`, `{"tasks":[],"wms":[],"of":1}`, `{"tasks":[9],"wms":[1],"of":4}`, `{"of":-1}`, `nope`, `{"tasks":[1],"wms":[],"of":2}`, `{"tasks":[1],"wms":[4],"of":2,"idle":[1]}`, `{"tasks":[1],"wms":[4],"of":2,"idle":[0]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeRepartitionMark(b)
		if err != nil {
			return
		}
		if m.Of <= 0 || len(m.WMs) != len(m.Tasks) {
			t.Fatalf("accepted %s as %+v", b, m)
		}
		for _, tk := range m.Tasks {
			if tk < 0 || tk >= m.Of {
				t.Fatalf("accepted task %d of %d", tk, m.Of)
			}
		}
		u := &upstreamTimes{}
		u.note(m)
	})
}

// TestOriginHeaders checks the origin each repartitioned record carries:
// its input partition and offset, numbered among the records made from
// one input record, after its own headers, and read back by parseOrigin.
func TestOriginHeaders(t *testing.T) {
	recs := []record.Record{
		{Key: []byte("a"), Headers: []record.Header{{Key: "h", Value: []byte("v")}}, Origin: record.Origin{Topic: "in", Partition: 2, Offset: 7}},
		{Origin: record.Origin{Topic: "in", Partition: 2, Offset: 7}},
		{Origin: record.Origin{Topic: "in", Partition: 0, Offset: 123456789012}},
		{Origin: record.Origin{Topic: "bids", Partition: 1, Offset: 7}},
		{Origin: record.Origin{Partition: -1}},
		{Origin: record.Origin{Topic: "other", Partition: 0, Offset: 1}},
	}
	// Upstream tasks: bids[0] and bids[1] are 0 and 1, in[0..2] 2 to 4.
	(&RepartitionSink{inputs: NewInputs(map[string]int32{"in": 3, "bids": 2})}).originHeaders(recs)
	want := []struct {
		task int32
		pos  originPos
	}{{4, originPos{7, 0}}, {4, originPos{7, 1}}, {2, originPos{123456789012, 0}}, {1, originPos{7, 0}}}
	for i, w := range want {
		hs := recs[i].Headers
		if recs[i].Key == nil || len(hs) == 0 || hs[len(hs)-1].Key != RepartitionOriginHeader {
			t.Fatalf("record %d: key %q, headers %v", i, recs[i].Key, hs)
		}
		if task, pos, ok := parseOrigin(hs[len(hs)-1].Value); !ok || task != w.task || pos != w.pos {
			t.Errorf("record %d: origin %d %+v %v, want %d %+v", i, task, pos, ok, w.task, w.pos)
		}
	}
	if len(recs[0].Headers) != 2 || recs[0].Headers[0].Key != "h" {
		t.Errorf("record 0 lost its own header: %v", recs[0].Headers)
	}
	for _, i := range []int{4, 5} {
		if len(recs[i].Headers) != 0 {
			t.Errorf("record %d, of no input partition, got an origin: %v", i, recs[i].Headers)
		}
	}
}

// FuzzParseOrigin checks parseOrigin against strconv on the text it is
// given: it accepts exactly three non-negative decimals joined by commas
// (the task within int32), and reads them right.
func FuzzParseOrigin(f *testing.F) {
	for _, s := range []string{"2,7,0", "0,123456789012,3", "1,2", "a,1,2", "1,2,3,", "-1,2,3", "2147483648,0,0", "1,99999999999999999999,0", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		task, pos, ok := parseOrigin(b)
		parts := strings.Split(string(b), ",")
		want := len(parts) == 3
		var n [3]int64
		for i, p := range parts {
			if !want {
				break
			}
			v, err := strconv.ParseInt(p, 10, 64)
			want = err == nil && v >= 0 && p != "" && p[0] != '+' && p[0] != '-'
			n[i] = v
		}
		want = want && n[0] <= math.MaxInt32
		if ok != want {
			t.Fatalf("parseOrigin(%q) ok %v, want %v", b, ok, want)
		}
		if ok && (int64(task) != n[0] || pos != (originPos{n[1], n[2]})) {
			t.Fatalf("parseOrigin(%q) = %d %+v, want %v", b, task, pos, n)
		}
	})
}
