package weir

import "fmt"

// maxInput is the largest region weir_alloc hands out; larger requests
// return 0, the ABI's "could not allocate".
const maxInput = 1 << 30

// minInput is the smallest region weir_alloc allocates.
const minInput = 4 << 10

// inputBuffer is the single region weir_alloc gives the host to write call
// input (config, batch frames) into. It is kept in a package variable so the
// garbage collector keeps it alive; growing it replaces it, releasing the
// old one.
type inputBuffer struct {
	buf []byte
}

var input inputBuffer

// alloc returns a region of at least size bytes, reusing the current one
// when it is big enough, or nil when size is over maxInput. Growth rounds up
// to a power of two, so a host growing its batches step by step causes few
// reallocations.
func (b *inputBuffer) alloc(size uint32) []byte {
	if size > maxInput {
		return nil
	}
	if b.buf == nil || cap(b.buf) < int(size) {
		n := minInput
		for n < int(size) {
			n *= 2
		}
		b.buf = make([]byte, n)
	}
	return b.buf[:cap(b.buf)]
}

// frame returns the n bytes at guest address addr, given that the region
// starts at guest address base. They must lie inside the region: the ABI
// has the host write call input only there. An empty input needs no region.
func (b *inputBuffer) frame(base, addr, n uint32) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	off := uint64(addr) - uint64(base)
	if addr < base || off+uint64(n) > uint64(cap(b.buf)) {
		return nil, fmt.Errorf("weir: input at %#x+%d is outside the weir_alloc region %#x+%d", addr, n, base, cap(b.buf))
	}
	return b.buf[off : off+uint64(n) : off+uint64(n)], nil
}
