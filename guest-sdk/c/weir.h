/*
 * weir.h: the weir guest SDK for C, ABI v1 (see abi/ABI.md).
 *
 * A weir plugin in C is one or more .c files compiled together with weir.c
 * for wasm32-wasi as a reactor:
 *
 *     clang --target=wasm32-wasi -mexec-model=reactor -O2 -o plugin.wasm plugin.c weir.c
 *
 * (weir builds a plugin folder this way itself.) The plugin registers its
 * functions with the macros below, at file scope, once per kind:
 *
 *     #include "weir.h"
 *
 *     static void shout(const weir_record *r, weir_out *out) {
 *         weir_buf *v = weir_value_begin(out);
 *         for (size_t i = 0; i < r->value_len; i++)
 *             weir_buf_byte(v, toupper(r->value[i]));
 *         weir_value_end(out);
 *     }
 *     WEIR_MAP(shout);
 *
 * Each macro defines the ABI export of its kind (weir_map, weir_flat_map,
 * weir_filter, the four weir_agg_* exports), so a module exports exactly
 * the operations it implements, and the host rejects it at load time when
 * used as an operator of another kind. weir.c provides the exports every
 * module has (weir_abi_v1, weir_alloc, weir_init, and weir_ops, which
 * reports the operations registered).
 *
 * Threading and lifetime: the host calls a module from one thread, one call
 * at a time. Records, their bytes and every pointer the SDK hands a
 * function are valid only during that call (state values: until the next
 * state call). Nothing here is thread-safe, and nothing needs to be.
 *
 * Errors: a function rejects a bad record with weir_reject (the host sends
 * it to the dead-letter output with the message). A C bug (a trap, such as
 * __builtin_trap(), an out-of-bounds access, or abort()) kills the
 * instance; the host replaces it and replays the batch one record at a
 * time, dead-lettering the record that fails alone.
 *
 * Text passed as `const char *` without a length is NUL-terminated.
 */
#ifndef WEIR_H
#define WEIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEIR_ABI_VERSION 1

/* ---------------------------------------------------------------------- */
/* Byte buffers                                                            */

/* weir_bytes is a read-only view of bytes. ptr is NULL for an absent value
 * (which is distinct from a present, empty one). */
typedef struct weir_bytes {
    const uint8_t *ptr;
    size_t len;
} weir_bytes;

/* weir_buf is a growable byte buffer: data holds len bytes, with room for
 * cap. The zero value ({0}) is an empty buffer ready to use. Growing it
 * moves data: do not keep pointers into it across appends. Memory comes
 * from malloc; running out of memory traps. */
typedef struct weir_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} weir_buf;

/* weir_buf_reserve makes room for n more bytes and returns where they go
 * (data + len); the caller writes them and adds n to len. */
uint8_t *weir_buf_reserve(weir_buf *b, size_t n);
void weir_buf_append(weir_buf *b, const void *p, size_t n);
void weir_buf_str(weir_buf *b, const char *s); /* appends s without its NUL */
void weir_buf_byte(weir_buf *b, uint8_t c);
void weir_buf_i64(weir_buf *b, int64_t v); /* appends v in decimal */
void weir_buf_u64(weir_buf *b, uint64_t v);
/* Little-endian fixed-size encodings, as the SDK stores numbers in state
 * and as accumulators conventionally hold them: 8 bytes, two's complement
 * for integers, IEEE-754 binary64 bits for doubles. */
void weir_buf_le64(weir_buf *b, uint64_t v);
void weir_buf_le_i64(weir_buf *b, int64_t v);
void weir_buf_le_f64(weir_buf *b, double v);
void weir_buf_free(weir_buf *b); /* releases data and makes b empty */

uint64_t weir_le64(const uint8_t *p); /* reads 8 bytes little-endian */
int64_t weir_le_i64(const uint8_t *p);
double weir_le_f64(const uint8_t *p);

/* ---------------------------------------------------------------------- */
/* Records                                                                 */

