package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Absent is the length value that marks a key or value as absent (null), as
// distinct from present and empty. Kafka distinguishes the two.
const Absent = ^uint32(0)

// MaxBatchRecords bounds the record count a frame may declare, so that a
// corrupt count cannot make a decoder allocate without limit.
const MaxBatchRecords = 1 << 24

// A batch frame (host to guest) is, in little-endian:
//
//	u32 count
//	count × record:
//	    i64 timestamp        event time, milliseconds since the Unix epoch
//	    u32 key_len          Absent for no key
//	    key_len bytes
//	    u32 value_len        Absent for no value
//	    value_len bytes
//	    u32 header_count
//	    header_count × (u32 name_len, name bytes, u32 value_len, value bytes)
//
// There is no padding and no alignment.

// FrameError reports a malformed frame and the byte offset where decoding
// stopped.
type FrameError struct {
	Offset int
	What   string
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("abi: malformed frame at byte %d: %s", e.Offset, e.What)
}

// ErrTruncated is wrapped by FrameError values caused by a frame that ends
// early.
var ErrTruncated = errors.New("truncated")

func truncated(off int, what string) error {
	return &FrameError{Offset: off, What: what + ": " + ErrTruncated.Error()}
}

// AppendBatchHeader appends the record count that starts a batch frame.
func AppendBatchHeader(dst []byte, count int) []byte {
	return binary.LittleEndian.AppendUint32(dst, uint32(count))
}

// SetBatchCount overwrites the count of the batch frame that starts at
// frame[0], for encoders that learn the count only at the end.
func SetBatchCount(frame []byte, count int) {
	binary.LittleEndian.PutUint32(frame, uint32(count))
}

// AppendRecord appends one record with headerCount headers to follow; the
// caller appends exactly that many headers with AppendHeader. A nil key or
// value is encoded as absent; a non-nil empty one as present and empty.
func AppendRecord(dst []byte, timestamp int64, key, value []byte, headerCount int) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(timestamp))
	dst = appendOptBytes(dst, key)
	dst = appendOptBytes(dst, value)
	return binary.LittleEndian.AppendUint32(dst, uint32(headerCount))
}

