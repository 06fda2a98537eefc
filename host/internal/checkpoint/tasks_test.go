package checkpoint

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/weir-stream/weir/host/internal/engine"
)

// taskCP builds an engine checkpoint of one Kafka source "in" on topic t
// whose partitions are at offsets (partition -> offset), with event time
// max per partition of 10× the offset, and watermark wm.
func taskCP(t *testing.T, epoch uint64, wm int64, offsets map[int32]int64) []byte {
	t.Helper()
	snap := map[string]map[string]int64{"t": {}}
	times := engine.SourceTimeCheckpoint{Held: wm + 5, MaxSeen: wm + 100}
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		snap["t"][itoa(p)] = offsets[p]
		times.Parts = append(times.Parts, engine.PartitionTime{Topic: "t", Partition: p, Max: offsets[p] * 10})
	}
	b, _ := json.Marshal(snap)
	cp := &engine.Checkpoint{Epoch: epoch, Watermark: wm, Sources: []engine.SourceCheckpoint{{Name: "in", Snapshot: b}},
		Times: []engine.SourceTimeCheckpoint{times}, Outputs: []engine.OutputCheckpoint{{Sink: "f", Length: 7}}}
	out, err := cp.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// TestTaskCheckpoint checks the checkpoint a run sharing its group by task
// continues from: each owned task from its own marker when the replay read
// one, else from the store's own checkpoint; tasks not owned dropped; the
// least watermark; and no watermark at all when a task has no checkpoint.
func TestTaskCheckpoint(t *testing.T) {
	own := taskCP(t, 9, 1000, map[int32]int64{0: 50, 1: 60, 2: 70})
	for _, tc := range []struct {
		name    string
		own     []byte
		markers map[int32][]byte
		owned   []int32
		want    map[int32]int64 // offsets of the result; nil: no checkpoint
		wm      int64
		epoch   uint64
	}{
		{name: "nothing to continue from", owned: []int32{0, 1}},
		{name: "own tasks, nothing new", own: own, owned: []int32{0, 1, 2},
			want: map[int32]int64{0: 50, 1: 60, 2: 70}, wm: 1000, epoch: 9},
		{name: "a task given up leaves", own: own, owned: []int32{0, 2},
			want: map[int32]int64{0: 50, 2: 70}, wm: 1000, epoch: 9},
		{name: "a task taken over comes from its marker", own: own, owned: []int32{0, 3},
			markers: map[int32][]byte{3: taskCP(t, 12, 800, map[int32]int64{3: 33, 4: 44})},
			want:    map[int32]int64{0: 50, 3: 33}, wm: 800, epoch: 12},
		{name: "a newer marker of an own task wins", own: own, owned: []int32{1},
			markers: map[int32][]byte{1: taskCP(t, 15, 1500, map[int32]int64{1: 90})},
			want:    map[int32]int64{1: 90}, wm: 1000, epoch: 15},
		{name: "a new instance takes its tasks' markers", owned: []int32{3, 4},
			markers: map[int32][]byte{3: taskCP(t, 12, 800, map[int32]int64{3: 33}), 4: taskCP(t, 11, 900, map[int32]int64{4: 44})},
			want:    map[int32]int64{3: 33, 4: 44}, wm: 800, epoch: 12},
		{name: "a task never checkpointed drops the watermark", own: own, owned: []int32{0, 5},
			want: map[int32]int64{0: 50}, wm: engine.NoWatermark, epoch: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			markers := make([][]byte, 6)
			for p, m := range tc.markers {
				markers[p] = m
			}
			b, err := taskCheckpoint(tc.own, markers, tc.owned, "")
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if b != nil {
					t.Fatalf("got checkpoint %s, want none", b)
				}
				return
			}
			cp, err := engine.UnmarshalCheckpoint(b)
			if err != nil {
				t.Fatal(err)
			}
			var snap map[string]map[string]int64
			if err := json.Unmarshal(cp.Sources[0].Snapshot, &snap); err != nil {
				t.Fatal(err)
			}
			got := map[int32]int64{}
			for p, off := range snap["t"] {
				n, _ := strconv.Atoi(p)
				got[int32(n)] = off
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("offsets %v, want %v", got, tc.want)
			}
			for _, pt := range cp.Times[0].Parts {
				if tc.want[pt.Partition]*10 != pt.Max {
					t.Errorf("partition %d's event time %d, want the one of the checkpoint its offset came from (%d)", pt.Partition, pt.Max, tc.want[pt.Partition]*10)
				}
			}
			if len(cp.Times[0].Parts) != len(tc.want) {
				t.Errorf("event time for %d partitions, want %d", len(cp.Times[0].Parts), len(tc.want))
			}
			if cp.Watermark != tc.wm || cp.Times[0].Held > tc.wm {
				t.Errorf("watermark %d held %d, want %d and no more", cp.Watermark, cp.Times[0].Held, tc.wm)
			}
			if cp.Epoch != tc.epoch {
				t.Errorf("epoch %d, want %d", cp.Epoch, tc.epoch)
			}
			if tc.own != nil && (len(cp.Outputs) != 1 || cp.Outputs[0].Length != 7) {
				t.Errorf("outputs %+v, want the store's own", cp.Outputs)
			}
		})
	}
}

