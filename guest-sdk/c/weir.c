/*
 * weir.c: the weir guest SDK for C, ABI v1. See weir.h for the API and
 * abi/ABI.md for the frames implemented here.
 */
#include "weir.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A host bug (a malformed frame) or running out of memory: kill the
 * instance. */
#define WEIR_FAIL() __builtin_trap()

#if defined(__wasm__)
#define EXPORT(name) __attribute__((export_name(name)))
#define IMPORT(name) __attribute__((import_module(WEIR_IMPORT_MODULE), import_name(name)))
IMPORT(WEIR_IMPORT_LOG) void weir__host_log(int32_t level, const void *ptr, uint32_t len);
IMPORT(WEIR_IMPORT_STATE_GET) int32_t weir__host_state_get(uint32_t index, const void *k, uint32_t klen, void *v, uint32_t vcap);
IMPORT(WEIR_IMPORT_STATE_PUT) int32_t weir__host_state_put(uint32_t index, const void *k, uint32_t klen, const void *v, uint32_t vlen);
IMPORT(WEIR_IMPORT_STATE_DELETE) int32_t weir__host_state_delete(uint32_t index, const void *k, uint32_t klen);
#else
/* Native builds (unit tests of the JSON helpers and the frames) have no
 * host: logging goes to stderr and state is unavailable. */
#define EXPORT(name)
static void weir__host_log(int32_t level, const void *ptr, uint32_t len) {
    fprintf(stderr, "[%d] %.*s\n", (int)level, (int)len, (const char *)ptr);
}
static int32_t weir__host_state_get(uint32_t i, const void *k, uint32_t kl, void *v, uint32_t vc) {
    (void)i, (void)k, (void)kl, (void)v, (void)vc;
    return WEIR_ERR_NO_CONTEXT;
}
static int32_t weir__host_state_put(uint32_t i, const void *k, uint32_t kl, const void *v, uint32_t vl) {
    (void)i, (void)k, (void)kl, (void)v, (void)vl;
    return WEIR_ERR_NO_CONTEXT;
}
static int32_t weir__host_state_delete(uint32_t i, const void *k, uint32_t kl) {
    (void)i, (void)k, (void)kl;
    return WEIR_ERR_NO_CONTEXT;
}
#endif

/* ---------------------------------------------------------------------- */
/* Buffers                                                                 */

uint8_t *weir_buf_reserve(weir_buf *b, size_t n) {
    if (b->cap - b->len < n) {
        size_t want = b->len + n;
        if (want < b->len)
            WEIR_FAIL();
        size_t c = b->cap ? b->cap : 64;
        while (c < want)
            c *= 2;
        uint8_t *d = realloc(b->data, c);
        if (!d)
            WEIR_FAIL();
        b->data = d;
        b->cap = c;
    }
    return b->data + b->len;
}

void weir_buf_append(weir_buf *b, const void *p, size_t n) {
    if (n == 0)
        return;
    memcpy(weir_buf_reserve(b, n), p, n);
    b->len += n;
}

void weir_buf_str(weir_buf *b, const char *s) { weir_buf_append(b, s, strlen(s)); }

void weir_buf_byte(weir_buf *b, uint8_t c) {
    *weir_buf_reserve(b, 1) = c;
    b->len++;
}

void weir_buf_u64(weir_buf *b, uint64_t v) {
    char tmp[20];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    weir_buf_append(b, tmp + i, sizeof tmp - i);
}

