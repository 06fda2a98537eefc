package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/state"
)

// Meta is the metadata the state store keeps with each checkpoint:
// the engine's checkpoint (source positions, event time) and, for runs
// with a changelog, the offset after the checkpoint's marker in each of
// the changelog's partitions, from where a restart replays what the store
// may have missed.
type Meta struct {
	Engine           json.RawMessage `json:"engine"`
	ChangelogOffsets []int64         `json:"changelog_offsets,omitempty"`
	// ChangelogNext is partition 0's offset, as stores written when
	// every changelog had one partition recorded it.
	ChangelogNext int64 `json:"changelog_next,omitempty"`
	// TaskMarkers are, by changelog partition, the checkpoints the
	// store's state of the tasks a run sharing its group by task does not
	// own stands at (standby copies, and tasks it owned before), for a
	// run that is given the task.
	TaskMarkers map[int32]json.RawMessage `json:"task_markers,omitempty"`
}

// Offsets returns, per changelog partition, the offset a replay starts
// from.
func (m Meta) Offsets() []int64 {
	if len(m.ChangelogOffsets) == 0 && m.ChangelogNext > 0 {
		return []int64{m.ChangelogNext}
	}
	return m.ChangelogOffsets
}

// Coordinator takes a run's checkpoints: the state store's, the
// changelog's and, in an exactly-once run, the Kafka transaction's, in an
// order that a crash at any point leaves recoverable (see RATIONALE.md).
// The engine calls Commit from one goroutine at a time.
type Coordinator struct {
	Store     state.Checkpointer
	Changelog Changelog // nil for runs without a Kafka source or keyed state
	Txn       Txn       // nil unless exactly once
	// ExactFiles makes each checkpoint record the lengths of the file
	// outputs, which a restart cuts them back to: exactly-once runs whose
	// input positions are the checkpoint's (see exactFiles).
	ExactFiles bool
	// SyncOutputs writes the run's file outputs to disk and, when exact
	// is set, records their lengths in cp: the engine's SyncOutputs.
	SyncOutputs func(cp *engine.Checkpoint, exact bool) error
	Logger      *slog.Logger // with the pipeline's name
	// Tasks, for a run sharing its group by task, is the set of tasks it
	// owns: each checkpoint writes only theirs, and fails with
	// kafka.ErrTasksChanged once the group moved tasks.
	Tasks *kafka.Tasks
	// offsets are, per changelog partition, where the store's state of
	// its task stands (Meta.ChangelogOffsets), kept from one checkpoint
	// to the next.
	offsets []int64
	// standbys, when the run keeps standby replicas, warms the copies of
	// the tasks it is a standby for; taskMarkers are their last markers
	// (Meta.TaskMarkers).
	standbys    *standbys
	taskMarkers map[int32]json.RawMessage
	// takeover, for a run sharing its group by task, catches up with the
	// tasks the group gives it (see takeover.go). mu guards offsets,
	// taskMarkers, caught and caughtUp against it; a checkpoint holds it
	// from its standby pass to the store's commit. caught counts the
	// changes it applied in the run's epoch since the last checkpoint
	// (with a store that cannot write into the committed checkpoint);
	// caughtUp says it finished (exactly once: the next checkpoint ends
	// the run).
	takeover *takeover
	mu       sync.Mutex
	caught   int
	caughtUp bool
	// soon, for a run sharing its group by task with checkpoints on an
	// interval, asks the engine for a checkpoint at once
	// (engine.Checkpointing.Soon): at least once for a rebalance that
	// waits for one (kafka.Tasks.SetCheckpointNow), exactly once for the
	// takeover.
	soon chan struct{}
	// OnCommit, when not nil, is told what each checkpoint wrote, once
	// it committed, on the goroutine calling Commit.
	OnCommit func(CommitStats)
}

// CommitStats is what one checkpoint wrote: the state writes since the
// checkpoint before (when the store counts them, as state.Badger does),
// and the changes it wrote to the changelog. It is a plain value.
type CommitStats struct {
	Epoch            uint64
	State            state.Written
	ChangelogRecords int64
	// Aborted is set when a rebalance aborted the epoch's transaction
	// (exactly once without keyed state): its records are read again
	// into the next one.
	Aborted bool
}

// writeCounter is a store that counts its writes (state.Badger).
type writeCounter interface{ TakeWritten() state.Written }

// Txn is the Kafka transaction of an exactly-once run (*kafka.Txn).
type Txn interface {
	Begin() error
	Commit(ctx context.Context) error
}

