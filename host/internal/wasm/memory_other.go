//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package wasm

import "errors"

// mapMemory is not available here: guest memory lives on the Go heap.
func mapMemory(uint64) ([]byte, error) {
	return nil, errors.New("no anonymous memory mappings on this platform")
}

func unmapMemory([]byte) {}