/* weir_record is one input record. key and value are NULL when absent.
 * Everything points into the batch and is valid only during the call. */
typedef struct weir_record {
    const uint8_t *key;
    size_t key_len;
    const uint8_t *value;
    size_t value_len;
    int64_t timestamp; /* event time, milliseconds since the Unix epoch */
    uint32_t header_count;
    /* private: */
    const uint8_t *headers_; /* the encoded headers */
    uint32_t index_;         /* position in the batch (or group) */
} weir_record;

/* weir_header is one record header. */
typedef struct weir_header {
    const uint8_t *name;
    size_t name_len;
    const uint8_t *value;
    size_t value_len;
} weir_header;

/* weir_header_next visits a record's headers in order:
 *
 *     weir_header_iter it = {0, 0};
 *     weir_header h;
 *     while (weir_header_next(r, &it, &h)) { ... }
 */
typedef struct weir_header_iter {
    uint32_t i;
    size_t off;
} weir_header_iter;
bool weir_header_next(const weir_record *r, weir_header_iter *it, weir_header *h);
/* weir_header_get finds the first header called name and sets *value. */
bool weir_header_get(const weir_record *r, const char *name, weir_bytes *value);

/* ---------------------------------------------------------------------- */
/* Output                                                                  */

/* weir_out is what a function writes its result through. It belongs to the
 * SDK and is valid only during the call it was given to.
 *
 * Map: by default the input record is kept unchanged. A function may set
 * the output record's key, timestamp and headers (fields not set are
 * inherited from the input) and then its value, which finishes it; with no
 * value set but another field set, the record keeps the input's value. A
 * map function finishes at most one record.
 *
 * Flat map: by default nothing is emitted. weir_emit emits a record with
 * the given value (the rest inherited); weir_emit_keep emits the input
 * record unchanged; setting fields and then a value emits a richer record.
 * Any number of records may be emitted.
 *
 * Filter: the function's result keeps or drops the record; out serves only
 * to reject it.
 *
 * Every kind: weir_reject rejects the record with a message and discards
 * whatever the function output for it. Calls on out after weir_reject are
 * ignored. */
typedef struct weir_out weir_out;

void weir_set_key(weir_out *out, const void *key, size_t len);
void weir_set_key_null(weir_out *out);
void weir_set_timestamp(weir_out *out, int64_t ms);
/* weir_add_header adds a header; once a header is added (or
 * weir_clear_headers is called) the record has exactly the headers added. */
void weir_add_header(weir_out *out, const void *name, size_t name_len, const void *value, size_t value_len);
void weir_clear_headers(weir_out *out);

/* weir_set_value sets the value (copied) and finishes the record. */
void weir_set_value(weir_out *out, const void *value, size_t len);
void weir_set_value_null(weir_out *out);
/* weir_value_begin starts building the value in place in the output frame,
 * without a copy: append to the buffer it returns (only append: do not
 * shrink or reset it), then call weir_value_end, which finishes the record.
 * Make no other weir_out call in between. */
weir_buf *weir_value_begin(weir_out *out);
void weir_value_end(weir_out *out);

/* Flat map: emit a record with this value / the input unchanged. */
void weir_emit(weir_out *out, const void *value, size_t len);
void weir_emit_keep(weir_out *out);

