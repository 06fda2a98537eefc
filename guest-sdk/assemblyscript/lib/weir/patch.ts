// Patch and PatchEmitter: how typed map and flat_map functions answer
// (ABI §14.4). A patch is written straight into the typed output frame;
// the host applies its operations to the record's original bytes.

import { Writer } from "./writer";
import { frame, fail, writeKeep, countEntry } from "./core";
import {
  ABSENT, ENTRY_PATCH, MAX_PATCH_OPS, PATCH_FLAG_NEW, PATCH_FLAG_KEY, PATCH_FLAG_TIMESTAMP,
  PATCH_OP_SET, PATCH_OP_REMOVE, TYPE_NULL, TYPE_INT, TYPE_FLOAT, TYPE_BOOL, TYPE_STRING, TYPE_RAW,
} from "./abi";

// @ts-ignore: decorator
@inline const OPEN: u8 = 0; // no entry written: the key, timestamp and newValue may be set
// @ts-ignore: decorator
@inline const OPS: u8 = 1; // the entry is written, taking operations
// @ts-ignore: decorator
@inline const DONE: u8 = 2; // its record was emitted

const TOO_MANY_OPS = "weir: a patch of more than " + MAX_PATCH_OPS.toString() + " operations";

/**
 * Patch is what a typed map (or one record of a typed flat_map) emits for
 * its record: operations applied in order to the record's value (or, after
 * newValue(), to an empty object), and optionally a new key and timestamp.
 * A map function that sets nothing keeps the record unchanged.
 *
 * Paths are field paths as declared (ABI §14.1: `user.address.city`,
 * `a\.b` for the member "a.b"); the empty path is the whole value. A set
 * replaces the member, keeping its place, or appends it, creating the
 * objects on the way; a remove removes every occurrence, and is no error
 * when the member is not there. The host writes the values: integers
 * exactly, floats as the shortest decimal that reads back the same (NaN
 * and infinities as null), strings quoted.
 *
 * Set the key, timestamp and newValue() before the first operation; after
 * it they fail the record. The Patch is the SDK's, reused: valid only
 * during the call it was given to (for PatchEmitter.patch(), until the
 * next PatchEmitter call).
 */
export class Patch {
  /** @internal the input record's index */ input: u32 = 0;
  /** @internal */ state: u8 = DONE;
  /** @internal */ flags: u8 = 0;
  /** @internal */ keyBuf: Writer = new Writer();
  /** @internal */ keyNone: bool = false;
  /** @internal */ ts: i64 = 0;
  /** @internal the offset of the entry's op count in the frame */ opsPos: i32 = 0;

  /** Makes the patch build a new value from `{}` instead of patching the record's. */
  newValue(): void {
    this.header(PATCH_FLAG_NEW, "newValue");
  }

  /** Sets the emitted record's key (copied); null for none. */
  setKey(key: Uint8Array | null): void {
    if (!this.header(PATCH_FLAG_KEY, "setKey")) return;
    this.keyBuf.reset();
    this.keyBuf.bytes(key);
    this.keyNone = key === null;
  }

  /** Sets the emitted record's key to the UTF-8 bytes of key. */
  setKeyString(key: string): void {
    if (!this.header(PATCH_FLAG_KEY, "setKeyString")) return;
    this.keyBuf.reset();
    this.keyBuf.string(key);
    this.keyNone = false;
  }

  /** Sets the emitted record's event time, in milliseconds since the Unix epoch. */
  setTimestamp(ms: i64): void {
    if (this.header(PATCH_FLAG_TIMESTAMP, "setTimestamp")) this.ts = ms;
  }

  /** Sets the field at path to null. */
  setNull(path: string): void {
    this.set(path, TYPE_NULL);
  }

  /** Sets the field at path to the integer v. */
  setInt(path: string, v: i64): void {
    this.set(path, TYPE_INT);
    frame.i64(v);
  }

  /** Sets the field at path to the number v (NaN and infinities become null). */
  setFloat(path: string, v: f64): void {
    this.set(path, TYPE_FLOAT);
    frame.f64(v);
  }

  /** Sets the field at path to true or false. */
  setBool(path: string, v: bool): void {
    this.set(path, TYPE_BOOL);
    frame.byte(v ? 1 : 0);
  }

  /** Sets the field at path to the string s. */
  setString(path: string, s: string): void {
    this.set(path, TYPE_STRING);
    let pos = frame.len;
    frame.u32(0);
    frame.string(s);
    frame.setU32At(pos, <u32>(frame.len - pos - 4));
  }

