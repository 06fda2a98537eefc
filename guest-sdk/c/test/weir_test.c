/*
 * Unit tests of the C SDK's JSON helpers and buffers, and of what the
 * registration macros report in weir_ops:
 *
 *     cc -O2 -Wall -I. -o /tmp/weir_test test/weir_test.c weir.c -lm && /tmp/weir_test   (in guest-sdk/c)
 *
 * The suite runs them both natively and built for wasm32-wasi under wazero
 * (go test -run CSDKUnit ./host/internal/pluginbuild/). The ABI paths are
 * tested under the host by the conformance suite
 * (go test ./plugins/conformance/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

static int failures;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            failures++;                                                       \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

static const uint8_t *u(const char *s) { return (const uint8_t *)s; }

static void test_get(void) {
    struct {
        const char *doc, *name;
        int err;              /* 1: a syntax error */
        weir_json_kind kind;  /* when found */
        const char *raw;      /* when found */
    } tests[] = {
        {"{\"name\":\"ada\",\"n\":1}", "name", 0, WEIR_JSON_STRING, "\"ada\""},
        {"{ \"id\" : 7 , \"name\" : \"Grace Hopper\" }", "name", 0, WEIR_JSON_STRING, "\"Grace Hopper\""},
        {"{\"name\":\"a\",\"name\":\"b\"}", "name", 0, WEIR_JSON_STRING, "\"b\""},
        {"{\"n\":1}", "name", 0, WEIR_JSON_NONE, NULL},
        {"[1,2]", "name", 0, WEIR_JSON_NONE, NULL},
        {"not json", "name", 1, 0, NULL},
        {"{\"n\":", "n", 1, 0, NULL},
        {"{\"n\":4.0}", "n", 0, WEIR_JSON_NUMBER, "4.0"},
        {"{\"n\":-0.5e+3}", "n", 0, WEIR_JSON_NUMBER, "-0.5e+3"},
        {"{\"n\":01}", "n", 1, 0, NULL},
        {"{\"n\":1.}", "n", 1, 0, NULL},
        {"{\"n\":-}", "n", 1, 0, NULL},
        {"{\"a\":{\"n\":1},\"n\":[1,{\"x\":null}]}", "n", 0, WEIR_JSON_ARRAY, "[1,{\"x\":null}]"},
        {"{\"a\":{\"n\":1}}", "n", 0, WEIR_JSON_NONE, NULL},
        {"{\"\\u006e\":true}", "n", 0, WEIR_JSON_BOOL, "true"},
        {"{\"n\":tru}", "n", 1, 0, NULL},
        {"{\"n\":null} x", "n", 1, 0, NULL},
        {"{\"n\":\"a\tb\"}", "n", 1, 0, NULL},
        {"{\"n\":\"\\x\"}", "n", 1, 0, NULL},
        {"{\"n\":1,}", "n", 1, 0, NULL},
        {"{}", "n", 0, WEIR_JSON_NONE, NULL},
        {" {} ", "n", 0, WEIR_JSON_NONE, NULL},
        {"", "n", 1, 0, NULL},
        {"{\"caf\xc3\xa9\":1}", "caf\xc3\xa9", 0, WEIR_JSON_NUMBER, "1"},
    };
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        weir_json_value v;
        const char *err = weir_json_get(u(tests[t].doc), strlen(tests[t].doc), tests[t].name, &v);
        if (tests[t].err) {
            CHECK(err != NULL, "get(%s): no error", tests[t].doc);
            continue;
        }
        CHECK(err == NULL, "get(%s): %s", tests[t].doc, err);
        CHECK(v.kind == tests[t].kind, "get(%s): kind %d, want %d", tests[t].doc, v.kind, tests[t].kind);
        if (tests[t].raw) {
            CHECK(v.len == strlen(tests[t].raw) && memcmp(v.raw, tests[t].raw, v.len) == 0, "get(%s): raw %.*s",
                  tests[t].doc, (int)v.len, v.raw);
            CHECK(v.raw == u(tests[t].doc) + v.offset, "get(%s): offset", tests[t].doc);
        }
    }
    /* Nesting: 10000 levels are fine, 10001 are not. */
    for (int depth = 10000; depth <= 10001; depth++) {
        char *doc = malloc(2 * depth + 1);
        memset(doc, '[', depth);
        memset(doc + depth, ']', depth);
        doc[2 * depth] = 0;
        weir_json_value v;
        const char *err = weir_json_parse(u(doc), 2 * depth, &v);
        CHECK((err == NULL) == (depth == 10000), "depth %d: %s", depth, err ? err : "ok");
        free(doc);
    }
}

