// Registration of plugin functions, per-record failure, and the batch calls
// (ABI §4, §5).

import { Record, decodeRecord, checkInput, badFrame } from "./record";
import { Writer } from "./writer";
import { Output, Emitter, beginOutput, finishOutput } from "./output";
import { ENTRY_KEEP, ENTRY_ERROR, OP_MAP as OPS_MAP, OP_FLAT_MAP as OPS_FLAT_MAP, OP_FILTER as OPS_FILTER } from "./abi";

/** Receives the operator's config (JSON; `{}` when the pipeline gives none). Call fail() to reject it. */
export type InitFn = (config: Uint8Array) => void;
/** Maps one record: set the result through out; setting nothing keeps the record unchanged. */
export type MapFn = (r: Record, out: Output) => void;
/** Emits zero or more records for r through out. */
export type FlatMapFn = (r: Record, out: Emitter) => void;
/** Returns whether to keep r. */
export type FilterFn = (r: Record) => bool;

let initFn: InitFn | null = null;
let mapFn: MapFn | null = null;
let flatMapFn: FlatMapFn | null = null;
let filterFn: FilterFn | null = null;

// The weir_ops bits of the batch operations registered, raw or typed.
let claimed: u32 = 0;

/**
 * @internal claims the batch operation bit (OPS_MAP, ...) for a raw or
 * typed registration: an operation has one function.
 */
export function claimOp(bit: u32, kind: string): void {
  if (claimed & bit) abort("weir: " + kind + " function already registered");
  claimed |= bit;
}

/** Registers the function that receives the operator's config. Optional. */
export function registerInit(fn: InitFn): void {
  if (initFn !== null) abort("weir: init function already registered");
  initFn = fn;
}

/** Registers the map function. */
export function registerMap(fn: MapFn): void {
  claimOp(OPS_MAP, "map");
  mapFn = fn;
}

/** Registers the flat_map function. */
export function registerFlatMap(fn: FlatMapFn): void {
  claimOp(OPS_FLAT_MAP, "flat_map");
  flatMapFn = fn;
}

/** Registers the filter function. */
export function registerFilter(fn: FilterFn): void {
  claimOp(OPS_FILTER, "filter");
  filterFn = fn;
}

// The message of the current failure, if any.
let failMsg: string | null = null;

/**
 * Fails what the SDK is processing: the current record (which the host
 * then sends to the dead-letter output with message as the reason, dropping
 * anything already output for it), or the config in an init function, or
 * the merge or result in an aggregate. Return from the function after
 * calling it. The first failure of a record counts.
 */
export function fail(message: string): void {
  if (failMsg === null) failMsg = message;
}

/** Whether fail() was called for what is being processed. */
export function failed(): bool {
  return failMsg !== null;
}

/** @internal takes the failure message, clearing it */
export function takeFailure(): string | null {
  let m = failMsg;
  failMsg = null;
  return m;
}

/** @internal clears the failure */
// @ts-ignore: decorator
@inline
export function clearFailure(): void {
  failMsg = null;
}

// The output frame of the current batch call, reused from call to call.
/** @internal */
export const frame = new Writer(64 << 10);
// The entries written to frame.
let entries: u32 = 0;

const rec = new Record();
const out = new Output();
const emitter = new Emitter();

/** @internal writes a keep entry for input i */
// @ts-ignore: decorator
@inline
export function writeKeep(i: u32): void {
  let p = frame.reserve(5);
  store<u8>(p, ENTRY_KEEP);
  store<u32>(p, i, 1);
  frame.len += 5;
  entries++;
}

/** @internal writes an error entry for input i */
export function writeError(i: u32, msg: string): void {
  frame.byte(ENTRY_ERROR);
  frame.u32(i);
  let lenPos = frame.len;
  frame.u32(0);
  frame.string(msg);
  frame.setU32At(lenPos, <u32>(frame.len - lenPos - 4));
  entries++;
}

/** @internal counts an entry written by Output */
// @ts-ignore: decorator
@inline
export function countEntry(): void {
  entries++;
}

/** @internal the entries written to the frame so far */
// @ts-ignore: decorator
@inline
export function entryCount(): u32 {
  return entries;
}

