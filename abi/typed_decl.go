package abi

import (
	"encoding/binary"
	"fmt"
)

// A declaration frame (guest to host, the result of ExportFields) is, in
// little-endian, without padding:
//
//	u32 version          TypedVersion
//	u32 field_count      at most MaxTypedFields
//	field_count × field:
//	    u8  type          TypeInt ... TypeRaw
//	    u8  flags         FieldFlags; the other bits are zero
//	    u32 path_len, path bytes (a field path, see CheckPath)
//
// Fields are numbered from 0 in frame order; field i is column 2+i of
// every typed batch frame. Two fields may not have the same path.

// FieldDecl is one declared field. It is a plain value.
type FieldDecl struct {
	Path  string
	Type  FieldType
	Flags FieldFlags
}

// DeclError reports a declaration that breaks a rule of ABI.md §14.2,
// naming the field. It is not modified after it is returned.
type DeclError struct {
	Index int    // the field's index, or -1 for the frame as a whole
	Path  string // the field's path as written, when it was read
	What  string
}

func (e *DeclError) Error() string {
	if e.Index < 0 {
		return "abi: field declaration: " + e.What
	}
	return fmt.Sprintf("abi: declared field %d (%q): %s", e.Index, e.Path, e.What)
}

// AppendFieldDecls appends the declaration frame of fields.
func AppendFieldDecls(dst []byte, fields []FieldDecl) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, TypedVersion)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(fields)))
	for _, f := range fields {
		dst = append(dst, byte(f.Type), byte(f.Flags))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.Path)))
		dst = append(dst, f.Path...)
	}
	return dst
}

// ParseFieldDecls decodes and checks a declaration frame: its version, its
// framing, each field's type, flags and path, and that no two fields have
// one path. Framing errors are *FrameError, the others *DeclError. It
// allocates the result; the host calls it once per module.
func ParseFieldDecls(frame []byte) ([]FieldDecl, error) {
	if len(frame) < 8 {
		return nil, truncated(0, "declaration version and field count")
	}
	if v := binary.LittleEndian.Uint32(frame); v != TypedVersion {
		return nil, &DeclError{Index: -1, What: fmt.Sprintf("version %d, but this host reads version %d", v, TypedVersion)}
	}
	n := binary.LittleEndian.Uint32(frame[4:])
	if n > MaxTypedFields {
		return nil, &DeclError{Index: -1, What: fmt.Sprintf("%d fields, over the limit %d", n, MaxTypedFields)}
	}
	fields := make([]FieldDecl, 0, n)
	seen := make(map[string]int, n)
	off := 8
	for i := 0; i < int(n); i++ {
		f, next, err := readFieldDecl(frame, off, i)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[f.Path]; dup {
			return nil, &DeclError{Index: i, Path: f.Path, What: fmt.Sprintf("the same path as field %d", j)}
		}
		seen[f.Path] = i
		fields = append(fields, f)
		off = next
	}
	if off != len(frame) {
		return nil, &FrameError{Offset: off, What: fmt.Sprintf("%d bytes after the last field", len(frame)-off)}
	}
	return fields, nil
}

func readFieldDecl(b []byte, off, i int) (FieldDecl, int, error) {
	if len(b)-off < 2 {
		return FieldDecl{}, off, truncated(off, fmt.Sprintf("field %d type and flags", i))
	}
	t, flags := FieldType(b[off]), FieldFlags(b[off+1])
	path, next, err := readBytes(b, off+2, fmt.Sprintf("field %d path", i))
	if err != nil {
		return FieldDecl{}, off, err
	}
	f := FieldDecl{Path: string(path), Type: t, Flags: flags}
	switch {
	case !t.columnType():
		return f, off, &DeclError{Index: i, Path: f.Path, What: fmt.Sprintf("unknown type %d", uint8(t))}
	case flags&^fieldFlagsKnown != 0:
		return f, off, &DeclError{Index: i, Path: f.Path, What: fmt.Sprintf("unknown flags %#x", uint8(flags))}
	}
	if err := CheckPath(path); err != nil {
		return f, off, &DeclError{Index: i, Path: f.Path, What: err.Error()}
	}
	return f, next, nil
}
