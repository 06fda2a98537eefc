// trap_on, a conformance plugin (map) for instance failure: a record whose
// raw value equals the configured trap value executes a WebAssembly trap
// (unreachable) in the middle of the batch call, which kills the instance;
// every other record is kept. Config: {"trap": "trap"}.
import { Record, Output, registerInit, registerMap, json, utf8 } from "weir";

let trap = utf8("trap");

registerInit((config: Uint8Array): void => {
  trap = utf8(json.configString(config, "trap", "trap"));
});

registerMap((r: Record, out: Output): void => {
  let v = r.value;
  let n = v === null ? 0 : v.byteLength;
  if (n == trap.byteLength && (n == 0 || memory.compare(v!.dataStart, trap.dataStart, <usize>n) == 0)) {
    unreachable();
  }
});