/* weir_reject rejects the record with a UTF-8 message. */
void weir_reject(weir_out *out, const char *msg);
void weir_reject_n(weir_out *out, const char *msg, size_t len);
/* weir_rejectf formats the message as printf does (this links printf). */
void weir_rejectf(weir_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* weir_rejected reports whether the record was rejected. */
bool weir_rejected(const weir_out *out);

/* ---------------------------------------------------------------------- */
/* Registration                                                            */

/* The function types. */
typedef void (*weir_map_fn)(const weir_record *r, weir_out *out);
typedef void (*weir_flat_map_fn)(const weir_record *r, weir_out *out);
typedef bool (*weir_filter_fn)(const weir_record *r, weir_out *out);
/* An init function receives the operator's config (JSON; "{}" when the
 * pipeline gives none) and returns NULL, or an error message that rejects
 * the module. The config bytes may be kept: they are the SDK's copy. */
typedef const char *(*weir_init_fn)(const uint8_t *config, size_t len);

/* An aggregate (ABI section 12) keeps one accumulator per group as bytes:
 *
 * create appends a fresh accumulator to acc (which is empty). It must be
 * pure: always the same bytes.
 *
 * add folds one record into acc, which holds the group's accumulator and
 * may be changed in place, grown or rewritten. weir_reject(out, ...)
 * rejects the record; the accumulator must then be left as it was (check
 * the record before changing acc).
 *
 * merge appends to dst the accumulator combining a and b, or returns an
 * error message.
 *
 * result appends to dst the group's result value, or sets *null for an
 * absent value, or returns an error message.
 *
 * dst lies in the output frame: append only. Error messages must stay
 * valid until the function returns (a string literal, or weir_fmt). */
typedef void (*weir_agg_create_fn)(weir_buf *acc);
typedef void (*weir_agg_add_fn)(weir_buf *acc, const weir_record *r, weir_out *out);
typedef const char *(*weir_agg_merge_fn)(weir_bytes a, weir_bytes b, weir_buf *dst);
typedef const char *(*weir_agg_result_fn)(weir_bytes acc, weir_buf *dst, bool *null);

/* The operations a module registered, as it reports them to the host in
 * the ABI's weir_ops export (one bit each). */
#define WEIR_OP_MAP 1u
#define WEIR_OP_FLAT_MAP 2u
#define WEIR_OP_FILTER 4u
#define WEIR_OP_AGGREGATE 8u

/* The registration macros. Use each at most once, at file scope, followed
 * by a semicolon. Each also records its operation for weir_ops (in a
 * constructor, which the reactor's _initialize runs). */
#if defined(__wasm__)
#define WEIR__EXPORT(name) __attribute__((export_name(name)))
#else
#define WEIR__EXPORT(name) /* native builds, for unit tests */
#endif

/* WEIR__OP ends a registration macro: a constructor that records the
 * operation, then a declaration that takes the macro's semicolon. */
#define WEIR__OP(name, bit)                                                   \
    __attribute__((constructor)) static void weir__register_##name(void) {    \
        weir__add_op(bit);                                                    \
    }                                                                         \
    struct weir__##name##_registered

#define WEIR_INIT(fn)                                                         \
    __attribute__((constructor)) static void weir__register_init(void) {      \
        weir__set_init(fn);                                                   \
    }                                                                         \
    struct weir__init_registered

#define WEIR_MAP(fn)                                                          \
    WEIR__EXPORT("weir_map") uint64_t weir__export_map(      \
        uint32_t ptr, uint32_t len) {                                         \
        return weir__run_map(ptr, len, (fn));                                 \
    }                                                                         \
    WEIR__OP(map, WEIR_OP_MAP)

#define WEIR_FLAT_MAP(fn)                                                     \
    WEIR__EXPORT("weir_flat_map") uint64_t                   \
    weir__export_flat_map(uint32_t ptr, uint32_t len) {                       \
        return weir__run_flat_map(ptr, len, (fn));                            \
    }                                                                         \
    WEIR__OP(flat_map, WEIR_OP_FLAT_MAP)

#define WEIR_FILTER(fn)                                                       \
    WEIR__EXPORT("weir_filter") uint64_t weir__export_filter( \
        uint32_t ptr, uint32_t len) {                                         \
        return weir__run_filter(ptr, len, (fn));                              \
    }                                                                         \
    WEIR__OP(filter, WEIR_OP_FILTER)

