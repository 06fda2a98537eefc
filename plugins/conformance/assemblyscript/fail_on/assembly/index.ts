// fail_on, a conformance plugin (map) for per-record errors: a record whose
// raw value equals the configured bad value is rejected with
// "bad input: <value>"; every other record is kept. An absent value
// compares as empty. Config: {"bad": "bad"}.
import { Record, Output, Writer, registerInit, registerMap, fail, json, utf8 } from "weir";

let bad = utf8("bad");

registerInit((config: Uint8Array): void => {
  bad = utf8(json.configString(config, "bad", "bad"));
});

function equals(v: Uint8Array | null, b: Uint8Array): bool {
  let n = v === null ? 0 : v.byteLength;
  if (n != b.byteLength) return false;
  return n == 0 || memory.compare(v!.dataStart, b.dataStart, <usize>n) == 0;
}

registerMap((r: Record, out: Output): void => {
  if (equals(r.value, bad)) fail("bad input: " + r.valueString());
  // Setting nothing on out keeps the record.
});