// Changelog is the topic a keyed-state run logs its store's changes and
// checkpoint markers to (*kafka.Changelog).
type Changelog interface {
	Write(ctx context.Context, each func(yield func(key, value []byte, deleted bool) error) error, meta []byte, owned []int32) (next []int64, skipped int, err error)
}

// Setup is what a run's checkpoints are set up from.
type Setup struct {
	Config   *config.Pipeline
	Store    state.Store
	Logger   *slog.Logger // with the pipeline's name
	Kafka    kafka.ClientConfig
	Txn      *kafka.Txn // nil unless exactly once
	KafkaRun bool       // a source reads Kafka
	Keyed    bool       // an operator keeps keyed state
	// SyncOutputs is the run's engine's SyncOutputs.
	SyncOutputs func(cp *engine.Checkpoint, exact bool) error
	// OnRestore, when not nil, is told how far the state's restore from
	// the changelog is as it goes (not a standby's catching up), from the
	// goroutine calling Run.
	OnRestore func(kafka.ReplayProgress)
	// OnCommit, when not nil, is told what each checkpoint wrote, after
	// it committed (Coordinator.OnCommit).
	OnCommit func(CommitStats)
	// Tasks, when not nil, makes the run share its consumer group by
	// task (see tasks.go): it restores and writes only the changelog
	// partitions of the tasks it owns.
	Tasks *kafka.Tasks
	// TasksTopic, with Tasks, is the topic whose partitions are the tasks
	// when they are not the input's (a repartition topic); the changelog
	// gets as many partitions as it has.
	TasksTopic string
	// Resumed: the run continues in process after one the group's moving
	// of tasks ended, with the same transactional producer, which is not
	// fenced again.
	Resumed bool
	// StandbyTasks, for a run sharing its group by task, returns the
	// tasks it keeps warm copies of now: its standby replicas'
	// (checkpoints.standby_replicas), and those it warms up to take
	// over.
	StandbyTasks func(context.Context) ([]int32, error)
	// Preload, if set, is called when the tasks a run was given have
	// caught up with their changelog partitions, before the run ends to
	// start again with them: it may make their operators' state ahead of
	// the next run (engine.Kept.Preload) while the run goes on. The state
	// of those tasks does not change until the next run's set-up, which
	// calls Replayed if it changes any.
	Preload func(ctx context.Context, tasks []int32) error
	// Replayed, if set, is called when Run replayed changes into the store.
	Replayed func()
}

