// Package record defines the record that flows through a weir pipeline, the
// dead letter that carries a rejected record to the dead-letter output, and
// the arena that owns the bytes of a batch.
//
// Records are plain values. A batch of records, and every slice its records
// point into, is owned by one goroutine at a time: whoever holds the batch.
package record
