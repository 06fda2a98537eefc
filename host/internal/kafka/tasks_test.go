package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/internal/task"
)

// TestTasksFence checks the set a run's checkpoints hold: a move of tasks
// after Begin fails the next Hold; at least once, a move waits for a
// checkpoint holding the set, so that none writes for a task once the
// rebalance callback has returned; exactly once it does not wait (the
// transaction fences the writes, and franz-go calls the callback holding
// a lock its commit takes).
func TestTasksFence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		exact bool
	}{{"at least once", false}, {"exactly once", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := NewTasks(tc.exact)
			ts.moveTo([]int32{3, 1}, nil)
			if got := ts.Begin(); fmt.Sprint(got) != "[1 3]" || ts.Moved() {
				t.Fatalf("Begin = %v, moved %v; want [1 3], not moved", got, ts.Moved())
			}
			owned, ok := ts.Hold()
			if !ok || fmt.Sprint(owned) != "[1 3]" {
				t.Fatalf("Hold = %v, %v", owned, ok)
			}
			if tc.exact {
				ts.moveTo([]int32{1}, nil) // would block the test if it waited
				ts.Release()
			} else {
				moved := make(chan bool)
				go func() { moved <- ts.moveTo([]int32{1}, nil) }()
				select {
				case <-moved:
					t.Fatal("a move of tasks did not wait for the checkpoint holding them")
				case <-time.After(50 * time.Millisecond):
				}
				ts.Release()
				<-moved
			}
			if !ts.Moved() {
				t.Fatal("not moved after a move")
			}
			if _, ok := ts.Hold(); ok {
				t.Fatal("Hold succeeded after the group moved tasks")
			}
			if ts.moveTo([]int32{1}, nil) {
				t.Error("the same tasks again counted as a move")
			}
			// A move that only gives tasks leaves the run's own to
			// commit: Hold returns them, not the new ones.
			ts.Begin()
			ts.moveTo([]int32{1, 2}, nil)
			if owned, ok := ts.Hold(); !ok || fmt.Sprint(owned) != "[1]" || ts.Lost() || !ts.Moved() {
				t.Fatalf("after gaining a task: Hold = %v, %v; lost %v, moved %v; want [1], true, not lost, moved", owned, ok, ts.Lost(), ts.Moved())
			}
			ts.Release()
		})
	}
}

// TestTasksInputs checks the input partitions of a run whose tasks are
// a repartition topic's: a move of one alone is a move, losing one is a
// loss (the run's checkpoints then fail), and gaining one is not.
func TestTasksInputs(t *testing.T) {
	ts := NewTasks(false)
	ts.moveTo([]int32{0, 1}, []int32{2, 3})
	ts.Begin()
	if !ts.moveTo([]int32{0, 1}, []int32{2, 3, 4}) || !ts.Moved() || ts.Lost() {
		t.Fatalf("gaining an input: moved %v, lost %v; want moved, not lost", ts.Moved(), ts.Lost())
	}
	if owned, ok := ts.Hold(); !ok || fmt.Sprint(owned) != "[0 1]" {
		t.Fatalf("Hold after gaining an input = %v, %v", owned, ok)
	}
	ts.Release()
	if !ts.moveTo([]int32{0, 1}, []int32{4}) || !ts.Lost() {
		t.Fatal("losing an input partition of the run is not a loss")
	}
	if _, ok := ts.Hold(); ok {
		t.Fatal("Hold succeeded after the run lost an input partition")
	}
}

// TestTasksOwnsKey checks that a run owns exactly the keys of its tasks,
// as Kafka's default partitioner places them.
func TestTasksOwnsKey(t *testing.T) {
	ts := NewTasks(false)
	ts.SetCount(12)
	ts.moveTo([]int32{0, 5, 11}, nil)
	ts.Begin()
	owns := ts.OwnsKey()
	for i := range 2000 {
		k := fmt.Appendf(nil, "key-%d-ü", i)
		p := task.Of(k, 12)
		if want := p == 0 || p == 5 || p == 11; owns(k) != want {
			t.Fatalf("key %q (task %d): owned %v, want %v", k, p, owns(k), want)
		}
	}
}