// Run prepares a run's checkpoints, once its sources exist:
// it fences a crashed predecessor's transaction, brings the store to the
// last checkpoint (its own, or a newer one in the changelog), and returns
// the engine's settings. It returns nil when the pipeline takes no
// checkpoints. close releases the changelog's client.
func (su Setup) Run(ctx context.Context) (_ *engine.Checkpointing, close func(), err error) {
	c := &su.Config.Checkpoints
	cc, txn := su.Kafka, su.Txn
	close = func() {}
	if !c.Enabled {
		return nil, close, nil
	}
	cs, ok := su.Store.(state.Checkpointer)
	if !ok {
		return nil, close, fmt.Errorf("%s: checkpoints: the state store (%T) cannot take checkpoints", c.Pos, su.Store)
	}
	ck := &Coordinator{Store: cs, SyncOutputs: su.SyncOutputs, Logger: su.Logger, OnCommit: su.OnCommit}
	if txn != nil {
		ck.Txn = txn
	}
	if ck.ExactFiles, err = su.exactFiles(); err != nil {
		return nil, close, err
	}
	if txn != nil && !su.Resumed {
		if err := txn.Fence(ctx); err != nil {
			return nil, close, err
		}
		su.Logger.Debug("kafka: fenced earlier instances", "transactional_id", txn.ID())
	}
	meta, err := su.lastCheckpoint(cs)
	if err != nil {
		return nil, close, err
	}
	if su.KafkaRun && su.Keyed {
		// Without keyed state there is nothing to log, and the Kafka
		// sources resume from the group's offsets, which every
		// checkpoint commits (or its transaction, exactly once).
		cl, err := kafka.NewChangelog(cc, c.ChangelogTopic, txn, su.Logger)
		if err != nil {
			return nil, close, fmt.Errorf("%s: checkpoints: %w", c.Pos, err)
		}
		ck.Changelog, close = cl, cl.Close
		defer func() {
			if err != nil {
				close()
			}
		}()
		if err := cl.EnsureTopic(ctx, su.inputTopics()); err != nil {
			return nil, close, err
		}
		if err := meta.checkTasks(cl.Partitions(), c.ChangelogTopic); err != nil {
			return nil, close, fmt.Errorf("%s: checkpoints: %w", c.Pos, err)
		}
		start := time.Now()
		r := su.restorer(cs, su.OnRestore)
		var res kafka.ReplayResult
		if su.Tasks != nil {
			su.Tasks.SetCount(cl.Partitions())
			ck.Tasks = su.Tasks
			if su.StandbyTasks != nil {
				ck.standbys = &standbys{r: r, tasks: su.StandbyTasks, warmed: su.Tasks.SetWarm}
			}
			ck.takeover = newTakeover(ck, su.restorer(cs, su.OnRestore), su.Tasks)
			ck.takeover.preload = su.Preload
			res, err = r.replayTasks(ctx, &meta, su.Tasks.Begin())
			ck.taskMarkers = meta.TaskMarkers
		} else {
			res, err = r.replay(ctx, &meta)
		}
		if err != nil {
			return nil, close, err
		}
		ck.offsets = append(meta.Offsets(), make([]int64, max(cl.Partitions()-len(meta.Offsets()), 0))...)
		if res.Changes > 0 && su.Replayed != nil {
			su.Replayed()
		}
		if res.Changes > 0 || res.Meta() != nil {
			su.Logger.Info("state restored from the changelog",
				"changes", res.Changes, "changelog_offsets", res.Next, "took", time.Since(start))
		}
	}
	settings := &engine.Checkpointing{Interval: c.Interval, Commit: ck.Commit}
	if ck.Tasks != nil && c.Interval > 0 {
		ck.soon = make(chan struct{}, 1)
		settings.Soon = ck.soon
	}
	if ck.Tasks != nil && c.Interval > 0 && txn == nil {
		// At least once, rebalances wait for a checkpoint (see
		// kafka.Tasks.SetCheckpointNow). Exactly once they do not:
		// a transaction's commit waits for a heartbeat of the group
		// session, so a revocation held back by a commit delays the
		// member's rejoin past the other members' quick check for the
		// cooperative rebalance's second round, which then waits for
		// their next heartbeat, the commits of the rejoining member
		// stalling meanwhile (BenchmarkScaleOut: 3 of 12 runs of two
		// and three instances took 6.7-11.6 s against at most 4.0 s
		// without, with the source's 500 ms fetch wait).
		ck.Tasks.SetCheckpointNow(ck.checkpointSoon)
		closeChangelog := close
		close = func() {
			ck.Tasks.SetCheckpointNow(nil)
			closeChangelog()
		}
	}
	if tk := ck.takeover; tk != nil {
		tk.start()
		closeChangelog := close
		close = func() {
			tk.stop()
			closeChangelog()
		}
	}
	if len(meta.Engine) > 0 {
		cp, err := engine.UnmarshalCheckpoint(meta.Engine)
		if err != nil {
			return nil, close, fmt.Errorf("%s: the last checkpoint in %s is unreadable: %w", su.Config.State.At("dir"), su.Config.State.Dir, err)
		}
		settings.Restore = cp
		su.Logger.Info("resuming from a checkpoint", "epoch", cp.Epoch, "watermark", cp.Watermark)
	}
	if txn != nil && !(su.Resumed && txn.Open()) {
		// A run resumed after one that stopped for gaining tasks has
		// the transaction its final checkpoint began.
		if err := txn.Begin(); err != nil {
			return nil, close, err
		}
	}
	return settings, close, nil
}

// checkTasks fails when the store's checkpoint was taken while the
// changelog had another number of partitions (tasks) than parts: a key's
// changes go to its task's partition, so they would now be spread over
// partitions that no replay can order.
func (m Meta) checkTasks(parts int, topic string) error {
	if n := len(m.Offsets()); n > 0 && n != parts {
		return fmt.Errorf("the state's last checkpoint was taken when changelog topic %q had %d partitions, and it has %d now; %s",
			topic, n, parts, kafka.ChangelogPartitionsFixed)
	}
	return nil
}

