package meter

// reader decodes a window [pos, end) of the module binary. Positions are
// offsets in the whole binary, so that errors can name them. The first
// failure is sticky: later reads return zero values and leave it unchanged,
// so callers check failed() once per instruction or entry.
type reader struct {
	b     []byte // the whole module binary
	pos   int
	end   int
	badAt int    // offset of the first failure, or -1
	why   string // what the first failure was
}

func newReader(b []byte, pos, end int) reader {
	return reader{b: b, pos: pos, end: end, badAt: -1}
}

// sub returns a reader of the next n bytes, and moves r past them.
func (r *reader) sub(n uint32) reader {
	s := newReader(r.b, r.pos, r.pos)
	if uint64(n) > uint64(r.end-r.pos) {
		r.fail("truncated")
		s.fail("truncated")
		return s
	}
	s.end = r.pos + int(n)
	r.pos = s.end
	return s
}

func (r *reader) failed() bool { return r.badAt >= 0 }

func (r *reader) fail(why string) {
	if r.badAt < 0 {
		r.badAt, r.why = r.pos, why
	}
}

// adopt records the failure of s, a reader of part of r's window, in r.
func (r *reader) adopt(s *reader) {
	if s.failed() && r.badAt < 0 {
		r.badAt, r.why = s.badAt, s.why
	}
}

func (r *reader) byte() byte {
	if r.pos >= r.end {
		r.fail("truncated")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) skip(n int) {
	if n > r.end-r.pos {
		r.fail("truncated")
		r.pos = r.end
		return
	}
	r.pos += n
}

// u32 decodes an unsigned LEB128 of at most 5 bytes whose value fits in
// 32 bits, as wazero does.
func (r *reader) u32() uint32 {
	if r.pos < r.end && r.b[r.pos] < 0x80 {
		c := r.b[r.pos]
		r.pos++
		return uint32(c)
	}
	var v uint32
	for i := 0; i < 5; i++ {
		c := r.byte()
		if r.failed() {
			return 0
		}
		if i == 4 && c > 0x0f {
			break
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	r.fail("malformed LEB128")
	return 0
}

// sleb skips a signed or unsigned LEB128 of at most max bytes and returns
// its low 32 bits, sign-extended. It leaves range checks of the last byte
// to wazero: Instrument copies such immediates verbatim.
func (r *reader) sleb(max int) int32 {
	var v int32
	for i := 0; i < max; i++ {
		c := r.byte()
		if r.failed() {
			return 0
		}
		if i < 5 {
			v |= int32(c&0x7f) << (7 * i)
		}
		if c < 0x80 {
			if i < 4 && c&0x40 != 0 {
				v |= -1 << (7 * (i + 1))
			}
			return v
		}
	}
	r.fail("malformed LEB128")
	return 0
}

// valType skips a value or reference type: one byte, or 0x63/0x64 followed
// by a heap type (wazero accepts these abstract forms without GC features).
func (r *reader) valType() {
	if c := r.byte(); c == refNull || c == refNonNull {
		r.sleb(5)
	}
}

// blockType skips a block type: 0x40, a value type, or a type index.
func (r *reader) blockType() {
	if v := r.sleb(5); v == refNull-0x80 || v == refNonNull-0x80 {
		r.sleb(5)
	}
}

// refNullType skips the immediate of ref.null: an abstract heap type byte,
// or, as wazero reads it, a type index.
func (r *reader) refNullType() {
	if r.pos < r.end {
		switch r.b[r.pos] {
		case 0x70, 0x6f, 0x69: // func, extern, exn
			r.pos++
			return
		}
	}
	r.u32()
}

// name skips a length-prefixed byte string and returns it.
func (r *reader) name() []byte {
	n := r.u32()
	start := r.pos
	r.skip(int(min(n, uint32(r.end-r.pos+1))))
	if r.failed() {
		return nil
	}
	return r.b[start:r.pos]
}

// limits skips table or memory limits.
func (r *reader) limits() {
	switch r.byte() {
	case 0x00, 0x02:
		r.u32()
	case 0x01, 0x03:
		r.u32()
		r.u32()
	default:
		r.fail("bad limits flag")
	}
}

const (
	refNull    = 0x63 // (ref null ht)
	refNonNull = 0x64 // (ref ht)
)
