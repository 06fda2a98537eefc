/*
 * serializer is the sensor-anomaly example's map plugin, in C: the same
 * behaviour as plugins/serializer (Go). It reproduces SerializerMapFunction
 * of the PyFlink job the example is taken from, which prints a dict as
 *
 *     '|'.join([k + '=' + str(v) for k, v in value.items()])
 *
 * Each input value must be a JSON object; the output is its fields in
 * document order as name=text joined by '|', where text is:
 *
 *   - for a string, its decoded content, without quotes or escapes;
 *   - for a number, its raw JSON text as written in the input;
 *   - true and false as True and False, null as None, as Python prints them;
 *   - for a nested object or array, its raw JSON text.
 *
 * A value that is not a JSON object is rejected with an error. The output
 * is written in place into the output frame.
 */
#include "weir.h"

typedef struct serializer {
    weir_buf *dst;
    bool first;
} serializer;

static bool field(const weir_json_value *k, const weir_json_value *v, void *ctx) {
    serializer *s = ctx;
    if (!s->first)
        weir_buf_byte(s->dst, '|');
    s->first = false;
    weir_json_string(k, s->dst);
    weir_buf_byte(s->dst, '=');
    switch (v->kind) {
    case WEIR_JSON_STRING:
        weir_json_string(v, s->dst);
        break;
    case WEIR_JSON_BOOL:
        weir_buf_str(s->dst, v->raw[0] == 't' ? "True" : "False");
        break;
    case WEIR_JSON_NULL:
        weir_buf_str(s->dst, "None");
        break;
    default:
        weir_buf_append(s->dst, v->raw, v->len);
    }
    return true;
}

static void serialize(const weir_record *r, weir_out *out) {
    serializer s = {weir_value_begin(out), true};
    const char *err = weir_json_each(r->value, r->value_len, field, &s);
    weir_value_end(out);
    if (err)
        weir_reject(out, err);
}
WEIR_MAP(serialize);
