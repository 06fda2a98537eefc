package kafka

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTaskBalancer balances a group sharing twelve tasks whose member b
// died: a and c keep what they own, b's four tasks are split between them
// as the sticky algorithm splits them, and each lands on the member that
// holds its copy.
func TestTaskBalancer(t *testing.T) {
	for _, tc := range []struct {
		name         string
		warmA, warmC []int32
		wantA, wantC []int32 // b's tasks each gets
	}{
		{name: "copies split", warmA: []int32{4, 5}, warmC: []int32{6, 7}, wantA: []int32{4, 5}, wantC: []int32{6, 7}},
		{name: "copies split the other way", warmA: []int32{6, 7}, warmC: []int32{4, 5}, wantA: []int32{6, 7}, wantC: []int32{4, 5}},
		{name: "interleaved", warmA: []int32{5, 7}, warmC: []int32{4, 6}, wantA: []int32{5, 7}, wantC: []int32{4, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topics := []string{"in"}
			member := func(id string, owned, warm []int32) kmsg.JoinGroupResponseMember {
				ts := NewTasks(false)
				ts.SetWarm(warm)
				b := newTaskBalancer(ts, "in")
				return kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: b.JoinGroupMetadata(topics, map[string][]int32{"in": owned}, 3)}
			}
			members := []kmsg.JoinGroupResponseMember{
				member("a", []int32{0, 1, 2, 3}, tc.warmA),
				member("c", []int32{8, 9, 10, 11}, tc.warmC),
			}
			got := balanceGroup(t, members, 12)
			wantA := slices.Sorted(slices.Values(append([]int32{0, 1, 2, 3}, tc.wantA...)))
			wantC := slices.Sorted(slices.Values(append([]int32{8, 9, 10, 11}, tc.wantC...)))
			if !slices.Equal(got["a"], wantA) || !slices.Equal(got["c"], wantC) {
				t.Errorf("a %v, c %v; want a %v, c %v", got["a"], got["c"], wantA, wantC)
			}
		})
	}
}

