package wjson

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Writer appends JSON text to a byte slice. It inserts the commas between
// members and elements itself; the caller is responsible for the rest of the
// structure (a Key before each object member, matching Begin and End calls),
// which Writer does not check.
//
//	var w wjson.Writer
//	w.BeginObject()
//	w.Key("id")
//	w.Raw(id.Raw)
//	w.Key("delta")
//	w.Float(0.5)
//	w.EndObject()
//	out := w.Bytes() // {"id":"123","delta":0.5}
//
// The zero Writer is ready to use and appends to a new slice; Reset makes it
// append to a slice of the caller's, such as the in-place value buffer a weir
// Output provides. A Writer must be used by one goroutine at a time.
type Writer struct {
	buf   []byte
	comma bool // a value precedes the next one at this level
}

// Reset makes w append to dst, after its current contents, as the start of
// a new JSON text.
func (w *Writer) Reset(dst []byte) {
	w.buf = dst
	w.comma = false
}

// Bytes returns the slice written to: dst given to Reset, extended by
// everything written since.
func (w *Writer) Bytes() []byte { return w.buf }

func (w *Writer) sep() {
	if w.comma {
		w.buf = append(w.buf, ',')
	}
	w.comma = true
}

// BeginObject writes '{'.
func (w *Writer) BeginObject() {
	w.sep()
	w.buf = append(w.buf, '{')
	w.comma = false
}

// EndObject writes '}'.
func (w *Writer) EndObject() {
	w.buf = append(w.buf, '}')
	w.comma = true
}

// BeginArray writes '['.
func (w *Writer) BeginArray() {
	w.sep()
	w.buf = append(w.buf, '[')
	w.comma = false
}

// EndArray writes ']'.
func (w *Writer) EndArray() {
	w.buf = append(w.buf, ']')
	w.comma = true
}

// Key writes an object member's name and the colon, quoted as AppendQuote
// does.
func (w *Writer) Key(name string) {
	w.sep()
	w.buf = AppendQuote(w.buf, name)
	w.buf = append(w.buf, ':')
	w.comma = false
}

// KeyBytes is Key for a name held in a byte slice.
func (w *Writer) KeyBytes(name []byte) { w.Key(bytesString(name)) }

// String writes s as a JSON string, quoted as AppendQuote does.
func (w *Writer) String(s string) {
	w.sep()
	w.buf = AppendQuote(w.buf, s)
}

// StringBytes is String for text held in a byte slice.
func (w *Writer) StringBytes(s []byte) { w.String(bytesString(s)) }

// Raw writes raw, which must be one well-formed JSON value, as it is: for
// example a Value's Raw, to copy a number or string without re-encoding it.
func (w *Writer) Raw(raw []byte) {
	w.sep()
	w.buf = append(w.buf, raw...)
}

// Int writes an integer.
func (w *Writer) Int(i int64) {
	w.sep()
	w.buf = strconv.AppendInt(w.buf, i, 10)
}

// Uint writes an unsigned integer.
func (w *Writer) Uint(u uint64) {
	w.sep()
	w.buf = strconv.AppendUint(w.buf, u, 10)
}

// Float writes f as AppendFloat formats it, except that NaN and ±Inf, which
// JSON cannot represent, are written as null.
func (w *Writer) Float(f float64) {
	w.sep()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.buf = AppendFloat(w.buf, f)
}

// Bool writes true or false.
func (w *Writer) Bool(b bool) {
	w.sep()
	if b {
		w.buf = append(w.buf, "true"...)
	} else {
		w.buf = append(w.buf, "false"...)
	}
}

// Null writes null.
func (w *Writer) Null() {
	w.sep()
	w.buf = append(w.buf, "null"...)
}

// AppendFloat appends f formatted as Python's repr(float) does:
//
//   - the shortest decimal digits that parse back to exactly f (as
//     strconv's precision -1);
//   - positional notation when 1e-4 <= |f| < 1e16, always with a decimal
//     point, so integral values keep ".0": 52.0, 0.0001, 1e15 as
//     1000000000000000.0;
//   - otherwise exponent notation with a sign and at least two exponent
//     digits, and a decimal point only if there is more than one digit:
//     1e+16, 1.5e-05, 1e-300;
//   - -0.0 as "-0.0", and NaN, +Inf and -Inf as "nan", "inf" and "-inf".
//
// Java's Double.toString differs outside 1e-3 <= |f| < 1e7; within it the
// two agree. AppendFloat does not allocate.
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	var tmp [32]byte
	// 'e' with precision -1 gives the shortest digits as d[.ddd]e±XX.
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	if s[0] == '-' {
		dst = append(dst, '-')
		s = s[1:]
	}
	e := 0
	mant := s
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == 'e' {
			mant = s[:i]
			exp := s[i+1:]
			neg := exp[0] == '-'
			for _, c := range exp[1:] {
				e = e*10 + int(c-'0')
			}
			if neg {
				e = -e
			}
			break
		}
	}
	// The digits without the decimal point, and the exponent of the first.
	var dbuf [24]byte
	digits := append(dbuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	if e < -4 || e >= 16 {
		dst = append(dst, digits[0])
		if len(digits) > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if e < 0 {
			dst = append(dst, '-')
			e = -e
		} else {
			dst = append(dst, '+')
		}
		if e < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(e), 10)
	}
	point := e + 1 // digits before the decimal point
	switch {
	case point <= 0:
		dst = append(dst, '0', '.')
		for ; point < 0; point++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	case point < len(digits):
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		return append(dst, digits[point:]...)
	default:
		dst = append(dst, digits...)
		for i := len(digits); i < point; i++ {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	}
}

const hexDigits = "0123456789abcdef"

// AppendQuote appends s as a JSON string with the minimal escaping: '"' and
// '\' as \" and \\, the control characters U+0000 to U+001F as \b, \f, \n,
// \r, \t or \u00XX (lower-case hex), and every other character as its UTF-8
// bytes. Each byte of s that is not part of valid UTF-8 is written as the
// escape \ufffd (U+FFFD), as encoding/json does.
func AppendQuote(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendQuoteBytes is AppendQuote for text held in a byte slice.
func AppendQuoteBytes(dst, s []byte) []byte { return AppendQuote(dst, bytesString(s)) }
