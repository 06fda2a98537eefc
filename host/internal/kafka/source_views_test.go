package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// TestSourceViews reads two topics of one group through one client as two
// engine sources (SourceConfig.Others), checkpointing often: each record
// comes out of its own source, named after it and decoded by its format
// (auctions JSON, whose values that are not dead-lettered there; bids
// raw), each once and in partition order; every checkpoint's snapshots
// hold each source's own topic; the group's offsets reach both topics'
// ends. A second run, restored from the last checkpoint, reads only what
// was produced after it, in both topics, though its group has committed
// nothing.
func TestSourceViews(t *testing.T) {
	for _, batch := range []int{1, 7, 0} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			t.Parallel()
			_, cc := srcBroker(t, map[string]int32{"auctions": 3, "bids": 2})
			auctions, bids, bad := viewRecords(0, 900, 600)
			srcProduce(t, cc, append(auctions, bids...)...)
			cps := &viewCheckpoints{}
			sink := runViews(t, cc, "g", batch, cps, nil, len(auctions)-bad+len(bids), bad)
			checkViews(t, sink.records(), 0)
			for _, cp := range cps.all() {
				for i, want := range []string{"auctions", "bids"} {
					var snap sourceSnapshot
					if err := json.Unmarshal(cp.Sources[i].Snapshot, &snap); err != nil {
						t.Fatal(err)
					}
					for topic := range snap {
						if topic != want {
							t.Fatalf("checkpoint %d: source %d's snapshot holds topic %q", cp.Epoch, i, topic)
						}
					}
				}
			}
			for _, topic := range []string{"auctions", "bids"} {
				if committed, ends := srcOffsets(t, cc, "g", topic); fmt.Sprint(committed) != fmt.Sprint(ends) {
					t.Errorf("%s: committed %v, want the ends %v", topic, committed, ends)
				}
			}
			// More of both, then a run from the last checkpoint, in a
			// group that has committed nothing: both topics resume where
			// the checkpoint has them.
			auctions, bids, bad = viewRecords(10_000, 300, 200)
			srcProduce(t, cc, append(auctions, bids...)...)
			last := cps.last()
			sink = runViews(t, cc, "g2", batch, &viewCheckpoints{}, last, len(auctions)-bad+len(bids), bad)
			checkViews(t, sink.records(), 10_000)
		})
	}
}

// viewRecords returns n auctions (JSON, every 50th not JSON) and m bids
// (raw: their values are not JSON), numbered from first, and how many
// auctions are not JSON.
func viewRecords(first, n, m int) (auctions, bids []*kgo.Record, bad int) {
	for i := range n {
		v := []byte(`{"i":` + strconv.Itoa(first+i) + `,"name":"théière"}`)
		if i%50 == 49 {
			v, bad = []byte("not json "+strconv.Itoa(first+i)), bad+1
		}
		auctions = append(auctions, &kgo.Record{Topic: "auctions", Key: []byte("a" + strconv.Itoa(i%13)), Value: v})
	}
	for i := range m {
		bids = append(bids, &kgo.Record{Topic: "bids", Key: []byte("b" + strconv.Itoa(i%7)), Value: []byte("bid " + strconv.Itoa(first+i))})
	}
	return auctions, bids, bad
}

// runViews runs a pipeline of the two sources in group, from restore if
// not nil,
// until its sink has want records and dead letters, and returns the sink.
func runViews(t *testing.T, cc ClientConfig, group string, batch int, cps *viewCheckpoints, restore *engine.Checkpoint, want, dead int) *srcSink {
	t.Helper()
	src := srcNewSource(t, cc, group, "auctions", func(c *SourceConfig) {
		c.Name, c.Checkpointed = "auctions", true
		c.Others = []ViewConfig{{Name: "bids", Topics: []string{"bids"}, Format: FormatRaw}}
	})
	views := src.Views()
	if len(views) != 1 || views[0].Name() != "bids" {
		t.Fatalf("views %v", views)
	}
	sink := &srcSink{keep: true, async: true}
	var dlq weirtest.SyncBuffer
	p := &engine.Pipeline{Sources: []engine.Source{src, views[0]}, Sinks: []engine.Sink{sink}, BatchSize: batch,
		DeadLetter:    engine.NewDeadLetterWriter("buffer", &dlq, false),
		Checkpointing: &engine.Checkpointing{Interval: 20 * time.Millisecond, Commit: cps.commit, Restore: restore}}
	run := srcStart(t, p)
	weirtest.PollUntil(t, 60*time.Second, "every record", func() bool {
		select {
		case <-run.done:
			t.Fatalf("the pipeline ended: %v", run.err)
		default:
		}
		return sink.count.Load() >= int64(want)
	})
	sum, err := run.stop(t)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	src.Close()
	if sum.Sources[0].Out+sum.Sources[1].Out != int64(want) || sum.Sources[0].Dead != int64(dead) || sum.Sources[1].Dead != 0 {
		t.Errorf("sources read %+v, want %d records and %d dead letters of auctions", sum.Sources, want, dead)
	}
	for _, l := range dlq.Lines() {
		if !strings.Contains(l, `"source":"auctions"`) || !strings.Contains(l, "not JSON") {
			t.Errorf("dead letter %s", l)
		}
	}
	return sink
}