// restorer returns the run's restorer, reporting to progress.
func (su Setup) restorer(cs state.Checkpointer, progress func(kafka.ReplayProgress)) restorer {
	return restorer{store: su.Store, cs: cs, cc: su.Kafka, topic: su.Config.Checkpoints.ChangelogTopic, tasksTopic: su.TasksTopic,
		exactlyOnce: su.Config.Checkpoints.Delivery == config.ExactlyOnce, progress: progress, log: su.Logger}
}

// inputTopics are the topics the Kafka sources name (not their patterns):
// the changelog gets as many partitions as the largest has.
func (su Setup) inputTopics() []string {
	if su.TasksTopic != "" {
		return []string{su.TasksTopic}
	}
	var topics []string
	for i := range su.Config.Sources {
		if s := &su.Config.Sources[i]; s.Type == config.SourceKafka {
			topics = append(topics, s.Topics...)
		}
	}
	return topics
}

// exactFiles reports whether the run's file outputs are exactly once: cut
// back, on restart, to the length the last checkpoint recorded. That needs
// exactly_once delivery and input positions that are the checkpoint's:
// not a Kafka run without keyed state, whose sources resume from the
// group's offsets, which its transaction commits before the store records
// the checkpoint, and which a rebalance rolls back in process. There a
// file sink is an error and a dead-letter file is appended to.
func (su Setup) exactFiles() (bool, error) {
	if su.Config.Checkpoints.Delivery != config.ExactlyOnce {
		return false, nil
	}
	if !su.KafkaRun || su.Keyed {
		return true, nil
	}
	for i := range su.Config.Sinks {
		if s := &su.Config.Sinks[i]; s.Type == config.SinkFile {
			return false, s.Errorf("", "exactly_once delivery to a file needs keyed state when the pipeline reads Kafka: "+
				"without it the input resumes from the consumer group's offsets, which the file cannot be cut back to; use a Kafka sink")
		}
	}
	return false, nil
}

// lastCheckpoint returns the metadata of the store's last committed
// checkpoint, after rolling back a checkpoint that was prepared and not
// committed (a crash between the two: if it did commit in Kafka, the
// changelog has it, and a replay brings it back).
func (su Setup) lastCheckpoint(cs state.Checkpointer) (Meta, error) {
	if b, ok := cs.(*state.Badger); ok {
		if prep, ok := b.Prepared(); ok {
			su.Logger.Info("state: rolling back a checkpoint that did not complete", "version", prep.Version)
			if err := b.Resolve(false); err != nil {
				return Meta{}, err
			}
		}
	}
	var meta Meta
	if last, ok := cs.Committed(); ok && len(last.Meta) > 0 {
		if err := json.Unmarshal(last.Meta, &meta); err != nil {
			return meta, fmt.Errorf("%s: the last checkpoint in %s is unreadable: %w", su.Config.State.At("dir"), su.Config.State.Dir, err)
		}
	}
	return meta, nil
}

// restorer applies a changelog to a store: the restore at a start and a
// standby's looks. It is a plain value, used by one goroutine at a time.
type restorer struct {
	store state.Store
	cs    state.Checkpointer
	cc    kafka.ClientConfig
	topic string
	// exactlyOnce: the changelog's checkpoints commit in Kafka
	// transactions, whose commit a reader may see reach one partition
	// before another; replay then waits for it to reach them all.
	exactlyOnce bool
	progress    func(kafka.ReplayProgress)   // nil for none
	only        []int32                      // the tasks of a run sharing its group by task, or nil for every one
	budget      time.Duration                // how long a pass may read (0: to the end); a standby's
	apply       func([]state.Mutation) error // applies a batch of changes (nil: the store's Apply)
	tasksTopic  string                       // the topic whose partitions those tasks are ("": the one input topic)
	log         *slog.Logger
}

// markerWait bounds how long replay waits for a checkpoint's commit to
// reach every changelog partition; the coordinator writes the commit
// markers within milliseconds.
const markerWait = 2 * time.Second

