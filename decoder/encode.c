/* decoder: the inverse of the value and message renderers, for replay.
 *
 * A decoded value (docs/decoded-values.md) goes back to msgpack the way
 * go-cty writes it (compact ints, float64 for what was a float64, decimal strings
 * otherwise, attributes in name order, unknowns as extension 0 or 12), so a
 * payload go-cty wrote comes back byte for byte. A rendered message goes
 * back to protobuf by walking protobuf-c's descriptors the way message.c
 * renders them, writing fields in field-number order as Go does. What the
 * rendering reduced (redacted values, private bytes, undecoded payloads,
 * unknown fields) cannot come back: docs/replay.md lists what replaces it. */
#include "decoder/decoder_int.h"
#include "decoder/message_int.h"
#include "decoder/pb_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* go-cty refuses refinement bodies larger than this (as the decoder does). */
#define REFINEMENT_MAX_BYTES 1024

/* ---- msgpack writing (as vmihailenco/msgpack, go-cty's encoder) ---------- */

static void put_be(tftap_buf *o, uint8_t code, uint64_t v, int n)
{
    char b[9];
    b[0] = (char)code;
    for (int i = 0; i < n; i++)
        b[1 + i] = (char)(v >> (8 * (n - 1 - i)));
    tftap_buf_append(o, b, (size_t)n + 1);
}

static void mp_uint(tftap_buf *o, uint64_t v)
{
    if (v <= 0x7f)
        tftap_buf_putc(o, (char)v);
    else if (v <= 0xff)
        put_be(o, 0xcc, v, 1);
    else if (v <= 0xffff)
        put_be(o, 0xcd, v, 2);
    else if (v <= 0xffffffffu)
        put_be(o, 0xce, v, 4);
    else
        put_be(o, 0xcf, v, 8);
}

static void mp_int(tftap_buf *o, int64_t v)
{
    if (v >= 0)
        mp_uint(o, (uint64_t)v);
    else if (v >= -32)
        tftap_buf_putc(o, (char)(uint8_t)v);
    else if (v >= INT8_MIN)
        put_be(o, 0xd0, (uint64_t)v & 0xff, 1);
    else if (v >= INT16_MIN)
        put_be(o, 0xd1, (uint64_t)v & 0xffff, 2);
    else if (v >= INT32_MIN)
        put_be(o, 0xd2, (uint64_t)v & 0xffffffffu, 4);
    else
        put_be(o, 0xd3, (uint64_t)v, 8);
}

static void mp_str(tftap_buf *o, const char *s, size_t n)
{
    if (n < 32)
        tftap_buf_putc(o, (char)(0xa0 | n));
    else if (n <= 0xff)
        put_be(o, 0xd9, n, 1);
    else if (n <= 0xffff)
        put_be(o, 0xda, n, 2);
    else
        put_be(o, 0xdb, n, 4);
    tftap_buf_append(o, s, n);
}

static void mp_bin(tftap_buf *o, const char *s, size_t n)
{
    if (n <= 0xff)
        put_be(o, 0xc4, n, 1);
    else if (n <= 0xffff)
        put_be(o, 0xc5, n, 2);
    else
        put_be(o, 0xc6, n, 4);
    tftap_buf_append(o, s, n);
}

static void mp_array(tftap_buf *o, size_t n)
{
    if (n < 16)
        tftap_buf_putc(o, (char)(0x90 | n));
    else if (n <= 0xffff)
        put_be(o, 0xdc, n, 2);
    else
        put_be(o, 0xdd, n, 4);
}

static void mp_map(tftap_buf *o, size_t n)
{
    if (n < 16)
        tftap_buf_putc(o, (char)(0x80 | n));
    else if (n <= 0xffff)
        put_be(o, 0xde, n, 2);
    else
        put_be(o, 0xdf, n, 4);
}

static void mp_float64(tftap_buf *o, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_be(o, 0xcb, u, 8);
}

static void mp_ext(tftap_buf *o, int8_t code, const char *body, size_t n)
{
    switch (n) {
    case 1:
        tftap_buf_putc(o, (char)0xd4);
        break;
    case 2:
        tftap_buf_putc(o, (char)0xd5);
        break;
    case 4:
        tftap_buf_putc(o, (char)0xd6);
        break;
    case 8:
        tftap_buf_putc(o, (char)0xd7);
        break;
    case 16:
        tftap_buf_putc(o, (char)0xd8);
        break;
    default:
        if (n <= 0xff)
            put_be(o, 0xc7, n, 1);
        else if (n <= 0xffff)
            put_be(o, 0xc8, n, 2);
        else
            put_be(o, 0xc9, n, 4);
    }
    tftap_buf_putc(o, (char)code);
    tftap_buf_append(o, body, n);
}

/* ---- numbers ------------------------------------------------------------- */

/* 1 (and *v) if s/n is exactly what dec_number_float prints for a float64,
 * 0 if not, TFTAP_ENOMEM. */
static int float_text(const char *s, size_t n, double *v)
{
    if (n >= 64)
        return 0; /* longer than any shortest float64 form */
    char copy[64];
    memcpy(copy, s, n);
    copy[n] = '\0';
    /* Significant digits of the mantissa, trailing zeros included. */
    size_t digits = 0, first = 0;
    for (size_t i = 0; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] < '0' || s[i] > '9')
            continue;
        if (s[i] != '0')
            first = 1;
        digits += first;
    }
    if (digits == 0 || digits > 17)
        return 0;
    *v = strtod(copy, NULL);
    if (!isfinite(*v))
        return 0;
    if (digits <= 15) {
        /* The common case, without dec_number_float's search: two decimals
         * of at most 15 digits never read as one float64, so a text that
         * reads back from %.<digits>g is the shortest form. dec_number_float
         * prints smaller integral values as plain digits. */
        if (*v == trunc(*v) && fabs(*v) < 9007199254740992.0)
            return 0;
        char buf[64];
        int len = snprintf(buf, sizeof buf, "%.*g", (int)digits, *v);
        return len > 0 && (size_t)len == n && memcmp(buf, s, n) == 0;
    }
    tftap_buf shortest = TFTAP_BUF_INIT;
    int same = dec_number_float(*v, &shortest) == 0 && shortest.len == n &&
               memcmp(shortest.data, s, n) == 0;
    int failed = tftap_buf_failed(&shortest);
    tftap_buf_done(&shortest);
    return failed ? TFTAP_ENOMEM : same;
}

