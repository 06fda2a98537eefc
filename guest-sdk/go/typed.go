package weir

import (
	"encoding/binary"
	"math"

	"github.com/weir-stream/weir/abi"
)

// The typed convention (ABI.md §14): a plugin declares the JSON fields it
// reads (Fields) and registers typed functions (TypedMap, TypedFlatMap,
// TypedFilter). The host then parses each record natively, once, and hands
// the batch over column by column; a function reads its record's fields
// through a Row, with no JSON to parse, and answers with a Patch, which
// the host applies to the original bytes. Records whose fields break the
// declaration's flags are dead-lettered by the host and never reach the
// function.

// Field is one declared field: a JSON path (dotted, ABI.md §14.1), the
// type the plugin reads it as, and what the host does with records that
// lack it or hold another type. It is a plain value.
type Field = abi.FieldDecl

// FieldFlags say what becomes of a record whose field is missing, null or
// of another type. Without flags, such records reach the function, and
// Row.Status says why the field has no value.
type FieldFlags = abi.FieldFlags

const (
	// Required dead-letters records whose field is missing or null.
	Required = abi.FieldRequired
	// Strict dead-letters records whose field holds another type.
	Strict = abi.FieldStrict
)

// IntField declares an int64 field: a JSON number with an integral value
// (9007199254740993, 1.0 and 1e3 are; 1.5 is a mismatch).
func IntField(path string, flags FieldFlags) Field {
	return Field{Path: path, Type: abi.TypeInt, Flags: flags}
}

// FloatField declares a float64 field: any JSON number.
func FloatField(path string, flags FieldFlags) Field {
	return Field{Path: path, Type: abi.TypeFloat, Flags: flags}
}

// BoolField declares a bool field: JSON true or false.
func BoolField(path string, flags FieldFlags) Field {
	return Field{Path: path, Type: abi.TypeBool, Flags: flags}
}

// StringField declares a string field: a JSON string, decoded to UTF-8.
func StringField(path string, flags FieldFlags) Field {
	return Field{Path: path, Type: abi.TypeString, Flags: flags}
}

// RawField declares a field read as its JSON source text: any value.
func RawField(path string, flags FieldFlags) Field {
	return Field{Path: path, Type: abi.TypeRaw, Flags: flags}
}

// Status says whether a Row's field has a value: Present, or why not.
type Status = abi.ValueStatus

// The statuses of a field's value.
const (
	Present  = abi.ValuePresent
	Null     = abi.ValueNull
	Missing  = abi.ValueMissing
	Mismatch = abi.ValueMismatch
)

// TypedMapFunc answers one record of a typed map: what it sets through p
// is applied to the record's value by the host; a function that sets
// nothing keeps the record unchanged. An error (or a panic) rejects the
// record, discarding the patch.
type TypedMapFunc func(r *Row, p *Patch) error

// TypedFlatMapFunc emits zero or more records for r through emit. An error
// (or a panic) rejects r and discards what was emitted for it.
type TypedFlatMapFunc func(r *Row, emit *PatchEmitter) error

// TypedFilterFunc reports whether to keep r unchanged.
type TypedFilterFunc func(r *Row) (bool, error)

// typed is the typed registrations, made in package init.
var typed typedRegs

// typedRegs is the module's typed registrations.
type typedRegs struct {
	decl        []byte // the declaration frame, once Fields was called
	mapFn       TypedMapFunc
	flatMap     TypedFlatMapFunc
	filter      TypedFilterFunc
	mapBatch    TypedMapBatchFunc
	filterBatch TypedFilterBatchFunc
}

// Fields declares the fields the typed functions read, numbered from 0 in
// the order given: field i of a Row. Call it once, from a package init
// function; an invalid declaration (a malformed path, one path twice)
// panics, which makes the module fail to initialise with the reason.
func Fields(fs ...Field) {
	if typed.decl != nil {
		panic("weir: fields already declared")
	}
	frame := abi.AppendFieldDecls(nil, fs)
	if _, err := abi.ParseFieldDecls(frame); err != nil {
		panic("weir: " + err.Error())
	}
	typed.decl = frame
}

