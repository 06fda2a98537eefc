package fields

import "math"

// intResult is what exactInt makes of a number.
type intResult uint8

const (
	intOK       intResult = iota
	intFraction           // the value is not an integer
	intRange              // the value is an integer outside int64
)

// maxExp bounds the exponents exactInt works with, so that a document's
// "1e99999999999999999999" cannot overflow its arithmetic: no number in a
// document is long enough for such an exponent to matter.
const maxExp = 1 << 40

// exactInt returns the value of the well-formed JSON number num when it is
// an integer within int64, whatever its spelling (12, 1.2e1, 120e-1,
// -0.0), computed exactly from its digits, without rounding. It does not
// allocate.
func exactInt(num []byte) (int64, intResult) {
	if v, ok := shortInt(num); ok {
		return v, intOK
	}
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	// The number is digits d (its integer and fraction digits) times ten
	// to the power exp.
	intEnd, fracEnd := scanDigits(num, 0), 0
	fracEnd = intEnd
	if fracEnd < len(num) && num[fracEnd] == '.' {
		fracEnd = scanDigits(num, fracEnd+1)
	}
	exp := parseExp(num[fracEnd:])
	if fracEnd > intEnd {
		exp -= fracEnd - intEnd - 1
	}
	digit := func(i int) byte { // the i-th digit of d, skipping the point
		if i >= intEnd {
			i++
		}
		return num[i] - '0'
	}
	n := fracEnd
	if fracEnd > intEnd {
		n--
	}
	lo, hi := 0, n // d without its leading and trailing zeros
	for lo < hi && digit(lo) == 0 {
		lo++
	}
	for hi > lo && digit(hi-1) == 0 {
		hi--
		exp++
	}
	if lo == hi {
		return 0, intOK
	}
	if exp < 0 {
		return 0, intFraction
	}
	if hi-lo+exp > 19 {
		return 0, intRange
	}
	return accumulate(digit, lo, hi, exp, neg)
}

// shortInt returns the value of num when it is an optional minus and at
// most 18 digits (so within int64), the common spelling of an integer.
func shortInt(num []byte) (int64, bool) {
	d := num
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	var u int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + int64(c-'0')
	}
	if len(d) < len(num) {
		return -u, true
	}
	return u, true
}

// accumulate computes ±d[lo:hi] × 10^exp, which has at most 19 digits,
// checking that it fits int64.
func accumulate(digit func(int) byte, lo, hi, exp int, neg bool) (int64, intResult) {
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var u uint64 // at most 19 digits: below 10^19 < 2^64
	for i := lo; i < hi; i++ {
		u = u*10 + uint64(digit(i))
	}
	for ; exp > 0; exp-- {
		if u > limit/10 {
			return 0, intRange
		}
		u *= 10
	}
	if u > limit {
		return 0, intRange
	}
	if neg {
		return int64(-u), intOK
	}
	return int64(u), intOK
}

func scanDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// parseExp returns the exponent of the exponent part e (empty, or "e",
// "E" and an optional sign and digits), clamped to ±maxExp.
func parseExp(e []byte) int {
	if len(e) == 0 {
		return 0
	}
	e = e[1:]
	neg := e[0] == '-'
	if e[0] == '-' || e[0] == '+' {
		e = e[1:]
	}
	x := 0
	for _, c := range e {
		x = min(x*10+int(c-'0'), maxExp)
	}
	if neg {
		return -x
	}
	return x
}
