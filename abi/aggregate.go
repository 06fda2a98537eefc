package abi

import (
	"encoding/binary"
	"fmt"
)

// The frames of the aggregate operation (OpAggregate). An aggregate keeps
// one accumulator per group (a key, a window): opaque bytes that only the
// guest interprets. The host stores them and passes them in and out; the
// guest folds records into them (ExportAggAdd), merges two of them
// (ExportAggMerge) and turns one into a result value (ExportAggResult).
// ExportAggCreate returns the bytes of a fresh accumulator, without a frame.
//
// All integers are little-endian, without padding or alignment, as in the
// batch and output frames. Records inside an add frame are encoded exactly
// as in a batch frame (AppendRecord, AppendHeader).
//
// Add frame (host to guest, ExportAggAdd):
//
//	u32 group_count
//	group_count × group:
//	    u32 acc_len, acc bytes      the group's accumulator
//	    u32 record_count
//	    record_count × record       as in a batch frame
//
// Add output frame (guest to host):
//
//	u32 group_count                 equal to the add frame's
//	group_count × group, in add-frame order:
//	    u32 error_count
//	    error_count × error:
//	        u32 record_index        within the group, strictly increasing
//	        u32 message_len, UTF-8 message bytes
//	    u32 acc_len, acc bytes      the group's new accumulator
//
// An error rejects one record: the guest skipped it, and applied the
// group's other records in order. The new accumulator is always given.
//
// Merge frame (host to guest, ExportAggMerge):
//
//	u32 pair_count
//	pair_count × (u32 a_len, a bytes, u32 b_len, b bytes)
//
// Result frame (host to guest, ExportAggResult):
//
//	u32 acc_count
//	acc_count × (u32 acc_len, acc bytes)
//
// Result context frame (host to guest, ExportAggResultCtx, optional): the
// result frame with each accumulator's context (AggContext) before it:
//
//	u32 acc_count
//	acc_count × entry:
//	    u32 key_len, key bytes      the group's key; Absent for none
//	    u8  flags                   AggContextWindowed; the other bits zero
//	    i64 window_start            ms since the Unix epoch; 0 when not windowed
//	    i64 window_end              likewise; window_start <= window_end
//	    u32 acc_len, acc bytes
//
// Value output frame (guest to host, for merge and result):
//
//	u32 count                       the pair or accumulator count
//	count × entry, in input order:
//	    u8  status                  AggOK or AggError
//	    AggOK:    u32 value_len, value bytes
//	              merge: the merged accumulator (never absent);
//	              result: the result value, Absent for no (null) value
//	    AggError: u32 message_len, UTF-8 message bytes

// AggStatus is the status of an entry of a value output frame.
type AggStatus uint8

const (
	// AggOK is an entry holding a merged accumulator or a result value.
	AggOK AggStatus = 0
	// AggError is an entry holding an error message instead.
	AggError AggStatus = 1
)

func (s AggStatus) String() string {
	switch s {
	case AggOK:
		return "ok"
	case AggError:
		return "error"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// MaxAggCount bounds every count an aggregate frame declares (groups,
// records of a group, errors of a group, pairs, accumulators), so that a
// corrupt count cannot make a decoder allocate without limit.
const MaxAggCount = MaxBatchRecords

// AppendAggCount appends the u32 count that starts every aggregate frame:
// the group count of an add frame, the pair count of a merge frame, the
// accumulator count of a result frame.
func AppendAggCount(dst []byte, n int) []byte {
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}

// AppendAggGroup appends the head of one group of an add frame: its
// accumulator and the count of records that follow. The caller then appends
// exactly n records with AppendRecord and AppendHeader.
func AppendAggGroup(dst, acc []byte, n int) []byte {
	dst = AppendAcc(dst, acc)
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}

// AppendAcc appends one accumulator (u32 length, bytes), as merge and
// result frames hold them. A nil acc is encoded as empty: accumulators are
// never absent.
func AppendAcc(dst, acc []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(acc)))
	return append(dst, acc...)
}

func readCount(b []byte, what string) (uint32, error) {
	if len(b) < 4 {
		return 0, truncated(0, what)
	}
	n := binary.LittleEndian.Uint32(b)
	if n > MaxAggCount {
		return 0, &FrameError{Offset: 0, What: fmt.Sprintf("%s %d over the limit %d", what, n, MaxAggCount)}
	}
	return n, nil
}

