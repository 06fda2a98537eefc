// Aggregates (ABI §12): create, add, merge and result over accumulators
// the host stores as bytes, in the manner of Flink's AggregateFunction.

import { Record, decodeRecord, checkInput, badFrame, inputBuffer, repoint } from "./record";
import { Row, readTypedBatch, rowAt } from "./row";
import { Writer } from "./writer";
import { frame, pack, fail, takeFailure, clearFailure, failed } from "./core";
import { markTyped } from "./typed";
import {
  ABSENT, AGG_OK, AGG_ERROR, AGG_CONTEXT_WINDOWED, MAX_BATCH_RECORDS, TYPED_ALIGN, EXPORT_TYPED_AGG_ADD,
} from "./abi";

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

/**
 * The context of a group whose result is due (ABI §12.5), which
 * Aggregate.resultCtx is given: what the host knows of the group and the
 * accumulator does not hold. `key` is a view of the call's input, valid
 * during the call only; the SDK reuses the context for the next result.
 */
export class AggContext {
  /** The group's key; null when it has none (distinct from empty). */
  key: Uint8Array | null = null;
  /**
   * Whether the group is a window's, [start, end) in milliseconds since
   * the Unix epoch: the bounds the window operator writes as window_start
   * and window_end. start and end are 0 when it is not.
   */
  windowed: bool = false;
  start: i64 = 0;
  end: i64 = 0;

  /** @internal the reusable view */
  keyView: Uint8Array = new Uint8Array(0);

  /** The key decoded as UTF-8 ("" when absent). Allocates. */
  keyString(): string {
    let k = this.key;
    return k === null ? "" : String.UTF8.decodeUnsafe(k.dataStart, <usize>k.byteLength);
  }

  /** @internal empties the context: no key, not windowed */
  clear(): void {
    this.key = null;
    this.windowed = false;
    this.start = 0;
    this.end = 0;
  }
}

const NO_RESULT = "the aggregate implements neither result nor resultCtx";

/** @internal The dispatch's view of a registered aggregate, whatever its accumulator type. */
export abstract class AggregateBase {
  /** @internal */ abstract createInto(w: Writer): void;
  /** @internal */ abstract begin(d: AccReader): string | null;
  /** @internal */ abstract end(w: Writer): void;
  /** @internal */ abstract mergeInto(a: AccReader, b: AccReader, w: Writer): string | null;
  /** @internal */ abstract resultInto(d: AccReader, ctx: AggContext, out: ResultOutput): string | null;
  /** @internal folds a raw record (weir_agg_add): Aggregate overrides it */
  addRecord(r: Record): void {
    fail("plugin has a typed aggregate (TypedAggregate), which takes its records from " + EXPORT_TYPED_AGG_ADD);
  }
  /** @internal folds a typed record (weir_typed_agg_add): TypedAggregate overrides it */
  addRow(r: Row): void {
    fail("plugin has no typed aggregate handler");
  }
}

/**
 * @internal What Aggregate and TypedAggregate share: everything but add,
 * which reads a Record in one and a Row in the other.
 */
export abstract class AggregateCore<A> extends AggregateBase {
  /** A fresh accumulator. Must always return the same one. */
  abstract create(): A;
  /** The accumulator combining a and b (two partial aggregates of one group). */
  abstract merge(a: A, b: A): A;
  /**
   * Writes the group's result value to out. Implement it, or resultCtx
   * for a result that depends on the group's key or window.
   */
  result(acc: A, out: ResultOutput): void {
    fail(NO_RESULT);
  }
  /**
   * Writes the group's result value to out, as result does, given the
   * group's context: its key and window (ABI §12.5). The SDK calls it for
   * every result, with an empty context (no key, not windowed) on a host
   * that predates weir_agg_result_ctx; by default it calls result.
   */
  resultCtx(acc: A, ctx: AggContext, out: ResultOutput): void {
    this.result(acc, out);
  }
  /** Appends the bytes of acc to w. */
  abstract encode(acc: A, w: Writer): void;
  /** Reads an accumulator back from what encode wrote. */
  abstract decode(d: AccReader): A;

  /** @internal the group's accumulator during an add call */
  cur!: A;

  /** @internal keeps the accumulator add returned, unless the record failed */
  fold(a: A): void {
    if (!failed()) this.cur = a;
  }

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
  resultInto(d: AccReader, ctx: AggContext, out: ResultOutput): string | null {
    let a = this.decode(d);
    let err = d.finish();
    if (err !== null) return err;
    this.resultCtx(a, ctx, out);
    return null;
  }
}

