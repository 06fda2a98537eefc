package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weir-stream/weir/host/internal/record"
)

// orderChecker is a per-worker operator that remembers, per key, the last
// sequence number it saw, and fails the record if a key's sequence goes
// backwards or the key reaches two workers.
type orderChecker struct {
	worker int
	owners *sync.Map // key → worker
	last   map[string]int64
	bad    *atomic.Int64
}

func (o *orderChecker) Name() string                { return "order" }
func (o *orderChecker) Close(context.Context) error { return nil }
func (o *orderChecker) Process(_ context.Context, in []record.Record, out *record.Output) error {
	for _, r := range in {
		k := string(r.Key)
		if w, loaded := o.owners.LoadOrStore(k, o.worker); loaded && w.(int) != o.worker {
			o.bad.Add(1)
		}
		seq, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.SplitN(r.Value, []byte(`"seq":`), 2)[1], []byte("}"))), 10, 64)
		if prev, ok := o.last[k]; ok && seq <= prev {
			o.bad.Add(1)
		}
		o.last[k] = seq
		out.Records = append(out.Records, r)
	}
	return nil
}

// TestParallelKeyedOrder runs 4 workers per segment over records from 6
// partitions whose keys are spread across partitions, so that key_by must
// move records between workers. Every record must come out once, each key
// must stay on one worker, and each key's records must stay in order.
func TestParallelKeyedOrder(t *testing.T) {
	const n, parts, keys, par = 20_000, 6, 37, 4
	src := &keyedSource{n: n, parts: parts, keys: keys}
	var owners sync.Map
	var bad atomic.Int64
	var instances atomic.Int64
	var out bytes.Buffer
	p := &Pipeline{
		Sources: []Source{src},
		Steps: []Step{
			keyByStep("by-key", []string{"k"}),
			{Name: "order", New: func(context.Context) (Operator, error) {
				w := int(instances.Add(1))
				return &orderChecker{worker: w, owners: &owners, last: map[string]int64{}, bad: &bad}, nil
			}},
		},
		Sinks:       []Sink{NewWriterSink("out", "buffer", &out, SinkRaw, false)},
		DeadLetter:  NewDeadLetterWriter("discard", io.Discard, false),
		BatchSize:   64,
		Parallelism: par,
	}
	sum, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if instances.Load() != par {
		t.Errorf("%d instances of the order step, want one per worker (%d)", instances.Load(), par)
	}
	if bad.Load() != 0 {
		t.Errorf("%d records out of order or on the wrong worker", bad.Load())
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if seen[line] {
			t.Fatalf("record twice: %s", line)
		}
		seen[line] = true
	}
	if len(seen) != n || sum.Steps[1].In != n || sum.Sinks[0].Out != n {
		t.Fatalf("%d distinct records out, summary %+v", len(seen), sum)
	}
}

// TestParallelKeyedStateWithoutKeyBy runs a KeyedState step (a window)
// with no key_by before it on 4 workers, over partitioned records whose
// keys are spread across partitions, some without a key. Routed by
// partition, one key's records (and every keyless one) would reach several
// workers, each keeping its own state for it; routed by key, each key, the
// absent one included, stays on one worker, in order.
func TestParallelKeyedStateWithoutKeyBy(t *testing.T) {
	const n, parts, keys, par = 20_000, 6, 37, 4
	for _, tt := range []struct {
		name       string
		keyedState bool
		wantBad    bool
	}{
		{name: "keyed state is routed by key", keyedState: true},
		{name: "a stateless step keeps partition routing", keyedState: false, wantBad: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var owners sync.Map
			var bad, instances atomic.Int64
			p := &Pipeline{
				Sources: []Source{&keyedSource{n: n, parts: parts, keys: keys, withKeys: true}},
				Steps: []Step{{Name: "order", KeyedState: tt.keyedState, New: func(context.Context) (Operator, error) {
					w := int(instances.Add(1))
					return &orderChecker{worker: w, owners: &owners, last: map[string]int64{}, bad: &bad}, nil
				}}},
				Sinks:       []Sink{NewDiscardSink("out")},
				DeadLetter:  NewDeadLetterWriter("discard", io.Discard, false),
				BatchSize:   64,
				Parallelism: par,
			}
			sum, err := p.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sum.Steps[0].In != n || sum.Sinks[0].Out != n {
				t.Fatalf("summary %+v, want %d records through", sum, n)
			}
			if got := bad.Load() != 0; got != tt.wantBad {
				t.Errorf("%d records out of order or on a second worker (want some: %v)", bad.Load(), tt.wantBad)
			}
		})
	}
}

// keyedSource emits n records over parts partitions; record i has key
// k(i mod keys) and a per-key sequence number, and keys are spread over
// partitions, as when a topic is not keyed the way the pipeline keys it.
// With withKeys, records also carry their key as the record key, except
// those of key k0, which have none, and each key's records are spread over
// every partition.
type keyedSource struct {
	n, parts, keys int
	withKeys       bool
}

func (s *keyedSource) Name() string { return "keyed" }
func (s *keyedSource) Run(ctx context.Context, out *Out) error {
	seq := make([]int, s.keys)
	for i := range s.n {
		k := i % s.keys
		seq[k]++
		rec := record.Record{
			Value:  fmt.Appendf(nil, `{"k":"k%d","seq":%d}`, k, seq[k]),
			Origin: record.Origin{Topic: "t", Partition: int32(k % s.parts), Offset: int64(i)},
		}
		if s.withKeys {
			rec.Origin.Partition = int32(i / 7 % s.parts) // a key in every partition
			if k != 0 {
				rec.Key = fmt.Appendf(nil, "k%d", k)
			}
		}
		if err := out.Add(rec); err != nil {
			return err
		}
	}
	return out.Flush()
}
