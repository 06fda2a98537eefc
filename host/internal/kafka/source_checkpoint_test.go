package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host/internal/engine"
)

// A checkpointed source commits the group's offsets only when a checkpoint
// completes, snapshots where it is, and resumes from a checkpoint's
// offsets whatever the group committed: behind them (a crash between the
// checkpoint and the commit), or ahead.
func TestSourceCheckpoints(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"events": 2})
	srcProduce(t, cc, srcJSONRecords("events", 0, 300)...)

	// A run checkpointing every 20ms.
	var cps []*engine.Checkpoint
	src := srcNewSource(t, cc, "g", "events", func(c *SourceConfig) { c.Checkpointed = true })
	sink := &srcSink{keep: true}
	run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: 16,
		Checkpointing: &engine.Checkpointing{Interval: 20 * time.Millisecond, Commit: func(_ context.Context, cp *engine.Checkpoint) error {
			cps = append(cps, cp)
			return nil
		}}})
	weirtest.PollUntil(t, 20*time.Second, "the records", func() bool { return sink.count.Load() >= 300 })
	if _, err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	last := cps[len(cps)-1]
	var snap map[string]map[string]int64
	if err := json.Unmarshal(last.Sources[0].Snapshot, &snap); err != nil {
		t.Fatal(err)
	}
	committed, ends := srcOffsets(t, cc, "g", "events")
	if fmt.Sprint(committed) != fmt.Sprint(ends) || snap["events"]["0"] != ends[0] || snap["events"]["1"] != ends[1] {
		t.Fatalf("final snapshot %v, committed %v; want both at the end offsets %v", snap, committed, ends)
	}

	srcProduce(t, cc, srcJSONRecords("events", 300, 100)...)
	for _, tc := range []struct {
		name string
		snap string // the checkpoint the run resumes from
	}{
		// Resume from the final checkpoint: only the new records.
		{name: "at the group's offsets", snap: string(last.Sources[0].Snapshot)},
		// The group committed more than this checkpoint holds: resume
		// from the checkpoint, reading again what came after it.
		{name: "behind the group", snap: `{"events":{"0":0,"1":0}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := srcNewSource(t, cc, "g", "events", func(c *SourceConfig) { c.Checkpointed = true })
			sink := &srcSink{keep: true}
			var restoreSnap map[string]map[string]int64
			json.Unmarshal([]byte(tc.snap), &restoreSnap)
			want := int64(0)
			for p, off := range restoreSnap["events"] {
				var n int
				fmt.Sscan(p, &n)
				_, ends := srcOffsets(t, cc, "g", "events")
				want += ends[int32(n)] - off
			}
			run := srcStart(t, &engine.Pipeline{Sources: []engine.Source{src}, Sinks: []engine.Sink{sink}, BatchSize: 16,
				Checkpointing: &engine.Checkpointing{Interval: time.Hour,
					Restore: &engine.Checkpoint{Epoch: 9, Sources: []engine.SourceCheckpoint{{Name: "in", Snapshot: json.RawMessage(tc.snap)}},
						Times: make([]engine.SourceTimeCheckpoint, 1)},
					Commit: func(context.Context, *engine.Checkpoint) error { return nil }}})
			weirtest.PollUntil(t, 20*time.Second, "the records", func() bool { return sink.count.Load() >= want })
			if _, err := run.stop(t); err != nil {
				t.Fatal(err)
			}
			if got := int64(len(sink.records())); got != want {
				t.Fatalf("read %d records, want %d", got, want)
			}
		})
	}
}
