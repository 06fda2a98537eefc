package wjson

import (
	"encoding/binary"
	"math/bits"
)

// Get's fast path.
//
// A Go WebAssembly guest pays for every call (tens of ns, with the
// arguments and results passed on the stack) and, as the Go compiler lowers
// every jump between basic blocks to a dispatch through one br_table, for
// every taken branch: a byte-at-a-time loop costs 1-2 ns a byte there. So
// Get reads the common documents itself, in one function with its state in
// locals: a validating state machine (the labels key, value and done)
// written with few branches. It scans string content and digit runs eight
// bytes at a time (SWAR), and compares names of up to seven bytes as one
// word.
//
// The fast path reads documents of at least eight bytes whose top-level
// value is an object, with containers nested at most fastMaxDepth deep.
// Strings with escapes are read by the full parser's str. On anything else
// (a syntax error, another top-level value, deeper nesting) Get runs the
// full parser, getFull, from the start: it gives the same result on every
// document the fast path reads, and reports errors with their exact
// offsets. For a longer path, the value of the top-level member named
// path[0] is searched by the full parser's find, at the depth it has there.

// fastMaxDepth is the deepest nesting Get's fast path reads: the bits of a
// uint64 record which of the open containers are arrays.
const fastMaxDepth = 63

// SWAR constants, for each byte of an eight-byte word at once. In the masks
// of swarStrSpecial and swarNonDigit, bit 7 of a byte marks it; the lowest
// marked byte is exactly the first byte of interest, but bytes above it may
// be marked wrongly (by borrows and carries out of it), so only the lowest
// is used.
const (
	swarOnes  = 0x0101010101010101
	swarHigh  = 0x8080808080808080
	swarQuote = '"' * swarOnes
	swarBack  = '\\' * swarOnes
	swarCtrl  = 0x20 * swarOnes
	swarDig0  = '0' * swarOnes
	swarDig9  = (0x7f - '9') * swarOnes // carries the bytes above '9' into bit 7
)

// swarStrSpecial marks the bytes that end the plain run of a string's
// content: '"', '\\' and the control characters (below 0x20, zero
// included). Bytes of 0x80 and above are not marked.
func swarStrSpecial(v uint64) uint64 {
	q, s := v^swarQuote, v^swarBack
	return ((q-swarOnes)&^q | (s-swarOnes)&^s | (v-swarCtrl)&^v) & swarHigh
}

// swarNonDigit marks the bytes outside '0'-'9', zero included.
func swarNonDigit(v uint64) uint64 {
	return ((v + swarDig9) | (v - swarDig0)) & swarHigh
}

// wsBits has bit c set for each JSON whitespace byte c.
const wsBits uint64 = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r'

// skipWS returns the offset of the first byte of b at or after i that is
// not whitespace, or len(b). It is small enough to be inlined.
func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && wsBits>>b[i]&1 != 0 {
		i++
	}
	return i
}

