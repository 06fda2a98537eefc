// Package engine runs a pipeline's data path: sources feed batches through
// a chain of operators to every sink, and rejected records to the
// dead-letter output.
//
// # Data flow
//
//	sources ──batches──▶ dispatcher ──pieces──▶ segment workers ─…─▶ sink loop
//	   ▲                                                              │
//	   └────────────────── bounded pool of batches ◀──────────────────┘
//
// Each source runs on its own goroutine and fills batches taken from a
// bounded pool (Out). The dispatcher hands each batch, as pieces, to the
// workers of the first segment of the chain (see Parallelism); a worker
// runs a piece through its segment's operators, each appending its output to
// a buffer owned by the piece, and hands the result on. The sink loop, on
// the goroutine that called Run, writes the final records to every sink and
// the dead letters to the dead-letter output, and flushes when nothing else
// is queued. A batch returns to the pool once all its pieces are written and
// acknowledged (see Ack). A batch and everything its records point into are owned by one
// goroutine at a time; ownership passes with the channel send. Memory is
// bounded by the pool, and steady-state processing allocates nothing per
// record.
//
// # Parallelism
//
// With Parallelism P, each part of the chain runs on P workers, each with
// its own operator instances (a Wasm instance is single-threaded). The chain
// is cut after every key_by into segments. A dispatcher routes each source
// batch's records to the first segment's workers: a partitioned record
// (Kafka) by its topic and partition, so a partition is processed in order
// by one worker; an unpartitioned record by its key; an unkeyed,
// unpartitioned batch whole to the next worker in turn. After a key_by,
// records move to the worker that owns their new key, by hash, so keyed
// state is only ever touched by one worker and each key's records stay in
// order. The pieces a batch is cut into all belong to it, and it completes,
// and is acknowledged to its source, only when every piece has been written.
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
