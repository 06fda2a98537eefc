// keep_even, a conformance plugin (filter): keeps the JSON objects whose
// field "n" is an even integer (no fraction or exponent, within i64),
// drops the odd ones, and rejects the rest.
import { Record, registerFilter, fail, json } from "weir";

const v = new json.Value();

registerFilter((r: Record): bool => {
  json.get(r.value, "n", v);
  if (v.error !== null) {
    fail(v.error!);
    return false;
  }
  if (!v.exists()) {
    fail("missing field n");
    return false;
  }
  if (!v.isInt()) {
    fail("field n is not an integer");
    return false;
  }
  return v.toInt() % 2 == 0;
});
