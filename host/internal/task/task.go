package task

// Of returns the task, among n, that the record key key belongs to: the
// partition Kafka's default partitioner chooses for key among n. n must
// be at least 1; every key belongs to task 0 of 1, the empty and the nil
// key included (which Kafka's partitioner spreads instead: a keyless
// record has no task of its own, so all keyless state is one task's, as a
// Flink windowAll runs with parallelism 1).
func Of(key []byte, n int) int {
	if n <= 1 {
		return 0
	}
	return int(Murmur2(key)&0x7fffffff) % n
}

// Murmur2 is the 32-bit MurmurHash2 with Kafka's seed, as the Java
// client's Utils.murmur2.
func Murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h = h*m ^ k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