// TestStandbyTasks checks the ring standbys are placed on: members
// ordered by instance id, each task's standbys the replicas members after
// its owner, never the owner itself.
func TestStandbyTasks(t *testing.T) {
	ms := []groupMember{
		{id: "m-c", name: "c", tasks: []int32{2, 5}},
		{id: "m-a", name: "a", tasks: []int32{0, 3}},
		{id: "m-b", name: "b", tasks: []int32{1, 4}},
	}
	for _, tc := range []struct {
		name     string
		self     string
		replicas int
		want     []int32
	}{
		{"one replica: a's first task and c's second on b", "m-b", 1, []int32{0, 5}},
		{"one replica, round the ring: c's first task and b's second on a", "m-a", 1, []int32{2, 4}},
		{"two replicas: everything but its own", "m-a", 2, []int32{1, 2, 4, 5}},
		{"more replicas than members", "m-c", 5, []int32{0, 1, 3, 4}},
		{"not a member", "m-x", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := standbyTasks(ms, tc.self, tc.replicas); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("standby tasks %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTasksCatchUp checks the catching up with tasks a run is given:
// with a catch-up set, a move that only gives tasks is told to it and
// leaves the run going (Pending lists the new tasks, the source's
// partitions of them wait) until CaughtUp wakes the run; a move that
// takes one of the run's tasks ends the catching up; without a catch-up
// set, gains end the run as before.
func TestTasksCatchUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		catchUp  bool
		moves    [][]int32 // owned after each move, the run having begun with [0 1]
		catching bool
		pending  string
		told     int
	}{
		{name: "gained a task", catchUp: true, moves: [][]int32{{0, 1, 4}}, catching: true, pending: "[4]", told: 1},
		{name: "gained twice", catchUp: true, moves: [][]int32{{0, 1, 4}, {0, 1, 4, 2}}, catching: true, pending: "[2 4]", told: 2},
		{name: "gained then lost a new one", catchUp: true, moves: [][]int32{{0, 1, 4, 2}, {0, 1, 2}}, catching: true, pending: "[2]", told: 2},
		{name: "gained, then lost one of the run's", catchUp: true, moves: [][]int32{{0, 1, 4}, {0, 4}}, pending: "[]", told: 1},
		{name: "lost one of the run's", catchUp: true, moves: [][]int32{{1}}, pending: "[]"},
		{name: "no catch-up set", moves: [][]int32{{0, 1, 4}}, pending: "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := NewTasks(true)
			ts.moveTo([]int32{0, 1}, nil)
			told, woken := 0, 0
			if tc.catchUp {
				ts.SetCatchUp(func() { told++ })
			}
			ts.setWake(func() { woken++ })
			ts.Begin()
			for _, m := range tc.moves {
				ts.moveTo(m, nil)
			}
			if ts.catchingUp() != tc.catching || fmt.Sprint(ts.Pending()) != tc.pending || told != tc.told {
				t.Fatalf("catching %v, pending %v, told %d times; want %v, %s, %d", ts.catchingUp(), ts.Pending(), told, tc.catching, tc.pending, tc.told)
			}
			if !ts.runs(true, 0) || ts.runs(true, 4) {
				t.Errorf("runs(0) %v, runs(4) %v: want the run's own tasks only", ts.runs(true, 0), ts.runs(true, 4))
			}
			ts.CaughtUp()
			if want := map[bool]int{true: 1}[tc.catching]; woken != want {
				t.Errorf("CaughtUp woke the run %d times, want %d", woken, want)
			}
			if ts.catchingUp() || ts.Pending() != nil {
				t.Errorf("still catching up after CaughtUp: pending %v", ts.Pending())
			}
			ts.Begin()
			if fmt.Sprint(ts.Begun()) != fmt.Sprint(tc.moves[len(tc.moves)-1]) {
				t.Errorf("the next run begins with %v, want %v", ts.Begun(), tc.moves[len(tc.moves)-1])
			}
		})
	}
}
