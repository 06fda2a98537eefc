// Row: one record of a typed batch frame (ABI §14.3), read in place from
// the frame's columns. Nothing is parsed or copied per record: a field's
// value is a load at its column's offset.

import { Record, repoint } from "./record";
import { Status, typeName, declaredCount, declaredType } from "./fields";
import {
  MAX_BATCH_RECORDS, TYPED_HEADER_SIZE, TYPED_COLUMN_SIZE, TYPED_ALIGN,
  TYPED_TIMESTAMP_COLUMN, TYPED_KEY_COLUMN, TYPED_FIRST_FIELD_COLUMN,
  TYPE_INT, TYPE_FLOAT, TYPE_BOOL, TYPE_STRING, TYPE_RAW, VALUE_PRESENT, VALUE_MISMATCH, VALUE_NULL,
} from "./abi";

// The column table entry of column k of the frame at base.
// @ts-ignore: decorator
@inline function entry(base: usize, k: u32): usize {
  return base + TYPED_HEADER_SIZE + <usize>TYPED_COLUMN_SIZE * <usize>k;
}

/**
 * One record of a typed batch, as a typed function sees it: its
 * timestamp, key and declared fields, by field index (the value
 * declareField returned). A field of the wrong type, or an index out of
 * range, is a bug: the SDK aborts, which traps.
 *
 * Only a present field (status Present) has a value: the readers return
 * 0, false or empty for the others. The Row and the views it returns are
 * the SDK's, reused for the next record: copy (`slice()`) what must
 * outlive the call.
 */
export class Row {
  /** The record's position: in the batch, or in its group in an aggregate's add. */
  index: u32 = 0;
  /** @internal the frame */ base: usize = 0;
  /** @internal its records */ count: u32 = 0;
  /** @internal its declared fields */ fields: u32 = 0;
  /** @internal the record's index in the batch */ at: u32 = 0;
  /** @internal a reusable view per column */ views: Array<Uint8Array> = new Array<Uint8Array>();
  /** @internal for record() */ rec: Record = new Record();

  /** Event time, milliseconds since the Unix epoch. */
  get timestamp(): i64 {
    let e = entry(this.base, TYPED_TIMESTAMP_COLUMN);
    return load<i64>(this.base + <usize>load<u32>(e, 8) + (<usize>this.at << 3));
  }

  /** The record's key, as a reused view; null when it has none. */
  get key(): Uint8Array | null {
    if (this.statusOf(TYPED_KEY_COLUMN) != VALUE_PRESENT) return null;
    return this.view(TYPED_KEY_COLUMN);
  }

  /** The key decoded as UTF-8 ("" when absent). Allocates. */
  keyString(): string {
    let k = this.key;
    return k === null ? "" : String.UTF8.decodeUnsafe(k.dataStart, <usize>k.byteLength);
  }

  /** Whether field f has a value, or why not. */
  status(f: i32): Status {
    return <Status>this.statusOf(this.column(f));
  }

  /** Whether field f has a value: status Present. */
  has(f: i32): bool {
    return this.statusOf(this.column(f)) == VALUE_PRESENT;
  }

  /** Int field f (0 when not present). */
  int(f: i32): i64 {
    return load<i64>(this.values(f, TYPE_INT) + (<usize>this.at << 3));
  }

  /** Float field f (0 when not present). */
  float(f: i32): f64 {
    return load<f64>(this.values(f, TYPE_FLOAT) + (<usize>this.at << 3));
  }

  /** Bool field f (false when not present). */
  bool(f: i32): bool {
    return load<u8>(this.values(f, TYPE_BOOL) + <usize>this.at) != 0;
  }

  /**
   * String field f's decoded UTF-8 bytes, or raw field f's JSON text, as a
   * reused view, one per field (empty when not present).
   */
  bytes(f: i32): Uint8Array {
    let k = this.column(f);
    let t = load<u32>(entry(this.base, k));
    if (t != TYPE_STRING && t != TYPE_RAW) this.wrongType(f, t, "string or raw");
    return this.view(k);
  }

  /** String field f (or raw field f's JSON text), as a new string. Allocates. */
  string(f: i32): string {
    let b = this.bytes(f);
    return String.UTF8.decodeUnsafe(b.dataStart, <usize>b.byteLength);
  }

  /**
   * The record as a Record, for the state calls (ValueState.get(r.record()),
   * ...): its index, timestamp and key. It has no headers and no value (the
   * typed convention does not pass them). Reused, like the Row.
   */
  record(): Record {
    let r = this.rec;
    r.index = this.at;
    r.timestamp = this.timestamp;
    r.key = this.key;
    r.value = null;
    r.headerCount = 0;
    return r;
  }

  // column returns field f's column, checking f.
  private column(f: i32): u32 {
    if (<u32>f >= this.fields) abort("weir: field " + f.toString() + " read, of " + this.fields.toString() + " declared");
    return <u32>f + TYPED_FIRST_FIELD_COLUMN;
  }

