package kafka

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestInputs numbers input partitions as upstream tasks: one topic as
// its partitions are (what a pipeline reading one topic wrote before
// inputs were numbered), several in name order, whatever order they were
// given in; every id maps back to its partition, and nothing outside
// maps at all.
func TestInputs(t *testing.T) {
	tests := []struct {
		name   string
		counts map[string]int32
		total  int32
		ids    map[string][]int32 // topic: the ids of its partitions 0, 1, …
	}{
		{name: "none", counts: nil, total: 0},
		{name: "one topic", counts: map[string]int32{"in": 4}, total: 4, ids: map[string][]int32{"in": {0, 1, 2, 3}}},
		{name: "two topics", counts: map[string]int32{"bids": 3, "auctions": 2}, total: 5,
			ids: map[string][]int32{"auctions": {0, 1}, "bids": {2, 3, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := NewInputs(tt.counts)
			if in.Total() != tt.total {
				t.Fatalf("Total = %d, want %d", in.Total(), tt.total)
			}
			for topic, ids := range tt.ids {
				for p, want := range ids {
					if id, ok := in.ID(topic, int32(p)); !ok || id != want {
						t.Errorf("ID(%s, %d) = %d, %v; want %d", topic, p, id, ok, want)
					}
				}
				if _, ok := in.ID(topic, int32(len(ids))); ok {
					t.Errorf("ID(%s, %d) numbered a partition past the topic's", topic, len(ids))
				}
			}
			if _, ok := in.ID("other", 0); ok {
				t.Error("ID numbered a topic it was not given")
			}
			if _, _, ok := in.Partition(tt.total); ok {
				t.Errorf("Partition(%d) found one past the total", tt.total)
			}
			if _, _, ok := in.Partition(-1); ok {
				t.Error("Partition(-1) found one")
			}
		})
	}
}

// TestInputsRoundTrip: for random sets of topics, every upstream task
// maps to a partition that maps back to it, and the ids are 0 to Total-1
// without gaps.
func TestInputsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 200 {
		counts := map[string]int32{}
		for i := range 1 + rng.IntN(5) {
			counts["t"+strconv.Itoa(rng.IntN(50))+"-"+strconv.Itoa(i)] = 1 + rng.Int32N(40)
		}
		in := NewInputs(counts)
		seen := map[int32]bool{}
		for topic, n := range counts {
			for p := range n {
				id, ok := in.ID(topic, p)
				if !ok || seen[id] {
					t.Fatalf("%v: ID(%s, %d) = %d, %v, seen before %v", counts, topic, p, id, ok, seen[id])
				}
				seen[id] = true
				if bt, bp, ok := in.Partition(id); !ok || bt != topic || bp != p {
					t.Fatalf("%v: Partition(%d) = %s, %d, %v; want %s, %d", counts, id, bt, bp, ok, topic, p)
				}
			}
		}
		for id := range in.Total() {
			if !seen[id] {
				t.Fatalf("%v: upstream task %d is no partition's", counts, id)
			}
		}
	}
}
