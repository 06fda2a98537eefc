// Package wasm is the host side of weir's plugin ABI (package abi): it
// loads WebAssembly plugins under wazero, validates them, and runs batches
// of records through them.
//
// # Types and concurrency
//
//   - Runtime is process-wide and safe for concurrent use. It keeps one
//     wazero.Runtime for every plugin, with one compilation cache (on disk
//     with RuntimeOptions.CacheDir); memory limits and deadlines are each
//     instance's and each call's own.
//   - Plugin is one operator's compiled, validated module, safe for
//     concurrent use. It is compiled once; each NewWorker instantiates it.
//   - Worker is one instance of the module. It is not safe for concurrent
//     use: each worker goroutine owns one (Worker.Stats is the exception).
//   - record.Output is caller-owned and reused from batch to batch.
//
// # Lifecycle
//
// Load checks the bytes are Wasm, rewrites them for the sandbox (below),
// compiles them, and validates the module
// statically: it must export abi.ExportVersion (a module declaring another
// version is rejected with ErrABIVersion), abi.ExportAlloc, abi.ExportInit
// and the export of the operator's abi.Op (for abi.OpAggregate, all of
// abi.AggregateExports), each with its ABI signature, and
// import only functions weir provides, with their signatures: WASI preview
// 1, the host functions of abi.ImportModule, and env.abort (AssemblyScript).
// Every error names the operator and the module's path and wraps a
// sentinel (ErrInvalidModule, ErrABIVersion, ErrInit, ErrInstantiate,
// ErrConfig) for the CLI to map to an exit code.
//
// Load then makes the first instance, which NewWorker hands out first, so
// that a module that cannot start fails at Load. After initialisation, a
// module that exports abi.ExportOps is asked for the operations it
// registered, and Load fails with ErrInvalidModule when the operator's is
// not among them; a module without it is judged by its exports. A module
// that exports abi.ExportFields may be typed (below): Load then calls it
// once and compiles the declaration (fields.Compile), failing with
// ErrInvalidModule and the declaration's error, which names the field. Instantiating runs no
// start function; the host runs abi.ExportInitialize when exported, then
// writes the config into a region from weir_alloc and calls weir_init,
// whose error text fails the load; both under the plugin's deadline, so a
// module that hangs at start fails Load with ErrInit. Instances get WASI
// with no preopened directories, no environment, no arguments beyond the
// operator name and no sockets; clocks and randomness are real, and sleeps
// end at the call's deadline.
//
// # The sandbox
//
// No guest can hold the process (sandbox.go, memory.go, and
// RATIONALE.md#sandbox for what was measured):
//
//   - Every module is rewritten at load (package meter) to call back into
//     the host at bounded intervals from its loops and function entries.
//     That callback is where the Go scheduler and garbage collector can
//     stop the goroutine, so a looping guest cannot stall the process, and
//     where a call past its deadline (PluginConfig.Timeout, DefaultTimeout
//     when unset) or whose context is done is interrupted.
//   - Each instance's linear memory is mapped outside the Go heap at the
//     plugin's limit and grows in place: no copies on growth, released when
//     the instance closes. A grow past the limit fails in the guest, and
//     the failure it causes names the limit.
//   - Limits bound what one call can make the host hold: state values, the
//     state written in a call (a record's rewrite of a key replaces its
//     earlier write), and its output. A call over a limit is discarded and
//     re-run a record at a time, as for a trap, without replacing the
//     instance.
//
// Instantiation takes milliseconds (a Go guest runs its runtime's
// initialisation), so it happens at Load and NewWorker, and on the hot path
// only to replace an instance after a trap.
//
// # The batch call
//
// Process encodes the batch with abi.AppendBatchHeader, AppendRecord and
// AppendHeader into a reused buffer, writes it into the guest's weir_alloc
// region in one copy (asking for a bigger region only when it does not
// fit), and calls the operator's export through api.Function.CallWithStack
// with a reused stack. The output frame is read as a view of guest memory,
// decoded and checked at once (abi.OutputReader, abi.CheckOrder, and one
// entry per input for map), and whatever is kept is copied into the
// record.Output's arena. A keep entry is the input record itself, so the identity
// path copies nothing and allocates nothing. A record entry inherits key,
// timestamp and headers from its input unless it sets them; every output
// record keeps its input's Origin. The host calls abi.ExportGC, when
// exported, after every abi.GCEveryCalls batch calls.
//
// # Typed fields
//
// A typed module (ABI.md §14; typed.go) exports abi.ExportFields and
// answers it with a declaration; one that answers with the empty region
// is a raw module (an SDK exporting every entry point does so when no
// typed function is registered). Until Load has asked, an operation of a
// module exporting abi.ExportFields counts as implemented by its raw or
// its typed exports; once it has, Load refuses the module when the
// exports of the convention it selected are missing, naming them. A typed
// module's Worker calls the typed export of its operator
// (abi.Op.TypedExport; for aggregate, abi.ExportTypedAggAdd beside create,
// merge and result) instead of the raw one. Per batch, the Worker's
// fields.Extractor reads the declared fields of every record: a record
// whose value is not JSON or whose fields break their policy becomes a
// dead letter at once, with Reason "<op> error: <reason>" (such as `map
// error: field "price": want int, found string`), and never reaches the
// guest. The others are written as one typed batch frame, through the
// same input region and batch call as a raw frame; its record indexes,
// which the output entries and the state calls use, are those of the
// records kept. The typed output frame is decoded and checked as the raw
// one (abi.TypedOutputReader, abi.CheckTypedOrder); a patch entry emits
// its input with its value patched by the Worker's fields.Patcher (from
// {} for abi.PatchFlagNew), its key and timestamp where flagged, and the
// input's headers and origin; the value is copied out of the Patcher at
// once. A patch that cannot apply (a *fields.PatchError) dead-letters its
// input with the reason; one whose raw value is not JSON
// (fields.ErrBadRawValue), like any frame breaking the rules, fails the
// call as a trap. A typed add call extracts the records of all its groups
// at once and sends the typed add frame of the groups' kept records.
// Once its buffers have grown, a typed batch call allocates nothing per
// record beyond the output it copies.
//
// # Host functions
//
// Host modules are instantiated once per wazero runtime and shared by its
// instances, so a host function cannot capture its Worker. Each guest call
// instead passes a context that carries the Worker, and wazero hands that
// context to the host functions the guest calls. The Worker reuses one such
// context and only swaps its parent per call, so finding the Worker costs
// a type assertion and no allocation.
//
// abi.ImportLog logs a guest line, tagged with the operator, truncated to
// abi.MaxLogLine and rate-limited per Worker (a token bucket of 100 lines a
// second, burst 100); dropped lines are counted in Stats and reported at
// most every 10 seconds and at Close. The guest's stdout and stderr are
// logged line by line too, up to 64 KiB per instance, after which one
// "guest output truncated" line is logged.
//
// The state functions are scoped to the operator and to the key of the
// batch record the guest names by index (state.Key). Outside a batch call
// they return abi.StatusNoContext; a bad index, StatusBadIndex; a key or
// value over abi.MaxStateKey or the plugin's Limits, StatusTooLarge (and a
// value or writes over the Limits fail the call, as above); a pointer
// outside guest memory, StatusBadMemory.
//
// # State overlay
//
// State writes during a batch call go to a per-call overlay, each tagged
// with the index of the record it is scoped to. Reads see the overlay first
// (a record sees the writes of earlier records in the same call), then the
// Store. When the call succeeds, the overlay is committed with one
// Store.Apply, leaving out the writes made for records that ended in an
// error entry: a rejected record's state writes are discarded. (Values that
// later records in the same call derived from such a write are kept: the
// guest saw it.) When the call fails, the whole overlay is discarded, so
// nothing of a failed call is half-applied. A Store error fails the guest
// call and makes Process return an error wrapping ErrState; it is fatal,
// not a trap.
//
// # Errors and trap recovery
//
// An error entry sends its input to the dead letters (record.DeadLetter
// with Stage the operator and Reason "<op> error: <message>") and discards
// every other entry for that input.
//
// Any failure of the call itself is treated as a trap: a Wasm trap, a WASI
// proc_exit (a Go guest's os.Exit or fatal panic), the call's deadline,
// weir_alloc failing, or an output frame that is malformed or breaks the
// ordering rules (guest bugs). The instance is
// closed, and its outputs and state writes for the batch discarded; the
// next call makes a fresh instance, running the whole lifecycle again. The
// batch is then run again one record at a time. A record that fails alone
// goes to the dead letters with a reason naming the failure ("trap: wasm
// error: unreachable (stderr: panic: ...)", "exited with code 3",
// "deadline exceeded after 5s"), including what the guest last wrote to
// stderr; the instance is replaced again, and the other records come out
// in input order as if nothing had happened. Stats counts calls, traps,
// timeouts, overruns and restarts. If a replacement instance cannot be
// made (after two more tries, waiting 0.1 s and 1 s), Process returns a
// fatal error, wrapping ErrInstantiate, or ErrInit when the new instance's
// initialisation fails.
//
// Canceling the context passed to Process interrupts a call at the
// guest's next check; that is fatal (Process returns the context's
// error), not a trap.
//
// # Aggregate
//
// A plugin loaded with abi.OpAggregate runs through AggCreate, AggAdd,
// AggMerge and AggResult instead of Process (which, like the Agg methods
// on another operation's plugin, returns an ErrConfig error). The Worker
// calls weir_agg_create once, when its first instance is made, and
// AggCreate hands out that accumulator; a failure there fails Load or
// NewWorker with ErrInit. AggAdd encodes its groups into one add frame
// (abi.AppendAggGroup and the batch record encoders) in the same reused
// buffer and guest region as Process, calls weir_agg_add with
// CallWithStack, decodes the add output frame (abi.AggAddOutputReader),
// checks it against the call, and copies each new accumulator into the
// AggOutput's arena; rejected records become dead letters with Reason
// "aggregate error: <message>". Merge and result calls work the same way,
// with frames of accumulators (abi.AppendAcc) and value output frames
// (abi.AggValueReader); AggResult calls weir_agg_result_ctx instead of
// weir_agg_result when the module exports it, each accumulator after its
// group's context (abi.AppendAccContext). State is not available to
// aggregate calls.
//
// Failures are handled as for Process: the instance is replaced and
// nothing of the call is kept. An add call is run again one group at a
// time, and a group that fails alone one record at a time, threading its
// accumulator: a record that fails alone becomes a dead letter with the
// failure's reason and leaves the accumulator as it was. A merge or
// result call is run again one input at a time, and an input that fails
// alone gets the failure's reason as its AggValue.Err.
package wasm