  // statusOf returns the record's status byte in column k.
  private statusOf(k: u32): u8 {
    return load<u8>(this.base + <usize>load<u32>(entry(this.base, k), 4) + <usize>this.at);
  }

  // values returns the address of the values of field f, of type t.
  private values(f: i32, t: u32): usize {
    let e = entry(this.base, this.column(f));
    let ct = load<u32>(e);
    if (ct != t) this.wrongType(f, ct, typeName(t));
    return this.base + <usize>load<u32>(e, 8);
  }

  private wrongType(f: i32, t: u32, want: string): void {
    abort("weir: field " + f.toString() + " is " + typeName(t) + ", read as " + want);
  }

  // view points column k's view at the record's bytes in it.
  private view(k: u32): Uint8Array {
    let e = entry(this.base, k);
    let offs = this.base + <usize>load<u32>(e, 8) + (<usize>this.at << 2);
    let lo = load<u32>(offs);
    let v = unchecked(this.views[k]);
    repoint(v, this.base + <usize>load<u32>(e, 12) + <usize>lo, <i32>(load<u32>(offs, 4) - lo));
    return v;
  }
}

/** @internal points r at the typed batch frame at base (checked by readTypedBatch) */
export function rowAt(r: Row, batchIndex: u32, index: u32): void {
  r.at = batchIndex;
  r.index = index;
}

function badTyped(what: string): void {
  abort("weir: malformed typed batch frame: " + what);
}

function badColumn(k: u32, what: string): void {
  badTyped("column " + k.toString() + ": " + what);
}

// checkRegion checks that size bytes at off lie in a frame of len bytes,
// aligned as the host writes them.
function checkRegion(off: u32, size: u64, len: u32, k: u32): void {
  if (off % TYPED_ALIGN != 0 || off < <u32>TYPED_HEADER_SIZE || <u64>off + size > <u64>len) {
    badColumn(k, "a region outside the frame");
  }
}

// checkColumn checks column k of the frame at base, of n records.
function checkColumn(base: usize, len: u32, n: u32, k: u32): void {
  let e = entry(base, k);
  let t = load<u32>(e);
  let want = k == TYPED_TIMESTAMP_COLUMN ? TYPE_INT : k == TYPED_KEY_COLUMN ? TYPE_STRING : declaredType(<i32>(k - TYPED_FIRST_FIELD_COLUMN));
  if (t != want) badColumn(k, typeName(t) + ", not " + typeName(want));
  if (k != TYPED_TIMESTAMP_COLUMN) checkStatuses(base, len, n, load<u32>(e, 4), k == TYPED_KEY_COLUMN ? VALUE_NULL : VALUE_MISMATCH, k);
  let values = load<u32>(e, 8);
  if (t == TYPE_STRING || t == TYPE_RAW) {
    checkOffsets(base, len, n, values, load<u32>(e, 12), k);
  } else {
    checkRegion(values, <u64>n * (t == TYPE_BOOL ? 1 : 8), len, k);
  }
}

// checkOffsets checks the n+1 offsets at values, and the data they index.
function checkOffsets(base: usize, len: u32, n: u32, values: u32, data: u32, k: u32): void {
  checkRegion(values, (<u64>n + 1) << 2, len, k);
  let prev: u32 = 0;
  for (let i: u32 = 0; i <= n; i++) {
    let o = load<u32>(base + <usize>values + (<usize>i << 2));
    if (o < prev || (i == 0 && o != 0)) badColumn(k, "offsets out of order");
    prev = o;
  }
  checkRegion(data, <u64>prev, len, k);
}

function checkStatuses(base: usize, len: u32, n: u32, off: u32, max: u8, k: u32): void {
  checkRegion(off, <u64>n, len, k);
  for (let i: u32 = 0; i < n; i++) {
    if (load<u8>(base + <usize>off + <usize>i) > max) badColumn(k, "a status out of range");
  }
}

/**
 * @internal checks the typed batch frame of len bytes at base (the host's
 * bug if malformed: the SDK aborts) and points r at it; returns its record
 * count
 */
export function readTypedBatch(r: Row, base: usize, len: u32): u32 {
  if (len < <u32>TYPED_HEADER_SIZE) badTyped("truncated");
  let n = load<u32>(base);
  let f = load<u32>(base, 4);
  if (n > MAX_BATCH_RECORDS) badTyped("too many records");
  if (f != <u32>declaredCount()) badTyped(f.toString() + " fields, " + declaredCount().toString() + " declared");
  let cols = f + TYPED_FIRST_FIELD_COLUMN;
  if (<u64>TYPED_HEADER_SIZE + <u64>TYPED_COLUMN_SIZE * <u64>cols > <u64>len) badTyped("truncated column table");
  for (let k: u32 = 0; k < cols; k++) checkColumn(base, len, n, k);
  r.base = base;
  r.count = n;
  r.fields = f;
  while (<u32>r.views.length < cols) r.views.push(new Uint8Array(0));
  return n;
}
