package abi

import (
	"encoding/binary"
	"fmt"
	"math"
)

// A typed batch frame (host to guest, the input of the typed batch
// exports) is, in little-endian:
//
//	u32 count                 n, the records
//	u32 field_count           f, as declared
//	(f+2) × column, 16 bytes each:
//	    u32 type              a FieldType
//	    u32 status_off        n ValueStatus bytes; 0 for none
//	    u32 values_off        int, float: n × 8 bytes; bool: n bytes;
//	                          string, raw: (n+1) × u32 offsets into data
//	    u32 data_off          string, raw: the values' bytes; 0 otherwise
//	the regions the columns point at
//
// Offsets are from the start of the frame. Column 0 is the records'
// timestamps (type int, no statuses), column 1 their keys (type string,
// status ValuePresent or ValueNull), column 2+i declared field i. A
// variable-length column's value i is data[off[i]:off[i+1]], with off[0]
// = 0 and off[n] the length of data. The encoder writes every region at
// the next multiple of TypedAlign after the previous one, in column
// order (statuses, values, data), with zero bytes between; a reader needs
// only the column table. A value whose status is not ValuePresent is zero
// (fixed width) or empty.

const (
	// TypedHeaderSize is the size of a typed batch frame's counts, and
	// TypedColumnSize that of one entry of its column table.
	TypedHeaderSize = 8
	TypedColumnSize = 16
	// TypedTimestampColumn and TypedKeyColumn are the columns of a typed
	// batch frame that hold the records' timestamps and keys;
	// TypedFirstFieldColumn is the column of declared field 0.
	TypedTimestampColumn  = 0
	TypedKeyColumn        = 1
	TypedFirstFieldColumn = 2
)

// Column is one column of a typed batch frame, as AppendTypedBatch takes
// it and TypedBatch.Column returns it. Decoded, its slices alias the
// frame; it is a plain value, valid as long as the slices are. Its
// accessors take a record index in [0, n) and panic outside it, as a slice
// does.
type Column struct {
	Type FieldType
	// Statuses holds one ValueStatus byte per record; it is nil for the
	// timestamp column, whose values are all present.
	Statuses []byte
	// Values holds the fixed-width values, little-endian, or for string
	// and raw columns the n+1 little-endian u32 offsets into Data.
	Values []byte
	// Data holds the bytes of a string or raw column's values.
	Data []byte
}

// Status returns the status of record i's value.
func (c Column) Status(i int) ValueStatus {
	if c.Statuses == nil {
		return ValuePresent
	}
	return ValueStatus(c.Statuses[i])
}

// Int returns record i's value of an int column.
func (c Column) Int(i int) int64 { return int64(binary.LittleEndian.Uint64(c.Values[8*i:])) }

// Float returns record i's value of a float column.
func (c Column) Float(i int) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(c.Values[8*i:]))
}

// Bool returns record i's value of a bool column.
func (c Column) Bool(i int) bool { return c.Values[i] != 0 }

// Bytes returns record i's value of a string or raw column; it aliases
// Data.
func (c Column) Bytes(i int) []byte {
	lo := binary.LittleEndian.Uint32(c.Values[4*i:])
	hi := binary.LittleEndian.Uint32(c.Values[4*i+4:])
	return c.Data[lo:hi:hi]
}

// check checks c as column k of a frame of n records.
func (c Column) check(n, k int, records bool) error {
	if err := c.checkKind(k); err != nil {
		return err
	}
	if k != TypedTimestampColumn && len(c.Statuses) != n {
		return fmt.Errorf("%d statuses for %d records", len(c.Statuses), n)
	}
	if !records {
		return c.checkSize(n)
	}
	for i, s := range c.Statuses {
		if ValueStatus(s) > statusLast || k == TypedKeyColumn && ValueStatus(s) > ValueNull {
			return fmt.Errorf("record %d: status %d", i, s)
		}
	}
	if w := c.Type.Width(); w > 0 {
		return c.checkFixed(n, w)
	}
	return c.checkOffsets(n)
}

func (c Column) checkKind(k int) error {
	switch {
	case k == TypedTimestampColumn && (c.Type != TypeInt || c.Statuses != nil):
		return fmt.Errorf("the timestamp column must be of type int without statuses")
	case k == TypedKeyColumn && c.Type != TypeString:
		return fmt.Errorf("the key column must be of type string")
	case !c.Type.columnType():
		return fmt.Errorf("type %d", uint8(c.Type))
	}
	return nil
}

