package abi

import (
	"encoding/binary"
	"fmt"
)

// Kind is the kind of an output entry.
type Kind uint8

const (
	// KindKeep passes the input record through unchanged. Map, flat_map and
	// filter may all use it; it is how filter keeps a record.
	KindKeep Kind = 0
	// KindRecord emits a record. Its value is always given; key, timestamp
	// and headers are given when the matching Flag bit is set and are
	// otherwise inherited from the input record.
	KindRecord Kind = 1
	// KindError rejects the input record with a message. The host sends the
	// input record to the dead-letter output, and discards any other entries
	// for the same input.
	KindError Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindKeep:
		return "keep"
	case KindRecord:
		return "record"
	case KindError:
		return "error"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Flags say which fields a KindRecord entry sets.
type Flags uint8

const (
	FlagKey       Flags = 1 << 0
	FlagTimestamp Flags = 1 << 1
	FlagHeaders   Flags = 1 << 2

	flagsKnown = FlagKey | FlagTimestamp | FlagHeaders
)

// An output frame (guest to host) is, in little-endian:
//
//	u32 count
//	count × entry:
//	    u8  kind
//	    u32 input_index     the batch position of the input this entry answers
//	    kind keep:   nothing more
//	    kind record: u8 flags
//	                 [flags&key:       u32 key_len (Absent for none), key bytes]
//	                 [flags&timestamp: i64 timestamp]
//	                 [flags&headers:   u32 header_count, headers as in a batch]
//	                 u32 value_len (Absent for none), value bytes
//	    kind error:  u32 message_len, UTF-8 message bytes
//
// Ordering rules, checked by the host (see CheckOrder):
//   - map: exactly one entry per input, input_index 0, 1, 2, ...
//   - filter: keep or error entries only, input_index strictly increasing;
//     an input without an entry is dropped.
//   - flat_map: any number of entries per input, input_index non-decreasing.

// OutputWriter builds an output frame. The zero value is ready to use; Reset
// starts a new frame reusing the buffer.
type OutputWriter struct {
	buf   []byte
	count uint32
}

// Reset starts a new, empty frame.
func (w *OutputWriter) Reset() {
	w.buf = append(w.buf[:0], 0, 0, 0, 0)
	w.count = 0
}

// Bytes finishes the frame and returns it. It aliases the writer's buffer,
// which stays valid until the next Reset.
func (w *OutputWriter) Bytes() []byte {
	if len(w.buf) < 4 {
		w.Reset()
	}
	binary.LittleEndian.PutUint32(w.buf, w.count)
	return w.buf
}

// Keep appends a keep entry for input index i.
func (w *OutputWriter) Keep(i int) {
	if len(w.buf) < 4 {
		w.Reset()
	}
	w.buf = append(w.buf, byte(KindKeep), byte(i), byte(i>>8), byte(i>>16), byte(i>>24))
	w.count++
}

// Error appends an error entry for input index i.
func (w *OutputWriter) Error(i int, msg string) {
	w.entry(KindError, i)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(msg)))
	w.buf = append(w.buf, msg...)
}

// Record appends a record entry for input index i that sets only the value,
// inheriting key, timestamp and headers from the input.
func (w *OutputWriter) Record(i int, value []byte) {
	w.entry(KindRecord, i)
	w.buf = append(w.buf, 0)
	w.buf = appendOptBytes(w.buf, value)
}

// BeginRecord appends the start of a record entry whose flags say which
// optional fields follow. The caller then appends, in this order and only
// those flagged: the key (AppendKey), the timestamp (AppendTimestamp), the
// header count and headers (AppendHeaderCount, AppendHeader); and finally
// always the value (AppendValue).
func (w *OutputWriter) BeginRecord(i int, flags Flags) {
	w.entry(KindRecord, i)
	w.buf = append(w.buf, byte(flags))
}

// AppendKey appends the key of a record begun with FlagKey.
func (w *OutputWriter) AppendKey(key []byte) { w.buf = appendOptBytes(w.buf, key) }

// AppendTimestamp appends the timestamp of a record begun with FlagTimestamp.
func (w *OutputWriter) AppendTimestamp(ts int64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(ts))
}

// AppendHeaderCount appends the header count of a record begun with
// FlagHeaders.
func (w *OutputWriter) AppendHeaderCount(n int) {
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(n))
}

// AppendHeader appends one header of a record begun with FlagHeaders.
func (w *OutputWriter) AppendHeader(name string, value []byte) {
	w.buf = AppendHeader(w.buf, name, value)
}

// AppendValue appends the value that ends a record entry.
func (w *OutputWriter) AppendValue(value []byte) { w.buf = appendOptBytes(w.buf, value) }

// ValueBuffer returns the frame's buffer positioned for a value the caller
// writes in place: append the value bytes to the returned slice and pass the
// result to EndValue. This avoids building the value in a separate buffer.
func (w *OutputWriter) ValueBuffer() []byte {
	w.buf = binary.LittleEndian.AppendUint32(w.buf, 0)
	return w.buf
}

