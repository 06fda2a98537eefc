//go:build wasip1

package weir

import "github.com/weir-stream/weir/abi"

// typedAggProc runs the module's weir_typed_agg_add calls.
var typedAggProc typedAggProcessor

// exportTypedAggAdd is the typed aggregate's add (ABI.md §14.5); create,
// merge and result are the raw aggregate's exports. In a module without a
// typed aggregate it rejects every record, as weir_agg_add does without
// an aggregate. (Its directive is checked by TestTypedAggDirective.)
//
//go:wasmexport weir_typed_agg_add
func exportTypedAggAdd(ptr, n uint32) uint64 {
	out, err := typedAggProc.add(inputFrame(ptr, n))
	if err != nil {
		panic(err)
	}
	return abi.Pack(addr(out), uint32(len(out)))
}
