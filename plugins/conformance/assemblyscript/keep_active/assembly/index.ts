// keep_active, a conformance plugin (filter) of the typed convention: it
// declares the field active as a bool, with no flags, so every record
// reaches it with the field's status. It keeps the records whose active is
// true, drops those whose active is false, null or missing, and rejects
// those whose active holds another type with "active is not a bool". See
// plugins/conformance/README.md.
import { Row, Status, boolField, registerTypedFilter, fail } from "weir";

const ACTIVE = boolField("active");

registerTypedFilter((r: Row): bool => {
  if (r.status(ACTIVE) == Status.Mismatch) {
    fail("active is not a bool");
    return false;
  }
  return r.bool(ACTIVE);
});
