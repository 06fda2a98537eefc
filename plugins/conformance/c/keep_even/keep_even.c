/*
 * keep_even is a conformance plugin (filter). Its input is a JSON object;
 * it keeps the records whose field "n" is an even integer and drops those
 * where it is odd. An integer is a JSON number written without a fraction
 * or exponent that fits in a signed 64-bit integer. A missing "n", or an
 * "n" that is not an integer, rejects the record.
 */
#include "weir.h"

static bool keep_even(const weir_record *r, weir_out *out) {
    weir_json_value v;
    const char *err = weir_json_get(r->value, r->value_len, "n", &v);
    if (err) {
        weir_reject(out, err);
        return false;
    }
    if (v.kind == WEIR_JSON_NONE) {
        weir_reject(out, "missing field n");
        return false;
    }
    int64_t n;
    if (weir_json_int(&v, &n) != 0) {
        weir_reject(out, "field n is not an integer");
        return false;
    }
    return n % 2 == 0;
}
WEIR_FILTER(keep_even);
