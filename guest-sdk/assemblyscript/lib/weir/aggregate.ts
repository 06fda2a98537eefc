// Aggregates (ABI §12): create, add, merge and result over accumulators
// the host stores as bytes, in the manner of Flink's AggregateFunction.

import { Record, decodeRecord, checkInput, badFrame, inputBuffer } from "./record";
import { Writer } from "./writer";
import { frame, pack, takeFailure, clearFailure, failed } from "./core";
import { ABSENT, AGG_OK, AGG_ERROR } from "./abi";

/**
 * Reads back, field by field, what an Aggregate's encode wrote with the
 * Writer methods i64, u64, f64, u32, byte and lengthPrefixed. A read past
 * the end returns zero and records the error, which the SDK reports: the
 * record (or merge, or result) fails with "bad accumulator: ...". The SDK
 * also reports bytes left unread after decode, unless decode calls
 * skipRest.
 */
export class AccReader {
  /** @internal */ ptr: usize = 0;
  /** @internal */ len: i32 = 0;
  /** @internal */ off: i32 = 0;
  /** The first error, or null. */
  error: string | null = null;

  /** @internal */
  reset(ptr: usize, len: i32): void {
    this.ptr = ptr;
    this.len = len;
    this.off = 0;
    this.error = null;
  }

  /** The accumulator's length in bytes. */
  get length(): i32 {
    return this.len;
  }

  /** Bytes not read yet. */
  get remaining(): i32 {
    return this.len - this.off;
  }

  private take(n: i32, what: string): usize {
    if (this.len - this.off < n) {
      if (this.error === null) {
        this.error = "weir: accumulator of " + this.len.toString() + " bytes ends inside the " + what + " at byte " + this.off.toString();
      }
      this.off = this.len;
      return 0;
    }
    let p = this.ptr + <usize>this.off;
    this.off += n;
    return p;
  }

  /** Reads a byte. */
  byte(): u8 {
    let p = this.take(1, "byte");
    return p ? load<u8>(p) : 0;
  }

  /** Reads 4 bytes little-endian. */
  u32(): u32 {
    let p = this.take(4, "4-byte number");
    return p ? load<u32>(p) : 0;
  }

  /** Reads 8 bytes little-endian. */
  u64(): u64 {
    let p = this.take(8, "8-byte number");
    return p ? load<u64>(p) : 0;
  }

  /** Reads 8 bytes little-endian, two's complement. */
  i64(): i64 {
    return <i64>this.u64();
  }

  /** Reads the 8 little-endian bytes of an IEEE-754 binary64. */
  f64(): f64 {
    let p = this.take(8, "8-byte number");
    return p ? load<f64>(p) : 0;
  }

  /** Reads a u32 length and that many bytes, as a view valid during the call (slice() to keep). */
  lengthPrefixed(): Uint8Array {
    let n = this.u32();
    if (this.error !== null || n > 0x7FFFFFFF) return new Uint8Array(0);
    let p = this.take(<i32>n, "byte string");
    if (this.error !== null) return new Uint8Array(0);
    return Uint8Array.wrap(inputBuffer(), <i32>(p - changetype<usize>(inputBuffer())), <i32>n);
  }

  /** Marks the rest of the accumulator as read. */
  skipRest(): void {
    this.off = this.len;
  }

  /** @internal the error of the decode, counting unread bytes */
  finish(): string | null {
    if (this.error === null && this.off != this.len) {
      this.error = "weir: accumulator of " + this.len.toString() + " bytes has " + (this.len - this.off).toString() + " bytes after its last field";
    }
    let e = this.error;
    return e === null ? null : "bad accumulator: " + e;
  }
}

/**
 * The answer of Aggregate.result: the group's result value, which the
 * host emits as a record's value. Write it with writer(), setValue or
 * setString, or give no value with setNull; writing nothing gives an
 * empty value.
 */
export class ResultOutput {
  /** @internal */ isNull: bool = false;

  /** The Writer to append the value to, in place in the output frame. */
  writer(): Writer {
    return frame;
  }

  /** Appends a copy of v to the value. */
  setValue(v: Uint8Array): void {
    frame.bytes(v);
  }

  /** Appends the UTF-8 bytes of s to the value. */
  setString(s: string): void {
    frame.string(s);
  }

  /** Gives the result no (a null) value. */
  setNull(): void {
    this.isNull = true;
  }
}

