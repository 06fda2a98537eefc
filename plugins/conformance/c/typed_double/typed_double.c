/*
 * typed_double is a conformance plugin (map) of the typed-field convention
 * (ABI section 14). It declares one field, "price", as a strict int, so the
 * host dead-letters a record whose price is not an integer within int64
 * (field "price": want int, found string) before the plugin sees it, and
 * extracts the price of the others.
 *
 * The plugin answers each record with a patch setting "price" to twice its
 * value (the host rewrites only that value). A record whose price is null
 * is rejected with "price is null", one without a price (or whose value is
 * not an object) with "price is missing", and one whose price doubled does
 * not fit in an int64 with "price overflows". See
 * plugins/conformance/README.md for the exact contract.
 */
#include "weir.h"

enum { PRICE }; /* the declared fields' indexes */

WEIR_FIELDS({"price", WEIR_TYPE_INT, WEIR_FIELD_STRICT});

static void double_price(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    switch (weir_typed_status(b, PRICE, r)) {
    case WEIR_VALUE_PRESENT:
        break;
    case WEIR_VALUE_NULL:
        weir_typed_reject(out, "price is null");
        return;
    default: /* missing (a mismatch is dead-lettered by the host: strict) */
        weir_typed_reject(out, "price is missing");
        return;
    }
    int64_t doubled;
    if (__builtin_mul_overflow(weir_typed_int(b, PRICE, r), 2, &doubled)) {
        weir_typed_reject(out, "price overflows");
        return;
    }
    weir_patch_begin(out, 0, NULL, 0, 0);
    weir_patch_set_int(out, "price", doubled);
}
WEIR_TYPED_MAP(double_price);