// checkSize checks the sizes of the column's values and data for n
// records: fixed-width values, or n+1 offsets whose last is the data's
// length.
func (c Column) checkSize(n int) error {
	if w := c.Type.Width(); w > 0 {
		if len(c.Values) != n*w || len(c.Data) != 0 {
			return fmt.Errorf("%d value bytes and %d data bytes for %d %s values", len(c.Values), len(c.Data), n, c.Type)
		}
		return nil
	}
	if len(c.Values) != 4*(n+1) {
		return fmt.Errorf("%d offset bytes for %d records", len(c.Values), n)
	}
	if last := binary.LittleEndian.Uint32(c.Values[4*n:]); int(last) != len(c.Data) {
		return fmt.Errorf("the last offset is %d, but the data has %d bytes", last, len(c.Data))
	}
	return nil
}

func (c Column) checkFixed(n, w int) error {
	if len(c.Values) != n*w || len(c.Data) != 0 {
		return fmt.Errorf("%d value bytes and %d data bytes for %d %s values", len(c.Values), len(c.Data), n, c.Type)
	}
	if c.Type == TypeBool {
		for i, v := range c.Values {
			if v > 1 {
				return fmt.Errorf("record %d: bool byte %d", i, v)
			}
		}
	}
	return nil
}

func (c Column) checkOffsets(n int) error {
	if len(c.Values) != 4*(n+1) {
		return fmt.Errorf("%d offset bytes for %d records", len(c.Values), n)
	}
	prev := uint32(0)
	for i := 0; i <= n; i++ {
		o := binary.LittleEndian.Uint32(c.Values[4*i:])
		if i == 0 && o != 0 || o < prev {
			return fmt.Errorf("offset %d of record %d after %d", o, i, prev)
		}
		prev = o
	}
	if int(prev) != len(c.Data) {
		return fmt.Errorf("the last offset is %d, but the data has %d bytes", prev, len(c.Data))
	}
	return nil
}

// AppendTypedBatch appends the typed batch frame of n records whose
// columns are cols: the timestamps, the keys, then one column per declared
// field. It checks each column as TypedBatch.Reset would and returns an
// error naming the first that breaks a rule, leaving dst as it was. The
// frame's offsets and alignment are from its own start, len(dst).
func AppendTypedBatch(dst []byte, n int, cols []Column) ([]byte, error) {
	if len(cols) < TypedFirstFieldColumn || len(cols)-TypedFirstFieldColumn > MaxTypedFields || n < 0 || n > MaxBatchRecords {
		return dst, fmt.Errorf("abi: a typed batch of %d records and %d columns", n, len(cols))
	}
	for k, c := range cols {
		if err := c.check(n, k, true); err != nil {
			return dst, fmt.Errorf("abi: typed batch column %d: %w", k, err)
		}
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(cols)-TypedFirstFieldColumn))
	dir := len(dst)
	dst = append(dst, make([]byte, TypedColumnSize*len(cols))...)
	for k, c := range cols {
		entry := dir + TypedColumnSize*k
		binary.LittleEndian.PutUint32(dst[entry:], uint32(c.Type))
		if k != TypedTimestampColumn {
			dst = appendRegion(dst, start, entry+4, c.Statuses)
		}
		dst = appendRegion(dst, start, entry+8, c.Values)
		if c.Type.Width() == 0 {
			dst = appendRegion(dst, start, entry+12, c.Data)
		}
	}
	return dst, nil
}

// appendRegion pads dst to the next multiple of TypedAlign from start,
// appends region, and writes its offset from start at dst[at:].
func appendRegion(dst []byte, start, at int, region []byte) []byte {
	for (len(dst)-start)%TypedAlign != 0 {
		dst = append(dst, 0)
	}
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-start))
	return append(dst, region...)
}

// TypedBatch decodes a typed batch frame. Reset checks the whole frame, so
// that its accessors cannot fail; it does not allocate. It holds the frame
// and must be used by one goroutine at a time.
type TypedBatch struct {
	frame     []byte
	n, fields int
	cols      []Column // read by Reset; the slice is kept for the next
}

// Reset starts decoding frame and returns its record count.
func (b *TypedBatch) Reset(frame []byte) (int, error) { return b.reset(frame, true) }

// ResetShape is Reset for a frame the host wrote (its writer,
// AppendTypedBatch, checks every column): it checks the frame's shape, its
// counts, regions and their sizes, but not each record's status and
// offsets, which a guest would pay for record by record. A bad offset
// then makes Column.Bytes panic, and a bad status reads as that status.
func (b *TypedBatch) ResetShape(frame []byte) (int, error) { return b.reset(frame, false) }

