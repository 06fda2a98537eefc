package abi

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"slices"
)

// A typed output frame (guest to host, the result of the typed batch
// exports) is, in little-endian, without padding:
//
//	u32 count
//	count × entry:
//	    u8  kind             KindKeep, KindError or KindPatch
//	    u32 input_index      the typed batch record this entry answers
//	    keep:  nothing more
//	    error: u32 message_len, UTF-8 message bytes
//	    patch: u8 flags       PatchFlags
//	           [PatchFlagKey:       u32 key_len (Absent for none), key bytes]
//	           [PatchFlagTimestamp: i64 timestamp]
//	           u32 op_count       at most MaxPatchOps
//	           op_count × op:
//	               u8  op         PatchOpSet or PatchOpRemove
//	               u32 path_len, path bytes (a field path; empty: the whole value)
//	               set: u8 type, then the value:
//	                    null: nothing; int: i64; float: f64 (IEEE-754 bits);
//	                    bool: u8 0 or 1; string, raw: u32 len, bytes
//
// KindRecord is not a typed output kind. The ordering rules are those of
// the raw output frame, a patch counting as a record (CheckTypedOrder).

// KindPatch is the kind of a typed output entry that emits its input
// record with its value patched, or, with PatchFlagNew, a record whose
// value is built by the patch from an empty object.
const KindPatch Kind = 3

// PatchFlags say what a patch entry starts from and which of the record's
// other fields it sets. It is a plain value.
type PatchFlags uint8

const (
	// PatchFlagNew applies the patch to the empty object {} instead of the
	// input record's value: the entry is a new record.
	PatchFlagNew PatchFlags = 1 << 0
	// PatchFlagKey sets the record's key; otherwise it is the input's.
	PatchFlagKey PatchFlags = 1 << 1
	// PatchFlagTimestamp sets the record's timestamp; otherwise it is the
	// input's. Headers are always the input's.
	PatchFlagTimestamp PatchFlags = 1 << 2

	patchFlagsKnown = PatchFlagNew | PatchFlagKey | PatchFlagTimestamp
)

// PatchOpKind is what a patch operation does. It is a plain value.
type PatchOpKind uint8

const (
	// PatchOpSet sets the field at a path to a typed value, creating it and
	// any missing objects on the way.
	PatchOpSet PatchOpKind = 1
	// PatchOpRemove removes the field at a path, if it is there.
	PatchOpRemove PatchOpKind = 2
)

