/*
 * currency is Nexmark q1's map plugin in C, the same as plugins/currency in
 * Go: each bid's price in euros, price x 0.908, every other byte of the bid
 * kept; the new price written as the shortest decimal that reads back as
 * the double product. A bid without a numeric "price" is rejected.
 */
#include "weir.h"

#define RATE 0.908

static void to_euros(const weir_record *r, weir_out *out) {
    weir_json_value v;
    const char *err = weir_json_get(r->value, r->value_len, "price", &v);
    if (err) {
        weir_reject(out, err);
        return;
    }
    double p;
    if (v.kind != WEIR_JSON_NUMBER || weir_json_float(&v, &p) != 0) {
        weir_reject(out, "bid has no numeric price");
        return;
    }
    weir_buf *dst = weir_value_begin(out);
    weir_buf_append(dst, r->value, v.offset);
    weir_json_float_text(dst, p * RATE);
    weir_buf_append(dst, v.raw + v.len, r->value_len - v.offset - v.len);
    weir_value_end(out);
}
WEIR_MAP(to_euros);
