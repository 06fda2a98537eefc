// uppercase, a conformance plugin (map): upper-cases the ASCII letters of
// one string field of a JSON object, leaving every other byte as it was.
// See plugins/conformance/README.md. Config: {"field": "name"}.
import { Record, Output, Writer, registerInit, registerMap, fail, json } from "weir";

let field = "name";

registerInit((config: Uint8Array): void => {
  field = json.configString(config, "field", field);
});

// upper upper-cases the ASCII letters in the bytes [p, end), 8 at a time
// while 8 remain (the loads and stores stay inside [p, end)), then one by
// one. In a word x, a byte is a lower-case letter when its low 7 bits h are
// at least 0x61 and below 0x7b and its top bit is clear; adding 0x1f and
// 0x05 to h sets bit 7 exactly for h >= 0x61 and h >= 0x7b, without carries
// between bytes (h + 0x1f <= 0x9e), and subtracting bit 7 >> 2 (0x20) from
// each marked byte upper-cases it, without borrows.
function upper(p: usize, end: usize): void {
  const ONES: u64 = 0x0101010101010101;
  for (; p + 8 <= end; p += 8) {
    let x = load<u64>(p);
    let h = x & (ONES * 0x7f);
    let m = (h + ONES * 0x1f) & ~(h + ONES * 0x05) & ~x & (ONES * 0x80);
    store<u64>(p, x - (m >> 2));
  }
  for (; p < end; p++) {
    let c = load<u8>(p);
    if (<u32>c - 0x61 < 26) store<u8>(p, c - 0x20);
  }
}

const v = new json.Value();
const text = new Writer(256);

registerMap((r: Record, out: Output): void => {
  let doc = r.value;
  json.get(doc, field, v);
  if (v.error !== null) {
    fail(v.error!);
    return;
  }
  if (!v.exists()) {
    fail("missing field " + field);
    return;
  }
  if (v.kind != json.Kind.String) {
    fail("field " + field + " is not a string");
    return;
  }
  text.reset();
  v.appendString(text);
  upper(text.ptr, text.ptr + <usize>text.len);
  let w = out.writer();
  w.slice(doc!, 0, v.start);
  json.appendQuoted(w, text.ptr, text.len);
  w.slice(doc!, v.end, doc!.byteLength);
});
