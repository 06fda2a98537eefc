// Package state holds weir's keyed state: the Store interface the host's
// operators read and write through, the key layout that scopes state to an
// operator and a record key, and two Stores.
//
// Memory keeps state in a Go map and nothing across restarts. Badger keeps it
// in a badger database on disk, for state larger than memory, behind a
// bounded write-back cache of hot keys. Badger takes checkpoints
// (Checkpointer): each makes everything applied so far durable, atomically,
// with the caller's metadata; a store reopened after a crash is exactly as
// of its last checkpoint. Without checkpoints its state is on disk once
// Flush or Close returns.
// Both implement Scanner, which iterates keys by prefix in order, for
// restoring state such as windows.
//
// Every Store, Scanner and exported method here is safe for concurrent use.
// Stores copy the keys and values given to Apply, so callers may reuse their
// buffers; values returned by Get are owned by the store and read-only.
package state
