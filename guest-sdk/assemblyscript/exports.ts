// The exports of ABI v1 (abi/ABI.md §2). A plugin gets them by extending
// the SDK's asconfig.plugin.json, which adds this file as an entry, or by
// re-exporting them from its own entry file:
//
//     export * from "<sdk>/exports";
//
// It imports the SDK as the package "weir" (lib/weir, on asc's package
// path through asconfig.plugin.json), as plugins do, so that both see the
// same module instances.

import { allocInput } from "weir/record";
import { runBatch, runInit, registeredBatchOps, OP_MAP, OP_FLAT_MAP, OP_FILTER, OPS_AGGREGATE } from "weir/core";
import { runAggCreate, runAggAdd, runAggValues, runTypedAggAdd, hasAggregate } from "weir/aggregate";
import { runFields, runTyped } from "weir/typed";

/** The ABI version marker; never called. */
export function weir_abi_v1(): void {}

/** The module's one allocator (ABI §3). */
export function weir_alloc(size: u32): usize {
  return allocInput(size);
}

/** Receives the operator config (ABI §4). */
export function weir_init(ptr: usize, len: u32): u64 {
  return runInit(ptr, len);
}

export function weir_map(ptr: usize, len: u32): u64 {
  return runBatch(OP_MAP, ptr, len);
}

export function weir_flat_map(ptr: usize, len: u32): u64 {
  return runBatch(OP_FLAT_MAP, ptr, len);
}

export function weir_filter(ptr: usize, len: u32): u64 {
  return runBatch(OP_FILTER, ptr, len);
}

/**
 * The typed convention's field declaration (ABI §14.2): the empty region
 * unless the plugin registered a typed function, which keeps it a raw
 * module. The host then calls the typed exports below instead of the raw
 * ones.
 */
export function weir_fields(): u64 {
  return runFields();
}

export function weir_typed_map(ptr: usize, len: u32): u64 {
  return runTyped(OP_MAP, ptr, len);
}

export function weir_typed_flat_map(ptr: usize, len: u32): u64 {
  return runTyped(OP_FLAT_MAP, ptr, len);
}

export function weir_typed_filter(ptr: usize, len: u32): u64 {
  return runTyped(OP_FILTER, ptr, len);
}

export function weir_typed_agg_add(ptr: usize, len: u32): u64 {
  return runTypedAggAdd(ptr, len);
}

export function weir_agg_create(): u64 {
  return runAggCreate();
}

export function weir_agg_add(ptr: usize, len: u32): u64 {
  return runAggAdd(ptr, len);
}

export function weir_agg_merge(ptr: usize, len: u32): u64 {
  return runAggValues(ptr, len, true);
}

export function weir_agg_result(ptr: usize, len: u32): u64 {
  return runAggValues(ptr, len, false);
}

/** The results given their groups' contexts (ABI §12.5): Aggregate.resultCtx. */
export function weir_agg_result_ctx(ptr: usize, len: u32): u64 {
  return runAggValues(ptr, len, false, true);
}

/**
 * The operations the plugin registered (ABI §4), so that the host refuses
 * the module for an operator of another kind: the module exports every
 * entry point. The register* calls ran in _initialize, before.
 */
export function weir_ops(): u32 {
  return registeredBatchOps() | (hasAggregate() ? OPS_AGGREGATE : 0);
}

/**
 * The maintenance hook (ABI §8). The SDK builds with AssemblyScript's
 * minimal runtime, which never collects garbage on its own: the host calls
 * this between calls, when no object is referenced from the stack, and it
 * collects everything the calls since the last one left behind.
 */
export function weir_gc(): void {
  __collect();
}
