package kafka

import (
	"cmp"
	"slices"
)

// Inputs numbers the partitions of a repartitioning pipeline's input
// topics as its upstream tasks, the ids that the repartition topic's
// origin headers, watermark records and upstream tables name: the
// topics in name order, each topic's partitions numbered after the
// previous topic's, so that a pipeline reading one topic numbers its
// partitions as they are. Every instance computes the same numbers from
// the topics' partition counts, which must not change while the
// repartition topic holds records (Kafka Streams has the same rule for
// its source topics). The zero Inputs numbers nothing. It is a plain
// value, read-only once made.
type Inputs struct {
	topics []string
	counts []int32
	base   []int32
}

// NewInputs returns the numbering of the topics with their partition
// counts.
func NewInputs(counts map[string]int32) Inputs {
	var in Inputs
	for t := range counts {
		in.topics = append(in.topics, t)
	}
	slices.Sort(in.topics)
	next := int32(0)
	for _, t := range in.topics {
		in.counts = append(in.counts, counts[t])
		in.base = append(in.base, next)
		next += counts[t]
	}
	return in
}

// Total returns how many upstream tasks there are.
func (in Inputs) Total() int32 {
	if len(in.topics) == 0 {
		return 0
	}
	last := len(in.topics) - 1
	return in.base[last] + in.counts[last]
}

// Topics returns the input topics, in name order.
func (in Inputs) Topics() []string { return slices.Clone(in.topics) }

// ID returns the upstream task of partition p of topic; ok is false for
// a topic or partition it does not number.
func (in Inputs) ID(topic string, p int32) (id int32, ok bool) {
	for i, t := range in.topics {
		if t == topic {
			if p < 0 || p >= in.counts[i] {
				return 0, false
			}
			return in.base[i] + p, true
		}
	}
	return 0, false
}

// Partition returns the topic and partition of upstream task id; ok is
// false for an id out of range.
func (in Inputs) Partition(id int32) (topic string, p int32, ok bool) {
	if id < 0 || id >= in.Total() {
		return "", 0, false
	}
	i, found := slices.BinarySearchFunc(in.base, id, cmp.Compare[int32])
	if !found {
		i--
	}
	for in.counts[i] == 0 { // a topic of no partitions shares its base with the next
		i++
	}
	return in.topics[i], id - in.base[i], true
}