static void test_string(void) {
    struct {
        const char *json, *want;
    } tests[] = {
        {"\"ada\"", "ada"},
        {"\"caf\\u00e9 \\\"x\\\"\"", "caf\xc3\xa9 \"x\""},
        {"\"tab\\there\"", "tab\there"},
        {"\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80"},
        {"\"\\ud83d\"", "\xef\xbf\xbd"},
        {"\"\\ude00x\"", "\xef\xbf\xbdx"},
        {"\"a\xffz\"", "a\xef\xbf\xbdz"},
        {"\"\xed\xa0\x80\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\"\\/\\b\\f\\n\\r\"", "/\b\f\n\r"},
    };
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        weir_json_value v;
        const char *err = weir_json_parse(u(tests[t].json), strlen(tests[t].json), &v);
        CHECK(err == NULL && v.kind == WEIR_JSON_STRING, "parse(%s): %s", tests[t].json, err);
        weir_buf b = {0};
        weir_json_string(&v, &b);
        CHECK(b.len == strlen(tests[t].want) && memcmp(b.data, tests[t].want, b.len) == 0, "string(%s) = %.*s",
              tests[t].json, (int)b.len, b.data);
        CHECK(weir_json_string_eq(&v, tests[t].want, strlen(tests[t].want)), "string_eq(%s)", tests[t].json);
        weir_buf_free(&b);
    }
}

static void test_quote(void) {
    struct {
        const char *in;
        size_t len;
        const char *want;
    } tests[] = {
        {"ADA", 3, "\"ADA\""},
        {"q\"", 2, "\"q\\\"\""},
        {"a\\b", 3, "\"a\\\\b\""},
        {"\t\n\r\b\f\x01\x1f", 7, "\"\\t\\n\\r\\b\\f\\u0001\\u001f\""},
        {"\0", 1, "\"\\u0000\""},
        {"CAF\xc3\xa9", 5, "\"CAF\xc3\xa9\""},
        {"a\xff", 2, "\"a\\ufffd\""},
        {"\x7f", 1, "\"\x7f\""},
        {"abcdefghij\"klmnopqrstuvwxyz\x01 0123456789caf\xc3\xa9 \xff" "0123456789", 56,
         "\"abcdefghij\\\"klmnopqrstuvwxyz\\u0001 0123456789caf\xc3\xa9 \\ufffd0123456789\""},
    };
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        weir_buf b = {0};
        weir_json_quote(&b, tests[t].in, tests[t].len);
        CHECK(b.len == strlen(tests[t].want) && memcmp(b.data, tests[t].want, b.len) == 0, "quote(%s) = %.*s",
              tests[t].want, (int)b.len, b.data);
        weir_buf_free(&b);
    }
}

