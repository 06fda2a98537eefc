/*
 * window_info is a conformance plugin (aggregate) whose result comes from
 * the result's context (ABI section 12.5): it counts a group's records and
 * writes
 *
 *     {"key":<key>,"start":<window start>,"end":<window end>,"count":<count>}
 *
 * the key as a JSON string (null when the group has none), the bounds in
 * milliseconds (null when the group is not a window's).
 *
 * The accumulator is the count, an int64, 8 bytes little-endian, as in
 * every SDK's window_info.
 */
#include "weir.h"

enum { ACC_LEN = 8 };

static void create(weir_buf *acc) { weir_buf_le_i64(acc, 0); }

static void add(weir_buf *acc, const weir_record *r, weir_out *out) {
    (void)r;
    if (acc->len != ACC_LEN) {
        weir_reject(out, "bad accumulator: not 8 bytes");
        return;
    }
    int64_t n = weir_le_i64(acc->data) + 1;
    acc->len = 0;
    weir_buf_le_i64(acc, n);
}

static const char *merge(weir_bytes a, weir_bytes b, weir_buf *dst) {
    if (a.len != ACC_LEN || b.len != ACC_LEN)
        return "bad accumulator: not 8 bytes";
    weir_buf_le_i64(dst, weir_le_i64(a.ptr) + weir_le_i64(b.ptr));
    return NULL;
}

static const char *result(weir_bytes acc, const weir_agg_context *c, weir_buf *dst, bool *null) {
    (void)null;
    if (acc.len != ACC_LEN)
        return "bad accumulator: not 8 bytes";
    weir_json_writer w = weir_json_writer_on(dst);
    weir_json_begin_object(&w);
    weir_json_key(&w, "key");
    if (c->key.ptr)
        weir_json_write_string(&w, c->key.ptr, c->key.len);
    else
        weir_json_write_null(&w);
    weir_json_key(&w, "start");
    if (c->windowed)
        weir_json_write_int(&w, c->start);
    else
        weir_json_write_null(&w);
    weir_json_key(&w, "end");
    if (c->windowed)
        weir_json_write_int(&w, c->end);
    else
        weir_json_write_null(&w);
    weir_json_key(&w, "count");
    weir_json_write_int(&w, weir_le_i64(acc.ptr));
    weir_json_end_object(&w);
    return NULL;
}

WEIR_AGGREGATE_CTX(create, add, merge, result);
