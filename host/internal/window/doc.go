// Package window is weir's keyed window operator: it groups records by key
// into event-time windows (tumbling, sliding, session, cumulate) or count
// windows, aggregates each window with built-in aggregates or a user
// Aggregator, and emits one record per window and key. An Operator is an
// engine.Operator and an engine.Watermarker.
//
// # Windows
//
// All times are event times, record.Timestamp, in milliseconds since the
// Unix epoch. A window is a half-open span [start, end). Time windows are
// aligned to the epoch, as Flink's are by default:
//
//   - Tumbling: [k·Size, (k+1)·Size).
//   - Sliding: [k·Slide − Size, k·Slide), for every k; a record is in
//     Size/Slide windows (more or fewer when Slide does not divide Size).
//   - Cumulate, as Flink SQL's CUMULATE: for each period [p, p+Size) with p
//     a multiple of Size, the windows [p, p+Slide), [p, p+2·Slide), …,
//     [p, p+Size). Size must be a multiple of Slide (the step).
//   - Session: a record at t opens [t, t+Gap); it joins every session of its
//     key that it touches, [s, e) with s <= t+Gap and t <= e, and they
//     merge into one covering them all. As in Flink, touching is enough:
//     two records exactly Gap apart are in one session. A record that
//     bridges two sessions merges them (built-in accumulators merge, a
//     Custom aggregator's Merge is called).
//   - Count: each key's records in arrival order, Count at a time. The
//     window's span is its records' event times, [earliest, latest+1).
//
// Records are keyed by record.Key; records with a nil key share one set of
// windows, distinct from the empty key's.
//
// # When windows fire
//
// The engine promises with OnWatermark(wm) that no record at or below wm
// follows, except late ones. A time window [start, end) therefore fires
// when the watermark reaches its last millisecond: wm >= end−1 (Flink's
// window.maxTimestamp() <= watermark). OnWatermark emits the windows it
// closes in order of their end; among windows with the same end, in the
// order their keys first had data. Sessions are emitted key by key: keys
// in order of the time the next of their sessions fires or is purged, then
// by key (the nil key first); a key's sessions in order of their end. Watermarks only increase; a lower or
// equal one is ignored (except for early results, below). Count windows
// fire on their Count-th record, in Process, and ignore watermarks.
//
// Processing-time windows are the engine's: it feeds a processing-time
// watermark, and the operator sees only timestamps and watermarks. At the
// end of a bounded input the engine should call OnWatermark(math.MaxInt64),
// which fires every open window; Close emits nothing.
//
// # Lateness
//
// A window stays open for updates until the watermark passes its end by
// AllowedLateness: it is purged when wm >= end−1+AllowedLateness (at once
// when firing, with no lateness). Lateness is judged per window, as in
// Flink: a record behind the watermark still counts if a window it falls in
// has not been purged, and it counts only in the windows not yet purged.
// If such a window had already fired, the operator emits its updated
// result (once per Process call, however many of the call's records
// changed it): downstream sees a second result for the same window, which
// supersedes the first, as with Flink's allowed lateness. A record all of
// whose windows have been purged — its event time is then at or before
// wm − AllowedLateness — goes to the dead-letter output, with Stage the
// operator's Name and Reason "late: event time T (…) is at or before
// watermark W (…) minus allowed lateness L: every window it falls in has
// closed". For sessions, a record is late when its own session [t, t+Gap)
// touches no open session and is purged already. A late record that merges
// sessions already emitted gives a new, larger session: its result
// supersedes theirs. Count windows have no lateness.
//
// # Emit modes
//
//   - OnClose (the default): a window's result when it fires, and an
//     updated one for each Process call that changes it within the allowed
//     lateness.
//   - Every: besides OnClose's results, early results every EmitInterval of
//     processing time (Config.Clock): each window not yet fired whose data
//     changed since the last early results emits its current result, key by
//     key in the order the keys' data first changed (among the changes not
//     since purged or merged away). The clock is read at each Process and
//     OnWatermark call, which is when early results can be emitted, as with
//     Flink's ContinuousProcessingTimeTrigger; the first call starts the
//     interval.
//   - OnUpdate: after each Process call, each window (count windows: the
//     partial window) the call changed emits its current result; firing
//     emits nothing more, since the last update is the final result.
//
// In every mode the last result emitted for a window is its final result.
//
// # Output
//
// An output record's key is the input key, its timestamp the window's end
// − 1 (Flink's window max timestamp), its headers none, its Origin the
// operator. Its value is, for Custom alone (no Aggregates), the
// Aggregator's Result bytes; otherwise a JSON object with, in order,
// KeyField (the key's text as a JSON string, null for the nil key),
// "window_start", "window_end", and each aggregate's As in config order,
// where an AggCustom aggregate is Custom's Result, a JSON value written
// as it is (null when absent; a Result that is not JSON is an error, as a
// failing Result is):
//
//	{"device_id":"00:0f:00:70:91:0a","window_start":"2024-03-17 09:20:00","window_end":"2024-03-17 09:20:30","charge_consumed":2.6100000000000003}
//
// Window bounds are written per TimeFormat: SQL (default) as Flink SQL's
// JSON format writes a TIMESTAMP(3), "yyyy-MM-dd HH:mm:ss" in UTC with the
// milliseconds as a fraction only when not zero ("…:01.5"); EpochMillis as
// an integer; RFC3339 as "2024-03-17T09:20:00Z" (fraction likewise).
//
// Aggregate values: AggCount and AggCountDistinct are integers. AggSum,
// AggMin and AggMax are integers when every value they saw was written as
// an integer (no fraction or exponent, within int64) and a sum did not
// overflow; otherwise floats, so a DOUBLE field's sum prints as Flink's
// does (52.0, 2.6100000000000003): Python repr digits, wjson.AppendFloat.
// Floats are summed in arrival order within a pane, so a tumbling sum is
// the sequential sum. AggAvg is always a float. AggFirst and AggLast copy
// the raw JSON of the value with the earliest (latest) event time — not
// arrival order, so that results do not depend on how out-of-order input
// was — the first (last) to arrive among equal times; they and the numeric
// aggregates write null when no record had the field.
//
// AggCountDistinct counts distinct values (strings by decoded text, numbers
// by numeric value, so 1 and 1.0 are one, anything else by its JSON text;
// null and missing values are not counted) as 64-bit hashes: exactly up to
// Aggregate.Exact of them (default DefaultExact; a hash collision among n
// values has a chance of about n²/2⁶⁵), then with a HyperLogLog of 4096
// one-byte registers, whose relative standard error is HLLStandardError,
// about 1.6%.
//
// # Bad input
//
// A record whose value an aggregate cannot read goes to the dead-letter
// output and counts in no window: a value that is not JSON (when some
// aggregate reads the value; AggCount without a Field reads nothing), or,
// for AggSum, AggAvg, AggMin and AggMax, a field that is missing, null, not
// a number, or out of float64 range. So does a record whose event time is
// beyond ±2⁶¹ ms, where window arithmetic would overflow. AggCount with a Field counts the
// records where the field is present and not null; AggFirst, AggLast and
// AggCountDistinct skip records without the field. A Custom aggregator's
// Add error rejects the record likewise (reason "aggregate: …"), and the
// built-in aggregates beside it do not count it. A Merge or Result error
// means a broken aggregator: Process or OnWatermark returns it, which
// stops the pipeline. Result is given the window's context
// (ResultContext): its record key and bounds.
//
// # State
//
// Window state lives in Config.Store under state.Key(Name, record key,
// user key). The operator keeps one accumulator per unit: a pane for time
// windows (state is per key and pane, never a copy of a record per
// window), a session, or a count window. Panes are Size long for tumbling
// windows, gcd(Size, Slide) for sliding ones, the step for cumulate ones; a
// window's result is the merge of its panes, and a pane is purged with the
// last window holding it. User keys:
//
//	pane      'p' | big-endian (start ^ 1<<63)   8 bytes
//	session   's' | big-endian (start ^ 1<<63)
//	count     'c'
//	operator  'm', with the empty record key
//
// with the tag's high bit (0x80) set for the nil record key. Values:
//
//	pane      uvarint(order) uvarint(rank) acc
//	session   uvarint(end − start) uvarint(rank) acc
//	count     uvarint(records) varint(start) uvarint(end − start) uvarint(rank) acc
//	operator  uvarint(mark) varint(next early results, Unix nanoseconds)
//
// A pane's order is its place among the panes of the same start, of all
// keys, in the order they were created (0, 1, 2, …): it orders the keys
// whose windows close together. A unit's rank is 0 except in mode Every,
// where a unit changed since the last early results is pending, with a
// nonzero rank from a counter that grows with each unit that becomes
// pending; the operator entry, written in mode Every only, when the
// interval starts and at each early results, holds the counter's value at
// the last early results (mark: a stored rank at or below it is stale, its
// unit no longer pending) and when the next are due. (Before Restore
// existed, values had neither order nor rank and there was no operator
// entry; such state cannot be restored.)
//
// where acc is a Custom aggregator's bytes, or the built-in aggregates'
// encodings one after the other, in config order, followed, with an
// AggCustom aggregate among them, by the Custom aggregator's bytes:
//
//	AggCount          uvarint(n)
//	AggSum/Min/Max    mode byte: 0 none; 1 int, varint; 2 float, 8 bytes LE IEEE 754
//	AggAvg            uvarint(n) float64 sum (8 bytes LE)
//	AggFirst/Last     0, or 1 varint(event time) uvarint(len) raw JSON
//	AggCountDistinct  0 uvarint(n) n × uint64 LE hashes (sorted), or 1 and 4096 registers
//
// The accumulators of open windows are held in memory, and every change is
// written through: each Process and OnWatermark call ends with at most one
// Store.Apply holding the puts of the units it changed and the deletes of
// the units it purged (write buffers are reused after Apply returns, which
// must therefore copy, as state.Memory does). The in-memory index of what
// is open — for time windows the panes ordered by start with the keys that
// have data in each, for sessions a min-heap of keys by their next firing
// or purge (then by key) — lets OnWatermark find what to fire without
// scanning the store. By default memory is authoritative while running:
// the operator never reads the store back, and holds every open key's
// accumulators (a few hundred bytes a key).
//
// After a restart, Restore rebuilds it all from the store, given the
// watermark the store was checkpointed at: it scans the keys under the
// operator's Name (the Store must implement state.Scanner), decodes each
// unit of the record keys it is asked to own, and rebuilds the pane index
// (each pane's keys sorted by order), the session timers, and in mode
// Every the pending units (rank above mark) and the interval. Everything
// that decides what is emitted, and in which order, is in the store, so
// that a restored operator fed the rest of the input emits exactly what
// one that never stopped would have. Should several instances of one
// operator share a store, each owning some keys, they write one operator
// entry: the last written is the one restored, so in mode Every the early
// results after a restart may differ from an uninterrupted run's (final
// results do not). The Rolling operator's state and Restore are described
// on its type.
//
// A key whose last pane a purge removed stays in memory, empty, until the
// next purge (or, in bounded mode, until evicted), since most keys come
// back in the next window.
//
// # Bounded memory
//
// With Config.MaxKeysInMemory set, the store is authoritative and memory
// holds a bounded working set: at most MaxKeysInMemory keys' accumulators
// between calls, the least recently used evicted first. Evicting a key
// only drops it from memory, since its state is already written through;
// the next record for it, or the watermark that fires its windows, reads
// its units back from the store with Store.Get, one per unit (a time
// window key's panes, a session key's sessions, a count window). Besides
// the working set, memory holds a compact index: for time windows, each
// open pane's keys as length-prefixed bytes in one buffer, in the order
// they had data, and Bloom filters of their hashes (one per pane and one
// over all panes, 16 bits a key each), so that a key seen for the first
// time costs no store read and one not in memory costs a Get only for the
// panes it may be in (a false positive, about 0.2% of them, costs a Get
// that finds nothing); for sessions, the timer heap, whose entries hold
// each key's bytes, its next firing and its sessions' starts. That is 5
// to 9 bytes a key besides its bytes for time windows (against ~450
// unbounded), about 150 for sessions; count windows fire in Process and
// need no index (a key not in memory costs one Get). A watermark that
// fires many keys evicts as it goes, so firing millions of keys stays
// within the bound (its output, of course, does not, nor the one Apply
// that deletes a purged pane's units, a mutation for each of its keys).
//
// A few keys are never evicted, and can take the working set beyond the
// bound: the keys the current call changed, until its Apply; in mode Every,
// the keys with results pending until the next early results (so the
// working set can grow by the keys changed in one EmitInterval); and the
// nil key. Everything that is emitted, and in which order, is exactly as
// without a bound: the order of keys within a pane, the session timers
// and the pending ranks are the state's, not memory's. A bound is worth
// having with a store larger than memory, such as state.Badger, whose own
// caches it adds to: a Get that misses Badger's cache costs microseconds,
// so a working set that holds the keys of recent records keeps throughput
// up. With state.Memory a bound saves nothing, since the store holds it
// all anyway. Restore in bounded mode reads every unit once, to rebuild
// the index, and keeps in memory only the keys it must (the nil key, and
// in mode Every the keys with pending early results), so that restarting
// stays within the bound too.
//
// # Concurrency
//
// An Operator is used by one goroutine, like every engine.Operator:
// Process, OnWatermark and Close must not be called concurrently. A Custom
// Aggregator and Config.Clock are called from that goroutine only.
package window