/**
 * An aggregate whose accumulator has type A. Extend it, implement its six
 * methods (create, add, merge, result, encode, decode; or resultCtx
 * instead of result, for a result given the group's key and window), and
 * register an instance with registerAggregate. For each group of an add call the SDK
 * decodes the accumulator once, calls add for each of the group's records
 * in order, and encodes it once.
 *
 * To reject a record, add calls fail(message) and returns (its return
 * value is then ignored, and the accumulator stays as it was: when A is a
 * class, check the record before changing acc). merge and result may fail
 * too. The accumulator is the aggregate's state: state calls fail here.
 */
export abstract class Aggregate<A> extends AggregateCore<A> {
  /** Folds r into acc and returns the new accumulator. */
  abstract add(acc: A, r: Record): A;

  /** @internal */
  addRecord(r: Record): void {
    this.fold(this.add(this.cur, r));
  }
}

/**
 * An aggregate of the typed convention (ABI §14.5): as Aggregate, but add
 * reads its record's declared fields through a Row (no value to parse).
 * Register it with registerTypedAggregate.
 */
export abstract class TypedAggregate<A> extends AggregateCore<A> {
  /** Folds r into acc and returns the new accumulator. */
  abstract add(acc: A, r: Row): A;

  /** @internal */
  addRow(r: Row): void {
    this.fold(this.add(this.cur, r));
  }
}

let agg: AggregateBase | null = null;

/** @internal whether an aggregate is registered, for weir_ops */
export function hasAggregate(): bool {
  return agg !== null;
}

/** Registers the aggregate. At most once (with registerTypedAggregate). */
export function registerAggregate<A>(a: Aggregate<A>): void {
  if (agg !== null) abort("weir: aggregate already registered");
  agg = a;
}

/** Registers the typed aggregate, which reads the declared fields. At most once (with registerAggregate). */
export function registerTypedAggregate<A>(a: TypedAggregate<A>): void {
  if (agg !== null) abort("weir: aggregate already registered");
  agg = a;
  markTyped();
}

const NO_AGGREGATE = "plugin has no aggregate handler";
const createBuf = new Writer(64);
const rec = new Record();
const reader = new AccReader();
const reader2 = new AccReader();
const resultOut = new ResultOutput();
const context = new AggContext();

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

// openGroup decodes a group's accumulator into the aggregate; returns
// the error that rejects the group's records, or null.
function openGroup(accPtr: usize, accLen: u32): string | null {
  let g = agg;
  if (g === null) return NO_AGGREGATE;
  reader.reset(accPtr, <i32>accLen);
  clearFailure();
  let err = g.begin(reader);
  return err !== null ? err : takeFailure();
}

// addError writes record i's error entry if it failed; reports whether.
function addError(i: u32): bool {
  let msg = takeFailure();
  if (msg === null) return false;
  frame.u32(i);
  let pos = frame.len;
  frame.u32(0);
  frame.string(msg);
  frame.setU32At(pos, <u32>(frame.len - pos - 4));
  return true;
}

// closeGroup appends the group's new accumulator, or, when it cannot be
// encoded, answers the group (from groupMark) with its n records rejected
// and the accumulator as it was.
function closeGroup(groupMark: i32, n: u32, accPtr: usize, accLen: u32): void {
  let lenPos = frame.len;
  frame.u32(0);
  agg!.end(frame);
  let msg = takeFailure();
  if (msg !== null) {
    frame.len = groupMark;
    writeGroupErrors(n, msg, accPtr, accLen);
    return;
  }
  frame.setU32At(lenPos, <u32>(frame.len - lenPos - 4));
}

// foldGroup answers a group of n records: raw ones decoded from p (it
// returns the address after them), or, when first >= 0, the typed batch's
// records from first on.
function foldGroup(accPtr: usize, accLen: u32, n: u32, p: usize, end: usize, first: i64): usize {
  let groupMark = frame.len;
  let err = openGroup(accPtr, accLen);
  if (err !== null) {
    if (first < 0) for (let i: u32 = 0; i < n; i++) p = decodeRecord(rec, p, end, i);
    writeGroupErrors(n, err, accPtr, accLen);
    return p;
  }
  let countPos = frame.len;
  frame.u32(0);
  let errors: u32 = 0;
  for (let i: u32 = 0; i < n; i++) {
    if (first < 0) {
      p = decodeRecord(rec, p, end, i);
      agg!.addRecord(rec);
    } else {
      rowAt(typedRow, <u32>first + i, i);
      agg!.addRow(typedRow);
    }
    if (addError(i)) errors++;
  }
  frame.setU32At(countPos, errors);
  closeGroup(groupMark, n, accPtr, accLen);
  return p;
}