/** @internal drops what was written after the frame had len bytes and n entries */
// @ts-ignore: decorator
@inline
export function rewindFrame(len: i32, n: u32): void {
  frame.len = len;
  entries = n;
}

/** @internal starts the output frame of a batch call */
export function beginFrame(): void {
  frame.reset();
  frame.u32(0);
  entries = 0;
  failMsg = null;
}

/** @internal finishes the output frame; returns it packed */
export function finishFrame(): u64 {
  frame.setU32At(0, entries);
  return pack(frame.ptr, frame.len);
}

/** @internal the batch operations, as runBatch takes them */
export const OP_MAP = 0;
export const OP_FLAT_MAP = 1;
export const OP_FILTER = 2;

/** The bits of the ABI's weir_ops answer (abi/ABI.md §4), from abi.ts. */
export { OP_MAP as OPS_MAP, OP_FLAT_MAP as OPS_FLAT_MAP, OP_FILTER as OPS_FILTER, OP_AGGREGATE as OPS_AGGREGATE } from "./abi";

/** @internal the batch operations with a registered function (raw or typed), as weir_ops bits */
export function registeredBatchOps(): u32 {
  return claimed;
}

/** @internal the error of a batch call whose kind has no function */
export function noHandler(op: i32): string {
  return op == OP_MAP ? "plugin has no map handler" : op == OP_FLAT_MAP ? "plugin has no flat_map handler" : "plugin has no filter handler";
}

/** @internal runs one batch call; returns the packed output frame */
export function runBatch(op: i32, ptr: usize, len: u32): u64 {
  checkInput(ptr, len);
  if (len < 4) badFrame();
  let end = ptr + <usize>len;
  let count = load<u32>(ptr);
  let p = ptr + 4;
  beginFrame();
  let r = rec;
  if (op == OP_MAP) {
    let fn = mapFn;
    let o = out;
    for (let i: u32 = 0; i < count; i++) {
      p = decodeRecord(r, p, end, i);
      if (fn === null) {
        writeError(i, noHandler(op));
        continue;
      }
      let mark = frame.len;
      beginOutput(o, r);
      fn(r, o);
      if (failMsg !== null) {
        frame.len = mark;
        writeError(i, failMsg!);
        failMsg = null;
      } else {
        finishOutput(o);
      }
    }
  } else if (op == OP_FLAT_MAP) {
    let fn = flatMapFn;
    let e = emitter;
    for (let i: u32 = 0; i < count; i++) {
      p = decodeRecord(r, p, end, i);
      if (fn === null) {
        writeError(i, noHandler(op));
        continue;
      }
      let mark = frame.len;
      let markEntries = entries;
      e.begin(r);
      fn(r, e);
      e.flush();
      if (failMsg !== null) {
        frame.len = mark;
        entries = markEntries;
        writeError(i, failMsg!);
        failMsg = null;
      }
    }
  } else {
    let fn = filterFn;
    for (let i: u32 = 0; i < count; i++) {
      p = decodeRecord(r, p, end, i);
      if (fn === null) {
        writeError(i, noHandler(op));
        continue;
      }
      let keep = fn(r);
      if (failMsg !== null) {
        writeError(i, failMsg!);
        failMsg = null;
      } else if (keep) {
        writeKeep(i);
      }
    }
  }
  if (p != end) badFrame();
  return finishFrame();
}

// weir_init's error message, kept for the host to read.
const initMsg = new Writer();

/** @internal runs weir_init */
export function runInit(ptr: usize, len: u32): u64 {
  checkInput(ptr, len);
  let fn = initFn;
  if (fn === null) return 0;
  let config = new Uint8Array(<i32>len);
  if (len > 0) memory.copy(config.dataStart, ptr, <usize>len);
  failMsg = null;
  fn(config);
  let msg = takeFailure();
  if (msg === null) return 0;
  initMsg.reset();
  initMsg.string(msg.length > 0 ? msg : "init failed");
  return pack(initMsg.ptr, initMsg.len);
}

/** @internal packs a region as the ABI returns it: ptr << 32 | len */
// @ts-ignore: decorator
@inline
export function pack(ptr: usize, len: i32): u64 {
  return (<u64>ptr << 32) | <u64><u32>len;
}
