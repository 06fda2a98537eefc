package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Checkpointing makes a run take consistent checkpoints (see the package
// documentation, "Checkpoints"). Run only reads it, and it must not change
// while Run runs.
type Checkpointing struct {
	// Interval is the time between the end of one checkpoint and the start
	// of the next; 0 means checkpoints are taken only when the run ends.
	Interval time.Duration
	// Commit makes a checkpoint durable: the engine calls it with the
	// pipeline quiesced, from the dispatcher goroutine, one at a time. It
	// must call SyncOutputs before it makes anything durable. An error
	// fails the run. After it returns, sources that are
	// CheckpointListeners are told.
	Commit func(ctx context.Context, cp *Checkpoint) error
	// Restore is the checkpoint the run continues from, or nil.
	Restore *Checkpoint
	// Soon, when not nil, starts a checkpoint at once, not waiting for
	// Interval, each time it yields (unless one is under way); ignored
	// when Interval is 0.
	Soon <-chan struct{}
}

// Checkpoint is what a run records at a checkpoint, besides the operators'
// state (which is in their store): where each source is, and event time.
// The engine makes a new one for each checkpoint and does not change it
// once Commit has returned, so Commit and the CheckpointListeners may keep
// it; a Checkpoint to restore is only read.
type Checkpoint struct {
	// Epoch numbers checkpoints from 1 across restarts.
	Epoch uint64 `json:"epoch"`
	// Sources holds, by source index, a Snapshotter's snapshot, or, for a
	// Replayable source, the number of records and dead letters it had
	// handed out.
	Sources []SourceCheckpoint `json:"sources"`
	// Watermark is the last watermark every operator was given (with
	// Repartitions, every operator before the first).
	Watermark int64 `json:"watermark"`
	// Entries holds, by repartition, the last watermark every operator
	// after it was given.
	Entries []int64 `json:"entry_watermarks,omitempty"`
	// Times holds, by source index and then by repartition, the
	// event-time tracking the watermarks are computed from.
	Times []SourceTimeCheckpoint `json:"times"`
	// Outputs holds, when the run delivers exactly once, the length of
	// each file output at the checkpoint (see SyncOutputs): a run
	// continuing from it cuts the file back there and appends.
	Outputs []OutputCheckpoint `json:"outputs,omitempty"`
}

// OutputCheckpoint is how long a file output was at a checkpoint: the
// bytes written, and made durable, for the input the checkpoint covers.
// It is plain data, part of its Checkpoint.
type OutputCheckpoint struct {
	Sink       string `json:"sink,omitempty"`        // the sink's name
	DeadLetter bool   `json:"dead_letter,omitempty"` // or the dead-letter output
	Length     int64  `json:"length"`
}

// SourceCheckpoint is one source's position in a Checkpoint: plain data,
// part of its Checkpoint.
type SourceCheckpoint struct {
	Name     string          `json:"name"`
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	Records  int64           `json:"records,omitempty"`
}

// SourceTimeCheckpoint is one source's event-time tracking: plain data,
// part of its Checkpoint.
type SourceTimeCheckpoint struct {
	Held    int64           `json:"held"`
	MaxSeen int64           `json:"max_seen"`
	Parts   []PartitionTime `json:"parts,omitempty"`
}

// PartitionTime is the highest event time seen on one partition: plain
// data, part of its SourceTimeCheckpoint.
type PartitionTime struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Max       int64  `json:"max"`
}

// Marshal encodes cp.
func (cp *Checkpoint) Marshal() ([]byte, error) { return json.Marshal(cp) }

// UnmarshalCheckpoint decodes what Marshal encoded.
func UnmarshalCheckpoint(b []byte) (*Checkpoint, error) {
	cp := new(Checkpoint)
	if err := json.Unmarshal(b, cp); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return cp, nil
}

// Snapshotter is a source that can say where it is and resume there. The
// engine calls Snapshot only while the source is paused in Out.Barrier or
// after Run has returned; it calls Restore before Run.
type Snapshotter interface {
	Snapshot() (json.RawMessage, error)
	Restore(snapshot json.RawMessage) error
}

// WatermarkSnapshotter is a Snapshotter that may also keep how far its
// partitions were in event time: the engine calls SnapshotWatermarks just
// before each Snapshot, on the same goroutine, and parts, if the source
// calls it then, returns the watermark of every partition of the sources
// that has shown a record (as a RepartitionSink's Watermark gets them),
// which must not be changed.
type WatermarkSnapshotter interface {
	Snapshotter
	SnapshotWatermarks(parts func() []PartitionWatermark)
}

