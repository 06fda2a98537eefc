// Package engine runs a pipeline's data path: sources feed batches through
// a chain of operators to every sink, and rejected records to the
// dead-letter output.
//
// The package owns the run loop and everything it moves: the bounded pool
// of batches and the arenas their bytes live in, the routing of records to
// workers, watermarks and event-time tracking, checkpoint barriers, and
// acknowledgements back to the sources. It also holds the built-in parts
// that need nothing outside the process: file and standard input and
// output sources and sinks, the generator, and key_by. What operators,
// sinks and sources do with records is theirs: the engine only calls them,
// each from one goroutine, through the interfaces here (Operator, Sink,
// DeadLetterSink, Source).
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
// without a key then all go to one worker, as Flink runs windowAll on one.
// The pieces a batch is cut into all belong to it, and it completes, and
// is acknowledged to its source, only when every piece has been written.
//
// # Repartitions
//
// A Repartition cuts the chain at a key_by through a topic instead: the
// workers of the segment ending with the key_by hand their records to the
// sink loop, which writes them to the repartition's sink (a Kafka topic,
// partitioned by the new key), and the dispatcher cuts the records of
// that topic out of the sources' batches and hands them, by key, to the
// segment after the key_by, under a watermark of their own: the least
// event time the topic's partitions were promised (Out.PartitionTime).
// What the instance promises for its own input partitions reaches the
// sink in order with their records: the dispatcher sends the first
// segment's workers the sources' partition watermarks after the records
// it dispatched before, the workers hand them on after their output,
// and the sink loop writes, for each partition, the least its workers
// handed on (RepartitionSink.Watermark).
//
// A run without the Repartition routes the same key_by in process; its
// checkpoint restores into a run with it and back (Checkpoint.Fit), and a
// WatermarkSnapshotter source is handed the partitions' watermarks at
// each snapshot, to keep what a run through the topic would have written.
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
// A run whose keyed state is split by task among instances sharing a
// consumer group (Tasks) may hand its keyed operators' instances to the
// next run of the pipeline (Kept), which, when the group only gave the
// instance tasks, goes on with them: each becomes a split, the instance
// of the tasks kept and one per gain, restored for the gained tasks'
// keys alone, or preloaded while the last run still went on.
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
//
// # Structure of a run
//
// Pipeline.Run makes a runner (run.go), which holds what the goroutines of
// one run share: the settings with their defaults, the operators by
// segment, the pool and the channels between the stages, each source's
// Out, the internal context a failure cancels, and the counters behind
// Stats. Run prepares it (checking the checkpoint settings, making the
// operators, restoring a checkpoint), starts the goroutines, runs the sink
// loop itself and, once that ends, takes the final checkpoint and closes
// everything. Each goroutine's loop is a method in a file of its own:
//
//   - run.go: setup, the source goroutines, completing a batch, closing.
//   - dispatch.go: the dispatcher (a dispatcher value, owned by its
//     goroutine) takes the sources' batches, cuts them into pieces for the
//     first segment and forwards pieces between segments (runner.forward).
//   - worker.go: the segments and a worker per segment and index (a worker
//     value, owned by its goroutine), which runs the segment's operators on
//     each piece and hands the results on.
//   - watermark.go: the watermark the dispatcher forwards, the
//     watermark-only pieces that carry it to workers without records, and a
//     worker firing its event-time operators as its inputs' least
//     watermark advances.
//   - barrier.go: the dispatcher's side of checkpoint barriers (a
//     checkpointer) and taking a checkpoint of the quiesced pipeline;
//     checkpoint.go has the sources' side (Out.Barrier) and the
//     checkpoint data.
//   - sinkloop.go: the sink loop, which writes pieces to the outputs and
//     flushes them.
//   - tasks.go: in a run split by task, the keyed operators' instances
//     kept from one run to the next (Kept) and the split that routes a
//     worker's records to the instance of their task.
//
// Shutdown runs down the chain: the sources end, then the dispatcher
// closes the first segment's queues, each segment's workers, once all have
// ended, close the next segment's, and the last segment's close the sink
// loop's, so Run returns once everything queued has been written or, after
// a failure, discarded.
package engine
