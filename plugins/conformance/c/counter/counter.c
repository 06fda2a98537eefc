/*
 * counter is a conformance plugin (map) that exercises keyed state. It
 * keeps a value state "count" (an int64) per record key; for each record it
 * increments the count and outputs
 *
 *     {"key":<the record key as a JSON string>,"count":<the new count>}
 *
 * A record without a key gets "key":null, and the count the host keeps for
 * key-less records.
 */
#include "weir.h"

static void counter(const weir_record *r, weir_out *out) {
    int64_t n;
    int s = weir_value_get_i64(r, "count", &n);
    if (s < 0) {
        weir_reject(out, weir_status_text(s));
        return;
    }
    n++;
    if ((s = weir_value_put_i64(r, "count", n)) < 0) {
        weir_reject(out, weir_status_text(s));
        return;
    }
    weir_json_writer w = weir_json_writer_on(weir_value_begin(out));
    weir_json_begin_object(&w);
    weir_json_key(&w, "key");
    if (r->key)
        weir_json_write_string(&w, r->key, r->key_len);
    else
        weir_json_write_null(&w);
    weir_json_key(&w, "count");
    weir_json_write_int(&w, n);
    weir_json_end_object(&w);
    weir_value_end(out);
}
WEIR_MAP(counter);