/* A number as go-cty writes it: an int64 as the smallest int, a float64 as
 * float64, anything else as its decimal text. The decoded text says which:
 * integers are plain digits, a float64 is shown in the shortest form that
 * reads back as it (dec_number_float), and text that is neither was a
 * decimal string and goes back verbatim (so "2.50" stays "2.50"). */
static int put_number(struct dec_walk *w, const char *s, size_t n)
{
    size_t i = n > 0 && s[0] == '-' ? 1 : 0;
    if (i < n && n - i <= 19 && strspn(s + i, "0123456789") == n - i) {
        uint64_t mag = 0;
        for (size_t k = i; k < n; k++)
            mag = mag * 10 + (uint64_t)(s[k] - '0');
        if (i && mag == 0) {
            mp_float64(w->out, -0.0); /* "-0" only comes from a float64 */
            return 0;
        }
        if (i ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX) {
            mp_int(w->out, i ? (int64_t)(0 - mag) : (int64_t)mag);
            return 0;
        }
    }
    double v;
    int rc = float_text(s, n, &v);
    if (rc < 0)
        return dec_walk_fail(w, rc, "out of memory");
    if (rc) {
        mp_float64(w->out, v);
        return 0;
    }
    mp_str(w->out, s, n);
    return 0;
}

static int number_value(struct dec_walk *w, const sj_node *v)
{
    if (v->kind == SJ_NUMBER)
        return put_number(w, v->str, v->len);
    if (v->kind == SJ_STRING &&
        (strcmp(v->str, "Infinity") == 0 || strcmp(v->str, "-Infinity") == 0)) {
        mp_float64(w->out, v->str[0] == '-' ? -INFINITY : INFINITY);
        return 0;
    }
    return dec_walk_fail(w, TFTAP_EDECODE, "number is required");
}

/* ---- values -------------------------------------------------------------- */

static int enc_value(struct dec_walk *w, const dec_type *t, const sj_node *v, int sensitive);

/* What stands in for a redacted value: docs/replay.md. */
static void placeholder(tftap_buf *o, const dec_type *t, const sj_node *marker)
{
    switch (t->kind) {
    case DEC_STRING:
        if (marker && marker->kind == SJ_STRING && dec_utf8_valid(marker->str, marker->len))
            mp_str(o, marker->str, marker->len);
        else
            mp_str(o, "", 0);
        return;
    case DEC_NUMBER:
        mp_uint(o, 0);
        return;
    case DEC_BOOL:
        tftap_buf_putc(o, (char)0xc2);
        return;
    case DEC_DYNAMIC:
        mp_array(o, 2);
        mp_bin(o, "\"string\"", 8);
        if (marker && marker->kind == SJ_STRING && dec_utf8_valid(marker->str, marker->len))
            mp_str(o, marker->str, marker->len);
        else
            mp_str(o, "", 0);
        return;
    case DEC_LIST:
    case DEC_SET:
        mp_array(o, 0);
        return;
    case DEC_MAP:
        mp_map(o, 0);
        return;
    case DEC_TUPLE:
        mp_array(o, t->n);
        for (size_t i = 0; i < t->n; i++)
            placeholder(o, t->elems[i], marker);
        return;
    case DEC_OBJECT:
        mp_map(o, t->n);
        for (size_t i = 0; i < t->n; i++) {
            mp_str(o, t->attrs[i].name, t->attrs[i].name_len);
            tftap_buf_putc(o, (char)0xc0);
        }
        return;
    }
}

static int refinement_fail(struct dec_walk *w, const char *what)
{
    return dec_walk_fail(w, TFTAP_EDECODE, "bad unknown value refinement: %s", what);
}

static int is_length_type(const dec_type *t)
{
    return t->kind == DEC_LIST || t->kind == DEC_SET || t->kind == DEC_MAP;
}

/* {"$unknown": {...}}: extension 0 (one zero byte) without refinements,
 * else extension 12 holding a map of them in go-cty's key order. */
