/*
 * Unit tests of the typed-field convention (ABI section 14): the field
 * declaration, the typed batch reader, the typed output writer, and the
 * typed map, flat_map, filter and aggregate add calls run on frames in
 * memory. Included by weir_test.c, which runs them (see there for how).
 *
 * The worked example's bytes are ABI.md section 14.6's. The vec_* frames
 * were written by package abi's own encoders (AppendTypedBatch,
 * TypedOutputWriter and AppendTypedAdd, in a short Go program), so they
 * hold the Go definition's layout, padding included.
 */

/* A typed batch of 3 records and 5 fields (AppendTypedBatch):
 *
 *   record  timestamp      key    price (int)   ratio (float)  ok (bool)     name (string)          doc (raw)
 *   0       5              "k1"   INT64_MIN     2.5            true          "café"                 {"a":[1,2]}
 *   1       -1             none   null          mismatch       false         missing                null
 *   2       1700000000000  ""     missing       -0.1           mismatch      "日本😀"                "x" (with quotes)
 */
static const uint8_t vec_batch3[334] = {
    0x03, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x78, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00,
    0x98, 0x00, 0x00, 0x00, 0xa8, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xb0, 0x00, 0x00, 0x00,
    0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0xd0, 0x00, 0x00, 0x00,
    0xd8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0xf0, 0x00, 0x00, 0x00,
    0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
    0x08, 0x01, 0x00, 0x00, 0x18, 0x01, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x28, 0x01, 0x00, 0x00,
    0x30, 0x01, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x6b, 0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x40,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0xbf,
    0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x00, 0x00, 0x63, 0x61, 0x66, 0xc3, 0xa9, 0xe6, 0x97, 0xa5,
    0xe6, 0x9c, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00, 0x0e, 0x00, 0x00, 0x00,
    0x7b, 0x22, 0x61, 0x22, 0x3a, 0x5b, 0x31, 0x2c, 0x32, 0x5d, 0x7d, 0x22, 0x78, 0x22,
};

/* A typed output frame (TypedOutputWriter): keep 0; patch 1 setting a to
 * null, b to -7, c to 0.1, d to true, d2 to false, e to "café 😀", f to
 * [1,{"x":2}] and removing g\.x.h; error 2 "bad ✓"; patch 3 new, key "k",
 * timestamp -42, setting the whole value to {}; patch 3 setting no key;
 * patch 3 with timestamp 2^40 setting n to INT64_MIN; keep 4. */
static const uint8_t vec_output[230] = {
    0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x08,
    0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x61, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x62,
    0x01, 0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x00, 0x00, 0x00, 0x63, 0x02,
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, 0x01, 0x01, 0x00, 0x00, 0x00, 0x64, 0x03, 0x01,
    0x01, 0x02, 0x00, 0x00, 0x00, 0x64, 0x32, 0x03, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x65, 0x04,
    0x0a, 0x00, 0x00, 0x00, 0x63, 0x61, 0x66, 0xc3, 0xa9, 0x20, 0xf0, 0x9f, 0x98, 0x80, 0x01, 0x01,
    0x00, 0x00, 0x00, 0x66, 0x05, 0x0b, 0x00, 0x00, 0x00, 0x5b, 0x31, 0x2c, 0x7b, 0x22, 0x78, 0x22,
    0x3a, 0x32, 0x7d, 0x5d, 0x02, 0x06, 0x00, 0x00, 0x00, 0x67, 0x5c, 0x2e, 0x78, 0x2e, 0x68, 0x02,
    0x02, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x62, 0x61, 0x64, 0x20, 0xe2, 0x9c, 0x93, 0x03,
    0x03, 0x00, 0x00, 0x00, 0x07, 0x01, 0x00, 0x00, 0x00, 0x6b, 0xd6, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x05, 0x02, 0x00, 0x00, 0x00,
    0x7b, 0x7d, 0x03, 0x03, 0x00, 0x00, 0x00, 0x02, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x03, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00,
    0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x6e, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x80, 0x00, 0x04, 0x00, 0x00, 0x00,
};

/* A typed add frame (AppendTypedAdd) of three groups, over vec_batch3's
 * records: accumulator 10 (8 bytes) with records 0 and 1, an empty one with
 * none, and "xyz" with record 2. */
static const uint8_t vec_add[374] = {
    0x03, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x78, 0x79, 0x7a, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00, 0x98, 0x00, 0x00, 0x00, 0xa8, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0xb0, 0x00, 0x00, 0x00, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0xd0, 0x00, 0x00, 0x00, 0xd8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0xf0, 0x00, 0x00, 0x00, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x08, 0x01, 0x00, 0x00, 0x18, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x28, 0x01, 0x00, 0x00, 0x30, 0x01, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x00, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x6b, 0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0xbf, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x0f, 0x00, 0x00, 0x00,
    0x63, 0x61, 0x66, 0xc3, 0xa9, 0xe6, 0x97, 0xa5, 0xe6, 0x9c, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00,
    0x0b, 0x00, 0x00, 0x00, 0x0e, 0x00, 0x00, 0x00, 0x7b, 0x22, 0x61, 0x22, 0x3a, 0x5b, 0x31, 0x2c,
    0x32, 0x5d, 0x7d, 0x22, 0x78, 0x22,
};

