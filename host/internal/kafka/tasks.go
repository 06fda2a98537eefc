package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-stream/weir/host/internal/task"
)

// A pipeline with keyed state shares its consumer group with its other
// instances by task: a task is one partition of the input topic (or, for
// a pipeline that repartitions, of its repartition topic, the input's
// partitions then holding no state), and owns the state of the record
// keys that Kafka's default partitioner places there (package task), with
// the changelog partition of the same number.
// The instance that the group assigns a partition runs its task. A move
// that takes a task from an instance ends that instance's run with
// ErrTasksChanged: the run is rolled back to its last checkpoint and built
// again for the tasks it now owns, restoring those new to it from their
// changelog partitions, while its Source keeps its place in the group.
// At least once, the group's rebalances proceed only at checkpoints
// (SetCheckpointNow), so that last checkpoint is where the run was. A
// move that only gives it tasks lets the run go on with its own while the
// new ones' state catches up in the background (SetCatchUp), their
// partitions waiting; then, or at once without a catch-up, it stops the
// run at a final checkpoint when SetStop gave a way to (at least once),
// and otherwise ends it with ErrTasksChanged.

// ErrTasksChanged ends a run whose tasks the consumer group moved: it
// gained or lost input partitions since it began. The run must roll back
// to its last checkpoint and start again for the tasks it owns now.
var ErrTasksChanged = errors.New("kafka: the consumer group moved tasks to or from this instance")

// Tasks is the set of tasks an instance owns, shared between its Kafka
// Source, which moves it from the group's rebalance callbacks, and its
// checkpoints, which hold it while they write, so that once a callback
// has returned no checkpoint of the run writes for a task the group took
// away. Its methods are safe for concurrent use; it lives as long as the
// Source.
type Tasks struct {
	// write is held by a checkpoint's writes and taken by moveTo, at
	// least once; exactly once, a checkpoint's writes are in a
	// transaction that a rebalance aborts (KIP-447), and franz-go runs
	// the revoke callback holding a lock that the commit takes, so
	// moveTo must not wait for it.
	write sync.Mutex
	exact bool
	mu    sync.Mutex // guards the rest
	owned []int32    // sorted partitions of the tasks' topic
	begun []int32    // owned when the run began
	// inputs and begunInputs are the same for the partitions of the
	// other topics the source reads (a pipeline's input, when its tasks
	// are a repartition topic's partitions): they hold no state, but a
	// move of one ends the run as a move of a task does.
	inputs, begunInputs []int32
	moved               bool   // owned or inputs changed since Begin
	lost                bool   // a task or input of the run's is no longer owned
	count               int    // the tasks in all: the changelog's partitions
	stop                func() // ends the run as a stop does, when it only gained tasks
	warm                []int32
	warmups             []int32               // tasks warmed up to take over (warmupTasks)
	probe               func(warmups []int32) // asks the group to rebalance
	// catchUp, when set (SetCatchUp), is told of tasks the group gave
	// the run, which then goes on while their state is brought up to
	// date in the background; catching is set from then until CaughtUp.
	catchUp  func()
	catching bool
	wake     func() // wakes the source's Run, which ends the run (setWake)
	// checkpointNow, when set (SetCheckpointNow), starts a checkpoint at
	// once: the source then lets a rebalance proceed only at a
	// checkpoint (see source_rebalance.go); awaiting is set while the
	// run polls nothing until the checkpoint asked for (askCheckpoint).
	checkpointNow func()
	awaiting      atomic.Bool
}

// SetWarm records the tasks not owned whose state the instance's store
// keeps a warm copy of (its standby replicas and warm-ups): the group's
// balancer places tasks that lost their owner on such copies where it
// can, and moves tasks to them (taskBalancer). When a task the instance
// warms up to take over is warm and was not before, it asks the group to
// rebalance (a probing rebalance), so that the task moves.
func (t *Tasks) SetWarm(tasks []int32) {
	t.mu.Lock()
	before := t.warm
	t.warm = slices.Sorted(slices.Values(tasks))
	probe := t.probe
	ready := slices.ContainsFunc(t.warmups, func(p int32) bool { return slices.Contains(t.warm, p) && !slices.Contains(before, p) })
	warmups := slices.Clone(t.warmups)
	t.mu.Unlock()
	if ready && probe != nil {
		probe(warmups)
	}
}

