package wasm

import (
	"fmt"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// Guest memory.
//
// wazero keeps a linear memory in a Go slice by default and grows it by
// copying into a bigger one, leaving the old copy to the garbage collector:
// a guest growing to its limit made the process hold several times the
// limit. Instead, each instance's memory is one mapping outside the Go
// heap (mapMemory), reserved at the plugin's limit and grown in place, so
// a grow copies nothing, the host holds at most what the guest touched,
// and closing the instance gives the memory back at once.
//
// The limit is enforced here too: the wazero runtime allows every module
// 4 GiB, and a grow past the plugin's limit is refused (memory.grow
// returns -1 to the guest) and remembered, so that the failure the guest
// then reports names the limit.

// guestMemory is one instance's linear memory. wazero calls Reallocate
// and Free; the Worker calls enter and leave around every guest call.
// Free may come from another goroutine (a Runtime closed while a call
// runs): the mapping is then released when the call leaves.
type guestMemory struct {
	w     *Worker
	limit uint64 // bytes
	buf   []byte // the reservation: mapped, or on the Go heap when mapping failed
	heap  bool
	state atomic.Int32 // memIdle, memBusy, memFreed, memBusyFreed
}

const (
	memIdle int32 = iota
	memBusy
	memFreed
	memBusyFreed
)

// allocate is the experimental.MemoryAllocator of the Worker's instances.
func (w *Worker) allocate(capBytes, maxBytes uint64) experimental.LinearMemory {
	m := &guestMemory{w: w, limit: min(maxBytes, uint64(w.p.cfg.MemoryLimitPages)*pageSize)}
	if buf, err := mapMemory(m.limit); err == nil {
		m.buf = buf
	} else {
		w.log.Warn("cannot map the guest memory outside the Go heap; using the heap", "bytes", m.limit, "error", err)
		m.heap, m.buf = true, make([]byte, 0, capBytes)
	}
	w.newMemory = m
	return m
}

// pageSize is a Wasm page: 64 KiB.
const pageSize = 64 << 10

// Reallocate implements experimental.LinearMemory: it returns the memory
// at size bytes, or nil (the grow fails) past the limit.
func (m *guestMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.w.refused(size, m.limit)
		return nil
	}
	if m.heap && size > uint64(cap(m.buf)) {
		grown := make([]byte, size, max(size, 2*uint64(cap(m.buf))))
		copy(grown, m.buf)
		m.buf = grown
	}
	if m.heap {
		m.buf = m.buf[:size]
		return m.buf
	}
	return m.buf[:size:size]
}

// Free implements experimental.LinearMemory.
func (m *guestMemory) Free() {
	for {
		switch s := m.state.Load(); s {
		case memIdle:
			if m.state.CompareAndSwap(s, memFreed) {
				m.release()
				return
			}
		case memBusy:
			if m.state.CompareAndSwap(s, memBusyFreed) {
				return // leave releases it
			}
		default:
			return
		}
	}
}

// enter marks a guest call as running on the memory.
func (m *guestMemory) enter() {
	if m != nil {
		m.state.CompareAndSwap(memIdle, memBusy)
	}
}

// leave marks the call done, releasing the memory if it was freed
// meanwhile.
func (m *guestMemory) leave() {
	if m == nil || m.state.CompareAndSwap(memBusy, memIdle) {
		return
	}
	if m.state.CompareAndSwap(memBusyFreed, memFreed) {
		m.release()
	}
}

func (m *guestMemory) release() {
	if !m.heap && m.buf != nil {
		unmapMemory(m.buf)
	}
	m.buf = nil
}

// refused records a grow past the limit, for the reason of the failure it
// is likely to cause.
func (w *Worker) refused(size, limit uint64) {
	if w.memRefused != "" {
		return // counted once a call
	}
	w.limitHit(limitMemory)
	w.memRefused = fmt.Sprintf("the guest asked for %s of memory, over its limit of %s (memory_limit_pages: %d)",
		sizeString(size), sizeString(limit), w.p.cfg.MemoryLimitPages)
}

// sizeString renders a byte count as "64 MiB", "1.5 KiB" or "300 B".
func sizeString(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return trimZero(float64(n)/(1<<20)) + " MiB"
	case n >= 1<<10:
		return trimZero(float64(n)/(1<<10)) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

func trimZero(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
