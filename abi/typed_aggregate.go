package abi

import (
	"encoding/binary"
	"fmt"
)

// A typed add frame (host to guest, the input of ExportTypedAggAdd) is, in
// little-endian:
//
//	u32 group_count
//	group_count × group:
//	    u32 acc_len, acc bytes     the group's accumulator, never absent
//	    u32 record_count           how many records of the batch are its
//	zero bytes up to the next multiple of TypedAlign from the frame start
//	a typed batch frame of the groups' records, group after group
//
// Group g's records are the batch records from the sum of the record
// counts of the groups before it, numbered within the group from 0 as in
// an add frame. The guest answers with an add output frame, exactly as for
// ExportAggAdd.

// TypedGroup is one group of a typed add frame. It is a plain value; Acc
// aliases the frame when decoded.
type TypedGroup struct {
	Acc     []byte
	Records int
}

// AppendTypedAdd appends the typed add frame of groups, whose records are
// the batch columns cols (see AppendTypedBatch); the groups' record counts
// must add up to the batch's. On error it returns dst as it was.
func AppendTypedAdd(dst []byte, groups []TypedGroup, cols []Column) ([]byte, error) {
	start, n := len(dst), 0
	dst = AppendAggCount(dst, len(groups))
	for _, g := range groups {
		dst = AppendAggGroup(dst, g.Acc, g.Records)
		n += g.Records
	}
	for (len(dst)-start)%TypedAlign != 0 {
		dst = append(dst, 0)
	}
	out, err := AppendTypedBatch(dst, n, cols)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

// TypedAddReader decodes a typed add frame: Reset checks the whole frame,
// then NextGroup walks the groups and Batch holds their records. It does
// not allocate. It aliases the frame and must be used by one goroutine at
// a time.
type TypedAddReader struct {
	Batch  TypedBatch
	table  []byte
	off    int
	groups uint32
	begun  uint32
	first  int
}

// Reset starts decoding frame and returns its group count.
func (r *TypedAddReader) Reset(frame []byte) (int, error) { return r.reset(frame, true) }

// ResetShape is Reset checking the typed batch's shape only, as
// TypedBatch.ResetShape does: for a frame the host wrote.
func (r *TypedAddReader) ResetShape(frame []byte) (int, error) { return r.reset(frame, false) }

func (r *TypedAddReader) reset(frame []byte, records bool) (int, error) {
	*r = TypedAddReader{Batch: TypedBatch{cols: r.Batch.cols[:0]}}
	groups, err := readCount(frame, "group count")
	if err != nil {
		return 0, err
	}
	off, total := 4, 0
	for g := uint32(0); g < groups; g++ {
		if _, off, err = readAcc(frame, off, "accumulator"); err != nil {
			return 0, err
		}
		if len(frame)-off < 4 {
			return 0, truncated(off, "record count")
		}
		total += int(binary.LittleEndian.Uint32(frame[off:]))
		if total > MaxBatchRecords {
			return 0, &FrameError{Offset: off, What: fmt.Sprintf("more than %d records", MaxBatchRecords)}
		}
		off += 4
	}
	table := off
	for ; off%TypedAlign != 0; off++ {
		if off >= len(frame) || frame[off] != 0 {
			return 0, &FrameError{Offset: off, What: "padding before the typed batch is not zero bytes"}
		}
	}
	if _, err := r.Batch.reset(frame[off:], records); err != nil {
		return 0, fmt.Errorf("typed batch at byte %d: %w", off, err)
	}
	if r.Batch.Len() != total {
		return 0, &FrameError{Offset: off, What: fmt.Sprintf("the groups have %d records, the batch %d", total, r.Batch.Len())}
	}
	r.table, r.off, r.groups = frame[:table], 4, groups
	return int(groups), nil
}

// NextGroup returns the next group's accumulator (aliasing the frame), the
// batch index of its first record and its record count. It returns ok ==
// false after the last group.
func (r *TypedAddReader) NextGroup() (acc []byte, first, n int, ok bool) {
	if r.begun >= r.groups {
		return nil, 0, 0, false
	}
	acc, r.off, _ = readAcc(r.table, r.off, "accumulator")
	n = int(binary.LittleEndian.Uint32(r.table[r.off:]))
	r.off += 4
	first = r.first
	r.first += n
	r.begun++
	return acc, first, n, true
}
