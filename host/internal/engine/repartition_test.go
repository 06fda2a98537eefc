package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
)

// loopback is a repartition topic in memory, both ends of it: as the
// RepartitionSink it appends each record to a partition by its key and
// each watermark to every partition; as a Source it reads its input
// topic's records ("in", partitioned, with an event-time field) and,
// interleaved with them, what it wrote to its repartition topic ("rp"),
// handing records on and watermarks as PartitionTime, until every
// partition has been promised end. It is the shape of a Kafka source
// that reads a pipeline's input and its repartition topic.
type loopback struct {
	in    []record.Record // the input topic's records, in order
	parts int32           // partitions of "rp"
	end   int64           // the watermark after which the source ends

	mu       sync.Mutex
	queue    []loopItem
	next     []int64         // per partition of "rp", its next offset
	upstream map[int32]int64 // the last watermark written for each input partition
	written  int
}

type loopItem struct {
	rec  record.Record
	wm   int64
	part int32
	isWM bool
}

func (l *loopback) Name() string { return "loop" }
func (l *loopback) Write(recs []record.Record, dead []record.DeadLetter, _ *Ack) ([]record.DeadLetter, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		p := int32(hashKey(r.Key) % uint32(l.parts))
		rec := record.Record{Key: slices.Clone(r.Key), Value: slices.Clone(r.Value), Timestamp: r.Timestamp,
			Origin: record.Origin{Topic: "rp", Partition: p, Offset: l.next[p]}}
		l.next[p]++
		l.queue = append(l.queue, loopItem{rec: rec})
		l.written++
	}
	return dead, nil
}
func (l *loopback) Watermark(parts []PartitionWatermark) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pw := range parts {
		l.upstream[pw.Partition] = pw.WM
		if pw.Idle {
			l.upstream[pw.Partition] = math.MaxInt64 // holds nothing back
		}
	}
	if len(l.upstream) < 3 { // the reader's rule: every upstream task has written one
		return nil
	}
	least := int64(math.MaxInt64)
	for _, wm := range l.upstream {
		least = min(least, wm)
	}
	if least == math.MaxInt64 {
		return nil // all idle
	}
	for p := range l.parts {
		l.queue = append(l.queue, loopItem{wm: least, part: p, isWM: true, rec: record.Record{Origin: record.Origin{Topic: "rp", Partition: p, Offset: l.next[p]}}})
		l.next[p]++
	}
	return nil
}
func (l *loopback) Flush() error { return nil }
func (l *loopback) Close() error { return nil }

// take returns what was written since the last take.
func (l *loopback) take() []loopItem {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue = nil
	return q
}

