package abi

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The typed-field calling convention (ABI.md §14). A module that exports
// ExportFields declares the JSON fields it reads and their types; the host
// extracts them from each record and passes the batch column by column
// (typed_batch.go), and the guest answers with keep, error or patch
// entries (typed_output.go). The raw convention of batch.go and output.go
// is unchanged; a module chooses the typed one by exporting ExportFields.

// The exports of the typed convention. ExportFields is optional and its
// presence selects the convention: the host then calls the typed batch
// export of the operator's kind instead of the raw one (which the module
// may still export, for hosts that predate the typed convention, which do
// not know these names and so refuse a module that lacks the raw export).
const (
	// ExportFields returns the field declaration: () -> (u64), the result
	// packing a declaration frame (typed_decl.go), or the empty region,
	// which leaves the module a raw one (an SDK that exports every entry
	// point answers so when the plugin registered no typed function). The
	// host calls it once, at load, after ExportInit and ExportOps.
	ExportFields = "weir_fields"
	// ExportTypedMap, ExportTypedFlatMap and ExportTypedFilter each take
	// one typed batch frame, (ptr u32, len u32) -> (u64), the result
	// packing a typed output frame.
	ExportTypedMap     = "weir_typed_map"
	ExportTypedFlatMap = "weir_typed_flat_map"
	ExportTypedFilter  = "weir_typed_filter"
	// ExportTypedAggAdd folds typed records into accumulators: (ptr u32,
	// len u32) -> (u64), taking a typed add frame and returning an add
	// output frame (aggregate.go), as ExportAggAdd does.
	ExportTypedAggAdd = "weir_typed_agg_add"
)

// TypedExport returns the name of the typed export implementing o, or ""
// when o is not an operation.
func (o Op) TypedExport() string {
	switch o {
	case OpMap:
		return ExportTypedMap
	case OpFlatMap:
		return ExportTypedFlatMap
	case OpFilter:
		return ExportTypedFilter
	case OpAggregate:
		return ExportTypedAggAdd
	}
	return ""
}

// FieldType is the type of a declared field, of a typed batch column, or
// of a patch value. It is a plain value.
type FieldType uint8

// The field types. TypeNull is only a patch value's type: a declaration or
// a column with it is malformed.
const (
	TypeNull   FieldType = 0 // JSON null (patch values only)
	TypeInt    FieldType = 1 // i64: a JSON number with an integral value within int64
	TypeFloat  FieldType = 2 // f64: any JSON number, the nearest binary64
	TypeBool   FieldType = 3 // u8 0 or 1: JSON true or false
	TypeString FieldType = 4 // bytes: a JSON string's decoded UTF-8 content
	TypeRaw    FieldType = 5 // bytes: any JSON value's exact source text

	typeLast = TypeRaw
)