/** @internal The dispatch's view of a registered Aggregate, whatever its accumulator type. */
export abstract class AggregateBase {
  /** @internal */ abstract createInto(w: Writer): void;
  /** @internal */ abstract begin(d: AccReader): string | null;
  /** @internal */ abstract addRecord(r: Record): void;
  /** @internal */ abstract end(w: Writer): void;
  /** @internal */ abstract mergeInto(a: AccReader, b: AccReader, w: Writer): string | null;
  /** @internal */ abstract resultInto(d: AccReader, out: ResultOutput): string | null;
}

/**
 * An aggregate whose accumulator has type A. Extend it, implement its six
 * methods, and register an instance with registerAggregate. For each group
 * of an add call the SDK decodes the accumulator once, calls add for each
 * of the group's records in order, and encodes it once.
 *
 * To reject a record, add calls fail(message) and returns (its return
 * value is then ignored, and the accumulator stays as it was: when A is a
 * class, check the record before changing acc). merge and result may fail
 * too. The accumulator is the aggregate's state: state calls fail here.
 */
export abstract class Aggregate<A> extends AggregateBase {
  /** A fresh accumulator. Must always return the same one. */
  abstract create(): A;
  /** Folds r into acc and returns the new accumulator. */
  abstract add(acc: A, r: Record): A;
  /** The accumulator combining a and b (two partial aggregates of one group). */
  abstract merge(a: A, b: A): A;
  /** Writes the group's result value to out. */
  abstract result(acc: A, out: ResultOutput): void;
  /** Appends the bytes of acc to w. */
  abstract encode(acc: A, w: Writer): void;
  /** Reads an accumulator back from what encode wrote. */
  abstract decode(d: AccReader): A;

  private cur!: A;

  /** @internal */
  createInto(w: Writer): void {
    this.encode(this.create(), w);
  }

  /** @internal */
  begin(d: AccReader): string | null {
    let a = this.decode(d);
    let err = d.finish();
    if (err === null) this.cur = a;
    return err;
  }

  /** @internal */
  addRecord(r: Record): void {
    let a = this.add(this.cur, r);
    if (!failed()) this.cur = a;
  }

  /** @internal */
  end(w: Writer): void {
    this.encode(this.cur, w);
  }

  /** @internal */
  mergeInto(da: AccReader, db: AccReader, w: Writer): string | null {
    let a = this.decode(da);
    let err = da.finish();
    if (err !== null) return err;
    let b = this.decode(db);
    err = db.finish();
    if (err !== null) return err;
    let m = this.merge(a, b);
    if (failed()) return null;
    this.encode(m, w);
    return null;
  }

  /** @internal */
  resultInto(d: AccReader, out: ResultOutput): string | null {
    let a = this.decode(d);
    let err = d.finish();
    if (err !== null) return err;
    this.result(a, out);
    return null;
  }
}

let agg: AggregateBase | null = null;

/** @internal whether an aggregate is registered, for weir_ops */
export function hasAggregate(): bool {
  return agg !== null;
}

/** Registers the aggregate. At most once. */
export function registerAggregate<A>(a: Aggregate<A>): void {
  if (agg !== null) abort("weir: aggregate already registered");
  agg = a;
}

const NO_AGGREGATE = "plugin has no aggregate handler";
const createBuf = new Writer(64);
const rec = new Record();
const reader = new AccReader();
const reader2 = new AccReader();
const resultOut = new ResultOutput();

/** @internal weir_agg_create */
export function runAggCreate(): u64 {
  let g = agg;
  if (g === null) abort("weir: weir_agg_create: " + NO_AGGREGATE);
  createBuf.reset();
  clearFailure();
  g!.createInto(createBuf);
  let msg = takeFailure();
  if (msg !== null) abort("weir: weir_agg_create: " + msg);
  return pack(createBuf.ptr, createBuf.len);
}

// writeGroupErrors answers a group with every one of its n records
// rejected with msg, and the accumulator at accPtr unchanged.
function writeGroupErrors(n: u32, msg: string, accPtr: usize, accLen: u32): void {
  frame.u32(n);
  for (let i: u32 = 0; i < n; i++) {
    frame.u32(i);
    let pos = frame.len;
    frame.u32(0);
    frame.string(msg);
    frame.setU32At(pos, <u32>(frame.len - pos - 4));
  }
  frame.u32(accLen);
  frame.raw(accPtr, <i32>accLen);
}