  /**
   * Sets the field at path to the string of UTF-8 bytes b (such as Row.bytes
   * of a string field; invalid UTF-8 becomes U+FFFD), or of its first n bytes
   * when n is given: the way to write from a reused buffer without making a
   * view of it per record.
   */
  setStringBytes(path: string, b: Uint8Array, n: i32 = -1): void {
    this.set(path, TYPE_STRING);
    if (n < 0 || n > b.byteLength) n = b.byteLength;
    frame.u32(<u32>n);
    frame.raw(b.dataStart, n);
  }

  /**
   * Sets the field at path to json, the text of one JSON value, written as
   * it is (such as Row.bytes of a raw field). Text that is not one JSON
   * value is a bug the host handles as a trap.
   */
  setRaw(path: string, json: Uint8Array): void {
    this.set(path, TYPE_RAW);
    frame.lengthPrefixed(json);
  }

  /** setRaw with the JSON text as a string, such as `"[1,2]"`. */
  setRawString(path: string, json: string): void {
    this.set(path, TYPE_RAW);
    let pos = frame.len;
    frame.u32(0);
    frame.string(json);
    frame.setU32At(pos, <u32>(frame.len - pos - 4));
  }

  /** Removes the field at path, every occurrence, if it is there. The path is not empty. */
  remove(path: string): void {
    if (path.length == 0) fail("weir: Patch.remove of the empty path (remove a field, or set the whole value)");
    this.op(PATCH_OP_REMOVE, path);
  }

  // header sets flag f, before the operations.
  private header(f: u8, what: string): bool {
    if (this.state == OPEN) {
      this.flags |= f;
      return true;
    }
    fail("weir: Patch." + what + (this.state == OPS ? " called after the patch's operations" : " called after its record was emitted"));
    return false;
  }

  private set(path: string, type: u8): void {
    this.op(PATCH_OP_SET, path);
    frame.byte(type);
  }

  // op appends the head of an operation, writing the entry first if needed.
  private op(kind: u8, path: string): void {
    if (this.state == DONE) {
      fail("weir: Patch operation after its record was emitted"); // the record's output is dropped
      return;
    }
    if (this.state == OPEN) writePatchHead(this);
    let n = load<u32>(frame.ptr + <usize>this.opsPos) + 1;
    if (n > MAX_PATCH_OPS) fail(TOO_MANY_OPS);
    frame.setU32At(this.opsPos, n);
    frame.byte(kind);
    let pos = frame.len;
    frame.u32(0);
    frame.string(path);
    frame.setU32At(pos, <u32>(frame.len - pos - 4));
  }
}

// writePatchHead writes p's entry up to its op count, which op() counts.
function writePatchHead(p: Patch): void {
  frame.byte(ENTRY_PATCH);
  frame.u32(p.input);
  frame.byte(p.flags);
  if (p.flags & PATCH_FLAG_KEY) {
    frame.u32(p.keyNone ? ABSENT : <u32>p.keyBuf.len);
    frame.raw(p.keyBuf.ptr, p.keyBuf.len);
  }
  if (p.flags & PATCH_FLAG_TIMESTAMP) frame.i64(p.ts);
  p.opsPos = frame.len;
  frame.u32(0);
  p.state = OPS;
  countEntry();
}

/** @internal readies p for input record i */
export function beginPatch(p: Patch, i: u32): void {
  p.input = i;
  p.state = OPEN;
  p.flags = 0;
  p.keyNone = false;
}

/**
 * @internal ends p, if open: a patch with a key, timestamp or newValue()
 * but no operation is written as such; one with nothing set is a keep
 */
export function endPatch(p: Patch): void {
  if (p.state == OPEN) {
    if (p.flags != 0) writePatchHead(p);
    else writeKeep(p.input);
  }
  p.state = DONE;
}

/**
 * PatchEmitter receives the records a typed flat_map function emits for
 * one input, in order: the input unchanged (keep), or patched (patch).
 * It is the SDK's, reused: valid only during the call it was given to.
 */
export class PatchEmitter {
  /** @internal */ cur: Patch = new Patch();
  /** @internal */ input: u32 = 0;

  /** Emits the input record unchanged. */
  keep(): void {
    this.flush();
    writeKeep(this.input);
  }

  /**
   * Starts the next record: the input patched by what is set on the
   * returned Patch, emitted at the next PatchEmitter call or when the
   * function returns (unchanged if nothing is set).
   */
  patch(): Patch {
    this.flush();
    beginPatch(this.cur, this.input);
    return this.cur;
  }

  /** @internal ends the pending patch, if any */
  flush(): void {
    endPatch(this.cur);
  }
}

/** @internal readies e for input record i */
export function beginEmitter(e: PatchEmitter, i: u32): void {
  e.input = i;
  e.cur.state = DONE;
}
