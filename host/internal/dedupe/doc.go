// Package dedupe is the dedupe operator: it passes the first record of
// each record key and drops the key's repeats, as Flink SQL's
// deduplication keeping the first row (ROW_NUMBER() OVER (PARTITION BY
// key ORDER BY time) = 1 on an append-only stream) or the deduplicating
// transformer Kafka Streams users write over a window store. It drops the
// copies an at-least-once producer writes when it retries (key the
// records by their event id, then dedupe), or keeps one alert per key per
// period.
//
// Records reach it keyed (a key_by before it, or a Kafka record key); a
// record without a key cannot be told apart from another and is a dead
// letter saying so. Without Within, a key's first record passes and every
// later one is dropped, for ever: the state holds one time per key ever
// seen. With Within, a record is a repeat when its key passed a record
// less than Within of event time from it, before or after; otherwise it
// passes, and its time is held. So no two passed records of a key are
// closer than Within, and every dropped record is closer than Within to a
// passed one, whatever order the records come in. Which records pass
// follows the order in which each key's records arrive: the source's
// order for one Kafka partition or, at parallelism 1, any source; with
// parallelism above 1 an unpartitioned source's batches go through the
// steps before the key_by side by side, so a key's records may arrive in
// another order, as in Flink after a rebalance, and when they come out of
// order in event time another of them may be the one that passes.
//
// A held time is dropped once the watermark passes it plus Within: no
// record on time can then come near it. A late record (behind the
// watermark) is compared with the times still held, so it may pass
// although an earlier record near it did, as with Flink's state TTL:
// dedupe is exact for records that are not late. In processing time (no
// source sets event_time) a record's time is when the operator sees it.
// Repeats are dropped, not dead-lettered: they are the operator working
// as intended, and the step's counts show them as In minus Out.
//
// The state is one store entry per held time, under the operator's name
// and the record key, so checkpoints, the changelog, standbys and
// exactly-once delivery cover it, and `weir state inspect` shows each as a
// "dedupe" entry with its event time. Each instance also keeps its keys'
// held times in memory, with an index of when each may go, loaded from
// the store when it starts: memory grows with the keys seen within the
// watermark's lag plus Within (for ever without Within).
//
// Each Operator belongs to one worker (engine.Operator's contract); Kind
// is the operator table's row, read-only.
package dedupe
