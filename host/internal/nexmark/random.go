package nexmark

// javaRandom is java.util.Random: the 48-bit linear congruential generator
// the Nexmark generators of Apache Beam and Flink draw every choice from,
// seeded per event with the event's id. Porting it (rather than using
// math/rand) keeps the draws in the spec's order and with its
// distributions, including nextInt's rejection and nextLong's skew.
type javaRandom struct{ seed uint64 }

const (
	jrMultiplier = 0x5DEECE66D
	jrAddend     = 0xB
	jrMask       = 1<<48 - 1
)

// setSeed is Random.setSeed.
func (r *javaRandom) setSeed(s int64) { r.seed = (uint64(s) ^ jrMultiplier) & jrMask }

// next is Random.next(bits): the top bits of the advanced state, as a
// signed 32-bit integer.
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*jrMultiplier + jrAddend) & jrMask
	return int32(int64(r.seed) >> (48 - bits))
}

// nextInt is Random.nextInt(bound), bound > 0.
func (r *javaRandom) nextInt(bound int32) int32 {
	x := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(x)) >> 31)
	}
	for u := x; ; u = r.next(31) {
		x = u % bound
		if u-x+m >= 0 { // int32 overflow is Java's rejection test
			return x
		}
	}
}

// nextInt26 and nextInt13 are nextInt(26) and nextInt(13), with the
// bound a constant so that the remainder compiles to a multiplication: the
// letters of the spec's strings are most of the generator's draws.
func (r *javaRandom) nextInt26() int32 {
	for {
		u := r.next(31)
		x := u % 26
		if u-x+25 >= 0 {
			return x
		}
	}
}

func (r *javaRandom) nextInt13() int32 {
	for {
		u := r.next(31)
		x := u % 13
		if u-x+12 >= 0 {
			return x
		}
	}
}

// nextLong64 is Random.nextLong().
func (r *javaRandom) nextLong64() int64 {
	hi := int64(r.next(32))
	lo := int64(r.next(32))
	return hi<<32 + lo
}

// nextDouble is Random.nextDouble(), uniform in [0, 1).
func (r *javaRandom) nextDouble() float64 {
	return float64(int64(r.next(26))<<27+int64(r.next(27))) * (1.0 / (1 << 53))
}

// nextLong is the Nexmark generators' nextLong(random, n): nextInt below
// 2³¹−1, else |nextLong() % n| (skewed, as the spec's is).
func (r *javaRandom) nextLong(n int64) int64 {
	if n < 1<<31-1 {
		return int64(r.nextInt(int32(n)))
	}
	v := r.nextLong64() % n
	if v < 0 {
		v = -v
	}
	return v
}
