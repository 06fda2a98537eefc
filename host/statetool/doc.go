// Package statetool reads, exports and imports a stopped pipeline's keyed
// state: what `weir state inspect`, `export` and `import` do.
//
// A pipeline with `state: {backend: badger, dir: D}` keeps all its keyed
// state in one badger store in D, under state.Key(operator, record key,
// user key), and, with `checkpoints:`, the last committed checkpoint (the
// sources' positions, the watermark, the changelog offset) beside it.
// Open reads it as the pipeline's next start would find it (as of
// the last committed checkpoint), without writing anything; Export
// writes it to a state file, and Import writes a state file into an
// empty directory with its checkpoint committed, so the pipeline resumes
// from there: from the exported Kafka offsets, with every window and
// plugin state. The state of a Wasm operator is keyed by the slot names
// its plugin uses, not by the plugin's code, so a new version of the
// plugin reads it, as long as the operator keeps its name. All three
// refuse while the pipeline runs (ErrInUse).
//
// A state file (Format) is JSON lines: a header
//
//	{"format":"weir-state-v1","pipeline":"NAME","checkpoint":META}
//
// where META is the committed checkpoint's metadata as the store keeps it
// (JSON) or null, then one line per entry, {"k":"…","v":"…"}, the store
// key and value in standard base64, in key order.
//
// Each operator kind describes its own stored entries (the operator
// table's Describe), so the tools name a window's panes or a plugin's map
// entries without knowing their byte layouts. A View's methods may be
// called concurrently; Export and Import are safe from any goroutine.
package statetool
