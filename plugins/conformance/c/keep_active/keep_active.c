/*
 * keep_active is a conformance plugin (filter) of the typed-field
 * convention (ABI section 14). It declares the field "active" as a bool
 * without flags, so every record reaches it with the field's status: it
 * keeps the records whose active is true, drops those whose active is
 * false, null or missing, and rejects those whose active holds another
 * type with "active is not a bool". See plugins/conformance/README.md.
 */
#include "weir.h"

enum { ACTIVE }; /* the declared fields' indexes */

WEIR_FIELDS({"active", WEIR_TYPE_BOOL, 0});

static bool keep_active(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    switch (weir_typed_status(b, ACTIVE, r)) {
    case WEIR_VALUE_PRESENT:
        return weir_typed_bool(b, ACTIVE, r);
    case WEIR_VALUE_MISMATCH:
        weir_typed_reject(out, "active is not a bool");
        return false;
    }
    return false;
}
WEIR_TYPED_FILTER(keep_active);