// String returns the type's name as ABI.md spells it, such as "int".
func (t FieldType) String() string {
	switch t {
	case TypeNull:
		return "null"
	case TypeInt:
		return "int"
	case TypeFloat:
		return "float"
	case TypeBool:
		return "bool"
	case TypeString:
		return "string"
	case TypeRaw:
		return "raw"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Width returns the size in bytes of one value of a fixed-width column of
// type t (8 for int and float, 1 for bool), or 0 for the variable-length
// types (string, raw) and for types that are not column types.
func (t FieldType) Width() int {
	switch t {
	case TypeInt, TypeFloat:
		return 8
	case TypeBool:
		return 1
	}
	return 0
}

// columnType reports whether t may be the type of a declared field.
func (t FieldType) columnType() bool { return t >= TypeInt && t <= typeLast }

// FieldFlags are a declared field's policy for records that lack it or
// hold another type. The zero value passes such records to the guest with
// the field's status saying why it has no value. It is a plain value.
type FieldFlags uint8

const (
	// FieldRequired dead-letters a record whose field is missing or null,
	// instead of passing it with status ValueMissing or ValueNull.
	FieldRequired FieldFlags = 1 << 0
	// FieldStrict dead-letters a record whose field holds another type,
	// instead of passing it with status ValueMismatch.
	FieldStrict FieldFlags = 1 << 1

	fieldFlagsKnown = FieldRequired | FieldStrict
)

// ValueStatus is the status byte of one value in a typed batch column.
// It is a plain value.
type ValueStatus uint8

// The value statuses. Only ValuePresent has a value; the others have a
// zero fixed-width value or an empty variable-length one.
const (
	ValuePresent  ValueStatus = 0 // the value is in the column
	ValueNull     ValueStatus = 1 // the field is JSON null (for keys: no key)
	ValueMissing  ValueStatus = 2 // the path leads nowhere in the record
	ValueMismatch ValueStatus = 3 // the field holds a value of another type

	statusLast = ValueMismatch
)

// String returns the status's name, such as "missing".
func (s ValueStatus) String() string {
	switch s {
	case ValuePresent:
		return "present"
	case ValueNull:
		return "null"
	case ValueMissing:
		return "missing"
	case ValueMismatch:
		return "mismatch"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Limits of the typed convention.
const (
	// TypedVersion is the version of the declaration frame and of the
	// typed frames it selects.
	TypedVersion = 1
	// MaxTypedFields is the most fields a declaration may hold.
	MaxTypedFields = 1024
	// MaxFieldPath is the longest field path, in bytes as written
	// (escapes included).
	MaxFieldPath = 1024
	// MaxPatchOps is the most operations one patch entry may hold.
	MaxPatchOps = 1 << 16
	// TypedAlign is the alignment, from the start of a typed batch frame,
	// of each of its column regions.
	TypedAlign = 8
)

// Field paths (ABI.md §14.1). A path names a member of nested JSON
// objects: its segments, separated by PathSeparator, are member names from
// the outside in. Within a segment, PathEscape followed by PathSeparator
// or PathEscape stands for that byte; PathEscape followed by anything else
// is malformed. Segments are not empty, and a path is valid UTF-8 of at
// most MaxFieldPath bytes. "user.address.city" is the member "city" of the
// member "address" of the member "user"; `a\.b` is the one member "a.b".
// A segment matches a member whose decoded name equals it byte for byte.
// In a patch, the empty path stands for the whole value.
const (
	PathSeparator = '.'
	PathEscape    = '\\'
)

// ErrPath is wrapped by the errors of malformed paths.
var ErrPath = errors.New("malformed field path")

func pathError(path []byte, what string) error {
	return fmt.Errorf("%w %q: %s", ErrPath, path, what)
}

// CheckPath reports whether path is a valid, non-empty field path, with
// an error wrapping ErrPath saying why not.
func CheckPath(path []byte) error {
	if len(path) == 0 {
		return pathError(path, "empty")
	}
	if len(path) > MaxFieldPath {
		return pathError(path[:32], fmt.Sprintf("%d bytes, over the limit %d", len(path), MaxFieldPath))
	}
	if !utf8.Valid(path) {
		return pathError(path, "not UTF-8")
	}
	for i := 0; ; {
		end, _, err := nextSegment(path, i)
		if err != nil {
			return err
		}
		if end == len(path) {
			return nil
		}
		i = end + 1
	}
}

// nextSegment scans the segment of path that starts at i, returning the
// offset of the separator that ends it (or len(path)) and whether it holds
// escapes.
func nextSegment(path []byte, i int) (end int, escaped bool, err error) {
	start := i
	for ; i < len(path); i++ {
		switch path[i] {
		case PathSeparator:
			if i == start {
				return i, escaped, pathError(path, "empty segment at byte "+strconv.Itoa(i))
			}
			return i, escaped, nil
		case PathEscape:
			if i+1 == len(path) || path[i+1] != PathSeparator && path[i+1] != PathEscape {
				return i, escaped, pathError(path, "bad escape at byte "+strconv.Itoa(i))
			}
			escaped = true
			i++
		}
	}
	if i == start {
		return i, escaped, pathError(path, "empty segment at the end")
	}
	return i, escaped, nil
}

// AppendPathSegments appends the segments of path, unescaped, to segs.
// The segments alias path when they hold no escapes; the unescaped ones
// are appended to buf, which is returned grown (so a segment may alias the
// buf passed in or the one returned; keep both until done with segs). It
// does not allocate when segs and buf have room.
func AppendPathSegments(segs [][]byte, buf, path []byte) ([][]byte, []byte, error) {
	if err := CheckPath(path); err != nil {
		return segs, buf, err
	}
	for i := 0; ; {
		end, escaped, _ := nextSegment(path, i)
		seg := path[i:end:end]
		if escaped {
			start := len(buf)
			buf = appendUnescaped(buf, seg)
			seg = buf[start:len(buf):len(buf)]
		}
		segs = append(segs, seg)
		if end == len(path) {
			return segs, buf, nil
		}
		i = end + 1
	}
}

func appendUnescaped(dst, seg []byte) []byte {
	for i := 0; i < len(seg); i++ {
		if seg[i] == PathEscape {
			i++
		}
		dst = append(dst, seg[i])
	}
	return dst
}

// SplitPath returns the segments of path, unescaped.
func SplitPath(path string) ([]string, error) {
	segs, _, err := AppendPathSegments(nil, nil, []byte(path))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = string(s)
	}
	return out, nil
}

// AppendPath appends the path of the segments segs, escaping each
// separator and escape byte within a segment. It does not check that the
// result is a valid path (segments must be non-empty UTF-8).
func AppendPath(dst []byte, segs ...string) []byte {
	for i, s := range segs {
		if i > 0 {
			dst = append(dst, PathSeparator)
		}
		for j := 0; j < len(s); j++ {
			if s[j] == PathSeparator || s[j] == PathEscape {
				dst = append(dst, PathEscape)
			}
			dst = append(dst, s[j])
		}
	}
	return dst
}