/* The fields vec_batch3 declares, in order. */
enum { F_PRICE, F_RATIO, F_OK, F_NAME, F_DOC };

static bool bytes_are(weir_bytes b, const void *p, size_t n) {
    return b.ptr && b.len == n && (n == 0 || memcmp(b.ptr, p, n) == 0);
}

static bool frame_is(weir_bytes got, const void *want, size_t n) {
    return got.len == n && memcmp(got.ptr, want, n) == 0;
}

/* show prints the first difference between two frames. */
static void show(const char *what, weir_bytes got, const uint8_t *want, size_t n) {
    size_t i = 0;
    while (i < got.len && i < n && got.ptr[i] == want[i])
        i++;
    fprintf(stderr, "  %s: %zu bytes, want %zu; first difference at byte %zu\n", what, got.len, n, i);
}

#define CHECK_FRAME(got, want, n, what)                                       \
    do {                                                                      \
        weir_bytes got_ = (got);                                              \
        CHECK(frame_is(got_, (want), (n)), "%s: frame differs", (what));      \
        if (!frame_is(got_, (want), (n)))                                     \
            show((what), got_, (const uint8_t *)(want), (n));                 \
    } while (0)

/* A builder for expected frames. */
static void b8(weir_buf *b, uint8_t v) { weir_buf_byte(b, v); }
static void b32(weir_buf *b, uint32_t v) {
    for (int i = 0; i < 4; i++)
        weir_buf_byte(b, (uint8_t)(v >> (8 * i)));
}
static void bstr(weir_buf *b, const char *s) {
    b32(b, (uint32_t)strlen(s));
    weir_buf_str(b, s);
}

/* ---------------------------------------------------------------------- */
/* The worked example of ABI.md section 14.6                              */

static const uint8_t example_decl[] = {
    0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x02, 0x05, 0x00, 0x00, 0x00, 0x70, 0x72, 0x69, 0x63, 0x65,
};

static const uint8_t example_batch[104] = {
    0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,                                                 /* 00 */
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x38, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 08 */
    0x04, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x50, 0x00, 0x00, 0x00, /* 18 */
    0x01, 0x00, 0x00, 0x00, 0x58, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 28 */
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                                                 /* 38 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                                                 /* 40 */
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,                                                 /* 48 */
    0x6b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                                                 /* 50 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                                                 /* 58 */
    0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                                                 /* 60 */
};

static const uint8_t example_output[] = {
    0x01, 0x00, 0x00, 0x00,                                     /* count = 1 */
    0x03,                                                       /* kind = patch */
    0x00, 0x00, 0x00, 0x00,                                     /* input_index = 0 */
    0x00,                                                       /* flags = 0 */
    0x01, 0x00, 0x00, 0x00,                                     /* op_count = 1 */
    0x01,                                                       /* op = set */
    0x05, 0x00, 0x00, 0x00, 0x70, 0x72, 0x69, 0x63, 0x65,       /* "price" */
    0x01,                                                       /* type = int */
    0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,             /* 24 */
};

/* double_price is the typed_double conformance plugin's function: field 0,
 * an int, doubled; an overflow rejects the record. */
static void double_price(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    if (weir_typed_status(b, 0, r) != WEIR_VALUE_PRESENT)
        return;
    int64_t doubled;
    if (__builtin_mul_overflow(weir_typed_int(b, 0, r), 2, &doubled)) {
        weir_typed_reject(out, "price overflows");
        return;
    }
    weir_patch_begin(out, 0, NULL, 0, 0);
    weir_patch_set_int(out, "price", doubled);
}

/* The SDK reads frames wherever the host (or a test) puts them: run the
 * example from an 8-aligned copy and from a misaligned one. */
static uint64_t aligned_store[64];

