package kafka

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group sharing its pipeline by task balances with franz-go's
// cooperative-sticky algorithm, and then places the tasks no member owned
// (those of a member that died or left) on the members whose stores keep
// a standby copy of their state, where swapping two such tasks between
// the members given them makes more of them land on a copy: that member replays only the changelog's tail
// instead of the whole partition. Owned tasks stay where they are, and
// each member gets the same number of tasks, so the swap changes nothing
// else of the plan. Each member says which copies it holds in its join
// metadata (Tasks.SetWarm), around the sticky algorithm's own user data.

// taskBalancerProtocol names the protocol; members of older versions,
// which only know cooperative-sticky, make the group fall back to it.
const taskBalancerProtocol = "weir-tasks-v1"

// taskBalancer is a kgo.GroupBalancer; see above. tasks gives the member's
// warm copies, topic the topic whose partitions are the tasks. It is used
// by the client's group management goroutine.
type taskBalancer struct {
	sticky stickyBalancer
	tasks  *Tasks
	topic  string
	// warm is, during one MemberBalancer and Balance, the copies each
	// member holds, by member id.
	warm map[string][]int32
}

// stickyBalancer is franz-go's cooperative-sticky balancer, as both a
// group balancer and the balance of a kgo.ConsumerBalancer.
type stickyBalancer interface {
	kgo.GroupBalancer
	kgo.ConsumerBalancerBalance
}

func newTaskBalancer(tasks *Tasks, topic string) *taskBalancer {
	return &taskBalancer{sticky: kgo.CooperativeStickyBalancer().(stickyBalancer), tasks: tasks, topic: topic}
}

func (*taskBalancer) ProtocolName() string { return taskBalancerProtocol }
func (*taskBalancer) IsCooperative() bool  { return true }

func (b *taskBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

// JoinGroupMetadata wraps the sticky algorithm's user data with the
// member's warm copies.
func (b *taskBalancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	raw := b.sticky.JoinGroupMetadata(topics, current, generation)
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(raw); err != nil {
		return raw
	}
	meta.UserData = appendWarm(meta.UserData, b.tasks.Warm())
	return meta.AppendTo(nil)
}

// MemberBalancer unwraps each member's metadata for the sticky algorithm,
// keeping the warm copies aside for Balance.
func (b *taskBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	b.warm = map[string][]int32{}
	plain := slices.Clone(members)
	for i := range plain {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(plain[i].ProtocolMetadata); err != nil {
			return nil, nil, err
		}
		user, warm, err := cutWarm(meta.UserData)
		if err != nil {
			return nil, nil, err
		}
		meta.UserData = user
		b.warm[plain[i].MemberID] = warm
		plain[i].ProtocolMetadata = meta.AppendTo(nil)
	}
	cb, err := kgo.NewConsumerBalancer(b, plain)
	if err != nil {
		return nil, nil, err
	}
	return cb, cb.MemberTopics(), nil
}

// Balance implements kgo.ConsumerBalancerBalance: the sticky plan, with
// the tasks no member owned swapped onto the members holding their
// copies.
func (b *taskBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	plan, ok := b.sticky.Balance(cb, topics).(*kgo.BalancePlan)
	if !ok || plan == nil {
		return plan
	}
	assigned := plan.AsMemberIDMap()
	owned := map[int32]bool{}
	cb.EachMember(func(_ *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		for _, op := range meta.OwnedPartitions {
			if op.Topic == b.topic {
				for _, p := range op.Partitions {
					owned[p] = true
				}
			}
		}
	})
	tasks := map[string][]int32{}
	for m, ts := range assigned {
		tasks[m] = ts[b.topic]
	}
	placeOnCopies(tasks, owned, b.warm)
	out := cb.NewPlan()
	members := cb.Members()
	for i := range members {
		m := &members[i]
		for topic, ps := range assigned[m.MemberID] {
			if topic == b.topic {
				ps = tasks[m.MemberID]
			}
			out.AddPartitions(m, topic, ps)
		}
	}
	return out
}

// placeOnCopies swaps, between members, tasks that no member owned
// (owned), so that more of them go to a member that holds a copy (warm),
// changing no member's count and no owned task's place. tasks is changed
// in place.
func placeOnCopies(tasks map[string][]int32, owned map[int32]bool, warm map[string][]int32) {
	members := make([]string, 0, len(tasks))
	for m := range tasks {
		members = append(members, m)
	}
	slices.Sort(members)
	holds := func(m string, p int32) bool { return slices.Contains(warm[m], p) }
	for improved := true; improved; {
		improved = false
		for _, m := range members {
			for i, p := range tasks[m] {
				if owned[p] || holds(m, p) {
					continue
				}
				if j, m2 := swapPartner(tasks, owned, members, m, p, holds); m2 != "" {
					tasks[m][i], tasks[m2][j] = tasks[m2][j], tasks[m][i]
					improved = true
				}
			}
		}
	}
}

// swapPartner finds another member holding a copy of p, and one of its
// unowned tasks that it holds no copy of: swapping the two puts at least
// one more task on a copy. It returns the task's index and the member, or
// "" for none.
func swapPartner(tasks map[string][]int32, owned map[int32]bool, members []string, m string, p int32, holds func(string, int32) bool) (int, string) {
	for _, m2 := range members {
		if m2 == m || !holds(m2, p) {
			continue
		}
		for j, q := range tasks[m2] {
			if !owned[q] && !holds(m2, q) {
				return j, m2
			}
		}
	}
	return 0, ""
}

// warmMagic starts the user data a taskBalancer wraps around the sticky
// algorithm's: the magic, the length of the sticky user data and the data,
// the number of warm copies and each copy's task (unsigned varints).
const warmMagic = "weir1"

// appendWarm wraps user (the sticky user data) with the warm tasks.
func appendWarm(user []byte, warm []int32) []byte {
	out := append([]byte(warmMagic), binary.AppendUvarint(nil, uint64(len(user)))...)
	out = append(out, user...)
	out = binary.AppendUvarint(out, uint64(len(warm)))
	for _, p := range warm {
		out = binary.AppendUvarint(out, uint64(p))
	}
	return out
}

// errWarm is returned for user data that appendWarm did not make.
var errWarm = errors.New("kafka: a group member's metadata does not hold its warm tasks")

// cutWarm undoes appendWarm.
func cutWarm(b []byte) (user []byte, warm []int32, err error) {
	if len(b) < len(warmMagic) || string(b[:len(warmMagic)]) != warmMagic {
		return nil, nil, errWarm
	}
	b = b[len(warmMagic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errWarm
	}
	user, b = b[k:k+int(n)], b[k+int(n):]
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)) {
		return nil, nil, errWarm
	}
	b = b[k:]
	for range count {
		p, k := binary.Uvarint(b)
		if k <= 0 || p > 1<<31-1 {
			return nil, nil, errWarm
		}
		warm = append(warm, int32(p))
		b = b[k:]
	}
	if len(b) != 0 {
		return nil, nil, errWarm
	}
	return user, warm, nil
}
