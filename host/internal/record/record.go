package record

import "strconv"

// Record is one event. Key and Value are nil when absent, which is distinct
// from present and empty (Kafka's null key and tombstone value).
type Record struct {
	Key       []byte
	Value     []byte
	Timestamp int64 // event time, milliseconds since the Unix epoch
	Headers   []Header
	Origin    Origin
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Origin says where a record entered the pipeline, so that errors and dead
// letters can point at it.
type Origin struct {
	Source string // source name from the pipeline config
	Topic  string // the Kafka topic, for Kafka sources
	// Partition is the source partition, or -1 for unpartitioned sources.
	Partition int32
	// Offset is the record's position within its partition: the Kafka offset,
	// or for files and stdin the 0-based index of the record.
	Offset int64
	// Line is the 1-based line where the record starts in a text input, or 0.
	Line int64
}

// String renders the origin as "source [topic][partition] offset N line N",
// leaving out what the origin does not have.
func (o Origin) String() string {
	b := make([]byte, 0, 48)
	b = append(b, o.Source...)
	if o.Topic != "" {
		b = append(b, ' ')
		b = append(b, o.Topic...)
	}
	if o.Partition >= 0 {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(o.Partition), 10)
		b = append(b, ']')
	}
	b = append(b, " offset "...)
	b = strconv.AppendInt(b, o.Offset, 10)
	if o.Line > 0 {
		b = append(b, " line "...)
		b = strconv.AppendInt(b, o.Line, 10)
	}
	return string(b)
}

// DeadLetter is a record that a step could not process, with the reason.
type DeadLetter struct {
	// Record is the record as it reached the failing step.
	Record Record
	// Stage names the step: a source, an operator or a sink from the config.
	Stage string
	// Reason says what went wrong, in a sentence a user can act on.
	Reason string
}

// Arena owns byte slices copied into it, in chunks, so that a batch's bytes
// are allocated a few times per batch rather than once per record. Slices
// returned by Copy stay valid until Reset; after Reset they may be
// overwritten. An Arena is not safe for concurrent use.
type Arena struct {
	cur  []byte
	full [][]byte
}

const arenaChunk = 64 << 10

// Copy returns a copy of b owned by the arena. A nil b stays nil, and a
// non-nil empty b becomes a non-nil empty slice.
func (a *Arena) Copy(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(b) == 0 {
		return b[:0:0] // non-nil and empty, holding nothing of the caller's
	}
	if len(b) > cap(a.cur)-len(a.cur) {
		a.grow(len(b))
	}
	start := len(a.cur)
	a.cur = append(a.cur, b...)
	return a.cur[start:len(a.cur):len(a.cur)]
}

func (a *Arena) grow(n int) {
	if len(a.cur) > 0 {
		a.full = append(a.full, a.cur)
	}
	size := arenaChunk
	if n > size {
		size = n
	}
	a.cur = make([]byte, 0, size)
}

// Reset makes the arena's memory reusable. Slices it returned before may be
// overwritten afterwards.
func (a *Arena) Reset() {
	// Keep the largest chunk; drop the rest for the garbage collector, so a
	// burst of large records does not pin memory for good.
	for _, c := range a.full {
		if cap(c) > cap(a.cur) {
			a.cur = c
		}
	}
	clear(a.full)
	a.full = a.full[:0]
	a.cur = a.cur[:0]
}
