/*
 * typed_uppercase is a conformance plugin (map) of the typed-field
 * convention (ABI section 14), doing what uppercase does. It declares one
 * string field at init, required and strict, so the host dead-letters a
 * record where it is missing, null or not a string, and answers the others
 * with a patch setting it upper-cased (ASCII letters only); the host keeps
 * every other byte of the record. See plugins/conformance/README.md.
 *
 * Config: {"field": "name"}; the default field is "name".
 */
#include "weir.h"

static weir_buf field; /* the field's path, NUL-terminated */
static weir_buf text;  /* scratch: the upper-cased field */

WEIR_FIELDS();

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

static void uppercase(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
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
WEIR_TYPED_MAP(uppercase);