// replay applies the changelog topic after the store's last checkpoint
// (meta) to the store, and adopts the last checkpoint marker it finds in
// partition 0, which is newer than the store's, recording it as the
// store's checkpoint and in meta. A store that lost its directory replays
// everything. Exactly once, it adopts the marker only once every
// partition shows it (or markerWait has passed), reading on meanwhile, so
// that the state it records holds all of the checkpoint's changes.
func (r restorer) replay(ctx context.Context, meta *Meta) (kafka.ReplayResult, error) {
	var total kafka.ReplayResult // Markers: the last of each partition over the passes
	deadline := time.Now().Add(markerWait)
	for from := meta.Offsets(); ; from = total.Next {
		res, err := r.pass(ctx, from)
		if err != nil {
			return total, err
		}
		total.Changes += res.Changes
		if total.Next = res.Next; res.Next == nil {
			return total, nil // no changelog yet
		}
		total.Markers = lastMarkers(total.Markers, res.Markers)
		if total.Meta() == nil {
			return total, nil // nothing new
		}
		if !r.exactlyOnce || allAt(total.Markers, meta.Engine, total.Meta()) || time.Now().After(deadline) {
			break
		}
		r.log.Debug("changelog: waiting for the checkpoint's commit to reach every partition")
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return total, ctx.Err()
		}
	}
	if r.exactlyOnce && !allAt(total.Markers, meta.Engine, total.Meta()) {
		r.log.Warn("changelog: the last checkpoint's commit had not reached every partition; adopting it anyway", "waited", markerWait)
	}
	*meta = Meta{Engine: total.Meta(), ChangelogOffsets: total.Next}
	b, err := json.Marshal(meta)
	if err != nil {
		return total, err
	}
	if err := r.cs.Checkpoint(b); err != nil {
		return total, fmt.Errorf("checkpoints: recording the state restored from the changelog: %w", err)
	}
	return total, nil
}

// pass applies the changelog from from to its current end, or for
// r.budget.
func (r restorer) pass(ctx context.Context, from []int64) (kafka.ReplayResult, error) {
	var muts []state.Mutation
	apply := r.apply
	if apply == nil {
		apply = r.store.Apply
	}
	flush := func() error {
		err := apply(muts)
		clear(muts)
		muts = muts[:0]
		return err
	}
	res, err := kafka.ReplayFor(ctx, r.cc, r.topic, from, r.only, func(k, v []byte, deleted bool) error {
		muts = append(muts, state.Mutation{Key: k, Value: v, Delete: deleted})
		if len(muts) == 1024 {
			return flush()
		}
		return nil
	}, r.progress, r.log, r.budget)
	if err == nil {
		err = flush()
	}
	if err != nil {
		return res, fmt.Errorf("checkpoints: restoring state from the changelog: %w", err)
	}
	return res, nil
}

// lastMarkers updates last, per partition the last marker of the passes
// so far, with a pass's markers.
func lastMarkers(last, markers [][]byte) [][]byte {
	last = append(last, make([][]byte, max(len(markers)-len(last), 0))...)
	for p, m := range markers {
		if m != nil {
			last[p] = m
		}
	}
	return last
}

// allAt reports whether every partition's last marker is m; one without a
// marker in the passes is still at the store's own checkpoint, current,
// whose marker every partition had.
func allAt(last [][]byte, current, m []byte) bool {
	for _, s := range last {
		if s == nil {
			s = current
		}
		if !bytes.Equal(s, m) {
			return false
		}
	}
	return len(last) > 0
}

// keepMarker records m as the last marker of standby task p.
func (ck *Coordinator) keepMarker(p int32, m []byte) {
	if ck.taskMarkers == nil {
		ck.taskMarkers = map[int32]json.RawMessage{}
	}
	ck.taskMarkers[p] = m
}

// Commit is engine.Checkpointing.Commit. Without a changelog the store
// takes the checkpoint alone, after the Kafka transaction in an
// exactly-once run; a transaction a rebalance aborted is not an error
// there, since nothing but the outputs and offsets it held need undoing.
// With one, the store prepares it, the
// changelog gets the epoch's changes and the marker, then (exactly-once)
// the Kafka transaction commits outputs, changelog and input offsets
// together, and only then does the store commit, recording where the
// changelog stands. A crash after the prepare rolls the store back on
// restart, and the changelog replay brings it forward again if the
// transaction had committed.
func (ck *Coordinator) Commit(ctx context.Context, cp *engine.Checkpoint) error {
	stats := CommitStats{Epoch: cp.Epoch}
	if w, ok := ck.Store.(writeCounter); ok {
		stats.State = w.TakeWritten() // the run is quiesced: every write of the epoch is in
	}
	if err := ck.commit(ctx, cp, &stats); err != nil {
		return err
	}
	if ck.OnCommit != nil {
		ck.OnCommit(stats)
	}
	return nil
}

