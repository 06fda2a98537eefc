/*
 * fail_on is a conformance plugin (map) for per-record errors. A record
 * whose raw value equals the configured bad value is rejected with the
 * error "bad input: <value>"; every other record is kept unchanged. An
 * absent value compares as empty.
 *
 * Config: {"bad": "bad"}; the default bad value is "bad".
 */
#include <string.h>

#include "weir.h"

static weir_buf bad;
static weir_buf msg;

static const char *init(const uint8_t *config, size_t len) {
    weir_buf_str(&bad, "bad");
    return weir_config_string(config, len, "bad", &bad);
}
WEIR_INIT(init);

static void fail_on(const weir_record *r, weir_out *out) {
    if (r->value_len != bad.len || (bad.len && memcmp(r->value, bad.data, bad.len) != 0))
        return; /* kept */
    msg.len = 0;
    weir_buf_str(&msg, "bad input: ");
    weir_buf_append(&msg, r->value, r->value_len);
    weir_reject_n(out, (const char *)msg.data, msg.len);
}
WEIR_MAP(fail_on);