// TestPlaceTasks checks the placement of tasks: owned tasks stay,
// orphans go to copies or to the least loaded, and a task leaves a live
// owner only for a warm copy on a member with at least two tasks fewer.
func TestPlaceTasks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ids    []string
		n      int32
		owners map[int32]string
		warm   map[string][]int32
		want   map[string][]int32
	}{
		{name: "a first member takes all", ids: []string{"a"}, n: 3,
			want: map[string][]int32{"a": {0, 1, 2}}},
		{name: "orphans spread over the least loaded", ids: []string{"a", "b"}, n: 4, owners: map[int32]string{0: "a", 1: "a"},
			want: map[string][]int32{"a": {0, 1}, "b": {2, 3}}},
		{name: "orphans go to their copies", ids: []string{"a", "b"}, n: 4, owners: map[int32]string{0: "a", 1: "b"}, warm: map[string][]int32{"a": {3}, "b": {2}},
			want: map[string][]int32{"a": {0, 3}, "b": {1, 2}}},
		{name: "a copy on a member one ahead", ids: []string{"a", "b"}, n: 3, owners: map[int32]string{0: "a"}, warm: map[string][]int32{"a": {1}},
			want: map[string][]int32{"a": {0, 1}, "b": {2}}},
		{name: "a copy on a member with its share is passed over", ids: []string{"a", "b"}, n: 4, owners: map[int32]string{0: "a", 1: "a"}, warm: map[string][]int32{"a": {2}},
			want: map[string][]int32{"a": {0, 1}, "b": {2, 3}}},
		{name: "revoked for a copy, given to it", ids: []string{"a", "c", "d"}, n: 12,
			owners: map[int32]string{0: "a", 1: "a", 2: "a", 3: "a", 4: "a", 6: "a", 8: "a", 10: "a"}, warm: map[string][]int32{"c": {5, 7, 9, 11}},
			want: map[string][]int32{"a": {0, 1, 2, 3, 4, 6, 8, 10}, "c": {5, 7, 9, 11}, "d": nil}},
		{name: "a joining member without copies gets nothing", ids: []string{"a", "b", "c"}, n: 4,
			owners: map[int32]string{0: "a", 1: "a", 2: "b", 3: "b"},
			want:   map[string][]int32{"a": {0, 1}, "b": {2, 3}, "c": nil}},
		{name: "a joining member takes its warm copies", ids: []string{"a", "b", "c"}, n: 6,
			owners: map[int32]string{0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b"}, warm: map[string][]int32{"c": {2, 5}},
			want: map[string][]int32{"a": {0, 1}, "b": {3, 4}, "c": {2, 5}}},
		{name: "warm copies do not unbalance", ids: []string{"a", "b"}, n: 4,
			owners: map[int32]string{0: "a", 1: "a", 2: "b", 3: "b"}, warm: map[string][]int32{"a": {2, 3}, "b": {0, 1}},
			want: map[string][]int32{"a": {0, 1}, "b": {2, 3}}},
		{name: "a dead owner's claim is an orphan", ids: []string{"a", "b"}, n: 2, owners: map[int32]string{0: "a", 1: "gone"},
			want: map[string][]int32{"a": {0}, "b": {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := placeTasks(tc.ids, tc.n, tc.owners, tc.warm)
			for _, m := range tc.ids {
				if !slices.Equal(got[m], tc.want[m]) {
					t.Errorf("%s: %v, want %v", m, got[m], tc.want[m])
				}
			}
		})
	}
}

// TestWarmUp joins members one at a time to a group sharing tasks, as
// the group would balance it round after round: a member that joins gets
// nothing until it declares warm the copies warmupTasks gave it, and then
// exactly those, so that the group ends balanced with no task moved cold.
func TestWarmUp(t *testing.T) {
	for _, tc := range []struct {
		name           string
		tasks, members int
	}{
		{name: "twelve tasks, four members", tasks: 12, members: 4},
		{name: "twelve tasks, five members", tasks: 12, members: 5},
		{name: "three tasks, four members", tasks: 3, members: 4},
		{name: "seven tasks, three members", tasks: 7, members: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owned := map[string][]int32{}
			warm := map[string][]int32{}
			var ids []string
			for i := range tc.members {
				id := fmt.Sprintf("m-%d", i)
				ids = append(ids, id)
				owned = settle(t, ids, owned, warm, tc.tasks)
				if i > 0 && len(owned[id]) > 0 {
					t.Fatalf("%s was given %v cold", id, owned[id])
				}
				for _, m := range ids {
					warm[m] = warmupTasks(groupOf(ids, owned), m)
				}
				owned = settle(t, ids, owned, warm, tc.tasks)
				for _, m := range ids {
					warm[m] = nil
				}
				lo, hi := tc.tasks, 0
				for _, m := range ids {
					lo, hi = min(lo, len(owned[m])), max(hi, len(owned[m]))
				}
				if hi > lo+1 {
					t.Fatalf("%d members, warmed up: unbalanced: %v", i+1, owned)
				}
			}
		})
	}
}

// settle balances the group until its plan stops changing (a cooperative
// move takes two rounds), and returns the members' tasks.
func settle(t *testing.T, ids []string, owned, warm map[string][]int32, tasks int) map[string][]int32 {
	t.Helper()
	for round := range 5 {
		var members []kmsg.JoinGroupResponseMember
		for _, id := range ids {
			ts := NewTasks(false)
			ts.SetWarm(warm[id])
			meta := newTaskBalancer(ts, "in").JoinGroupMetadata([]string{"in"}, map[string][]int32{"in": owned[id]}, int32(round+1))
			members = append(members, kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: meta})
		}
		next := balanceGroup(t, members, int32(tasks))
		same := true
		for _, id := range ids {
			same = same && slices.Equal(next[id], owned[id])
		}
		if owned = next; same {
			return owned
		}
	}
	t.Fatalf("the plan did not settle: %v", owned)
	return nil
}

