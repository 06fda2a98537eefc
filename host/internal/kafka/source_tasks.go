package kafka

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/host/internal/task"
)

// A Source sharing its group by task (SourceConfig.Tasks) keeps its client,
// and so its place in the group, across the runs of its pipeline: a move
// of tasks ends a Run (with ErrTasksChanged, or as a stop when it only
// gave tasks and Tasks.SetStop gave a way to), the pipeline is built
// again, and the next Run rewinds the partitions it still holds to where
// the checkpoint it restored had them.

// errTasksGained ends a Run, as a stop, whose instance the group only gave
// tasks (Tasks.SetStop).
var errTasksGained = errors.New("kafka: the consumer group gave this instance tasks")

// endTaskRun ends one Run of a source sharing its group by task: the next
// run decides anew where partitions resume, and may call Run again.
func (s *Source) endTaskRun() {
	s.mu.Lock()
	s.closeGateLocked()
	s.mu.Unlock()
	s.ran.Store(false)
}

// forgetStaleRestore begins a Run after the first: the offsets Restore
// gave, or none when this run restored no checkpoint. The last run's are
// kept until now: its final checkpoint, after its Run returned, records
// them for the partitions it did not read.
func (s *Source) forgetStaleRestore() {
	s.mu.Lock()
	if !s.restoredRun {
		s.restore, s.restoredUp = nil, nil
	}
	s.restoredRun = false
	s.mu.Unlock()
}

// closeGateLocked makes partitions assigned from now on wait for the next
// run's decision of where they resume (adjustOffsets), unless they
// already do. franz-go asks adjustOffsets right after the assignment
// callback, while the run that the move ends may still be draining, so a
// move closes the gate at once. Call with mu held.
func (s *Source) closeGateLocked() {
	select {
	case <-s.gate.open:
		s.gate = newRestoreGate()
	default: // closed already: adjustOffsets may be waiting on it
	}
}

// rewind begins a Run after the first: what the previous run polled was
// rolled back with its state, so the partitions still held start again
// from the restored checkpoint's offsets (at least once; exactly once, the
// transaction's abort has put them back to the group's offsets), or,
// without one, from the group's offset, or else from the first record
// polled since they were assigned; and they are announced to the new
// run's pipeline. It logs how many records the partitions it keeps will
// read again: those the last run handed out past the checkpoint.
func (s *Source) rewind() {
	defer s.resumeWaiting()
	s.mu.Lock()
	last := s.parts
	s.parts = make(map[srcTP]*srcPart)
	s.assigned = s.assigned[:0]
	for tp := range s.held {
		s.assigned = append(s.assigned, tp)
	}
	s.lag = nil
	held := slices.Clone(s.assigned)
	restore, first := s.restore, maps.Clone(s.firstPolled)
	s.mu.Unlock()
	committed := s.cl.CommittedOffsets()
	at := map[string]map[int32]kgo.EpochOffset{}
	var again int64
	for _, tp := range held {
		off, ok := restore[tp]
		if s.txn != nil {
			ok = false // the abort put the partitions back
		}
		if c, found := committed[tp.topic][tp.partition]; !ok && found {
			if s.txn != nil {
				again += readAgain(last[tp], c.Offset)
				continue
			}
			off, ok = c.Offset, true
		}
		if !ok {
			if off, ok = first[tp]; !ok {
				continue // nothing polled: it is where it started
			}
		}
		again += readAgain(last[tp], off)
		if at[tp.topic] == nil {
			at[tp.topic] = map[int32]kgo.EpochOffset{}
		}
		at[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	s.cl.SetOffsets(at)
	s.log.Info("kafka source: the run starts again from the last checkpoint", "group", s.group, "partitions", len(held), "read_again", again)
}

// readAgain returns how many records of a partition the last run handed
// out (p, nil when it read none) at or past offset from.
func readAgain(p *srcPart, from int64) int64 {
	if p == nil {
		return 0
	}
	next := p.commit.Offset
	if n := len(p.inflight); n > 0 {
		next = max(next, p.inflight[n-1].offset+1)
	}
	return max(next-from, 0)
}

// notePolled records, for a source sharing its group by task, the offset
// of the first record polled of each partition since it was assigned.
func (s *Source) notePolled(fs kgo.Fetches) {
	if s.tasks == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		tp := srcTP{p.Topic, p.Partition}
		if _, seen := s.firstPolled[tp]; seen || len(p.Records) == 0 {
			return
		}
		if _, held := s.held[tp]; !held {
			return
		}
		if s.firstPolled == nil {
			s.firstPolled = map[srcTP]int64{}
		}
		s.firstPolled[tp] = p.Records[0].Offset
	})
}

// moveTasks tells the source's Tasks which partitions it holds now, from a
// rebalance callback, and wakes Run, which ends with ErrTasksChanged
// before it hands out another record. It waits while a checkpoint writes.
func (s *Source) moveTasks() {
	if s.tasks == nil {
		return
	}
	s.mu.Lock()
	var held, inputs []int32
	for tp := range s.held {
		if tp.topic == s.tasksTopic() {
			held = append(held, tp.partition)
		} else {
			inputs = append(inputs, s.upstreamID(tp))
		}
	}
	s.mu.Unlock()
	if !s.tasks.moveTo(held, inputs) {
		return
	}
	catching := s.tasks.catchingUp()
	if catching {
		s.log.Info("kafka source: the consumer group gave this instance tasks; the run goes on with its own while their state catches up, "+
			"and their partitions wait", "group", s.group, "tasks", held, "new", s.tasks.Pending())
	} else {
		s.log.Info("kafka source: the consumer group moved tasks; the run rolls back to its last checkpoint and starts again for its tasks",
			"group", s.group, "tasks", held)
	}
	s.mu.Lock()
	s.closeGateLocked()
	if s.wake != nil && !catching {
		s.wake()
	}
	s.mu.Unlock()
}

