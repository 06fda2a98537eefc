// Package join is weir's stream-stream join: an operator that pairs the
// records of two sources with the same key, as Flink's interval join
// (KeyedStream.intervalJoin, or SQL's join with a time bound) or, without
// a bound, its regular join. Records reach it keyed (a key_by before it,
// which may read another field for each source), both sides merged in one
// stream, each side told apart by the source it came from.
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
// record that arrives when it could match nothing more (its side's bound
// is behind the watermark) is late: a dead letter, as Flink drops it.
// With a Window instead, a tumbling window join as Flink's: a left and a
// right record match when their event times fall in the same window, and
// each record is dropped when its window closes. Flink emits a window's
// pairs when it closes; here each pair comes when its later record does,
// the same pairs sooner. Without a bound every pair of a key matches, and
// the state grows with the input, unless a TTL drops each record once the
// watermark passes its event time by that much (Flink bounds its regular
// joins with state TTL the same way): filter before the join, or set a TTL.
//
// The state lives in the state store, so checkpoints, the changelog and
// exactly-once delivery cover it. Each instance also keeps its keys'
// stored records in memory, with an index of their expiry times, to match
// without reading the store; it loads both from the store when it starts.
// So a join's memory grows with the records it stores: bounded by the
// interval with between, by the input without.
package join