// groupOf describes a group whose members own tasks.
func groupOf(ids []string, owned map[string][]int32) []groupMember {
	var ms []groupMember
	for _, id := range ids {
		ms = append(ms, groupMember{id: id, name: id, tasks: owned[id]})
	}
	return ms
}

// FuzzCutWarm checks the decoder of a member's warm tasks: what
// appendWarm makes comes back whole, and nothing else panics or is taken
// for it with data left over.
func FuzzCutWarm(f *testing.F) {
	f.Add([]byte("sticky"), []byte{0, 3, 200})
	f.Add([]byte{}, []byte{})
	f.Add([]byte(warmMagic+"\x05ab"), []byte{1})
	f.Fuzz(func(t *testing.T, user, raw []byte) {
		var warm []int32
		for _, b := range raw {
			warm = append(warm, int32(b)*97)
		}
		u, w, err := cutWarm(appendWarm(user, warm))
		if err != nil || !bytes.Equal(u, user) || !slices.Equal(w, warm) {
			t.Fatalf("round trip of %q %v: %q %v %v", user, warm, u, w, err)
		}
		if u, w, err := cutWarm(raw); err == nil {
			if again, _, _ := cutWarm(appendWarm(u, w)); !bytes.Equal(again, u) {
				t.Fatalf("%q decoded to %q %v, which does not encode back", raw, u, w)
			}
		}
	})
}

// TestStandbysAfterAFailure puts the standby placement and the balancer
// together: members sharing tasks with one standby replica each, one of
// them dies, and the balancer gives each of its tasks to a survivor that
// holds its copy, however many members share the group.
func TestStandbysAfterAFailure(t *testing.T) {
	for _, tc := range []struct {
		name           string
		members, tasks int
	}{
		{name: "three members, six tasks", members: 3, tasks: 6},
		{name: "four members, twelve tasks", members: 4, tasks: 12},
		{name: "five members, twelve tasks", members: 5, tasks: 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gms []groupMember
			for i := range tc.members {
				gm := groupMember{id: fmt.Sprintf("m-%d", i), name: fmt.Sprintf("i-%d", i)}
				for p := i; p < tc.tasks; p += tc.members {
					gm.tasks = append(gm.tasks, int32(p))
				}
				gms = append(gms, gm)
			}
			dead := gms[1]
			var members []kmsg.JoinGroupResponseMember
			for _, gm := range gms {
				if gm.id == dead.id {
					continue
				}
				ts := NewTasks(false)
				ts.SetWarm(standbyTasks(gms, gm.id, 1))
				b := newTaskBalancer(ts, "in")
				members = append(members, kmsg.JoinGroupResponseMember{MemberID: gm.id,
					ProtocolMetadata: b.JoinGroupMetadata([]string{"in"}, map[string][]int32{"in": gm.tasks}, 5)})
			}
			for m, ps := range balanceGroup(t, members, int32(tc.tasks)) {
				warm := standbyTasks(gms, m, 1)
				for _, p := range ps {
					if slices.Contains(dead.tasks, p) && !slices.Contains(warm, p) {
						t.Errorf("the dead member's task %d went to %s, which holds no copy of it (copies %v)", p, m, warm)
					}
				}
			}
		})
	}
}

// balanceGroup balances members, as a leader would, over the topic "in"
// of n partitions, and returns each member's partitions, sorted.
func balanceGroup(t *testing.T, members []kmsg.JoinGroupResponseMember, n int32) map[string][]int32 {
	t.Helper()
	gmb, _, err := newTaskBalancer(NewTasks(false), "in").MemberBalancer(members)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := gmb.(interface {
		BalanceOrError(map[string]int32) (kgo.IntoSyncAssignment, error)
	}).BalanceOrError(map[string]int32{"in": n})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int32{}
	for _, a := range plan.IntoSyncAssignment() {
		var ma kmsg.ConsumerMemberAssignment
		if err := ma.ReadFrom(a.MemberAssignment); err != nil {
			t.Fatal(err)
		}
		for _, tp := range ma.Topics {
			got[a.MemberID] = append(got[a.MemberID], tp.Partitions...)
		}
		slices.Sort(got[a.MemberID])
	}
	return got
}