// TypedMap registers the typed map function.
func TypedMap(fn TypedMapFunc) {
	mustRegister(fn == nil, mapRegistered(), "map")
	typed.mapFn = fn
}

// TypedFlatMap registers the typed flat_map function.
func TypedFlatMap(fn TypedFlatMapFunc) {
	mustRegister(fn == nil, flatMapRegistered(), "flat_map")
	typed.flatMap = fn
}

// TypedFilter registers the typed filter function.
func TypedFilter(fn TypedFilterFunc) {
	mustRegister(fn == nil, filterRegistered(), "filter")
	typed.filter = fn
}

func mapRegistered() bool {
	return handlers.mapFn != nil || handlers.mapTo != nil || typed.mapFn != nil || typed.mapBatch != nil
}

func flatMapRegistered() bool { return handlers.flatMap != nil || typed.flatMap != nil }

func filterRegistered() bool {
	return handlers.filter != nil || typed.filter != nil || typed.filterBatch != nil
}

// typedRegistered reports whether a typed function of any operation is
// registered.
func typedRegistered() bool {
	return typed.mapFn != nil || typed.flatMap != nil || typed.filter != nil ||
		typed.mapBatch != nil || typed.filterBatch != nil
}

// typedDecl is the module's answer to abi.ExportFields: the declaration
// frame when a typed function is registered (a declaration of no fields
// when Fields was not called), or nil, the empty region that says the
// module uses the raw convention.
func typedDecl() []byte {
	if !typedRegistered() {
		return nil
	}
	if typed.decl == nil {
		typed.decl = abi.AppendFieldDecls(nil, nil)
	}
	return typed.decl
}

// Row is one record of a typed batch, as a typed function sees it: its
// timestamp, key and declared fields, read from the batch's columns. The
// SDK reuses it for the next record; do not keep it, nor the slices it
// returns past the function's return.
type Row struct {
	p *typedProc
	i int
}

// Timestamp returns the record's event time, in milliseconds since the
// Unix epoch.
func (r *Row) Timestamp() int64 { return r.p.cols[abi.TypedTimestampColumn].Int(r.i) }

// Key returns the record's key, nil when it has none.
func (r *Row) Key() []byte {
	c := &r.p.cols[abi.TypedKeyColumn]
	if c.Status(r.i) != abi.ValuePresent {
		return nil
	}
	return c.Bytes(r.i)
}

// Status returns whether field f has a value.
func (r *Row) Status(f int) Status { return r.p.cols[abi.TypedFirstFieldColumn+f].Status(r.i) }

// Int returns int field f, and whether it is present.
func (r *Row) Int(f int) (int64, bool) {
	c := r.p.field(f, abi.TypeInt)
	return c.Int(r.i), c.Status(r.i) == abi.ValuePresent
}

// Float returns float field f, and whether it is present.
func (r *Row) Float(f int) (float64, bool) {
	c := r.p.field(f, abi.TypeFloat)
	return c.Float(r.i), c.Status(r.i) == abi.ValuePresent
}

// Bool returns bool field f, and whether it is present.
func (r *Row) Bool(f int) (bool, bool) {
	c := r.p.field(f, abi.TypeBool)
	return c.Bool(r.i), c.Status(r.i) == abi.ValuePresent
}

// Bytes returns string field f, decoded, or raw field f's JSON text, and
// whether it is present. The bytes alias the batch.
func (r *Row) Bytes(f int) ([]byte, bool) {
	c := &r.p.cols[abi.TypedFirstFieldColumn+f]
	if c.Type != abi.TypeString && c.Type != abi.TypeRaw {
		panic(typeError{Field: f, Have: c.Type})
	}
	return c.Bytes(r.i), c.Status(r.i) == abi.ValuePresent
}

// Patch is what a typed function emits for its record: operations on the
// record's value (or, after New, on an empty object), and optionally a new
// key and timestamp. Set the key, the timestamp and New before the first
// operation. The host writes the values: integers exactly, floats as the
// shortest decimal that reads back the same. A Patch is the SDK's, reused
// for the next record.
type Patch struct {
	w     *abi.TypedOutputWriter
	i     int
	begun bool
	flags abi.PatchFlags
	key   []byte
	ts    int64
}