func (k PatchOpKind) String() string {
	switch k {
	case PatchOpSet:
		return "set"
	case PatchOpRemove:
		return "remove"
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// PatchOp is one decoded patch operation. Its slices alias the frame; it
// is a plain value, valid as long as the frame is.
type PatchOp struct {
	Kind PatchOpKind
	Path []byte    // a field path, or empty for the whole value (set only)
	Type FieldType // the value's type, for PatchOpSet
	Int  int64     // TypeInt
	// Float is the value of TypeFloat.
	Float float64
	Bool  bool   // TypeBool
	Bytes []byte // TypeString: UTF-8 content; TypeRaw: JSON text
}

// PatchOps is the checked, undecoded run of a patch entry's operations.
// It is a plain value aliasing the frame. The zero value has none.
type PatchOps struct {
	raw   []byte
	count int
}

// Len returns the number of operations.
func (p PatchOps) Len() int { return p.count }

// Raw returns the encoded operations.
func (p PatchOps) Raw() []byte { return p.raw }

// All yields the operations in order, with their index. They were checked
// when their entry was decoded, so decoding them again cannot fail.
func (p PatchOps) All() iter.Seq2[int, PatchOp] {
	return func(yield func(int, PatchOp) bool) {
		off := 0
		for i := 0; i < p.count; i++ {
			op, next, err := readPatchOp(p.raw, off, false)
			if err != nil || !yield(i, op) {
				return
			}
			off = next
		}
	}
}

// TypedEntry is one decoded typed output entry. Its slices alias the
// frame; it is a plain value, valid as long as the frame is.
type TypedEntry struct {
	Kind    Kind
	Index   int
	Flags   PatchFlags // KindPatch only
	Key     []byte     // PatchFlagKey: the new key, nil for none
	Time    int64      // PatchFlagTimestamp: the new timestamp
	Ops     PatchOps   // KindPatch only
	Message []byte     // KindError only
}

// CheckTypedOrder is CheckOrder for a typed output entry, a patch counting
// as a record: filter may not patch.
func CheckTypedOrder(op Op, n, prev int, e *TypedEntry) string {
	k := e.Kind
	if k == KindPatch {
		k = KindRecord
	}
	return CheckOrder(op, n, prev, &Entry{Kind: k, Index: e.Index})
}

// TypedOutputWriter builds a typed output frame. The zero value is ready
// to use; Reset starts a new frame reusing the buffer. It must be used by
// one goroutine at a time. It does not check paths or values: the host
// does, when it decodes the frame.
type TypedOutputWriter struct {
	w   OutputWriter
	ops int // the offset of the open patch's op count, or 0
}

// Reset starts a new, empty frame.
func (w *TypedOutputWriter) Reset() { w.w.Reset(); w.ops = 0 }

// Bytes finishes the frame and returns it. It aliases the writer's buffer,
// which stays valid until the next Reset.
func (w *TypedOutputWriter) Bytes() []byte { return w.w.Bytes() }

// Keep appends a keep entry for input index i.
func (w *TypedOutputWriter) Keep(i int) { w.ops = 0; w.w.Keep(i) }

// Error appends an error entry for input index i.
func (w *TypedOutputWriter) Error(i int, msg string) { w.ops = 0; w.w.Error(i, msg) }

// BeginPatch appends the start of a patch entry for input index i. key is
// written when flags has PatchFlagKey (nil for no key), ts when it has
// PatchFlagTimestamp. The Set and Remove calls that follow, until the next
// entry, append its operations.
func (w *TypedOutputWriter) BeginPatch(i int, flags PatchFlags, key []byte, ts int64) {
	w.w.entry(KindPatch, i)
	w.w.buf = append(w.w.buf, byte(flags))
	if flags&PatchFlagKey != 0 {
		w.w.buf = appendOptBytes(w.w.buf, key)
	}
	if flags&PatchFlagTimestamp != 0 {
		w.w.buf = binary.LittleEndian.AppendUint64(w.w.buf, uint64(ts))
	}
	w.ops = len(w.w.buf)
	w.w.buf = binary.LittleEndian.AppendUint32(w.w.buf, 0)
}

// PatchSet appends a patch entry for input index i, without flags, with
// one set operation at path of a value of type t, whose vlen bytes it
// returns for the caller to fill (vlen 0: none). It is BeginPatch and the
// operation's head in one step, growing the buffer at most once: in a guest, where
// every call and append costs, the common patch of one field is written
// at a third of the cost. The patch stays open for further operations.
func (w *TypedOutputWriter) PatchSet(i int, path string, t FieldType, vlen int) []byte {
	if len(w.w.buf) < 4 {
		w.w.Reset()
	}
	n := len(w.w.buf)
	head := 16 + len(path) // kind, index, flags, op count, op kind, path, type
	b := slices.Grow(w.w.buf, head+vlen)[:n+head+vlen]
	b[n] = byte(KindPatch)
	binary.LittleEndian.PutUint32(b[n+1:], uint32(i))
	b[n+5] = 0
	binary.LittleEndian.PutUint32(b[n+6:], 1)
	b[n+10] = byte(PatchOpSet)
	binary.LittleEndian.PutUint32(b[n+11:], uint32(len(path)))
	copy(b[n+15:], path)
	b[n+head-1] = byte(t)
	w.w.buf = b
	w.w.count++
	w.ops = n + 6
	return b[n+head:]
}

// op appends the head of one operation of the open patch.
func (w *TypedOutputWriter) op(k PatchOpKind, path string) {
	if w.ops == 0 {
		panic("abi: a patch operation outside a patch entry")
	}
	b := w.w.buf
	binary.LittleEndian.PutUint32(b[w.ops:], binary.LittleEndian.Uint32(b[w.ops:])+1)
	b = append(b, byte(k))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(path)))
	w.w.buf = append(b, path...)
}

// Remove appends an operation removing the field at path.
func (w *TypedOutputWriter) Remove(path string) { w.op(PatchOpRemove, path) }

// SetNull appends an operation setting the field at path to null.
func (w *TypedOutputWriter) SetNull(path string) {
	w.op(PatchOpSet, path)
	w.w.buf = append(w.w.buf, byte(TypeNull))
}

