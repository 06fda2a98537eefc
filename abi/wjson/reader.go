package wjson

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
)

// Kind is the type of a JSON value. It is a plain value, safe to copy and
// share.
type Kind uint8

// The kinds of JSON value. Invalid is the zero Kind: the kind of the zero
// Value, which lookups return when there is nothing at the path asked for.
const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

// String returns the kind's lower-case name, such as "number".
func (k Kind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case Null:
		return "null"
	case Bool:
		return "bool"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MaxDepth is the deepest nesting of arrays and objects the readers accept,
// the same limit as encoding/json's.
const MaxDepth = 10000

// SyntaxError reports a malformed document and the byte offset where it
// stopped being JSON. It holds no reference to the document and is not
// modified after it is returned.
type SyntaxError struct {
	Offset int    // byte offset into the document
	Msg    string // what was wrong, such as "unexpected end of JSON input"
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return "wjson: " + e.Msg + " at byte offset " + strconv.Itoa(e.Offset)
}

// ErrKind is wrapped by the errors of readers and accessors that were given
// a well-formed value of the wrong kind, such as Each on an array or Float on
// a string.
var ErrKind = errors.New("wrong kind of JSON value")

// KindError is the error for a well-formed value of the wrong kind. It wraps
// ErrKind. It is a plain value, not modified after it is returned.
type KindError struct {
	Want, Got Kind
}

// Error implements error.
func (e *KindError) Error() string {
	return "wjson: " + ErrKind.Error() + ": want " + e.Want.String() + ", got " + e.Got.String()
}

// Unwrap returns ErrKind.
func (e *KindError) Unwrap() error { return ErrKind }

// Value is one JSON value inside a document. The zero Value (Kind Invalid)
// stands for "not present".
//
// Raw aliases the document the Value was read from and is valid as long as
// that document is unchanged. Values returned by this package's readers hold
// well-formed JSON; the accessors tolerate a hand-made Value with malformed
// Raw by returning an error or a best-effort result, never by panicking.
type Value struct {
	Kind Kind
	// Raw is the exact source text of the value, without surrounding
	// whitespace: a string includes its quotes and escapes, a number is its
	// literal as written.
	Raw []byte
	// Offset is the byte offset of Raw within the document given to the
	// reader that produced the Value (for a Value's own methods, within that
	// Value's Raw).
	Offset int

	plain bool // a String without escapes or non-ASCII bytes: Raw[1:len-1] is its content
}

// Exists reports whether v is a value, that is whether a lookup found
// something.
func (v Value) Exists() bool { return v.Kind != Invalid }

// Valid reports whether doc is one well-formed JSON value, optionally
// surrounded by whitespace.
func Valid(doc []byte) bool {
	_, err := Parse(doc)
	return err == nil
}

// IsObject reports whether the well-formed JSON document doc (validated
// already, by Get or Parse) is an object: it looks only at its first byte
// after whitespace.
func IsObject(doc []byte) bool {
	for _, c := range doc {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// Parse validates doc and returns its top-level value.
func Parse(doc []byte) (Value, error) {
	p := parser{buf: doc}
	i := p.ws(0)
	k, end, plain, err := p.value(i)
	if err != nil {
		return Value{}, err
	}
	if err := p.eof(end); err != nil {
		return Value{}, err
	}
	return Value{Kind: k, Raw: doc[i:end], Offset: i, plain: plain}, nil
}

// getFull is Get by the full parser, for any document: the fallback of
// Get's fast path (getfast.go), and the reference FuzzGetFastMatchesFull
// holds it to.
func getFull(doc []byte, path []string) (Value, error) {
	p := parser{buf: doc}
	i := p.ws(0)
	var found Value
	end, err := p.find(i, path, &found)
	if err != nil {
		return Value{}, err
	}
	if err := p.eof(end); err != nil {
		return Value{}, err
	}
	return found, nil
}

// Each calls fn for each field of the object doc, in document order,
// including repeated names, until fn returns false. key is the field name as
// a Value of kind String (decode it with AppendString, or compare it with
// StringEquals).
//
// Each validates the whole document. It reads the document in one pass, so
// fn may already have been called for the fields before a syntax error; Each
// then returns the *SyntaxError. After fn returns false the rest of the
// document is still validated. If doc is well-formed but not an object, Each
// returns a *KindError without calling fn.
func Each(doc []byte, fn func(key, val Value) bool) error {
	p := parser{buf: doc}
	i := p.ws(0)
	if i < len(doc) && doc[i] != '{' {
		return p.wrongKind(i, Object)
	}
	end, err := p.object(i, fn)
	if err != nil {
		return err
	}
	return p.eof(end)
}

// ArrayEach calls fn for each element of the array doc, in order, with its
// 0-based index, until fn returns false. Like Each, it validates the whole
// document in one pass, and returns a *KindError for a well-formed document
// that is not an array.
func ArrayEach(doc []byte, fn func(i int, val Value) bool) error {
	p := parser{buf: doc}
	i := p.ws(0)
	if i < len(doc) && doc[i] != '[' {
		return p.wrongKind(i, Array)
	}
	end, err := p.array(i, fn)
	if err != nil {
		return err
	}
	return p.eof(end)
}

// Get is Get over v's own text: v.Get("a") is v's field "a".
func (v Value) Get(path ...string) (Value, error) { return Get(v.Raw, path...) }

// Each is Each over v's own text.
func (v Value) Each(fn func(key, val Value) bool) error { return Each(v.Raw, fn) }

// ArrayEach is ArrayEach over v's own text.
func (v Value) ArrayEach(fn func(i int, val Value) bool) error { return ArrayEach(v.Raw, fn) }

// parser validates a document held in buf. Its methods take the offset to
// read from and return the offset after what they read. It does not keep fn
// callbacks, so closures passed to the readers do not escape.
type parser struct {
	buf   []byte
	depth int
}

func (p *parser) ws(i int) int {
	for i < len(p.buf) {
		switch p.buf[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// eof checks that only whitespace follows the top-level value ending at i.
func (p *parser) eof(i int) error {
	i = p.ws(i)
	if i < len(p.buf) {
		return p.errChar(i, "after top-level value")
	}
	return nil
}

// wrongKind returns the error for a document whose top-level value, at i,
// is not of kind want: a syntax error if it is malformed, else a KindError.
func (p *parser) wrongKind(i int, want Kind) error {
	k, end, _, err := p.value(i)
	if err != nil {
		return err
	}
	if err := p.eof(end); err != nil {
		return err
	}
	return &KindError{Want: want, Got: k}
}

func (p *parser) errEOF() error {
	return &SyntaxError{Offset: len(p.buf), Msg: "unexpected end of JSON input"}
}

func (p *parser) errChar(i int, context string) error {
	return &SyntaxError{Offset: i, Msg: "invalid character " + quoteChar(p.buf[i]) + " " + context}
}

func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// value validates the value starting exactly at i and returns its kind,
// its end and, for a string, whether it is plain (see str).
func (p *parser) value(i int) (Kind, int, bool, error) {
	if i >= len(p.buf) {
		return Invalid, i, false, p.errEOF()
	}
	var (
		k   Kind
		end int
		err error
	)
	switch c := p.buf[i]; {
	case c == '"':
		end, plain, err := p.str(i)
		return String, end, plain, err
	case c == '{':
		k = Object
		end, err = p.object(i, nil)
	case c == '[':
		k = Array
		end, err = p.array(i, nil)
	case c == '-' || c >= '0' && c <= '9':
		k = Number
		end, err = p.num(i)
	case c == 't':
		k = Bool
		end, err = p.lit(i, "true")
	case c == 'f':
		k = Bool
		end, err = p.lit(i, "false")
	case c == 'n':
		k = Null
		end, err = p.lit(i, "null")
	default:
		return Invalid, i, false, p.errChar(i, "looking for beginning of value")
	}
	return k, end, false, err
}

func (p *parser) lit(i int, word string) (int, error) {
	for j := 1; j < len(word); j++ {
		if i+j >= len(p.buf) {
			return i + j, p.errEOF()
		}
		if p.buf[i+j] != word[j] {
			return i + j, p.errChar(i+j, "in literal "+word+" (expecting "+quoteChar(word[j])+")")
		}
	}
	return i + len(word), nil
}

func (p *parser) num(i int) (int, error) {
	b := p.buf
	if b[i] == '-' {
		i++
		if i >= len(b) {
			return i, p.errEOF()
		}
		if b[i] < '0' || b[i] > '9' {
			return i, p.errChar(i, "in numeric literal")
		}
	}
	if b[i] == '0' {
		i++
	} else {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) {
			return i, p.errEOF()
		}
		if b[i] < '0' || b[i] > '9' {
			return i, p.errChar(i, "after decimal point in numeric literal")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) {
			return i, p.errEOF()
		}
		if b[i] < '0' || b[i] > '9' {
			return i, p.errChar(i, "in exponent of numeric literal")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, nil
}

// strPlain marks the bytes that may appear in a string without ending it or
// starting an escape, and are not control characters.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str validates the string starting at i (a '"') and returns its end and
// whether it is plain: free of escapes and of non-ASCII bytes, so that its
// content is its own decoding.
// plainRun returns the offset of the first byte of b at or after i that
// ends a plain run of string content ('"', '\\' or a control character),
// or len(b), with the bytes passed ORed into hi. It reads eight bytes at a
// time while it can (swarStrSpecial).
func plainRun(b []byte, i int, hi uint64) (int, uint64) {
	for i+8 <= len(b) {
		v := binary.LittleEndian.Uint64(b[i:])
		if m := swarStrSpecial(v); m != 0 {
			n := bits.TrailingZeros64(m) / 8
			return i + n, hi | v&(1<<(8*n)-1)
		}
		hi |= v
		i += 8
	}
	for i < len(b) {
		c := b[i]
		if c < 0x20 || c == '"' || c == '\\' {
			break
		}
		hi |= uint64(c)
		i++
	}
	return i, hi
}

func (p *parser) str(i int) (end int, plain bool, err error) {
	b := p.buf
	i++
	escaped := false
	var hi uint64 // OR of the bytes seen: bit 7 of a byte marks non-ASCII
	for {
		i, hi = plainRun(b, i, hi)
		if i >= len(b) {
			return i, false, p.errEOF()
		}
		switch b[i] {
		case '"':
			return i + 1, !escaped && hi&swarHigh == 0, nil
		case '\\':
			escaped = true
			i++
			if i >= len(b) {
				return i, false, p.errEOF()
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for j := 0; j < 4; j++ {
					if i >= len(b) {
						return i, false, p.errEOF()
					}
					if unhex(b[i]) < 0 {
						return i, false, p.errChar(i, "in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				return i, false, p.errChar(i, "in string escape code")
			}
		default: // a control character
			return i, false, p.errChar(i, "in string literal")
		}
	}
}

func (p *parser) push(i int) error {
	p.depth++
	if p.depth > MaxDepth {
		return &SyntaxError{Offset: i, Msg: "exceeded max depth"}
	}
	return nil
}

// object validates the object starting at i (a '{'), calling fn, when not
// nil, for each member until it returns false.
func (p *parser) object(i int, fn func(key, val Value) bool) (int, error) {
	i, empty, err := p.open(i)
	if err != nil || empty {
		return i, err
	}
	b := p.buf
	for {
		kstart := i
		kend, kplain, vstart, err := p.member(i)
		if err != nil {
			return vstart, err
		}
		k, vend, vplain, err := p.value(vstart)
		if err != nil {
			return vend, err
		}
		if fn != nil && !fn(Value{Kind: String, Raw: b[kstart:kend], Offset: kstart, plain: kplain},
			Value{Kind: k, Raw: b[vstart:vend], Offset: vstart, plain: vplain}) {
			fn = nil
		}
		var done bool
		if i, done, err = p.next(vend, '}', "object key:value pair"); err != nil || done {
			return i, err
		}
	}
}

// open enters the object at i (a '{'). It returns the offset of the first
// member or, with empty set, the offset after an object without members.
func (p *parser) open(i int) (next int, empty bool, err error) {
	if err := p.push(i); err != nil {
		return i, false, err
	}
	i = p.ws(i + 1)
	if i >= len(p.buf) {
		return i, false, p.errEOF()
	}
	if p.buf[i] == '}' {
		p.depth--
		return i + 1, true, nil
	}
	return i, false, nil
}

// member reads the name of the member at i and the colon after it. It
// returns the end of the name (the name, quotes included, is buf[i:kend]),
// whether the name is plain (see str), and the offset of the value.
func (p *parser) member(i int) (kend int, plain bool, val int, err error) {
	b := p.buf
	if b[i] != '"' {
		return i, false, i, p.errChar(i, "looking for beginning of object key string")
	}
	if kend, plain, err = p.str(i); err != nil {
		return kend, false, kend, err
	}
	val = p.ws(kend)
	if val >= len(b) {
		return kend, plain, val, p.errEOF()
	}
	if b[val] != ':' {
		return kend, plain, val, p.errChar(val, "after object key")
	}
	return kend, plain, p.ws(val + 1), nil
}

// next reads the separator after a member or element ending at i. After a
// comma it returns the offset of the next member; after the closing byte it
// leaves the container (decrementing the depth) and returns the offset after
// it, with done set.
func (p *parser) next(i int, closing byte, what string) (next int, done bool, err error) {
	b := p.buf
	i = p.ws(i)
	if i >= len(b) {
		return i, false, p.errEOF()
	}
	switch b[i] {
	case ',':
		i = p.ws(i + 1)
		if i >= len(b) {
			return i, false, p.errEOF()
		}
		return i, false, nil
	case closing:
		p.depth--
		return i + 1, true, nil
	}
	return i, false, p.errChar(i, "after "+what)
}

// array validates the array starting at i (a '['), calling fn, when not nil,
// for each element until it returns false.
func (p *parser) array(i int, fn func(i int, val Value) bool) (int, error) {
	if err := p.push(i); err != nil {
		return i, err
	}
	b := p.buf
	i = p.ws(i + 1)
	if i >= len(b) {
		return i, p.errEOF()
	}
	if b[i] == ']' {
		p.depth--
		return i + 1, nil
	}
	for n := 0; ; n++ {
		start := i
		k, end, plain, err := p.value(i)
		if err != nil {
			return end, err
		}
		if fn != nil && !fn(n, Value{Kind: k, Raw: b[start:end], Offset: start, plain: plain}) {
			fn = nil
		}
		var done bool
		if i, done, err = p.next(end, ']', "array element"); err != nil || done {
			return i, err
		}
	}
}

// find validates the value at i and, following path through objects, sets
// *found to the value at its end (the last one, for repeated names).
func (p *parser) find(i int, path []string, found *Value) (int, error) {
	b := p.buf
	if len(path) == 0 {
		k, end, plain, err := p.value(i)
		if err == nil {
			*found = Value{Kind: k, Raw: b[i:end], Offset: i, plain: plain}
		}
		return end, err
	}
	if i >= len(b) || b[i] != '{' {
		_, end, _, err := p.value(i)
		return end, err
	}
	i, empty, err := p.open(i)
	if err != nil || empty {
		return i, err
	}
	for {
		kstart := i
		kend, kplain, vstart, err := p.member(i)
		if err != nil {
			return vstart, err
		}
		var end int
		key := b[kstart+1 : kend-1]
		if kplain && string(key) == path[0] || !kplain && keyEquals(key, path[0]) {
			*found = Value{}
			end, err = p.find(vstart, path[1:], found)
		} else {
			_, end, _, err = p.value(vstart)
		}
		if err != nil {
			return end, err
		}
		var done bool
		if i, done, err = p.next(end, '}', "object key:value pair"); err != nil || done {
			return i, err
		}
	}
}
