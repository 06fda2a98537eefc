package wjson

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Float returns the value of a number as the nearest float64, as
// strconv.ParseFloat rounds it. A number too large for a float64 returns
// ±Inf and an error wrapping strconv.ErrRange. Any other kind returns a
// *KindError.
func (v Value) Float() (float64, error) {
	if v.Kind != Number {
		return 0, &KindError{Want: Number, Got: v.Kind}
	}
	return strconv.ParseFloat(bytesString(v.Raw), 64)
}

// Int returns the value of a number written as an integer: without a
// fraction or exponent, and within the range of int64. Other numbers return
// an error from strconv.ParseInt (so 4.0 and 1e3 are not integers here); any
// other kind returns a *KindError.
func (v Value) Int() (int64, error) {
	if v.Kind != Number {
		return 0, &KindError{Want: Number, Got: v.Kind}
	}
	return strconv.ParseInt(bytesString(v.Raw), 10, 64)
}

// Bool returns the value of true or false. Any other kind returns a
// *KindError.
func (v Value) Bool() (bool, error) {
	if v.Kind != Bool {
		return false, &KindError{Want: Bool, Got: v.Kind}
	}
	return len(v.Raw) > 0 && v.Raw[0] == 't', nil
}

// AppendString appends to dst the decoded content of a string value: quotes
// removed and every escape, including \uXXXX and surrogate pairs, replaced
// by the UTF-8 of its character. Invalid UTF-8 bytes and unpaired surrogates
// become U+FFFD, as in encoding/json. For any kind other than String it
// appends Raw unchanged.
func (v Value) AppendString(dst []byte) []byte {
	if v.Kind != String || len(v.Raw) < 2 {
		return append(dst, v.Raw...)
	}
	if v.plain {
		return append(dst, v.Raw[1:len(v.Raw)-1]...)
	}
	return appendUnquoted(dst, v.Raw[1:len(v.Raw)-1])
}

// String returns the decoded content of a string value, or for any other
// kind its raw text (so a Value prints usefully with fmt). It allocates; use
// AppendString or StringEquals on hot paths.
func (v Value) String() string {
	if v.Kind == String && len(v.Raw) >= 2 {
		raw := v.Raw[1 : len(v.Raw)-1]
		if v.plain || plainString(raw) {
			return string(raw)
		}
	}
	return string(v.AppendString(nil))
}

// StringEquals reports whether v is a string whose decoded content equals s.
// It does not allocate for strings of up to 128 bytes.
func (v Value) StringEquals(s string) bool {
	if v.Kind != String || len(v.Raw) < 2 {
		return false
	}
	if v.plain {
		return string(v.Raw[1:len(v.Raw)-1]) == s
	}
	return keyEquals(v.Raw[1:len(v.Raw)-1], s)
}

// plainString reports whether raw string content decodes to itself: it has
// no escapes and is valid UTF-8.
func plainString(raw []byte) bool {
	return bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw)
}

// keyEquals reports whether the string content raw (between the quotes)
// decodes to s.
func keyEquals(raw []byte, s string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		// Without escapes, decoding only replaces invalid UTF-8 bytes with
		// the 3-byte U+FFFD, so it never shortens the text.
		switch {
		case len(raw) == len(s) && string(raw) == s:
			return utf8.Valid(raw)
		case len(s) < len(raw):
			return false
		case isASCII(raw):
			return false
		}
	}
	var tmp [128]byte
	return string(appendUnquoted(tmp[:0], raw)) == s
}

// appendUnquoted decodes the string content s (between the quotes) onto
// dst, the way encoding/json does, tolerating malformed escapes.
func appendUnquoted(dst, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '\\' {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		if c != '\\' || i+1 >= len(s) {
			// A control character or a trailing backslash: only in a
			// hand-made Value. Keep the byte.
			dst = append(dst, c)
			i++
			start = i
			continue
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i += 2
		case 'b':
			dst = append(dst, '\b')
			i += 2
		case 'f':
			dst = append(dst, '\f')
			i += 2
		case 'n':
			dst = append(dst, '\n')
			i += 2
		case 'r':
			dst = append(dst, '\r')
			i += 2
		case 't':
			dst = append(dst, '\t')
			i += 2
		case 'u':
			r := hex4(s[i+2:])
			if r < 0 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
				i += 2
				break
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2 = hex4(s[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, c, e)
			i += 2
		}
		start = i
	}
	return append(dst, s[start:]...)
}

// hex4 decodes the four hex digits starting s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		d := unhex(c)
		if d < 0 {
			return -1
		}
		r = r<<4 | rune(d)
	}
	return r
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// bytesString views b as a string without copying, for calls that do not
// keep it (strconv clones the text it puts into errors).
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
