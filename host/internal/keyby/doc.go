// Package keyby is the key_by operator: it sets each record's key from a
// JSON field, and its step tells the engine to route the records after it
// to workers by the new key (engine.Step.KeyBy).
//
// A key_by keeps no state. Its Kind is the operator table's row,
// read-only; each instance New returns belongs to one worker.
package keyby