static void test_typed_example(void) {
    for (size_t shift = 0; shift <= 3; shift += 3) {
        uint8_t *frame = (uint8_t *)aligned_store + shift;
        memcpy(frame, example_batch, sizeof example_batch);
        weir_typed_batch b;
        const char *err = weir_typed_batch_read(&b, frame, sizeof example_batch);
        CHECK(err == NULL, "example batch: %s", err);
        if (err)
            continue;
        CHECK(b.count == 1 && b.fields == 1, "example batch: %u records, %u fields", b.count, b.fields);
        CHECK(weir_typed_timestamp(&b, 0) == 5, "example timestamp");
        CHECK(bytes_are(weir_typed_key(&b, 0), "k", 1), "example key");
        CHECK(weir_typed_status(&b, 0, 0) == WEIR_VALUE_PRESENT, "example status");
        CHECK(weir_typed_int(&b, 0, 0) == 12, "example price %lld", (long long)weir_typed_int(&b, 0, 0));
        CHECK_FRAME(weir__typed_map(frame, sizeof example_batch, double_price), example_output, sizeof example_output,
                    "example output");
    }
    /* The writer alone writes the same frame. */
    weir_typed_out o = {0};
    weir_typed_out_reset(&o);
    weir_typed_out_record(&o, 0);
    weir_patch_begin(&o, 0, NULL, 0, 0);
    weir_patch_set_int(&o, "price", 24);
    CHECK_FRAME(weir_typed_out_frame(&o), example_output, sizeof example_output, "example output, writer");
    weir_typed_out_free(&o);
}

/* ---------------------------------------------------------------------- */
/* The declaration                                                         */

static void typed_noop_map(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) { (void)b, (void)r, (void)out; }
static void typed_agg_create(weir_buf *acc) { (void)acc; }
static void typed_agg_add_fn(weir_buf *acc, const weir_typed_batch *b, uint32_t r, weir_out *out) {
    (void)acc, (void)b, (void)r, (void)out;
}
static const char *typed_agg_merge(weir_bytes a, weir_bytes b, weir_buf *dst) { return (void)a, (void)b, (void)dst, NULL; }
static const char *typed_agg_result(weir_bytes acc, weir_buf *dst, bool *null) {
    return (void)acc, (void)dst, (void)null, NULL;
}
/* This program registers typed functions for flat_map and aggregate (and
 * raw ones for map and filter, in weir_test.c), and declares its fields
 * in test_typed_decl with what WEIR_FIELDS's constructor calls, so that
 * test_ops sees the raw operations before and the typed ones after. */
WEIR_TYPED_FLAT_MAP(typed_noop_map);
WEIR_TYPED_AGGREGATE(typed_agg_create, typed_agg_add_fn, typed_agg_merge, typed_agg_result);

static const weir_field_decl example_fields[] = {{"price", WEIR_TYPE_INT, WEIR_FIELD_STRICT}};

static void test_typed_decl(void) {
    weir__set_fields(example_fields, 1);
    CHECK_FRAME(weir__fields_frame(), example_decl, sizeof example_decl, "example declaration");
    uint32_t ops = weir__export_ops();
    CHECK(ops == (WEIR_OP_FLAT_MAP | WEIR_OP_AGGREGATE), "weir_ops of a typed module = %u, want flat_map and aggregate",
          ops);

    /* Fields declared at init follow the table's, their paths copied. */
    char path[32];
    strcpy(path, "user\\.name.first");
    int i = weir_declare_field(path, WEIR_TYPE_STRING, WEIR_FIELD_REQUIRED | WEIR_FIELD_STRICT);
    memset(path, 'x', sizeof path - 1);
    int j = weir_declare_field("caf\xc3\xa9", WEIR_TYPE_RAW, 0);
    CHECK(i == 1 && j == 2, "declared fields %d and %d, want 1 and 2", i, j);
    weir_buf want = {0};
    b32(&want, 1);
    b32(&want, 3);
    b8(&want, WEIR_TYPE_INT), b8(&want, WEIR_FIELD_STRICT), bstr(&want, "price");
    b8(&want, WEIR_TYPE_STRING), b8(&want, 3), bstr(&want, "user\\.name.first");
    b8(&want, WEIR_TYPE_RAW), b8(&want, 0), bstr(&want, "caf\xc3\xa9");
    CHECK_FRAME(weir__fields_frame(), want.data, want.len, "declaration with init fields");
    weir_buf_free(&want);
}

/* ---------------------------------------------------------------------- */
/* Reading                                                                 */

