package record

import "math"

// AddTime is t+d for event times in ms, saturating at the ends of int64,
// so that a bound or expiry near the end of time does not wrap around.
func AddTime(t, d int64) int64 {
	if d > 0 && t > math.MaxInt64-d {
		return math.MaxInt64
	}
	if d < 0 && t < math.MinInt64-d {
		return math.MinInt64
	}
	return t + d
}

// FloorDiv is a/b rounded down (toward minus infinity), for b > 0: the
// index of the size-b period holding event time a, negative times
// included.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
