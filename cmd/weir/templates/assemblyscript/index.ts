// {{.Name}} is a weir map plugin written in AssemblyScript with the weir
// SDK ({{.SDKPath}}). It upper-cases the ASCII letters of one string field
// of each JSON record and leaves every other byte as it was.
//
// Config: {"field": "name"} (the default field is "name").
//
// It uses typed fields: it declares the field it reads, weir reads it from
// each record natively and passes it here as bytes, and writes the answer
// (a patch) into the record. A record whose field is missing, null or not
// a string goes to the pipeline's dead-letter output with weir's reason,
// before this code sees it.
//
// Build and test it with:
//
//	weir plugin test .
//
// asconfig.json extends the SDK's asconfig.plugin.json, which adds the ABI
// exports, selects the runtime and puts the SDK on the package path as
// "weir".
import { Row, Patch, FieldFlags, stringField, registerInit, registerTypedMap, json } from "weir";

let field = "name";
let text = new Uint8Array(64); // scratch, reused from record to record

// init receives the operator's config block as JSON. A field of the wrong
// type fails the init, and weir refuses to start the pipeline.
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
