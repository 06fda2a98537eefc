/*
 * uppercase is a conformance plugin (map). Its input is a JSON object; it
 * upper-cases the ASCII letters a-z of one string field and leaves every
 * other byte of the input as it was. See plugins/conformance/README.md.
 *
 * Config: {"field": "name"}; the default field is "name".
 */
#include "weir.h"

static weir_buf field; /* the field's name */
static weir_buf text;  /* scratch: the field's decoded text */
static weir_buf msg;   /* scratch: error messages */

static const char *init(const uint8_t *config, size_t len) {
    weir_buf_str(&field, "name");
    return weir_config_string(config, len, "field", &field);
}
WEIR_INIT(init);

static void reject_field(weir_out *out, const char *before, const char *after) {
    msg.len = 0;
    weir_buf_str(&msg, before);
    weir_buf_append(&msg, field.data, field.len);
    weir_buf_str(&msg, after);
    weir_reject_n(out, (const char *)msg.data, msg.len);
}

static void uppercase(const weir_record *r, weir_out *out) {
    weir_json_value v;
    const char *err = weir_json_get_n(r->value, r->value_len, (const char *)field.data, field.len, &v);
    if (err) {
        weir_reject(out, err);
        return;
    }
    if (v.kind == WEIR_JSON_NONE) {
        reject_field(out, "missing field ", "");
        return;
    }
    if (v.kind != WEIR_JSON_STRING) {
        reject_field(out, "field ", " is not a string");
        return;
    }
    text.len = 0;
    weir_json_string(&v, &text);
    for (size_t i = 0; i < text.len; i++)
        if (text.data[i] >= 'a' && text.data[i] <= 'z')
            text.data[i] -= 'a' - 'A';
    weir_buf *dst = weir_value_begin(out);
    weir_buf_append(dst, r->value, v.offset);
    weir_json_quote(dst, text.data, text.len);
    weir_buf_append(dst, v.raw + v.len, r->value_len - v.offset - v.len);
    weir_value_end(out);
}
WEIR_MAP(uppercase);