func (l *loopback) Run(ctx context.Context, out *Out) error {
	for p := range int32(3) {
		out.Announce("in", p)
	}
	for p := range l.parts {
		out.Announce("rp", p)
	}
	ended := map[int32]bool{}
	for i := 0; len(ended) < int(l.parts); {
		if i < len(l.in) {
			for end := min(i+37, len(l.in)); i < end; i++ {
				if err := out.Add(l.in[i]); err != nil {
					return err
				}
			}
		}
		items := l.take()
		for _, it := range items {
			var err error
			if it.isWM {
				err = out.PartitionTime(it.rec.Origin, it.wm)
				if it.wm >= l.end {
					ended[it.part] = true
				}
			} else {
				err = out.Add(it.rec)
			}
			if err != nil {
				return err
			}
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if len(items) == 0 && i >= len(l.in) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	return nil
}

// TestRepartition runs a keyed window after a repartitioned key_by,
// with the repartition topic looped back into the pipeline's one source,
// over generated records on three input partitions, slightly out of
// order, for several parallelisms and batch sizes. Every window must
// come out once with its full count, so the watermark after the
// repartition, made of what the workers before it promised, never ran
// ahead of a record; and every record must have crossed the topic.
func TestRepartition(t *testing.T) {
	for _, tc := range []struct {
		name       string
		par, batch int
		parts      int32
	}{
		{name: "one worker", par: 1, batch: 64, parts: 4},
		{name: "three workers", par: 3, batch: 64, parts: 4},
		{name: "three workers, small batches", par: 3, batch: 7, parts: 5},
		{name: "two workers, one partition", par: 2, batch: 16, parts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n, keys = 6000, 11
			var in []record.Record
			want := map[string]int{}
			for i := range n {
				ts := int64(i) - int64(i%3)
				k := fmt.Sprintf("k%d-ü", (i*7)%keys)
				in = append(in, record.Record{Value: fmt.Appendf(nil, `{"k":%q,"ts":%d}`, k, ts),
					Origin: record.Origin{Topic: "in", Partition: int32(i % 3), Offset: int64(i / 3)}})
				want[fmt.Sprintf("%s %d", k, ts/100*100)]++
			}
			const end = int64(1e12)
			for p := range int32(3) {
				in = append(in, record.Record{Value: fmt.Appendf(nil, `{"k":"end","ts":%d}`, end),
					Origin: record.Origin{Topic: "in", Partition: p, Offset: n}})
			}
			loop := &loopback{in: in, parts: tc.parts, end: end - 5, next: make([]int64, tc.parts), upstream: map[int32]int64{}}
			var back bool
			var mu sync.Mutex
			var out bytes.Buffer
			p := &Pipeline{
				Sources: []Source{loop},
				Steps: []Step{keyByStep("by", []string{"k"}), {Name: "window", KeyedState: true, New: func(context.Context) (Operator, error) {
					return &windowCounter{counts: map[string]map[int64]int{}, last: math.MinInt64, back: &back, mu: &mu}, nil
				}}},
				Repartitions:      []Repartition{{After: 0, Topic: "rp", Sink: loop}},
				Sinks:             []Sink{NewWriterSink("out", "buffer", &out, SinkRaw, false)},
				DeadLetter:        NewDeadLetterWriter("discard", io.Discard, false),
				BatchSize:         tc.batch,
				Parallelism:       tc.par,
				EventTime:         []*EventTime{{Field: []string{"ts"}, MaxOutOfOrderness: 5 * time.Millisecond}},
				WatermarkInterval: 5 * time.Millisecond,
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := p.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if back {
				t.Error("a worker saw its watermark go back")
			}
			if loop.written != len(in) {
				t.Errorf("%d records crossed the repartition topic, want %d", loop.written, len(in))
			}
			got := windowCounts(t, out.String())
			for id, c := range want {
				if got[id] != c {
					t.Errorf("window %s counted %d, want %d", id, got[id], c)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d windows emitted, want %d", len(got), len(want))
			}
		})
	}
}

// TestPartitionWatermarks checks what a pipeline with a repartition
// promises for its input partitions: each shown partition's own
// watermark, none for a partition that has shown nothing, idle once a
// partition has sent nothing for the idle timeout, and the same snapshot
// while nothing changed.
func TestPartitionWatermarks(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { return now }
	et := &EventTime{MaxOutOfOrderness: 5 * time.Millisecond, IdleTimeout: time.Second}
	w := newWatermarks([]*EventTime{et}, 1, []string{"rp"}, clock)
	w.announce(0, []partAnnounce{{partKey{"in", 0}, NoWatermark}, {partKey{"in", 1}, NoWatermark}, {partKey{"in", 2}, NoWatermark}, {partKey{"rp", 0}, NoWatermark}})
	rec := func(part int32, ts int64) record.Record {
		return record.Record{Timestamp: ts, Origin: record.Origin{Topic: "in", Partition: part}}
	}
	w.observe(0, []record.Record{rec(0, 100), rec(1, 50)})
	snap := w.partitions(nil)
	want := []PartitionWatermark{{"in", 0, 95, false}, {"in", 1, 45, false}}
	if !slices.Equal(snap.parts, want) {
		t.Fatalf("partitions %v, want %v: partition 2 has shown nothing", snap.parts, want)
	}
	if got := w.current(); got != 45 {
		t.Errorf("watermark %d, want 45: a partition that has shown nothing does not hold it back", got)
	}
	if again := w.partitions(snap); again != snap {
		t.Error("an unchanged snapshot was made again")
	}
	now = now.Add(600 * time.Millisecond)
	w.observe(0, []record.Record{rec(0, 200)})
	now = now.Add(600 * time.Millisecond) // partition 1 quiet for 1.2 s
	want = []PartitionWatermark{{"in", 0, 195, false}, {"in", 1, 45, true}}
	if got := w.partitions(snap).parts; !slices.Equal(got, want) {
		t.Errorf("partitions %v, want %v: partition 1 idle", got, want)
	}
	if got := w.repartition(0); got != NoWatermark {
		t.Errorf("repartition watermark %d before any promise", got)
	}
}

// TestAnnounceFrom: a partition announced at a known watermark (a run
// resuming a partition another instance read to its end) holds the
// watermark at that, not back, until it shows records, which move it on
// from there; one announced without holds it back.
func TestAnnounceFrom(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { return now }
	et := &EventTime{MaxOutOfOrderness: 5 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		from   int64
		before int64 // the watermark before partition 1 shows a record
	}{
		{"known", 200, 200},
		{"below the others", 40, 40},
		{"not known", NoWatermark, NoWatermark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWatermarks([]*EventTime{et}, 1, nil, clock)
			w.announce(0, []partAnnounce{{partKey{"in", 0}, NoWatermark}, {partKey{"in", 1}, tc.from}})
			w.observe(0, []record.Record{{Timestamp: 305, Origin: record.Origin{Topic: "in", Partition: 0}}})
			if got := w.current(); got != min(tc.before, 300) {
				t.Fatalf("watermark %d, want %d", got, min(tc.before, 300))
			}
			w.observe(0, []record.Record{{Timestamp: 1005, Origin: record.Origin{Topic: "in", Partition: 1}}})
			if got := w.current(); got != 300 {
				t.Errorf("after partition 1 showed a record: watermark %d, want 300", got)
			}
		})
	}
}
