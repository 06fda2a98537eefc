// words, a conformance plugin (flat_map): splits the raw value on ASCII
// whitespace (space, \t, \n, \v, \f, \r) and emits each non-empty word,
// in order. The value is not parsed as JSON.
import { Record, Emitter, registerFlatMap } from "weir";

function isSpace(c: u32): bool {
  return c == 0x20 || (c >= 0x09 && c <= 0x0d);
}

registerFlatMap((r: Record, out: Emitter): void => {
  let v = r.value;
  if (v === null) return;
  let n = v.byteLength;
  let p = v.dataStart;
  let i = 0;
  while (i < n) {
    while (i < n && isSpace(load<u8>(p + <usize>i))) i++;
    let start = i;
    while (i < n && !isSpace(load<u8>(p + <usize>i))) i++;
    if (i > start) out.emitSlice(v, start, i);
  }
});
