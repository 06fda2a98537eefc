//go:build wasip1

package weir

import (
	"runtime"
	"unsafe"

	"github.com/weir-stream/weir/abi"
)

// The exports of ABI v1. The //go:wasmexport directives must spell their
// names as literals; TestDirectivesMatchABI checks each against package abi.
//
// A malformed call (input outside the weir_alloc region, a malformed batch
// frame) is a host bug. The exports panic on it, and since nothing recovers
// the panic the Go runtime prints it to standard error and aborts with a
// WebAssembly trap (unreachable), which the host sees as the instance dying.

// initMsg keeps weir_init's error text alive for the host to read.
var initMsg []byte

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func inputFrame(ptr, n uint32) []byte {
	var base uint32
	if input.buf != nil {
		base = addr(input.buf)
	}
	b, err := input.frame(base, ptr, n)
	if err != nil {
		panic(err)
	}
	return b
}

//go:wasmexport weir_abi_v1
func exportVersion() {}

//go:wasmexport weir_alloc
func exportAlloc(size uint32) uint32 {
	b := input.alloc(size)
	if b == nil {
		return 0
	}
	return addr(b)
}

//go:wasmexport weir_init
func exportInit(ptr, n uint32) uint64 {
	msg := runInit(inputFrame(ptr, n))
	if msg == "" {
		initMsg = nil
		return abi.Pack(0, 0)
	}
	initMsg = []byte(msg)
	return abi.Pack(addr(initMsg), uint32(len(initMsg)))
}

func runBatch(op abi.Op, ptr, n uint32) uint64 {
	out, err := proc.run(op, inputFrame(ptr, n))
	if err != nil {
		panic(err)
	}
	return abi.Pack(addr(out), uint32(len(out)))
}

//go:wasmexport weir_map
func exportMap(ptr, n uint32) uint64 { return runBatch(abi.OpMap, ptr, n) }

//go:wasmexport weir_flat_map
func exportFlatMap(ptr, n uint32) uint64 { return runBatch(abi.OpFlatMap, ptr, n) }

//go:wasmexport weir_filter
func exportFilter(ptr, n uint32) uint64 { return runBatch(abi.OpFilter, ptr, n) }

// The typed convention's exports (ABI.md §14). weir_fields returns the
// empty region unless a typed function (or a typed aggregate) is
// registered: the module is then a raw one, though it exports the typed
// entry points. weir_typed_agg_add is in typed_aggregate_wasip1.go.

//go:wasmexport weir_fields
func exportFields() uint64 {
	d := moduleFields()
	if d == nil {
		return abi.Pack(0, 0)
	}
	return abi.Pack(addr(d), uint32(len(d)))
}

func runTyped(op abi.Op, ptr, n uint32) uint64 {
	out, err := typedProcessor.run(op, inputFrame(ptr, n))
	if err != nil {
		panic(err)
	}
	return abi.Pack(addr(out), uint32(len(out)))
}

//go:wasmexport weir_typed_map
func exportTypedMap(ptr, n uint32) uint64 { return runTyped(abi.OpMap, ptr, n) }

//go:wasmexport weir_typed_flat_map
func exportTypedFlatMap(ptr, n uint32) uint64 { return runTyped(abi.OpFlatMap, ptr, n) }

//go:wasmexport weir_typed_filter
func exportTypedFilter(ptr, n uint32) uint64 { return runTyped(abi.OpFilter, ptr, n) }

// The aggregate exports. weir_agg_create has no way to report an error but
// to trap: in a module without a registered aggregate it panics, so that
// the host, which calls it when it loads an aggregate operator, refuses the
// module with the panic's message.

//go:wasmexport weir_agg_create
func exportAggCreate() uint64 {
	acc, err := aggProc.create()
	if err != nil {
		panic("weir: " + abi.ExportAggCreate + ": " + err.Error())
	}
	return abi.Pack(addr(acc), uint32(len(acc)))
}

func runAgg(fn func(*aggProcessor, []byte) ([]byte, error), ptr, n uint32) uint64 {
	out, err := fn(&aggProc, inputFrame(ptr, n))
	if err != nil {
		panic(err)
	}
	return abi.Pack(addr(out), uint32(len(out)))
}

//go:wasmexport weir_agg_add
func exportAggAdd(ptr, n uint32) uint64 { return runAgg((*aggProcessor).add, ptr, n) }

//go:wasmexport weir_agg_merge
func exportAggMerge(ptr, n uint32) uint64 { return runAgg((*aggProcessor).merge, ptr, n) }

//go:wasmexport weir_agg_result
func exportAggResult(ptr, n uint32) uint64 { return runAgg((*aggProcessor).result, ptr, n) }

// exportAggResultCtx is weir_agg_result_ctx (ABI.md §12.5), which a host
// that knows it calls instead of weir_agg_result: each result gets its
// group's context (AggregateFuncs.ResultCtx).
//
//go:wasmexport weir_agg_result_ctx
func exportAggResultCtx(ptr, n uint32) uint64 { return runAgg((*aggProcessor).resultCtx, ptr, n) }

// exportOps reports the operations of the registered functions. The host
// calls it after weir_init; the functions are registered in package init,
// which _initialize ran before.
//
//go:wasmexport weir_ops
func exportOps() uint32 { return uint32(registeredOps()) }

// exportGC gives the Go runtime the scheduling point it needs to run the
// garbage collector between export calls.
//
//go:wasmexport weir_gc
func exportGC() { runtime.Gosched() }