// setWarmups records the tasks the instance warms up to take over
// (warmupTasks).
func (t *Tasks) setWarmups(tasks []int32) {
	t.mu.Lock()
	t.warmups = tasks
	t.mu.Unlock()
}

// setProbe sets what asks the group to rebalance (SetWarm).
func (t *Tasks) setProbe(probe func(warmups []int32)) {
	t.mu.Lock()
	t.probe = probe
	t.mu.Unlock()
}

// Warm returns what SetWarm last recorded.
func (t *Tasks) Warm() []int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.warm)
}

// NewTasks returns an empty set, for a run delivering exactly once or
// not.
func NewTasks(exactlyOnce bool) *Tasks { return &Tasks{exact: exactlyOnce} }

// Begin starts a run: it returns the tasks owned now, and moves after it
// make the run's checkpoints fail (Hold).
func (t *Tasks) Begin() []int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.moved, t.lost, t.catching = false, false, false
	t.begun = slices.Clone(t.owned)
	t.begunInputs = slices.Clone(t.inputs)
	return t.begun
}

// SetStop sets what ends the current run as a stop does (its context's
// cancellation, which drains it and takes a final checkpoint), for a move
// that only gives the instance tasks: the run's own can still commit.
func (t *Tasks) SetStop(stop func()) {
	t.mu.Lock()
	t.stop = stop
	t.mu.Unlock()
}

// Lost reports whether the group took a task of the run's (Begun) away.
func (t *Tasks) Lost() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost
}

// stopRun ends the run as a stop does, if SetStop gave a way to.
func (t *Tasks) stopRun() bool {
	t.mu.Lock()
	stop := t.stop
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	return stop != nil
}

// Begun returns the tasks owned when the run began (Begin).
func (t *Tasks) Begun() []int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.begun
}

// OwnsKey returns whether a record key belongs to a task the run owns
// (Begun): the key's partition under Kafka's default partitioner, among
// Count tasks.
func (t *Tasks) OwnsKey() func(key []byte) bool {
	owned := t.ownedMask()
	return func(key []byte) bool { return owned[task.Of(key, len(owned))] }
}

// ownedMask returns, indexed by task, whether the run owns it (Begun),
// over Count tasks (at least one).
func (t *Tasks) ownedMask() []bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	owned := make([]bool, max(t.count, 1))
	for _, p := range t.begun {
		if int(p) < len(owned) {
			owned[p] = true
		}
	}
	return owned
}

// Hold locks the set for a checkpoint's writes and returns the run's
// tasks (Begun), or ok false when the group took one of them away since
// Begin (the set is then not held). Tasks the group gave the instance
// since are not the run's: their state is not loaded. A held set is
// released with Release.
func (t *Tasks) Hold() (owned []int32, ok bool) {
	if !t.exact {
		t.write.Lock()
	}
	t.mu.Lock()
	begun, lost := t.begun, t.lost
	t.mu.Unlock()
	if lost {
		t.Release()
		return nil, false
	}
	return begun, true
}

// Release releases a set that Hold returned ok.
func (t *Tasks) Release() {
	if !t.exact {
		t.write.Unlock()
	}
}

// Moved reports whether the group moved tasks since Begin.
func (t *Tasks) Moved() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.moved
}

// SetCount records how many tasks there are in all, the changelog's
// partitions, before the run reads.
func (t *Tasks) SetCount(n int) {
	t.mu.Lock()
	t.count = n
	t.mu.Unlock()
}

// Count returns how many tasks there are in all; 0 before SetCount.
func (t *Tasks) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// HoldsAll reports whether the run begun owns every one of the tasks
// (partitions of the tasks' topic) and of the inputs (partitions of the
// source's other topic): its instance alone reads the pipeline.
func (t *Tasks) HoldsAll(tasks, inputs int32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return holdsAll(t.begun, tasks) && holdsAll(t.begunInputs, inputs)
}

// holdsAll reports whether the sorted set ps is 0 to n-1.
func holdsAll(ps []int32, n int32) bool {
	if len(ps) != int(n) {
		return false
	}
	for i, p := range ps {
		if p != int32(i) {
			return false
		}
	}
	return true
}

