// Keyed state (ABI §6), with the slot naming convention every weir SDK
// shares (package abi's AppendStateKey; the kind bytes and sizes below are
// generated from it into abi.ts), so that state written by a plugin in one
// language is read by its rewrite in another:
//
//   ValueState n:         'v', then the UTF-8 bytes of n
//   MapState n, entry k:  'm', len(n) as an unsigned LEB128 varint, n, k
//   ListState n:          'l', len(n) as a varint, n; that key holds the
//                         length (8 bytes), element i is the same key
//                         followed by i as 8 bytes big-endian
//
// Numbers are stored as 8 bytes little-endian: IEEE-754 binary64 for
// floats, two's complement for integers.
//
// State calls are possible only while a record is processed (map,
// flat_map, filter functions), never in init or in an aggregate. A call
// the host refuses fails the record (see fail()), with a message naming
// the call and the state, and returns as if there were no value.

import { Record } from "./record";
import { Writer } from "./writer";
import { fail } from "./core";
import { hostStateGet, hostStatePut, hostStateDelete, statusText, STATUS_NOT_FOUND, STATUS_TOO_LARGE } from "./host";
import {
  STATE_KIND_VALUE, STATE_KIND_MAP, STATE_KIND_LIST, STATE_LIST_INDEX_SIZE, STATE_NUMBER_SIZE,
  IMPORT_STATE_GET, IMPORT_STATE_PUT, IMPORT_STATE_DELETE,
} from "./abi";

export const VALUE_STATE_KIND: u8 = STATE_KIND_VALUE; // 'v'
export const MAP_STATE_KIND: u8 = STATE_KIND_MAP; // 'm'
export const LIST_STATE_KIND: u8 = STATE_KIND_LIST; // 'l'

/**
 * Appends to w the key of a state slot, the shared convention (Go:
 * AppendStateKey): for VALUE_STATE_KIND the kind byte and name; for the
 * others the kind byte, the name's UTF-8 length as an unsigned LEB128
 * varint, the name, and suffix (a map entry's key, or a list's element
 * index as 8 bytes big-endian; null for a list's length).
 */
export function appendStateKey(w: Writer, kind: u8, name: string, suffix: Uint8Array | null): void {
  w.byte(kind);
  if (kind == VALUE_STATE_KIND) {
    w.string(name);
    return;
  }
  let n = <u32>String.UTF8.byteLength(name);
  do {
    let b = n & 0x7f;
    n >>= 7;
    w.byte(n != 0 ? b | 0x80 : b);
  } while (n != 0);
  w.string(name);
  w.bytes(suffix);
}

// Scratch shared by all state calls (the host calls the module from one
// thread): key is where keys are built, val where state_get copies values.
const keyBuf = new Writer(256);
let val = new ArrayBuffer(256);
const num = new Writer(STATE_NUMBER_SIZE);

const GET_TRIES = 4;

function stateError(call: string, name: string, status: i32): void {
  fail("weir: " + call + " on state \"" + name + "\": " + statusText(status));
}

// getRaw reads the slot keyBuf names into val; returns the length, or -1
// when absent or on error (having failed the record).
function getRaw(r: Record, name: string): i32 {
  for (let t = 0; t < GET_TRIES; t++) {
    let n = hostStateGet(r.index, keyBuf.ptr, <u32>keyBuf.len, changetype<usize>(val), <u32>val.byteLength);
    if (n == STATUS_NOT_FOUND) return -1;
    if (n < 0) {
      stateError(IMPORT_STATE_GET, name, n);
      return -1;
    }
    if (n <= val.byteLength) return n;
    val = new ArrayBuffer(n); // grow and ask again
  }
  stateError(IMPORT_STATE_GET, name, STATUS_TOO_LARGE);
  return -1;
}

function getBytes(r: Record, name: string): Uint8Array | null {
  let n = getRaw(r, name);
  return n < 0 ? null : Uint8Array.wrap(val, 0, n);
}

// getNum reads an 8-byte number into the low bytes of val; false when absent.
function getNum(r: Record, name: string, type: string): bool {
  let n = getRaw(r, name);
  if (n < 0) return false;
  if (n != STATE_NUMBER_SIZE) {
    fail("weir: state \"" + name + "\" holds " + n.toString() + " bytes, not an 8-byte " + type);
    return false;
  }
  return true;
}

function putRaw(r: Record, name: string, ptr: usize, len: i32): void {
  let s = hostStatePut(r.index, keyBuf.ptr, <u32>keyBuf.len, ptr, <u32>len);
  if (s < 0) stateError(IMPORT_STATE_PUT, name, s);
}

function putBytes(r: Record, name: string, v: Uint8Array): void {
  putRaw(r, name, v.dataStart, v.byteLength);
}

function putU64(r: Record, name: string, u: u64): void {
  store<u64>(num.ptr, u);
  putRaw(r, name, num.ptr, STATE_NUMBER_SIZE);
}

function deleteRaw(r: Record, name: string): void {
  let s = hostStateDelete(r.index, keyBuf.ptr, <u32>keyBuf.len);
  if (s < 0) stateError(IMPORT_STATE_DELETE, name, s);
}

/**
 * One named value of state per record key. Create ValueStates once, in
 * module-level constants. Values returned by get are views valid until the
 * next state call.
 */
export class ValueState {
  readonly name: string;
  private key: Writer;

  constructor(name: string) {
    this.name = name;
    this.key = new Writer();
    appendStateKey(this.key, VALUE_STATE_KIND, name, null);
  }

  private useKey(): void {
    keyBuf.reset();
    keyBuf.raw(this.key.ptr, this.key.len);
  }

