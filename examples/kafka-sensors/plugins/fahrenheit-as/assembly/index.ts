// fahrenheit-as is the kafka-sensors example's map plugin in
// AssemblyScript, the twin of plugins/fahrenheit (Go). It adds "temp_f",
// the reading's "temp" in degrees Fahrenheit rounded to two decimals, as
// the last field of each JSON reading, keeping every other byte as it was.
// A reading without a numeric "temp" is rejected, which sends it to the
// dead-letter topic.
import { Record, Output, registerMap, fail, json } from "weir";

const temp = new json.Value();
const TEMP_F = String.UTF8.encode(',"temp_f":');

// round rounds half away from zero, as Go's math.Round.
function round(x: f64): f64 {
  let t = Math.trunc(x);
  if (Math.abs(x - t) >= 0.5) t += Math.sign(x);
  return t;
}

registerMap((r: Record, out: Output): void => {
  let doc = r.value;
  json.get(doc, "temp", temp);
  if (temp.error !== null) {
    fail(temp.error!);
    return;
  }
  if (temp.kind != json.Kind.Number) {
    fail("reading has no numeric temp");
    return;
  }
  let c = temp.toFloat();
  if (!isFinite(c)) {
    fail("reading's temp is out of range");
    return;
  }
  let f = round((c * 9 / 5 + 32) * 100) / 100;
  // The document is a JSON object: its last byte that is not whitespace
  // is the closing brace.
  let end = doc!.lastIndexOf(0x7d);
  let w = out.writer();
  w.slice(doc!, 0, end);
  w.raw(changetype<usize>(TEMP_F), TEMP_F.byteLength);
  json.appendFloat(w, f);
  w.slice(doc!, end, doc!.byteLength);
});