// readAcc reads an accumulator, which is never absent.
func readAcc(b []byte, off int, what string) ([]byte, int, error) {
	if len(b)-off >= 4 && binary.LittleEndian.Uint32(b[off:]) == Absent {
		return nil, off, &FrameError{Offset: off, What: what + " is marked absent; accumulators are always present"}
	}
	return readBytes(b, off, what)
}

// AggAddReader decodes an add frame group by group and, within a group,
// record by record, without allocating. It is the guest's side of
// ExportAggAdd.
type AggAddReader struct {
	buf    []byte
	off    int // start of the next group, once recs is exhausted
	groups uint32
	begun  uint32
	recs   BatchReader // the records of the current group
}

// Reset starts decoding frame and returns its group count.
func (r *AggAddReader) Reset(frame []byte) (int, error) {
	*r = AggAddReader{buf: frame}
	n, err := readCount(frame, "group count")
	if err != nil {
		return 0, err
	}
	r.groups, r.off = n, 4
	return int(n), nil
}

// NextGroup moves to the next group and returns its accumulator and its
// record count; read its records with Next. Records of the previous group
// that were not read are decoded and skipped. After the last group it
// returns ok == false with a nil error, having checked that nothing follows.
// acc aliases the frame.
func (r *AggAddReader) NextGroup() (acc []byte, n int, ok bool, err error) {
	if r.begun > 0 {
		var rec InRecord
		for {
			more, err := r.recs.Next(&rec)
			if err != nil {
				return nil, 0, false, err
			}
			if !more {
				break
			}
		}
		r.off = r.recs.off
	}
	if r.begun >= r.groups {
		if r.off != len(r.buf) {
			return nil, 0, false, &FrameError{Offset: r.off, What: fmt.Sprintf("%d bytes after the last group", len(r.buf)-r.off)}
		}
		return nil, 0, false, nil
	}
	b, off := r.buf, r.off
	if acc, off, err = readAcc(b, off, "accumulator"); err != nil {
		return nil, 0, false, err
	}
	if len(b)-off < 4 {
		return nil, 0, false, truncated(off, "record count")
	}
	count := binary.LittleEndian.Uint32(b[off:])
	if count > MaxAggCount {
		return nil, 0, false, &FrameError{Offset: off, What: fmt.Sprintf("record count %d over the limit %d", count, MaxAggCount)}
	}
	r.recs = BatchReader{buf: b, off: off + 4, count: count, open: true}
	r.begun++
	return acc, int(count), true, nil
}

// Next decodes the next record of the current group into rec. It returns
// false with a nil error after the group's last record, and before the
// first NextGroup.
func (r *AggAddReader) Next(rec *InRecord) (bool, error) {
	return r.recs.Next(rec)
}

// AccReader decodes a merge frame or a result frame accumulator by
// accumulator, without allocating. It is the guest's side of
// ExportAggMerge and ExportAggResult.
type AccReader struct {
	buf   []byte
	off   int
	count uint32 // accumulators in the frame
	read  uint32
}

// Reset starts decoding a result frame and returns its accumulator count.
func (r *AccReader) Reset(frame []byte) (int, error) {
	*r = AccReader{buf: frame}
	n, err := readCount(frame, "accumulator count")
	if err != nil {
		return 0, err
	}
	r.count, r.off = n, 4
	return int(n), nil
}

// ResetPairs starts decoding a merge frame and returns its pair count. Each
// pair is two calls of Next.
func (r *AccReader) ResetPairs(frame []byte) (int, error) {
	*r = AccReader{buf: frame}
	n, err := readCount(frame, "pair count")
	if err != nil {
		return 0, err
	}
	r.count, r.off = 2*n, 4
	return int(n), nil
}

// Next returns the next accumulator, aliasing the frame. After the last it
// returns ok == false with a nil error, having checked that nothing
// follows.
func (r *AccReader) Next() (acc []byte, ok bool, err error) {
	if r.read >= r.count {
		if r.off != len(r.buf) {
			return nil, false, &FrameError{Offset: r.off, What: fmt.Sprintf("%d bytes after the last accumulator", len(r.buf)-r.off)}
		}
		return nil, false, nil
	}
	if acc, r.off, err = readAcc(r.buf, r.off, "accumulator"); err != nil {
		return nil, false, err
	}
	r.read++
	return acc, true, nil
}