/** @internal weir_agg_add */
export function runAggAdd(ptr: usize, len: u32): u64 {
  checkInput(ptr, len);
  if (len < 4) badFrame();
  let end = ptr + <usize>len;
  let groups = load<u32>(ptr);
  let p = ptr + 4;
  frame.reset();
  frame.u32(groups);
  let g = agg;
  let r = rec;
  for (let gi: u32 = 0; gi < groups; gi++) {
    if (p + 4 > end) badFrame();
    let accLen = load<u32>(p);
    let accPtr = p + 4;
    if (<u64>accPtr + <u64>accLen + 4 > <u64>end) badFrame();
    p = accPtr + <usize>accLen;
    let n = load<u32>(p);
    p += 4;
    let groupMark = frame.len;
    let err: string | null = g === null ? NO_AGGREGATE : null;
    if (err === null) {
      reader.reset(accPtr, <i32>accLen);
      clearFailure();
      err = g!.begin(reader);
      if (err === null) err = takeFailure();
    }
    if (err !== null) {
      for (let i: u32 = 0; i < n; i++) p = decodeRecord(r, p, end, i);
      writeGroupErrors(n, err, accPtr, accLen);
      continue;
    }
    let countPos = frame.len;
    frame.u32(0);
    let errors: u32 = 0;
    for (let i: u32 = 0; i < n; i++) {
      p = decodeRecord(r, p, end, i);
      g!.addRecord(r);
      let msg = takeFailure();
      if (msg !== null) {
        frame.u32(i);
        let pos = frame.len;
        frame.u32(0);
        frame.string(msg);
        frame.setU32At(pos, <u32>(frame.len - pos - 4));
        errors++;
      }
    }
    frame.setU32At(countPos, errors);
    let lenPos = frame.len;
    frame.u32(0);
    g!.end(frame);
    let msg = takeFailure();
    if (msg !== null) {
      // The records were folded, but the accumulator cannot be encoded:
      // keep it as it was and reject them all.
      frame.len = groupMark;
      writeGroupErrors(n, msg, accPtr, accLen);
      continue;
    }
    frame.setU32At(lenPos, <u32>(frame.len - lenPos - 4));
  }
  if (p != end) badFrame();
  return pack(frame.ptr, frame.len);
}

// readAcc points d at the accumulator at p and returns the address after it.
function readAcc(d: AccReader, p: usize, end: usize): usize {
  if (p + 4 > end) badFrame();
  let n = load<u32>(p);
  if (<u64>p + 4 + <u64>n > <u64>end) badFrame();
  d.reset(p + 4, <i32>n);
  return p + 4 + <usize>n;
}

function writeValueError(mark: i32, msg: string): void {
  frame.len = mark;
  frame.byte(AGG_ERROR);
  let pos = frame.len;
  frame.u32(0);
  frame.string(msg);
  frame.setU32At(pos, <u32>(frame.len - pos - 4));
}

/** @internal weir_agg_merge (merge = true) and weir_agg_result */
export function runAggValues(ptr: usize, len: u32, merge: bool): u64 {
  checkInput(ptr, len);
  if (len < 4) badFrame();
  let end = ptr + <usize>len;
  let count = load<u32>(ptr);
  let p = ptr + 4;
  frame.reset();
  frame.u32(count);
  let g = agg;
  for (let i: u32 = 0; i < count; i++) {
    p = readAcc(reader, p, end);
    if (merge) p = readAcc(reader2, p, end);
    let mark = frame.len;
    if (g === null) {
      writeValueError(mark, NO_AGGREGATE);
      continue;
    }
    frame.byte(AGG_OK);
    let pos = frame.len;
    frame.u32(0);
    clearFailure();
    resultOut.isNull = false;
    let err = merge ? g.mergeInto(reader, reader2, frame) : g.resultInto(reader, resultOut);
    if (err === null) err = takeFailure();
    if (err !== null) {
      writeValueError(mark, err);
      continue;
    }
    if (!merge && resultOut.isNull) {
      frame.len = pos + 4;
      frame.setU32At(pos, ABSENT);
    } else {
      frame.setU32At(pos, <u32>(frame.len - pos - 4));
    }
  }
  if (p != end) badFrame();
  return pack(frame.ptr, frame.len);
}
