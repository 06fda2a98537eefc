package meter

// writer builds the output as spans of the input copied verbatim, with
// edits in between: mark is where the next span starts in the input, and
// everything before it is already in out (copied, edited or dropped).
type writer struct {
	in   []byte
	out  []byte
	mark int
}

// flush copies the input from mark up to pos.
func (w *writer) flush(pos int) {
	w.out = append(w.out, w.in[w.mark:pos]...)
	w.mark = pos
}

// replace flushes up to from and skips the input up to to, whose bytes
// the caller replaces with what it appends next.
func (w *writer) replace(from, to int) {
	w.flush(from)
	w.mark = to
}

func (w *writer) u32(v uint32) {
	w.out = appendU32(w.out, v)
}

// openSize appends room for a size of width bytes and returns where it is.
func (w *writer) openSize(width int) int {
	at := len(w.out)
	w.out = append(w.out, make([]byte, width)...)
	return at
}

// closeSize writes, at at, the size of what follows the width bytes of room
// there. It keeps the room's width when the size fits in it (a padded
// LEB128 stays padded), else it moves what follows to make room.
func (w *writer) closeSize(at, width int) {
	size := len(w.out) - at - width
	if need := uleb128Len(uint64(size)); need > width {
		w.out = append(w.out, make([]byte, need-width)...)
		copy(w.out[at+need:], w.out[at+width:])
		width = need
	}
	putPaddedU32(w.out[at:at+width], uint32(size))
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// putPaddedU32 encodes v in exactly len(dst) bytes.
func putPaddedU32(dst []byte, v uint32) {
	last := len(dst) - 1
	for i := range dst {
		c := byte(v & 0x7f)
		v >>= 7
		if i < last {
			c |= 0x80
		}
		dst[i] = c
	}
}

func uleb128Len(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