static int unknown_value(struct dec_walk *w, const dec_type *t, const sj_node *r)
{
    static const char *const names[] = {NULL,    "null",    "prefix", "lower",
                                        "upper", "min_len", "max_len"};
    if (r->kind != SJ_OBJECT)
        return refinement_fail(w, "refinements must be an object");
    const sj_node *by_key[7] = {0};
    size_t count = 0;
    for (const sj_node *m = r->child; m; m = m->next) {
        int k = 0;
        for (int i = 1; i <= 6; i++)
            if (strlen(names[i]) == m->key_len && memcmp(names[i], m->key, m->key_len) == 0)
                k = i;
        if (!k)
            return refinement_fail(w, "unknown refinement");
        if (by_key[k])
            return refinement_fail(w, "a refinement given twice");
        by_key[k] = m;
        count++;
    }
    if (count == 0) {
        mp_ext(w->out, 0, "", 1);
        return 0;
    }
    tftap_buf body = TFTAP_BUF_INIT;
    tftap_buf *saved = w->out;
    int rc = 0;
    mp_map(&body, count);
    w->out = &body;
    for (int k = 1; k <= 6 && !rc; k++) {
        const sj_node *v = by_key[k];
        if (!v)
            continue;
        mp_uint(&body, (uint64_t)k);
        switch (k) {
        case 1:
            if (v->kind != SJ_BOOL)
                rc = refinement_fail(w, "nullness is not a bool");
            else
                tftap_buf_putc(&body, (char)(v->boolean ? 0xc3 : 0xc2));
            break;
        case 2:
            if (t->kind != DEC_STRING)
                rc = refinement_fail(w, "string prefix for a non-string type");
            else if (v->kind != SJ_STRING)
                rc = refinement_fail(w, "string prefix is not a string");
            else if (!dec_utf8_valid(v->str, v->len))
                rc = refinement_fail(w, "string prefix is not valid utf-8");
            else
                mp_str(&body, v->str, v->len);
            break;
        case 3:
        case 4:
            if (t->kind != DEC_NUMBER)
                rc = refinement_fail(w, "number bound for a non-number type");
            else if (v->kind != SJ_ARRAY || v->n != 2 || v->child->next->kind != SJ_BOOL)
                rc = refinement_fail(w, "number bound is not a [number, bool] array");
            else {
                mp_array(&body, 2);
                rc = number_value(w, v->child);
                tftap_buf_putc(&body, (char)(v->child->next->boolean ? 0xc3 : 0xc2));
            }
            break;
        default:
            if (!is_length_type(t))
                rc = refinement_fail(w, "length bound for a non-collection type");
            else if (v->kind != SJ_NUMBER || v->str[0] == '-' ||
                     strspn(v->str, "0123456789") != v->len || v->len > 19)
                rc = refinement_fail(w, "length bound is not a non-negative integer");
            else
                mp_uint(&body, strtoull(v->str, NULL, 10));
            break;
        }
    }
    w->out = saved;
    if (!rc && tftap_buf_failed(&body))
        rc = dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    if (!rc && body.len > REFINEMENT_MAX_BYTES)
        rc = dec_walk_fail(w, TFTAP_ELIMIT, "unknown value refinements over %d bytes",
                           REFINEMENT_MAX_BYTES);
    if (!rc)
        mp_ext(w->out, 12, body.data, body.len);
    tftap_buf_done(&body);
    return rc;
}

static int dynamic_value(struct dec_walk *w, const sj_node *v)
{
    const sj_node *tn = sj_get(v, "type"), *vn = sj_get(v, "value");
    if (v->kind != SJ_OBJECT || !tn || !vn || v->n != 2)
        return dec_walk_fail(w, TFTAP_EDECODE,
                             "dynamic value must be an object with \"type\" and \"value\"");
    tftap_buf tj = TFTAP_BUF_INIT;
    sj_write(tn, &tj);
    if (tftap_buf_failed(&tj)) {
        tftap_buf_done(&tj);
        return dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    }
    /* The embedded type shares the depth budget left at this point. */
    dec_limits lim = {w->max_depth - w->depth, 0};
    dec_type *inner = NULL;
    dec_error terr = DEC_ERROR_INIT;
    int rc = dec_type_parse(tj.data ? tj.data : "", tj.len, &lim, &inner, &terr);
    tftap_buf_done(&tj);
    if (rc) {
        rc = dec_walk_fail(
            w, rc, "dynamic value type: %s%s%s", terr.path && terr.path[0] ? terr.path : "",
            terr.path && terr.path[0] ? ": " : "", terr.reason ? terr.reason : tftap_strerror(rc));
        dec_error_done(&terr);
        return rc;
    }
    /* go-cty writes the type's canonical JSON as bytes. */
    tftap_buf canon = TFTAP_BUF_INIT;
    dec_type_to_json(inner, &canon);
    mp_array(w->out, 2);
    mp_bin(w->out, canon.data ? canon.data : "", canon.len);
    if (tftap_buf_failed(&canon))
        w->out->failed = 1;
    tftap_buf_done(&canon);
    rc = enc_value(w, inner, vn, 0);
    dec_type_free(inner);
    return rc;
}

static int object_value(struct dec_walk *w, const dec_type *t, const sj_node *v)
{
    const sj_node **by_attr = t->n ? calloc(t->n, sizeof *by_attr) : NULL;
    if (t->n && !by_attr)
        return dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    int rc = 0;
    for (const sj_node *m = v->child; m && !rc; m = m->next) {
        const struct dec_attr *a = dec_type_attr(t, m->key, m->key_len);
        if ((rc = dec_walk_push(w, DEC_STEP_ATTR, m->key, m->key_len, 0)))
            break;
        if (!a)
            rc = dec_walk_fail(w, TFTAP_EDECODE, "unsupported attribute");
        else if (by_attr[a - t->attrs])
            rc = dec_walk_fail(w, TFTAP_EDECODE, "duplicate attribute");
        else
            by_attr[a - t->attrs] = m;
        if (!rc)
            dec_walk_pop(w);
    }
    /* Every attribute, in name order, as go-cty writes them; one the JSON
     * leaves out is null (as go-cty's JSON reading has it). */
    if (!rc)
        mp_map(w->out, t->n);
    for (size_t i = 0; i < t->n && !rc; i++) {
        const struct dec_attr *a = &t->attrs[i];
        mp_str(w->out, a->name, a->name_len);
        if (!by_attr[i]) {
            tftap_buf_putc(w->out, (char)0xc0);
            continue;
        }
        if ((rc = dec_walk_push(w, DEC_STEP_ATTR, a->name, a->name_len, 0)))
            break;
        rc = enc_value(w, a->type, by_attr[i], a->sensitive || a->write_only);
        if (!rc)
            dec_walk_pop(w);
    }
    free(by_attr);
    return rc;
}