// Get validates doc and returns the value found by following path through
// nested objects: Get(doc, "a", "b") is doc's field "a"'s field "b". With no
// path it returns the whole document's value, like Parse.
//
// Get returns the zero Value and a nil error when the path leads nowhere:
// a field is missing, or a value on the way is not an object. When an object
// repeats a field name, the last occurrence counts, as with encoding/json and
// Python's json module. A malformed document yields a *SyntaxError even if
// the path was found before the error.
func Get(doc []byte, path ...string) (Value, error) {
	if len(path) == 0 || len(doc) < 8 {
		return getFull(doc, path)
	}
	b, n, key := doc, len(doc), path[0]
	var (
		found  Value  // the value of the last top-level member named key
		i      int    // the offset being read
		j      int    // the offset of a word load (see below)
		s      int    // the start of the current string
		vs     int    // the start of the current top-level member's value
		depth  uint   // the number of containers open around i
		arrays uint64 // bit d: the container at depth d is an array
		v, m   uint64 // eight bytes of doc at i, and a SWAR mask of them
		hi     uint64 // the OR of a string's bytes, for their bit 7
		kw     uint64 // the bytes of key, if it has at most seven
		match  bool   // the current top-level member is named key
		kind   Kind   // the kind of the value ending at i, at done
		plain  bool   // whether that value is a plain string
		c      byte
		err    error
	)
	// Words are loaded as
	//
	//	j = min(i, n-8)
	//	v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
	//
	// so that the bytes past the end of doc read as zeros, which end
	// strings and digit runs: the scans below stop at n at the latest.

	// kw holds key's bytes in the order a word load reads them, made from
	// at most two overlapping four-byte halves (or three single bytes).
	switch kl := len(key); {
	case kl >= 4 && kl <= 7:
		kw = uint64(uint32(key[0])|uint32(key[1])<<8|uint32(key[2])<<16|uint32(key[3])<<24) |
			uint64(uint32(key[kl-4])|uint32(key[kl-3])<<8|uint32(key[kl-2])<<16|uint32(key[kl-1])<<24)<<(8*(kl-4))
	case kl >= 1 && kl <= 3:
		kw = uint64(key[0]) | uint64(key[kl/2])<<(8*(kl/2)) | uint64(key[kl-1])<<(8*(kl-1))
	}

	i = skipWS(b, 0)
	if i >= n || b[i] != '{' {
		goto full
	}
	depth = 1
	i = skipWS(b, i+1)
	if i < n && b[i] == '}' {
		i++
		goto end
	}

key: // i is at the first byte of a member, in an object
	if i >= n || b[i] != '"' {
		goto full
	}
	s = i
	i++
	j = min(i, n-8)
	v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
	hi = 0
	for m = swarStrSpecial(v); m == 0; m = swarStrSpecial(v) {
		hi |= v
		i += 8
		j = min(i, n-8)
		v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
	}
	hi |= v & (1<<uint(bits.TrailingZeros64(m)) - 1)
	i += bits.TrailingZeros64(m) >> 3
	if i < n && b[i] == '"' {
		i++
		plain = hi&swarHigh == 0
	} else {
		// An escape, a control character or the end of doc.
		p := parser{buf: b}
		if i, plain, err = p.str(s); err != nil {
			goto full
		}
	}
	if depth == 1 {
		// As find compares names.
		if !plain {
			match = keyEquals(b[s+1:i-1], key)
		} else if l := i - s - 2; l != len(key) {
			match = false
		} else if l <= 7 {
			// The name and its closing quote were in the first word
			// loaded, which is still v.
			match = v&(1<<(8*uint(l))-1) == kw
		} else {
			match = string(b[s+1:i-1]) == key
		}
	}
	i = skipWS(b, i)
	if i >= n || b[i] != ':' {
		goto full
	}
	i = skipWS(b, i+1)
	if depth == 1 {
		vs = i
		if match && len(path) > 1 {
			// Follow the rest of the path with find, as getFull does. A
			// scalar has no fields: it is read below, with found reset.
			found = Value{}
			match = false
			if i < n && (b[i] == '{' || b[i] == '[') {
				p := parser{buf: b, depth: 1}
				if i, err = p.find(i, path[1:], &found); err != nil {
					goto full
				}
				goto done
			}
		}
	}

value: // i is at the first byte of a value, in a container
	if i >= n {
		goto full
	}
	c = b[i]
	switch {
	case c == '"':
		s = i
		i++
		j = min(i, n-8)
		v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
		hi = 0
		for m = swarStrSpecial(v); m == 0; m = swarStrSpecial(v) {
			hi |= v
			i += 8
			j = min(i, n-8)
			v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
		}
		hi |= v & (1<<uint(bits.TrailingZeros64(m)) - 1)
		i += bits.TrailingZeros64(m) >> 3
		if i < n && b[i] == '"' {
			i++
			plain = hi&swarHigh == 0
		} else {
			p := parser{buf: b}
			if i, plain, err = p.str(s); err != nil {
				goto full
			}
		}
		kind = String

	case c-'0' <= 9 || c == '-':
		// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
		kind, plain = Number, false
		if c == '-' {
			i++
			if i >= n || b[i]-'0' > 9 {
				goto full
			}
			c = b[i]
		}
		i++
		if c != '0' {
			j = min(i, n-8)
			v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
			for m = swarNonDigit(v); m == 0; m = swarNonDigit(v) {
				i += 8
				j = min(i, n-8)
				v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		if i < n && b[i] == '.' {
			i++
			if i >= n || b[i]-'0' > 9 {
				goto full
			}
			i++
			j = min(i, n-8)
			v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
			for m = swarNonDigit(v); m == 0; m = swarNonDigit(v) {
				i += 8
				j = min(i, n-8)
				v = binary.LittleEndian.Uint64(b[j:]) >> (8 * uint(i-j))
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		if i < n && b[i]|0x20 == 'e' {
			i++
			if i < n && (b[i] == '+' || b[i] == '-') {
				i++
			}
			if i >= n || b[i]-'0' > 9 {
				goto full
			}
			for i < n && b[i]-'0' <= 9 {
				i++
			}
		}

	case c == '{':
		depth++
		if depth > fastMaxDepth {
			goto full
		}
		arrays &^= 1 << depth
		i = skipWS(b, i+1)
		if i < n && b[i] == '}' {
			i++
			depth--
			kind, plain = Object, false
			goto done
		}
		goto key

	case c == '[':
		depth++
		if depth > fastMaxDepth {
			goto full
		}
		arrays |= 1 << depth
		i = skipWS(b, i+1)
		if i < n && b[i] == ']' {
			i++
			depth--
			kind, plain = Array, false
			goto done
		}
		goto value

	case c == 't' && i+4 <= n && binary.LittleEndian.Uint32(b[i:]) == 't'|'r'<<8|'u'<<16|'e'<<24:
		kind, plain = Bool, false
		i += 4
	case c == 'f' && i+5 <= n && binary.LittleEndian.Uint32(b[i+1:]) == 'a'|'l'<<8|'s'<<16|'e'<<24:
		kind, plain = Bool, false
		i += 5
	case c == 'n' && i+4 <= n && binary.LittleEndian.Uint32(b[i:]) == 'n'|'u'<<8|'l'<<16|'l'<<24:
		kind, plain = Null, false
		i += 4

	default:
		goto full
	}

done: // a value of kind (and plain) ends at i, in a container
	if depth == 1 && match {
		found = Value{Kind: kind, Raw: b[vs:i], Offset: vs, plain: plain}
	}
	i = skipWS(b, i)
	if i >= n {
		goto full
	}
	c = b[i]
	i++
	if c == ',' {
		i = skipWS(b, i)
		if arrays&(1<<depth) == 0 {
			goto key
		}
		goto value
	}
	if arrays&(1<<depth) == 0 {
		if c != '}' {
			goto full
		}
		kind = Object
	} else {
		if c != ']' {
			goto full
		}
		kind = Array
	}
	plain = false
	depth--
	if depth > 0 {
		goto done // the container closed is a value in its parent
	}

end: // the top-level object ends at i
	if skipWS(b, i) == n {
		return found, nil
	}
full:
	return getFull(doc, path)
}