static void test_typed_reader(void) {
    weir_typed_batch b;
    const char *err = weir_typed_batch_read(&b, vec_batch3, sizeof vec_batch3);
    CHECK(err == NULL, "vec_batch3: %s", err);
    if (err)
        return;
    CHECK(b.count == 3 && b.fields == 5, "vec_batch3: %u records, %u fields", b.count, b.fields);

    CHECK(weir_typed_timestamp(&b, 0) == 5 && weir_typed_timestamp(&b, 1) == -1 &&
              weir_typed_timestamp(&b, 2) == 1700000000000,
          "timestamps");
    CHECK(bytes_are(weir_typed_key(&b, 0), "k1", 2), "key 0");
    weir_bytes k1 = weir_typed_key(&b, 1);
    CHECK(k1.ptr == NULL && k1.len == 0, "key 1: none");
    CHECK(bytes_are(weir_typed_key(&b, 2), "", 0), "key 2: present and empty");

    static const int want_status[3][5] = {
        {WEIR_VALUE_PRESENT, WEIR_VALUE_PRESENT, WEIR_VALUE_PRESENT, WEIR_VALUE_PRESENT, WEIR_VALUE_PRESENT},
        {WEIR_VALUE_NULL, WEIR_VALUE_MISMATCH, WEIR_VALUE_PRESENT, WEIR_VALUE_MISSING, WEIR_VALUE_NULL},
        {WEIR_VALUE_MISSING, WEIR_VALUE_PRESENT, WEIR_VALUE_MISMATCH, WEIR_VALUE_PRESENT, WEIR_VALUE_PRESENT},
    };
    for (uint32_t r = 0; r < 3; r++)
        for (uint32_t f = 0; f < 5; f++)
            CHECK(weir_typed_status(&b, f, r) == want_status[r][f], "status of field %u, record %u: %d, want %d", f,
                  r, weir_typed_status(&b, f, r), want_status[r][f]);

    CHECK(weir_typed_int(&b, F_PRICE, 0) == INT64_MIN, "price 0");
    CHECK(weir_typed_int(&b, F_PRICE, 1) == 0 && weir_typed_int(&b, F_PRICE, 2) == 0, "price of null, missing: 0");
    CHECK(weir_typed_float(&b, F_RATIO, 0) == 2.5, "ratio 0");
    CHECK(weir_typed_float(&b, F_RATIO, 1) == 0, "ratio 1 (mismatch): 0");
    CHECK(weir_typed_float(&b, F_RATIO, 2) == -0.1, "ratio 2 = %.17g", weir_typed_float(&b, F_RATIO, 2));
    CHECK(weir_typed_bool(&b, F_OK, 0) == true && weir_typed_bool(&b, F_OK, 1) == false &&
              weir_typed_bool(&b, F_OK, 2) == false,
          "ok");
    CHECK(bytes_are(weir_typed_string(&b, F_NAME, 0), "caf\xc3\xa9", 5), "name 0");
    CHECK(bytes_are(weir_typed_string(&b, F_NAME, 1), "", 0), "name 1 (missing): empty");
    CHECK(bytes_are(weir_typed_string(&b, F_NAME, 2), "\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x98\x80", 10), "name 2");
    CHECK(bytes_are(weir_typed_raw(&b, F_DOC, 0), "{\"a\":[1,2]}", 11), "doc 0");
    CHECK(bytes_are(weir_typed_raw(&b, F_DOC, 1), "", 0), "doc 1 (null): empty");
    CHECK(bytes_are(weir_typed_raw(&b, F_DOC, 2), "\"x\"", 3), "doc 2");

    weir_record rec = weir_typed_record(&b, 2);
    CHECK(rec.index_ == 2 && rec.timestamp == 1700000000000 && rec.key && rec.key_len == 0 && rec.value == NULL &&
              rec.header_count == 0,
          "typed record 2");
    rec = weir_typed_record(&b, 1);
    CHECK(rec.index_ == 1 && rec.key == NULL && rec.timestamp == -1, "typed record 1");

    /* An empty batch: no records, no fields. */
    static const uint8_t empty_batch[] = {
        0, 0, 0, 0, 0, 0, 0, 0,                                              /* 0 records, 0 fields */
        1, 0, 0, 0, 0, 0, 0, 0, 0x28, 0, 0, 0, 0, 0, 0, 0,                   /* timestamps at 0x28 */
        4, 0, 0, 0, 0x28, 0, 0, 0, 0x28, 0, 0, 0, 0x30, 0, 0, 0,             /* keys */
        0, 0, 0, 0, 0, 0, 0, 0,                                              /* offset 0, padding */
    };
    err = weir_typed_batch_read(&b, empty_batch, sizeof empty_batch);
    CHECK(err == NULL && b.count == 0 && b.fields == 0, "empty batch: %s", err);
    weir_bytes out = weir__typed_map(empty_batch, sizeof empty_batch, double_price);
    CHECK(frame_is(out, "\0\0\0\0", 4), "an empty batch's output");
}

/* Malformed frames: the reader says what is wrong instead of reading out
 * of the frame. Each case changes one u32 of the worked example. */
