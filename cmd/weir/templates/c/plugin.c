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
 * It uses typed fields: it declares the field it reads, weir reads it from
 * each record natively and passes it here as a string, and writes the
 * answer (a patch) into the record. A record whose field is missing, null
 * or not a string goes to the pipeline's dead-letter output with weir's
 * reason, before this code sees it.
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

static weir_buf field; /* the configured field name, NUL-terminated */
static weir_buf text;  /* scratch: the upper-cased field */

/* The fields are declared at init, from the config. */
WEIR_FIELDS();

/* init receives the operator's config, as JSON. Returning a message
 * rejects the configuration and stops the pipeline from starting. */
static const char *init(const uint8_t *config, size_t len) {
    weir_buf_str(&field, "name");
    const char *err = weir_config_string(config, len, "field", &field);
    if (err)
        return err;
    weir_buf_append(&field, "", 1);
    weir_declare_field((const char *)field.data, WEIR_TYPE_STRING, WEIR_FIELD_REQUIRED | WEIR_FIELD_STRICT);
    return NULL;
}
WEIR_INIT(init);

/* upper is called once per record r of the batch b, its field 0 the one
 * configured. weir_typed_reject would send the record to the dead-letter
 * output with a message. */
static void upper(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    weir_bytes s = weir_typed_string(b, 0, r); /* present: required */
    text.len = 0;
    uint8_t *t = weir_buf_reserve(&text, s.len);
    for (size_t i = 0; i < s.len; i++) {
        uint8_t c = s.ptr[i];
        t[i] = c >= 'a' && c <= 'z' ? c - ('a' - 'A') : c;
    }
    weir_patch_begin(out, 0, NULL, 0, 0);
    weir_patch_set_string(out, (const char *)field.data, t, s.len);
}
WEIR_TYPED_MAP(upper);