// AppendHeader appends one record header.
func AppendHeader(dst []byte, name string, value []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(name)))
	dst = append(dst, name...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

func appendOptBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.LittleEndian.AppendUint32(dst, Absent)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// InRecord is one decoded batch record. Its slices alias the frame.
type InRecord struct {
	Timestamp int64
	Key       []byte // nil when absent
	Value     []byte // nil when absent
	Headers   Headers
}

// Headers is an undecoded run of headers inside a frame; iterate it with
// Next. The zero value has no headers.
type Headers struct {
	raw   []byte
	count uint32
}

// Len returns the number of headers.
func (h Headers) Len() int { return int(h.count) }

// Raw returns the encoded headers, as AppendHeader wrote them.
func (h Headers) Raw() []byte { return h.raw }

// Each calls fn for each header in order. The slices alias the frame.
// Headers were validated when their record was decoded, so Each cannot fail.
func (h Headers) Each(fn func(name, value []byte)) {
	b := h.raw
	for i := uint32(0); i < h.count; i++ {
		n := binary.LittleEndian.Uint32(b)
		name := b[4 : 4+n]
		b = b[4+n:]
		v := binary.LittleEndian.Uint32(b)
		fn(name, b[4:4+v])
		b = b[4+v:]
	}
}

// Get returns the value of the first header named name.
func (h Headers) Get(name string) (value []byte, ok bool) {
	h.Each(func(n, v []byte) {
		if !ok && string(n) == name {
			value, ok = v, true
		}
	})
	return value, ok
}

// BatchReader decodes a batch frame record by record without allocating.
type BatchReader struct {
	buf   []byte
	off   int
	count uint32
	read  uint32
	// open is set for the records of an add group (AggAddReader): the
	// frame goes on after the last record, so Next does not reject the
	// bytes that follow it.
	open bool
}

// Reset starts decoding frame and returns its record count.
func (r *BatchReader) Reset(frame []byte) (int, error) {
	*r = BatchReader{buf: frame}
	if len(frame) < 4 {
		return 0, truncated(0, "record count")
	}
	r.count = binary.LittleEndian.Uint32(frame)
	if r.count > MaxBatchRecords {
		return 0, &FrameError{Offset: 0, What: fmt.Sprintf("record count %d over the limit %d", r.count, MaxBatchRecords)}
	}
	r.off = 4
	return int(r.count), nil
}

// Len returns the record count of the frame.
func (r *BatchReader) Len() int { return int(r.count) }

// Next decodes the next record into rec. It returns false with a nil error
// after the last record.
//
// Next is on the per-record path of every guest, and in a Go wasm guest each
// function call is costly, so it decodes in one flat function and leaves the
// error descriptions to a cold path.
func (r *BatchReader) Next(rec *InRecord) (bool, error) {
	if r.read >= r.count {
		if r.off != len(r.buf) && !r.open {
			return false, &FrameError{Offset: r.off, What: fmt.Sprintf("%d bytes after the last record", len(r.buf)-r.off)}
		}
		return false, nil
	}
	b, off := r.buf, r.off
	// Timestamp and key length.
	if len(b)-off < 12 {
		return false, r.corrupt(off)
	}
	rec.Timestamp = int64(binary.LittleEndian.Uint64(b[off:]))
	n := binary.LittleEndian.Uint32(b[off+8:])
	off += 12
	rec.Key = nil
	if n != Absent {
		if uint64(len(b)-off) < uint64(n) {
			return false, r.corrupt(r.off)
		}
		rec.Key = b[off : off+int(n) : off+int(n)]
		off += int(n)
	}
	// Value length and value.
	if len(b)-off < 4 {
		return false, r.corrupt(r.off)
	}
	n = binary.LittleEndian.Uint32(b[off:])
	off += 4
	rec.Value = nil
	if n != Absent {
		if uint64(len(b)-off) < uint64(n) {
			return false, r.corrupt(r.off)
		}
		rec.Value = b[off : off+int(n) : off+int(n)]
		off += int(n)
	}
	// Headers: the common case of none needs no loop.
	if len(b)-off < 4 {
		return false, r.corrupt(r.off)
	}
	if binary.LittleEndian.Uint32(b[off:]) == 0 {
		rec.Headers = Headers{}
		off += 4
	} else {
		var err error
		if rec.Headers, off, err = readHeaders(b, off); err != nil {
			return false, err
		}
	}
	r.off = off
	r.read++
	return true, nil
}

// corrupt describes the malformed record that starts at off, by decoding it
// again the slow way, which names the field and offset.
func (r *BatchReader) corrupt(off int) error {
	b := r.buf
	if len(b)-off < 8 {
		return truncated(off, "timestamp")
	}
	off += 8
	var err error
	if _, off, err = readOptBytes(b, off, "key"); err != nil {
		return err
	}
	if _, off, err = readOptBytes(b, off, "value"); err != nil {
		return err
	}
	if _, _, err = readHeaders(b, off); err != nil {
		return err
	}
	return &FrameError{Offset: off, What: "malformed record"}
}

func readOptBytes(b []byte, off int, what string) ([]byte, int, error) {
	if len(b)-off < 4 {
		return nil, off, truncated(off, what+" length")
	}
	n := binary.LittleEndian.Uint32(b[off:])
	off += 4
	if n == Absent {
		return nil, off, nil
	}
	if uint64(len(b)-off) < uint64(n) {
		return nil, off, truncated(off, fmt.Sprintf("%s of %d bytes", what, n))
	}
	return b[off : off+int(n) : off+int(n)], off + int(n), nil
}

func readBytes(b []byte, off int, what string) ([]byte, int, error) {
	if len(b)-off < 4 {
		return nil, off, truncated(off, what+" length")
	}
	n := binary.LittleEndian.Uint32(b[off:])
	off += 4
	if uint64(len(b)-off) < uint64(n) {
		return nil, off, truncated(off, fmt.Sprintf("%s of %d bytes", what, n))
	}
	return b[off : off+int(n) : off+int(n)], off + int(n), nil
}

func readHeaders(b []byte, off int) (Headers, int, error) {
	if len(b)-off < 4 {
		return Headers{}, off, truncated(off, "header count")
	}
	count := binary.LittleEndian.Uint32(b[off:])
	off += 4
	start := off
	for i := uint32(0); i < count; i++ {
		var err error
		if _, off, err = readBytes(b, off, "header name"); err != nil {
			return Headers{}, off, err
		}
		if _, off, err = readBytes(b, off, "header value"); err != nil {
			return Headers{}, off, err
		}
	}
	return Headers{raw: b[start:off:off], count: count}, off, nil
}
