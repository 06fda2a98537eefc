// typed_uppercase, a conformance plugin (map) of the typed convention,
// doing what uppercase does: it declares one string field, required and
// strict, so that the host dead-letters records where it is missing, null
// or not a string, and patches it upper-cased (ASCII letters only); the
// host keeps every other byte. See plugins/conformance/README.md.
// Config: {"field": "name"}.
import { Row, Patch, FieldFlags, stringField, registerInit, registerTypedMap, json } from "weir";

let field = "name";
let text = new Uint8Array(64); // scratch: the upper-cased field

registerInit((config: Uint8Array): void => {
  field = json.configString(config, "field", field);
  stringField(field, FieldFlags.Required | FieldFlags.Strict);
});

registerTypedMap((r: Row, p: Patch): void => {
  let s = r.bytes(0); // present: the field is required
  let n = s.length;
  if (n > text.length) text = new Uint8Array(n * 2);
  for (let i = 0; i < n; i++) {
    let c = unchecked(s[i]);
    unchecked((text[i] = <u32>c - 0x61 < 26 ? c - 0x20 : c));
  }
  p.setStringBytes(field, text, n);
});
