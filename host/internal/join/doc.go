// Package join is weir's stream-stream join: an operator that pairs the
// records of two sources with the same key, inner or outer, as Flink's
// interval join (KeyedStream.intervalJoin, or SQL's join with a time
// bound) or, without a bound, its regular join. Records reach it keyed
// (a key_by before it, which may read another field for each source),
// both sides merged in one stream, each side told apart by the source it
// came from.
//
// A record is stored in the operator's keyed state and matched against
// the other side's stored records of its key; each pair is emitted once,
// when the later of its two records arrives, as
//
//	{"<left source>": <left value>, "<right source>": <right value>}
//
// with the key, and the later record's event time. With a bound [Lower,
// Upper], a left record at event time l and a right at r match only when
// l+Lower <= r <= l+Upper; each stored record is dropped once the
// watermark shows that no record it could still match can arrive, and a
// record that arrives behind the watermark when it could match nothing
// more (its side's bound is behind the watermark) is late: a dead letter,
// as Flink drops it. One ahead of the watermark whose bound is behind it
// (a right with Lower > 0, a left with Upper < 0) pairs with the stored
// records, all of which it can match have come, and is not stored.
// With a Window instead, a tumbling window join as Flink's: a left and a
// right record match when their event times fall in the same window, and
// each record is dropped when its window closes. Flink emits a window's
// pairs when it closes; here each pair comes when its later record does,
// the same pairs sooner. Without a bound every pair of a key matches, and
// the state grows with the input, unless a TTL drops each record once the
// watermark passes its event time by that much (Flink bounds its regular
// joins with state TTL the same way): filter before the join, or set a TTL.
//
// An outer join (Kind: left, right or full, as SQL's LEFT, RIGHT and FULL
// OUTER JOIN) also emits each record of an outer side that matched
// nothing, once, padded with null for the other side,
//
//	{"<left source>": <left value>, "<right source>": null}
//
// with its key, its own event time and its origin, when it expires: once
// the watermark passes its last possible match (in a window join its
// window's end, in an interval join a left's t+Upper or a right's
// t-Lower, with a TTL its t+TTL), so that a record that matched is never
// padded and an output row is never taken back, as Flink's outer interval
// join and Kafka Streams' outer join (since 3.1) emit them. A regular
// join without a TTL keeps its records for ever: it pads its unmatched
// ones only at the final watermark of a bounded input, and keeps them
// marked. A late record (one that could match nothing more when it comes)
// is a dead letter on either side, as in an inner join. Which records of
// an outer side have matched is kept in the store too: a mark, the
// record's state key with its side in lower case, written when the record
// first matches and deleted with it. So a restored join neither pads a
// record that matched before the restart nor loses one that did not; a
// join that was inner before a restart kept no marks, so its records
// count as unmatched.
//
// The state lives in the state store, so checkpoints, the changelog and
// exactly-once delivery cover it. Each instance also keeps its keys'
// stored records in memory, with an index of their expiry times, to match
// without reading the store; it loads both from the store when it starts.
// So a join's memory grows with the records it stores: bounded by the
// interval with between, by the input without.
package join
