/*
 * trap_on is a conformance plugin (map) for instance failure. When a
 * record's raw value equals the configured trap value, the plugin executes
 * a WebAssembly trap (unreachable), which kills the instance in the middle
 * of the batch call; every other record is kept unchanged.
 *
 * Config: {"trap": "trap"}; the default trap value is "trap".
 */
#include <string.h>

#include "weir.h"

static weir_buf trap;

static const char *init(const uint8_t *config, size_t len) {
    weir_buf_str(&trap, "trap");
    return weir_config_string(config, len, "trap", &trap);
}
WEIR_INIT(init);

static void trap_on(const weir_record *r, weir_out *out) {
    (void)out;
    if (r->value_len == trap.len && (trap.len == 0 || memcmp(r->value, trap.data, trap.len) == 0))
        __builtin_trap();
}
WEIR_MAP(trap_on);