// EndValue finishes a value written into the slice ValueBuffer returned.
func (w *OutputWriter) EndValue(buf []byte) {
	start := len(w.buf)
	binary.LittleEndian.PutUint32(buf[start-4:], uint32(len(buf)-start))
	w.buf = buf
}

func (w *OutputWriter) entry(k Kind, i int) {
	if len(w.buf) < 4 {
		w.Reset()
	}
	w.buf = append(w.buf, byte(k), byte(i), byte(i>>8), byte(i>>16), byte(i>>24))
	w.count++
}

// Entry is one decoded output entry. Its slices alias the frame.
type Entry struct {
	Kind    Kind
	Index   int
	Flags   Flags // KindRecord only
	Key     []byte
	Time    int64
	Headers Headers
	Value   []byte
	Message []byte // KindError only
}

// OutputReader decodes an output frame entry by entry without allocating.
type OutputReader struct {
	buf   []byte
	off   int
	count uint32
	read  uint32
}

// Reset starts decoding frame and returns its entry count.
func (r *OutputReader) Reset(frame []byte) (int, error) {
	*r = OutputReader{buf: frame}
	if len(frame) < 4 {
		return 0, truncated(0, "entry count")
	}
	r.count = binary.LittleEndian.Uint32(frame)
	if r.count > MaxBatchRecords*16 {
		return 0, &FrameError{Offset: 0, What: fmt.Sprintf("entry count %d over the limit %d", r.count, MaxBatchRecords*16)}
	}
	r.off = 4
	return int(r.count), nil
}

// Next decodes the next entry into e. It returns false with a nil error
// after the last entry.
func (r *OutputReader) Next(e *Entry) (bool, error) {
	if r.read >= r.count {
		if r.off != len(r.buf) {
			return false, &FrameError{Offset: r.off, What: fmt.Sprintf("%d bytes after the last entry", len(r.buf)-r.off)}
		}
		return false, nil
	}
	b, off := r.buf, r.off
	if len(b)-off < 5 {
		return false, truncated(off, "entry kind and index")
	}
	*e = Entry{Kind: Kind(b[off]), Index: int(binary.LittleEndian.Uint32(b[off+1:]))}
	if e.Index < 0 || e.Index >= MaxBatchRecords {
		return false, &FrameError{Offset: off + 1, What: fmt.Sprintf("input index %d out of range", e.Index)}
	}
	off += 5
	var err error
	switch e.Kind {
	case KindKeep:
	case KindError:
		if e.Message, off, err = readBytes(b, off, "error message"); err != nil {
			return false, err
		}
	case KindRecord:
		if len(b)-off < 1 {
			return false, truncated(off, "record flags")
		}
		e.Flags = Flags(b[off])
		if e.Flags&^flagsKnown != 0 {
			return false, &FrameError{Offset: off, What: fmt.Sprintf("unknown record flags %#x", uint8(e.Flags))}
		}
		off++
		if e.Flags&FlagKey != 0 {
			if e.Key, off, err = readOptBytes(b, off, "key"); err != nil {
				return false, err
			}
		}
		if e.Flags&FlagTimestamp != 0 {
			if len(b)-off < 8 {
				return false, truncated(off, "timestamp")
			}
			e.Time = int64(binary.LittleEndian.Uint64(b[off:]))
			off += 8
		}
		if e.Flags&FlagHeaders != 0 {
			if e.Headers, off, err = readHeaders(b, off); err != nil {
				return false, err
			}
		}
		if e.Value, off, err = readOptBytes(b, off, "value"); err != nil {
			return false, err
		}
	default:
		return false, &FrameError{Offset: off, What: fmt.Sprintf("unknown entry kind %d", uint8(e.Kind))}
	}
	r.off = off
	r.read++
	return true, nil
}

// CheckOrder checks one entry against the ordering rules of op, given the
// batch size n and the index of the previous entry (-1 before the first).
// It returns a description of the violation, or "" when the entry is valid.
func CheckOrder(op Op, n, prev int, e *Entry) string {
	if e.Index >= n {
		return fmt.Sprintf("entry for input %d, but the batch has %d records", e.Index, n)
	}
	switch op {
	case OpMap:
		if e.Index != prev+1 {
			return fmt.Sprintf("map must answer each input once in order: entry for input %d after input %d", e.Index, prev)
		}
	case OpFilter:
		if e.Kind == KindRecord {
			return fmt.Sprintf("filter may only keep or reject inputs, but emitted a record for input %d", e.Index)
		}
		if e.Index <= prev {
			return fmt.Sprintf("filter entries must have increasing input indexes: %d after %d", e.Index, prev)
		}
	case OpFlatMap:
		if e.Index < prev {
			return fmt.Sprintf("flat_map entries must have non-decreasing input indexes: %d after %d", e.Index, prev)
		}
	default:
		return "unknown operation " + op.String()
	}
	return ""
}