static int map_value(struct dec_walk *w, const dec_type *t, const sj_node *v)
{
    struct dec_key *keys = v->n > 1 ? malloc(sizeof *keys * v->n) : NULL;
    if (v->n > 1 && !keys)
        return dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    size_t i = 0;
    for (const sj_node *m = v->child; m; m = m->next, i++)
        if (keys)
            keys[i] = (struct dec_key){m->key, m->key_len};
    size_t dup = keys ? dec_keys_duplicate(keys, v->n) : v->n;
    if (dup < v->n) {
        int rc = dec_walk_push(w, DEC_STEP_KEY, keys[dup].s, keys[dup].n, 0);
        if (!rc)
            rc = dec_walk_fail(w, TFTAP_EDECODE, "duplicate map key");
        free(keys);
        return rc;
    }
    free(keys);
    mp_map(w->out, v->n);
    for (const sj_node *m = v->child; m; m = m->next) {
        int rc = dec_walk_push(w, DEC_STEP_KEY, m->key, m->key_len, 0);
        if (rc)
            return rc;
        if (!dec_utf8_valid(m->key, m->key_len))
            return dec_walk_fail(w, TFTAP_EDECODE, "map key is not valid utf-8");
        mp_str(w->out, m->key, m->key_len);
        if ((rc = enc_value(w, t->elem, m, 0)))
            return rc;
        dec_walk_pop(w);
    }
    return 0;
}

static int array_value(struct dec_walk *w, const dec_type *t, const sj_node *v)
{
    if (t->kind == DEC_TUPLE && v->n != t->n)
        return dec_walk_fail(w, TFTAP_EDECODE, "a tuple of length %zu is required (%zu given)",
                             t->n, v->n);
    mp_array(w->out, v->n);
    size_t i = 0;
    for (const sj_node *e = v->child; e; e = e->next, i++) {
        int rc = dec_walk_push(w, DEC_STEP_INDEX, NULL, 0, i);
        if (rc)
            return rc;
        if ((rc = enc_value(w, t->kind == DEC_TUPLE ? t->elems[i] : t->elem, e, 0)))
            return rc;
        dec_walk_pop(w);
    }
    return 0;
}

/* sensitive: the schema marks this value sensitive or write-only, so a
 * {"$sensitive": ...} here is the redaction marker even for a map type
 * (where it could otherwise be a map with that one key). */
static int enc_value(struct dec_walk *w, const dec_type *t, const sj_node *v, int sensitive)
{
    if (sj_is_unknown(v))
        return unknown_value(w, t, v->child);
    if (sj_is_sensitive(v) && (sensitive || t->kind != DEC_MAP)) {
        placeholder(w->out, t, v->child);
        return 0;
    }
    if (v->kind == SJ_NULL) {
        tftap_buf_putc(w->out, (char)0xc0);
        return 0;
    }
    switch (t->kind) {
    case DEC_DYNAMIC:
        return dynamic_value(w, v);
    case DEC_BOOL:
        if (v->kind != SJ_BOOL)
            return dec_walk_fail(w, TFTAP_EDECODE, "bool is required");
        tftap_buf_putc(w->out, (char)(v->boolean ? 0xc3 : 0xc2));
        return 0;
    case DEC_NUMBER:
        return number_value(w, v);
    case DEC_STRING:
        if (v->kind != SJ_STRING)
            return dec_walk_fail(w, TFTAP_EDECODE, "string is required");
        if (!dec_utf8_valid(v->str, v->len))
            return dec_walk_fail(w, TFTAP_EDECODE, "string is not valid utf-8");
        mp_str(w->out, v->str, v->len);
        return 0;
    case DEC_LIST:
    case DEC_SET:
    case DEC_TUPLE:
        if (v->kind != SJ_ARRAY)
            return dec_walk_fail(w, TFTAP_EDECODE, "%s is required",
                                 t->kind == DEC_LIST  ? "a list"
                                 : t->kind == DEC_SET ? "a set"
                                                      : "a tuple");
        return array_value(w, t, v);
    case DEC_MAP:
    case DEC_OBJECT:
        if (v->kind != SJ_OBJECT)
            return dec_walk_fail(w, TFTAP_EDECODE, "%s is required",
                                 t->kind == DEC_MAP ? "a map" : "an object");
        return t->kind == DEC_MAP ? map_value(w, t, v) : object_value(w, t, v);
    }
    return dec_walk_fail(w, TFTAP_EDECODE, "unsupported type");
}

static unsigned depth_of(const dec_limits *lim)
{
    return lim && lim->max_depth ? lim->max_depth : DEC_DEFAULT_MAX_DEPTH;
}

/* JSON nesting the value contract needs beyond the value's own: a dynamic
 * value's wrapper and an unknown's refinements add levels. */
static unsigned json_depth(const dec_limits *lim)
{
    unsigned d = depth_of(lim);
    return d > (UINT32_MAX - 64) / 2 ? UINT32_MAX : 2 * d + 64;
}

/* Encode one parsed value; err's path is relative to the value. */
static int encode_node(const dec_type *t, const sj_node *v, const dec_limits *lim, tftap_buf *out,
                       dec_error *err)
{
    dec_opts opts = {.limits = {depth_of(lim), 0}};
    struct dec_walk w;
    int rc = dec_walk_init(&w, &opts, out, err);
    if (rc)
        return rc;
    size_t start = out->len;
    rc = enc_value(&w, t, v, 0);
    if (!rc && tftap_buf_failed(out))
        rc = dec_walk_fail(&w, TFTAP_ENOMEM, "out of memory");
    if (rc && !tftap_buf_failed(out)) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    }
    dec_walk_done(&w);
    return rc;
}

static int parse_json(const char *json, size_t n, const dec_limits *lim, sj_doc **doc,
                      dec_error *err)
{
    size_t max = lim && lim->max_bytes ? lim->max_bytes : DEC_DEFAULT_MAX_BYTES;
    if (n > max) {
        dec_error_set(err, TFTAP_ELIMIT, "", "payload of %zu bytes is over the %zu byte limit", n,
                      max);
        return TFTAP_ELIMIT;
    }
    int rc = sj_parse(json ? json : "", n, json_depth(lim), doc);
    if (rc == TFTAP_ENOMEM)
        dec_error_set(err, rc, "", "out of memory");
    else if (rc == TFTAP_ELIMIT)
        dec_error_set(err, rc, "", "JSON nested deeper than %u levels", json_depth(lim));
    else if (rc)
        dec_error_set(err, rc, "", "invalid JSON");
    return rc;
}

