// Package engine runs a pipeline's data path: sources feed batches through
// a chain of operators to every sink, and rejected records to the
// dead-letter output.
//
// # Data flow
//
//	sources ──batches──▶ worker (operator chain) ──batches──▶ sink loop
//	   ▲                                                          │
//	   └──────────────── bounded pool of batches ◀────────────────┘
//
// Each source runs on its own goroutine and fills batches taken from a
// bounded pool (Out). The worker goroutine runs a batch through every
// operator in turn, each operator appending its output to a buffer owned by
// the batch. The sink loop, on the goroutine that called Run, writes the
// final records to every sink and the dead letters to the dead-letter
// output, flushes when nothing else is queued, and returns the batch to the
// pool. A batch and everything its records point into are owned by one
// goroutine at a time; ownership passes with the channel send. Memory is
// bounded by the pool, and steady-state processing allocates nothing per
// record.
//
// # Stopping
//
// Cancelling Run's context stops the sources; what they already read drains
// to the sinks and Run returns nil. A failure (an operator or sink error)
// cancels an internal context instead: the sources stop, queued batches are
// discarded, and Run returns the error.
//
// Operators and sinks are driven by one goroutine each and need no locking;
// sources are independent of one another.
package engine
