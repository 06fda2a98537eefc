/*
 * The JSON work of the uppercase conformance plugin
 * (plugins/conformance/c/uppercase) without the ABI around it: find a
 * string field in a JSON object (validating the whole object), decode it,
 * upper-case it and write the object back with it. Built natively and for
 * wasm32-wasi from the same source, it separates what the SDK's code costs
 * from what running it as WebAssembly under wazero costs:
 *
 *     go test -run='^$' -bench=CSDKTransform ./host/internal/pluginbuild/
 *
 * Usage: transform_bench N  (runs N records, prints a checksum).
 */
#include <stdio.h>
#include <stdlib.h>

#include "weir.h"

/* The same 512 sensor readings as the host's transform benchmarks. */
static char docs[512][128];
static size_t lens[512];
static weir_buf text, dst;

int main(int argc, char **argv) {
    static const char *kinds[] = {"temp", "humidity", "pressure"};
    for (int i = 0; i < 512; i++) {
        int v = 100 + i % 50;
        lens[i] = (size_t)snprintf(docs[i], sizeof docs[i], "{\"id\": \"%d\", \"kind\": \"%s\", \"value\": %.2f, \"timestamp\": %lld}",
                                   v, kinds[i % 3], 20.0 + (i % 5) * 0.25, 1722960137000LL + i);
    }
    long n = argc > 1 ? atol(argv[1]) : 512;
    size_t sum = 0;
    for (long k = 0; k < n; k++) {
        const uint8_t *d = (const uint8_t *)docs[k & 511];
        size_t len = lens[k & 511];
        weir_json_value v;
        if (weir_json_get_n(d, len, "kind", 4, &v) || v.kind != WEIR_JSON_STRING) {
            fprintf(stderr, "record %ld: no string field kind\n", k);
            return 1;
        }
        text.len = 0;
        weir_json_string(&v, &text);
        for (size_t i = 0; i < text.len; i++)
            if (text.data[i] >= 'a' && text.data[i] <= 'z')
                text.data[i] -= 'a' - 'A';
        dst.len = 0;
        weir_buf_append(&dst, d, v.offset);
        weir_json_quote(&dst, text.data, text.len);
        weir_buf_append(&dst, v.raw + v.len, len - v.offset - v.len);
        sum += dst.len + dst.data[v.offset + 1];
    }
    printf("%zu\n", sum);
    return 0;
}
