// {{.Name}} is a weir map plugin written in AssemblyScript with the weir
// SDK ({{.SDKPath}}). It upper-cases the ASCII letters of one string field
// of each JSON record and leaves every other byte as it was.
//
// Config: {"field": "name"} (the default field is "name").
//
// Build and test it with:
//
//	weir plugin test .
//
// asconfig.json extends the SDK's asconfig.plugin.json, which adds the ABI
// exports, selects the runtime and puts the SDK on the package path as
// "weir".
import { Record, Output, Writer, registerInit, registerMap, fail, json } from "weir";

let field = "name";

// init receives the operator's config block as JSON. A field of the wrong
// type fails the init, and weir refuses to start the pipeline.
registerInit((config: Uint8Array): void => {
  field = json.configString(config, "field", field);
});

// Reused from record to record, so that the map allocates nothing.
const v = new json.Value();
const text = new Writer(256);

registerMap((r: Record, out: Output): void => {
  let doc = r.value;
  json.get(doc, field, v);
  if (v.error !== null) {
    fail(v.error!); // not JSON: the record goes to the dead-letter output
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
  v.appendString(text); // the decoded string
  for (let i = 0; i < text.len; i++) {
    let p = text.ptr + <usize>i;
    let c = load<u8>(p);
    if (c >= 0x61 && c <= 0x7a) store<u8>(p, c - 0x20);
  }
  // Write the new value in place in the output: the document with the
  // string token replaced.
  let w = out.writer();
  w.slice(doc!, 0, v.start);
  json.appendQuoted(w, text.ptr, text.len);
  w.slice(doc!, v.end, doc!.byteLength);
});
