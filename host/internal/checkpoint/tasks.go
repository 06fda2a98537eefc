package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// A run sharing its consumer group by task (Setup.Tasks) restores and
// writes only its own tasks' changelog partitions. Each partition's last
// marker is the last checkpoint written for that task, by whichever
// instance owned it then, so the run continues each task from there:
// its state from the partition, its input offsets and event time from
// the marker's checkpoint. The store records, per partition, the offset
// its state for that task reflects; the partitions of tasks it does not
// own keep theirs, so a task that comes back replays only what its other
// owners wrote meanwhile.

// taskCheckpoint returns the engine checkpoint a run sharing its group by
// task continues from, given the store's own (nil if none), the markers
// the replay read (by partition) and the tasks the run owns: each owned
// task's input offsets and partition event time come from its marker, or
// from own when the replay read none. The watermark is the least of
// own's and the markers': a task taken over resumes from where its last
// owner's checkpoint was, and its records from there on must not be late
// for having been read by an instance further on. Partitions of tasks not
// owned leave the event-time tracking, so that they no longer hold the
// watermark back.
//
// topic is the topic whose partitions are the tasks, in the sources'
// positions and event time ("" for a run reading one topic): with a
// repartition, the repartition topic's, while the input topic's
// partitions, which hold no state, resume from the group's offsets.
func taskCheckpoint(own []byte, markers [][]byte, owned []int32, topic string) ([]byte, error) {
	var base *engine.Checkpoint
	if len(own) > 0 && string(own) != "null" {
		cp, err := engine.UnmarshalCheckpoint(own)
		if err != nil {
			return nil, err
		}
		base = cp
	}
	byTask := map[int32]*engine.Checkpoint{}
	for _, p := range owned {
		if int(p) >= len(markers) || markers[p] == nil {
			continue
		}
		cp, err := engine.UnmarshalCheckpoint(markers[p])
		if err != nil {
			return nil, fmt.Errorf("changelog partition %d: %w", p, err)
		}
		byTask[p] = cp
	}
	if base == nil && len(byTask) == 0 {
		return nil, nil
	}
	out := taskBase(base, byTask)
	for _, p := range owned {
		from := base
		if cp, ok := byTask[p]; ok {
			from = cp
		}
		if !covers(from, topic, p) {
			// No checkpoint was ever written for the task: its input
			// starts at the group's offsets, which may be before
			// anything this instance's watermark has passed.
			out.Watermark = engine.NoWatermark
			for i := range out.Entries {
				out.Entries[i] = engine.NoWatermark
			}
			continue
		}
		out.Epoch = max(out.Epoch, from.Epoch)
		if err := adoptTask(out, from, topic, p); err != nil {
			return nil, err
		}
	}
	for i := range out.Times {
		// A source's event time never goes back past what it held; it
		// holds no more than the watermark the run continues from.
		wm := out.Watermark
		if j := i - len(out.Sources); j >= 0 && j < len(out.Entries) {
			wm = out.Entries[j] // a repartition's
		}
		out.Times[i].Held = min(out.Times[i].Held, wm)
	}
	return out.Marshal()
}

// taskBase returns the checkpoint taskCheckpoint fills in: own's outputs,
// the least watermarks of own's and the tasks' (before and after each
// repartition), and the sources and their event-time tracking (own's, or
// else a task's) emptied of partitions.
func taskBase(own *engine.Checkpoint, byTask map[int32]*engine.Checkpoint) *engine.Checkpoint {
	var cps []*engine.Checkpoint
	if own != nil {
		cps = append(cps, own)
	}
	for _, p := range slices.Sorted(maps.Keys(byTask)) {
		cps = append(cps, byTask[p])
	}
	tmpl := cps[0]
	out := &engine.Checkpoint{Epoch: tmpl.Epoch, Watermark: tmpl.Watermark}
	n := 0
	for _, cp := range cps {
		out.Watermark = min(out.Watermark, cp.Watermark)
		n = max(n, len(cp.Entries))
	}
	out.Entries = make([]int64, n)
	for j := range out.Entries {
		out.Entries[j] = math.MaxInt64
		for _, cp := range cps {
			// A checkpoint taken while the key_by was routed in process
			// has no watermark after it: the whole chain's stands.
			wm := cp.Watermark
			if j < len(cp.Entries) {
				wm = cp.Entries[j]
			}
			out.Entries[j] = min(out.Entries[j], wm)
		}
	}
	if own != nil {
		out.Outputs = own.Outputs
	}
	for _, s := range tmpl.Sources {
		out.Sources = append(out.Sources, engine.SourceCheckpoint{Name: s.Name})
	}
	for _, t := range tmpl.Times {
		out.Times = append(out.Times, engine.SourceTimeCheckpoint{Held: t.Held, MaxSeen: t.MaxSeen})
	}
	return out
}