static void test_typed_malformed(void) {
    struct {
        size_t at; /* where to write v; or, with at == SIZE_MAX, cut to len */
        uint32_t v;
        size_t len;
        const char *want;
    } tests[] = {
        {SIZE_MAX, 0, 7, "typed batch frame: truncated record and field counts"},
        {SIZE_MAX, 0, 40, "typed batch frame: truncated column table"},
        {SIZE_MAX, 0, 103, "typed batch frame: column 2: a region lies outside the frame"},
        {0x04, 6, 0, "typed batch frame: truncated column table"},
        {0x00, WEIR_MAX_BATCH_RECORDS + 1, 0, "typed batch frame: record count over the limit"},
        {0x04, WEIR_MAX_TYPED_FIELDS + 1, 0, "typed batch frame: field count over the limit"},
        {0x08, WEIR_TYPE_FLOAT, 0, "typed batch frame: column 0: the timestamp column must be of type int without statuses"},
        {0x0c, 0x40, 0, "typed batch frame: column 0: the timestamp column must be of type int without statuses"},
        {0x18, WEIR_TYPE_RAW, 0, "typed batch frame: column 1: the key column must be of type string"},
        {0x28, 9, 0, "typed batch frame: column 2: unknown type"},
        {0x28, 0, 0, "typed batch frame: column 2: unknown type"},
        {0x2c, 0, 0, "typed batch frame: column 2: no statuses"},
        {0x2c, 0x59, 0, "typed batch frame: column 2: a region's offset is not a multiple of 8"},
        {0x30, 0x68, 0, "typed batch frame: column 2: a region lies outside the frame"},
        {0x30, 0x00, 0, "typed batch frame: column 2: a region lies outside the frame"},
        {0x34, 0x60, 0, "typed batch frame: column 2: a data offset for a fixed-width column"},
        {0x48, 1, 0, "typed batch frame: column 1: string offsets out of order"},
        {0x4c, 0x100, 0, "typed batch frame: column 1: a region lies outside the frame"},
        {0x24, 0x68, 0, "typed batch frame: column 1: a region lies outside the frame"},
    };
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        uint8_t frame[sizeof example_batch];
        memcpy(frame, example_batch, sizeof frame);
        size_t len = sizeof frame;
        if (tests[t].at == SIZE_MAX) {
            len = tests[t].len;
        } else {
            for (int i = 0; i < 4; i++)
                frame[tests[t].at + i] = (uint8_t)(tests[t].v >> (8 * i));
        }
        weir_typed_batch b;
        const char *err = weir_typed_batch_read(&b, frame, len);
        CHECK(err && strcmp(err, tests[t].want) == 0, "malformed case %zu: %s, want %s", t, err ? err : "no error",
              tests[t].want);
        CHECK(b.count == 0 && b.fields == 0, "malformed case %zu: the batch is not empty", t);
    }
    /* The offsets' end, off[n], may equal the data's length exactly. */
    uint8_t frame[sizeof example_batch];
    memcpy(frame, example_batch, sizeof frame);
    frame[0x4c] = 8; /* the key is now "k" and 7 zero bytes, up to 0x58 */
    weir_typed_batch b;
    const char *err = weir_typed_batch_read(&b, frame, sizeof frame);
    CHECK(err == NULL && weir_typed_key(&b, 0).len == 8, "a key running to the next region: %s", err);
}

/* ---------------------------------------------------------------------- */
/* Writing                                                                 */

