package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host/internal/engine"
)

var (
	_ engine.Snapshotter          = (*Source)(nil)
	_ engine.CheckpointListener   = (*Source)(nil)
	_ engine.WatermarkSnapshotter = (*Source)(nil)
)

// sourceSnapshot is a Source's checkpoint: per topic and partition, the
// offset of the next record to read.
type sourceSnapshot map[string]map[string]int64

// Snapshot implements engine.Snapshotter. It is called while Run is paused
// at a barrier, when every batch Run handed out is complete, so each
// partition's completed offset is where it is. Partitions of the restored
// checkpoint not read since keep their offsets.
func (s *Source) Snapshot() (json.RawMessage, error) { return s.snapshot(0) }

// snapshot is Snapshot of view i (source_views.go): the positions of its
// topics; the Source's own also holds the repartition topic's, and its
// upstream tables.
func (s *Source) snapshot(i int) (json.RawMessage, error) {
	snap := sourceSnapshot{}
	put := func(tp srcTP, off int64) {
		if s.viewOf(tp.topic) != i {
			return
		}
		if snap[tp.topic] == nil {
			snap[tp.topic] = map[string]int64{}
		}
		snap[tp.topic][strconv.Itoa(int(tp.partition))] = off
	}
	s.mu.Lock()
	for tp, off := range s.restore {
		put(tp, off)
	}
	for tp, p := range s.parts {
		if p.owned && p.commit.Offset >= 0 {
			put(tp, p.commit.Offset)
		}
	}
	if s.routeParts > 0 && i == 0 {
		s.inProcessTables()
	}
	if len(s.upstream) > 0 && i == 0 {
		if snap[s.repartition] == nil {
			snap[s.repartition] = map[string]int64{}
		}
		putUpstream(snap[s.repartition], s.upstream)
	}
	s.mu.Unlock()
	return json.Marshal(snap)
}

// Restore implements engine.Snapshotter: each partition resumes from the
// checkpoint's offset when first assigned, whatever the group committed.
//
// Exactly once, the group's offsets were committed in the same
// transaction as the checkpoint, and are where it resumes; so does a
// source that shares its group with other instances. Either way, the
// repartition topic's upstream watermarks come from the checkpoint.
func (s *Source) Restore(b json.RawMessage) error { return s.restoreView(0, b) }

// restoreView is Restore of view i (source_views.go): the first of the
// coming run's replaces what an earlier run restored, the others add to
// it, and once every view has restored, partitions may resume.
func (s *Source) restoreView(i int, b json.RawMessage) error {
	var snap sourceSnapshot
	if len(b) > 0 {
		if err := json.Unmarshal(b, &snap); err != nil {
			return fmt.Errorf("kafka source %q: checkpoint: %w", s.name, err)
		}
	}
	ups := map[int32]*upstreamTimes{}
	restore := make(map[srcTP]int64)
	for topic, parts := range snap {
		for p, off := range parts {
			if topic == s.repartition {
				if isUp, err := takeUpstream(ups, p, off); isUp {
					if err != nil {
						return fmt.Errorf("kafka source %q: checkpoint: %w", s.name, err)
					}
					continue
				}
			}
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil || off < 0 {
				return fmt.Errorf("kafka source %q: checkpoint: bad partition %q or offset %d of topic %q", s.name, p, off, topic)
			}
			restore[srcTP{topic, int32(n)}] = off
		}
	}
	if s.txn != nil || s.fromGroup {
		restore = nil
	}
	s.mu.Lock()
	if s.restoreFor != s.runs+1 {
		s.restoreFor, s.restoredViews = s.runs+1, 0
		s.restore, s.restoredUp = map[srcTP]int64{}, map[int32]*upstreamTimes{}
	}
	maps.Copy(s.restore, restore)
	maps.Copy(s.restoredUp, ups)
	s.restoredRun = true
	s.restoredViews++
	all := s.restoredViews == len(s.views)
	s.mu.Unlock()
	if all {
		s.restoreDone()
	}
	return nil
}

// CheckpointComplete implements engine.CheckpointListener: it commits the
// offsets the checkpoint recorded (the source is still paused at its
// barrier, so they are the completed offsets). A failed commit is logged,
// not fatal: the next checkpoint commits again, and a restart resumes from
// the checkpoint, not from the group's offsets. Once committed (exactly
// once, by the checkpoint's transaction), a run catching up with the
// repartition topic's tables learns whether it has (Route.CatchUp).
func (s *Source) CheckpointComplete(ctx context.Context, cp *engine.Checkpoint) error {
	s.tookCheckpoint.Store(true)
	s.purgeRepartition()
	if !s.checkpointed {
		return nil
	}
	if s.txn == nil {
		if err := s.commit(ctx, nil); err != nil {
			s.log.Warn("kafka source: committing offsets after a checkpoint", "group", s.group, "epoch", cp.Epoch, "error", err)
			return nil
		}
	}
	s.noteCaughtUp()
	return nil
}

