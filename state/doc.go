// Package state holds weir's keyed state: the Store interface the host's
// operators read and write through, the key layout that scopes state to an
// operator and a record key, and an in-memory Store.
//
// A durable, badger-backed Store comes later behind the same interface.
package state