#define WEIR_AGGREGATE(create, add, merge, result)                            \
    WEIR__EXPORT("weir_agg_create") uint64_t                 \
    weir__export_agg_create(void) {                                           \
        return weir__agg_create((create));                                    \
    }                                                                         \
    WEIR__EXPORT("weir_agg_add") uint64_t                    \
    weir__export_agg_add(uint32_t ptr, uint32_t len) {                        \
        return weir__agg_add(ptr, len, (add));                                \
    }                                                                         \
    WEIR__EXPORT("weir_agg_merge") uint64_t                  \
    weir__export_agg_merge(uint32_t ptr, uint32_t len) {                      \
        return weir__agg_merge(ptr, len, (merge));                            \
    }                                                                         \
    WEIR__EXPORT("weir_agg_result") uint64_t                 \
    weir__export_agg_result(uint32_t ptr, uint32_t len) {                     \
        return weir__agg_result(ptr, len, (result));                          \
    }                                                                         \
    WEIR__OP(aggregate, WEIR_OP_AGGREGATE)

/* The macros' implementation. */
void weir__set_init(weir_init_fn fn);
void weir__add_op(uint32_t bit);
uint32_t weir__export_ops(void); /* the weir_ops export */
uint64_t weir__run_map(uint32_t ptr, uint32_t len, weir_map_fn fn);
uint64_t weir__run_flat_map(uint32_t ptr, uint32_t len, weir_flat_map_fn fn);
uint64_t weir__run_filter(uint32_t ptr, uint32_t len, weir_filter_fn fn);
uint64_t weir__agg_create(weir_agg_create_fn fn);
uint64_t weir__agg_add(uint32_t ptr, uint32_t len, weir_agg_add_fn fn);
uint64_t weir__agg_merge(uint32_t ptr, uint32_t len, weir_agg_merge_fn fn);
uint64_t weir__agg_result(uint32_t ptr, uint32_t len, weir_agg_result_fn fn);

/* weir_fmt formats as printf does into an SDK buffer, valid until the next
 * weir_fmt call: for init, merge and result error messages. Links printf. */
const char *weir_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---------------------------------------------------------------------- */
/* Logging                                                                 */

enum { WEIR_DEBUG = 0, WEIR_INFO = 1, WEIR_WARN = 2, WEIR_ERROR = 3 };

/* weir_log writes one line to weir's log, tagged with the operator. The
 * host cuts lines over 4096 bytes and rate-limits them. Any function may
 * log, including init. */
