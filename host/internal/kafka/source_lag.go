package kafka

// PartitionLag is the consumer lag of one partition a Source owns: the
// records after the last one polled, as of the partition's last fetch. It
// is a plain value.
type PartitionLag struct {
	Topic     string
	Partition int32
	Lag       int64
}

// PartitionLags returns the lag of each partition the source owns that a
// fetch has brought records of: Lag's parts, one by one. It is safe to
// call from any goroutine.
func (s *Source) PartitionLags() []PartitionLag {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PartitionLag
	for tp, l := range s.lag {
		if p := s.parts[tp]; p != nil && p.owned {
			out = append(out, PartitionLag{Topic: tp.topic, Partition: tp.partition, Lag: l})
		}
	}
	return out
}
