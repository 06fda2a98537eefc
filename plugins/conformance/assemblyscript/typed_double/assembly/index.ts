// typed_double, a conformance plugin (map) of the typed convention: it
// declares the field price as a strict int, so that the host dead-letters
// records whose price is not an integer, and patches price to twice its
// value. A record without a price, or with a null one, is rejected with
// "price is missing" or "price is null"; a price whose double does not fit
// in 64 bits with "price overflows". See plugins/conformance/README.md.
import { Row, Patch, FieldFlags, Status, intField, registerTypedMap, statusName, fail } from "weir";

const PRICE = intField("price", FieldFlags.Strict);

registerTypedMap((r: Row, p: Patch): void => {
  let s = r.status(PRICE);
  if (s != Status.Present) {
    fail("price is " + statusName(s));
    return;
  }
  let v = r.int(PRICE);
  if (v > i64.MAX_VALUE / 2 || v < i64.MIN_VALUE / 2) {
    fail("price overflows");
    return;
  }
  p.setInt("price", 2 * v);
});