static void test_typed_writer(void) {
    /* The Go writer's frame, call for call. */
    weir_typed_out o = {0};
    weir_typed_out_reset(&o);
    weir_typed_out_record(&o, 0);
    weir_typed_keep(&o);
    weir_typed_out_record(&o, 1);
    weir_patch_begin(&o, 0, NULL, 0, 0);
    weir_patch_set_null(&o, "a");
    weir_patch_set_int(&o, "b", -7);
    weir_patch_set_float(&o, "c", 0.1);
    weir_patch_set_bool(&o, "d", true);
    weir_patch_set_bool(&o, "d2", false);
    weir_patch_set_string(&o, "e", "caf\xc3\xa9 \xf0\x9f\x98\x80", 10);
    weir_patch_set_raw(&o, "f", "[1,{\"x\":2}]", 11);
    weir_patch_remove(&o, "g\\.x.h");
    weir_typed_out_record(&o, 2);
    weir_typed_reject(&o, "bad \xe2\x9c\x93");
    weir_typed_out_record(&o, 3);
    weir_patch_begin(&o, WEIR_PATCH_FLAG_NEW | WEIR_PATCH_FLAG_KEY | WEIR_PATCH_FLAG_TIMESTAMP, "k", 1, -42);
    weir_patch_set_raw(&o, "", "{}", 2);
    weir_patch_begin(&o, WEIR_PATCH_FLAG_KEY, NULL, 0, 0);
    weir_patch_begin(&o, WEIR_PATCH_FLAG_TIMESTAMP, "ignored", 7, (int64_t)1 << 40);
    weir_patch_set_int(&o, "n", INT64_MIN);
    weir_typed_out_record(&o, 4);
    weir_typed_keep(&o);
    CHECK_FRAME(weir_typed_out_frame(&o), vec_output, sizeof vec_output, "vec_output");
    CHECK(!weir_typed_rejected(&o), "record 4 is not rejected");

    /* Reset starts again, reusing the buffer; the frame is the same. */
    weir_typed_out_reset(&o);
    CHECK(frame_is(weir_typed_out_frame(&o), "\0\0\0\0", 4), "an empty frame");

    /* Keep, error and each value type, one at a time, by hand. */
    weir_buf want = {0};
    weir_typed_out_reset(&o);
    weir_typed_out_record(&o, 7);
    weir_typed_keep(&o);
    b32(&want, 1), b8(&want, 0), b32(&want, 7);
    CHECK_FRAME(weir_typed_out_frame(&o), want.data, want.len, "keep 7");

    weir_typed_out_reset(&o);
    weir_typed_out_record(&o, 0);
    weir_typed_reject(&o, "");
    want.len = 0;
    b32(&want, 1), b8(&want, 2), b32(&want, 0), bstr(&want, "rejected");
    CHECK_FRAME(weir_typed_out_frame(&o), want.data, want.len, "an empty message");
    CHECK(weir_typed_rejected(&o), "rejected");

    struct {
        int type;
        const char *value; /* the value's bytes after the type */
        size_t len;
    } values[] = {
        {WEIR_TYPE_NULL, "", 0},
        {WEIR_TYPE_INT, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8},      /* INT64_MAX */
        {WEIR_TYPE_FLOAT, "\x00\x00\x00\x00\x00\x00\xf8\x7f", 8},    /* NaN, as its bits */
        {WEIR_TYPE_FLOAT, "\x00\x00\x00\x00\x00\x00\x00\x80", 8},    /* -0.0 */
        {WEIR_TYPE_BOOL, "\x01", 1},
        {WEIR_TYPE_STRING, "\x03\x00\x00\x00\xe2\x82\xac", 7},       /* "€" */
        {WEIR_TYPE_RAW, "\x04\x00\x00\x00null", 8},
    };
    for (size_t t = 0; t < sizeof values / sizeof values[0]; t++) {
        weir_typed_out_reset(&o);
        weir_typed_out_record(&o, 1);
        weir_patch_begin(&o, WEIR_PATCH_FLAG_KEY, "", 0, 0);
        switch (t) {
        case 0: weir_patch_set_null(&o, "x.y"); break;
        case 1: weir_patch_set_int(&o, "x.y", INT64_MAX); break;
        case 2: weir_patch_set_float(&o, "x.y", __builtin_nan("")); break;
        case 3: weir_patch_set_float(&o, "x.y", -0.0); break;
        case 4: weir_patch_set_bool(&o, "x.y", true); break;
        case 5: weir_patch_set_string(&o, "x.y", "\xe2\x82\xac", 3); break;
        case 6: weir_patch_set_raw(&o, "x.y", "null", 4); break;
        }
        want.len = 0;
        b32(&want, 1), b8(&want, 3), b32(&want, 1), b8(&want, WEIR_PATCH_FLAG_KEY), b32(&want, 0); /* key "" */
        b32(&want, 1), b8(&want, WEIR_PATCH_OP_SET), bstr(&want, "x.y"), b8(&want, (uint8_t)values[t].type);
        weir_buf_append(&want, values[t].value, values[t].len);
        CHECK_FRAME(weir_typed_out_frame(&o), want.data, want.len, "a set of each type");
    }

    /* A reject discards what was written for the record, and only that. */
    weir_typed_out_reset(&o);
    weir_typed_out_record(&o, 0);
    weir_typed_keep(&o);
    weir_typed_out_record(&o, 1);
    weir_typed_keep(&o);
    weir_patch_begin(&o, 0, NULL, 0, 0);
    weir_patch_set_int(&o, "a", 1);
    weir_typed_rejectf(&o, "no %s here", "a");
    weir_typed_keep(&o);                /* ignored after the reject */
    weir_patch_set_int(&o, "b", 2);     /* ignored */
    weir_typed_reject(&o, "second");    /* ignored */
    weir_typed_out_record(&o, 1);       /* the same record again: entries go on */
    weir_typed_keep(&o);
    want.len = 0;
    b32(&want, 3), b8(&want, 0), b32(&want, 0);
    b8(&want, 2), b32(&want, 1), bstr(&want, "no a here");
    b8(&want, 0), b32(&want, 1);
    CHECK_FRAME(weir_typed_out_frame(&o), want.data, want.len, "reject discards the record's entries");

    /* Misuses reject the record, saying why. */
    struct {
        int what;
        const char *msg;
    } misuses[] = {
        {0, "weir: a patch operation outside a patch (call weir_patch_begin first)"},
        {1, "weir: a patch operation outside a patch (call weir_patch_begin first)"},
        {2, "weir: weir_patch_remove of the empty path (remove a field, or set the whole value)"},
        {3, "weir: weir_patch_begin with unknown flags"},
    };
    for (size_t t = 0; t < sizeof misuses / sizeof misuses[0]; t++) {
        weir_typed_out_reset(&o);
        weir_typed_out_record(&o, 5);
        switch (misuses[t].what) {
        case 0: weir_patch_set_int(&o, "a", 1); break;
        case 1: weir_typed_keep(&o), weir_patch_remove(&o, "a"); break;
        case 2: weir_patch_begin(&o, 0, NULL, 0, 0), weir_patch_remove(&o, ""); break;
        case 3: weir_patch_begin(&o, 8, NULL, 0, 0); break;
        }
        want.len = 0;
        b32(&want, 1), b8(&want, 2), b32(&want, 5), bstr(&want, misuses[t].msg);
        CHECK_FRAME(weir_typed_out_frame(&o), want.data, want.len, misuses[t].msg);
    }

    /* The op count limit: 65536 operations fit, one more rejects. */
    weir_typed_out_reset(&o);
    weir_typed_out_record(&o, 0);
    weir_patch_begin(&o, 0, NULL, 0, 0);
    for (uint32_t i = 0; i < WEIR_MAX_PATCH_OPS; i++)
        weir_patch_remove(&o, "a");
    CHECK(!weir_typed_rejected(&o), "65536 operations rejected");
    weir_bytes f = weir_typed_out_frame(&o);
    CHECK(f.len == 4 + 5 + 1 + 4 + 6 * (size_t)WEIR_MAX_PATCH_OPS && weir_le64(f.ptr + 10) << 32 >> 32 == 65536,
          "65536 operations: %zu bytes", f.len);
    weir_typed_out_record(&o, 1);
    weir_patch_begin(&o, 0, NULL, 0, 0);
    for (uint32_t i = 0; i <= WEIR_MAX_PATCH_OPS; i++)
        weir_patch_remove(&o, "a");
    CHECK(weir_typed_rejected(&o), "65537 operations not rejected");

    weir_buf_free(&want);
    weir_typed_out_free(&o);
    CHECK(o.frame_.data == NULL && o.count_ == 0, "free");
}