// Fit reshapes cp, taken with or without repartitions, for a run with
// repartitions of them, so that a pipeline may continue across a switch
// between routing a key_by through its topic and in process: without
// repartitions, the watermark becomes the least of the checkpoint's
// before and after them (the operators after one were given the one
// after it) and the repartitions' event time is dropped; with them, a
// checkpoint taken without gives the part after each repartition the
// watermark of the whole chain. It changes cp.
func (cp *Checkpoint) Fit(repartitions, sources int) {
	if repartitions == 0 {
		for _, wm := range cp.Entries {
			cp.Watermark = min(cp.Watermark, wm)
		}
		cp.Entries = nil
		if len(cp.Times) > sources {
			cp.Times = cp.Times[:sources]
		}
		return
	}
	if len(cp.Entries) == 0 {
		cp.Entries = slices.Repeat([]int64{cp.Watermark}, repartitions)
	}
}

// Replayable is a source that hands out the same records in the same order
// every time it runs (a file, a seeded generator): the engine resumes it by
// dropping as many records as it had handed out at the checkpoint. The
// engine asks before Run starts; the answer must hold for the source's
// life.
type Replayable interface {
	Replayable() bool
}

// CheckpointListener is a source told when a checkpoint is complete, as
// Flink's notifyCheckpointComplete: a Kafka source commits the group's
// offsets then. It is called from the dispatcher goroutine while the
// source may be running.
type CheckpointListener interface {
	CheckpointComplete(ctx context.Context, cp *Checkpoint) error
}

// Restorer is an operator whose in-memory state must be rebuilt from its
// store when a run continues from a checkpoint. The engine calls Restore
// once, before any Process, with the checkpoint's watermark and which
// record keys this instance owns. The instances of different workers
// restore at the same time, each on its own goroutine: what they share
// (the store, a config) they may only read, or must guard.
type Restorer interface {
	Restore(ctx context.Context, wm int64, owns func(key []byte) bool) error
}

// WatermarkResumer is a Restorer whose Restore takes nothing from wm but
// the watermark the instance goes on from. An instance restored ahead of
// its run (Kept.Preload), with NoWatermark, is given the run's watermark
// by ResumeWatermark before anything else: it then holds what Restore
// with that watermark would have made, and fires nothing for it. Being
// one also says that an instance may outlive the run it was made for,
// and so the context Step.New was given: a run split by task keeps such
// instances for the next (Tasks).
type WatermarkResumer interface {
	Restorer
	ResumeWatermark(wm int64)
}

// Forgetter is an operator that can drop from memory the keys owns
// rejects (given nil for the nil key), as an instance kept for the next
// run does for the tasks the group took from its instance: it fires
// nothing for them and leaves the store as it is, which keeps their state
// for whichever instance owns them next. Forget is called between runs.
type Forgetter interface {
	Forget(owns func(key []byte) bool)
}

// FileOutput is a sink or dead-letter output kept in a local file
// (NewFileSink, NewDeadLetterFile). It appends, and the file is positioned
// once per run, before anything is written to it: by Resume in a run that
// continues from a checkpoint, otherwise truncated as the run first writes,
// flushes or syncs. The engine calls Resume before the run starts, and Sync
// through SyncOutputs while the pipeline is quiesced; both are safe
// against the output's own goroutine.
type FileOutput interface {
	// Sync makes everything written so far durable (fsync) and returns
	// the file's length.
	Sync() (int64, error)
	// Resume positions the file for a run continuing from a checkpoint:
	// cut back to length, or, when length is negative (the checkpoint
	// recorded none), after its last complete line. A file shorter than
	// length is an error: it was truncated since.
	Resume(length int64) error
}

// SyncOutputs makes the run's file outputs (the FileOutput sinks and
// dead-letter output) durable, and, when exact, records their lengths in
// cp.Outputs, where a run continuing from cp cuts them back to (exactly
// once). It is for Checkpointing.Commit, which must call it before it
// makes cp durable, so that no checkpoint covers input whose results a
// crash could lose; the pipeline is quiesced then, so the lengths end
// after the last result of the input before the checkpoint.
func (p *Pipeline) SyncOutputs(cp *Checkpoint, exact bool) error {
	cp.Outputs = nil
	add := func(f FileOutput, oc OutputCheckpoint) error {
		n, err := f.Sync()
		if err != nil {
			return err
		}
		if exact {
			oc.Length = n
			cp.Outputs = append(cp.Outputs, oc)
		}
		return nil
	}
	for _, s := range p.Sinks {
		if f, ok := s.(FileOutput); ok {
			if err := add(f, OutputCheckpoint{Sink: s.Name()}); err != nil {
				return err
			}
		}
	}
	if f, ok := p.DeadLetter.(FileOutput); ok {
		return add(f, OutputCheckpoint{DeadLetter: true})
	}
	return nil
}