// TestKeptMarkers checks what a run sharing its group by task keeps, for
// the tasks it does not own, of the checkpoints the store's state of them
// stands at: a marker kept before stays; a task the store's own
// checkpoint records (one owned until now) keeps that checkpoint; owned
// tasks and tasks the store knows nothing of keep none.
func TestKeptMarkers(t *testing.T) {
	own := taskCP(t, 9, 1000, map[int32]int64{0: 50, 1: 60})
	standby := taskCP(t, 7, 900, map[int32]int64{2: 20})
	for _, tc := range []struct {
		name  string
		meta  Meta
		owned []int32
		want  map[int32][]byte
	}{
		{name: "a fresh store keeps nothing", meta: Meta{ChangelogOffsets: make([]int64, 4)}, owned: []int32{0}},
		{name: "owned tasks keep nothing", meta: Meta{Engine: own, ChangelogOffsets: make([]int64, 4)}, owned: []int32{0, 1}},
		{name: "tasks given up keep the store's checkpoint", meta: Meta{Engine: own, ChangelogOffsets: make([]int64, 4)},
			owned: []int32{1}, want: map[int32][]byte{0: own}},
		{name: "a run owning nothing keeps every task's", meta: Meta{Engine: own, ChangelogOffsets: make([]int64, 4)},
			want: map[int32][]byte{0: own, 1: own}},
		{name: "a kept marker stays", meta: Meta{Engine: own, ChangelogOffsets: make([]int64, 4), TaskMarkers: map[int32]json.RawMessage{2: standby}},
			owned: []int32{0, 1}, want: map[int32][]byte{2: standby}},
		{name: "a kept marker of a task now owned goes", meta: Meta{Engine: own, ChangelogOffsets: make([]int64, 4), TaskMarkers: map[int32]json.RawMessage{2: standby}},
			owned: []int32{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keptMarkers(&tc.meta, tc.owned, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("kept markers for %v, want for %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tc.want)))
			}
			for p, m := range tc.want {
				if string(got[p]) != string(m) {
					t.Errorf("task %d kept %s, want %s", p, got[p], m)
				}
			}
		})
	}
}

// TestTaskCheckpointAcrossRouting checks the watermarks a run continues
// from when some of its tasks' checkpoints were taken routing the key_by
// in process (no watermark after the repartition: the whole chain's
// stands) and others through the topic (one after it, behind the one
// before): the watermark after the repartition is the least over both.
func TestTaskCheckpointAcrossRouting(t *testing.T) {
	withEntries := func(b []byte, entries ...int64) []byte {
		cp, err := engine.UnmarshalCheckpoint(b)
		if err != nil {
			t.Fatal(err)
		}
		cp.Entries = entries
		out, err := cp.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	inProcess := taskCP(t, 9, 1000, map[int32]int64{0: 50, 1: 60})
	for _, tc := range []struct {
		name    string
		own     []byte
		markers map[int32][]byte
		wm      int64
		entries []int64
	}{
		{name: "in process only", own: inProcess, wm: 1000},
		{name: "through the topic only", own: withEntries(inProcess, 700), wm: 1000, entries: []int64{700}},
		{name: "in process, a task through the topic behind", own: inProcess,
			markers: map[int32][]byte{1: withEntries(taskCP(t, 10, 1200, map[int32]int64{1: 70}), 600)}, wm: 1000, entries: []int64{600}},
		{name: "through the topic, a task in process behind", own: withEntries(inProcess, 900),
			markers: map[int32][]byte{1: taskCP(t, 10, 400, map[int32]int64{1: 70})}, wm: 400, entries: []int64{400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			markers := make([][]byte, 2)
			for p, m := range tc.markers {
				markers[p] = m
			}
			b, err := taskCheckpoint(tc.own, markers, []int32{0, 1}, "")
			if err != nil {
				t.Fatal(err)
			}
			cp, err := engine.UnmarshalCheckpoint(b)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Watermark != tc.wm || !slices.Equal(cp.Entries, tc.entries) {
				t.Errorf("watermark %d, after the repartition %v; want %d and %v", cp.Watermark, cp.Entries, tc.wm, tc.entries)
			}
		})
	}
}
