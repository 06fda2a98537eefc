//go:build linux || darwin || freebsd || netbsd || openbsd

package wasm

import "syscall"

// mapMemory reserves n bytes of zeroed, private, anonymous memory outside
// the Go heap. Pages take physical memory only once the guest touches
// them.
func mapMemory(n uint64) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	return syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
}

// unmapMemory releases what mapMemory returned.
func unmapMemory(b []byte) {
	if cap(b) > 0 {
		_ = syscall.Munmap(b[:cap(b)])
	}
}