// restoreOutputs positions every file output for a run continuing from
// cp: at the length cp recorded for it, or, when it recorded none, after
// the file's last complete line.
func (p *Pipeline) restoreOutputs(cp *Checkpoint) error {
	length := func(sink string, dead bool) int64 {
		for _, o := range cp.Outputs {
			if o.DeadLetter == dead && o.Sink == sink {
				return o.Length
			}
		}
		return -1
	}
	for _, s := range p.Sinks {
		if f, ok := s.(FileOutput); ok {
			if err := f.Resume(length(s.Name(), false)); err != nil {
				return err
			}
		}
	}
	if f, ok := p.DeadLetter.(FileOutput); ok {
		return f.Resume(length("", true))
	}
	return nil
}

// Checkpointable reports whether every source can resume from a
// checkpoint, and names the first that cannot.
func Checkpointable(sources []Source) error {
	for _, s := range sources {
		if _, ok := s.(Snapshotter); ok {
			continue
		}
		if r, ok := s.(Replayable); ok && r.Replayable() {
			continue
		}
		return fmt.Errorf("source %q cannot resume from a checkpoint", s.Name())
	}
	return nil
}

// barrier coordinates the sources' part of a checkpoint. The dispatcher
// requests one; each source, at its next safe point (Out.Barrier), sends a
// marker batch after everything it handed out and waits until the
// checkpoint is done.
type barrier struct {
	requested atomic.Bool
	mu        sync.Mutex
	resume    chan struct{} // closed when the current checkpoint is done
	outs      []*Out
}

func newBarrier() *barrier { return &barrier{resume: make(chan struct{})} }

// request asks every source for a barrier, waking those waiting for input.
func (b *barrier) request() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requested.Store(true)
	for _, o := range b.outs {
		if o.pollCancel != nil {
			o.pollCancel()
			o.pollCancel = nil
		}
	}
}

// release lets the sources go on after a checkpoint.
func (b *barrier) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requested.Store(false)
	close(b.resume)
	b.resume = make(chan struct{})
}

// Barrier marks a safe point of the source: everything it handed out so
// far is a consistent prefix of its input, one it can say where it ends
// (Snapshotter) or replay up to. If a checkpoint is waiting for this
// source, Barrier sends the current batch and a barrier after it, and
// returns when the checkpoint is done. Otherwise it returns at once. A
// source that never calls Barrier holds checkpoints back until it ends.
func (o *Out) Barrier() error { return Barrier(o) }

// Barrier is Out.Barrier for a source that hands its records to several
// Outs of one run (a Kafka client read for several sources of the
// pipeline, each with its own Out): at a safe point of all of them, if a
// checkpoint is waiting, it sends each Out's current batch and a barrier
// after it, and returns when the checkpoint is done. The Outs must be of
// one run, and used by the caller's goroutine alone.
func Barrier(outs ...*Out) error {
	o := outs[0]
	if o.bar == nil || !o.bar.requested.Load() {
		return nil
	}
	for _, x := range outs {
		if err := x.Flush(); err != nil {
			return err
		}
	}
	o.bar.mu.Lock()
	resume := o.bar.resume
	o.bar.mu.Unlock()
	for _, x := range outs {
		if err := x.sendMarker(markerBarrier); err != nil {
			return err
		}
	}
	select {
	case <-resume:
		return nil
	case <-o.ctx.Done():
		return o.ctx.Err()
	}
}

// PollContext returns a context that is done when ctx is, or when a
// checkpoint wants this source to come to a barrier: a source waiting for
// input (a Kafka poll) waits on it, then calls Barrier.
func (o *Out) PollContext(ctx context.Context) context.Context {
	if o.bar == nil {
		return ctx
	}
	o.bar.mu.Lock()
	defer o.bar.mu.Unlock()
	pctx, cancel := context.WithCancel(ctx)
	if o.bar.requested.Load() {
		cancel()
	} else {
		if o.pollCancel != nil {
			o.pollCancel()
		}
		o.pollCancel = cancel
	}
	return pctx
}

// end sends the marker that tells the dispatcher the source has ended, so
// checkpoints no longer wait for it.
func (o *Out) end() {
	if o.bar != nil {
		o.sendMarker(markerEnd) // an error is the run failing: no checkpoint waits
	}
}

