// Package pluginop is the map, flat_map and filter operator kind: a Wasm
// plugin run by one worker per operator instance (instance.go), its hot
// reload with probation and rollback (reload.go), its shadow candidate
// (shadow.go), the file watcher that reloads it on change (watch.go), and
// the sweep of expired state (state_ttl, instance.go). Describe names the
// entries its plugins store, by the SDKs' slot convention (package abi).
//
// An Operator lives from Load to Close and is safe for concurrent use;
// reloads, rollbacks and promotions are serialised. Each instance the
// engine makes from its Step belongs to one worker goroutine and swaps to
// a newly published version between batches.
package pluginop
