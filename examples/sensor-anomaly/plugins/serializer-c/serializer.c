/*
 * serializer is the sensor-anomaly example's map plugin, in C: the same
 * behaviour as plugins/serializer (Go), byte for byte. It reproduces
 * SerializerMapFunction of the PyFlink job the example is taken from, which
 * prints a dict as
 *
 *     '|'.join([k + '=' + str(v) for k, v in value.items()])
 *
 * where the dict is what json.loads made of the record. For each field of
 * the input JSON object it prints name=str(value), as Python prints the
 * value json.loads reads:
 *
 *   - a string as its decoded content, without quotes or escapes;
 *   - a number written without a fraction or an exponent as a Python int:
 *     its digits, at any length (-0 as 0);
 *   - any other number as a Python float, repr's shortest round-trip
 *     digits (weir_json_float_text): 90.50 as 90.5, 1E2 as 100.0, 1E-5 as
 *     1e-05, 1.0e16 as 1e+16, beyond the double range inf or -inf;
 *   - true, false and null as True, False and None;
 *   - an array or an object as Python's repr of the list or dict:
 *     [1, 'a'], {'k': 2.5, 'x': None}, strings quoted and escaped as repr
 *     does (the non-printable characters are nonprint.h's table, generated
 *     from Go's unicode.IsPrint, so as the Go serializer's).
 *
 * A name that occurs more than once in an object is printed once, where it
 * first occurs, with its last value, as a dict built by json.loads has it.
 *
 * A value that is not a JSON object is rejected with an error. The output
 * is written in place into the output frame.
 */
#include <stdlib.h>
#include <string.h>

#include "weir.h"
#include "nonprint.h"

/* ------------------------------------------------------------------ */
/* An object's fields as a Python dict holds them. A name is looked up by */
/* comparing it with each earlier one: quadratic, fine for readings.      */

typedef struct fields {
    weir_buf names;        /* the decoded names, one after the other */
    size_t *ends;          /* where each name ends in names */
    weir_json_value *vals; /* each name's value */
    size_t n, cap;
} fields;

static void fields_free(fields *f) {
    weir_buf_free(&f->names);
    free(f->ends);
    free(f->vals);
    memset(f, 0, sizeof *f);
}

static const uint8_t *field_name(const fields *f, size_t i, size_t *len) {
    size_t start = i ? f->ends[i - 1] : 0;
    *len = f->ends[i] - start;
    return f->names.data + start;
}

static bool collect_field(const weir_json_value *k, const weir_json_value *v, void *ctx) {
    fields *f = ctx;
    size_t start = f->names.len;
    weir_json_string(k, &f->names);
    size_t len = f->names.len - start;
    for (size_t i = 0; i < f->n; i++) {
        size_t l;
        const uint8_t *name = field_name(f, i, &l);
        if (l == len && memcmp(name, f->names.data + start, len) == 0) {
            f->vals[i] = *v; /* a repeated name keeps its place, takes the new value */
            f->names.len = start;
            return true;
        }
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        size_t *ends = realloc(f->ends, cap * sizeof *ends);
        weir_json_value *vals = realloc(f->vals, cap * sizeof *vals);
        if (!ends || !vals)
            __builtin_trap();
        f->ends = ends;
        f->vals = vals;
        f->cap = cap;
    }
    f->ends[f->n] = f->names.len;
    f->vals[f->n] = *v;
    f->n++;
    return true;
}

/* collect sets f to the fields of the object doc; an error message or NULL. */
static const char *collect(fields *f, const uint8_t *doc, size_t len) {
    f->names.len = 0;
    f->n = 0;
    return weir_json_each(doc, len, collect_field, f);
}

/* ------------------------------------------------------------------ */
/* Python's repr and str.                                               */

static const char hex_digits[] = "0123456789abcdef";

static void append_hex(weir_buf *dst, uint32_t u, int n) {
    for (int shift = 4 * (n - 1); shift >= 0; shift -= 4)
        weir_buf_byte(dst, hex_digits[(u >> shift) & 15]);
}

/* printable reports whether the non-ASCII code point r is printable for
 * Python's repr: not in nonprint.h's ranges. */