// sendMarker sends the dispatcher a batch that carries only marker m.
func (o *Out) sendMarker(m int) error {
	if err := o.take(); err != nil {
		return err
	}
	b := o.cur
	o.cur = nil
	b.marker = m
	select {
	case o.ch <- b:
		return nil
	case <-o.ctx.Done():
		o.pool.put(b)
		return o.ctx.Err()
	}
}

// Markers are batches that carry no records, only news from a source.
const (
	markerNone    = iota
	markerBarrier // the source is paused at a barrier
	markerEnd     // the source has ended
)

// busy counts the work in the pipeline that a checkpoint waits for: source
// batches and emitted batches not yet complete, and watermark-only pieces
// not yet handled. idle is signalled when it drops to zero.
type busy struct {
	n    atomic.Int64
	idle chan struct{}
}

func newBusy() *busy { return &busy{idle: make(chan struct{}, 1)} }

func (b *busy) add() { b.n.Add(1) }

func (b *busy) done() {
	if b.n.Add(-1) == 0 {
		select {
		case b.idle <- struct{}{}:
		default:
		}
	}
}

// wait returns once nothing is busy, or when ctx is done.
func (b *busy) wait(ctx context.Context) error {
	for b.n.Load() != 0 {
		select {
		case <-b.idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// snapshot records the event-time tracking of every source.
func (w *watermarks) snapshot() []SourceTimeCheckpoint {
	out := make([]SourceTimeCheckpoint, len(w.sources))
	for i, s := range w.sources {
		out[i] = SourceTimeCheckpoint{Held: s.held, MaxSeen: s.maxSeen}
		for k, p := range s.parts {
			out[i].Parts = append(out[i].Parts, PartitionTime{Topic: k.topic, Partition: k.partition, Max: p.max})
		}
	}
	return out
}

// restore continues event-time tracking from a checkpoint. Partitions
// count as seen now, so that idleness is measured from the restart.
func (w *watermarks) restore(times []SourceTimeCheckpoint) error {
	if len(times) != len(w.sources) && len(times) != w.nsrc {
		return fmt.Errorf("checkpoint has event time for %d sources and repartitions, the pipeline has %d", len(times), len(w.sources))
	}
	now := w.now()
	for i, t := range times {
		s := w.sources[i]
		s.held, s.maxSeen, s.lastSeen = t.Held, t.MaxSeen, now
		if s.et == nil {
			continue
		}
		for _, p := range t.Parts {
			s.parts[partKey{p.Topic, p.Partition}] = &partTime{max: p.Max, lastSeen: now}
		}
	}
	return nil
}

// restoreSources gives each source its position in cp, and each file
// output its own (restoreOutputs).
func (p *Pipeline) restoreSources(cp *Checkpoint, outs []*Out) error {
	if len(cp.Sources) != len(p.Sources) {
		return fmt.Errorf("checkpoint has %d sources, the pipeline has %d", len(cp.Sources), len(p.Sources))
	}
	for i, s := range p.Sources {
		sc := cp.Sources[i]
		if sc.Name != s.Name() {
			return fmt.Errorf("checkpoint source %d is %q, the pipeline's is %q", i, sc.Name, s.Name())
		}
		if sn, ok := s.(Snapshotter); ok {
			if err := sn.Restore(sc.Snapshot); err != nil {
				return fmt.Errorf("source %q: restoring: %w", s.Name(), err)
			}
			continue
		}
		outs[i].skip = sc.Records
		outs[i].count = 0
	}
	return p.restoreOutputs(cp)
}

// snapshotSources records where every source is, handing the partitions'
// watermarks (from wms, made once if asked for) to the sources that want
// them. The sources are paused at a barrier or have ended.
func (p *Pipeline) snapshotSources(outs []*Out, wms *watermarks) ([]SourceCheckpoint, error) {
	var parts *inputTimes
	partitions := func() []PartitionWatermark {
		if parts == nil {
			parts = wms.partitions(nil)
		}
		return parts.parts
	}
	scs := make([]SourceCheckpoint, len(p.Sources))
	for i, s := range p.Sources {
		scs[i].Name = s.Name()
		if ws, ok := s.(WatermarkSnapshotter); ok {
			ws.SnapshotWatermarks(partitions)
		}
		if sn, ok := s.(Snapshotter); ok {
			snap, err := sn.Snapshot()
			if err != nil {
				return nil, fmt.Errorf("source %q: snapshot: %w", s.Name(), err)
			}
			scs[i].Snapshot = snap
			continue
		}
		scs[i].Records = outs[i].handed
	}
	return scs, nil
}

// errNoCommit is returned for a Checkpointing without Commit.
var errNoCommit = errors.New("engine: checkpointing without a Commit function")
