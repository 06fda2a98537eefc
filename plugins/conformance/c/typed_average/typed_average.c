/*
 * typed_average is a conformance plugin (aggregate) of the typed-field
 * convention (ABI section 14.5): average's aggregate, typed. It declares
 * one field, "n", as a required and strict float, so the host dead-letters
 * a record whose n is missing, null or not a number within float64
 * (field "n": want float, found string) before the plugin sees it, and
 * extracts the n of the others. It keeps, per group, the sum and the count
 * of n, and its result is
 *
 *     {"avg":<sum/count>,"count":<count>}
 *
 * as average writes it, with null for the average of no values.
 *
 * The accumulator is average's, 16 bytes: the sum as a float64 and the
 * count as an int64, each 8 bytes little-endian, so that either plugin's
 * accumulators, of any SDK, merge with the other's. See
 * plugins/conformance/README.md for the exact contract.
 */
#include "weir.h"

enum { N }; /* the declared fields' indexes */

enum { ACC_LEN = 16 };

WEIR_FIELDS({"n", WEIR_TYPE_FLOAT, WEIR_FIELD_REQUIRED | WEIR_FIELD_STRICT});

static void create(weir_buf *acc) {
    weir_buf_le_f64(acc, 0);
    weir_buf_le_i64(acc, 0);
}

/* add folds n in. The declaration makes the host pass only records with a
 * number in n; the check keeps a host bug from becoming a wrong sum. */
static void add(weir_buf *acc, const weir_typed_batch *b, uint32_t r, weir_out *out) {
    if (acc->len != ACC_LEN) {
        weir_reject(out, "bad accumulator: not 16 bytes");
        return;
    }
    switch (weir_typed_status(b, N, r)) {
    case WEIR_VALUE_PRESENT:
        break;
    case WEIR_VALUE_NULL:
        weir_reject(out, "n is null");
        return;
    case WEIR_VALUE_MISSING:
        weir_reject(out, "n is missing");
        return;
    default:
        weir_reject(out, "n is mismatch");
        return;
    }
    double sum = weir_le_f64(acc->data) + weir_typed_float(b, N, r);
    int64_t count = weir_le_i64(acc->data + 8) + 1;
    acc->len = 0;
    weir_buf_le_f64(acc, sum);
    weir_buf_le_i64(acc, count);
}

static const char *merge(weir_bytes a, weir_bytes b, weir_buf *dst) {
    if (a.len != ACC_LEN || b.len != ACC_LEN)
        return "bad accumulator: not 16 bytes";
    weir_buf_le_f64(dst, weir_le_f64(a.ptr) + weir_le_f64(b.ptr));
    weir_buf_le_i64(dst, weir_le_i64(a.ptr + 8) + weir_le_i64(b.ptr + 8));
    return NULL;
}

static const char *result(weir_bytes acc, weir_buf *dst, bool *null) {
    (void)null;
    if (acc.len != ACC_LEN)
        return "bad accumulator: not 16 bytes";
    double sum = weir_le_f64(acc.ptr);
    int64_t count = weir_le_i64(acc.ptr + 8);
    weir_json_writer w = weir_json_writer_on(dst);
    weir_json_begin_object(&w);
    weir_json_key(&w, "avg");
    if (count == 0)
        weir_json_write_null(&w);
    else
        weir_json_write_float(&w, sum / (double)count);
    weir_json_key(&w, "count");
    weir_json_write_int(&w, count);
    weir_json_end_object(&w);
    return NULL;
}

WEIR_TYPED_AGGREGATE(create, add, merge, result);
