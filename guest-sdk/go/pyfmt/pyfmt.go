// Package pyfmt writes numbers as Python 3 prints them, for plugins that
// must print what a Python job (PyFlink) prints for the same input.
//
// Python's json.loads reads a JSON number written without a fraction or an
// exponent as an int, which is exact at any size, and any other number as a
// float (the nearest double; beyond the double range, inf or -inf). str()
// and repr() then print an int as its decimal digits and a float as the
// shortest digits that read back to it, in exponent form outside
// 1e-4 <= |f| < 1e16:
//
//	JSON text                        str(json.loads(text))
//	12                               12
//	-0                               0
//	123456789012345678901234567890   123456789012345678901234567890
//	90.50                            90.5
//	12.0                             12.0
//	1E2                              100.0
//	1E-5                             1e-05
//	1.0e16                           1e+16
//	1e400                            inf
//
// AppendNumber does that for a JSON number literal, AppendFloat for a
// float64. The package does not allocate, and works in Wasm plugins
// (GOOS=wasip1) as natively.
package pyfmt

import (
	"errors"
	"strconv"

	"github.com/weir-stream/weir/abi/wjson"
)

// ErrSyntax is returned for text that is not a JSON number.
var ErrSyntax = errors.New("pyfmt: not a JSON number")

// AppendFloat appends f as Python's repr(f) and str(f) write it: the
// shortest digits that read back to f; positional when 1e-4 <= |f| < 1e16,
// always with a fractional part (12.0, 0.0001, 1000000000000000.0);
// otherwise in exponent form with a sign and at least two exponent digits
// (1e+16, 1e-05, 1.5e-300); -0.0 as -0.0; NaN, +Inf and -Inf as nan, inf
// and -inf.
//
// Within 1e-4 <= |f| < 1e16 the text is also valid JSON that json.loads
// reads back as the same float; so is the exponent form (1e-05 is a valid
// JSON number).
func AppendFloat(dst []byte, f float64) []byte {
	return wjson.AppendFloat(dst, f)
}

// Valid reports whether lit is a JSON number literal (RFC 8259: an optional
// minus, an integer part without leading zeros, an optional fraction, an
// optional exponent), with nothing around it.
func Valid(lit []byte) bool {
	_, ok := scan(lit)
	return ok
}

// IsInt reports whether the JSON number literal lit is one json.loads reads
// as an int: no fraction and no exponent. It does not check the rest of the
// syntax; use Valid for that.
func IsInt(lit []byte) bool {
	for _, c := range lit {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// ParseFloat returns the float Python's float(lit) gives for the JSON
// number literal lit: the nearest double, ties to even (as strconv rounds),
// and ±Inf beyond the double range, which Python does not treat as an
// error (json.loads("1e400") is inf). It is what json.loads reads from a
// literal with a fraction or an exponent; for an int literal it is what
// float() of that int gives, except that Python raises OverflowError where
// ParseFloat returns ±Inf.
func ParseFloat(lit []byte) (float64, error) {
	if !Valid(lit) {
		return 0, ErrSyntax
	}
	f, err := wjson.Value{Kind: wjson.Number, Raw: lit}.Float()
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, err
	}
	return f, nil // out of range: f is ±Inf, as in Python
}

// AppendNumber appends str(json.loads(lit)) for the JSON number literal
// lit, as the package comment shows: an int literal as its digits ("-0" as
// 0; there are no leading zeros in JSON), any other literal as AppendFloat
// writes ParseFloat's float. Text that is not a JSON number returns dst
// unchanged and ErrSyntax.
//
// Python 3.11 and later refuse, by default, to read or print an int of more
// than 4300 digits (sys.set_int_max_str_digits); AppendNumber prints it.
func AppendNumber(dst, lit []byte) ([]byte, error) {
	isInt, ok := scan(lit)
	if !ok {
		return dst, ErrSyntax
	}
	if !isInt {
		f, err := ParseFloat(lit)
		if err != nil {
			return dst, err
		}
		return AppendFloat(dst, f), nil
	}
	if lit[0] == '-' && len(lit) == 2 && lit[1] == '0' {
		return append(dst, '0'), nil // int("-0") is 0
	}
	return append(dst, lit...), nil
}

// scan checks the JSON number syntax of lit and reports whether it is an
// integer literal.
func scan(lit []byte) (isInt, ok bool) {
	i, n := 0, len(lit)
	if i < n && lit[i] == '-' {
		i++
	}
	switch {
	case i >= n:
		return false, false
	case lit[i] == '0':
		i++
	case lit[i] >= '1' && lit[i] <= '9':
		for i < n && isDigit(lit[i]) {
			i++
		}
	default:
		return false, false
	}
	isInt = true
	if i < n && lit[i] == '.' {
		isInt = false
		i++
		start := i
		for i < n && isDigit(lit[i]) {
			i++
		}
		if i == start {
			return false, false
		}
	}
	if i < n && (lit[i] == 'e' || lit[i] == 'E') {
		isInt = false
		i++
		if i < n && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		start := i
		for i < n && isDigit(lit[i]) {
			i++
		}
		if i == start {
			return false, false
		}
	}
	return isInt, i == n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
