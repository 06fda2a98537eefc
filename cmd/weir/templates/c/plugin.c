/*
 * {{.Name}}: a weir map plugin in C.
 *
 * It upper-cases the ASCII letters of one string field of a JSON object
 * and leaves every other byte of the record as it was:
 *
 *     {"name":"ada","n":1}  ->  {"name":"ADA","n":1}
 *
 * Config: {"field": "name"} (the default field is "name").
 *
 * weir.h and weir.c are the weir C SDK (see weir.h for its API). weir
 * builds this folder itself when a pipeline names it as a plugin:
 *
 *     operators:
 *       - name: {{.Name}}
 *         type: map
 *         plugin: ./{{.Name}}
 *         config: {field: name}
 *
 * and `weir plugin test .` runs the cases in weir-test.jsonl. To build it
 * by hand:
 *
 *     clang --target=wasm32-wasi -mexec-model=reactor -O2 -o {{.Name}}.wasm *.c
 */
#include "weir.h"

static weir_buf field; /* the configured field name */
static weir_buf text;  /* scratch: the field's decoded text */
static weir_buf msg;   /* scratch: error messages */

/* init receives the operator's config, as JSON. Returning a message
 * rejects the configuration and stops the pipeline from starting. */
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

/* upper is called once per record. Rejected records go to the pipeline's
 * dead-letter output with the message. */
static void upper(const weir_record *r, weir_out *out) {
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

    /* Build the new value in place: the input up to the field's value,
     * the new string, and the rest of the input. */
    weir_buf *dst = weir_value_begin(out);
    weir_buf_append(dst, r->value, v.offset);
    weir_json_quote(dst, text.data, text.len);
    weir_buf_append(dst, v.raw + v.len, r->value_len - v.offset - v.len);
    weir_value_end(out);
}
WEIR_MAP(upper);