void weir_log(int level, const char *msg);
void weir_log_n(int level, const char *msg, size_t len);
void weir_logf(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------------- */
/* Keyed state                                                             */

/* State is scoped by the host to the operator and to the key of the record
 * r (the key set by key_by, or the record's own key); a name picks a slot
 * within that scope. Slots are named as every weir SDK names them (ABI
 * section 6, the Go SDK's AppendStateKey), so state survives a rewrite of
 * the plugin in another language:
 *
 *   value state n:          'v' n
 *   map state n, entry k:   'm' uvarint(len(n)) n k
 *   list state n:           'l' uvarint(len(n)) n     (the length, an int64)
 *              element i:   'l' uvarint(len(n)) n i   (i: 8 bytes big-endian)
 *
 * Numbers are 8 bytes little-endian (two's complement, IEEE-754 binary64).
 *
 * Results: a get returns 1 when found (setting *value), 0 when absent, or a
 * negative status; put and delete return 0 or a negative status. Values
 * returned by get are valid until the next state call. State is available
 * in map, flat_map and filter functions (not in init or aggregates: -2). */
enum {
    WEIR_OK = 0,
    WEIR_ERR_NOT_FOUND = -1,  /* host: no value (gets report it as 0) */
    WEIR_ERR_NO_CONTEXT = -2, /* a state call outside a batch call */
    WEIR_ERR_BAD_INDEX = -3,  /* the record is not of the current batch */
    WEIR_ERR_TOO_LARGE = -4,  /* key over 64 KiB or value over 16 MiB */
    WEIR_ERR_BAD_MEMORY = -5, /* a pointer outside guest memory */
    WEIR_ERR_SIZE = -100,     /* a typed get of a value that is not 8 bytes */
};

/* weir_status_text describes a status, as the Go SDK does. */
const char *weir_status_text(int status);

int weir_value_get(const weir_record *r, const char *name, weir_bytes *value);
int weir_value_put(const weir_record *r, const char *name, const void *v, size_t len);
int weir_value_delete(const weir_record *r, const char *name);
int weir_value_get_i64(const weir_record *r, const char *name, int64_t *v);
int weir_value_put_i64(const weir_record *r, const char *name, int64_t v);
int weir_value_get_f64(const weir_record *r, const char *name, double *v);
int weir_value_put_f64(const weir_record *r, const char *name, double v);

int weir_map_get(const weir_record *r, const char *name, const void *key, size_t klen, weir_bytes *value);
int weir_map_put(const weir_record *r, const char *name, const void *key, size_t klen, const void *v, size_t len);
int weir_map_delete(const weir_record *r, const char *name, const void *key, size_t klen);
int weir_map_get_i64(const weir_record *r, const char *name, const void *key, size_t klen, int64_t *v);
int weir_map_put_i64(const weir_record *r, const char *name, const void *key, size_t klen, int64_t v);
int weir_map_get_f64(const weir_record *r, const char *name, const void *key, size_t klen, double *v);
int weir_map_put_f64(const weir_record *r, const char *name, const void *key, size_t klen, double v);

/* List state: weir_list_len sets *n (0 for no list) and returns 0 or a
 * negative status; weir_list_get reads element i. */
int weir_list_len(const weir_record *r, const char *name, int64_t *n);
int weir_list_add(const weir_record *r, const char *name, const void *v, size_t len);
int weir_list_get(const weir_record *r, const char *name, int64_t i, weir_bytes *value);
int weir_list_clear(const weir_record *r, const char *name);

/* weir_state_key appends to dst the slot key of a state entry, as above:
 * kind 'v' (suffix ignored), 'm' (suffix: the entry key) or 'l' (suffix:
 * nothing for the length, or the 8-byte big-endian index). */
void weir_state_key(weir_buf *dst, char kind, const char *name, size_t name_len, const void *suffix, size_t suffix_len);

/* ---------------------------------------------------------------------- */
/* JSON                                                                    */

/* A small, allocation-free JSON reader (RFC 8259; it accepts what Go's
 * encoding/json accepts, nesting up to 10000 deep, strings with invalid
 * UTF-8) and a writer. */
typedef enum weir_json_kind {
    WEIR_JSON_NONE = 0, /* not present: a lookup found nothing */
    WEIR_JSON_NULL,
    WEIR_JSON_BOOL,
    WEIR_JSON_NUMBER,
    WEIR_JSON_STRING,
    WEIR_JSON_ARRAY,
    WEIR_JSON_OBJECT,
} weir_json_kind;

/* weir_json_value is one value inside a document: raw is its exact source
 * text (a string with its quotes and escapes, a number as written), offset
 * its position in the document. */
typedef struct weir_json_value {
    weir_json_kind kind;
    const uint8_t *raw;
    size_t len;
    size_t offset;
    /* private: */
    bool plain_; /* a string without escapes or non-ASCII bytes */
} weir_json_value;

/* The readers validate the whole document and return NULL, or a syntax
 * error message ("invalid JSON: ... at byte N", in a static buffer valid
 * until the next reader call).
 *
 * weir_json_parse sets *v to the document's value.
 * weir_json_get sets *v to the top-level field name of the object doc (the
 * last one when the name repeats), or kind WEIR_JSON_NONE when the field
 * is missing or doc is not an object. Field names compare decoded.
 * weir_json_each calls fn for each field of the object doc in order, until
 * fn returns false; a document that is not an object is an error. */
const char *weir_json_parse(const uint8_t *doc, size_t len, weir_json_value *v);
const char *weir_json_get(const uint8_t *doc, size_t len, const char *name, weir_json_value *v);
const char *weir_json_get_n(const uint8_t *doc, size_t len, const char *name, size_t name_len, weir_json_value *v);
typedef bool (*weir_json_each_fn)(const weir_json_value *key, const weir_json_value *val, void *ctx);
const char *weir_json_each(const uint8_t *doc, size_t len, weir_json_each_fn fn, void *ctx);

/* weir_json_string appends the decoded content of a string value (escapes
 * decoded; invalid UTF-8 and unpaired surrogates as U+FFFD), or the raw
 * text of any other kind. */
void weir_json_string(const weir_json_value *v, weir_buf *dst);
/* weir_json_string_eq reports whether v is a string decoding to s. */
bool weir_json_string_eq(const weir_json_value *v, const void *s, size_t len);
/* weir_json_int reads a number written as an integer (no fraction, no
 * exponent) within int64: 0, or -1 when v is not such a number. */
int weir_json_int(const weir_json_value *v, int64_t *out);
/* weir_json_float reads a number as the nearest double: 0, -1 when v is
 * not a number, -2 when it is out of range (beyond the largest double;
 * *out is then +-inf). */
int weir_json_float(const weir_json_value *v, double *out);
/* weir_json_bool: 0, or -1 when v is not true or false. */
int weir_json_bool(const weir_json_value *v, bool *out);

/* weir_json_quote appends s as a JSON string with minimal escaping: '"'
 * and '\' as \" and \\; U+0000-U+001F as \b \f \n \r \t or \u00xx
 * (lower-case hex); each byte that is not part of valid UTF-8 as \ufffd;
 * every other character as its UTF-8 bytes. */
void weir_json_quote(weir_buf *dst, const void *s, size_t len);
/* weir_json_float_text appends f as Python's repr prints a float: shortest
 * round-trip digits, "1.0" for integral values, exponent form outside
 * 1e-4 <= |f| < 1e16 (1e+16, 1.5e-05); "nan", "inf", "-inf". */
void weir_json_float_text(weir_buf *dst, double f);

/* weir_json_writer appends JSON to a buffer, inserting commas itself:
 *
 *     weir_json_writer w = weir_json_writer_on(buf);
 *     weir_json_begin_object(&w);
 *     weir_json_key(&w, "count");
 *     weir_json_write_int(&w, 3);
 *     weir_json_end_object(&w);   -- buf now ends with {"count":3}
 */
typedef struct weir_json_writer {
    weir_buf *buf;
    bool comma;
} weir_json_writer;

weir_json_writer weir_json_writer_on(weir_buf *buf);
void weir_json_begin_object(weir_json_writer *w);
void weir_json_end_object(weir_json_writer *w);
void weir_json_begin_array(weir_json_writer *w);
void weir_json_end_array(weir_json_writer *w);
void weir_json_key(weir_json_writer *w, const char *name);
void weir_json_key_n(weir_json_writer *w, const void *name, size_t len);
void weir_json_write_string(weir_json_writer *w, const void *s, size_t len);
void weir_json_write_int(weir_json_writer *w, int64_t v);
/* weir_json_write_float writes as weir_json_float_text, NaN and inf as null. */
void weir_json_write_float(weir_json_writer *w, double v);
void weir_json_write_bool(weir_json_writer *w, bool v);
void weir_json_write_null(weir_json_writer *w);
/* weir_json_write_raw writes raw, one well-formed JSON value, as it is. */
void weir_json_write_raw(weir_json_writer *w, const void *raw, size_t len);

/* weir_config_string reads the string field name of a JSON config object
 * into *out (replacing its contents), leaving *out as it was (the default)
 * when the config is empty, null or not an object, or the field is missing
 * or null. It returns NULL, or an error for malformed JSON or a field of
 * another kind ("config: field x must be a string, not number"). */
const char *weir_config_string(const uint8_t *config, size_t len, const char *name, weir_buf *out);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_H */