static void test_numbers(void) {
    struct {
        const char *json;
        int ierr;
        int64_t i;
        int ferr;
        double f;
    } tests[] = {
        {"4", 0, 4, 0, 4},
        {"-2", 0, -2, 0, -2},
        {"0", 0, 0, 0, 0},
        {"4.0", -1, 0, 0, 4},
        {"4e0", -1, 0, 0, 4},
        {"9223372036854775807", 0, INT64_MAX, 0, 9223372036854775807.0},
        {"-9223372036854775808", 0, INT64_MIN, 0, -9223372036854775808.0},
        {"9223372036854775808", -1, 0, 0, 9223372036854775808.0},
        {"99999999999999999999", -1, 0, 0, 1e20},
        {"1e400", -1, 0, -2, 0},
        {"1e-400", -1, 0, 0, 0},
        {"2.5", -1, 0, 0, 2.5},
    };
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        weir_json_value v;
        const char *err = weir_json_parse(u(tests[t].json), strlen(tests[t].json), &v);
        CHECK(err == NULL, "parse(%s): %s", tests[t].json, err);
        int64_t i;
        int ie = weir_json_int(&v, &i);
        CHECK(ie == tests[t].ierr && (ie || i == tests[t].i), "int(%s) = %d, %lld", tests[t].json, ie, (long long)i);
        double f;
        int fe = weir_json_float(&v, &f);
        CHECK(fe == tests[t].ferr && (fe || f == tests[t].f), "float(%s) = %d, %g", tests[t].json, fe, f);
    }
    weir_json_value s = {WEIR_JSON_STRING, u("\"4\""), 3, 0, false};
    int64_t i;
    double f;
    CHECK(weir_json_int(&s, &i) == -1 && weir_json_float(&s, &f) == -1, "a string is not a number");

    struct {
        double f;
        const char *want;
    } floats[] = {
        {1.75, "1.75"}, {3.0, "3.0"}, {2.5, "2.5"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
        {0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e-5, "1.5e-05"}, {-0.0, "-0.0"}, {0.1, "0.1"},
        {10.700000000000003, "10.700000000000003"}, {1e300, "1e+300"}, {123456789.125, "123456789.125"},
        {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
    };
    for (size_t t = 0; t < sizeof floats / sizeof floats[0]; t++) {
        weir_buf b = {0};
        weir_json_float_text(&b, floats[t].f);
        CHECK(b.len == strlen(floats[t].want) && memcmp(b.data, floats[t].want, b.len) == 0, "float_text(%s) = %.*s",
              floats[t].want, (int)b.len, b.data);
        weir_buf_free(&b);
    }
}

static void test_writer_and_config(void) {
    weir_buf b = {0};
    weir_json_writer w = weir_json_writer_on(&b);
    weir_json_begin_object(&w);
    weir_json_key(&w, "key");
    weir_json_write_string(&w, "q\"", 2);
    weir_json_key(&w, "count");
    weir_json_write_int(&w, -3);
    weir_json_key(&w, "l");
    weir_json_begin_array(&w);
    weir_json_write_null(&w);
    weir_json_write_bool(&w, true);
    weir_json_write_float(&w, 0.5);
    weir_json_end_array(&w);
    weir_json_end_object(&w);
    const char *want = "{\"key\":\"q\\\"\",\"count\":-3,\"l\":[null,true,0.5]}";
    CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0, "writer: %.*s", (int)b.len, b.data);

    struct {
        const char *config;
        const char *want; /* NULL: an error */
    } configs[] = {
        {"", "dflt"}, {"  ", "dflt"}, {"null", "dflt"}, {"{}", "dflt"}, {"{\"field\":null}", "dflt"},
        {"{\"field\":\"city\"}", "city"}, {"{\"field\":5}", NULL}, {"{\"field\":", NULL}, {"[1]", "dflt"},
    };
    for (size_t t = 0; t < sizeof configs / sizeof configs[0]; t++) {
        b.len = 0;
        weir_buf_str(&b, "dflt");
        const char *err = weir_config_string(u(configs[t].config), strlen(configs[t].config), "field", &b);
        if (!configs[t].want) {
            CHECK(err != NULL, "config %s: no error", configs[t].config);
            continue;
        }
        CHECK(err == NULL && b.len == strlen(configs[t].want) && memcmp(b.data, configs[t].want, b.len) == 0,
              "config %s: %s, %.*s", configs[t].config, err, (int)b.len, b.data);
    }
    b.len = 0;
    const char *err = weir_config_string(u("{\"field\":5}"), 11, "field", &b);
    CHECK(err && strcmp(err, "config: field field must be a string, not number") == 0, "config error: %s", err);

    b.len = 0;
    weir_state_key(&b, 'm', "LUT", 3, "temp", 4);
    CHECK(b.len == 9 && memcmp(b.data, "m\x03LUTtemp", 9) == 0, "map state key");
    b.len = 0;
    weir_state_key(&b, 'v', "count", 5, NULL, 0);
    CHECK(b.len == 6 && memcmp(b.data, "vcount", 6) == 0, "value state key");
    weir_buf_free(&b);
}

