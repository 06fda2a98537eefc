// Field declarations of the typed convention (ABI §14.2): the JSON fields
// a plugin's typed functions read, which the host extracts natively and
// passes column by column (see row.ts), and what the host does with
// records that lack them.

import { Writer } from "./writer";
import {
  TYPED_VERSION, MAX_TYPED_FIELDS,
  TYPE_INT, TYPE_FLOAT, TYPE_BOOL, TYPE_STRING, TYPE_RAW,
  FIELD_REQUIRED, FIELD_STRICT,
  VALUE_PRESENT, VALUE_NULL, VALUE_MISSING, VALUE_MISMATCH,
} from "./abi";

/** The type a field is read as (ABI §14.2). */
export enum FieldType {
  /** i64: a JSON number with an integral value within int64 (`1e3`, `2.0`; not `1.5`). */
  Int = TYPE_INT,
  /** f64: any JSON number, the nearest binary64. */
  Float = TYPE_FLOAT,
  /** JSON true or false. */
  Bool = TYPE_BOOL,
  /** A JSON string, decoded to UTF-8 by the host. */
  String = TYPE_STRING,
  /** Any JSON value but null: its exact source text. */
  Raw = TYPE_RAW,
}

/**
 * What the host does with a record whose field has no value of the
 * declared type. Without flags the record reaches the function, and
 * Row.status says why the field has no value. Combine with `|`.
 */
export enum FieldFlags {
  None = 0,
  /** Dead-letter records whose field is missing or null. */
  Required = FIELD_REQUIRED,
  /** Dead-letter records whose field holds another type. */
  Strict = FIELD_STRICT,
}

/** Whether a record's field has a value (ABI §14.3). */
export enum Status {
  /** The value is there. */
  Present = VALUE_PRESENT,
  /** The field is JSON null (for a key: the record has none). */
  Null = VALUE_NULL,
  /** The path leads nowhere in the record. */
  Missing = VALUE_MISSING,
  /** The field holds a value of another type. */
  Mismatch = VALUE_MISMATCH,
}

/** The lower-case name of a status: "present", "null", "missing" or "mismatch". */
export function statusName(s: Status): string {
  switch (s) {
    case Status.Present: return "present";
    case Status.Null: return "null";
    case Status.Missing: return "missing";
    case Status.Mismatch: return "mismatch";
  }
  return "status " + (<i32>s).toString();
}

/** The name of a field type, such as "int". */
export function typeName(t: u32): string {
  switch (t) {
    case TYPE_INT: return "int";
    case TYPE_FLOAT: return "float";
    case TYPE_BOOL: return "bool";
    case TYPE_STRING: return "string";
    case TYPE_RAW: return "raw";
  }
  return "type " + t.toString();
}

// The declaration frame, built as fields are declared: version, count,
// then each field's type, flags and path.
const decl = new Writer(256);
// The declared fields' types, in order.
const types = new Array<u8>();
// Set once the host read the declaration: it cannot change after.
let sealed = false;

/**
 * Declares a field the typed functions read: a path (ABI §14.1: members of
 * nested objects separated by `.`; `\.` for a `.` within a name, `\\` for
 * a `\`), its type and flags. Returns its index, from 0 in declaration
 * order, which the Row readers take. Declare fields at top level or in the
 * init function (for fields that depend on the config). The host checks
 * the declaration when it loads the module, and refuses it, naming the
 * field, for a malformed path or a path declared twice.
 */
export function declareField(path: string, type: FieldType, flags: FieldFlags = FieldFlags.None): i32 {
  if (sealed) abort("weir: field \"" + path + "\" declared after the host read the declaration (declare fields at top level or in init)");
  if (<u32>type < TYPE_INT || <u32>type > TYPE_RAW) abort("weir: field \"" + path + "\": unknown type " + (<i32>type).toString());
  if (<u32>flags & ~<u32>(FIELD_REQUIRED | FIELD_STRICT)) abort("weir: field \"" + path + "\": unknown flags " + (<i32>flags).toString());
  if (<u32>types.length >= MAX_TYPED_FIELDS) abort("weir: more than " + MAX_TYPED_FIELDS.toString() + " fields declared");
  if (decl.len == 0) {
    decl.u32(TYPED_VERSION);
    decl.u32(0);
  }
  decl.byte(<u32>type);
  decl.byte(<u32>flags);
  let lenPos = decl.len;
  decl.u32(0);
  decl.string(path);
  decl.setU32At(lenPos, <u32>(decl.len - lenPos - 4));
  types.push(<u8>type);
  decl.setU32At(4, <u32>types.length);
  return types.length - 1;
}

/** Declares an int field (read with Row.int); returns its index. */
export function intField(path: string, flags: FieldFlags = FieldFlags.None): i32 {
  return declareField(path, FieldType.Int, flags);
}

/** Declares a float field (read with Row.float); returns its index. */
export function floatField(path: string, flags: FieldFlags = FieldFlags.None): i32 {
  return declareField(path, FieldType.Float, flags);
}

/** Declares a bool field (read with Row.bool); returns its index. */
export function boolField(path: string, flags: FieldFlags = FieldFlags.None): i32 {
  return declareField(path, FieldType.Bool, flags);
}

/** Declares a string field (read with Row.string or Row.bytes); returns its index. */
export function stringField(path: string, flags: FieldFlags = FieldFlags.None): i32 {
  return declareField(path, FieldType.String, flags);
}

/** Declares a raw field, read as its JSON text (Row.bytes); returns its index. */
export function rawField(path: string, flags: FieldFlags = FieldFlags.None): i32 {
  return declareField(path, FieldType.Raw, flags);
}

/** @internal the number of declared fields */
export function declaredCount(): i32 {
  return types.length;
}

/** @internal the type of declared field i */
export function declaredType(i: i32): u32 {
  return <u32>unchecked(types[i]);
}

/**
 * @internal the declaration frame, packed for weir_fields (a declaration
 * of no fields when none was declared), sealing the declaration
 */
export function sealDeclaration(): Writer {
  sealed = true;
  if (decl.len == 0) {
    decl.u32(TYPED_VERSION);
    decl.u32(0);
  }
  return decl;
}