// wakeRun wakes Run from its poll, to end the run (Tasks.CaughtUp).
func (s *Source) wakeRun() {
	s.mu.Lock()
	if s.wake != nil {
		s.wake()
	}
	s.mu.Unlock()
}

// theRuns reports whether the run began with partition tp (Tasks.runs):
// partitions the group gave the instance while the run catches up with
// their tasks wait for the next run.
func (s *Source) theRuns(tp srcTP) bool {
	if tp.topic == s.tasksTopic() {
		return s.tasks.runs(true, tp.partition)
	}
	return s.tasks.runs(false, s.upstreamID(tp))
}

// ownedTasks returns, for a source sharing its group by task among more
// than one task, which tasks the run owns, indexed by task; nil
// otherwise.
func (s *Source) ownedTasks() []bool {
	if s.tasks == nil || s.tasks.Count() <= 1 {
		return nil // one task: every key is this instance's while it reads
	}
	return s.tasks.ownedMask()
}

// tasksTopic is the topic whose partitions are the tasks: the
// repartition topic, when the source reads one, or else its one topic.
func (s *Source) tasksTopic() string {
	if s.repartition != "" {
		return s.repartition
	}
	if len(s.topics) == 1 {
		return s.topics[0]
	}
	return ""
}

// foreignTask returns, when kr's key belongs to a task this run does not
// own, why the record cannot be processed here; "" otherwise. Only the
// tasks' topic holds keyed state's records.
func (r *sourceRun) foreignTask(kr *kgo.Record) string {
	if r.owned == nil || kr.Topic != r.s.tasksTopic() {
		return ""
	}
	t := task.Of(kr.Key, len(r.owned))
	if r.owned[t] {
		return ""
	}
	if kr.Key == nil {
		return fmt.Sprintf("%s[%d]@%d: the record has no key: the state of unkeyed records (a window over the whole stream) is task %d's of %d, "+
			"which another instance of the pipeline owns; give the records keys, or run a single instance",
			kr.Topic, kr.Partition, kr.Offset, t, len(r.owned))
	}
	return fmt.Sprintf("%s[%d]@%d: the record key belongs to task %d of %d, which another instance of the pipeline owns: "+
		"the topic is not partitioned by record key as Kafka's default partitioner (murmur2) places keys, "+
		"so this record cannot reach its key's state; produce the topic by key, or run a single instance",
		kr.Topic, kr.Partition, kr.Offset, t, len(r.owned))
}

// A run catching up with tasks it was given does not read their
// partitions: they wait at the restore gate (adjustOffsets) until the
// next run. A gain made before the run's Run opened the gate lets the
// client fetch them anyway; their records are then held back, never
// handed out, the client is moved back to the first of them and the
// partitions are paused, until the next run rewinds and resumes them.

// heldBack is, during one poll of a run catching up with tasks, the
// first offset polled of each partition whose records it holds back.
type heldBack struct {
	s     *Source
	first map[string]map[int32]kgo.EpochOffset
	runs  map[srcTP]bool // by partition seen in the poll, whether the run began with it
}

// holding returns what holds records back in this poll, or nil when the
// run catches up with no tasks.
func (r *sourceRun) holding() *heldBack {
	if r.s.tasks == nil || !r.s.tasks.catchingUp() {
		return nil
	}
	return &heldBack{s: r.s, first: map[string]map[int32]kgo.EpochOffset{}, runs: map[srcTP]bool{}}
}

// skip reports whether kr is of a partition the run does not read (it
// did not begin with it), noting the first such record of each.
func (h *heldBack) skip(kr *kgo.Record) bool {
	tp := srcTP{kr.Topic, kr.Partition}
	runs, known := h.runs[tp]
	if !known {
		runs = h.s.theRuns(tp) // once a partition per poll, not under the Tasks lock per record
		h.runs[tp] = runs
	}
	if runs {
		return false
	}
	if h.first[kr.Topic] == nil {
		h.first[kr.Topic] = map[int32]kgo.EpochOffset{}
	}
	if _, ok := h.first[kr.Topic][kr.Partition]; !ok {
		h.first[kr.Topic][kr.Partition] = kgo.EpochOffset{Epoch: kr.LeaderEpoch, Offset: kr.Offset}
	}
	return true
}

// holdBack moves the client back to the first record held back of each
// partition and pauses them, for the next run (resumeWaiting); h may be
// nil.
func (r *sourceRun) holdBack(h *heldBack) {
	if h == nil || len(h.first) == 0 {
		return
	}
	s := r.s
	s.cl.SetOffsets(h.first)
	paused := map[string][]int32{}
	s.mu.Lock()
	if s.waiting == nil {
		s.waiting = map[string][]int32{}
	}
	for topic, parts := range h.first {
		for p := range parts {
			paused[topic] = append(paused[topic], p)
			s.waiting[topic] = append(s.waiting[topic], p)
		}
	}
	s.mu.Unlock()
	s.cl.PauseFetchPartitions(paused)
	s.log.Debug("kafka source: records of partitions the run catches up with were fetched; paused until the next run", "partitions", paused)
}

// resumeWaiting resumes the partitions holdBack paused, for a new run.
func (s *Source) resumeWaiting() {
	s.mu.Lock()
	waiting := s.waiting
	s.waiting = nil
	s.mu.Unlock()
	if len(waiting) > 0 {
		s.cl.ResumeFetchPartitions(waiting)
	}
}