func (p *Patch) reset(w *abi.TypedOutputWriter, i int) {
	*p = Patch{w: w, i: i}
}

func (p *Patch) header(f abi.PatchFlags) {
	if p.begun {
		panic("weir: set the key, the timestamp and New before the patch's operations")
	}
	p.flags |= f
}

// New makes the patch build a new value from {} instead of patching the
// record's.
func (p *Patch) New() { p.header(abi.PatchFlagNew) }

// SetKey sets the emitted record's key; nil for none.
func (p *Patch) SetKey(key []byte) { p.header(abi.PatchFlagKey); p.key = key }

// SetTimestamp sets the emitted record's timestamp.
func (p *Patch) SetTimestamp(ts int64) { p.header(abi.PatchFlagTimestamp); p.ts = ts }

// begin writes the entry's head, once, before its first operation.
func (p *Patch) begin() *abi.TypedOutputWriter {
	if !p.begun {
		p.w.BeginPatch(p.i, p.flags, p.key, p.ts)
		p.begun = true
	}
	return p.w
}

// emitted reports whether the patch says anything: an operation, a flag.
func (p *Patch) emitted() bool { return p.begun || p.flags != 0 }

// first reports whether the next operation is the patch's first, with
// no header: it is then written in one step (TypedOutputWriter.PatchSet).
func (p *Patch) first() bool {
	if p.begun || p.flags != 0 {
		return false
	}
	p.begun = true
	return true
}

// SetInt sets the field at path to v.
func (p *Patch) SetInt(path string, v int64) {
	if p.first() {
		binary.LittleEndian.PutUint64(p.w.PatchSet(p.i, path, abi.TypeInt, 8), uint64(v))
		return
	}
	p.begin().SetInt(path, v)
}

// SetFloat sets the field at path to v (NaN and infinities become null).
func (p *Patch) SetFloat(path string, v float64) {
	if p.first() {
		binary.LittleEndian.PutUint64(p.w.PatchSet(p.i, path, abi.TypeFloat, 8), math.Float64bits(v))
		return
	}
	p.begin().SetFloat(path, v)
}

// SetBool sets the field at path to v.
func (p *Patch) SetBool(path string, v bool) { p.begin().SetBool(path, v) }

// SetString sets the field at path to the string s.
func (p *Patch) SetString(path, s string) { p.begin().SetString(path, s) }

// SetStringBytes sets the field at path to the string held in b, which
// it copies: the way to write a string made in a reused buffer without
// allocating.
func (p *Patch) SetStringBytes(path string, b []byte) {
	if p.first() {
		v := p.w.PatchSet(p.i, path, abi.TypeString, 4+len(b))
		binary.LittleEndian.PutUint32(v, uint32(len(b)))
		copy(v[4:], b)
		return
	}
	p.begin().SetStringBytes(path, b)
}

// SetRaw sets the field at path to raw, which must be one JSON value.
func (p *Patch) SetRaw(path string, raw []byte) { p.begin().SetRaw(path, raw) }

// SetNull sets the field at path to null.
func (p *Patch) SetNull(path string) { p.begin().SetNull(path) }

// Remove removes the field at path, if it is there.
func (p *Patch) Remove(path string) { p.begin().Remove(path) }

// PatchEmitter emits a typed flat_map's records for one input.
type PatchEmitter struct {
	cur     Patch
	pending bool
}

// Keep emits the input record unchanged.
func (e *PatchEmitter) Keep() {
	e.flush()
	e.cur.w.Keep(e.cur.i)
}

// Patch starts the next record emitted for the input: the input's value
// with the operations set on the returned Patch, valid until the next
// Keep or Patch.
func (e *PatchEmitter) Patch() *Patch {
	e.flush()
	e.cur.reset(e.cur.w, e.cur.i)
	e.pending = true
	return &e.cur
}

// flush writes the pending patch, if it has not written itself.
func (e *PatchEmitter) flush() {
	if e.pending && !e.cur.begun {
		e.cur.begin()
	}
	e.pending = false
}
