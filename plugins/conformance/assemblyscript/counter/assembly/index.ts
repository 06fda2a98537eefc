// counter, a conformance plugin (map) for keyed state: counts the records
// of each key in the ValueState "count" (an int64; state key "vcount") and
// outputs {"key":<the key as a JSON string, or null>,"count":<new count>}.
// The input value is ignored.
import { Record, Output, Writer, ValueState, registerMap, failed, json } from "weir";

const count = new ValueState("count");
const j = new json.JsonWriter(new Writer());

registerMap((r: Record, out: Output): void => {
  let n = count.getInt64(r) + 1;
  count.putInt64(r, n);
  if (failed()) return; // a state call failed: the record is rejected
  j.reset(out.writer());
  j.beginObject();
  j.key("key");
  j.stringBytes(r.key);
  j.key("count");
  j.int(n);
  j.endObject();
});