// covers reports whether cp (nil for none) records where a source was
// in partition p of topic ("": of any).
func covers(cp *engine.Checkpoint, topic string, p int32) bool {
	if cp == nil {
		return false
	}
	for _, t := range cp.Times {
		for _, pt := range t.Parts {
			if pt.Partition == p && (topic == "" || pt.Topic == topic) {
				return true
			}
		}
	}
	for _, s := range cp.Sources {
		if kafka.SnapshotCovers(s.Snapshot, topic, p) {
			return true
		}
	}
	return false
}

// adoptTask copies into out what from says of task p: the Kafka
// sources' offsets of partition p of topic ("": of any) and its
// event-time tracking. from nil (no checkpoint was ever written for the
// task) leaves p to the group's offsets.
func adoptTask(out, from *engine.Checkpoint, topic string, p int32) error {
	if from == nil {
		return nil
	}
	for i := range out.Sources {
		if i >= len(from.Sources) || from.Sources[i].Name != out.Sources[i].Name || len(from.Sources[i].Snapshot) == 0 {
			continue
		}
		merged, err := kafka.AddTaskSnapshot(out.Sources[i].Snapshot, from.Sources[i].Snapshot, topic, p)
		if err != nil {
			return err
		}
		out.Sources[i].Snapshot = merged
	}
	for i := range out.Times {
		if i >= len(from.Times) {
			continue
		}
		for _, pt := range from.Times[i].Parts {
			if pt.Partition == p && (topic == "" || pt.Topic == topic) {
				out.Times[i].Parts = append(out.Times[i].Parts, pt)
			}
		}
	}
	return nil
}

