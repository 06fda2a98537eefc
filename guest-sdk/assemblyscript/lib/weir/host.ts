// The host functions of ABI v1 (abi/ABI.md §6), imported from module
// "weir_v1". Pointers and lengths are byte offsets and counts in this
// module's memory.

// @ts-ignore: decorator
@external("weir_v1", "log")
export declare function hostLog(level: i32, ptr: usize, len: u32): void;

// @ts-ignore: decorator
@external("weir_v1", "state_get")
export declare function hostStateGet(index: u32, kptr: usize, klen: u32, vptr: usize, vcap: u32): i32;

// @ts-ignore: decorator
@external("weir_v1", "state_put")
export declare function hostStatePut(index: u32, kptr: usize, klen: u32, vptr: usize, vlen: u32): i32;

// @ts-ignore: decorator
@external("weir_v1", "state_delete")
export declare function hostStateDelete(index: u32, kptr: usize, klen: u32): i32;

// The statuses of the state calls (ABI §6).
export const STATUS_NOT_FOUND: i32 = -1;
export const STATUS_NO_CONTEXT: i32 = -2;
export const STATUS_BAD_INDEX: i32 = -3;
export const STATUS_TOO_LARGE: i32 = -4;
export const STATUS_BAD_MEMORY: i32 = -5;

/** The text of a state call status, worded as package abi's StatusText. */
export function statusText(status: i32): string {
  switch (status) {
    case STATUS_NOT_FOUND: return "not found";
    case STATUS_NO_CONTEXT: return "no record context (state is only available during a batch call)";
    case STATUS_BAD_INDEX: return "record index out of range for the current batch";
    case STATUS_TOO_LARGE: return "key or value too large";
    case STATUS_BAD_MEMORY: return "pointer or length outside guest memory";
  }
  if (status >= 0) return "ok";
  return "unknown status " + status.toString();
}