int dec_json_value_to_msgpack(const dec_type *t, const char *json, size_t n, const dec_limits *lim,
                              tftap_buf *out, dec_error *err)
{
    sj_doc *doc = NULL;
    int rc = parse_json(json, n, lim, &doc, err);
    if (!rc)
        rc = encode_node(t, sj_root(doc), lim, out, err);
    sj_free(doc);
    return rc;
}

/* ---- protobuf writing ------------------------------------------------------ */

static void pb_varint(tftap_buf *o, uint64_t v)
{
    char b[10];
    size_t n = 0;
    do {
        b[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    tftap_buf_append(o, b, n);
}

static void pb_tag(tftap_buf *o, uint32_t id, int wire)
{
    pb_varint(o, (uint64_t)id << 3 | (unsigned)wire);
}

static void pb_len(tftap_buf *o, uint32_t id, const void *p, size_t n)
{
    pb_tag(o, id, 2);
    pb_varint(o, n);
    tftap_buf_append(o, p, n);
}

static void pb_le(tftap_buf *o, uint64_t v, int n)
{
    char b[8];
    for (int i = 0; i < n; i++)
        b[i] = (char)(v >> (8 * i));
    tftap_buf_append(o, b, (size_t)n);
}

/* ---- messages -------------------------------------------------------------- */

struct menc {
    struct dec_value_ctx c;
    const dec_limits *lim;
    unsigned max_depth;
    unsigned depth;
    dec_error *err;
    tftap_buf path; /* the JSON path of the node being encoded */
};

static int mfail(struct menc *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int mfail(struct menc *e, int code, const char *fmt, ...)
{
    if (e->err && !e->err->code) {
        char reason[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        dec_error_set(e->err, code, tftap_buf_cstr(&e->path), "%s", reason);
    }
    return code;
}

/* Names and keys come from untrusted JSON: never copy invalid UTF-8 into
 * an error path. */
static void path_field(struct menc *e, const char *name)
{
    if (!dec_utf8_valid(name, strlen(name))) {
        tftap_buf_puts(&e->path, "[\"<invalid utf-8>\"]");
        return;
    }
    tftap_buf_putc(&e->path, '.');
    tftap_buf_puts(&e->path, name);
}

static void path_index(struct menc *e, size_t i)
{
    tftap_buf_printf(&e->path, "[%zu]", i);
}

static void path_key(struct menc *e, const char *k, size_t n)
{
    tftap_buf_putc(&e->path, '[');
    if (dec_utf8_valid(k, n))
        tftap_buf_json_string(&e->path, k, n);
    else
        tftap_buf_puts(&e->path, "\"<invalid utf-8>\"");
    tftap_buf_putc(&e->path, ']');
}

static void path_pop(struct menc *e, size_t mark)
{
    if (!tftap_buf_failed(&e->path) && e->path.data) {
        e->path.len = mark;
        e->path.data[mark] = '\0';
    }
}

/* An integer JSON number (or its text) within [min, max]. */
static int int_node(struct menc *e, const sj_node *v, int64_t min, uint64_t max, int64_t *sv,
                    uint64_t *uv)
{
    const char *s = v->kind == SJ_NUMBER || v->kind == SJ_STRING ? v->str : "";
    size_t n = v->kind == SJ_NUMBER || v->kind == SJ_STRING ? v->len : 0;
    int neg = n > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n || strspn(s + i, "0123456789") != n - i)
        return mfail(e, TFTAP_EDECODE, "an integer is required");
    uint64_t mag = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            return mfail(e, TFTAP_EDECODE, "integer out of range");
        mag = mag * 10 + d;
    }
    if (neg ? (min >= 0 || mag > (uint64_t)0 - (uint64_t)min) : mag > max)
        return mfail(e, TFTAP_EDECODE, "integer out of range");
    *uv = mag;
    *sv = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

static int base64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

static int base64_decode(const char *s, size_t n, tftap_buf *out)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t i = 0;
    for (; i < n && s[i] != '='; i++) {
        int v = base64_value((unsigned char)s[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            tftap_buf_putc(out, (char)((acc >> bits) & 0xff));
        }
    }
    for (; i < n; i++)
        if (s[i] != '=')
            return -1;
    return 0;
}

static int enc_message(struct menc *e, const ProtobufCMessageDescriptor *d, const sj_node *obj,
                       tftap_buf *out);

/* A DynamicValue field: its value as msgpack, through the type the schema
 * gives this field. */
static int enc_dynamic(struct menc *e, const ProtobufCFieldDescriptor *f, const sj_node *v,
                       size_t index, tftap_buf *msg)
{
    const ProtobufCMessageDescriptor *dd = f->descriptor;
    const ProtobufCFieldDescriptor *mf =
        protobuf_c_message_descriptor_get_field_by_name(dd, "msgpack");
    /* What the renderer could not decode has no value to send. */
    if (v->kind == SJ_OBJECT && (sj_get(v, "$undecoded") || sj_get(v, "$error")) && v->n <= 2)
        return 0;
    const dec_type *t = dec_value_ctx_type(&e->c, f->name, index);
    if (!t) {
        if (v->kind == SJ_NULL)
            return 0;
        const char *tn = e->c.type_name;
        return mfail(e, TFTAP_EDECODE, "no schema for this value (type %s)",
                     !tn                              ? "not named"
                     : dec_utf8_valid(tn, strlen(tn)) ? tn
                                                      : "<invalid utf-8>");
    }
    tftap_buf mp = TFTAP_BUF_INIT;
    dec_error verr = DEC_ERROR_INIT;
    int rc = encode_node(t, v, e->lim, &mp, &verr);
    if (rc) {
        if (e->err && !e->err->code) {
            /* The value's own path continues the message's. */
            const char *rel = verr.path ? verr.path : "";
            if (rel[0] == '.' && rel[1] == '[')
                rel++;
            tftap_buf full = TFTAP_BUF_INIT;
            tftap_buf_puts(&full, tftap_buf_cstr(&e->path));
            tftap_buf_puts(&full, rel);
            dec_error_set(e->err, rc, tftap_buf_cstr(&full), "%s",
                          verr.reason ? verr.reason : tftap_strerror(rc));
            tftap_buf_done(&full);
        }
    } else {
        pb_len(msg, mf->id, mp.data, mp.len);
        if (tftap_buf_failed(&mp))
            msg->failed = 1;
    }
    dec_error_done(&verr);
    tftap_buf_done(&mp);
    return rc;
}

/* Bytes as message.c renders them: private bytes (size and hash: nothing to
 * send back), embedded JSON, else base64. */
static int enc_bytes(struct menc *e, const ProtobufCMessageDescriptor *owner,
                     const ProtobufCFieldDescriptor *f, const sj_node *v, tftap_buf *b)
{
    if (dec_pb_is_private_field(f->name)) {
        if (v->kind == SJ_OBJECT)
            return 0;
    } else if (dec_pb_is_json_bytes(owner, f->name)) {
        /* Bytes that did not parse as JSON render as a string, as a JSON
         * string does: stored state is an object, so a string there was
         * text; a cty type JSON string ("string") was JSON. */
        if (v->kind == SJ_STRING && dec_pb_is_raw_state(owner))
            tftap_buf_append(b, v->str, v->len);
        else if (v->kind != SJ_NULL)
            sj_write(v, b);
        return 0;
    }
    if (v->kind != SJ_STRING || base64_decode(v->str, v->len, b))
        return mfail(e, TFTAP_EDECODE, "base64 bytes are required");
    return 0;
}

static int double_node(struct menc *e, const sj_node *v, double *out)
{
    if (v->kind == SJ_STRING) {
        if (strcmp(v->str, "NaN") == 0)
            *out = NAN;
        else if (strcmp(v->str, "Infinity") == 0)
            *out = INFINITY;
        else if (strcmp(v->str, "-Infinity") == 0)
            *out = -INFINITY;
        else
            return mfail(e, TFTAP_EDECODE, "a number is required");
        return 0;
    }
    if (v->kind != SJ_NUMBER)
        return mfail(e, TFTAP_EDECODE, "a number is required");
    *out = strtod(v->str, NULL);
    return 0;
}

/* One value of field f. packed: write no tag (inside a packed run).
 * force: write even a default value (present oneof members, map entries,
 * repeated elements). */
static int enc_field_value(struct menc *e, const ProtobufCMessageDescriptor *owner,
                           const ProtobufCFieldDescriptor *f, const sj_node *v, size_t index,
                           int force, int packed, tftap_buf *o)
{
    int64_t sv = 0;
    uint64_t uv = 0;
    int rc;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if ((rc = int_node(e, v, INT32_MIN, INT32_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if ((rc = int_node(e, v, 0, UINT32_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if ((rc = int_node(e, v, INT64_MIN, INT64_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if ((rc = int_node(e, v, 0, UINT64_MAX, &sv, &uv)))
            return rc;
        break;
    case PROTOBUF_C_TYPE_ENUM:
        if (v->kind == SJ_STRING) {
            const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(
                (const ProtobufCEnumDescriptor *)f->descriptor, v->str);
            if (!ev)
                return mfail(e, TFTAP_EDECODE, "unknown enum value");
            sv = ev->value;
        } else if ((rc = int_node(e, v, INT32_MIN, INT32_MAX, &sv, &uv))) {
            return rc;
        }
        break;
    case PROTOBUF_C_TYPE_BOOL:
        if (v->kind != SJ_BOOL)
            return mfail(e, TFTAP_EDECODE, "a bool is required");
        sv = v->boolean;
        break;
    default:
        break;
    }
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_BOOL:
        if (!force && sv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 0);
        pb_varint(o, (uint64_t)sv); /* negative int32 too: ten bytes, as Go writes them */
        return 0;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_UINT64:
        if (!force && uv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 0);
        pb_varint(o, uv);
        return 0;
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SINT64:
        if (!force && sv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 0);
        pb_varint(o, ((uint64_t)sv << 1) ^ (uint64_t)(sv >> 63));
        return 0;
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (!force && uv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 5);
        pb_le(o, (uint64_t)sv, 4);
        return 0;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (!force && uv == 0)
            return 0;
        if (!packed)
            pb_tag(o, f->id, 1);
        pb_le(o, f->type == PROTOBUF_C_TYPE_FIXED64 ? uv : (uint64_t)sv, 8);
        return 0;
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double dv;
        if ((rc = double_node(e, v, &dv)))
            return rc;
        if (!force && dv == 0 && !signbit(dv))
            return 0;
        if (f->type == PROTOBUF_C_TYPE_FLOAT) {
            float fv = (float)dv;
            uint32_t u;
            memcpy(&u, &fv, sizeof u);
            if (!packed)
                pb_tag(o, f->id, 5);
            pb_le(o, u, 4);
        } else {
            uint64_t u;
            memcpy(&u, &dv, sizeof u);
            if (!packed)
                pb_tag(o, f->id, 1);
            pb_le(o, u, 8);
        }
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING:
        if (v->kind != SJ_STRING)
            return mfail(e, TFTAP_EDECODE, "a string is required");
        if (!dec_utf8_valid(v->str, v->len))
            return mfail(e, TFTAP_EDECODE, "string is not valid utf-8"); /* proto3 requires it */
        if (force || v->len)
            pb_len(o, f->id, v->str, v->len);
        return 0;
    case PROTOBUF_C_TYPE_BYTES: {
        tftap_buf b = TFTAP_BUF_INIT;
        rc = enc_bytes(e, owner, f, v, &b);
        if (!rc && (force || b.len))
            pb_len(o, f->id, b.data, b.len);
        if (tftap_buf_failed(&b))
            o->failed = 1;
        tftap_buf_done(&b);
        return rc;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessageDescriptor *sd = f->descriptor;
        tftap_buf b = TFTAP_BUF_INIT;
        if (dec_pb_is_dynamic_value(sd))
            rc = enc_dynamic(e, f, v, index, &b);
        else if (v->kind == SJ_NULL)
            rc = 0; /* an absent message */
        else
            rc = enc_message(e, sd, v, &b);
        if (!rc && (v->kind != SJ_NULL || b.len || force))
            pb_len(o, f->id, b.data, b.len);
        if (tftap_buf_failed(&b))
            o->failed = 1;
        tftap_buf_done(&b);
        return rc;
    }
    }
    return mfail(e, TFTAP_EDECODE, "unsupported field type");
}

static int is_packable(const ProtobufCFieldDescriptor *f)
{
    return f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES &&
           f->type != PROTOBUF_C_TYPE_MESSAGE;
}

/* A map field: each member an entry message with key (1) and value (2),
 * both always written, as Go writes map entries. */
static int enc_map(struct menc *e, const ProtobufCFieldDescriptor *f, const sj_node *v,
                   tftap_buf *o)
{
    if (v->kind != SJ_OBJECT)
        return mfail(e, TFTAP_EDECODE, "an object is required");
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *kf = &ed->fields[0], *vf = &ed->fields[1];
    size_t i = 0;
    for (const sj_node *m = v->child; m; m = m->next, i++) {
        size_t mark = e->path.len;
        path_key(e, m->key, m->key_len);
        /* The key as a node of its own kind: rendered keys are strings. */
        sj_node key = {0};
        key.kind = kf->type == PROTOBUF_C_TYPE_STRING ? SJ_STRING
                   : kf->type == PROTOBUF_C_TYPE_BOOL ? SJ_BOOL
                                                      : SJ_NUMBER;
        key.str = m->key;
        key.len = m->key_len;
        key.boolean = m->key_len == 4 && memcmp(m->key, "true", 4) == 0;
        tftap_buf entry = TFTAP_BUF_INIT;
        int rc = enc_field_value(e, ed, kf, &key, i, 1, 0, &entry);
        if (!rc)
            rc = enc_field_value(e, ed, vf, m, i, 1, 0, &entry);
        if (!rc)
            pb_len(o, f->id, entry.data, entry.len);
        if (tftap_buf_failed(&entry))
            o->failed = 1;
        tftap_buf_done(&entry);
        if (rc)
            return rc;
        path_pop(e, mark);
    }
    return 0;
}

static int enc_field(struct menc *e, const ProtobufCMessageDescriptor *d,
                     const ProtobufCFieldDescriptor *f, const sj_node *v, tftap_buf *o)
{
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
        if (v->kind == SJ_NULL && !dec_pb_is_dynamic_value(f->descriptor))
            return 0;
        int force =
            f->label == PROTOBUF_C_LABEL_OPTIONAL || (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF);
        return enc_field_value(e, d, f, v, 0, force, 0, o);
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && dec_pb_is_map_entry(f->descriptor))
        return enc_map(e, f, v, o);
    if (v->kind == SJ_NULL)
        return 0;
    if (v->kind != SJ_ARRAY)
        return mfail(e, TFTAP_EDECODE, "an array is required");
    int packed = is_packable(f);
    tftap_buf run = TFTAP_BUF_INIT;
    tftap_buf *dst = packed ? &run : o;
    size_t i = 0;
    int rc = 0;
    for (const sj_node *x = v->child; x && !rc; x = x->next, i++) {
        size_t mark = e->path.len;
        path_index(e, i);
        rc = enc_field_value(e, d, f, x, i, 1, packed, dst);
        if (!rc)
            path_pop(e, mark);
    }
    if (!rc && packed && run.len)
        pb_len(o, f->id, run.data, run.len);
    if (tftap_buf_failed(&run))
        o->failed = 1;
    tftap_buf_done(&run);
    return rc;
}

/* AttributePath text (`.a["k"][3]`) back to steps: `.name` an attribute,
 * `["k"]` a string key, `[n]` an integer key. */
static int enc_path_text(struct menc *e, const ProtobufCMessageDescriptor *d, const char *s,
                         tftap_buf *o)
{
    const ProtobufCFieldDescriptor *sf =
        protobuf_c_message_descriptor_get_field_by_name(d, "steps");
    const ProtobufCMessageDescriptor *sd = sf->descriptor;
    const ProtobufCFieldDescriptor *fa =
        protobuf_c_message_descriptor_get_field_by_name(sd, "attribute_name");
    const ProtobufCFieldDescriptor *fs =
        protobuf_c_message_descriptor_get_field_by_name(sd, "element_key_string");
    const ProtobufCFieldDescriptor *fi =
        protobuf_c_message_descriptor_get_field_by_name(sd, "element_key_int");
    if (!dec_utf8_valid(s, strlen(s)))
        return mfail(e, TFTAP_EDECODE, "path is not valid utf-8");
    tftap_buf step = TFTAP_BUF_INIT;
    int rc = 0;
    const char *p = s;
    while (*p && !rc) {
        tftap_buf_reset(&step);
        if (*p == '.' && p[1] != '[') {
            const char *start = ++p;
            while (*p && *p != '.' && *p != '[')
                p++;
            if (p == start)
                rc = mfail(e, TFTAP_EDECODE, "empty attribute name in path");
            else
                pb_len(&step, fa->id, start, (size_t)(p - start));
        } else if (*p == '.') {
            p++;
            continue;
        } else if (*p == '[' && p[1] == '"') {
            /* The JSON string runs to the first unescaped quote. */
            const char *q = p + 2;
            while (*q && *q != '"')
                q += *q == '\\' && q[1] ? 2 : 1;
            sj_doc *kd = NULL;
            if (*q != '"' || q[1] != ']' || sj_parse(p + 1, (size_t)(q + 1 - (p + 1)), 1, &kd)) {
                rc = mfail(e, TFTAP_EDECODE, "bad key in path");
            } else {
                const sj_node *k = sj_root(kd);
                pb_len(&step, fs->id, k->str, k->len);
                p = q + 2;
            }
            sj_free(kd);
        } else if (*p == '[') {
            char *end;
            const char *q = p + 1;
            long long v = strtoll(q, &end, 10);
            if (end == q || *end != ']' || (*q != '-' && (*q < '0' || *q > '9')))
                rc = mfail(e, TFTAP_EDECODE, "bad index in path");
            else {
                pb_tag(&step, fi->id, 0);
                pb_varint(&step, (uint64_t)v);
                p = end + 1;
            }
        } else {
            rc = mfail(e, TFTAP_EDECODE, "bad path");
        }
        if (!rc)
            pb_len(o, sf->id, step.data, step.len);
    }
    if (tftap_buf_failed(&step))
        o->failed = 1;
    tftap_buf_done(&step);
    return rc;
}

static int enc_message(struct menc *e, const ProtobufCMessageDescriptor *d, const sj_node *obj,
                       tftap_buf *out)
{
    if (obj->kind != SJ_OBJECT)
        return mfail(e, TFTAP_EDECODE, "an object is required");
    if (e->depth >= e->max_depth)
        return mfail(e, TFTAP_ELIMIT, "nesting deeper than %u levels", e->max_depth);
    e->depth++;
    const sj_node **by_field = d->n_fields ? calloc(d->n_fields, sizeof *by_field) : NULL;
    if (d->n_fields && !by_field) {
        e->depth--;
        return mfail(e, TFTAP_ENOMEM, "out of memory");
    }
    /* A nested message naming its own resource type decodes its values
     * with that type's schema, as in the renderer. */
    const char *saved_type = e->c.type_name;
    const ProtobufCFieldDescriptor *tf =
        protobuf_c_message_descriptor_get_field_by_name(d, "type_name");
    const sj_node *own = tf && tf->type == PROTOBUF_C_TYPE_STRING ? sj_get(obj, "type_name") : NULL;
    if (own && own->kind == SJ_STRING && own->len && strlen(own->str) == own->len)
        e->c.type_name = own->str;
    const sj_node *path_text = NULL;
    int rc = 0;
    for (const sj_node *m = obj->child; m && !rc; m = m->next) {
        if (strcmp(m->key, "$unknown_fields") == 0)
            continue; /* their bytes are gone */
        if (dec_pb_is_attribute_path(d) && strcmp(m->key, "path") == 0) {
            path_text = m;
            continue;
        }
        const ProtobufCFieldDescriptor *f =
            strlen(m->key) == m->key_len
                ? protobuf_c_message_descriptor_get_field_by_name(d, m->key)
                : NULL;
        size_t mark = e->path.len;
        path_field(e, m->key);
        if (!f)
            rc = mfail(e, TFTAP_EDECODE, "unknown field");
        else if (by_field[f - d->fields])
            rc = mfail(e, TFTAP_EDECODE, "duplicate field");
        else {
            by_field[f - d->fields] = m;
            path_pop(e, mark);
        }
    }
    /* Steps say everything the text says; the text alone serves callers
     * that wrote only a path. */
    if (!rc && path_text) {
        const ProtobufCFieldDescriptor *sf =
            protobuf_c_message_descriptor_get_field_by_name(d, "steps");
        if (!by_field[sf - d->fields] || by_field[sf - d->fields]->kind == SJ_NULL) {
            size_t mark = e->path.len;
            path_field(e, "path");
            if (path_text->kind != SJ_STRING)
                rc = mfail(e, TFTAP_EDECODE, "a string is required");
            else
                rc = enc_path_text(e, d, path_text->str, out);
            if (!rc)
                path_pop(e, mark);
            by_field[sf - d->fields] = NULL;
        }
    }
    for (unsigned i = 0; i < d->n_fields && !rc; i++) {
        if (!by_field[i])
            continue;
        size_t mark = e->path.len;
        path_field(e, d->fields[i].name);
        rc = enc_field(e, d, &d->fields[i], by_field[i], out);
        if (!rc)
            path_pop(e, mark);
    }
    e->c.type_name = saved_type;
    free(by_field);
    e->depth--;
    return rc;
}

int dec_message_from_json(const char *method, int is_response, const char *type_name,
                          const char *json, size_t n, const dec_schema *schema,
                          const dec_limits *lim, tftap_buf *out, dec_error *err)
{
    struct dec_method m;
    if (!dec_method_find(method, &m)) {
        dec_error_set(err, TFTAP_ENOTFOUND, "", "unknown method %s",
                      method && dec_utf8_valid(method, strlen(method)) ? method : "?");
        return TFTAP_ENOTFOUND;
    }
    sj_doc *doc = NULL;
    int rc = parse_json(json, n, lim, &doc, err);
    if (rc)
        return rc;
    const sj_node *root = sj_root(doc);
    struct menc e = {
        .c = {.schema = schema, .rule = dec_method_rule(&m), .type_name = type_name},
        .lim = lim,
        .max_depth = depth_of(lim),
        .err = err,
    };
    /* A request names its own type; the caller's name serves responses. */
    const ProtobufCFieldDescriptor *tf = is_response ? NULL : dec_method_type_name_field(&m);
    if (tf) {
        const sj_node *own = sj_get(root, tf->name);
        if (own && own->kind == SJ_STRING && own->len && strlen(own->str) == own->len)
            e.c.type_name = own->str;
    }
    if (e.c.rule == DEC_RULE_FUNCTION)
        e.c.fn = dec_schema_function(schema, e.c.type_name);
    size_t start = out->len;
    rc = enc_message(&e, is_response ? m.m->output : m.m->input, root, out);
    if (!rc && (tftap_buf_failed(out) || tftap_buf_failed(&e.path)))
        rc = mfail(&e, TFTAP_ENOMEM, "out of memory");
    if (rc && !tftap_buf_failed(out)) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    }
    dec_value_ctx_done(&e.c);
    tftap_buf_done(&e.path);
    sj_free(doc);
    return rc;
}