// moveTo records that the instance owns held now, and inputs of the
// source's other topics, waiting, at least once, while a checkpoint holds
// the set, and reports whether that is a change.
func (t *Tasks) moveTo(held, inputs []int32) bool {
	slices.Sort(held)
	slices.Sort(inputs)
	if !t.exact {
		t.write.Lock()
		defer t.write.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Equal(held, t.owned) && slices.Equal(inputs, t.inputs) {
		return false
	}
	t.owned, t.inputs, t.moved = held, inputs, true
	for _, p := range t.begun {
		t.lost = t.lost || !slices.Contains(held, p)
	}
	for _, p := range t.begunInputs {
		t.lost = t.lost || !slices.Contains(inputs, p)
	}
	t.catching = !t.lost && t.catchUp != nil && len(t.pendingLocked()) > 0
	if t.catching {
		t.catchUp()
	}
	return true
}

// SetCatchUp sets what is told when the group gives the run tasks and
// takes none away: instead of ending at once, the run goes on with its
// own tasks while the new ones' state is brought up to date from their
// changelog partitions in the background (Pending), and ends, to start
// again with them, once CaughtUp is called; their input partitions wait
// meanwhile. catchUp must not block.
func (t *Tasks) SetCatchUp(catchUp func()) {
	t.mu.Lock()
	t.catchUp = catchUp
	t.mu.Unlock()
}

// Pending returns the tasks the group gave the instance since the run
// began, while the run catches up with them (SetCatchUp), sorted; nil
// otherwise, and for a nil set (a run not sharing its group by task).
func (t *Tasks) Pending() []int32 {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.catching {
		return nil
	}
	return t.pendingLocked()
}

// pendingLocked returns the tasks owned and not the run's. Call with mu
// held.
func (t *Tasks) pendingLocked() []int32 {
	var out []int32
	for _, p := range t.owned {
		if !slices.Contains(t.begun, p) {
			out = append(out, p)
		}
	}
	return out
}

// catchingUp reports whether the run goes on while it catches up with
// tasks it was given (SetCatchUp).
func (t *Tasks) catchingUp() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.catching
}

// CaughtUp ends the catching up with tasks the run was given
// (SetCatchUp), their state now up to date: the run ends, as for any
// move, and the next takes them on, replaying only what their changelog
// partitions gained since.
func (t *Tasks) CaughtUp() {
	t.mu.Lock()
	was := t.catching
	t.catching = false
	wake := t.wake
	t.mu.Unlock()
	if was && wake != nil {
		wake()
	}
}

// runs reports whether the run began owning a partition of the tasks'
// topic (task) or, when task is false, the input partition id.
func (t *Tasks) runs(task bool, id int32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if task {
		return slices.Contains(t.begun, id)
	}
	return slices.Contains(t.begunInputs, id)
}

// setWake sets what wakes the source's Run (CaughtUp).
func (t *Tasks) setWake(wake func()) {
	t.mu.Lock()
	t.wake = wake
	t.mu.Unlock()
}

// SetCheckpointNow sets how the run asks for a checkpoint at once (the
// engine's Checkpointing.Soon), or, with nil, that it cannot. While it
// can, the source lets the group's rebalances proceed only at
// checkpoints, so that a move of tasks finds everything the run read
// checkpointed and the run redoes nothing (checkpoint.Setup.Run sets it
// at least once only). now must not block.
func (t *Tasks) SetCheckpointNow(now func()) {
	t.mu.Lock()
	t.checkpointNow = now
	t.mu.Unlock()
}

// atCheckpoints reports whether rebalances wait for checkpoints
// (SetCheckpointNow).
func (t *Tasks) atCheckpoints() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checkpointNow != nil
}

// askCheckpoint starts a checkpoint at once for a rebalance that waits
// for one, the source polling nothing more until it has passed the
// checkpoint's barrier, and reports whether it could (SetCheckpointNow).
func (t *Tasks) askCheckpoint() bool {
	t.mu.Lock()
	now := t.checkpointNow
	t.mu.Unlock()
	if now != nil {
		t.awaiting.Store(true)
		now()
	}
	return now != nil
}