// commit takes the checkpoint, as Commit says, counting the changes it
// writes to the changelog in stats.
func (ck *Coordinator) commit(ctx context.Context, cp *engine.Checkpoint, stats *CommitStats) error {
	start := time.Now()
	// The file outputs are on disk before anything records the
	// checkpoint, and, exactly once, their lengths are in it.
	if ck.SyncOutputs != nil {
		if err := ck.SyncOutputs(cp, ck.ExactFiles); err != nil {
			return err
		}
	}
	em, err := cp.Marshal()
	if err != nil {
		return err
	}
	meta := Meta{Engine: em}
	b, _ := json.Marshal(meta)
	switch {
	case ck.Changelog == nil && ck.Txn == nil:
		if err := ck.Store.Checkpoint(b); err != nil {
			return err
		}
		ck.Logger.Debug("checkpoint", "epoch", cp.Epoch, "took", time.Since(start))
		return nil
	case ck.Changelog == nil:
		// Exactly once without keyed state: the transaction holds all
		// there is (outputs and input offsets), and the store only the
		// engine's checkpoint, after it.
		if err := ck.Txn.Commit(ctx); err != nil {
			if !errors.Is(err, kafka.ErrTxnAborted) {
				return err
			}
			// The group rebalanced during the transaction: its outputs
			// are aborted, and the source is back at the group's
			// offsets, so its records are read again into the next.
			ck.Logger.Info("checkpoint: the consumer group rebalanced, so the transaction was aborted; its records are processed again",
				"epoch", cp.Epoch)
			stats.Aborted = true
			return ck.Txn.Begin()
		}
		if err := ck.Store.Checkpoint(b); err != nil {
			return err
		}
		if err := ck.Txn.Begin(); err != nil {
			return err
		}
		ck.Logger.Debug("checkpoint", "epoch", cp.Epoch, "took", time.Since(start))
		return nil
	}
	var owned []int32
	if ck.Tasks != nil {
		var ok bool
		if owned, ok = ck.Tasks.Hold(); !ok {
			return fmt.Errorf("checkpoint: %w", kafka.ErrTasksChanged)
		}
		defer ck.Tasks.Release()
		if owned == nil {
			owned = []int32{}
		}
	}
	ck.mu.Lock()
	defer ck.mu.Unlock()
	warmed := ck.standbys.warm(ctx, ck.offsets, append(slices.Clone(owned), ck.Tasks.Pending()...), ck.keepMarker)
	warmed += ck.caught
	ck.caught = 0
	meta.TaskMarkers = ck.taskMarkers
	b, _ = json.Marshal(meta)
	if err := ck.Store.Prepare(b); err != nil {
		return err
	}
	changes := func(yield func(key, value []byte, deleted bool) error) error {
		return ck.Store.Changes(func(key, value []byte, deleted bool) error {
			stats.ChangelogRecords++
			return yield(key, value, deleted)
		})
	}
	next, skipped, err := ck.Changelog.Write(ctx, changes, em, owned)
	if err != nil {
		return err
	}
	stats.ChangelogRecords -= int64(skipped)
	if skipped > warmed { // the standby tasks' keys are the store's, not the run's
		ck.Logger.Warn("checkpoint: changes of keys whose tasks another instance owns were not written to the changelog", "changes", skipped)
	}
	if ck.Txn != nil {
		if err := ck.Txn.Commit(ctx); err != nil {
			if errors.Is(err, kafka.ErrTxnAborted) {
				return fmt.Errorf("%w; the pipeline must restart from its last checkpoint", err)
			}
			return err
		}
	}
	ck.offsets = append(ck.offsets, make([]int64, max(len(next)-len(ck.offsets), 0))...)
	for p, n := range next {
		if n >= 0 {
			ck.offsets[p] = n
		}
	}
	meta.ChangelogOffsets = slices.Clone(ck.offsets)
	b, _ = json.Marshal(meta)
	if err := ck.Store.Commit(b); err != nil {
		return err
	}
	if ck.Txn != nil {
		if err := ck.Txn.Begin(); err != nil {
			return err
		}
	}
	ck.Logger.Debug("checkpoint", "epoch", cp.Epoch, "changelog_offsets", next, "took", time.Since(start))
	if ck.caughtUp {
		// The tasks the run was given are current, and this checkpoint
		// recorded it: the run ends, and the next takes them on.
		ck.caughtUp = false
		ck.Tasks.CaughtUp()
	}
	return nil
}

// checkpointSoon asks the engine for a checkpoint at once; it does not
// block.
func (ck *Coordinator) checkpointSoon() {
	select {
	case ck.soon <- struct{}{}:
	default:
	}
}