/* test_fast_matches_slow mutates documents byte by byte and checks that
 * the fast and slow lookups agree (the slow path runs when a document is
 * not a flat object, so compare get with each). */
static bool each_find(const weir_json_value *k, const weir_json_value *v, void *ctx) {
    weir_json_value *found = ctx;
    if (weir_json_string_eq(k, "n", 1))
        *found = *v;
    return true;
}

static void test_fast_matches_slow(void) {
    const char *seeds[] = {
        "{\"id\": \"101\", \"n\": \"temp\", \"value\": 20.25, \"t\": [1, {\"n\": 2}], \"z\": null}",
        "{\"n\":-1.5e3,\"m\":true,\"n\":false}",
        "{\"\\u006e\":\"x\\u00e9\\n\"}",
        "{\"a_long_key_name\": \"abcdefghijklmnop\\\"qrstuvwxyz\", \"n\": 12345678901234567.125e-10}",
        "{\"n\":\"caf\xc3\xa9 caf\xc3\xa9 caf\xc3\xa9 0123456789\",\"x\":[\"0123456789abcdef\"]}",
    };
    const char alphabet[] = "{}[]\",:\\ -0123456789.eEtrufalsn\t\x01\xff";
    unsigned seed = 1;
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t n = strlen(seeds[s]);
        char *doc = malloc(n + 1);
        for (int iter = 0; iter < 20000; iter++) {
            memcpy(doc, seeds[s], n + 1);
            int muts = iter % 3;
            for (int m = 0; m < muts; m++) {
                seed = seed * 1103515245 + 12345;
                size_t pos = (seed >> 8) % n;
                seed = seed * 1103515245 + 12345;
                doc[pos] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
            }
            weir_json_value a, b = {0};
            const char *ea = weir_json_get(u(doc), n, "n", &a);
            bool ok = ea == NULL;
            const char *eb = weir_json_each(u(doc), n, each_find, &b);
            bool object = false;
            for (size_t i = 0; i < n; i++) {
                if (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r')
                    continue;
                object = doc[i] == '{';
                break;
            }
            if (!object)
                continue;
            CHECK(ok == (eb == NULL), "%s: get %s, each %s", doc, ea ? ea : "ok", eb ? eb : "ok");
            if (ok && eb == NULL)
                CHECK(a.kind == b.kind && a.len == b.len && a.offset == b.offset, "%s: get and each disagree", doc);
        }
        free(doc);
    }
}

/* The registration macros record their operations for weir_ops: this
 * test program registers a map and a filter. */
static void ops_map(const weir_record *r, weir_out *out) { (void)r, (void)out; }
static bool ops_filter(const weir_record *r, weir_out *out) { return (void)r, (void)out, true; }
WEIR_MAP(ops_map);
WEIR_FILTER(ops_filter);

static void test_ops(void) {
    uint32_t got = weir__export_ops();
    CHECK(got == (WEIR_OP_MAP | WEIR_OP_FILTER), "weir_ops = %u, want map and filter (%u)", got, WEIR_OP_MAP | WEIR_OP_FILTER);
}

int main(void) {
    test_ops();
    test_get();
    test_string();
    test_quote();
    test_numbers();
    test_writer_and_config();
    test_fast_matches_slow();
    if (failures) {
        fprintf(stderr, "FAIL: %d failures\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