// checkViews checks records read by runViews: each from its source, once,
// numbered from first on, in order within its partition (a dead letter's
// offset skipped).
func checkViews(t *testing.T, recs []record.Record, first int) {
	t.Helper()
	seen := map[string]bool{}
	next := map[string]int64{}
	for _, r := range recs {
		want := map[string]string{"auctions": "auctions", "bids": "bids"}[r.Origin.Topic]
		if r.Origin.Source != want {
			t.Fatalf("a record of %s came out of source %q", r.Origin.Topic, r.Origin.Source)
		}
		id := string(r.Value)
		if seen[id] {
			t.Fatalf("%s delivered twice", id)
		}
		seen[id] = true
		tp := fmt.Sprintf("%s[%d]", r.Origin.Topic, r.Origin.Partition)
		if n, ok := next[tp]; ok && r.Origin.Offset < n {
			t.Fatalf("%s: offset %d after %d: out of order", tp, r.Origin.Offset, n-1)
		}
		next[tp] = r.Origin.Offset + 1
		var n int
		if _, err := fmt.Sscanf(id, "bid %d", &n); err != nil {
			var v struct{ I int }
			if json.Unmarshal(r.Value, &v) != nil {
				t.Fatalf("value %q", id)
			}
			n = v.I
		}
		if n < first {
			t.Fatalf("%s was read before the checkpoint the run resumed from", id)
		}
	}
}

// viewCheckpoints keeps the checkpoints a run commits.
type viewCheckpoints struct {
	mu  sync.Mutex
	cps []*engine.Checkpoint
}

func (v *viewCheckpoints) commit(_ context.Context, cp *engine.Checkpoint) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cps = append(v.cps, cp)
	return nil
}

func (v *viewCheckpoints) all() []*engine.Checkpoint {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cps
}

func (v *viewCheckpoints) last() *engine.Checkpoint {
	cps := v.all()
	return cps[len(cps)-1]
}

// TestSourceNamesRepartitionedRecords: a record read back from the
// repartition topic comes out of the source whose topic it was read from
// upstream, as its origin header says (kafka.Inputs numbers auctions[0..2]
// 0 to 2 and bids[0..1] 3 and 4), and with that source's format; one
// without an origin comes out of the Source's own.
func TestSourceNamesRepartitionedRecords(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"auctions": 3, "bids": 2, "rp": 2})
	origin := func(task int) []kgo.RecordHeader {
		return []kgo.RecordHeader{{Key: RepartitionOriginHeader, Value: []byte(strconv.Itoa(task) + ",5,0")}}
	}
	srcProduce(t, cc,
		&kgo.Record{Topic: "rp", Partition: 0, Value: []byte(`{"i":1}`), Headers: origin(0)},
		&kgo.Record{Topic: "rp", Partition: 1, Value: []byte("bid, raw"), Headers: origin(4)},
		&kgo.Record{Topic: "rp", Partition: 1, Value: []byte(`{"i":3}`), Headers: origin(2)},
		&kgo.Record{Topic: "rp", Partition: 0, Value: []byte(`{"i":4}`)},
	)
	src := srcNewSource(t, cc, "g", "auctions", func(c *SourceConfig) {
		c.Name, c.Repartition = "auctions", "rp"
		c.Others = []ViewConfig{{Name: "bids", Topics: []string{"bids"}, Format: FormatRaw}}
		c.Inputs = NewInputs(map[string]int32{"auctions": 3, "bids": 2})
	})
	sink := &srcSink{keep: true}
	var dlq weirtest.SyncBuffer
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src, src.Views()[0]}, Sinks: []engine.Sink{sink},
		DeadLetter: engine.NewDeadLetterWriter("buffer", &dlq, false)})
	weirtest.PollUntil(t, 20*time.Second, "the repartition topic's records", func() bool { return sink.count.Load() >= 4 })
	if _, err := run.stop(t); err != nil {
		t.Fatalf("Run: %v\n%s", err, dlq.String())
	}
	want := map[string]string{`{"i":1}`: "auctions", "bid, raw": "bids", `{"i":3}`: "auctions", `{"i":4}`: "auctions"}
	for _, r := range sink.records() {
		if want[string(r.Value)] != r.Origin.Source {
			t.Errorf("%s came out of source %q, want %q", r.Value, r.Origin.Source, want[string(r.Value)])
		}
		for _, h := range r.Headers {
			if h.Key == RepartitionOriginHeader {
				t.Errorf("%s kept the repartition's origin header", r.Value)
			}
		}
	}
}

// TestSourceViewsStoppedRun: a run stopped before its other sources lend
// their Outs (a stop that came while the run was being built) still
// takes its final checkpoint of what it restored: the repartition
// topic's upstream tables and the positions, not what an earlier run of
// the carried source had applied since.
func TestSourceViewsStoppedRun(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"auctions": 3, "bids": 2, "rp": 2})
	src := srcNewSource(t, cc, "g", "auctions", func(c *SourceConfig) {
		c.Name, c.Repartition, c.Checkpointed, c.Tasks = "auctions", "rp", true, NewTasks(false)
		c.Others = []ViewConfig{{Name: "bids", Topics: []string{"bids"}}}
		c.Inputs = NewInputs(map[string]int32{"auctions": 3, "bids": 2})
	})
	defer src.Close()
	restored := json.RawMessage(`{"auctions":{"0":10},"rp":{"0:of":5,"0:3":1000,"0:3.o":7,"0:3.i":0}}`)
	// An earlier run applied more of the topic than the checkpoint holds.
	src.upstream = map[int32]*upstreamTimes{0: {of: 5, wm: map[int32]int64{3: 2000}, seen: map[int32]originPos{3: {offset: 99}}}}
	for run := range 2 {
		if err := src.Restore(restored); err != nil {
			t.Fatal(err)
		}
		if err := src.Views()[0].Restore(json.RawMessage(`{"bids":{"1":4}}`)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := src.Run(ctx, nil); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		snap, err := src.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var got, want sourceSnapshot
		json.Unmarshal(snap, &got)
		json.Unmarshal(restored, &want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("run %d: snapshot %s, want %s", run, snap, restored)
		}
	}
}