void weir_buf_i64(weir_buf *b, int64_t v) {
    if (v < 0) {
        weir_buf_byte(b, '-');
        weir_buf_u64(b, (uint64_t)0 - (uint64_t)v);
        return;
    }
    weir_buf_u64(b, (uint64_t)v);
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put64(uint8_t *p, uint64_t v) {
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

void weir_buf_le64(weir_buf *b, uint64_t v) {
    put64(weir_buf_reserve(b, 8), v);
    b->len += 8;
}

void weir_buf_le_i64(weir_buf *b, int64_t v) { weir_buf_le64(b, (uint64_t)v); }

void weir_buf_le_f64(weir_buf *b, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    weir_buf_le64(b, u);
}

void weir_buf_free(weir_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

uint64_t weir_le64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

int64_t weir_le_i64(const uint8_t *p) { return (int64_t)weir_le64(p); }

double weir_le_f64(const uint8_t *p) {
    uint64_t u = weir_le64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static void buf_put32(weir_buf *b, uint32_t v) {
    put32(weir_buf_reserve(b, 4), v);
    b->len += 4;
}

static uint64_t pack(const void *p, size_t n) { return (uint64_t)(uintptr_t)p << 32 | (uint32_t)n; }

const char *weir_fmt(const char *fmt, ...) {
    static weir_buf b;
    va_list ap;
    va_start(ap, fmt);
    char probe[1];
    int n = vsnprintf(probe, sizeof probe, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    b.len = 0;
    weir_buf_reserve(&b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf((char *)b.data, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return (const char *)b.data;
}

/* ---------------------------------------------------------------------- */
/* Exports every module has: version marker, allocator, init, ops          */

EXPORT(WEIR_EXPORT_VERSION) void weir__export_abi_v1(void) {}

/* The one region the host writes call input into. */
static uint8_t *input;
static size_t input_cap;

EXPORT(WEIR_EXPORT_ALLOC) uint32_t weir__export_alloc(uint32_t size) {
    if (size > (1u << 30))
        return 0;
    if (!input || input_cap < size) {
        size_t n = 4096;
        while (n < size)
            n *= 2;
        free(input);
        input = malloc(n);
        input_cap = input ? n : 0;
    }
    return (uint32_t)(uintptr_t)input;
}

static weir_init_fn init_fn;
static const char *typed_init_error(void);
static weir_buf config_copy;
static weir_buf init_msg;

void weir__set_init(weir_init_fn fn) { init_fn = fn; }

EXPORT(WEIR_EXPORT_INIT) uint64_t weir__export_init(uint32_t ptr, uint32_t len) {
    config_copy.len = 0;
    weir_buf_append(&config_copy, (const void *)(uintptr_t)ptr, len);
    weir_buf_reserve(&config_copy, 1)[0] = 0; /* NUL after the text, for convenience */
    const char *err = typed_init_error();
    if (!err && !init_fn)
        return 0;
    const uint8_t *cfg = config_copy.data ? config_copy.data : (const uint8_t *)"";
    if (!err)
        err = init_fn(cfg, config_copy.len);
    if (!err)
        return 0;
    init_msg.len = 0;
    weir_buf_str(&init_msg, err);
    if (init_msg.len == 0)
        weir_buf_str(&init_msg, "init failed");
    return pack(init_msg.data, init_msg.len);
}

/* The operations the registration macros recorded, for weir_ops. */
static uint32_t registered_ops;

void weir__add_op(uint32_t bit) { registered_ops |= bit; }

/* A typed module (one using WEIR_FIELDS) reports the operations of its
 * typed functions, which are the entry points a host that knows the typed
 * convention calls (ABI section 14). */
static bool typed_module;
static uint32_t typed_ops;

EXPORT(WEIR_EXPORT_OPS) uint32_t weir__export_ops(void) { return typed_module ? typed_ops : registered_ops; }

/* ---------------------------------------------------------------------- */
/* Frames                                                                  */

/* reader is a bounds-checked cursor over a frame the host wrote. */
typedef struct reader {
    const uint8_t *p, *end;
} reader;

static reader reader_at(uint32_t ptr, uint32_t len) {
    const uint8_t *p = (const uint8_t *)(uintptr_t)ptr;
    return (reader){p, p + len};
}

static const uint8_t *take(reader *r, size_t n) {
    if ((size_t)(r->end - r->p) < n)
        WEIR_FAIL();
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

static uint32_t take32(reader *r) { return get32(take(r, 4)); }

/* take_bytes reads a u32 length and the bytes; NULL for WEIR_ABSENT. */
static const uint8_t *take_bytes(reader *r, size_t *len) {
    uint32_t n = take32(r);
    if (n == WEIR_ABSENT) {
        *len = 0;
        return NULL;
    }
    *len = n;
    return take(r, n);
}

static void read_record(reader *rd, weir_record *r, uint32_t index) {
    r->timestamp = (int64_t)weir_le64(take(rd, 8));
    r->key = take_bytes(rd, &r->key_len);
    r->value = take_bytes(rd, &r->value_len);
    r->header_count = take32(rd);
    r->headers_ = rd->p;
    r->index_ = index;
    for (uint32_t i = 0; i < r->header_count; i++) {
        take(rd, take32(rd));
        take(rd, take32(rd));
    }
}

bool weir_header_next(const weir_record *r, weir_header_iter *it, weir_header *h) {
    if (it->i >= r->header_count)
        return false;
    const uint8_t *p = r->headers_ + it->off;
    h->name_len = get32(p);
    h->name = p + 4;
    p += 4 + h->name_len;
    h->value_len = get32(p);
    h->value = p + 4;
    p += 4 + h->value_len;
    it->off = (size_t)(p - r->headers_);
    it->i++;
    return true;
}

bool weir_header_get(const weir_record *r, const char *name, weir_bytes *value) {
    weir_header_iter it = {0, 0};
    size_t n = strlen(name);
    weir_header h;
    while (weir_header_next(r, &it, &h)) {
        if (h.name_len == n && memcmp(h.name, name, n) == 0) {
            value->ptr = h.value;
            value->len = h.value_len;
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------------- */
/* Output                                                                  */

enum { MODE_MAP, MODE_FLAT_MAP, MODE_FILTER, MODE_AGG };

struct weir_out {
    int mode;
    const weir_record *rec;
    size_t rec_start;     /* frame length before this record's entries */
    uint32_t rec_entries; /* entries written for this record */
    bool rejected;
    bool finished; /* map: the one record was written */
    bool building; /* between weir_value_begin and weir_value_end */
    size_t value_at; /* offset of the value length being built */
    uint8_t flags;   /* fields set for the next record */
    bool key_null;
    int64_t ts;
    uint32_t nhdr;
    weir_buf key, hdr; /* staged key and encoded headers */
};

static weir_buf frame;      /* the output frame */
static uint32_t frame_count; /* entries (or errors, for add) in it */
static weir_out the_out;

static void out_reset(weir_out *o, int mode, const weir_record *r) {
    o->mode = mode;
    o->rec = r;
    o->rec_start = frame.len;
    o->rec_entries = 0;
    o->rejected = o->finished = o->building = false;
    o->flags = 0;
    o->nhdr = 0;
}

/* misuse rejects the record for a call the function should not have made. */
static void misuse(weir_out *o, const char *what) {
    weir_reject(o, what);
}

/* usable reports whether fields may be set now. */
static bool usable(weir_out *o, const char *call) {
    if (o->rejected)
        return false;
    if (o->building) {
        o->building = false;
        misuse(o, "weir: weir_out call between weir_value_begin and weir_value_end");
        return false;
    }
    switch (o->mode) {
    case MODE_MAP:
        if (o->finished) {
            misuse(o, call);
            return false;
        }
        return true;
    case MODE_FLAT_MAP:
        return true;
    default:
        misuse(o, "weir: only map and flat_map functions output records");
        return false;
    }
}

static void entry_head(weir_out *o, uint8_t kind) {
    uint8_t *q = weir_buf_reserve(&frame, 5);
    q[0] = kind;
    put32(q + 1, o->rec->index_);
    frame.len += 5;
}

/* begin_record writes a record entry up to its value length, which
 * end_record fills in. */
static void begin_record(weir_out *o) {
    if (!o->flags) {
        /* The common entry, a value only: kind, index, flags and the
         * value length to fill in, in one reservation. */
        uint8_t *q = weir_buf_reserve(&frame, 10);
        q[0] = WEIR_ENTRY_RECORD;
        put32(q + 1, o->rec->index_);
        q[5] = 0;
        frame.len += 6;
        o->value_at = frame.len;
        frame.len += 4;
        return;
    }
    entry_head(o, WEIR_ENTRY_RECORD);
    weir_buf_byte(&frame, o->flags);
    if (o->flags & WEIR_FLAG_KEY) {
        if (o->key_null) {
            buf_put32(&frame, WEIR_ABSENT);
        } else {
            buf_put32(&frame, (uint32_t)o->key.len);
            weir_buf_append(&frame, o->key.data, o->key.len);
        }
    }
    if (o->flags & WEIR_FLAG_TIMESTAMP)
        weir_buf_le64(&frame, (uint64_t)o->ts);
    if (o->flags & WEIR_FLAG_HEADERS) {
        buf_put32(&frame, o->nhdr);
        weir_buf_append(&frame, o->hdr.data, o->hdr.len);
    }
    o->value_at = frame.len;
    buf_put32(&frame, 0);
}

static void end_record(weir_out *o, uint32_t value_len) {
    put32(frame.data + o->value_at, value_len);
    frame_count++;
    o->rec_entries++;
    o->flags = 0;
    o->nhdr = 0;
    o->finished = true;
}

void weir_set_key(weir_out *o, const void *key, size_t len) {
    if (!usable(o, "weir: weir_set_key called after the map's value was set"))
        return;
    o->flags |= WEIR_FLAG_KEY;
    o->key_null = false;
    o->key.len = 0;
    weir_buf_append(&o->key, key, len);
}

void weir_set_key_null(weir_out *o) {
    if (!usable(o, "weir: weir_set_key_null called after the map's value was set"))
        return;
    o->flags |= WEIR_FLAG_KEY;
    o->key_null = true;
}

void weir_set_timestamp(weir_out *o, int64_t ms) {
    if (!usable(o, "weir: weir_set_timestamp called after the map's value was set"))
        return;
    o->flags |= WEIR_FLAG_TIMESTAMP;
    o->ts = ms;
}

void weir_add_header(weir_out *o, const void *name, size_t nlen, const void *value, size_t vlen) {
    if (!usable(o, "weir: weir_add_header called after the map's value was set"))
        return;
    if (!(o->flags & WEIR_FLAG_HEADERS)) {
        o->hdr.len = 0;
        o->nhdr = 0;
    }
    o->flags |= WEIR_FLAG_HEADERS;
    buf_put32(&o->hdr, (uint32_t)nlen);
    weir_buf_append(&o->hdr, name, nlen);
    buf_put32(&o->hdr, (uint32_t)vlen);
    weir_buf_append(&o->hdr, value, vlen);
    o->nhdr++;
}

void weir_clear_headers(weir_out *o) {
    if (!usable(o, "weir: weir_clear_headers called after the map's value was set"))
        return;
    o->flags |= WEIR_FLAG_HEADERS;
    o->hdr.len = 0;
    o->nhdr = 0;
}

void weir_set_value(weir_out *o, const void *value, size_t len) {
    if (!usable(o, "weir: a map function set more than one value"))
        return;
    begin_record(o);
    weir_buf_append(&frame, value, len);
    end_record(o, (uint32_t)len);
}

void weir_set_value_null(weir_out *o) {
    if (!usable(o, "weir: a map function set more than one value"))
        return;
    begin_record(o);
    end_record(o, WEIR_ABSENT);
}

weir_buf *weir_value_begin(weir_out *o) {
    if (!usable(o, "weir: a map function set more than one value")) {
        /* Give the caller somewhere harmless to write. */
        static weir_buf sink;
        sink.len = 0;
        return &sink;
    }
    begin_record(o);
    o->building = true;
    return &frame;
}

void weir_value_end(weir_out *o) {
    if (!o->building)
        return;
    o->building = false;
    end_record(o, (uint32_t)(frame.len - o->value_at - 4));
}

void weir_emit(weir_out *o, const void *value, size_t len) { weir_set_value(o, value, len); }

void weir_emit_keep(weir_out *o) {
    if (!usable(o, "weir: a map function output more than one record"))
        return;
    entry_head(o, WEIR_ENTRY_KEEP);
    frame_count++;
    o->rec_entries++;
    o->finished = true;
}

/* write_message appends a u32 length and msg, which may lie in the frame
 * itself (in the part being discarded). */
static void write_message(const char *msg, size_t len) {
    static weir_buf tmp;
    if (frame.data && (const uint8_t *)msg >= frame.data && (const uint8_t *)msg < frame.data + frame.cap) {
        tmp.len = 0;
        weir_buf_append(&tmp, msg, len);
        msg = (const char *)tmp.data;
    }
    buf_put32(&frame, (uint32_t)len);
    weir_buf_append(&frame, msg, len);
}

void weir_reject_n(weir_out *o, const char *msg, size_t len) {
    if (o->rejected)
        return;
    o->rejected = true;
    o->building = false;
    if (len == 0) {
        msg = "rejected";
        len = 8;
    }
    if (o->mode == MODE_AGG) {
        /* An add error: the record's index and the message, before the
         * group's accumulator. */
        buf_put32(&frame, o->rec->index_);
        write_message(msg, len);
        frame_count++;
        return;
    }
    /* Discard what the function output for the record. */
    frame.len = o->rec_start;
    frame_count -= o->rec_entries;
    o->rec_entries = 0;
    entry_head(o, WEIR_ENTRY_ERROR);
    write_message(msg, len);
    frame_count++;
    o->rec_entries++;
}

void weir_reject(weir_out *o, const char *msg) { weir_reject_n(o, msg, strlen(msg)); }

/* vformat prints fmt into b, which it resets, and returns the length. */
static size_t vformat(weir_buf *b, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    char probe[1];
    int n = vsnprintf(probe, sizeof probe, fmt, ap);
    if (n < 0)
        n = 0;
    b->len = 0;
    weir_buf_reserve(b, (size_t)n + 1);
    vsnprintf((char *)b->data, (size_t)n + 1, fmt, again);
    va_end(again);
    return (size_t)n;
}

void weir_rejectf(weir_out *o, const char *fmt, ...) {
    static weir_buf b;
    va_list ap;
    va_start(ap, fmt);
    size_t n = vformat(&b, fmt, ap);
    va_end(ap);
    weir_reject_n(o, (const char *)b.data, n);
}

bool weir_rejected(const weir_out *o) { return o->rejected; }

/* finish completes a map or flat_map record's output after its function
 * returned. */
static void finish(weir_out *o) {
    if (o->rejected)
        return;
    if (o->building)
        weir_value_end(o);
    if (o->flags) {
        if (o->mode == MODE_MAP && o->finished) {
            misuse(o, "weir: a field was set after the map's value");
            return;
        }
        /* Fields set without a value: the input's value. */
        begin_record(o);
        if (o->rec->value) {
            weir_buf_append(&frame, o->rec->value, o->rec->value_len);
            end_record(o, (uint32_t)o->rec->value_len);
        } else {
            end_record(o, WEIR_ABSENT);
        }
        return;
    }
    if (o->mode == MODE_MAP && !o->finished) {
        entry_head(o, WEIR_ENTRY_KEEP);
        frame_count++;
        o->rec_entries++;
    }
}

/* ---------------------------------------------------------------------- */
/* Batch calls                                                             */

static uint32_t begin_frame(reader *rd) {
    uint32_t n = take32(rd);
    frame.len = 0;
    frame_count = 0;
    buf_put32(&frame, 0);
    return n;
}

static uint64_t end_frame(void) {
    put32(frame.data, frame_count);
    return pack(frame.data, frame.len);
}

/* run_each calls fn on every record of a batch in mode (map or flat_map:
 * the same calling convention), finishing each record's output. Inlined
 * into each entry point. */
static inline uint64_t run_each(uint32_t ptr, uint32_t len, int mode, weir_map_fn fn) {
    reader rd = reader_at(ptr, len);
    uint32_t n = begin_frame(&rd);
    weir_record r;
    weir_out *o = &the_out;
    for (uint32_t i = 0; i < n; i++) {
        read_record(&rd, &r, i);
        out_reset(o, mode, &r);
        fn(&r, o);
        finish(o);
    }
    return end_frame();
}

uint64_t weir__run_map(uint32_t ptr, uint32_t len, weir_map_fn fn) {
    return run_each(ptr, len, MODE_MAP, fn);
}

uint64_t weir__run_flat_map(uint32_t ptr, uint32_t len, weir_flat_map_fn fn) {
    return run_each(ptr, len, MODE_FLAT_MAP, fn);
}

uint64_t weir__run_filter(uint32_t ptr, uint32_t len, weir_filter_fn fn) {
    reader rd = reader_at(ptr, len);
    uint32_t n = begin_frame(&rd);
    weir_record r;
    weir_out *o = &the_out;
    for (uint32_t i = 0; i < n; i++) {
        read_record(&rd, &r, i);
        out_reset(o, MODE_FILTER, &r);
        bool keep = fn(&r, o);
        if (!o->rejected && keep) {
            entry_head(o, WEIR_ENTRY_KEEP);
            frame_count++;
        }
    }
    return end_frame();
}

/* ---------------------------------------------------------------------- */
/* Aggregate calls                                                         */

static const uint8_t empty[1];

uint64_t weir__agg_create(weir_agg_create_fn fn) {
    static weir_buf acc;
    acc.len = 0;
    fn(&acc);
    return pack(acc.data ? acc.data : empty, acc.len);
}

static const uint8_t *take_acc(reader *rd, size_t *len) {
    const uint8_t *p = take_bytes(rd, len);
    if (!p)
        WEIR_FAIL(); /* accumulators are never absent */
    return p;
}

uint64_t weir__agg_add(uint32_t ptr, uint32_t len, weir_agg_add_fn fn) {
    static weir_buf acc;
    reader rd = reader_at(ptr, len);
    uint32_t groups = take32(&rd);
    frame.len = 0;
    buf_put32(&frame, groups);
    weir_record r;
    weir_out *o = &the_out;
    for (uint32_t g = 0; g < groups; g++) {
        size_t alen;
        const uint8_t *a = take_acc(&rd, &alen);
        acc.len = 0;
        weir_buf_append(&acc, a, alen);
        uint32_t n = take32(&rd);
        size_t errors_at = frame.len;
        buf_put32(&frame, 0);
        frame_count = 0; /* the group's errors */
        for (uint32_t i = 0; i < n; i++) {
            read_record(&rd, &r, i);
            out_reset(o, MODE_AGG, &r);
            fn(&acc, &r, o);
        }
        put32(frame.data + errors_at, frame_count);
        buf_put32(&frame, (uint32_t)acc.len);
        weir_buf_append(&frame, acc.data, acc.len);
    }
    return pack(frame.data, frame.len);
}

/* value_entry writes one entry of a value output frame: the value fn
 * appended (or null), or the error it returned. */
static void value_error(size_t start, const char *err) {
    frame.len = start;
    weir_buf_byte(&frame, WEIR_AGG_ERROR);
    size_t n = strlen(err);
    if (n == 0) {
        err = "failed";
        n = 6;
    }
    write_message(err, n);
}

uint64_t weir__agg_merge(uint32_t ptr, uint32_t len, weir_agg_merge_fn fn) {
    reader rd = reader_at(ptr, len);
    uint32_t n = take32(&rd);
    frame.len = 0;
    buf_put32(&frame, n);
    for (uint32_t i = 0; i < n; i++) {
        weir_bytes a, b;
        a.ptr = take_acc(&rd, &a.len);
        b.ptr = take_acc(&rd, &b.len);
        size_t start = frame.len;
        weir_buf_byte(&frame, WEIR_AGG_OK);
        buf_put32(&frame, 0);
        const char *err = fn(a, b, &frame);
        if (err) {
            value_error(start, err);
            continue;
        }
        put32(frame.data + start + 1, (uint32_t)(frame.len - start - 5));
    }
    return pack(frame.data, frame.len);
}

/* take_context reads the context of an entry of a result context frame
 * (ABI section 12.5), trapping on one the ABI does not allow. */
static void take_context(reader *rd, weir_agg_context *c) {
    c->key.ptr = take_bytes(rd, &c->key.len);
    const uint8_t *p = take(rd, 17);
    uint8_t flags = p[0];
    c->windowed = (flags & WEIR_AGG_CONTEXT_WINDOWED) != 0;
    c->start = (int64_t)weir_le64(p + 1);
    c->end = (int64_t)weir_le64(p + 9);
    if ((flags & ~WEIR_AGG_CONTEXT_WINDOWED) != 0 || (!c->windowed && (c->start != 0 || c->end != 0)) ||
        c->start > c->end)
        WEIR_FAIL(); /* a host bug */
}

/* agg_results answers a result frame, or with ctx_frame a result context
 * frame, with fn or, when fn is NULL, cfn. */
static weir_bytes agg_results(const void *in, size_t len, bool ctx_frame, weir_agg_result_fn fn,
                              weir_agg_result_ctx_fn cfn) {
    const uint8_t *b = in;
    reader rd = {b, b + len};
    uint32_t n = take32(&rd);
    frame.len = 0;
    buf_put32(&frame, n);
    for (uint32_t i = 0; i < n; i++) {
        weir_agg_context c = {{NULL, 0}, false, 0, 0};
        if (ctx_frame)
            take_context(&rd, &c);
        weir_bytes a;
        a.ptr = take_acc(&rd, &a.len);
        size_t start = frame.len;
        weir_buf_byte(&frame, WEIR_AGG_OK);
        buf_put32(&frame, 0);
        bool null = false;
        const char *err = fn ? fn(a, &frame, &null) : cfn(a, &c, &frame, &null);
        if (err) {
            value_error(start, err);
            continue;
        }
        if (null) {
            frame.len = start + 5;
            put32(frame.data + start + 1, WEIR_ABSENT);
            continue;
        }
        put32(frame.data + start + 1, (uint32_t)(frame.len - start - 5));
    }
    if (rd.p != rd.end)
        WEIR_FAIL(); /* bytes after the last accumulator */
    return (weir_bytes){frame.data, frame.len};
}

weir_bytes weir__agg_results_frame(const void *in, size_t len, bool ctx_frame, weir_agg_result_fn fn,
                                   weir_agg_result_ctx_fn cfn) {
    return agg_results(in, len, ctx_frame, fn, cfn);
}

uint64_t weir__agg_results(uint32_t ptr, uint32_t len, bool ctx_frame, weir_agg_result_fn fn,
                           weir_agg_result_ctx_fn cfn) {
    weir_bytes out = agg_results((const void *)(uintptr_t)ptr, len, ctx_frame, fn, cfn);
    return pack(out.ptr, out.len);
}

uint64_t weir__agg_result(uint32_t ptr, uint32_t len, weir_agg_result_fn fn) {
    return weir__agg_results(ptr, len, false, fn, NULL);
}

/* ---------------------------------------------------------------------- */
/* Typed fields (ABI section 14)                                           */

/* fail reports a bug (a malformed frame from the host, or a misuse of the
 * readers) on stderr, whose last lines the host quotes in the trap's
 * reason, and traps. */
static void fail(const char *what) {
    weir_buf b = {0};
    weir_buf_str(&b, "weir: ");
    weir_buf_str(&b, what);
    weir_buf_byte(&b, '\n');
    if (write(2, b.data, b.len) < 0) {
        /* nothing more to do: trap anyway */
    }
    WEIR_FAIL();
}

/* The declaration: WEIR_FIELDS's static table, then the fields declared at
 * init, encoded as in the declaration frame. */
static const weir_field_decl *static_fields;
static size_t static_field_count;
static weir_buf init_fields;
static uint32_t init_field_count;

void weir__set_fields(const weir_field_decl *fields, size_t n) {
    static_fields = fields;
    static_field_count = n;
    typed_module = true;
}

void weir__add_typed_op(uint32_t bit) { typed_ops |= bit; }

static void encode_field(weir_buf *b, const char *path, uint8_t type, uint8_t flags) {
    size_t n = path ? strlen(path) : 0;
    weir_buf_byte(b, type);
    weir_buf_byte(b, flags);
    buf_put32(b, (uint32_t)n);
    weir_buf_append(b, path, n);
}

int weir_declare_field(const char *path, uint8_t type, uint8_t flags) {
    encode_field(&init_fields, path, type, flags);
    return (int)(static_field_count + init_field_count++);
}

weir_bytes weir__fields_frame(void) {
    static weir_buf decl;
    decl.len = 0;
    buf_put32(&decl, WEIR_TYPED_VERSION);
    buf_put32(&decl, (uint32_t)(static_field_count + init_field_count));
    for (size_t i = 0; i < static_field_count; i++)
        encode_field(&decl, static_fields[i].path, static_fields[i].type, static_fields[i].flags);
    weir_buf_append(&decl, init_fields.data, init_fields.len);
    return (weir_bytes){decl.data, decl.len};
}

uint64_t weir__fields_export(void) {
    weir_bytes f = weir__fields_frame();
    return pack(f.ptr, f.len);
}

/* typed_init_error checks, before the plugin's init runs, that a module
 * with WEIR_FIELDS registers a typed function and the reverse, and forgets
 * the fields an earlier init declared. */
static const char *typed_init_error(void) {
    init_fields.len = 0;
    init_field_count = 0;
    if (typed_module && !typed_ops)
        return "weir: the module declares fields (WEIR_FIELDS) but registers no typed function "
               "(WEIR_TYPED_MAP, WEIR_TYPED_FLAT_MAP, WEIR_TYPED_FILTER or WEIR_TYPED_AGGREGATE)";
    if (!typed_module && typed_ops)
        return "weir: the module registers a typed function (WEIR_TYPED_MAP, ...) but declares no "
               "fields: add WEIR_FIELDS(...), once, at file scope";
    return NULL;
}

/* ---- Reading a typed batch frame ---- */

static const uint8_t *column_entry_at(const uint8_t *in, uint32_t k) {
    return in + WEIR_TYPED_HEADER_SIZE + (size_t)WEIR_TYPED_COLUMN_SIZE * k;
}

static const char *check_region(size_t len, uint32_t off, uint64_t size) {
    if (off % WEIR_TYPED_ALIGN != 0)
        return "a region's offset is not a multiple of 8";
    if (off < WEIR_TYPED_HEADER_SIZE || (uint64_t)off + size > len)
        return "a region lies outside the frame";
    return NULL;
}

static const char *check_column(const uint8_t *f, size_t len, uint32_t n, uint32_t k) {
    const uint8_t *e = column_entry_at(f, k);
    uint32_t type = get32(e), status_off = get32(e + 4), values_off = get32(e + 8), data_off = get32(e + 12);
    const char *err;
    if (type < WEIR_TYPE_INT || type > WEIR_TYPE_RAW)
        return "unknown type";
    if (k == WEIR_TYPED_TIMESTAMP_COLUMN && (type != WEIR_TYPE_INT || status_off != 0))
        return "the timestamp column must be of type int without statuses";
    if (k == WEIR_TYPED_KEY_COLUMN && type != WEIR_TYPE_STRING)
        return "the key column must be of type string";
    if (k != WEIR_TYPED_TIMESTAMP_COLUMN) {
        if (status_off == 0)
            return "no statuses";
        if ((err = check_region(len, status_off, n)))
            return err;
    }
    uint64_t width = type == WEIR_TYPE_BOOL ? 1 : type == WEIR_TYPE_INT || type == WEIR_TYPE_FLOAT ? 8 : 0;
    if (width) {
        if (data_off != 0)
            return "a data offset for a fixed-width column";
        return check_region(len, values_off, width * n);
    }
    if ((err = check_region(len, values_off, 4 * (uint64_t)n + 4)))
        return err;
    const uint8_t *offs = f + values_off;
    uint32_t prev = 0;
    for (uint32_t i = 0; i <= n; i++) {
        uint32_t o = get32(offs + 4 * (size_t)i);
        if ((i == 0 && o != 0) || o < prev)
            return "string offsets out of order";
        prev = o;
    }
    return check_region(len, data_off, prev);
}

const char *weir_typed_batch_read(weir_typed_batch *b, const void *in, size_t len) {
    static weir_buf msg;
    const uint8_t *f = in;
    memset(b, 0, sizeof *b);
    const char *err = NULL;
    uint32_t k = 0;
    bool col = false;
    if (len < WEIR_TYPED_HEADER_SIZE) {
        err = "truncated record and field counts";
    } else if (get32(f) > WEIR_MAX_BATCH_RECORDS) {
        err = "record count over the limit";
    } else if (get32(f + 4) > WEIR_MAX_TYPED_FIELDS) {
        err = "field count over the limit";
    } else {
        uint32_t n = get32(f), cols = get32(f + 4) + WEIR_TYPED_FIRST_FIELD_COLUMN;
        if (len < WEIR_TYPED_HEADER_SIZE + (size_t)WEIR_TYPED_COLUMN_SIZE * cols)
            err = "truncated column table";
        for (; !err && k < cols; k++) {
            if ((err = check_column(f, len, n, k))) {
                col = true;
                break;
            }
        }
    }
    if (err) {
        msg.len = 0;
        weir_buf_str(&msg, "typed batch frame: ");
        if (col) {
            weir_buf_str(&msg, "column ");
            weir_buf_u64(&msg, k);
            weir_buf_str(&msg, ": ");
        }
        weir_buf_str(&msg, err);
        weir_buf_byte(&msg, 0);
        return (const char *)msg.data;
    }
    b->count = get32(f);
    b->fields = get32(f + 4);
    b->frame_ = f;
    b->len_ = len;
    return NULL;
}

static const char *type_name(uint32_t t) {
    static const char *names[] = {"null", "int", "float", "bool", "string", "raw"};
    return t <= WEIR_TYPE_RAW ? names[t] : "unknown";
}

/* column_entry returns column k's table entry, for record r. */
static const uint8_t *column_entry(const weir_typed_batch *b, uint32_t k, uint32_t r) {
    if (!b->frame_)
        fail("a typed batch read before weir_typed_batch_read");
    if (r >= b->count)
        fail("a record index out of range of the typed batch");
    return column_entry_at(b->frame_, k);
}

/* field_entry returns field's table entry, checking its type. */
static const uint8_t *field_entry(const weir_typed_batch *b, uint32_t field, uint32_t r, uint32_t type) {
    if (field >= b->fields)
        fail("a field index out of range of the declared fields");
    const uint8_t *e = column_entry(b, WEIR_TYPED_FIRST_FIELD_COLUMN + field, r);
    if (get32(e) != type) {
        static weir_buf msg;
        msg.len = 0;
        weir_buf_str(&msg, "field ");
        weir_buf_u64(&msg, field);
        weir_buf_str(&msg, " is of type ");
        weir_buf_str(&msg, type_name(get32(e)));
        weir_buf_str(&msg, ", read as ");
        weir_buf_str(&msg, type_name(type));
        weir_buf_byte(&msg, 0);
        fail((const char *)msg.data);
    }
    return e;
}

static weir_bytes column_bytes(const weir_typed_batch *b, const uint8_t *e, uint32_t r) {
    const uint8_t *offs = b->frame_ + get32(e + 8) + 4 * (size_t)r;
    uint32_t lo = get32(offs), hi = get32(offs + 4);
    return (weir_bytes){b->frame_ + get32(e + 12) + lo, hi - lo};
}

int weir_typed_status(const weir_typed_batch *b, uint32_t field, uint32_t r) {
    if (field >= b->fields)
        fail("a field index out of range of the declared fields");
    const uint8_t *e = column_entry(b, WEIR_TYPED_FIRST_FIELD_COLUMN + field, r);
    return b->frame_[get32(e + 4) + (size_t)r];
}

int64_t weir_typed_int(const weir_typed_batch *b, uint32_t field, uint32_t r) {
    const uint8_t *e = field_entry(b, field, r, WEIR_TYPE_INT);
    return weir_le_i64(b->frame_ + get32(e + 8) + 8 * (size_t)r);
}

double weir_typed_float(const weir_typed_batch *b, uint32_t field, uint32_t r) {
    const uint8_t *e = field_entry(b, field, r, WEIR_TYPE_FLOAT);
    return weir_le_f64(b->frame_ + get32(e + 8) + 8 * (size_t)r);
}

bool weir_typed_bool(const weir_typed_batch *b, uint32_t field, uint32_t r) {
    const uint8_t *e = field_entry(b, field, r, WEIR_TYPE_BOOL);
    return b->frame_[get32(e + 8) + (size_t)r] != 0;
}

weir_bytes weir_typed_string(const weir_typed_batch *b, uint32_t field, uint32_t r) {
    return column_bytes(b, field_entry(b, field, r, WEIR_TYPE_STRING), r);
}

weir_bytes weir_typed_raw(const weir_typed_batch *b, uint32_t field, uint32_t r) {
    return column_bytes(b, field_entry(b, field, r, WEIR_TYPE_RAW), r);
}

int64_t weir_typed_timestamp(const weir_typed_batch *b, uint32_t r) {
    const uint8_t *e = column_entry(b, WEIR_TYPED_TIMESTAMP_COLUMN, r);
    return weir_le_i64(b->frame_ + get32(e + 8) + 8 * (size_t)r);
}

weir_bytes weir_typed_key(const weir_typed_batch *b, uint32_t r) {
    const uint8_t *e = column_entry(b, WEIR_TYPED_KEY_COLUMN, r);
    if (b->frame_[get32(e + 4) + (size_t)r] != WEIR_VALUE_PRESENT)
        return (weir_bytes){NULL, 0};
    return column_bytes(b, e, r);
}

weir_record weir_typed_record(const weir_typed_batch *b, uint32_t r) {
    weir_record rec;
    memset(&rec, 0, sizeof rec);
    weir_bytes key = weir_typed_key(b, r);
    rec.key = key.ptr;
    rec.key_len = key.len;
    rec.timestamp = weir_typed_timestamp(b, r);
    rec.index_ = r;
    return rec;
}

/* ---- Writing a typed output frame ---- */

enum { TYPED_ANY = 0, TYPED_MAP, TYPED_FILTER }; /* flat_map is ANY */

void weir_typed_out_reset(weir_typed_out *o) {
    o->frame_.len = 0;
    buf_put32(&o->frame_, 0);
    o->count_ = 0;
    o->index_ = 0;
    o->rec_start_ = o->frame_.len;
    o->rec_entries_ = 0;
    o->ops_at_ = 0;
    o->rejected_ = false;
}

void weir_typed_out_record(weir_typed_out *o, uint32_t index) {
    if (o->frame_.len < 4)
        weir_typed_out_reset(o);
    if (o->count_ && index < o->index_)
        fail("typed output: input indexes must not decrease");
    o->index_ = index;
    o->rec_start_ = o->frame_.len;
    o->rec_entries_ = 0;
    o->ops_at_ = 0;
    o->rejected_ = false;
}

weir_bytes weir_typed_out_frame(weir_typed_out *o) {
    if (o->frame_.len < 4)
        weir_typed_out_reset(o);
    put32(o->frame_.data, o->count_);
    o->ops_at_ = 0;
    return (weir_bytes){o->frame_.data, o->frame_.len};
}

void weir_typed_out_free(weir_typed_out *o) {
    weir_buf_free(&o->frame_);
    memset(o, 0, sizeof *o);
}

static void typed_entry(weir_typed_out *o, uint8_t kind) {
    if (o->frame_.len < 4)
        weir_typed_out_reset(o);
    uint8_t *q = weir_buf_reserve(&o->frame_, 5);
    q[0] = kind;
    put32(q + 1, o->index_);
    o->frame_.len += 5;
    o->count_++;
    o->rec_entries_++;
    o->ops_at_ = 0;
}

void weir_typed_reject_n(weir_typed_out *o, const char *msg, size_t len) {
    if (o->rejected_)
        return;
    o->rejected_ = true;
    if (len == 0) {
        msg = "rejected";
        len = 8;
    }
    static weir_buf tmp; /* msg may lie in the part of the frame discarded */
    const weir_buf *f = &o->frame_;
    if (f->data && (const uint8_t *)msg >= f->data && (const uint8_t *)msg < f->data + f->cap) {
        tmp.len = 0;
        weir_buf_append(&tmp, msg, len);
        msg = (const char *)tmp.data;
    }
    if (o->frame_.len >= 4) {
        o->frame_.len = o->rec_start_;
        o->count_ -= o->rec_entries_;
        o->rec_entries_ = 0;
    }
    typed_entry(o, WEIR_ENTRY_ERROR);
    buf_put32(&o->frame_, (uint32_t)len);
    weir_buf_append(&o->frame_, msg, len);
}

void weir_typed_reject(weir_typed_out *o, const char *msg) { weir_typed_reject_n(o, msg, strlen(msg)); }

void weir_typed_rejectf(weir_typed_out *o, const char *fmt, ...) {
    static weir_buf b;
    va_list ap;
    va_start(ap, fmt);
    size_t n = vformat(&b, fmt, ap);
    va_end(ap);
    weir_typed_reject_n(o, (const char *)b.data, n);
}

bool weir_typed_rejected(const weir_typed_out *o) { return o->rejected_; }

/* typed_usable reports whether out may take another keep or patch entry. */
static bool typed_usable(weir_typed_out *o) {
    if (o->rejected_)
        return false;
    if (o->mode_ == TYPED_FILTER) {
        weir_typed_reject(o, "weir: a filter function keeps a record by its result, and cannot patch it");
        return false;
    }
    if (o->mode_ == TYPED_MAP && o->rec_entries_ > 0) {
        weir_typed_reject(o, "weir: a map function output more than one entry for a record");
        return false;
    }
    return true;
}

void weir_typed_keep(weir_typed_out *o) {
    if (typed_usable(o))
        typed_entry(o, WEIR_ENTRY_KEEP);
}

void weir_patch_begin(weir_typed_out *o, uint8_t flags, const void *key, size_t key_len, int64_t ts) {
    if (!typed_usable(o))
        return;
    if (flags & ~(WEIR_PATCH_FLAG_NEW | WEIR_PATCH_FLAG_KEY | WEIR_PATCH_FLAG_TIMESTAMP)) {
        weir_typed_reject(o, "weir: weir_patch_begin with unknown flags");
        return;
    }
    typed_entry(o, WEIR_ENTRY_PATCH);
    weir_buf_byte(&o->frame_, flags);
    if (flags & WEIR_PATCH_FLAG_KEY) {
        if (!key) {
            buf_put32(&o->frame_, WEIR_ABSENT);
        } else {
            buf_put32(&o->frame_, (uint32_t)key_len);
            weir_buf_append(&o->frame_, key, key_len);
        }
    }
    if (flags & WEIR_PATCH_FLAG_TIMESTAMP)
        weir_buf_le_i64(&o->frame_, ts);
    o->ops_at_ = o->frame_.len;
    buf_put32(&o->frame_, 0);
}

/* patch_op appends the head of an operation of the open patch. */
static bool patch_op(weir_typed_out *o, uint8_t op, const char *path) {
    if (o->rejected_)
        return false;
    if (!o->ops_at_) {
        weir_typed_reject(o, "weir: a patch operation outside a patch (call weir_patch_begin first)");
        return false;
    }
    uint32_t n = get32(o->frame_.data + o->ops_at_);
    if (n >= WEIR_MAX_PATCH_OPS) {
        weir_typed_reject(o, "weir: a patch of more than 65536 operations");
        return false;
    }
    put32(o->frame_.data + o->ops_at_, n + 1);
    size_t plen = strlen(path);
    weir_buf_byte(&o->frame_, op);
    buf_put32(&o->frame_, (uint32_t)plen);
    weir_buf_append(&o->frame_, path, plen);
    return true;
}

void weir_patch_set_null(weir_typed_out *o, const char *path) {
    if (patch_op(o, WEIR_PATCH_OP_SET, path))
        weir_buf_byte(&o->frame_, WEIR_TYPE_NULL);
}

void weir_patch_set_int(weir_typed_out *o, const char *path, int64_t v) {
    if (!patch_op(o, WEIR_PATCH_OP_SET, path))
        return;
    weir_buf_byte(&o->frame_, WEIR_TYPE_INT);
    weir_buf_le_i64(&o->frame_, v);
}

void weir_patch_set_float(weir_typed_out *o, const char *path, double v) {
    if (!patch_op(o, WEIR_PATCH_OP_SET, path))
        return;
    weir_buf_byte(&o->frame_, WEIR_TYPE_FLOAT);
    weir_buf_le_f64(&o->frame_, v);
}

void weir_patch_set_bool(weir_typed_out *o, const char *path, bool v) {
    if (!patch_op(o, WEIR_PATCH_OP_SET, path))
        return;
    weir_buf_byte(&o->frame_, WEIR_TYPE_BOOL);
    weir_buf_byte(&o->frame_, v ? 1 : 0);
}

static void patch_bytes(weir_typed_out *o, const char *path, uint8_t type, const void *p, size_t len) {
    if (!patch_op(o, WEIR_PATCH_OP_SET, path))
        return;
    weir_buf_byte(&o->frame_, type);
    buf_put32(&o->frame_, (uint32_t)len);
    weir_buf_append(&o->frame_, p, len);
}

void weir_patch_set_string(weir_typed_out *o, const char *path, const void *s, size_t len) {
    patch_bytes(o, path, WEIR_TYPE_STRING, s, len);
}

void weir_patch_set_raw(weir_typed_out *o, const char *path, const void *json, size_t len) {
    patch_bytes(o, path, WEIR_TYPE_RAW, json, len);
}

void weir_patch_remove(weir_typed_out *o, const char *path) {
    if (!o->rejected_ && path[0] == 0) {
        weir_typed_reject(o, "weir: weir_patch_remove of the empty path (remove a field, or set the whole value)");
        return;
    }
    patch_op(o, WEIR_PATCH_OP_REMOVE, path);
}

/* ---- Typed calls ---- */

static weir_typed_batch the_batch;
static weir_typed_out the_typed_out;

static void read_batch(weir_typed_batch *b, const void *in, size_t len) {
    const char *err = weir_typed_batch_read(b, in, len);
    if (err)
        fail(err);
}

/* typed_each calls fn on every record of a typed batch in mode (map or
 * flat_map: the same calling convention). Inlined into each entry point. */
static inline weir_bytes typed_each(const void *in, size_t len, int mode, weir_typed_map_fn fn) {
    weir_typed_batch *b = &the_batch;
    weir_typed_out *o = &the_typed_out;
    read_batch(b, in, len);
    o->mode_ = mode;
    weir_typed_out_reset(o);
    for (uint32_t r = 0; r < b->count; r++) {
        weir_typed_out_record(o, r);
        fn(b, r, o);
        if (mode == TYPED_MAP && !o->rejected_ && o->rec_entries_ == 0)
            typed_entry(o, WEIR_ENTRY_KEEP);
    }
    return weir_typed_out_frame(o);
}

static inline weir_bytes typed_filter(const void *in, size_t len, weir_typed_filter_fn fn) {
    weir_typed_batch *b = &the_batch;
    weir_typed_out *o = &the_typed_out;
    read_batch(b, in, len);
    o->mode_ = TYPED_FILTER;
    weir_typed_out_reset(o);
    for (uint32_t r = 0; r < b->count; r++) {
        weir_typed_out_record(o, r);
        bool keep = fn(b, r, o);
        if (!o->rejected_ && keep)
            typed_entry(o, WEIR_ENTRY_KEEP);
    }
    return weir_typed_out_frame(o);
}

/* typed_agg_add folds a typed add frame's groups: the same add output frame
 * as weir__agg_add, the records read from the typed batch after the
 * groups. */
static inline weir_bytes typed_agg_add(const void *in, size_t len, weir_typed_agg_add_fn fn) {
    static weir_buf acc;
    const uint8_t *p = in;
    reader rd = {p, p + len};
    uint32_t groups = take32(&rd);
    const uint8_t *table = rd.p;
    uint64_t total = 0;
    for (uint32_t g = 0; g < groups; g++) {
        size_t alen;
        take_acc(&rd, &alen);
        total += take32(&rd);
        if (total > WEIR_MAX_BATCH_RECORDS)
            fail("typed add frame: more records than a batch holds");
    }
    size_t off = (size_t)(rd.p - p);
    for (; off % WEIR_TYPED_ALIGN != 0; off++)
        if (off >= len || p[off] != 0)
            fail("typed add frame: the padding before the typed batch is not zero bytes");
    weir_typed_batch *b = &the_batch;
    read_batch(b, p + off, len - off);
    if (b->count != total)
        fail("typed add frame: the groups' record counts do not add up to the batch's");
    rd.p = table;
    frame_count = 0;
    frame.len = 0;
    buf_put32(&frame, groups);
    weir_record rec;
    memset(&rec, 0, sizeof rec);
    weir_out *o = &the_out;
    uint32_t first = 0;
    for (uint32_t g = 0; g < groups; g++) {
        size_t alen;
        const uint8_t *a = take_acc(&rd, &alen);
        acc.len = 0;
        weir_buf_append(&acc, a, alen);
        uint32_t n = take32(&rd);
        size_t errors_at = frame.len;
        buf_put32(&frame, 0);
        frame_count = 0; /* the group's errors */
        for (uint32_t i = 0; i < n; i++) {
            rec.index_ = i; /* error entries number records within the group */
            out_reset(o, MODE_AGG, &rec);
            fn(&acc, b, first + i, o);
        }
        put32(frame.data + errors_at, frame_count);
        buf_put32(&frame, (uint32_t)acc.len);
        weir_buf_append(&frame, acc.data, acc.len);
        first += n;
    }
    return (weir_bytes){frame.data, frame.len};
}

static const void *at(uint32_t ptr) { return (const void *)(uintptr_t)ptr; }

static uint64_t pack_bytes(weir_bytes b) { return pack(b.ptr, b.len); }

weir_bytes weir__typed_map(const void *in, size_t len, weir_typed_map_fn fn) {
    return typed_each(in, len, TYPED_MAP, fn);
}

weir_bytes weir__typed_flat_map(const void *in, size_t len, weir_typed_flat_map_fn fn) {
    return typed_each(in, len, TYPED_ANY, fn);
}

weir_bytes weir__typed_filter(const void *in, size_t len, weir_typed_filter_fn fn) {
    return typed_filter(in, len, fn);
}

weir_bytes weir__typed_agg_add(const void *in, size_t len, weir_typed_agg_add_fn fn) {
    return typed_agg_add(in, len, fn);
}

uint64_t weir__run_typed_map(uint32_t ptr, uint32_t len, weir_typed_map_fn fn) {
    return pack_bytes(typed_each(at(ptr), len, TYPED_MAP, fn));
}

uint64_t weir__run_typed_flat_map(uint32_t ptr, uint32_t len, weir_typed_flat_map_fn fn) {
    return pack_bytes(typed_each(at(ptr), len, TYPED_ANY, fn));
}

uint64_t weir__run_typed_filter(uint32_t ptr, uint32_t len, weir_typed_filter_fn fn) {
    return pack_bytes(typed_filter(at(ptr), len, fn));
}

uint64_t weir__run_typed_agg_add(uint32_t ptr, uint32_t len, weir_typed_agg_add_fn fn) {
    return pack_bytes(typed_agg_add(at(ptr), len, fn));
}

/* ---------------------------------------------------------------------- */
/* Logging                                                                 */

void weir_log_n(int level, const char *msg, size_t len) {
    weir__host_log(level, msg, (uint32_t)(len > 0xFFFFFFFFu ? 0xFFFFFFFFu : len));
}

void weir_log(int level, const char *msg) { weir_log_n(level, msg, strlen(msg)); }

void weir_logf(int level, const char *fmt, ...) {
    char line[WEIR_MAX_LOG_LINE + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    weir_log_n(level, line, (size_t)n);
}

/* ---------------------------------------------------------------------- */
/* State                                                                   */

const char *weir_status_text(int s) {
    switch (s) {
    case WEIR_OK:
        return WEIR_STATUS_TEXT_OK;
    case WEIR_ERR_NOT_FOUND:
        return WEIR_STATUS_TEXT_NOT_FOUND;
    case WEIR_ERR_NO_CONTEXT:
        return WEIR_STATUS_TEXT_NO_CONTEXT;
    case WEIR_ERR_BAD_INDEX:
        return WEIR_STATUS_TEXT_BAD_INDEX;
    case WEIR_ERR_TOO_LARGE:
        return WEIR_STATUS_TEXT_TOO_LARGE;
    case WEIR_ERR_BAD_MEMORY:
        return WEIR_STATUS_TEXT_BAD_MEMORY;
    case WEIR_ERR_SIZE:
        return "the stored value is not 8 bytes long";
    }
    return s > 0 ? WEIR_STATUS_TEXT_OK : "unknown status";
}

static weir_buf skey; /* the slot key of the current call */
static weir_buf sval; /* where state_get copies values */

void weir_state_key(weir_buf *dst, char kind, const char *name, size_t nlen, const void *suffix, size_t slen) {
    weir_buf_byte(dst, (uint8_t)kind);
    if (kind == WEIR_STATE_KIND_VALUE) {
        weir_buf_append(dst, name, nlen);
        return;
    }
    uint64_t n = nlen;
    do {
        uint8_t c = n & 0x7F;
        n >>= 7;
        weir_buf_byte(dst, n ? (uint8_t)(c | 0x80) : c);
    } while (n);
    weir_buf_append(dst, name, nlen);
    weir_buf_append(dst, suffix, slen);
}

static const weir_buf *key_of(char kind, const char *name, const void *suffix, size_t slen) {
    skey.len = 0;
    weir_state_key(&skey, kind, name, strlen(name), suffix, slen);
    return &skey;
}

static int get_slot(const weir_record *r, const weir_buf *k, weir_bytes *value) {
    if (sval.cap < 256)
        weir_buf_reserve(&sval, 256);
    for (int tries = 0; tries < 4; tries++) {
        int32_t n = weir__host_state_get(r->index_, k->data, (uint32_t)k->len, sval.data, (uint32_t)sval.cap);
        if (n == WEIR_ERR_NOT_FOUND) {
            value->ptr = NULL;
            value->len = 0;
            return 0;
        }
        if (n < 0)
            return n;
        if ((size_t)n <= sval.cap) {
            value->ptr = sval.data;
            value->len = (size_t)n;
            return 1;
        }
        sval.len = 0;
        weir_buf_reserve(&sval, (size_t)n);
    }
    return WEIR_ERR_TOO_LARGE;
}

static int put_slot(const weir_record *r, const weir_buf *k, const void *v, size_t len) {
    int32_t s = weir__host_state_put(r->index_, k->data, (uint32_t)k->len, v, (uint32_t)len);
    return s < 0 ? s : 0;
}

static int delete_slot(const weir_record *r, const weir_buf *k) {
    int32_t s = weir__host_state_delete(r->index_, k->data, (uint32_t)k->len);
    return s < 0 ? s : 0;
}

static int get_u64(const weir_record *r, const weir_buf *k, uint64_t *v) {
    weir_bytes b;
    int s = get_slot(r, k, &b);
    if (s <= 0)
        return s;
    if (b.len != WEIR_STATE_NUMBER_SIZE)
        return WEIR_ERR_SIZE;
    *v = weir_le64(b.ptr);
    return 1;
}

static int put_u64(const weir_record *r, const weir_buf *k, uint64_t v) {
    uint8_t b[WEIR_STATE_NUMBER_SIZE];
    put64(b, v);
    return put_slot(r, k, b, sizeof b);
}

static uint64_t f2u(double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
}

static double u2f(uint64_t u) {
    double f;
    memcpy(&f, &u, 8);
    return f;
}

int weir_value_get(const weir_record *r, const char *name, weir_bytes *value) {
    return get_slot(r, key_of(WEIR_STATE_KIND_VALUE, name, NULL, 0), value);
}

int weir_value_put(const weir_record *r, const char *name, const void *v, size_t len) {
    return put_slot(r, key_of(WEIR_STATE_KIND_VALUE, name, NULL, 0), v, len);
}

int weir_value_delete(const weir_record *r, const char *name) { return delete_slot(r, key_of(WEIR_STATE_KIND_VALUE, name, NULL, 0)); }

int weir_value_get_i64(const weir_record *r, const char *name, int64_t *v) {
    uint64_t u = 0;
    int s = get_u64(r, key_of(WEIR_STATE_KIND_VALUE, name, NULL, 0), &u);
    *v = s == 1 ? (int64_t)u : 0;
    return s;
}

int weir_value_put_i64(const weir_record *r, const char *name, int64_t v) {
    return put_u64(r, key_of(WEIR_STATE_KIND_VALUE, name, NULL, 0), (uint64_t)v);
}

int weir_value_get_f64(const weir_record *r, const char *name, double *v) {
    uint64_t u = 0;
    int s = get_u64(r, key_of(WEIR_STATE_KIND_VALUE, name, NULL, 0), &u);
    *v = s == 1 ? u2f(u) : 0;
    return s;
}

int weir_value_put_f64(const weir_record *r, const char *name, double v) {
    return put_u64(r, key_of(WEIR_STATE_KIND_VALUE, name, NULL, 0), f2u(v));
}

int weir_map_get(const weir_record *r, const char *name, const void *key, size_t klen, weir_bytes *value) {
    return get_slot(r, key_of(WEIR_STATE_KIND_MAP, name, key, klen), value);
}

int weir_map_put(const weir_record *r, const char *name, const void *key, size_t klen, const void *v, size_t len) {
    return put_slot(r, key_of(WEIR_STATE_KIND_MAP, name, key, klen), v, len);
}

int weir_map_delete(const weir_record *r, const char *name, const void *key, size_t klen) {
    return delete_slot(r, key_of(WEIR_STATE_KIND_MAP, name, key, klen));
}

int weir_map_get_i64(const weir_record *r, const char *name, const void *key, size_t klen, int64_t *v) {
    uint64_t u = 0;
    int s = get_u64(r, key_of(WEIR_STATE_KIND_MAP, name, key, klen), &u);
    *v = s == 1 ? (int64_t)u : 0;
    return s;
}

int weir_map_put_i64(const weir_record *r, const char *name, const void *key, size_t klen, int64_t v) {
    return put_u64(r, key_of(WEIR_STATE_KIND_MAP, name, key, klen), (uint64_t)v);
}

int weir_map_get_f64(const weir_record *r, const char *name, const void *key, size_t klen, double *v) {
    uint64_t u = 0;
    int s = get_u64(r, key_of(WEIR_STATE_KIND_MAP, name, key, klen), &u);
    *v = s == 1 ? u2f(u) : 0;
    return s;
}

int weir_map_put_f64(const weir_record *r, const char *name, const void *key, size_t klen, double v) {
    return put_u64(r, key_of(WEIR_STATE_KIND_MAP, name, key, klen), f2u(v));
}

static const weir_buf *list_key(const char *name, int64_t i) {
    uint8_t idx[WEIR_STATE_LIST_INDEX_SIZE];
    if (i < 0)
        return key_of(WEIR_STATE_KIND_LIST, name, NULL, 0);
    for (size_t j = 0; j < sizeof idx; j++) /* big-endian */
        idx[j] = (uint8_t)((uint64_t)i >> (8 * (sizeof idx - 1 - j)));
    return key_of(WEIR_STATE_KIND_LIST, name, idx, sizeof idx);
}

int weir_list_len(const weir_record *r, const char *name, int64_t *n) {
    uint64_t u = 0;
    int s = get_u64(r, list_key(name, -1), &u);
    *n = s == 1 ? (int64_t)u : 0;
    return s < 0 ? s : 0;
}

int weir_list_add(const weir_record *r, const char *name, const void *v, size_t len) {
    int64_t n;
    int s = weir_list_len(r, name, &n);
    if (s < 0)
        return s;
    if ((s = put_slot(r, list_key(name, n), v, len)) < 0)
        return s;
    return put_u64(r, list_key(name, -1), (uint64_t)(n + 1));
}

int weir_list_get(const weir_record *r, const char *name, int64_t i, weir_bytes *value) {
    if (i < 0) {
        value->ptr = NULL;
        value->len = 0;
        return 0;
    }
    return get_slot(r, list_key(name, i), value);
}

int weir_list_clear(const weir_record *r, const char *name) {
    int64_t n;
    int s = weir_list_len(r, name, &n);
    if (s < 0)
        return s;
    for (int64_t i = 0; i < n; i++)
        if ((s = delete_slot(r, list_key(name, i))) < 0)
            return s;
    return delete_slot(r, list_key(name, -1));
}

/* ---------------------------------------------------------------------- */
/* JSON reading                                                            */

#define JSON_MAX_DEPTH 10000

typedef struct jparser {
    const uint8_t *b;
    size_t n;
    const char *err; /* set on the first error */
} jparser;

static char json_err[160];

static size_t jfail(jparser *p, size_t at, const char *what, bool eof) {
    if (p->err)
        return at;
    /* Format without printf, into json_err. */
    char tmp[160];
    size_t k = 0;
#define PUT(s)                                                                \
    do {                                                                      \
        const char *s_ = (s);                                                 \
        while (*s_ && k < sizeof tmp - 1)                                      \
            tmp[k++] = *s_++;                                                 \
    } while (0)
    PUT("invalid JSON: ");
    if (eof) {
        PUT("unexpected end of input");
    } else {
        uint8_t c = p->b[at];
        char q[8];
        if (c >= 0x20 && c < 0x7F) {
            q[0] = '\'', q[1] = (char)c, q[2] = '\'', q[3] = 0;
        } else {
            const char *hx = "0123456789abcdef";
            q[0] = '\'', q[1] = '\\', q[2] = 'x', q[3] = hx[c >> 4], q[4] = hx[c & 15], q[5] = '\'', q[6] = 0;
        }
        PUT("invalid character ");
        PUT(q);
        PUT(" ");
        PUT(what);
    }
    PUT(" at byte ");
    char num[24];
    size_t j = sizeof num - 1, off = eof ? p->n : at;
    num[j] = 0;
    do {
        num[--j] = (char)('0' + off % 10);
        off /= 10;
    } while (off);
    PUT(num + j);
#undef PUT
    tmp[k] = 0;
    memcpy(json_err, tmp, k + 1);
    p->err = json_err;
    return at;
}

static size_t jws(const jparser *p, size_t i) {
    while (i < p->n) {
        uint8_t c = p->b[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        i++;
    }
    return i;
}

static int unhex(uint8_t c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* jstr validates the string at i (a '"'); *plain says it has no escapes
 * and no non-ASCII bytes, so that its content is its own decoding. */
static size_t jstr(jparser *p, size_t i, bool *plain) {
    const uint8_t *b = p->b;
    size_t n = p->n;
    bool esc = false;
    uint8_t bits = 0;
    i++;
    for (;;) {
        while (i < n) {
            uint8_t c = b[i];
            if (c < 0x20 || c == '"' || c == '\\')
                break;
            bits |= c;
            i++;
        }
        if (i >= n)
            return jfail(p, i, "", true);
        uint8_t c = b[i];
        if (c == '"') {
            *plain = !esc && bits < 0x80;
            return i + 1;
        }
        if (c != '\\')
            return jfail(p, i, "in string literal", false);
        esc = true;
        i++;
        if (i >= n)
            return jfail(p, i, "", true);
        switch (b[i]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            i++;
            break;
        case 'u':
            i++;
            for (int j = 0; j < 4; j++, i++) {
                if (i >= n)
                    return jfail(p, i, "", true);
                if (unhex(b[i]) < 0)
                    return jfail(p, i, "in \\u hexadecimal character escape", false);
            }
            break;
        default:
            return jfail(p, i, "in string escape code", false);
        }
    }
}

static bool isdigit_(uint8_t c) { return c >= '0' && c <= '9'; }

static size_t jnum(jparser *p, size_t i) {
    const uint8_t *b = p->b;
    size_t n = p->n;
    if (b[i] == '-') {
        i++;
        if (i >= n)
            return jfail(p, i, "", true);
        if (!isdigit_(b[i]))
            return jfail(p, i, "in numeric literal", false);
    }
    if (b[i] == '0') {
        i++;
    } else {
        while (i < n && isdigit_(b[i]))
            i++;
    }
    if (i < n && b[i] == '.') {
        i++;
        if (i >= n)
            return jfail(p, i, "", true);
        if (!isdigit_(b[i]))
            return jfail(p, i, "after decimal point in numeric literal", false);
        while (i < n && isdigit_(b[i]))
            i++;
    }
    if (i < n && (b[i] == 'e' || b[i] == 'E')) {
        i++;
        if (i < n && (b[i] == '+' || b[i] == '-'))
            i++;
        if (i >= n)
            return jfail(p, i, "", true);
        if (!isdigit_(b[i]))
            return jfail(p, i, "in exponent of numeric literal", false);
        while (i < n && isdigit_(b[i]))
            i++;
    }
    return i;
}

static size_t jlit(jparser *p, size_t i, const char *word) {
    for (size_t j = 1; word[j]; j++) {
        if (i + j >= p->n)
            return jfail(p, i + j, "", true);
        if (p->b[i + j] != (uint8_t)word[j])
            return jfail(p, i + j, "in literal", false);
    }
    return i + strlen(word);
}

/* jscalar validates the non-container value at i. */
static size_t jscalar(jparser *p, size_t i, weir_json_kind *kind, bool *plain) {
    uint8_t c = p->b[i];
    *plain = false;
    switch (c) {
    case '"':
        *kind = WEIR_JSON_STRING;
        return jstr(p, i, plain);
    case 't':
        *kind = WEIR_JSON_BOOL;
        return jlit(p, i, "true");
    case 'f':
        *kind = WEIR_JSON_BOOL;
        return jlit(p, i, "false");
    case 'n':
        *kind = WEIR_JSON_NULL;
        return jlit(p, i, "null");
    }
    if (c == '-' || isdigit_(c)) {
        *kind = WEIR_JSON_NUMBER;
        return jnum(p, i);
    }
    *kind = WEIR_JSON_NONE;
    return jfail(p, i, "looking for beginning of value", false);
}

/* jvalue validates the value at i, at nesting depth depth (the containers
 * around it), without recursion, and returns its end. */
static size_t jvalue(jparser *p, size_t i, int depth, weir_json_kind *kind, bool *plain) {
    static uint8_t stack[(JSON_MAX_DEPTH + 16) / 8]; /* 1 = object */
    const uint8_t *b = p->b;
    size_t n = p->n;
    if (i >= n)
        return jfail(p, i, "", true);
    if (b[i] != '{' && b[i] != '[')
        return jscalar(p, i, kind, plain);
    *kind = b[i] == '{' ? WEIR_JSON_OBJECT : WEIR_JSON_ARRAY;
    *plain = false;
    const int base = depth;
    weir_json_kind k;
    bool pl;
    for (;;) {
        /* At i: a value to validate. */
        if (b[i] == '{' || b[i] == '[') {
            bool obj = b[i] == '{';
            depth++;
            if (depth > JSON_MAX_DEPTH) {
                if (!p->err) {
                    jfail(p, i, "", false);
                    strcpy(json_err, "invalid JSON: exceeded max depth");
                }
                return i;
            }
            int d = depth - base - 1;
            if (obj)
                stack[d >> 3] |= (uint8_t)(1u << (d & 7));
            else
                stack[d >> 3] &= (uint8_t)~(1u << (d & 7));
            i = jws(p, i + 1);
            if (i >= n)
                return jfail(p, i, "", true);
            if (b[i] == (obj ? '}' : ']')) {
                depth--;
                i++;
                goto after;
            }
            if (obj) {
            key:
                if (b[i] != '"')
                    return jfail(p, i, "looking for beginning of object key string", false);
                i = jstr(p, i, &pl);
                if (p->err)
                    return i;
                i = jws(p, i);
                if (i >= n)
                    return jfail(p, i, "", true);
                if (b[i] != ':')
                    return jfail(p, i, "after object key", false);
                i = jws(p, i + 1);
                if (i >= n)
                    return jfail(p, i, "", true);
            }
            continue;
        }
        i = jscalar(p, i, &k, &pl);
        if (p->err)
            return i;
    after:
        if (depth == base)
            return i;
        {
            int d = depth - base - 1;
            bool obj = stack[d >> 3] >> (d & 7) & 1;
            i = jws(p, i);
            if (i >= n)
                return jfail(p, i, "", true);
            if (b[i] == ',') {
                i = jws(p, i + 1);
                if (i >= n)
                    return jfail(p, i, "", true);
                if (obj)
                    goto key;
                continue;
            }
            if (b[i] == (obj ? '}' : ']')) {
                depth--;
                i++;
                goto after;
            }
            return jfail(p, i, obj ? "after object key:value pair" : "after array element", false);
        }
    }
}

static const char *jeof(jparser *p, size_t i) {
    if (p->err)
        return p->err;
    i = jws(p, i);
    if (i < p->n)
        jfail(p, i, "after top-level value", false);
    return p->err;
}

const char *weir_json_parse(const uint8_t *doc, size_t len, weir_json_value *v) {
    jparser p = {doc, len, NULL};
    size_t i = jws(&p, 0);
    weir_json_kind k = WEIR_JSON_NONE;
    bool plain;
    size_t end = jvalue(&p, i, 0, &k, &plain);
    if (jeof(&p, end)) {
        *v = (weir_json_value){0};
        return p.err;
    }
    *v = (weir_json_value){k, doc + i, end - i, i, plain};
    return NULL;
}

/* The UTF-8 decoder, as Go's utf8.DecodeRune: the length of the valid
 * sequence at s, setting *r, or 0 for an invalid byte. */
static size_t utf8_decode(const uint8_t *s, size_t n, uint32_t *r) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *r = c;
        return 1;
    }
    uint8_t lo = 0x80, hi = 0xBF;
    size_t size;
    if (c >= 0xC2 && c <= 0xDF) {
        size = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        size = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        size = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < size || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t j = 2; j < size; j++)
        if (s[j] < 0x80 || s[j] > 0xBF)
            return 0;
    uint32_t v = c & (0xFF >> (size + 1));
    for (size_t j = 1; j < size; j++)
        v = v << 6 | (s[j] & 0x3F);
    *r = v;
    return size;
}

static void utf8_append(weir_buf *dst, uint32_t r) {
    uint8_t *q = weir_buf_reserve(dst, 4);
    if (r < 0x80) {
        q[0] = (uint8_t)r;
        dst->len += 1;
    } else if (r < 0x800) {
        q[0] = (uint8_t)(0xC0 | r >> 6), q[1] = (uint8_t)(0x80 | (r & 0x3F));
        dst->len += 2;
    } else if (r < 0x10000) {
        q[0] = (uint8_t)(0xE0 | r >> 12), q[1] = (uint8_t)(0x80 | (r >> 6 & 0x3F)), q[2] = (uint8_t)(0x80 | (r & 0x3F));
        dst->len += 3;
    } else {
        q[0] = (uint8_t)(0xF0 | r >> 18), q[1] = (uint8_t)(0x80 | (r >> 12 & 0x3F));
        q[2] = (uint8_t)(0x80 | (r >> 6 & 0x3F)), q[3] = (uint8_t)(0x80 | (r & 0x3F));
        dst->len += 4;
    }
}

static int32_t hex4(const uint8_t *s, size_t n) {
    if (n < 4)
        return -1;
    int32_t r = 0;
    for (int j = 0; j < 4; j++) {
        int d = unhex(s[j]);
        if (d < 0)
            return -1;
        r = r << 4 | d;
    }
    return r;
}

/* unquote appends the decoding of the string content s (between the
 * quotes), as encoding/json decodes it. */
static void unquote(weir_buf *dst, const uint8_t *s, size_t n) {
    size_t start = 0, i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t r;
            size_t size = utf8_decode(s + i, n - i, &r);
            if (size) {
                i += size;
                continue;
            }
            weir_buf_append(dst, s + start, i - start);
            utf8_append(dst, 0xFFFD);
            start = ++i;
            continue;
        }
        weir_buf_append(dst, s + start, i - start);
        if (c != '\\' || i + 1 >= n) {
            weir_buf_byte(dst, c);
            start = ++i;
            continue;
        }
        uint8_t e = s[i + 1];
        switch (e) {
        case '"': case '\\': case '/':
            weir_buf_byte(dst, e);
            i += 2;
            break;
        case 'b':
            weir_buf_byte(dst, '\b');
            i += 2;
            break;
        case 'f':
            weir_buf_byte(dst, '\f');
            i += 2;
            break;
        case 'n':
            weir_buf_byte(dst, '\n');
            i += 2;
            break;
        case 'r':
            weir_buf_byte(dst, '\r');
            i += 2;
            break;
        case 't':
            weir_buf_byte(dst, '\t');
            i += 2;
            break;
        case 'u': {
            int32_t r = hex4(s + i + 2, n - i - 2);
            if (r < 0) {
                utf8_append(dst, 0xFFFD);
                i += 2;
                break;
            }
            i += 6;
            if (r >= 0xD800 && r < 0xE000) {
                int32_t r2 = -1;
                if (i + 1 < n && s[i] == '\\' && s[i + 1] == 'u')
                    r2 = hex4(s + i + 2, n - i - 2);
                if (r < 0xDC00 && r2 >= 0xDC00 && r2 < 0xE000) {
                    r = 0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00);
                    i += 6;
                } else {
                    r = 0xFFFD;
                }
            }
            utf8_append(dst, (uint32_t)r);
            break;
        }
        default:
            weir_buf_byte(dst, c);
            weir_buf_byte(dst, e);
            i += 2;
        }
        start = i;
    }
    weir_buf_append(dst, s + start, n - start);
}

/* key_equals reports whether the string content raw decodes to name. */
static bool key_equals(const uint8_t *raw, size_t n, bool plain, const char *name, size_t nlen) {
    if (plain)
        return n == nlen && memcmp(raw, name, n) == 0;
    static weir_buf tmp;
    tmp.len = 0;
    unquote(&tmp, raw, n);
    return tmp.len == nlen && (nlen == 0 || memcmp(tmp.data, name, nlen) == 0);
}

/* jobject walks the object at i, which must start with '{' (depth 1),
 * calling visit for each member. */
typedef bool (*jvisit)(jparser *p, size_t kstart, size_t kend, bool kplain, weir_json_kind k, size_t vstart,
                       size_t vend, void *ctx);

static size_t jobject(jparser *p, size_t i, jvisit visit, void *ctx) {
    const uint8_t *b = p->b;
    size_t n = p->n;
    i = jws(p, i + 1);
    if (i >= n)
        return jfail(p, i, "", true);
    if (b[i] == '}')
        return i + 1;
    bool more = true;
    for (;;) {
        if (b[i] != '"')
            return jfail(p, i, "looking for beginning of object key string", false);
        size_t kstart = i;
        bool kplain, vplain;
        size_t kend = jstr(p, i, &kplain);
        if (p->err)
            return kend;
        i = jws(p, kend);
        if (i >= n)
            return jfail(p, i, "", true);
        if (b[i] != ':')
            return jfail(p, i, "after object key", false);
        i = jws(p, i + 1);
        size_t vstart = i;
        weir_json_kind k;
        size_t vend = jvalue(p, i, 1, &k, &vplain);
        if (p->err)
            return vend;
        if (more)
            more = visit(p, kstart, kend, kplain, k, vstart, vend, ctx);
        i = jws(p, vend);
        if (i >= n)
            return jfail(p, i, "", true);
        if (b[i] == '}')
            return i + 1;
        if (b[i] != ',')
            return jfail(p, i, "after object key:value pair", false);
        i = jws(p, i + 1);
        if (i >= n)
            return jfail(p, i, "", true);
    }
}

typedef struct getctx {
    const char *name;
    size_t nlen;
    weir_json_value *v;
} getctx;

static bool get_visit(jparser *p, size_t ks, size_t ke, bool kplain, weir_json_kind k, size_t vs, size_t ve,
                      void *ctx) {
    getctx *g = ctx;
    if (key_equals(p->b + ks + 1, ke - ks - 2, kplain, g->name, g->nlen))
        *g->v = (weir_json_value){k, p->b + vs, ve - vs, vs, false};
    return true;
}

/* The fast path of weir_json_get_n: one function whose state lives in
 * locals, for the common document, a flat object. It returns false on
 * anything it does not validate (including errors, which the slower
 * jparser then reports with their position). */
#define FBAD ((size_t)-1)

/* Bytes that may appear in a string as they are: not '"', '\\' or a
 * control character. */
static const uint8_t str_plain[256] = {
#define R16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
    R16(0), R16(0),
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20: '"' */
    R16(1), R16(1),                                 /* 0x30, 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50: '\\' */
    R16(1), R16(1),                                 /* 0x60, 0x70 */
    R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1),
#undef R16
};

/* SWAR helpers: look at 8 bytes at a time. In each mask, the lowest set
 * bit (bit 7 of a byte) marks exactly the first byte of interest; bytes
 * above it may be marked wrongly (borrows), so only the lowest is used. */
#define REP8(x) (0x0101010101010101ull * (uint64_t)(x))

static inline __attribute__((always_inline)) uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v; /* little-endian on wasm32 (and the native test hosts) */
}

/* str_special marks '"', '\\', control characters and non-ASCII bytes. */
static inline __attribute__((always_inline)) uint64_t str_special(uint64_t v) {
    uint64_t q = v ^ REP8('"'), s = v ^ REP8('\\');
    return (((q - REP8(1)) & ~q) | ((s - REP8(1)) & ~s) | ((v - REP8(0x20)) & ~v) | v) & REP8(0x80);
}

/* non_digit marks the bytes outside '0'-'9'. */
static inline __attribute__((always_inline)) uint64_t non_digit(uint64_t v) {
    return ((v + REP8(0x46)) | (v - REP8(0x30))) & REP8(0x80);
}

static inline __attribute__((always_inline)) size_t skip_digits(const uint8_t *b, size_t n, size_t i) {
    while (i + 8 <= n) {
        uint64_t m = non_digit(load64(b + i));
        if (m)
            return i + ((size_t)__builtin_ctzll(m) >> 3);
        i += 8;
    }
    while (i < n && isdigit_(b[i]))
        i++;
    return i;
}

static inline __attribute__((always_inline)) size_t fws(const uint8_t *b, size_t n, size_t i) {
    while (i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r'))
        i++;
    return i;
}

/* fstr validates the string at i (a '"'). */
static inline __attribute__((always_inline)) size_t fstr(const uint8_t *b, size_t n, size_t i, bool *plain) {
    uint8_t bits = 0;
    bool esc = false;
    i++;
    for (;;) {
        while (i + 8 <= n) {
            uint64_t m = str_special(load64(b + i));
            if (m) {
                i += (size_t)__builtin_ctzll(m) >> 3;
                break;
            }
            i += 8;
        }
        while (i < n && str_plain[b[i]])
            bits |= b[i++];
        if (i >= n)
            return FBAD;
        if (b[i] == '"') {
            *plain = !esc && bits < 0x80;
            return i + 1;
        }
        if (b[i] != '\\' || i + 1 >= n)
            return FBAD;
        esc = true;
        switch (b[i + 1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            i += 2;
            break;
        case 'u':
            if (i + 6 > n || hex4(b + i + 2, 4) < 0)
                return FBAD;
            i += 6;
            break;
        default:
            return FBAD;
        }
    }
}

static inline __attribute__((always_inline)) size_t fnum(const uint8_t *b, size_t n, size_t i) {
    if (b[i] == '-' && ++i >= n)
        return FBAD;
    if (b[i] == '0') {
        i++;
    } else if (isdigit_(b[i])) {
        i = skip_digits(b, n, i);
    } else {
        return FBAD;
    }
    if (i < n && b[i] == '.') {
        if (++i >= n || !isdigit_(b[i]))
            return FBAD;
        i = skip_digits(b, n, i);
    }
    if (i < n && (b[i] == 'e' || b[i] == 'E')) {
        i++;
        if (i < n && (b[i] == '+' || b[i] == '-'))
            i++;
        if (i >= n || !isdigit_(b[i]))
            return FBAD;
        i = skip_digits(b, n, i);
    }
    return i;
}

static inline __attribute__((always_inline)) bool fword(const uint8_t *b, size_t n, size_t i, const char *w, size_t wl) {
    if (n - i < wl)
        return false;
    for (size_t j = 1; j < wl; j++)
        if (b[i + j] != (uint8_t)w[j])
            return false;
    return true;
}

static bool json_get_fast(const uint8_t *b, size_t n, const char *name, size_t nlen, weir_json_value *v) {
    size_t i = fws(b, n, 0);
    if (i >= n || b[i] != '{')
        return false;
    i = fws(b, n, i + 1);
    if (i < n && b[i] == '}')
        return fws(b, n, i + 1) == n;
    for (;;) {
        if (i >= n || b[i] != '"')
            return false;
        bool kplain, vplain = false;
        size_t kend = fstr(b, n, i, &kplain);
        if (kend == FBAD)
            return false;
        bool match;
        if (kplain) {
            match = kend - i - 2 == nlen;
            for (size_t j = 0; match && j < nlen; j++)
                match = b[i + 1 + j] == (uint8_t)name[j];
        } else {
            match = key_equals(b + i + 1, kend - i - 2, false, name, nlen);
        }
        i = fws(b, n, kend);
        if (i >= n || b[i] != ':')
            return false;
        i = fws(b, n, i + 1);
        if (i >= n)
            return false;
        size_t start = i;
        weir_json_kind k;
        switch (b[i]) {
        case '"':
            k = WEIR_JSON_STRING;
            i = fstr(b, n, i, &vplain);
            break;
        case 't':
            k = WEIR_JSON_BOOL;
            i = fword(b, n, i, "true", 4) ? i + 4 : FBAD;
            break;
        case 'f':
            k = WEIR_JSON_BOOL;
            i = fword(b, n, i, "false", 5) ? i + 5 : FBAD;
            break;
        case 'n':
            k = WEIR_JSON_NULL;
            i = fword(b, n, i, "null", 4) ? i + 4 : FBAD;
            break;
        case '{':
        case '[': {
            jparser p = {b, n, NULL};
            i = jvalue(&p, i, 1, &k, &vplain);
            if (p.err)
                return false;
            break;
        }
        default:
            k = WEIR_JSON_NUMBER;
            i = fnum(b, n, i);
        }
        if (i == FBAD)
            return false;
        if (match)
            *v = (weir_json_value){k, b + start, i - start, start, vplain};
        i = fws(b, n, i);
        if (i >= n)
            return false;
        if (b[i] == '}')
            return fws(b, n, i + 1) == n;
        if (b[i] != ',')
            return false;
        i = fws(b, n, i + 1);
    }
}

const char *weir_json_get_n(const uint8_t *doc, size_t len, const char *name, size_t nlen, weir_json_value *v) {
    *v = (weir_json_value){0};
    if (json_get_fast(doc, len, name, nlen, v))
        return NULL;
    jparser p = {doc, len, NULL};
    *v = (weir_json_value){0};
    size_t i = jws(&p, 0), end;
    if (i < len && doc[i] == '{') {
        getctx g = {name, nlen, v};
        end = jobject(&p, i, get_visit, &g);
    } else {
        weir_json_kind k;
        bool plain;
        end = jvalue(&p, i, 0, &k, &plain);
    }
    if (jeof(&p, end)) {
        *v = (weir_json_value){0};
        return p.err;
    }
    return NULL;
}

const char *weir_json_get(const uint8_t *doc, size_t len, const char *name, weir_json_value *v) {
    return weir_json_get_n(doc, len, name, strlen(name), v);
}

typedef struct eachctx {
    weir_json_each_fn fn;
    void *ctx;
} eachctx;

static bool each_visit(jparser *p, size_t ks, size_t ke, bool kplain, weir_json_kind k, size_t vs, size_t ve,
                       void *ctx) {
    eachctx *e = ctx;
    weir_json_value key = {WEIR_JSON_STRING, p->b + ks, ke - ks, ks, kplain};
    weir_json_value val = {k, p->b + vs, ve - vs, vs, false};
    return e->fn(&key, &val, e->ctx);
}

const char *weir_json_each(const uint8_t *doc, size_t len, weir_json_each_fn fn, void *ctx) {
    jparser p = {doc, len, NULL};
    size_t i = jws(&p, 0), end;
    if (i < len && doc[i] == '{') {
        eachctx e = {fn, ctx};
        end = jobject(&p, i, each_visit, &e);
        return jeof(&p, end);
    }
    weir_json_kind k;
    bool plain;
    end = jvalue(&p, i, 0, &k, &plain);
    if (jeof(&p, end))
        return p.err;
    return "JSON value is not an object";
}

void weir_json_string(const weir_json_value *v, weir_buf *dst) {
    if (v->kind != WEIR_JSON_STRING || v->len < 2) {
        weir_buf_append(dst, v->raw, v->len);
        return;
    }
    const uint8_t *s = v->raw + 1;
    size_t n = v->len - 2;
    if (v->plain_) {
        weir_buf_append(dst, s, n);
        return;
    }
    /* Fast path: no escapes, ASCII. */
    size_t i = 0;
    while (i < n && s[i] != '\\' && s[i] < 0x80)
        i++;
    if (i == n) {
        weir_buf_append(dst, s, n);
        return;
    }
    unquote(dst, s, n);
}

bool weir_json_string_eq(const weir_json_value *v, const void *s, size_t len) {
    if (v->kind != WEIR_JSON_STRING || v->len < 2)
        return false;
    const uint8_t *raw = v->raw + 1;
    size_t n = v->len - 2;
    bool plain = true;
    for (size_t i = 0; i < n && plain; i++)
        plain = raw[i] != '\\' && raw[i] < 0x80;
    return key_equals(raw, n, plain, s, len);
}

int weir_json_int(const weir_json_value *v, int64_t *out) {
    *out = 0;
    if (v->kind != WEIR_JSON_NUMBER || v->len == 0)
        return -1;
    const uint8_t *s = v->raw;
    size_t n = v->len, i = 0;
    bool neg = s[0] == '-';
    if (neg)
        i++;
    if (i == n)
        return -1;
    uint64_t limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
    uint64_t u = 0;
    for (; i < n; i++) {
        if (!isdigit_(s[i]))
            return -1;
        unsigned d = s[i] - '0';
        if (u > (limit - d) / 10)
            return -1;
        u = u * 10 + d;
    }
    *out = neg ? (int64_t)((uint64_t)0 - u) : (int64_t)u;
    return 0;
}

int weir_json_float(const weir_json_value *v, double *out) {
    *out = 0;
    if (v->kind != WEIR_JSON_NUMBER || v->len == 0)
        return -1;
    char small[64];
    char *s = small;
    if (v->len >= sizeof small) {
        s = malloc(v->len + 1);
        if (!s)
            WEIR_FAIL();
    }
    memcpy(s, v->raw, v->len);
    s[v->len] = 0;
    char *end;
    double d = strtod(s, &end);
    bool whole = end == s + v->len;
    if (s != small)
        free(s);
    if (!whole)
        return -1;
    *out = d;
    return isinf(d) ? -2 : 0;
}

int weir_json_bool(const weir_json_value *v, bool *out) {
    *out = false;
    if (v->kind != WEIR_JSON_BOOL || v->len == 0)
        return -1;
    *out = v->raw[0] == 't';
    return 0;
}

/* ---------------------------------------------------------------------- */
/* JSON writing                                                            */

static const char hexdigits[] = "0123456789abcdef";

void weir_json_quote(weir_buf *dst, const void *sv, size_t n) {
    const uint8_t *s = sv;
    uint8_t *q = weir_buf_reserve(dst, n + 2);
    size_t i = 0;
    /* Fast path: nothing to escape, the usual case: one copy. */
    for (; i + 8 <= n; i += 8)
        if (str_special(load64(s + i)))
            break;
    while (i < n && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\' && s[i] < 0x80)
        i++;
    if (i == n) {
        q[0] = '"';
        memcpy(q + 1, s, n);
        q[n + 1] = '"';
        dst->len += n + 2;
        return;
    }
    dst->data[dst->len++] = '"';
    size_t start = 0;
    i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t m = str_special(load64(s + i));
            if (!m) {
                i += 8;
                continue;
            }
            i += (size_t)__builtin_ctzll(m) >> 3;
        }
        uint8_t c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t r;
            size_t size = utf8_decode(s + i, n - i, &r);
            if (size) {
                i += size;
                continue;
            }
            weir_buf_append(dst, s + start, i - start);
            weir_buf_append(dst, "\\ufffd", 6);
            start = ++i;
            continue;
        }
        weir_buf_append(dst, s + start, i - start);
        char e = 0;
        switch (c) {
        case '"': e = '"'; break;
        case '\\': e = '\\'; break;
        case '\n': e = 'n'; break;
        case '\r': e = 'r'; break;
        case '\t': e = 't'; break;
        case '\b': e = 'b'; break;
        case '\f': e = 'f'; break;
        }
        if (e) {
            uint8_t *q = weir_buf_reserve(dst, 2);
            q[0] = '\\', q[1] = (uint8_t)e;
            dst->len += 2;
        } else {
            uint8_t *q = weir_buf_reserve(dst, 6);
            q[0] = '\\', q[1] = 'u', q[2] = '0', q[3] = '0', q[4] = (uint8_t)hexdigits[c >> 4],
            q[5] = (uint8_t)hexdigits[c & 15];
            dst->len += 6;
        }
        start = ++i;
    }
    weir_buf_append(dst, s + start, n - start);
    weir_buf_byte(dst, '"');
}

/* roundtrips reports whether the decimal of the nd digits d and exponent
 * e (d[0].d[1]...e<e>) reads back as f. */
static bool roundtrips(const char *d, int nd, int e, double f) {
    char tmp[48];
    int k = 0;
    tmp[k++] = d[0];
    if (nd > 1) {
        tmp[k++] = '.';
        memcpy(tmp + k, d + 1, (size_t)nd - 1);
        k += nd - 1;
    }
    snprintf(tmp + k, sizeof tmp - (size_t)k, "e%d", e);
    return strtod(tmp, NULL) == f;
}

/* digits_at looks for p significant digits that read back as f (finite,
 * not negative), the ones nearest f when several do: sets d[0..p) and
 * the exponent *e, and returns true; or returns false when no p digits
 * do. The p-digit decimal nearest f, which snprintf prints, does not
 * always read back when another does: when f is a power of two, the
 * doubles below it are closer together than those above, and the nearest
 * decimal may lie below f, out of reach, while the next one up reads back.
 * Some p digits read back if and only if one of the nearest and its two
 * neighbours does. */
static bool digits_at(double f, int p, char *d, int *e) {
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, f);
    int nd = 0;
    const char *s = tmp;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            d[nd++] = *s;
    *e = *s == 'e' ? atoi(s + 1) : 0;
    if (roundtrips(d, p, *e, f))
        return true;
    char n[24];
    int ne = *e;
    /* The next p-digit decimal up. */
    memcpy(n, d, (size_t)p);
    int i = p - 1;
    while (i >= 0 && n[i] == '9')
        n[i--] = '0';
    if (i < 0) {
        n[0] = '1'; /* 99..9 + 1 = 100..0, one exponent up */
        ne++;
    } else {
        n[i]++;
    }
    if (roundtrips(n, p, ne, f)) {
        memcpy(d, n, (size_t)p);
        *e = ne;
        return true;
    }
    /* The next one down. */
    memcpy(n, d, (size_t)p);
    ne = *e;
    i = p - 1;
    while (i >= 0 && n[i] == '0')
        n[i--] = '9';
    if (i >= 0)
        n[i]--;
    if (n[0] == '0') {
        /* 100..0 - 1 is 099..9: below a power of ten the p-digit decimals
         * are ten times closer, and the next one down is 99..9 (p
         * nines), one exponent down. */
        memmove(n, n + 1, (size_t)p - 1);
        n[p - 1] = '9';
        ne--;
    }
    if (roundtrips(n, p, ne, f)) {
        memcpy(d, n, (size_t)p);
        *e = ne;
        return true;
    }
    return false;
}

void weir_json_float_text(weir_buf *dst, double f) {
    if (isnan(f)) {
        weir_buf_str(dst, "nan");
        return;
    }
    if (isinf(f)) {
        weir_buf_str(dst, f > 0 ? "inf" : "-inf");
        return;
    }
    /* The shortest digits that read back as f: 17 always do, and if p
     * digits do, so do more, so search for the least p (about 4 rounds
     * instead of up to 17). */
    double a = fabs(f);
    char digits[24];
    int e = 0;
    int lo = 1, hi = 17;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (digits_at(a, mid, digits, &e))
            hi = mid;
        else
            lo = mid + 1;
    }
    digits_at(a, lo, digits, &e);
    size_t nd = (size_t)lo;
    if (signbit(f))
        weir_buf_byte(dst, '-');
    /* Trailing zeros are not significant. */
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    if (e < -4 || e >= 16) {
        weir_buf_byte(dst, (uint8_t)digits[0]);
        if (nd > 1) {
            weir_buf_byte(dst, '.');
            weir_buf_append(dst, digits + 1, nd - 1);
        }
        weir_buf_byte(dst, 'e');
        weir_buf_byte(dst, e < 0 ? '-' : '+');
        if (e < 0)
            e = -e;
        if (e < 10)
            weir_buf_byte(dst, '0');
        weir_buf_i64(dst, e);
        return;
    }
    int point = e + 1;
    if (point <= 0) {
        weir_buf_str(dst, "0.");
        for (; point < 0; point++)
            weir_buf_byte(dst, '0');
        weir_buf_append(dst, digits, nd);
    } else if ((size_t)point < nd) {
        weir_buf_append(dst, digits, (size_t)point);
        weir_buf_byte(dst, '.');
        weir_buf_append(dst, digits + point, nd - (size_t)point);
    } else {
        weir_buf_append(dst, digits, nd);
        for (size_t j = nd; j < (size_t)point; j++)
            weir_buf_byte(dst, '0');
        weir_buf_str(dst, ".0");
    }
}

weir_json_writer weir_json_writer_on(weir_buf *buf) { return (weir_json_writer){buf, false}; }

static void wsep(weir_json_writer *w) {
    if (w->comma)
        weir_buf_byte(w->buf, ',');
    w->comma = true;
}

void weir_json_begin_object(weir_json_writer *w) {
    wsep(w);
    weir_buf_byte(w->buf, '{');
    w->comma = false;
}

void weir_json_end_object(weir_json_writer *w) {
    weir_buf_byte(w->buf, '}');
    w->comma = true;
}

void weir_json_begin_array(weir_json_writer *w) {
    wsep(w);
    weir_buf_byte(w->buf, '[');
    w->comma = false;
}

void weir_json_end_array(weir_json_writer *w) {
    weir_buf_byte(w->buf, ']');
    w->comma = true;
}

void weir_json_key_n(weir_json_writer *w, const void *name, size_t len) {
    wsep(w);
    weir_json_quote(w->buf, name, len);
    weir_buf_byte(w->buf, ':');
    w->comma = false;
}

void weir_json_key(weir_json_writer *w, const char *name) { weir_json_key_n(w, name, strlen(name)); }

void weir_json_write_string(weir_json_writer *w, const void *s, size_t len) {
    wsep(w);
    weir_json_quote(w->buf, s, len);
}

void weir_json_write_int(weir_json_writer *w, int64_t v) {
    wsep(w);
    weir_buf_i64(w->buf, v);
}

void weir_json_write_float(weir_json_writer *w, double v) {
    wsep(w);
    if (isnan(v) || isinf(v))
        weir_buf_str(w->buf, "null");
    else
        weir_json_float_text(w->buf, v);
}

void weir_json_write_bool(weir_json_writer *w, bool v) {
    wsep(w);
    weir_buf_str(w->buf, v ? "true" : "false");
}

void weir_json_write_null(weir_json_writer *w) {
    wsep(w);
    weir_buf_str(w->buf, "null");
}

void weir_json_write_raw(weir_json_writer *w, const void *raw, size_t len) {
    wsep(w);
    weir_buf_append(w->buf, raw, len);
}

static const char *kind_name(weir_json_kind k) {
    switch (k) {
    case WEIR_JSON_NULL: return "null";
    case WEIR_JSON_BOOL: return "bool";
    case WEIR_JSON_NUMBER: return "number";
    case WEIR_JSON_STRING: return "string";
    case WEIR_JSON_ARRAY: return "array";
    case WEIR_JSON_OBJECT: return "object";
    default: return "invalid";
    }
}

const char *weir_config_string(const uint8_t *config, size_t len, const char *name, weir_buf *out) {
    static weir_buf msg;
    size_t i = 0;
    while (i < len && (config[i] == ' ' || config[i] == '\t' || config[i] == '\n' || config[i] == '\r'))
        i++;
    if (i == len)
        return NULL;
    weir_json_value v;
    const char *err = weir_json_get(config, len, name, &v);
    msg.len = 0;
    if (err) {
        weir_buf_str(&msg, "config: ");
        weir_buf_str(&msg, err);
        weir_buf_byte(&msg, 0);
        return (const char *)msg.data;
    }
    switch (v.kind) {
    case WEIR_JSON_NONE:
    case WEIR_JSON_NULL:
        return NULL;
    case WEIR_JSON_STRING:
        out->len = 0;
        weir_json_string(&v, out);
        return NULL;
    default:
        weir_buf_str(&msg, "config: field ");
        weir_buf_str(&msg, name);
        weir_buf_str(&msg, " must be a string, not ");
        weir_buf_str(&msg, kind_name(v.kind));
        weir_buf_byte(&msg, 0);
        return (const char *)msg.data;
    }
}
