package weir

import "github.com/weir-stream/weir/abi"

// The function types below are called by the SDK on the instance's single
// thread: InitFunc once when the host initialises the module, the others
// once per record, in batch order, never concurrently.

// InitFunc receives the operator's configuration, as the pipeline gives it
// (a JSON document; empty when the pipeline gives none). The slice is the
// function's own copy and may be kept. Returning an error rejects the
// module: the host reports the error's text and does not start the
// operator.
type InitFunc func(config []byte) error

// MapFunc returns the new value for r. Returning r.Value itself (the same
// slice, not an equal copy) keeps the input record unchanged, which costs
// the host no copy. Returning nil sets an absent (null) value; return
// []byte{} for an empty one. The returned slice is copied before the next
// record, so a function may reuse one buffer for every result.
type MapFunc func(r *Record) ([]byte, error)

// MapToFunc is the richer map function: it writes its result through out,
// which can build the value directly in the output frame and set the key,
// timestamp and headers. If it sets nothing, the input record is kept
// unchanged. See Output.
type MapToFunc func(r *Record, out *Output) error

// FlatMapFunc emits zero or more records for r through emit. See Emitter.
//
// If it returns an error (or panics), the host rejects r and discards every
// record already emitted for it. Those records stay in the output frame,
// followed by the error entry, because an ABI output frame cannot be
// truncated; the ABI defines that an error entry discards the other entries
// for the same input.
type FlatMapFunc func(r *Record, emit *Emitter) error

// FilterFunc reports whether to keep r. Kept records pass through
// unchanged.
type FilterFunc func(r *Record) (bool, error)

// handlers are the registered functions. Registration happens in package
// init, before the host makes any call.
var handlers struct {
	init    InitFunc
	mapFn   MapFunc
	mapTo   MapToFunc
	flatMap FlatMapFunc
	filter  FilterFunc
}

// Init registers the function that receives the operator's configuration
// when the host initialises the module. It is optional.
//
// Call the registration functions (Init, Map, MapTo, FlatMap, Filter) from a
// package init function. Each kind can be registered once, and Map and
// MapTo are the same kind; registering a kind twice, or a nil function,
// panics, which makes the module fail to initialise.
func Init(fn InitFunc) {
	mustRegister(fn == nil, handlers.init != nil, "Init")
	handlers.init = fn
}

// Map registers the map function.
func Map(fn MapFunc) {
	mustRegister(fn == nil, mapRegistered(), "map")
	handlers.mapFn = fn
}

// MapTo registers a map function that writes its result through an Output.
func MapTo(fn MapToFunc) {
	mustRegister(fn == nil, mapRegistered(), "map")
	handlers.mapTo = fn
}

// FlatMap registers the flat_map function.
func FlatMap(fn FlatMapFunc) {
	mustRegister(fn == nil, flatMapRegistered(), "flat_map")
	handlers.flatMap = fn
}

// Filter registers the filter function.
func Filter(fn FilterFunc) {
	mustRegister(fn == nil, filterRegistered(), "filter")
	handlers.filter = fn
}

func mustRegister(isNil, dup bool, kind string) {
	if isNil {
		panic("weir: nil " + kind + " function")
	}
	if dup {
		panic("weir: " + kind + " function already registered")
	}
}

// registeredOps is the module's answer to abi.ExportOps: the operations
// with a registered function, so that the host refuses the module at load
// for an operator of another kind, although the module exports the entry
// points of every operation.
func registeredOps() abi.OpSet {
	var s abi.OpSet
	if mapRegistered() {
		s |= abi.OpMap.Bit()
	}
	if flatMapRegistered() {
		s |= abi.OpFlatMap.Bit()
	}
	if filterRegistered() {
		s |= abi.OpFilter.Bit()
	}
	if aggHandler != nil {
		s |= abi.OpAggregate.Bit()
	}
	return s
}