static bool printable(uint32_t r) {
    size_t lo = 0, hi = sizeof nonprint / sizeof nonprint[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r < nonprint[mid][0])
            hi = mid;
        else if (r > nonprint[mid][1])
            lo = mid + 1;
        else
            return false;
    }
    return true;
}

/* decode reads the UTF-8 character at s[0..n), valid UTF-8 as
 * weir_json_string writes it, and sets *size. */
static uint32_t decode(const uint8_t *s, size_t n, size_t *size) {
    uint8_t c = s[0];
    if (c < 0xe0 && n >= 2) {
        *size = 2;
        return (uint32_t)(c & 0x1f) << 6 | (s[1] & 0x3f);
    }
    if (c < 0xf0 && n >= 3) {
        *size = 3;
        return (uint32_t)(c & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
    }
    if (n >= 4) {
        *size = 4;
        return (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 | (uint32_t)(s[2] & 0x3f) << 6 |
               (s[3] & 0x3f);
    }
    *size = 1;
    return 0xfffd;
}

/* append_string_repr appends repr(s) for the UTF-8 text s, as Python 3
 * writes it: single quotes, or double quotes when s has a single quote and
 * no double quote; the quote and backslash escaped; \t \n \r; other ASCII
 * controls and DEL as \xhh; non-printable non-ASCII characters as \xhh,
 * \uhhhh or \Uhhhhhhhh. */
static void append_string_repr(weir_buf *dst, const uint8_t *s, size_t n) {
    uint8_t quote = '\'';
    if (memchr(s, '\'', n) && !memchr(s, '"', n))
        quote = '"';
    weir_buf_byte(dst, quote);
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == quote || c == '\\') {
                weir_buf_byte(dst, '\\');
                weir_buf_byte(dst, c);
            } else if (c == '\t') {
                weir_buf_str(dst, "\\t");
            } else if (c == '\n') {
                weir_buf_str(dst, "\\n");
            } else if (c == '\r') {
                weir_buf_str(dst, "\\r");
            } else if (c < ' ' || c == 0x7f) {
                weir_buf_str(dst, "\\x");
                append_hex(dst, c, 2);
            } else {
                weir_buf_byte(dst, c);
            }
            i++;
            continue;
        }
        size_t size;
        uint32_t r = decode(s + i, n - i, &size);
        if (printable(r)) {
            weir_buf_append(dst, s + i, size);
        } else if (r <= 0xff) {
            weir_buf_str(dst, "\\x");
            append_hex(dst, r, 2);
        } else if (r <= 0xffff) {
            weir_buf_str(dst, "\\u");
            append_hex(dst, r, 4);
        } else {
            weir_buf_str(dst, "\\U");
            append_hex(dst, r, 8);
        }
        i += size;
    }
    weir_buf_byte(dst, quote);
}

/* append_number appends str() of the Python int or float json.loads reads
 * from a JSON number. */
static void append_number(weir_buf *dst, const weir_json_value *v) {
    if (!memchr(v->raw, '.', v->len) && !memchr(v->raw, 'e', v->len) && !memchr(v->raw, 'E', v->len)) {
        if (v->len == 2 && v->raw[0] == '-' && v->raw[1] == '0')
            weir_buf_byte(dst, '0'); /* int("-0") is 0 */
        else
            weir_buf_append(dst, v->raw, v->len);
        return;
    }
    double d;
    weir_json_float(v, &d); /* beyond the double range: +-inf, as in Python */
    weir_json_float_text(dst, d);
}

static bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t skip_ws(const uint8_t *p, size_t i, size_t n) {
    while (i < n && is_ws(p[i]))
        i++;
    return i;
}

