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
export { Aggregate, AccReader, ResultOutput, registerAggregate } from "./aggregate";
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
