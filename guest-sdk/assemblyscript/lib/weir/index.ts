// The weir AssemblyScript guest SDK: write weir plugins (ABI v1) as plain
// AssemblyScript functions. See README.md.

export { Record } from "./record";
export { Writer } from "./writer";
export { Output, Emitter } from "./output";
export {
  InitFn, MapFn, FlatMapFn, FilterFn,
  registerInit, registerMap, registerFlatMap, registerFilter,
  fail, failed,
} from "./core";
export { Aggregate, TypedAggregate, AccReader, AggContext, ResultOutput, registerAggregate, registerTypedAggregate } from "./aggregate";
export {
  FieldType, FieldFlags, Status, statusName,
  declareField, intField, floatField, boolField, stringField, rawField,
} from "./fields";
export { Row } from "./row";
export { Patch, PatchEmitter } from "./patch";
export {
  TypedMapFn, TypedFlatMapFn, TypedFilterFn,
  registerTypedMap, registerTypedFlatMap, registerTypedFilter,
} from "./typed";
export {
  ValueState, MapState, ListState, appendStateKey,
  VALUE_STATE_KIND, MAP_STATE_KIND, LIST_STATE_KIND,
} from "./state";
export { LogLevel, log, logDebug, logInfo, logWarn, logError } from "./log";

import * as json from "./json";
export { json };

/** The UTF-8 bytes of s, as a new Uint8Array. */
export function utf8(s: string): Uint8Array {
  return Uint8Array.wrap(String.UTF8.encode(s));
}
