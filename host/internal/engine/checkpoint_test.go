package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// countSource hands out n records {"i":i,"k":i%keys}, with event time i.
type countSource struct{ n, keys int }

func (s *countSource) Name() string     { return "count" }
func (s *countSource) Replayable() bool { return true }
func (s *countSource) Run(ctx context.Context, out *Out) error {
	for i := range s.n {
		if ctx.Err() != nil {
			break
		}
		v := fmt.Sprintf(`{"i":%d,"k":%d}`, i, i%s.keys)
		if err := out.Add(record.Record{Value: []byte(v), Timestamp: int64(i), Origin: record.Origin{Partition: -1}}); err != nil {
			return err
		}
	}
	return out.Flush()
}

// summer keeps a running sum of "i" per record key in a shared store and
// emits {"k":key,"i":i,"sum":sum} for each record. It restores from the
// store the keys it owns.
type summer struct {
	store    state.Store
	sums     map[string]int64
	restored *atomic.Int64 // the watermark Restore was given
}

func (o *summer) Name() string                { return "sum" }
func (o *summer) Close(context.Context) error { return nil }
func (o *summer) Process(_ context.Context, in []record.Record, out *record.Output) error {
	var muts []state.Mutation
	for _, r := range in {
		var v struct{ I int64 }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return err
		}
		k := string(r.Key)
		o.sums[k] += v.I
		muts = append(muts, state.Mutation{Key: []byte(k), Value: []byte(strconv.FormatInt(o.sums[k], 10))})
		out.Records = append(out.Records, record.Record{Key: r.Key,
			Value: fmt.Appendf(nil, `{"k":%q,"i":%d,"sum":%d}`, k, v.I, o.sums[k])})
	}
	return o.store.Apply(muts)
}

func (o *summer) Restore(_ context.Context, wm int64, owns func([]byte) bool) error {
	o.restored.Store(wm)
	return o.store.(state.Scanner).Scan(nil, func(k, v []byte) error {
		if owns(k) {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return err
			}
			o.sums[string(k)] = n
		}
		return nil
	})
}

// memSink keeps what it is given.
type memSink struct {
	mu   sync.Mutex
	recs []string
}

func (s *memSink) Name() string { return "mem" }
func (s *memSink) Write(recs []record.Record, dead []record.DeadLetter, _ *Ack) ([]record.DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.recs = append(s.recs, string(r.Value))
	}
	return dead, nil
}
func (s *memSink) Flush() error { return nil }
func (s *memSink) Close() error { return nil }
func (s *memSink) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// ckptRun is one run of the summing pipeline.
type ckptRun struct {
	sink     *memSink
	store    *state.Memory
	restored atomic.Int64
	cps      []*Checkpoint
	stores   []*state.Memory // a copy of the store at each checkpoint
	sinkLen  []int           // what the sink held at each checkpoint
}

// runSummer runs n records through key_by → summer with parallelism par,
// checkpointing every millisecond, from restore (with its store) if given.
// failAt makes the commit of that epoch fail, as a crash would.
func runSummer(t *testing.T, n, par int, restore *Checkpoint, store *state.Memory, failAt uint64) (*ckptRun, error) {
	t.Helper()
	r := &ckptRun{sink: &memSink{}, store: store}
	r.restored.Store(math.MinInt64 + 1)
	if r.store == nil {
		r.store = state.NewMemory()
	}
	p := &Pipeline{
		Sources: []Source{&countSource{n: n, keys: 7}},
		Steps: []Step{keyByStep("key", []string{"k"}), {Name: "sum", New: func(context.Context) (Operator, error) {
			return &summer{store: r.store, sums: map[string]int64{}, restored: &r.restored}, nil
		}}},
		Sinks:       []Sink{r.sink},
		BatchSize:   16,
		Parallelism: par,
		EventTime:   []*EventTime{{}},
		Checkpointing: &Checkpointing{Interval: time.Millisecond, Restore: restore,
			Commit: func(_ context.Context, cp *Checkpoint) error {
				if cp.Epoch == failAt {
					return errors.New("crash")
				}
				copied := state.NewMemory()
				r.store.Scan(nil, func(k, v []byte) error {
					return copied.Apply([]state.Mutation{{Key: k, Value: v}})
				})
				r.cps = append(r.cps, cp)
				r.stores = append(r.stores, copied)
				r.sinkLen = append(r.sinkLen, len(r.sink.snapshot()))
				return nil
			}},
	}
	_, err := p.Run(context.Background())
	return r, err
}

