// uppercase, a conformance plugin (map): upper-cases the ASCII letters of
// one string field of a JSON object, leaving every other byte as it was.
// See plugins/conformance/README.md. Config: {"field": "name"}.
import { Record, Output, Writer, registerInit, registerMap, fail, json } from "weir";

let field = "name";

registerInit((config: Uint8Array): void => {
  field = json.configString(config, "field", field);
});

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
  for (let i = 0; i < text.len; i++) {
    let p = text.ptr + <usize>i;
    let c = load<u8>(p);
    if (c >= 0x61 && c <= 0x7a) store<u8>(p, c - 0x20);
  }
  let w = out.writer();
  w.slice(doc!, 0, v.start);
  json.appendQuoted(w, text.ptr, text.len);
  w.slice(doc!, v.end, doc!.byteLength);
});
