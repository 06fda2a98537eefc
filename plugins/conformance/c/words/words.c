/*
 * words is a conformance plugin (flat_map). It splits the raw input value
 * on ASCII whitespace (space, \t, \n, \v, \f, \r) and emits each non-empty
 * word as a record value, in order, inheriting the input's key, timestamp
 * and headers. The value is not parsed as JSON.
 */
#include "weir.h"

static int is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static void words(const weir_record *r, weir_out *out) {
    const uint8_t *v = r->value;
    size_t n = r->value_len, i = 0;
    while (i < n) {
        while (i < n && is_space(v[i]))
            i++;
        size_t start = i;
        while (i < n && !is_space(v[i]))
            i++;
        if (i > start)
            weir_emit(out, v + start, i - start);
    }
}
WEIR_FLAT_MAP(words);