// purgeRepartition deletes, at most every SourceConfig.RepartitionPurge,
// the records of the repartition topic's owned partitions before the
// offsets the checkpoint just made durable, in the background: the
// state after the repartition, and the upstream tables in the source's
// checkpoint, cover them, and every later restore of those tasks
// starts at or after them. A failure is logged; the next purge deletes
// up to its own offsets.
func (s *Source) purgeRepartition() {
	if s.repartition == "" || time.Since(s.lastPurge) < s.purgeEvery {
		return
	}
	s.lastPurge = time.Now()
	offs := kadm.Offsets{}
	s.mu.Lock()
	for tp, p := range s.parts {
		if tp.topic == s.repartition && p.owned && p.commit.Offset > 0 {
			offs.Add(kadm.Offset{Topic: tp.topic, Partition: tp.partition, At: p.commit.Offset, LeaderEpoch: -1})
		}
	}
	s.mu.Unlock()
	if len(offs) == 0 {
		return
	}
	s.bg.Go(func() {
		ctx, cancel := context.WithTimeout(s.bgCtx, srcCloseCommitTimeout)
		defer cancel()
		res, err := kadm.NewClient(s.cl).DeleteRecords(ctx, offs)
		if err == nil {
			err = res.Error()
		}
		if err != nil && s.bgCtx.Err() == nil {
			s.log.Warn("kafka source: deleting the repartition topic's read records failed; the next checkpoint tries again", "topic", s.repartition, "error", err)
		}
	})
}

// Txn returns the source's transaction in an exactly-once run, or nil.
func (s *Source) Txn() *Txn { return s.txn }

// adjustOffsets is the client's AdjustFetchOffsetsFn: partitions the
// restored checkpoint covers start at its offsets instead of the group's.
// It waits until the engine has restored the source, or started it
// without a checkpoint, since the group may be joined before either.
func (s *Source) adjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	select {
	case <-gate.open:
	case <-ctx.Done():
		return offsets, ctx.Err()
	}
	s.mu.Lock()
	restore := s.restore
	s.mu.Unlock()
	var moved map[string]map[int32]int64
	for topic, parts := range offsets {
		for p, at := range parts {
			off, ok := restore[srcTP{topic, p}]
			if !ok {
				if topic == s.repartition && at == s.resetOffset {
					// No commit yet: everything an upstream instance
					// wrote is still to be read, whatever start the
					// input has.
					parts[p] = kgo.NewOffset().AtStart()
				}
				continue
			}
			parts[p] = kgo.NewOffset().At(off).WithEpoch(-1)
			if moved == nil {
				moved = map[string]map[int32]int64{}
			}
			if moved[topic] == nil {
				moved[topic] = map[int32]int64{}
			}
			moved[topic][p] = off
		}
	}
	if moved != nil {
		s.log.Info("kafka source: resuming partitions from the checkpoint", "offsets", moved)
	}
	return offsets, nil
}

// restoreDone marks the source's restore as decided; adjustOffsets waits
// for it.
func (s *Source) restoreDone() {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	gate.once.Do(func() { close(gate.open) })
}

// restoreGate is opened once a run has decided where partitions resume.
type restoreGate struct {
	open chan struct{}
	once sync.Once
}

func newRestoreGate() *restoreGate { return &restoreGate{open: make(chan struct{})} }

// trackLag notes, for each partition a fetch brought records of, how far
// the last of them is from the partition's high watermark.
func (s *Source) trackLag(fs kgo.Fetches) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		last := p.Records[len(p.Records)-1].Offset
		s.mu.Lock()
		if s.lag == nil {
			s.lag = map[srcTP]int64{}
		}
		s.lag[srcTP{p.Topic, p.Partition}] = max(p.HighWatermark-last-1, 0)
		s.mu.Unlock()
	})
}

// Lag returns the consumer lag: the records after the last one polled,
// summed over the partitions the source owns, as of their last fetch. It
// is safe to call from any goroutine.
func (s *Source) Lag() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for tp, l := range s.lag {
		if p := s.parts[tp]; p != nil && p.owned {
			n += l
		}
	}
	return n
}

// AddTaskSnapshot returns the snapshot into (empty for none) with the
// offsets that from gives partition p, of topic or ("") of every topic,
// added: a Source
// sharing its group by task resumes each task where the last checkpoint
// written for it, by whichever instance owned it, left it.
func AddTaskSnapshot(into, from json.RawMessage, topic string, p int32) (json.RawMessage, error) {
	out, src := sourceSnapshot{}, sourceSnapshot{}
	if len(into) > 0 {
		if err := json.Unmarshal(into, &out); err != nil {
			return nil, fmt.Errorf("kafka source checkpoint: %w", err)
		}
	}
	if err := json.Unmarshal(from, &src); err != nil {
		return nil, fmt.Errorf("kafka source checkpoint: %w", err)
	}
	key := strconv.Itoa(int(p))
	for t, parts := range src {
		if topic != "" && t != topic {
			continue
		}
		for k, v := range parts {
			if k != key && !strings.HasPrefix(k, key+":") { // its offset, or its upstream watermarks
				continue
			}
			if out[t] == nil {
				out[t] = map[string]int64{}
			}
			out[t][k] = v
		}
	}
	return json.Marshal(out)
}

// SnapshotCovers reports whether a Source snapshot holds an offset for
// partition p of topic ("": of some topic), or its upstream tables.
func SnapshotCovers(snapshot json.RawMessage, topic string, p int32) bool {
	var snap sourceSnapshot
	if len(snapshot) == 0 || json.Unmarshal(snapshot, &snap) != nil {
		return false
	}
	key := strconv.Itoa(int(p))
	for t, parts := range snap {
		if topic != "" && t != topic {
			continue
		}
		if _, ok := parts[key]; ok {
			return true
		}
		// A partition of a repartition topic that a run routing in
		// process kept the upstream tables of (inProcessTables).
		if _, ok := parts[upstreamKey(p, "of")]; ok {
			return true
		}
	}
	return false
}