// checkpointed records that the run passed the barrier of the checkpoint
// it awaited.
func (t *Tasks) checkpointed() { t.awaiting.Store(false) }

// awaitingCheckpoint reports whether the run awaits a checkpoint
// (askCheckpoint).
func (t *Tasks) awaitingCheckpoint() bool { return t != nil && t.awaiting.Load() }

// StandbyTasks returns the tasks this member of the source's group keeps
// warm copies of with replicas standby replicas: the members, ordered by
// instance id (or member id), form a ring, and the j-th task of an owner
// has its standbys on the replicas members from the (1+j)-th after it,
// round the others, so that a member's tasks have their copies spread
// over the other members. It asks the group's coordinator. When a member
// dies, the group's balancer gives each of its tasks to a member holding
// its copy unless that member has its balanced share already
// (placeTasks); a task that lands elsewhere is replayed from its whole
// changelog partition.
//
// It adds the tasks the member warms up (warmupTasks): those a balanced
// group would give it, which move to it once their copies are warm.
func (s *Source) StandbyTasks(ctx context.Context, replicas int) ([]int32, error) {
	memberID, _ := s.cl.GroupMetadata()
	ms, err := s.groupMembers(ctx)
	if err != nil {
		return nil, err
	}
	warmups := warmupTasks(ms, memberID)
	s.tasks.setWarmups(warmups)
	out := append(standbyTasks(ms, memberID, replicas), warmups...)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// TaskOwner is the member of a group sharing by task that owns a task.
type TaskOwner struct {
	InstanceID string // its static member id, or ""
	ClientID   string
	Host       string
}

// TaskOwner asks the group's coordinator which member owns task (the
// partition of the source's topic); ok is false when none does (the group
// is rebalancing).
func (s *Source) TaskOwner(ctx context.Context, task int32) (owner TaskOwner, ok bool, err error) {
	ms, err := s.groupMembers(ctx)
	if err != nil {
		return owner, false, err
	}
	for _, m := range ms {
		if slices.Contains(m.tasks, task) {
			return m.owner, true, nil
		}
	}
	return owner, false, nil
}

// groupMember is a member of a group sharing by task: its member id, the
// name it is ordered by (its instance id, or else its member id), who it
// is, and the tasks it owns (partitions of the tasks' topic).
type groupMember struct {
	id, name string
	owner    TaskOwner
	tasks    []int32
}

// groupMembers describes the source's group.
func (s *Source) groupMembers(ctx context.Context) ([]groupMember, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	gs, err := kadm.NewClient(s.cl).DescribeGroups(ctx, s.group)
	if err != nil {
		return nil, err
	}
	g, ok := gs[s.group]
	if !ok || g.Err != nil {
		return nil, fmt.Errorf("describing group %q: %v", s.group, g.Err)
	}
	var ms []groupMember
	for _, m := range g.Members {
		gm := groupMember{id: m.MemberID, name: m.MemberID, owner: TaskOwner{ClientID: m.ClientID, Host: m.ClientHost}}
		if m.InstanceID != nil {
			gm.name, gm.owner.InstanceID = *m.InstanceID, *m.InstanceID
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				if t.Topic == s.tasksTopic() {
					gm.tasks = append(gm.tasks, t.Partitions...)
				}
			}
		}
		ms = append(ms, gm)
	}
	return ms, nil
}

// standbyTasks computes StandbyTasks from the group's members.
func standbyTasks(members []groupMember, self string, replicas int) []int32 {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b groupMember) int { return strings.Compare(a.name, b.name) })
	me := slices.IndexFunc(ms, func(m groupMember) bool { return m.id == self })
	if me < 0 {
		return nil
	}
	others := len(ms) - 1
	replicas = min(replicas, others)
	var out []int32
	for i, m := range ms {
		ahead := (me - i + len(ms)) % len(ms) // how far this member is after the owner
		if ahead == 0 {
			continue
		}
		tasks := slices.Sorted(slices.Values(m.tasks))
		for j, t := range tasks {
			// The owner's j-th task has its copies on the members
			// 1+j, …, replicas+j after it (round the others), so that
			// the tasks of a member that dies are spread over the
			// others, which the balancer then gives them to
			// (placeTasks).
			if (ahead-1-j%others+others)%others < replicas {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}
