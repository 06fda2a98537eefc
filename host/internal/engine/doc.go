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
// order. A first segment holding a step with KeyedState (a window with no
// key_by before it) is routed by key as well, from the dispatcher: records
// without a key then all go to one worker, as Flink runs windowAll on one. The pieces a batch is cut into all belong to it, and it completes,
// and is acknowledged to its source, only when every piece has been written.
//
// # Checkpoints
//
// With Pipeline.Checkpointing a run takes consistent checkpoints by an
// epoch quiesce, rather than Flink's barriers flowing through the graph:
// the dispatcher asks every source for a barrier; each source, at its next
// safe point (Out.Barrier: for a Kafka source, once everything it polled
// is handed out; for a Replayable source, after any record), sends a
// marker after its last batch and waits; the dispatcher keeps dispatching
// what comes before the markers. Once every source is paused or ended, it
// waits until nothing is in flight — source batches, batches operators
// emitted, watermark-only pieces — so every operator has applied
// everything before the barrier to its store and every sink has
// acknowledged its results. Then it records the sources' positions, the
// watermark every operator was given and the event-time tracking behind
// it (Checkpoint), calls Checkpointing.Commit, tells CheckpointListener
// sources, and lets the sources go on. A final checkpoint is taken when a
// run ends normally, with the last watermark before the end of input, so
// a restarted bounded run does not treat new input as late.
//
// Continuing from a checkpoint (Checkpointing.Restore), Snapshotter
// sources seek to their snapshot, Replayable sources skip the records they
// had handed out, event time resumes where it was, and Restorer operators
// rebuild their memory from the store, each instance taking the keys
// routed to its worker. The pause costs the time to drain the pipeline:
// with the default queue depth, a few batches per worker.
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
