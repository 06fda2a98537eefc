// Package meter rewrites a WebAssembly module so that it calls back into
// the host regularly, however it loops.
//
// # Why
//
// A guest in a tight loop never returns to Go, so its goroutine never
// reaches a GC safe point: once a GC begins its stop-the-world phase,
// every goroutine of the process waits for that one, forever. wazero's
// WithCloseOnContextDone avoids this by leaving the machine code for Go at
// every loop iteration, which costs 3-10x on hot loops. Instrument gets the
// same guarantee for the price of a counter: the module decrements a fuel
// global at each check, and calls an imported host function,
// ImportModule.ImportName, only when it runs out. That function is Go
// code, where the goroutine can be preempted; it can also enforce a
// deadline by panicking (wazero returns the panic as the call's error),
// and it returns the fuel to start again with.
//
// # The rewrite
//
// The instrumented module imports yield as its last imported function, so
// every function index from there on moves up by one: Instrument renumbers
// them in calls, ref.func, exports, the start section, element segments,
// global initialisers and the name section. It appends a mutable i32
// global, the fuel, initialised to Options.Fuel, and inserts the check
//
//	global.get $fuel; i32.const 1; i32.sub; global.set $fuel
//	global.get $fuel; i32.const 0; i32.gt_s
//	if; else; call $yield; global.set $fuel; end
//
// at the entry of every function but leaves (below), at every loop header
// (after the loop's block type, so branches back to the loop run it too),
// and wherever a path could otherwise run more than Options.MaxStraight
// instructions since the last check. The check uses no operand stack
// that it does not restore, so it is valid anywhere an instruction is,
// including where the stack holds a block's parameters. Custom sections
// about code offsets (".debug_*", "sourceMappingURL") are dropped, as the
// offsets change; a name section that does not decode is dropped too, as
// engines ignore it; other sections are kept byte for byte.
//
// A first pass over the code section plans each function before any is
// rewritten. A leaf is a function without loops, calls or call_indirect,
// whose longest path runs at most MaxStraight-1 instructions (its end
// included), and that nothing but this module's direct calls reaches: no
// element segment, ref.func, export or start section names it, since a
// call_indirect, the host or another module importing it could not count
// it. A leaf has no check at all. Instead, a direct call of a leaf counts,
// in its caller's straight-line count, one for the call and the leaf's
// longest path, so that a straight line of calls of a leaf still gets
// checks.
//
// Instrument decodes every instruction by the encoding the spec prescribes,
// and refuses opcodes that CoreFeaturesV2 lacks (threads, tail calls,
// exception handling, typed function references, relaxed SIMD). wazero
// reads a SIMD sub-opcode as a single byte where the spec has a LEB128, so
// it accepts a few byte sequences that the spec does not, such as relaxed
// SIMD's 0xfd 0x80 0x02, which it reads as i16x8.abs then block: Instrument
// refuses them.
//
// # What it guarantees
//
// Any execution that does not terminate iterates a loop or makes calls
// without end: a function body without loops runs each of its
// instructions at most once per call, and the call stack is bounded. A
// leaf neither loops nor calls. So checks at loop headers and at the
// entries of all other functions meet every non-terminating execution
// infinitely often.
//
// Call a run what a call frame executes from one of its checks to its
// next check or its return, the instructions of the leaves it calls
// included. Instrument counts instructions over paths, not bytes (at the
// end of a block, the count is the largest of those of the branches that
// reach it), and counts a call of a leaf as one plus the leaf's longest
// path: so every run has at most MaxStraight instructions. Every function
// but a leaf begins with a check, and a leaf runs within its caller's run,
// so every instruction the guest runs is in a run.
//
// Yield, when it returns R ≥ 1, sets the fuel to R, and each check takes
// one: the next yield comes at the R-th check after it. So between two
// consecutive yields, the first returning R ≥ 1, the guest runs R checks
// and at most
//
//	(R + D - 1) × MaxStraight
//
// instructions, where D is the number of guest frames on the stack at the
// first yield: they are those of the run that begins at the first yield,
// of the R-1 runs that the checks in between begin, and of the runs in
// progress in the D-1 frames below, which resume after returns. From a
// call of the host into the guest to the guest's first yield, with f fuel
// left, the guest runs at most f checks and f × MaxStraight instructions.
// With the defaults (and a host returning 65536), a yield comes at least
// every 65536 checks and 65,536,000 instructions, plus 1000 for each frame
// below the yielding one.
//
// Most instructions take constant time; the exceptions are the bulk
// operations (memory.fill, memory.copy, memory.init, table.fill,
// table.copy, table.init, and growing a memory or table), each bounded by
// the size of a memory or table, and calls to the host's own functions,
// whose time is the host's.
//
// Yield must return a positive fuel. With R ≤ 0, the next check yields
// again, except for R = -2^31, from which the decrement wraps to 2^31-1.
//
// # What it costs
//
// A check that does not yield is a load, a subtraction, a store, and a
// compare and branch not taken (wazero's compiler keeps the stored value
// for the second global.get), then a jump over the else arm; leaves have
// none. The call is in the else arm for wazero's register allocator,
// which starts where the arms meet from the state of the then arm: there,
// the path that does not yield keeps its registers, and only the path
// that yields reloads what the call evicted. The fuel lives in the module
// instance, so each instance has its own, and instances never share it
// across goroutines.
//
// Wazero names functions without a name in the name section by their
// index in stack traces: for the instrumented module, those of functions
// from the first non-imported one on are one more than in the original.
//
// # Concurrency
//
// Instrument is a pure function: it reads its input, allocates its output,
// and keeps no state, so any number of goroutines may call it at once.
package meter
