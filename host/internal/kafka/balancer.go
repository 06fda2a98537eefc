package kafka

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group sharing its pipeline by task places its tasks itself, as
// Kafka Streams' assignor does since KIP-441, and leaves the rest (the
// input partitions of a pipeline that repartitions, which hold no state)
// to franz-go's cooperative-sticky algorithm. A task stays with the member
// that owns it; a task whose owner died or left goes to a member whose
// store keeps a warm copy of its state (a standby replica) unless that
// member already has a balanced share, and otherwise to the least loaded
// member, which restores it from the changelog. A task moves
// from a live owner only to a member holding a warm copy, caught up with
// the changelog by its last standby pass, and only while the owner has at
// least two more tasks than it: so a member that joins is given no task
// at first. It warms up the tasks a balanced group would give it
// (warmupTasks), as standby copies, while their owners keep processing,
// and once they are warm it asks for a rebalance (a probing rebalance),
// which moves them, each replaying only the changelog's last second.
// Each member says which copies it holds warm in its join metadata
// (Tasks.SetWarm), around the sticky algorithm's own user data.

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

// Balance implements kgo.ConsumerBalancerBalance: the tasks placed as
// above, the other partitions as the sticky algorithm places them, and
// every move from a live owner made in two rebalances, as the cooperative
// protocol asks (the owner revokes the task first).
func (b *taskBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	plan, ok := b.sticky.Balance(cb, topics).(*kgo.BalancePlan)
	if !ok || plan == nil {
		return plan
	}
	assigned := plan.AsMemberIDMap()
	members := cb.Members()
	ids := make([]string, len(members))
	for i := range members {
		ids[i] = members[i].MemberID
	}
	tasks := placeTasks(ids, topics[b.topic], claimedTasks(cb, b.topic), b.warm)
	out := cb.NewPlan()
	for i := range members {
		m := &members[i]
		for topic, ps := range assigned[m.MemberID] {
			if topic != b.topic {
				out.AddPartitions(m, topic, ps)
			}
		}
		if ps := tasks[m.MemberID]; len(ps) > 0 {
			out.AddPartitions(m, b.topic, ps)
		}
	}
	out.AdjustCooperative(cb)
	return out
}

// claimedTasks returns the member owning each task of topic, as the
// members' metadata claim them: of two claims (a member that missed a
// rebalance), the later generation's.
func claimedTasks(cb *kgo.ConsumerBalancer, topic string) map[int32]string {
	owner, gen := map[int32]string{}, map[int32]int32{}
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		for _, op := range meta.OwnedPartitions {
			if op.Topic != topic {
				continue
			}
			for _, p := range op.Partitions {
				if g, ok := gen[p]; !ok || meta.Generation > g {
					owner[p], gen[p] = m.MemberID, meta.Generation
				}
			}
		}
	})
	return owner
}

// placeTasks places n tasks on the members ids: each stays with its owner
// (owners); an orphan goes to the least loaded member holding its warm
// copy (warm) that has fewer tasks than a balanced group's most, or else
// to the least loaded member; and then tasks move from their owners to
// members holding their warm copies while an owner has at least two more
// tasks than such a member.
func placeTasks(ids []string, n int32, owners map[int32]string, warm map[string][]int32) map[string][]int32 {
	ids = slices.Sorted(slices.Values(ids))
	plan := map[string][]int32{}
	var orphans []int32
	for p := range n {
		if o, ok := owners[p]; ok && slices.Contains(ids, o) {
			plan[o] = append(plan[o], p)
		} else {
			orphans = append(orphans, p)
		}
	}
	holds := func(m string, p int32) bool { return slices.Contains(warm[m], p) }
	quota := (int(n) + len(ids) - 1) / max(len(ids), 1) // a balanced group's most
	for _, p := range orphans {
		to := leastLoaded(ids, plan, func(m string) bool { return holds(m, p) && len(plan[m]) < quota })
		if to == "" {
			to = leastLoaded(ids, plan, func(string) bool { return true })
		}
		plan[to] = append(plan[to], p)
	}
	for moved := true; moved; {
		moved = false
		for _, m := range ids {
			for _, p := range warm[m] {
				o := ownerIn(plan, p)
				if o != "" && o != m && len(plan[o]) > len(plan[m])+1 {
					plan[o] = slices.DeleteFunc(plan[o], func(q int32) bool { return q == p })
					plan[m] = append(plan[m], p)
					moved = true
				}
			}
		}
	}
	for _, m := range ids {
		slices.Sort(plan[m])
	}
	return plan
}

// leastLoaded returns the member of ids with the fewest tasks in plan
// among those ok accepts (the first by id of equals), or "" for none.
func leastLoaded(ids []string, plan map[string][]int32, ok func(string) bool) string {
	best := ""
	for _, m := range ids {
		if ok(m) && (best == "" || len(plan[m]) < len(plan[best])) {
			best = m
		}
	}
	return best
}

// ownerIn returns the member that plan gives task p, or "".
func ownerIn(plan map[string][]int32, p int32) string {
	for m, ps := range plan {
		if slices.Contains(ps, p) {
			return m
		}
	}
	return ""
}

// warmupTasks returns the tasks that the member self would be given in a
// balanced group (as members describes it): what moving a task at a time
// from the most loaded member to the least gives it, until no member has
// two more than another. Every member computes the same moves, so that
// each warms up the copies the balancer will move to it (placeTasks).
func warmupTasks(members []groupMember, self string) []int32 {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b groupMember) int { return strings.Compare(a.name, b.name) })
	plan := make([][]int32, len(ms))
	for i, m := range ms {
		plan[i] = slices.Sorted(slices.Values(m.tasks))
	}
	var mine []int32
	for len(ms) > 1 {
		hi, lo := 0, 0
		for i := range plan {
			if len(plan[i]) > len(plan[hi]) {
				hi = i
			}
			if len(plan[i]) < len(plan[lo]) {
				lo = i
			}
		}
		if len(plan[hi]) <= len(plan[lo])+1 {
			break
		}
		p := plan[hi][len(plan[hi])-1]
		plan[hi] = plan[hi][:len(plan[hi])-1]
		plan[lo] = append(plan[lo], p)
		if ms[lo].id == self {
			mine = append(mine, p)
		}
	}
	slices.Sort(mine)
	return mine
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