// byKey groups output lines by key, in order.
func byKey(t *testing.T, lines []string) map[string][]string {
	t.Helper()
	m := map[string][]string{}
	for _, l := range lines {
		var v struct{ K string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		m[v.K] = append(m[v.K], l)
	}
	return m
}

// At every checkpoint the pipeline is quiesced: the sink holds exactly the
// results of the records the source had handed out, and nothing after.
// Resuming from a checkpoint, with the store as it was then, continues
// exactly: the output before the checkpoint plus the resumed run's output
// is the output of a run without failure.
func TestCheckpointResume(t *testing.T) {
	const n = 3000
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism=%d", par), func(t *testing.T) {
			ref, err := runSummer(t, n, par, nil, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := byKey(t, ref.sink.snapshot())
			if len(ref.cps) < 3 {
				t.Fatalf("%d checkpoints, want several", len(ref.cps))
			}
			for i, cp := range ref.cps {
				if got := int64(ref.sinkLen[i]); got != cp.Sources[0].Records {
					t.Fatalf("checkpoint %d: the sink held %d results of %d records handed out", cp.Epoch, got, cp.Sources[0].Records)
				}
			}
			last := ref.cps[len(ref.cps)-1]
			if last.Sources[0].Records != n || last.Watermark == math.MaxInt64 {
				t.Fatalf("final checkpoint: %d records, watermark %d; want %d and the last watermark before the end of input", last.Sources[0].Records, last.Watermark, n)
			}

			crashed, err := runSummer(t, n, par, nil, nil, 3)
			if err == nil || !strings.Contains(err.Error(), "crash") {
				t.Fatalf("run with a failing checkpoint: %v", err)
			}
			if len(crashed.cps) != 2 {
				t.Fatalf("%d checkpoints before the crash, want 2", len(crashed.cps))
			}
			cp := crashed.cps[1]
			before := crashed.sink.snapshot()[:crashed.sinkLen[1]]
			resumed, err := runSummer(t, n, par, cp, crashed.stores[1], 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := resumed.restored.Load(); got != cp.Watermark {
				t.Fatalf("operators restored at watermark %d, want %d", got, cp.Watermark)
			}
			if resumed.cps[0].Epoch != cp.Epoch+1 {
				t.Fatalf("first epoch after resuming %d, want %d", resumed.cps[0].Epoch, cp.Epoch+1)
			}
			got := byKey(t, append(before, resumed.sink.snapshot()...))
			for k, w := range want {
				if par > 1 {
					// Records of one key reach the key_by from several
					// workers, in an order that differs between runs:
					// compare which records were summed, and the total.
					got[k], w = summed(t, got[k]), summed(t, w)
				}
				if !slices.Equal(got[k], w) {
					t.Fatalf("key %s: %d results, want %d; first difference at %d", k, len(got[k]), len(w), firstDiff(got[k], w))
				}
			}
		})
	}
}

// summed returns the sorted record numbers of a key's results, and the
// final sum.
func summed(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	var last int64
	for _, l := range lines {
		var v struct{ I, Sum int64 }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%08d", v.I))
		last = max(last, v.Sum)
	}
	slices.Sort(out)
	return append(out, fmt.Sprint("sum ", last))
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// idleSource waits for input that never comes, as a Kafka source does on a
// quiet topic, until a barrier or the end of the run; it snapshots how many
// barriers it passed.
type idleSource struct{ barriers int }

func (s *idleSource) Name() string { return "idle" }
func (s *idleSource) Run(ctx context.Context, out *Out) error {
	for {
		<-out.PollContext(ctx).Done()
		if ctx.Err() != nil {
			return nil
		}
		if err := out.Barrier(); err != nil {
			return err
		}
		s.barriers++
	}
}
func (s *idleSource) Snapshot() (json.RawMessage, error) { return json.Marshal(s.barriers) }
func (s *idleSource) Restore(b json.RawMessage) error    { return json.Unmarshal(b, &s.barriers) }

// A source waiting for input is woken for a checkpoint, and restored
// from its snapshot.
func TestCheckpointIdleSource(t *testing.T) {
	src := &idleSource{}
	ctx, cancel := context.WithCancel(context.Background())
	var cps []*Checkpoint
	p := &Pipeline{
		Sources: []Source{src},
		Sinks:   []Sink{&memSink{}},
		Checkpointing: &Checkpointing{Interval: time.Millisecond, Restore: &Checkpoint{Epoch: 7,
			Sources: []SourceCheckpoint{{Name: "idle", Snapshot: json.RawMessage("40")}}, Times: make([]SourceTimeCheckpoint, 1)},
			Commit: func(_ context.Context, cp *Checkpoint) error {
				cps = append(cps, cp)
				if len(cps) == 5 {
					cancel()
				}
				return nil
			}},
	}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cps) < 5 || cps[0].Epoch != 8 {
		t.Fatalf("%d checkpoints from epoch %d, want at least 5 from 8", len(cps), cps[0].Epoch)
	}
	if string(cps[3].Sources[0].Snapshot) != "43" {
		t.Fatalf("snapshot at the fourth checkpoint %s, want 43 (restored 40, then 3 barriers passed)", cps[3].Sources[0].Snapshot)
	}
}

