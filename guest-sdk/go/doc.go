// Package weir is the Go guest SDK for weir: it turns plain Go functions
// into a weir WebAssembly plugin implementing ABI v1 (package abi).
//
// A plugin is a main package that registers its functions in init and has
// an empty main:
//
//	package main
//
//	import (
//		"bytes"
//
//		weir "github.com/weir-stream/weir/guest-sdk/go"
//	)
//
//	func init() {
//		weir.Map(func(r *weir.Record) ([]byte, error) {
//			return bytes.ToUpper(r.Value), nil
//		})
//	}
//
//	func main() {}
//
// built with the stock Go toolchain as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// Under -buildmode=c-shared the host runs the module's _initialize export,
// which runs package initialisation (so init registers the functions) but
// never main.
//
// # Functions
//
// Register at most one function of each kind: Map or MapTo for the map
// operator, FlatMap for flat_map, Filter for filter, and optionally Init to
// receive the operator's configuration. A Go binary's exports are fixed, so
// the module exports all three batch entry points and the aggregate ones;
// it reports the kinds registered through the ABI's weir_ops export, and
// the host refuses at load a plugin used as an operator of another kind
// ("the plugin implements map, not filter"). A host that does not ask
// calls the entry point anyway, which rejects every record of the batch
// with the error "plugin has no <kind> handler".
//
// Each function is called once per record of a batch, in batch order. It
// answers with a value or with an error:
//
//   - An error returned by a function rejects that record: the host sends it
//     to the dead-letter output with the error's text.
//   - A panic in a function is recovered and rejects that record in the same
//     way, with the text "panic: " followed by the panic value. This is much
//     cheaper than letting the instance trap, after which the host must
//     instantiate the module again. (A Go runtime fatal error, such as
//     running out of memory, cannot be recovered and kills the instance.)
//
// # Typed fields
//
// A plugin that reads a few fields of JSON records can let the host parse
// them (ABI.md §14): Fields declares the fields, by path and type, and
// TypedMap, TypedFlatMap or TypedFilter registers a function that reads
// them from a Row, by their index in the declaration, and answers with a
// Patch that the host applies to the record's value:
//
//	func init() {
//		weir.Fields(weir.IntField("price", weir.Strict), weir.StringField("channel", 0))
//		weir.TypedMap(func(r *weir.Row, p *weir.Patch) error {
//			if price, ok := r.Int(0); ok {
//				p.SetFloat("euros", float64(price)*0.908)
//			}
//			return nil
//		})
//	}
//
// The host reads each record once, natively; the function decodes
// nothing, and the host writes the patched value, keeping every byte the
// patch does not touch. Records whose fields break the declaration
// (Required: missing or null; Strict: another type) are dead-lettered by
// the host with the path and the reason, and never reach the function.
// A typed function and a raw one of the same kind cannot both be
// registered; a module with no typed function answers the host's
// weir_fields call with nothing, and stays a raw module.
//
// TypedMapBatch and TypedFilterBatch register the same functions for a
// whole batch: one call a batch, reading whole columns and answering the
// records in increasing order (Keep, Reject, Patch). In Go's wasm code a
// call through a function value costs more than reading a field, so a
// batch function's own loop is the fastest way through a batch:
//
//	weir.TypedMapBatch(func(b *weir.Batch) error {
//		prices := b.Floats(0)
//		for i := range b.Len() {
//			if price, ok := prices.Get(i); ok {
//				b.Patch(i).SetFloat("euros", price*0.908)
//			}
//		}
//		return nil
//	})
//
// A map keeps the records it does not answer, a filter drops them; an
// error or a panic rejects the whole batch.
//
// TypedAggregate registers an aggregate whose Add reads a Row in the same
// way: the functions and the Codec are those of Aggregate, but Add is
// func(acc A, r *Row) (A, error). The host folds only the records that
// pass the declaration:
//
//	func init() {
//		weir.Fields(weir.FloatField("n", weir.Required|weir.Strict))
//		weir.TypedAggregate(weir.TypedAggregateFuncs[avg]{
//			Add: func(a avg, r *weir.Row) (avg, error) {
//				n, _ := r.Float(0)
//				return avg{a.sum + n, a.count + 1}, nil
//			},
//			Merge:  mergeAvg,
//			Result: writeAvg,
//			Codec:  avgCodec,
//		})
//	}
//
// # Aggregates
//
// Aggregate registers an aggregate, the equivalent of Flink's
// AggregateFunction, for window operators: Create makes an empty
// accumulator, Add folds a record into one, Merge combines two (sessions and
// sliding-window panes need it), and Result turns one into the output value.
// Accumulators are typed in Go and stored by the host as bytes, through the
// Codec given with the functions; the host keeps one per key and window.
// Add's errors and panics reject just that record. ResultCtx, set instead
// of Result, is also given the group's AggContext: its key and window
// bounds (the module exports weir_agg_result_ctx, ABI.md §12.5).
//
// # Records and lifetimes
//
// A Record's slices alias the batch the host wrote into guest memory. They
// are valid only until the function returns and must not be modified; copy
// anything that must outlive the call. The same holds for the Output and
// Emitter a function is given, and for slices returned by state reads,
// which are valid until the next state call.
//
// # State
//
// ValueState and MapState read and write keyed state through the host. The
// host scopes every state entry to the operator and to the key of the record
// the call is made for, so a function sees only the state of the current
// record's key. State calls are only possible while a record is being
// processed, not in Init.
//
// # Concurrency
//
// The host calls a plugin instance from one thread, one call at a time, and
// so the SDK keeps its buffers in package-level variables without locks.
// Functions must not use the SDK (records, outputs, state, logging) from
// goroutines they start.
//
// # Garbage collection
//
// The Go wasip1 runtime only collects garbage at scheduling points, which
// export calls alone do not provide; after some hundred thousand allocating
// calls memory would grow without bound. The module therefore exports the
// ABI's optional weir_gc hook, which calls runtime.Gosched, and the host
// calls it at least every abi.GCEveryCalls batches.
//
// Package github.com/weir-stream/weir/abi/wjson is a reflection-free JSON
// reader and writer for use in plugins (the host uses it too);
// encoding/json is more than ten times slower in a wasm guest. The slot
// keys of ValueState, MapState and ListState are package abi's state slot
// convention (abi.AppendStateKey), which every weir SDK shares.
package weir
