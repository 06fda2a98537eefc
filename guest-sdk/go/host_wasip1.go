//go:build wasip1

package weir

import (
	"runtime"
	"unsafe"
)

// The //go:wasmimport directives must spell their names as literals; a test
// (TestDirectivesMatchABI) checks each against the constants in package abi.

//go:wasmimport weir_v1 log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

//go:wasmimport weir_v1 state_get
func hostStateGet(index uint32, kptr unsafe.Pointer, klen uint32, vptr unsafe.Pointer, vcap uint32) int32

//go:wasmimport weir_v1 state_put
func hostStatePut(index uint32, kptr unsafe.Pointer, klen uint32, vptr unsafe.Pointer, vlen uint32) int32

//go:wasmimport weir_v1 state_delete
func hostStateDelete(index uint32, kptr unsafe.Pointer, klen uint32) int32

// defaultHost calls the real host imports.
type defaultHost struct{}

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func (defaultHost) log(level int32, msg string) {
	hostLog(level, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
	runtime.KeepAlive(msg)
}

func (defaultHost) stateGet(index uint32, key, dst []byte) int32 {
	n := hostStateGet(index, ptr(key), uint32(len(key)), ptr(dst), uint32(len(dst)))
	runtime.KeepAlive(key)
	runtime.KeepAlive(dst)
	return n
}

func (defaultHost) statePut(index uint32, key, value []byte) int32 {
	s := hostStatePut(index, ptr(key), uint32(len(key)), ptr(value), uint32(len(value)))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return s
}

func (defaultHost) stateDelete(index uint32, key []byte) int32 {
	s := hostStateDelete(index, ptr(key), uint32(len(key)))
	runtime.KeepAlive(key)
	return s
}