// AggWriter builds the output frame of an aggregate call: an add output
// frame (BeginGroup, GroupError, EndGroup) or a value output frame (Value,
// Error); one kind per frame. The zero value is ready to use; Reset starts
// a new frame reusing the buffer.
type AggWriter struct {
	buf   []byte
	count uint32
	// mark is where the group or value entry being written starts (for a
	// group, its error count); 0 when none is open.
	mark int
	nerr uint32
}

// Reset starts a new, empty frame.
func (w *AggWriter) Reset() {
	w.buf = append(w.buf[:0], 0, 0, 0, 0)
	w.count, w.mark, w.nerr = 0, 0, 0
}

func (w *AggWriter) init() {
	if len(w.buf) < 4 {
		w.Reset()
	}
}

// Bytes finishes the frame and returns it. It aliases the writer's buffer,
// which stays valid until the next Reset.
func (w *AggWriter) Bytes() []byte {
	w.init()
	binary.LittleEndian.PutUint32(w.buf, w.count)
	return w.buf
}

// BeginGroup starts the answer for the next group of an add frame.
func (w *AggWriter) BeginGroup() {
	w.init()
	w.mark = len(w.buf)
	w.nerr = 0
	w.buf = append(w.buf, 0, 0, 0, 0)
}

// GroupError rejects record i of the current group with msg. Calls for one
// group must have increasing i.
func (w *AggWriter) GroupError(i int, msg string) {
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(i))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(msg)))
	w.buf = append(w.buf, msg...)
	w.nerr++
}

// EndGroup finishes the current group with its new accumulator.
func (w *AggWriter) EndGroup(acc []byte) {
	w.EndAcc(append(w.AccBuffer(), acc...))
}

// AccBuffer returns the frame's buffer positioned for the current group's
// accumulator, which the caller appends in place and passes to EndAcc; it
// ends the group without copying the accumulator. A group without errors
// needs no BeginGroup.
func (w *AggWriter) AccBuffer() []byte {
	if w.mark < 4 {
		w.BeginGroup()
	}
	binary.LittleEndian.PutUint32(w.buf[w.mark:], w.nerr)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, 0)
	return w.buf
}

// EndAcc finishes the group whose accumulator was appended to the slice
// AccBuffer returned.
func (w *AggWriter) EndAcc(buf []byte) {
	w.endBytes(buf)
	w.mark = 0
	w.count++
}

// Abort drops the group begun by BeginGroup or AccBuffer, or the entry
// begun by ValueBuffer, with everything written for it, so that its answer
// can be written again. It does nothing when none is open.
func (w *AggWriter) Abort() {
	if w.mark >= 4 {
		w.buf = w.buf[:w.mark]
	}
	w.mark, w.nerr = 0, 0
}

// Value appends an AggOK entry holding v: a merged accumulator, or a
// result value where nil means absent.
func (w *AggWriter) Value(v []byte) {
	w.init()
	w.buf = append(w.buf, byte(AggOK))
	w.buf = appendOptBytes(w.buf, v)
	w.count++
}

// ValueBuffer returns the frame's buffer positioned for the value of a new
// AggOK entry, which the caller appends in place and passes to EndValue.
func (w *AggWriter) ValueBuffer() []byte {
	w.init()
	w.mark = len(w.buf)
	w.buf = append(w.buf, byte(AggOK), 0, 0, 0, 0)
	return w.buf
}

// EndValue finishes an entry whose value was appended to the slice
// ValueBuffer returned. A nil buf ends it with no (absent) value.
func (w *AggWriter) EndValue(buf []byte) {
	if buf == nil {
		binary.LittleEndian.PutUint32(w.buf[len(w.buf)-4:], Absent)
	} else {
		w.endBytes(buf)
	}
	w.mark = 0
	w.count++
}

// Error appends an AggError entry with msg.
func (w *AggWriter) Error(msg string) {
	w.init()
	w.buf = append(w.buf, byte(AggError))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(msg)))
	w.buf = append(w.buf, msg...)
	w.count++
}

// endBytes sets the length before the bytes appended to the buffer since it
// was handed out with a length placeholder at its end.
func (w *AggWriter) endBytes(buf []byte) {
	start := len(w.buf)
	binary.LittleEndian.PutUint32(buf[start-4:], uint32(len(buf)-start))
	w.buf = buf
}

// AggContext is the context of one accumulator of a result context frame
// (ExportAggResultCtx): what the host knows of the group whose result is
// due. It is a plain value; a decoded Key aliases the frame.
type AggContext struct {
	// Key is the group's key, nil when it has none (the records had no
	// key, or the aggregate is not keyed). A present, empty key is
	// non-nil.
	Key []byte
	// Windowed says the group is a window's, [Start, End) in milliseconds
	// since the Unix epoch (a count window: the event times of its
	// records). Start and End are 0 when it is not.
	Windowed   bool
	Start, End int64
}

