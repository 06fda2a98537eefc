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

// TestPlaceOnCopies checks the swaps: unowned tasks move to members
// holding their copies, owned tasks and each member's count stay.
func TestPlaceOnCopies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tasks map[string][]int32
		owned []int32
		warm  map[string][]int32
		want  map[string][]int32
	}{
		{name: "no copies", tasks: map[string][]int32{"a": {0, 2}, "b": {1, 3}}, owned: []int32{0, 1},
			want: map[string][]int32{"a": {0, 2}, "b": {1, 3}}},
		{name: "a swap", tasks: map[string][]int32{"a": {0, 2}, "b": {1, 3}}, owned: []int32{0, 1}, warm: map[string][]int32{"a": {3}, "b": {2}},
			want: map[string][]int32{"a": {0, 3}, "b": {1, 2}}},
		{name: "an owned task never moves", tasks: map[string][]int32{"a": {0, 2}, "b": {1, 3}}, owned: []int32{0, 1, 3}, warm: map[string][]int32{"a": {3}, "b": {2}},
			want: map[string][]int32{"a": {0, 2}, "b": {1, 3}}},
		{name: "one side's copy", tasks: map[string][]int32{"a": {4}, "b": {5}, "c": {6}}, warm: map[string][]int32{"c": {4}},
			want: map[string][]int32{"a": {6}, "b": {5}, "c": {4}}},
		{name: "both copies on one member", tasks: map[string][]int32{"a": {4, 5}, "b": {6, 7}}, warm: map[string][]int32{"b": {4, 5}},
			want: map[string][]int32{"a": {6, 7}, "b": {4, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owned := map[int32]bool{}
			for _, p := range tc.owned {
				owned[p] = true
			}
			placeOnCopies(tc.tasks, owned, tc.warm)
			for m, want := range tc.want {
				got := slices.Sorted(slices.Values(tc.tasks[m]))
				if !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", m, got, want)
				}
			}
		})
	}
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