// Checkpoints need sources that can resume.
func TestCheckpointNeedsResumableSources(t *testing.T) {
	p := &Pipeline{
		Sources:       []Source{NewReaderSource("stdin", "standard input", strings.NewReader("{}\n"), FormatJSONLines)},
		Sinks:         []Sink{&memSink{}},
		Checkpointing: &Checkpointing{Commit: func(context.Context, *Checkpoint) error { return nil }},
	}
	_, err := p.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `source "stdin" cannot resume from a checkpoint`) {
		t.Fatalf("error %v", err)
	}
}

func TestCheckpointMarshal(t *testing.T) {
	cp := &Checkpoint{Epoch: 3, Watermark: -5,
		Sources: []SourceCheckpoint{{Name: "a", Snapshot: json.RawMessage(`{"t":{"0":5}}`)}, {Name: "b", Records: 9}},
		Times:   []SourceTimeCheckpoint{{Held: 1, MaxSeen: 2, Parts: []PartitionTime{{Topic: "t", Partition: 0, Max: 2}}}, {}}}
	b, err := cp.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := got.Marshal()
	if string(b) != string(b2) {
		t.Fatalf("round trip: %s != %s", b, b2)
	}
	if _, err := UnmarshalCheckpoint([]byte("{")); err == nil {
		t.Fatal("decoding garbage succeeded")
	}
}

// TestCheckpointFit checks a checkpoint reshaped for a run routing its
// key_by through a repartition or in process, whichever it was taken
// with: without repartitions, the least of the watermarks before and
// after one, and no event time of its topic; with them, a checkpoint
// taken without gives the part after the repartition the whole chain's
// watermark.
func TestCheckpointFit(t *testing.T) {
	src := SourceTimeCheckpoint{Held: 90, MaxSeen: 200}
	topic := SourceTimeCheckpoint{Held: 40, MaxSeen: 60}
	for _, tc := range []struct {
		name         string
		cp, want     Checkpoint
		repartitions int
	}{
		{name: "through the topic, then in process", repartitions: 0,
			cp:   Checkpoint{Watermark: 100, Entries: []int64{50}, Times: []SourceTimeCheckpoint{src, topic}},
			want: Checkpoint{Watermark: 50, Times: []SourceTimeCheckpoint{src}}},
		{name: "in process, then through the topic", repartitions: 1,
			cp:   Checkpoint{Watermark: 100, Times: []SourceTimeCheckpoint{src}},
			want: Checkpoint{Watermark: 100, Entries: []int64{100}, Times: []SourceTimeCheckpoint{src}}},
		{name: "through the topic both times", repartitions: 1,
			cp:   Checkpoint{Watermark: 100, Entries: []int64{50}, Times: []SourceTimeCheckpoint{src, topic}},
			want: Checkpoint{Watermark: 100, Entries: []int64{50}, Times: []SourceTimeCheckpoint{src, topic}}},
		{name: "in process both times", repartitions: 0,
			cp:   Checkpoint{Watermark: 100, Times: []SourceTimeCheckpoint{src}},
			want: Checkpoint{Watermark: 100, Times: []SourceTimeCheckpoint{src}}},
		{name: "no watermark yet after the topic", repartitions: 0,
			cp:   Checkpoint{Watermark: 100, Entries: []int64{NoWatermark}, Times: []SourceTimeCheckpoint{src, topic}},
			want: Checkpoint{Watermark: NoWatermark, Times: []SourceTimeCheckpoint{src}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := tc.cp
			cp.Fit(tc.repartitions, 1)
			if !reflect.DeepEqual(cp, tc.want) {
				t.Errorf("fitted %+v, want %+v", cp, tc.want)
			}
		})
	}
}

// Checkpointing.Soon starts a checkpoint at once, long before the
// interval is up, each time it yields.
func TestCheckpointSoon(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	soon := make(chan struct{})
	committed := make(chan uint64, 10)
	p := &Pipeline{
		Sources: []Source{&idleSource{}},
		Sinks:   []Sink{&memSink{}},
		Checkpointing: &Checkpointing{Interval: time.Hour, Soon: soon, Commit: func(_ context.Context, cp *Checkpoint) error {
			committed <- cp.Epoch
			return nil
		}},
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx)
		done <- err
	}()
	for want := uint64(1); want <= 3; want++ {
		soon <- struct{}{}
		if got := <-committed; got != want {
			t.Fatalf("checkpoint %d after asking, want %d", got, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
