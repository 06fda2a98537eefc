// The host functions of ABI v1 (abi/ABI.md §6), imported from module
// "weir_v1", and their statuses: declared in abi.ts, which is generated
// from package abi. Pointers and lengths are byte offsets and counts in
// this module's memory.

import {
  STATUS_NOT_FOUND, STATUS_NO_CONTEXT, STATUS_BAD_INDEX, STATUS_TOO_LARGE, STATUS_BAD_MEMORY,
  STATUS_TEXT_OK, STATUS_TEXT_NOT_FOUND, STATUS_TEXT_NO_CONTEXT, STATUS_TEXT_BAD_INDEX,
  STATUS_TEXT_TOO_LARGE, STATUS_TEXT_BAD_MEMORY,
} from "./abi";

export {
  hostLog, hostStateGet, hostStatePut, hostStateDelete,
  STATUS_NOT_FOUND, STATUS_NO_CONTEXT, STATUS_BAD_INDEX, STATUS_TOO_LARGE, STATUS_BAD_MEMORY,
} from "./abi";

/** The text of a state call status, worded as package abi's StatusText. */
export function statusText(status: i32): string {
  switch (status) {
    case STATUS_NOT_FOUND: return STATUS_TEXT_NOT_FOUND;
    case STATUS_NO_CONTEXT: return STATUS_TEXT_NO_CONTEXT;
    case STATUS_BAD_INDEX: return STATUS_TEXT_BAD_INDEX;
    case STATUS_TOO_LARGE: return STATUS_TEXT_TOO_LARGE;
    case STATUS_BAD_MEMORY: return STATUS_TEXT_BAD_MEMORY;
  }
  if (status >= 0) return STATUS_TEXT_OK;
  return "unknown status " + status.toString();
}