func (b *TypedBatch) reset(frame []byte, records bool) (int, error) {
	*b = TypedBatch{cols: b.cols[:0]}
	if len(frame) < TypedHeaderSize {
		return 0, truncated(0, "record and field counts")
	}
	n, f := binary.LittleEndian.Uint32(frame), binary.LittleEndian.Uint32(frame[4:])
	switch {
	case n > MaxBatchRecords:
		return 0, &FrameError{Offset: 0, What: fmt.Sprintf("record count %d over the limit %d", n, MaxBatchRecords)}
	case f > MaxTypedFields:
		return 0, &FrameError{Offset: 4, What: fmt.Sprintf("field count %d over the limit %d", f, MaxTypedFields)}
	}
	cols := int(f) + TypedFirstFieldColumn
	if len(frame) < TypedHeaderSize+TypedColumnSize*cols {
		return 0, truncated(TypedHeaderSize, "column table")
	}
	tb := TypedBatch{frame: frame, n: int(n), fields: int(f), cols: b.cols}
	for k := 0; k < cols; k++ {
		c, err := tb.readColumn(k)
		if err == nil {
			err = c.check(tb.n, k, records)
		}
		if err != nil {
			clear(b.cols[:cap(b.cols)]) // keep no frame alive
			return 0, &FrameError{Offset: TypedHeaderSize + TypedColumnSize*k, What: fmt.Sprintf("column %d: %v", k, err)}
		}
		tb.cols = append(tb.cols, c)
	}
	*b = tb
	return tb.n, nil
}

// readColumn slices column k's regions out of the frame, checking that
// they lie within it and are aligned.
func (b *TypedBatch) readColumn(k int) (Column, error) {
	e := b.frame[TypedHeaderSize+TypedColumnSize*k:]
	t := binary.LittleEndian.Uint32(e)
	if t > uint32(typeLast) || !FieldType(t).columnType() {
		return Column{}, fmt.Errorf("type %d", t)
	}
	c := Column{Type: FieldType(t)}
	statusOff, valuesOff, dataOff := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
	var err error
	switch {
	case statusOff == 0 && k != TypedTimestampColumn:
		return c, fmt.Errorf("no statuses")
	case statusOff != 0:
		if c.Statuses, err = b.region(statusOff, uint64(b.n)); err != nil {
			return c, fmt.Errorf("statuses: %w", err)
		}
	}
	w := uint64(c.Type.Width())
	if w == 0 {
		w = 4
		if c.Values, err = b.region(valuesOff, 4*uint64(b.n)+4); err != nil {
			return c, fmt.Errorf("offsets: %w", err)
		}
		end := binary.LittleEndian.Uint32(c.Values[4*b.n:])
		if c.Data, err = b.region(dataOff, uint64(end)); err != nil {
			return c, fmt.Errorf("data: %w", err)
		}
		return c, nil
	}
	if dataOff != 0 {
		return c, fmt.Errorf("a data offset for a column of type %s", c.Type)
	}
	if c.Values, err = b.region(valuesOff, w*uint64(b.n)); err != nil {
		return c, fmt.Errorf("values: %w", err)
	}
	return c, nil
}

func (b *TypedBatch) region(off uint32, size uint64) ([]byte, error) {
	switch {
	case off%TypedAlign != 0:
		return nil, fmt.Errorf("offset %d is not a multiple of %d", off, TypedAlign)
	case off < TypedHeaderSize || uint64(off)+size > uint64(len(b.frame)):
		return nil, fmt.Errorf("%d bytes at %d: outside the frame of %d bytes", size, off, len(b.frame))
	}
	return b.frame[off : uint64(off)+size : uint64(off)+size], nil
}

// Len returns the record count.
func (b *TypedBatch) Len() int { return b.n }

// Fields returns the declared field count.
func (b *TypedBatch) Fields() int { return b.fields }

// Column returns column k: TypedTimestampColumn, TypedKeyColumn, or
// TypedFirstFieldColumn+i for declared field i. It panics for k out of
// range.
func (b *TypedBatch) Column(k int) Column {
	if k < 0 || k >= b.fields+TypedFirstFieldColumn {
		panic(fmt.Sprintf("abi: column %d of a typed batch of %d fields", k, b.fields))
	}
	return b.cols[k]
}

// Field returns the column of declared field i.
func (b *TypedBatch) Field(i int) Column { return b.Column(TypedFirstFieldColumn + i) }

// Timestamp returns record i's timestamp.
func (b *TypedBatch) Timestamp(i int) int64 { return b.Column(TypedTimestampColumn).Int(i) }

// Key returns record i's key, or nil when it has none.
func (b *TypedBatch) Key(i int) []byte {
	c := b.Column(TypedKeyColumn)
	if c.Status(i) != ValuePresent {
		return nil
	}
	return c.Bytes(i)
}
