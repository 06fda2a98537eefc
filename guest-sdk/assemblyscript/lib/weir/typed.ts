// The typed convention (ABI §14): registration of typed functions, the
// weir_fields answer, and the typed batch calls. The host extracts the
// declared fields (fields.ts) natively and passes each batch column by
// column; a typed function reads its record through a Row (row.ts) and
// answers with a Patch (patch.ts).

import { Row, readTypedBatch, rowAt } from "./row";
import { Patch, PatchEmitter, beginPatch, endPatch, beginEmitter } from "./patch";
import { sealDeclaration } from "./fields";
import { checkInput } from "./record";
import {
  frame, claimOp, noHandler, takeFailure, writeKeep, writeError, entryCount, rewindFrame,
  beginFrame, finishFrame, pack, OP_MAP, OP_FLAT_MAP, OP_FILTER, OPS_MAP, OPS_FLAT_MAP, OPS_FILTER,
} from "./core";

/** Answers one record of a typed map through p; setting nothing keeps it. fail() rejects it. */
export type TypedMapFn = (r: Row, p: Patch) => void;
/** Emits zero or more records for r through out. fail() rejects r, dropping what was emitted. */
export type TypedFlatMapFn = (r: Row, out: PatchEmitter) => void;
/** Returns whether to keep r, unchanged. fail() rejects it. */
export type TypedFilterFn = (r: Row) => bool;

let mapFn: TypedMapFn | null = null;
let flatMapFn: TypedFlatMapFn | null = null;
let filterFn: TypedFilterFn | null = null;
// Whether a typed function (or a typed aggregate) is registered.
let typed = false;

/** @internal notes a typed registration: weir_fields then answers with the declaration */
export function markTyped(): void {
  typed = true;
}

/** Registers the typed map function (instead of registerMap). */
export function registerTypedMap(fn: TypedMapFn): void {
  claimOp(OPS_MAP, "map");
  mapFn = fn;
  typed = true;
}

/** Registers the typed flat_map function (instead of registerFlatMap). */
export function registerTypedFlatMap(fn: TypedFlatMapFn): void {
  claimOp(OPS_FLAT_MAP, "flat_map");
  flatMapFn = fn;
  typed = true;
}

/** Registers the typed filter function (instead of registerFilter). */
export function registerTypedFilter(fn: TypedFilterFn): void {
  claimOp(OPS_FILTER, "filter");
  filterFn = fn;
  typed = true;
}

/**
 * @internal weir_fields: the declaration frame when a typed function is
 * registered, else the empty region, which keeps the module a raw one
 */
export function runFields(): u64 {
  if (!typed) return 0;
  let d = sealDeclaration();
  return pack(d.ptr, d.len);
}

const row = new Row();
const patch = new Patch();
const emitter = new PatchEmitter();

/** @internal weir_typed_map (OP_MAP), weir_typed_flat_map and weir_typed_filter */
export function runTyped(op: i32, ptr: usize, len: u32): u64 {
  checkInput(ptr, len);
  let n = readTypedBatch(row, ptr, len);
  beginFrame();
  for (let i: u32 = 0; i < n; i++) {
    rowAt(row, i, i);
    let mark = frame.len;
    let marked = entryCount();
    if (op == OP_MAP) mapOne(i);
    else if (op == OP_FLAT_MAP) flatMapOne(i);
    else filterOne(i);
    let msg = takeFailure();
    if (msg !== null) {
      rewindFrame(mark, marked);
      writeError(i, msg);
    }
  }
  return finishFrame();
}

function mapOne(i: u32): void {
  let fn = mapFn;
  if (fn === null) {
    writeError(i, noHandler(OP_MAP));
    return;
  }
  beginPatch(patch, i);
  fn(row, patch);
  endPatch(patch);
}

function flatMapOne(i: u32): void {
  let fn = flatMapFn;
  if (fn === null) {
    writeError(i, noHandler(OP_FLAT_MAP));
    return;
  }
  beginEmitter(emitter, i);
  fn(row, emitter);
  emitter.flush();
}

function filterOne(i: u32): void {
  let fn = filterFn;
  if (fn === null) {
    writeError(i, noHandler(OP_FILTER));
    return;
  }
  if (fn(row)) writeKeep(i);
}