// AggContextWindowed is the bit of a context's flags byte that says the
// group is a window's. The other bits are zero.
const AggContextWindowed uint8 = 1 << 0

// aggContextFlagsKnown are the flag bits this version defines.
const aggContextFlagsKnown = AggContextWindowed

// AppendAccContext appends one entry of a result context frame: c, then
// the accumulator acc. A caller first appends the count with
// AppendAggCount. A context that is not windowed is encoded with zero
// bounds, whatever c's Start and End.
func AppendAccContext(dst []byte, c AggContext, acc []byte) []byte {
	dst = appendOptBytes(dst, c.Key)
	var flags uint8
	start, end := c.Start, c.End
	if c.Windowed {
		flags |= AggContextWindowed
	} else {
		start, end = 0, 0
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(start))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(end))
	return AppendAcc(dst, acc)
}

// AccContextReader decodes a result context frame entry by entry, without
// allocating. It is the guest's side of ExportAggResultCtx.
type AccContextReader struct {
	buf   []byte
	off   int
	count uint32
	read  uint32
}

// Reset starts decoding frame and returns its accumulator count.
func (r *AccContextReader) Reset(frame []byte) (int, error) {
	*r = AccContextReader{buf: frame}
	n, err := readCount(frame, "accumulator count")
	if err != nil {
		return 0, err
	}
	r.count, r.off = n, 4
	return int(n), nil
}

// Next returns the next accumulator and its context; acc and c.Key alias
// the frame. After the last it returns ok == false with a nil error,
// having checked that nothing follows. Unknown flags, bounds given for a
// context that is not windowed, and a start after the end are errors.
func (r *AccContextReader) Next() (c AggContext, acc []byte, ok bool, err error) {
	if r.read >= r.count {
		if r.off != len(r.buf) {
			return AggContext{}, nil, false, &FrameError{Offset: r.off, What: fmt.Sprintf("%d bytes after the last accumulator", len(r.buf)-r.off)}
		}
		return AggContext{}, nil, false, nil
	}
	b, off := r.buf, r.off
	if c.Key, off, err = readOptBytes(b, off, "key"); err != nil {
		return AggContext{}, nil, false, err
	}
	if len(b)-off < 17 {
		return AggContext{}, nil, false, truncated(off, "context flags and window bounds")
	}
	flags := b[off]
	c.Windowed = flags&AggContextWindowed != 0
	c.Start = int64(binary.LittleEndian.Uint64(b[off+1:]))
	c.End = int64(binary.LittleEndian.Uint64(b[off+9:]))
	switch {
	case flags&^aggContextFlagsKnown != 0:
		return AggContext{}, nil, false, &FrameError{Offset: off, What: fmt.Sprintf("unknown context flags %#x", flags)}
	case !c.Windowed && (c.Start != 0 || c.End != 0):
		return AggContext{}, nil, false, &FrameError{Offset: off + 1, What: fmt.Sprintf("window bounds %d, %d in a context that is not windowed", c.Start, c.End)}
	case c.Start > c.End:
		return AggContext{}, nil, false, &FrameError{Offset: off + 1, What: fmt.Sprintf("window start %d after its end %d", c.Start, c.End)}
	}
	if acc, off, err = readAcc(b, off+17, "accumulator"); err != nil {
		return AggContext{}, nil, false, err
	}
	r.off = off
	r.read++
	return c, acc, true, nil
}

// AggErrors is the undecoded run of error entries of one group of an add
// output frame; iterate it with Each. The zero value has no errors.
type AggErrors struct {
	raw   []byte
	count uint32
	last  int
}

// Len returns the number of errors.
func (e AggErrors) Len() int { return int(e.count) }

// Last returns the record index of the last error, the largest, or -1 when
// there is none.
func (e AggErrors) Last() int {
	if e.count == 0 {
		return -1
	}
	return e.last
}

// Each calls fn for each error in order. msg aliases the frame. The errors
// were validated when their group was decoded, so Each cannot fail.
func (e AggErrors) Each(fn func(index int, msg []byte)) {
	b := e.raw
	for i := uint32(0); i < e.count; i++ {
		idx := binary.LittleEndian.Uint32(b)
		n := binary.LittleEndian.Uint32(b[4:])
		fn(int(idx), b[8:8+n:8+n])
		b = b[8+n:]
	}
}