/* skip_value returns the end of the well-formed JSON value at p[i]. */
static size_t skip_value(const uint8_t *p, size_t i, size_t n) {
    if (p[i] == '"') {
        for (i++; i < n && p[i] != '"'; i++)
            if (p[i] == '\\')
                i++;
        return i + 1;
    }
    if (p[i] == '[' || p[i] == '{') {
        size_t depth = 0;
        for (; i < n; i++) {
            uint8_t c = p[i];
            if (c == '"')
                i = skip_value(p, i, n) - 1;
            else if (c == '[' || c == '{')
                depth++;
            else if ((c == ']' || c == '}') && --depth == 0)
                return i + 1;
        }
        return n;
    }
    while (i < n && p[i] != ',' && p[i] != ']' && p[i] != '}' && !is_ws(p[i]))
        i++;
    return i;
}

static const char *append_repr(weir_buf *dst, const weir_json_value *v);

static const char *append_array_repr(weir_buf *dst, const weir_json_value *v) {
    const uint8_t *p = v->raw;
    size_t n = v->len, i = skip_ws(p, 1, n);
    weir_buf_byte(dst, '[');
    for (bool first = true; i < n && p[i] != ']'; first = false) {
        size_t end = skip_value(p, i, n);
        weir_json_value item;
        const char *err = weir_json_parse(p + i, end - i, &item);
        if (err)
            return err;
        if (!first)
            weir_buf_str(dst, ", ");
        if ((err = append_repr(dst, &item)))
            return err;
        i = skip_ws(p, end, n);
        if (i < n && p[i] == ',')
            i = skip_ws(p, i + 1, n);
    }
    weir_buf_byte(dst, ']');
    return NULL;
}

static const char *append_object_repr(weir_buf *dst, const weir_json_value *v) {
    fields f = {0}; /* nested objects are rare: a fresh list each */
    const char *err = collect(&f, v->raw, v->len);
    if (!err) {
        weir_buf_byte(dst, '{');
        for (size_t i = 0; i < f.n && !err; i++) {
            if (i)
                weir_buf_str(dst, ", ");
            size_t len;
            const uint8_t *name = field_name(&f, i, &len);
            append_string_repr(dst, name, len);
            weir_buf_str(dst, ": ");
            err = append_repr(dst, &f.vals[i]);
        }
        weir_buf_byte(dst, '}');
    }
    fields_free(&f);
    return err;
}

/* append_repr appends repr() of the Python value json.loads reads from v;
 * an error message or NULL. */
static const char *append_repr(weir_buf *dst, const weir_json_value *v) {
    switch (v->kind) {
    case WEIR_JSON_STRING: {
        weir_buf text = {0};
        weir_json_string(v, &text);
        append_string_repr(dst, text.data, text.len);
        weir_buf_free(&text);
        return NULL;
    }
    case WEIR_JSON_NUMBER:
        append_number(dst, v);
        return NULL;
    case WEIR_JSON_BOOL:
        weir_buf_str(dst, v->raw[0] == 't' ? "True" : "False");
        return NULL;
    case WEIR_JSON_NULL:
        weir_buf_str(dst, "None");
        return NULL;
    case WEIR_JSON_ARRAY:
        return append_array_repr(dst, v);
    case WEIR_JSON_OBJECT:
        return append_object_repr(dst, v);
    default:
        weir_buf_append(dst, v->raw, v->len);
        return NULL;
    }
}

/* append_str appends str() of the Python value json.loads reads from v. */
static const char *append_str(weir_buf *dst, const weir_json_value *v) {
    if (v->kind == WEIR_JSON_STRING) {
        weir_json_string(v, dst);
        return NULL;
    }
    return append_repr(dst, v);
}

/* ------------------------------------------------------------------ */

/* top holds the fields of the record being serialised, reused. */
static fields top;

static void serialize(const weir_record *r, weir_out *out) {
    const char *err = collect(&top, r->value, r->value_len);
    if (err) {
        weir_reject(out, err);
        return;
    }
    weir_buf *dst = weir_value_begin(out);
    for (size_t i = 0; i < top.n && !err; i++) {
        if (i)
            weir_buf_byte(dst, '|');
        size_t len;
        const uint8_t *name = field_name(&top, i, &len);
        weir_buf_append(dst, name, len);
        weir_buf_byte(dst, '=');
        err = append_str(dst, &top.vals[i]);
    }
    weir_value_end(out);
    if (err)
        weir_reject(out, err);
}
WEIR_MAP(serialize);