/* ---------------------------------------------------------------------- */
/* Typed calls                                                             */

/* name_words: flat_map emitting, for a record with a name, the input kept
 * and a new record {"name": name, "ratio": ratio} keyed by the name; for a
 * record without one, nothing. */
static void name_words(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    if (weir_typed_status(b, F_NAME, r) != WEIR_VALUE_PRESENT)
        return;
    weir_bytes name = weir_typed_string(b, F_NAME, r);
    weir_typed_keep(out);
    weir_patch_begin(out, WEIR_PATCH_FLAG_NEW | WEIR_PATCH_FLAG_KEY, name.ptr, name.len, 0);
    weir_patch_set_string(out, "name", name.ptr, name.len);
    weir_patch_set_float(out, "ratio", weir_typed_float(b, F_RATIO, r));
}

/* ok_only: filter keeping the records whose ok is true; a mismatch rejects. */
static bool ok_only(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    if (weir_typed_status(b, F_OK, r) == WEIR_VALUE_MISMATCH) {
        weir_typed_reject(out, "ok is not a bool");
        return false;
    }
    return weir_typed_bool(b, F_OK, r);
}

static bool patching_filter(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    (void)b;
    if (r == 1)
        weir_patch_begin(out, 0, NULL, 0, 0);
    return true;
}

static void two_entry_map(const weir_typed_batch *b, uint32_t r, weir_typed_out *out) {
    (void)b;
    if (r != 1)
        weir_typed_keep(out); /* an explicit keep is the default's frame */
    else
        weir_typed_keep(out), weir_patch_begin(out, 0, NULL, 0, 0);
}