// SetInt appends an operation setting the field at path to an integer.
func (w *TypedOutputWriter) SetInt(path string, v int64) {
	w.op(PatchOpSet, path)
	w.w.buf = append(w.w.buf, byte(TypeInt))
	w.w.buf = binary.LittleEndian.AppendUint64(w.w.buf, uint64(v))
}

// SetFloat appends an operation setting the field at path to a float,
// which the host writes as the shortest decimal that reads back as v.
func (w *TypedOutputWriter) SetFloat(path string, v float64) {
	w.op(PatchOpSet, path)
	w.w.buf = append(w.w.buf, byte(TypeFloat))
	w.w.buf = binary.LittleEndian.AppendUint64(w.w.buf, math.Float64bits(v))
}

// SetBool appends an operation setting the field at path to true or false.
func (w *TypedOutputWriter) SetBool(path string, v bool) {
	w.op(PatchOpSet, path)
	b := byte(0)
	if v {
		b = 1
	}
	w.w.buf = append(w.w.buf, byte(TypeBool), b)
}

// SetString appends an operation setting the field at path to a string.
func (w *TypedOutputWriter) SetString(path, s string) { setBytes(w, path, TypeString, s) }

// SetStringBytes is SetString for content held in a byte slice.
func (w *TypedOutputWriter) SetStringBytes(path string, b []byte) { setBytes(w, path, TypeString, b) }

// SetRaw appends an operation setting the field at path to raw JSON text,
// which must be one JSON value.
func (w *TypedOutputWriter) SetRaw(path string, raw []byte) { setBytes(w, path, TypeRaw, raw) }

// setBytes appends a set of a string or raw value.
func setBytes[V string | []byte](w *TypedOutputWriter, path string, t FieldType, v V) {
	w.op(PatchOpSet, path)
	w.w.buf = append(w.w.buf, byte(t))
	w.w.buf = binary.LittleEndian.AppendUint32(w.w.buf, uint32(len(v)))
	w.w.buf = append(w.w.buf, v...)
}

// TypedOutputReader decodes a typed output frame entry by entry without
// allocating, checking each entry whole, operations included. It aliases
// the frame and must be used by one goroutine at a time.
type TypedOutputReader struct {
	r OutputReader // the framing is the output frame's
}

// Reset starts decoding frame and returns its entry count.
func (r *TypedOutputReader) Reset(frame []byte) (int, error) { return r.r.Reset(frame) }

// Next decodes the next entry into e. It returns false with a nil error
// after the last entry.
func (r *TypedOutputReader) Next(e *TypedEntry) (bool, error) {
	b, off := r.r.buf, r.r.off
	if r.r.read >= r.r.count {
		if off != len(b) {
			return false, &FrameError{Offset: off, What: fmt.Sprintf("%d bytes after the last entry", len(b)-off)}
		}
		return false, nil
	}
	if len(b)-off < 5 {
		return false, truncated(off, "entry kind and index")
	}
	*e = TypedEntry{Kind: Kind(b[off]), Index: int(binary.LittleEndian.Uint32(b[off+1:]))}
	if e.Index >= MaxBatchRecords {
		return false, &FrameError{Offset: off + 1, What: fmt.Sprintf("input index %d out of range", e.Index)}
	}
	off += 5
	var err error
	switch e.Kind {
	case KindKeep:
	case KindError:
		e.Message, off, err = readBytes(b, off, "error message")
	case KindPatch:
		off, err = readPatch(b, off, e)
	default:
		err = &FrameError{Offset: off - 5, What: fmt.Sprintf("unknown typed entry kind %d", uint8(e.Kind))}
	}
	if err != nil {
		return false, err
	}
	r.r.off = off
	r.r.read++
	return true, nil
}