// AggGroupOutput is one decoded group of an add output frame. Its slices
// alias the frame.
type AggGroupOutput struct {
	Errors AggErrors
	Acc    []byte
}

// AggAddOutputReader decodes an add output frame group by group without
// allocating. It is the host's side of ExportAggAdd.
type AggAddOutputReader struct {
	buf   []byte
	off   int
	count uint32
	read  uint32
}

// Reset starts decoding frame and returns its group count.
func (r *AggAddOutputReader) Reset(frame []byte) (int, error) {
	*r = AggAddOutputReader{buf: frame}
	n, err := readCount(frame, "group count")
	if err != nil {
		return 0, err
	}
	r.count, r.off = n, 4
	return int(n), nil
}

// Next decodes the next group into g. It returns false with a nil error
// after the last group, having checked that nothing follows. Record
// indexes are checked to be strictly increasing and under MaxAggCount;
// that they are under the group's record count is the caller's check
// (AggErrors.Last).
func (r *AggAddOutputReader) Next(g *AggGroupOutput) (bool, error) {
	if r.read >= r.count {
		if r.off != len(r.buf) {
			return false, &FrameError{Offset: r.off, What: fmt.Sprintf("%d bytes after the last group", len(r.buf)-r.off)}
		}
		return false, nil
	}
	b, off := r.buf, r.off
	if len(b)-off < 4 {
		return false, truncated(off, "error count")
	}
	nerr := binary.LittleEndian.Uint32(b[off:])
	if nerr > MaxAggCount {
		return false, &FrameError{Offset: off, What: fmt.Sprintf("error count %d over the limit %d", nerr, MaxAggCount)}
	}
	off += 4
	start, last := off, -1
	for i := uint32(0); i < nerr; i++ {
		if len(b)-off < 4 {
			return false, truncated(off, "record index")
		}
		idx := binary.LittleEndian.Uint32(b[off:])
		if idx >= MaxAggCount || int(idx) <= last {
			return false, &FrameError{Offset: off, What: fmt.Sprintf("record index %d after %d: indexes must increase and be under %d", idx, last, MaxAggCount)}
		}
		last = int(idx)
		var err error
		if _, off, err = readBytes(b, off+4, "error message"); err != nil {
			return false, err
		}
	}
	errs := AggErrors{raw: b[start:off:off], count: nerr, last: last}
	acc, off, err := readAcc(b, off, "accumulator")
	if err != nil {
		return false, err
	}
	*g = AggGroupOutput{Errors: errs, Acc: acc}
	r.off = off
	r.read++
	return true, nil
}

// AggValue is one decoded entry of a value output frame. Its slices alias
// the frame.
type AggValue struct {
	Status  AggStatus
	Value   []byte // AggOK: the value, nil when absent
	Message []byte // AggError: the message
}

// AggValueReader decodes a value output frame entry by entry without
// allocating. It is the host's side of ExportAggMerge and ExportAggResult.
type AggValueReader struct {
	buf   []byte
	off   int
	count uint32
	read  uint32
}

// Reset starts decoding frame and returns its entry count.
func (r *AggValueReader) Reset(frame []byte) (int, error) {
	*r = AggValueReader{buf: frame}
	n, err := readCount(frame, "entry count")
	if err != nil {
		return 0, err
	}
	r.count, r.off = n, 4
	return int(n), nil
}

// Next decodes the next entry into v. It returns false with a nil error
// after the last entry, having checked that nothing follows.
func (r *AggValueReader) Next(v *AggValue) (bool, error) {
	if r.read >= r.count {
		if r.off != len(r.buf) {
			return false, &FrameError{Offset: r.off, What: fmt.Sprintf("%d bytes after the last entry", len(r.buf)-r.off)}
		}
		return false, nil
	}
	b, off := r.buf, r.off
	if len(b)-off < 1 {
		return false, truncated(off, "entry status")
	}
	*v = AggValue{Status: AggStatus(b[off])}
	off++
	var err error
	switch v.Status {
	case AggOK:
		v.Value, off, err = readOptBytes(b, off, "value")
	case AggError:
		v.Message, off, err = readBytes(b, off, "error message")
	default:
		return false, &FrameError{Offset: off - 1, What: fmt.Sprintf("unknown entry status %d", uint8(v.Status))}
	}
	if err != nil {
		return false, err
	}
	r.off = off
	r.read++
	return true, nil
}
