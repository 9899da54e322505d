/* decoder: the inverse of the value renderer, for replay. A decoded value
 * (docs/decoded-values.md) goes back to msgpack the way go-cty writes it
 * (compact ints, float64 for what was a float64, decimal strings otherwise,
 * attributes in name order, unknowns as extension 0 or 12), so a payload
 * go-cty wrote comes back byte for byte. What the rendering reduced
 * (redacted values, undecoded payloads) cannot come back: docs/replay.md
 * lists what replaces it. Messages: encode.c. */
#include "decoder/decoder_int.h"

#include <math.h>
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

unsigned dec_limits_depth(const dec_limits *lim)
{
    return lim && lim->max_depth ? lim->max_depth : DEC_DEFAULT_MAX_DEPTH;
}

/* JSON nesting the value contract needs beyond the value's own: a dynamic
 * value's wrapper and an unknown's refinements add levels. */
static unsigned json_depth(const dec_limits *lim)
{
    unsigned d = dec_limits_depth(lim);
    return d > (UINT32_MAX - 64) / 2 ? UINT32_MAX : 2 * d + 64;
}

int dec_encode_value_node(const dec_type *t, const sj_node *v, const dec_limits *lim,
                          tftap_buf *out, dec_error *err)
{
    dec_opts opts = {.limits = {dec_limits_depth(lim), 0}};
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

int dec_encode_parse(const char *json, size_t n, const dec_limits *lim, sj_doc **doc,
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
    int rc = dec_encode_parse(json, n, lim, &doc, err);
    if (!rc)
        rc = dec_encode_value_node(t, sj_root(doc), lim, out, err);
    sj_free(doc);
    return rc;
}