// readPatch decodes the body of a patch entry, at off, into e.
func readPatch(b []byte, off int, e *TypedEntry) (int, error) {
	if len(b)-off < 1 {
		return off, truncated(off, "patch flags")
	}
	e.Flags = PatchFlags(b[off])
	if e.Flags&^patchFlagsKnown != 0 {
		return off, &FrameError{Offset: off, What: fmt.Sprintf("unknown patch flags %#x", uint8(e.Flags))}
	}
	off++
	var err error
	if e.Flags&PatchFlagKey != 0 {
		if e.Key, off, err = readOptBytes(b, off, "key"); err != nil {
			return off, err
		}
	}
	if e.Flags&PatchFlagTimestamp != 0 {
		if len(b)-off < 8 {
			return off, truncated(off, "timestamp")
		}
		e.Time = int64(binary.LittleEndian.Uint64(b[off:]))
		off += 8
	}
	if len(b)-off < 4 {
		return off, truncated(off, "op count")
	}
	n := binary.LittleEndian.Uint32(b[off:])
	if n > MaxPatchOps {
		return off, &FrameError{Offset: off, What: fmt.Sprintf("op count %d over the limit %d", n, MaxPatchOps)}
	}
	off += 4
	start := off
	for i := uint32(0); i < n; i++ {
		if _, off, err = readPatchOp(b, off, true); err != nil {
			return off, err
		}
	}
	e.Ops = PatchOps{raw: b[start:off:off], count: int(n)}
	return off, nil
}

// readPatchOp decodes the operation at off, checking its framing and, with
// checkPath, its path (PatchOps.All decodes operations checked before).
func readPatchOp(b []byte, off int, checkPath bool) (PatchOp, int, error) {
	var op PatchOp
	if len(b)-off < 1 {
		return op, off, truncated(off, "patch op")
	}
	op.Kind = PatchOpKind(b[off])
	if op.Kind != PatchOpSet && op.Kind != PatchOpRemove {
		return op, off, &FrameError{Offset: off, What: fmt.Sprintf("unknown patch op %d", uint8(op.Kind))}
	}
	start := off
	var err error
	if op.Path, off, err = readBytes(b, off+1, "patch path"); err != nil {
		return op, off, err
	}
	if checkPath && (len(op.Path) > 0 || op.Kind == PatchOpRemove) {
		if err := CheckPath(op.Path); err != nil {
			return op, start, &FrameError{Offset: start + 1, What: err.Error()}
		}
	}
	if op.Kind == PatchOpSet {
		off, err = readPatchValue(b, off, &op)
	}
	return op, off, err
}

// readPatchValue decodes the typed value of a set operation at off.
func readPatchValue(b []byte, off int, op *PatchOp) (int, error) {
	if len(b)-off < 1 {
		return off, truncated(off, "patch value type")
	}
	op.Type = FieldType(b[off])
	off++
	switch op.Type {
	case TypeNull:
		return off, nil
	case TypeInt, TypeFloat:
		if len(b)-off < 8 {
			return off, truncated(off, op.Type.String()+" value")
		}
		v := binary.LittleEndian.Uint64(b[off:])
		op.Int, op.Float = int64(v), math.Float64frombits(v)
		if op.Type == TypeInt {
			op.Float = 0
		} else {
			op.Int = 0
		}
		return off + 8, nil
	case TypeBool:
		if len(b)-off < 1 || b[off] > 1 {
			return off, &FrameError{Offset: off, What: "bool value is not 0 or 1"}
		}
		op.Bool = b[off] == 1
		return off + 1, nil
	case TypeString, TypeRaw:
		what := "string value" // a constant: the decoder must not allocate
		if op.Type == TypeRaw {
			what = "raw value"
		}
		var err error
		op.Bytes, off, err = readBytes(b, off, what)
		return off, err
	}
	return off - 1, &FrameError{Offset: off - 1, What: fmt.Sprintf("unknown value type %d", uint8(op.Type))}
}

// TypedMark is a position in a TypedOutputWriter's frame (Mark). It is a
// plain value, valid until the writer's next Reset.
type TypedMark struct {
	size  int
	count uint32
}

// Mark returns the frame's end, so that the entries appended after it can
// be taken back (Rewind): a guest whose function fails after it began a
// patch answers its record with an error entry alone.
func (w *TypedOutputWriter) Mark() TypedMark {
	if len(w.w.buf) < 4 {
		w.Reset()
	}
	return TypedMark{size: len(w.w.buf), count: w.w.count}
}

// Rewind drops every entry appended since m was taken.
func (w *TypedOutputWriter) Rewind(m TypedMark) {
	w.w.buf, w.w.count, w.ops = w.w.buf[:m.size], m.count, 0
}
