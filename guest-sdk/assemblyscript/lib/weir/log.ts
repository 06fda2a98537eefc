// Logging through the host (ABI §6, log).

import { Writer } from "./writer";
import { hostLog } from "./host";
import { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } from "./abi";

/** The log levels of weir_v1.log. */
export enum LogLevel {
  Debug = LOG_DEBUG,
  Info = LOG_INFO,
  Warn = LOG_WARN,
  Error = LOG_ERROR,
}

const line = new Writer(256);

/**
 * Writes msg to weir's log at level, tagged with the operator. The host
 * cuts lines over 4096 bytes and rate-limits each instance. Usable from
 * every plugin function, including init.
 */
export function log(level: LogLevel, msg: string): void {
  line.reset();
  line.string(msg);
  hostLog(<i32>level, line.ptr, <u32>line.len);
}

/** log at LogLevel.Debug. */
export function logDebug(msg: string): void { log(LogLevel.Debug, msg); }
/** log at LogLevel.Info. */
export function logInfo(msg: string): void { log(LogLevel.Info, msg); }
/** log at LogLevel.Warn. */
export function logWarn(msg: string): void { log(LogLevel.Warn, msg); }
/** log at LogLevel.Error. */
export function logError(msg: string): void { log(LogLevel.Error, msg); }