static void test_typed_calls(void) {
    weir_buf want = {0};

    /* map: record 0's price overflows; 1 (null) and 2 (missing) are kept. */
    b32(&want, 3);
    b8(&want, 2), b32(&want, 0), bstr(&want, "price overflows");
    b8(&want, 0), b32(&want, 1);
    b8(&want, 0), b32(&want, 2);
    CHECK_FRAME(weir__typed_map(vec_batch3, sizeof vec_batch3, double_price), want.data, want.len, "typed map");

    /* map: a second entry for a record rejects it; an explicit keep is one. */
    want.len = 0;
    b32(&want, 3);
    b8(&want, 0), b32(&want, 0);
    b8(&want, 2), b32(&want, 1), bstr(&want, "weir: a map function output more than one entry for a record");
    b8(&want, 0), b32(&want, 2);
    CHECK_FRAME(weir__typed_map(vec_batch3, sizeof vec_batch3, two_entry_map), want.data, want.len,
                "typed map, two entries");

    /* flat_map: records 0 and 2 each give a keep and a new record. */
    want.len = 0;
    b32(&want, 4);
    b8(&want, 0), b32(&want, 0);
    b8(&want, 3), b32(&want, 0), b8(&want, WEIR_PATCH_FLAG_NEW | WEIR_PATCH_FLAG_KEY), bstr(&want, "caf\xc3\xa9");
    b32(&want, 2);
    b8(&want, 1), bstr(&want, "name"), b8(&want, WEIR_TYPE_STRING), bstr(&want, "caf\xc3\xa9");
    b8(&want, 1), bstr(&want, "ratio"), b8(&want, WEIR_TYPE_FLOAT), weir_buf_le_f64(&want, 2.5);
    b8(&want, 0), b32(&want, 2);
    b8(&want, 3), b32(&want, 2), b8(&want, WEIR_PATCH_FLAG_NEW | WEIR_PATCH_FLAG_KEY);
    bstr(&want, "\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x98\x80");
    b32(&want, 2);
    b8(&want, 1), bstr(&want, "name"), b8(&want, WEIR_TYPE_STRING), bstr(&want, "\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x98\x80");
    b8(&want, 1), bstr(&want, "ratio"), b8(&want, WEIR_TYPE_FLOAT), weir_buf_le_f64(&want, -0.1);
    CHECK_FRAME(weir__typed_flat_map(vec_batch3, sizeof vec_batch3, name_words), want.data, want.len, "typed flat_map");

    /* filter: 0 kept, 1 dropped, 2 rejected. */
    want.len = 0;
    b32(&want, 2);
    b8(&want, 0), b32(&want, 0);
    b8(&want, 2), b32(&want, 2), bstr(&want, "ok is not a bool");
    CHECK_FRAME(weir__typed_filter(vec_batch3, sizeof vec_batch3, ok_only), want.data, want.len, "typed filter");

    /* filter: a patch rejects its record. */
    want.len = 0;
    b32(&want, 3);
    b8(&want, 0), b32(&want, 0);
    b8(&want, 2), b32(&want, 1), bstr(&want, "weir: a filter function keeps a record by its result, and cannot patch it");
    b8(&want, 0), b32(&want, 2);
    CHECK_FRAME(weir__typed_filter(vec_batch3, sizeof vec_batch3, patching_filter), want.data, want.len,
                "typed filter, patching");

    /* The output frame stays the SDK's between calls: the same call twice
     * gives the same bytes. */
    weir_bytes a = weir__typed_map(example_batch, sizeof example_batch, double_price);
    weir_bytes b = weir__typed_map(example_batch, sizeof example_batch, double_price);
    CHECK(a.ptr == b.ptr && frame_is(b, example_output, sizeof example_output), "the output buffer is reused");
    weir_buf_free(&want);
}

/* sum_ts: an aggregate add over vec_batch3's records, the accumulator an
 * 8-byte sum of the timestamps of the records that have a price; a record
 * without one, or a bad accumulator, is rejected. */
static uint32_t seen[8];
static size_t nseen;

static void sum_ts(weir_buf *acc, const weir_typed_batch *b, uint32_t r, weir_out *out) {
    if (nseen < 8)
        seen[nseen++] = r;
    if (acc->len != 8) {
        weir_reject(out, "bad accumulator");
        return;
    }
    if (weir_typed_status(b, F_PRICE, r) != WEIR_VALUE_PRESENT) {
        weir_reject(out, "no price");
        return;
    }
    int64_t sum = weir_le_i64(acc->data) + weir_typed_timestamp(b, r);
    acc->len = 0;
    weir_buf_le_i64(acc, sum);
}

static void test_typed_agg_add(void) {
    weir_buf want = {0};
    b32(&want, 3);
    b32(&want, 1), b32(&want, 1), bstr(&want, "no price"); /* group 0: record 1 rejected */
    b32(&want, 8), weir_buf_le_i64(&want, 15);              /* 10 + 5 */
    b32(&want, 0), b32(&want, 0);                           /* group 1: nothing */
    b32(&want, 1), b32(&want, 0), bstr(&want, "bad accumulator"); /* group 2: its record 0 */
    bstr(&want, "xyz");
    nseen = 0;
    CHECK_FRAME(weir__typed_agg_add(vec_add, sizeof vec_add, sum_ts), want.data, want.len, "typed aggregate add");
    CHECK(nseen == 3 && seen[0] == 0 && seen[1] == 1 && seen[2] == 2, "add saw %zu records", nseen);
    weir_buf_free(&want);
}

static void test_typed(void) {
    test_typed_example();
    test_typed_decl();
    test_typed_reader();
    test_typed_malformed();
    test_typed_writer();
    test_typed_calls();
    test_typed_agg_add();
}