  /** The value stored for r's key, or null when there is none. */
  get(r: Record): Uint8Array | null {
    this.useKey();
    return getBytes(r, this.name);
  }

  /** Whether a value is stored for r's key. */
  has(r: Record): bool {
    this.useKey();
    return getRaw(r, this.name) >= 0;
  }

  /** Stores v for r's key. */
  put(r: Record, v: Uint8Array): void {
    this.useKey();
    putBytes(r, this.name, v);
  }

  /** Stores the UTF-8 bytes of s for r's key. */
  putString(r: Record, s: string): void {
    this.put(r, Uint8Array.wrap(String.UTF8.encode(s)));
  }

  /** Removes the value stored for r's key, if any. */
  delete(r: Record): void {
    this.useKey();
    deleteRaw(r, this.name);
  }

  /** The int64 stored by putInt64 for r's key, or dflt when there is none. */
  getInt64(r: Record, dflt: i64 = 0): i64 {
    this.useKey();
    return getNum(r, this.name, "int64") ? load<i64>(changetype<usize>(val)) : dflt;
  }

  /** Stores v for r's key as 8 bytes little-endian. */
  putInt64(r: Record, v: i64): void {
    this.useKey();
    putU64(r, this.name, <u64>v);
  }

  /** The float64 stored by putFloat64 for r's key, or dflt when there is none. */
  getFloat64(r: Record, dflt: f64 = 0): f64 {
    this.useKey();
    return getNum(r, this.name, "float64") ? load<f64>(changetype<usize>(val)) : dflt;
  }

  /** Stores v for r's key as the 8 little-endian bytes of its IEEE-754 bits. */
  putFloat64(r: Record, v: f64): void {
    this.useKey();
    putU64(r, this.name, reinterpret<u64>(v));
  }
}

/**
 * A named map of state per record key: for each record key, entries under
 * their own entry keys (any bytes). Create MapStates once, in module-level
 * constants.
 */
export class MapState {
  readonly name: string;

  constructor(name: string) {
    this.name = name;
  }

  private useKey(entry: Uint8Array): void {
    keyBuf.reset();
    appendStateKey(keyBuf, MAP_STATE_KIND, this.name, entry);
  }

  /** The entry under key for r's key, or null. */
  get(r: Record, key: Uint8Array): Uint8Array | null {
    this.useKey(key);
    return getBytes(r, this.name);
  }

  /** Whether there is an entry under key for r's key. */
  has(r: Record, key: Uint8Array): bool {
    this.useKey(key);
    return getRaw(r, this.name) >= 0;
  }

  /** Stores v as the entry under key for r's key. */
  put(r: Record, key: Uint8Array, v: Uint8Array): void {
    this.useKey(key);
    putBytes(r, this.name, v);
  }

  /** Removes the entry under key for r's key, if any. */
  delete(r: Record, key: Uint8Array): void {
    this.useKey(key);
    deleteRaw(r, this.name);
  }

  /** The int64 stored under key by putInt64, or dflt. */
  getInt64(r: Record, key: Uint8Array, dflt: i64 = 0): i64 {
    this.useKey(key);
    return getNum(r, this.name, "int64") ? load<i64>(changetype<usize>(val)) : dflt;
  }

  /** Stores v under key as 8 bytes little-endian. */
  putInt64(r: Record, key: Uint8Array, v: i64): void {
    this.useKey(key);
    putU64(r, this.name, <u64>v);
  }

  /** The float64 stored under key by putFloat64, or dflt. */
  getFloat64(r: Record, key: Uint8Array, dflt: f64 = 0): f64 {
    this.useKey(key);
    return getNum(r, this.name, "float64") ? load<f64>(changetype<usize>(val)) : dflt;
  }

  /** Stores v under key as the 8 little-endian bytes of its IEEE-754 bits. */
  putFloat64(r: Record, key: Uint8Array, v: f64): void {
    this.useKey(key);
    putU64(r, this.name, reinterpret<u64>(v));
  }
}

/**
 * A named list of values per record key, stored one slot per element, so
 * that add costs two state writes however long the list is. Create
 * ListStates once, in module-level constants.
 */
export class ListState {
  readonly name: string;
  private idx: Uint8Array = new Uint8Array(STATE_LIST_INDEX_SIZE);

  constructor(name: string) {
    this.name = name;
  }

  // useKey names element i, or the length for i < 0.
  private useKey(i: i64): void {
    keyBuf.reset();
    if (i < 0) {
      appendStateKey(keyBuf, LIST_STATE_KIND, this.name, null);
    } else {
      store<u64>(this.idx.dataStart, bswap<u64>(<u64>i));
      appendStateKey(keyBuf, LIST_STATE_KIND, this.name, this.idx);
    }
  }

  /** The number of elements of r's key's list. */
  len(r: Record): i64 {
    this.useKey(-1);
    return getNum(r, this.name, "int64") ? load<i64>(changetype<usize>(val)) : 0;
  }

  /** Appends v to r's key's list. */
  add(r: Record, v: Uint8Array): void {
    let n = this.len(r);
    this.useKey(n);
    putBytes(r, this.name, v);
    this.useKey(-1);
    putU64(r, this.name, <u64>(n + 1));
  }

  /** Element i of r's key's list, or null. */
  get(r: Record, i: i64): Uint8Array | null {
    if (i < 0) return null;
    this.useKey(i);
    return getBytes(r, this.name);
  }

  /** Empties r's key's list. */
  clear(r: Record): void {
    let n = this.len(r);
    for (let i: i64 = 0; i < n; i++) {
      this.useKey(i);
      deleteRaw(r, this.name);
    }
    this.useKey(-1);
    deleteRaw(r, this.name);
  }
}