// keptMarkers returns the checkpoints the store's state of the tasks not
// owned stands at (nil if none), for a later run given one of them: the
// marker kept for it before (a standby copy, or a task given up earlier),
// or else the store's own checkpoint when that one records the task (a
// task this store owned until now). Without it a task given back to this
// instance would find its state here, nothing newer in its changelog
// partition and no checkpoint of its input: it would start from the
// group's offsets, which at least once may be older than the state, and
// count records twice.
func keptMarkers(meta *Meta, owned []int32, topic string) (map[int32]json.RawMessage, error) {
	kept := map[int32]json.RawMessage{}
	for p, m := range meta.TaskMarkers {
		if !slices.Contains(owned, p) {
			kept[p] = m
		}
	}
	if len(meta.Engine) > 0 && string(meta.Engine) != "null" {
		own, err := engine.UnmarshalCheckpoint(meta.Engine)
		if err != nil {
			return nil, err
		}
		for p := range int32(len(meta.Offsets())) {
			if _, ok := kept[p]; !ok && !slices.Contains(owned, p) && covers(own, topic, p) {
				kept[p] = meta.Engine
			}
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return kept, nil
}

// replayTasks is replay for a run sharing its group by task: it applies
// the changelog partitions of the tasks owned, each from where the
// store's state of that task stands, and records as the store's
// checkpoint the one taskCheckpoint makes of the markers it read.
func (r restorer) replayTasks(ctx context.Context, meta *Meta, owned []int32) (kafka.ReplayResult, error) {
	r.only = owned
	if r.only == nil {
		r.only = []int32{}
	}
	res, err := r.pass(ctx, meta.Offsets())
	if err != nil || res.Next == nil {
		return res, err // no changelog yet
	}
	markers := slices.Clone(res.Markers)
	for p, m := range meta.TaskMarkers {
		if slices.Contains(owned, p) && int(p) < len(markers) && markers[p] == nil {
			markers[p] = m // a copy kept while not owned, now the run's: its checkpoint
		}
	}
	kept, err := keptMarkers(meta, owned, r.tasksTopic)
	if err != nil {
		return res, fmt.Errorf("checkpoints: reading the store's checkpoint: %w", err)
	}
	eng, err := taskCheckpoint(meta.Engine, markers, owned, r.tasksTopic)
	if err != nil {
		return res, fmt.Errorf("checkpoints: restoring the tasks' checkpoints from the changelog: %w", err)
	}
	if eng == nil {
		// Nothing was ever checkpointed for these tasks: nothing to
		// record, and the run starts from the group's offsets.
		meta.ChangelogOffsets, meta.TaskMarkers = res.Next, kept
		return res, nil
	}
	*meta = Meta{Engine: eng, ChangelogOffsets: res.Next, TaskMarkers: kept}
	b, err := json.Marshal(meta)
	if err != nil {
		return res, err
	}
	if err := r.cs.Checkpoint(b); err != nil {
		return res, fmt.Errorf("checkpoints: recording the state restored from the changelog: %w", err)
	}
	r.log.Info("tasks restored from the changelog", "tasks", owned, "changes", res.Changes, "changelog_offsets", res.Next)
	return res, nil
}

// standbyEvery is how often a run sharing its group by task brings its
// standby tasks' copies up to date.
const standbyEvery = time.Second

// standbyBudget bounds a standby pass, which runs inside a checkpoint
// and so pauses the instance's own tasks: a copy far behind (a warm-up's
// first pass replays its whole partition) catches up a slice at a time,
// and is declared warm once a pass reaches the end.
const standbyBudget = 250 * time.Millisecond

// standbys keeps warm copies of the tasks a run is a standby for (Kafka
// Streams' standby replicas, per task): at most every standbyEvery, at a
// checkpoint, it applies what their changelog partitions gained since the
// store's copy, and the checkpoint records where each copy stands, so
// that the instance given one of those tasks replays only the tail. It is
// used by the checkpointing goroutine.
type standbys struct {
	r     restorer
	tasks func(context.Context) ([]int32, error) // the run's standby tasks now
	// warmed is told the standby tasks after each pass that brought
	// them up to date (kafka.Tasks.SetWarm: the group's balancer gives a
	// dead member's tasks to the holders of their copies).
	warmed func([]int32)
	last   time.Time
}

// warm applies the standby tasks' new changes to the store, moves their
// offsets on and keeps the last marker each showed, returning how many
// changes it applied. Failures are
// logged: the copies stay where they were, and the next pass tries again.
func (s *standbys) warm(ctx context.Context, offsets []int64, skip []int32, keep func(p int32, marker []byte)) int {
	if s == nil || time.Since(s.last) < standbyEvery {
		return 0
	}
	s.last = time.Now()
	tasks, err := s.tasks(ctx)
	if err != nil {
		s.r.log.Warn("standby tasks: asking the group who owns what failed; trying again", "error", err)
		return 0
	}
	tasks = slices.DeleteFunc(tasks, func(p int32) bool { return slices.Contains(skip, p) || int(p) >= len(offsets) })
	if len(tasks) == 0 {
		if s.warmed != nil {
			s.warmed(nil) // no copies: none to declare warm
		}
		return 0
	}
	r := s.r
	r.only, r.progress, r.budget = tasks, nil, standbyBudget
	res, err := r.pass(ctx, offsets)
	if err != nil {
		s.r.log.Warn("standby tasks: applying their changelog partitions failed; trying again", "tasks", tasks, "error", err)
		return 0
	}
	if s.warmed != nil {
		s.warmed(slices.DeleteFunc(slices.Clone(tasks), func(p int32) bool { return int(p) < len(res.Behind) && res.Behind[p] > 0 }))
	}
	for _, p := range tasks {
		if int(p) < len(res.Next) {
			offsets[p] = res.Next[p]
		}
		if int(p) < len(res.Markers) && res.Markers[p] != nil {
			keep(p, res.Markers[p])
		}
	}
	if res.Changes > 0 {
		s.r.log.Debug("standby tasks: applied their changelog partitions", "tasks", tasks, "changes", res.Changes)
	}
	return res.Changes
}
