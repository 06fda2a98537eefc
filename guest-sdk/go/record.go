package weir

import "github.com/weir-stream/weir/abi"

// Record is one input record of a batch, as a registered function sees it.
//
// Key, Value and Headers alias the batch in guest memory: they are valid
// only until the function returns, and must be treated as read-only. In
// particular, a map function that modifies Value in place and returns it
// loses the change, because returning the input value means "keep the input
// record", which the host does from its own copy.
//
// A function receives a pointer to a Record that the SDK reuses for the next
// record; do not keep it.
type Record struct {
	// Key is the record key, nil when the record has none (Kafka's null
	// key), which is distinct from present and empty.
	Key []byte
	// Value is the record value, nil when absent (a tombstone).
	Value []byte
	// Timestamp is the event time in milliseconds since the Unix epoch.
	Timestamp int64
	// Headers are the record's headers, in order. Use Headers.Get to look
	// one up by name and Headers.Each to visit all of them.
	Headers abi.Headers

	index uint32 // position in the batch; scopes state calls
}

// recordAt is the Record a user function sees for the decoded batch record
// in at batch index i.
func recordAt(in *abi.InRecord, i int) Record {
	return Record{Key: in.Key, Value: in.Value, Timestamp: in.Timestamp, Headers: in.Headers, index: uint32(i)}
}
