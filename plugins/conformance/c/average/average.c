/*
 * average is a conformance plugin (aggregate). Its input is a JSON object
 * with a numeric field "n"; it keeps, per group, the sum and the count of
 * the values of "n", and its result is
 *
 *     {"avg":<sum/count>,"count":<count>}
 *
 * with the average written as Python's repr writes floats, or null when
 * the group has no values (or the sum overflowed).
 *
 * The accumulator is 16 bytes: the sum as a float64 and the count as an
 * int64, each 8 bytes little-endian, as in every SDK's average.
 */
#include "weir.h"

enum { ACC_LEN = 16 };

static void create(weir_buf *acc) {
    weir_buf_le_f64(acc, 0);
    weir_buf_le_i64(acc, 0);
}

static void add(weir_buf *acc, const weir_record *r, weir_out *out) {
    if (acc->len != ACC_LEN) {
        weir_reject(out, "bad accumulator: not 16 bytes");
        return;
    }
    weir_json_value v;
    const char *err = weir_json_get(r->value, r->value_len, "n", &v);
    if (err) {
        weir_reject(out, err);
        return;
    }
    if (v.kind == WEIR_JSON_NONE) {
        weir_reject(out, "missing field n");
        return;
    }
    if (v.kind != WEIR_JSON_NUMBER) {
        weir_reject(out, "field n is not a number");
        return;
    }
    double n;
    if (weir_json_float(&v, &n) != 0) {
        weir_reject(out, "field n is out of range");
        return;
    }
    double sum = weir_le_f64(acc->data) + n;
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

WEIR_AGGREGATE(create, add, merge, result);