// groupAt reads the group table entry at p: its accumulator and record
// count (into groupAcc, groupAccLen, groupLen); returns the address after it.
function groupAt(p: usize, end: usize): usize {
  if (p + 4 > end) badFrame();
  groupAccLen = load<u32>(p);
  groupAcc = p + 4;
  if (<u64>groupAcc + <u64>groupAccLen + 4 > <u64>end) badFrame();
  p = groupAcc + <usize>groupAccLen;
  groupLen = load<u32>(p);
  return p + 4;
}

let groupAcc: usize = 0;
let groupAccLen: u32 = 0;
let groupLen: u32 = 0;

/** @internal weir_agg_add */
export function runAggAdd(ptr: usize, len: u32): u64 {
  checkInput(ptr, len);
  if (len < 4) badFrame();
  let end = ptr + <usize>len;
  let groups = load<u32>(ptr);
  let p = ptr + 4;
  frame.reset();
  frame.u32(groups);
  for (let gi: u32 = 0; gi < groups; gi++) {
    p = groupAt(p, end);
    p = foldGroup(groupAcc, groupAccLen, groupLen, p, end, -1);
  }
  if (p != end) badFrame();
  return pack(frame.ptr, frame.len);
}

const typedRow = new Row();

// typedBatchAt checks the typed add frame's group table from p (after the
// group count) and the typed batch after it; returns the batch's address.
function typedBatchAt(ptr: usize, len: u32, groups: u32): usize {
  let end = ptr + <usize>len;
  let p = ptr + 4;
  let total: u64 = 0;
  for (let gi: u32 = 0; gi < groups; gi++) {
    p = groupAt(p, end);
    total += groupLen;
    if (total > MAX_BATCH_RECORDS) badFrame();
  }
  for (; (p - ptr) % TYPED_ALIGN != 0; p++) {
    if (p >= end || load<u8>(p) != 0) badFrame();
  }
  if (readTypedBatch(typedRow, p, <u32>(end - p)) != <u32>total) badFrame();
  return p;
}

/** @internal weir_typed_agg_add (ABI §14.5): an add output frame, as weir_agg_add */
export function runTypedAggAdd(ptr: usize, len: u32): u64 {
  checkInput(ptr, len);
  if (len < 4) badFrame();
  let groups = load<u32>(ptr);
  let end = typedBatchAt(ptr, len, groups);
  let p = ptr + 4;
  frame.reset();
  frame.u32(groups);
  let first: i64 = 0;
  for (let gi: u32 = 0; gi < groups; gi++) {
    p = groupAt(p, end);
    foldGroup(groupAcc, groupAccLen, groupLen, p, end, first);
    first += groupLen;
  }
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

// readContext reads the context of a result context frame's entry at p
// (ABI §12.5) into context; returns the address after it.
function readContext(p: usize, end: usize): usize {
  if (p + 4 > end) badFrame();
  let n = load<u32>(p);
  p += 4;
  if (n == ABSENT) {
    context.key = null;
  } else {
    if (<u64>p + <u64>n > <u64>end) badFrame();
    repoint(context.keyView, p, <i32>n);
    context.key = context.keyView;
    p += <usize>n;
  }
  if (p + 17 > end) badFrame();
  let flags = load<u8>(p);
  context.windowed = (flags & AGG_CONTEXT_WINDOWED) != 0;
  context.start = load<i64>(p, 1);
  context.end = load<i64>(p, 9);
  if ((flags & ~AGG_CONTEXT_WINDOWED) != 0) badFrame();
  if (!context.windowed && (context.start != 0 || context.end != 0)) badFrame();
  if (context.start > context.end) badFrame();
  return p + 17;
}

/** @internal weir_agg_merge (merge = true), weir_agg_result, and weir_agg_result_ctx (withCtx = true) */
export function runAggValues(ptr: usize, len: u32, merge: bool, withCtx: bool = false): u64 {
  checkInput(ptr, len);
  if (len < 4) badFrame();
  let end = ptr + <usize>len;
  let count = load<u32>(ptr);
  let p = ptr + 4;
  frame.reset();
  frame.u32(count);
  let g = agg;
  context.clear();
  for (let i: u32 = 0; i < count; i++) {
    if (withCtx) p = readContext(p, end);
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
    let err = merge ? g.mergeInto(reader, reader2, frame) : g.resultInto(reader, context, resultOut);
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
