/* decoder: go-cty's msgpack encoding of a value, decoded against its type
 * straight into decoded-value JSON. A hand-written bounded reader rather
 * than msgpack-c's object unpacker: that one builds a whole tree in a zone
 * and caps nesting at a fixed 32 levels, while payloads here are schema
 * driven, tens of MB, and must be bounded by our own depth limit. */
#include "decoder/decoder_int.h"

#include <stdlib.h>
#include <string.h>

/* Refinement payloads larger than this are refused, as go-cty does. */
#define REFINEMENT_MAX_BYTES 1024

struct mp {
    const uint8_t *p;
    const uint8_t *end;
    struct dec_walk *w;
};

static int truncated(struct mp *m)
{
    return dec_walk_fail(m->w, TFTAP_EDECODE, "truncated msgpack data");
}

static inline int need(struct mp *m, size_t n)
{
    return (size_t)(m->end - m->p) >= n ? 0 : truncated(m);
}

static inline uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Read a length-prefixed header of width n bytes after the type byte. */
static int read_len(struct mp *m, int n, uint64_t *len)
{
    if (need(m, (size_t)n))
        return TFTAP_EDECODE;
    *len = be(m->p, n);
    m->p += n;
    return 0;
}

static int is_ext(uint8_t b)
{
    return (b >= 0xd4 && b <= 0xd8) || (b >= 0xc7 && b <= 0xc9);
}

/* Read a str or bin header (go-cty's decoder accepts both for strings). */
static int read_str(struct mp *m, const char **s, size_t *n, int *is_str)
{
    if (need(m, 1))
        return TFTAP_EDECODE;
    uint8_t b = *m->p++;
    uint64_t len;
    int rc = 0;
    if (b >= 0xa0 && b <= 0xbf)
        len = b & 0x1f;
    else if (b == 0xd9 || b == 0xc4)
        rc = read_len(m, 1, &len);
    else if (b == 0xda || b == 0xc5)
        rc = read_len(m, 2, &len);
    else if (b == 0xdb || b == 0xc6)
        rc = read_len(m, 4, &len);
    else {
        m->p--;
        return 1; /* not a string */
    }
    if (rc)
        return rc;
    if ((uint64_t)(m->end - m->p) < len)
        return truncated(m);
    *s = (const char *)m->p;
    *n = (size_t)len;
    if (is_str)
        *is_str = !(b >= 0xc4 && b <= 0xc6);
    m->p += len;
    return 0;
}

/* Array header: 0 with *len set, 1 if the next item is not an array. */
static int read_array(struct mp *m, uint64_t *len)
{
    if (need(m, 1))
        return TFTAP_EDECODE;
    uint8_t b = *m->p;
    if (b >= 0x90 && b <= 0x9f) {
        m->p++;
        *len = b & 0x0f;
        return 0;
    }
    if (b == 0xdc || b == 0xdd) {
        m->p++;
        return read_len(m, b == 0xdc ? 2 : 4, len);
    }
    return 1;
}

static int read_map(struct mp *m, uint64_t *len)
{
    if (need(m, 1))
        return TFTAP_EDECODE;
    uint8_t b = *m->p;
    if (b >= 0x80 && b <= 0x8f) {
        m->p++;
        *len = b & 0x0f;
        return 0;
    }
    if (b == 0xde || b == 0xdf) {
        m->p++;
        return read_len(m, b == 0xde ? 2 : 4, len);
    }
    return 1;
}

/* A count read from the wire can never exceed the bytes left (every item
 * takes at least one byte): refuse it before allocating anything for it. */
static int check_count(struct mp *m, uint64_t count, unsigned per_item)
{
    if (count > (uint64_t)(m->end - m->p) / per_item)
        return truncated(m);
    return 0;
}

/* Integers: returns 0 and sets *neg and *mag, or 1 if not an integer. */
static int read_int(struct mp *m, int *neg, uint64_t *mag)
{
    if (need(m, 1))
        return TFTAP_EDECODE;
    uint8_t b = *m->p;
    int64_t sv;
    if (b <= 0x7f) {
        m->p++;
        *neg = 0;
        *mag = b;
        return 0;
    }
    if (b >= 0xe0) {
        m->p++;
        sv = (int8_t)b;
        goto signed_val;
    }
    int width;
    switch (b) {
    case 0xcc:
        width = 1;
        break;
    case 0xcd:
        width = 2;
        break;
    case 0xce:
        width = 4;
        break;
    case 0xcf:
        width = 8;
        break;
    case 0xd0:
        width = -1;
        break;
    case 0xd1:
        width = -2;
        break;
    case 0xd2:
        width = -4;
        break;
    case 0xd3:
        width = -8;
        break;
    default:
        return 1;
    }
    m->p++;
    int n = width < 0 ? -width : width;
    if (need(m, (size_t)n))
        return TFTAP_EDECODE;
    uint64_t raw = be(m->p, n);
    m->p += n;
    if (width > 0) {
        *neg = 0;
        *mag = raw;
        return 0;
    }
    /* sign-extend the n-byte two's complement value */
    if (n < 8 && (raw >> (8 * n - 1)) & 1)
        raw |= ~0ull << (8 * n);
    sv = (int64_t)raw;
signed_val:
    *neg = sv < 0;
    *mag = sv < 0 ? (uint64_t)0 - (uint64_t)sv : (uint64_t)sv;
    return 0;
}

static int skip(struct mp *m, unsigned depth);

static int skip_n(struct mp *m, uint64_t n, unsigned depth)
{
    for (uint64_t i = 0; i < n; i++) {
        int rc = skip(m, depth);
        if (rc)
            return rc;
    }
    return 0;
}

/* Skip one item of any kind (used for ignored refinement values). */
static int skip(struct mp *m, unsigned depth)
{
    if (depth > m->w->max_depth)
        return dec_walk_fail(m->w, TFTAP_ELIMIT, "nesting deeper than %u levels", m->w->max_depth);
    if (need(m, 1))
        return TFTAP_EDECODE;
    uint8_t b = *m->p;
    uint64_t len;
    int neg, rc;
    const char *s;
    size_t sn;
    if ((rc = read_int(m, &neg, &len)) <= 0)
        return rc;
    if ((rc = read_str(m, &s, &sn, NULL)) <= 0)
        return rc;
    if ((rc = read_array(m, &len)) <= 0)
        return rc ? rc : check_count(m, len, 1) ? TFTAP_EDECODE : skip_n(m, len, depth + 1);
    if ((rc = read_map(m, &len)) <= 0)
        return rc ? rc : check_count(m, len, 2) ? TFTAP_EDECODE : skip_n(m, len * 2, depth + 1);
    m->p++;
    switch (b) {
    case 0xc0:
    case 0xc2:
    case 0xc3:
        return 0;
    case 0xca:
        return need(m, 4) ? TFTAP_EDECODE : (m->p += 4, 0);
    case 0xcb:
        return need(m, 8) ? TFTAP_EDECODE : (m->p += 8, 0);
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8: {
        size_t n = (size_t)1 + ((size_t)1 << (b - 0xd4));
        return need(m, n) ? TFTAP_EDECODE : (m->p += n, 0);
    }
    case 0xc7:
    case 0xc8:
    case 0xc9: {
        rc = read_len(m, b == 0xc7 ? 1 : b == 0xc8 ? 2 : 4, &len);
        if (rc)
            return rc;
        if ((uint64_t)(m->end - m->p) < len + 1)
            return truncated(m);
        m->p += len + 1;
        return 0;
    }
    }
    return dec_walk_fail(m->w, TFTAP_EDECODE, "invalid msgpack byte 0x%02x", b);
}

static int emit_string(struct mp *m, const char *s, size_t n)
{
    if (!dec_utf8_valid(s, n))
        return dec_walk_fail(m->w, TFTAP_EDECODE, "string is not valid utf-8");
    tftap_buf_json_string(m->w->out, s, n);
    return 0;
}

/* A number in any of go-cty's encodings: int, uint, float32/64, string. */
static int number(struct mp *m)
{
    tftap_buf *out = m->w->out;
    int neg;
    uint64_t mag;
    int rc = read_int(m, &neg, &mag);
    if (rc == 0) {
        /* By hand: printf would cost more than the rest of the value. */
        char tmp[21];
        size_t i = sizeof tmp;
        do {
            tmp[--i] = (char)('0' + mag % 10);
            mag /= 10;
        } while (mag != 0);
        if (neg)
            tmp[--i] = '-';
        tftap_buf_append(out, tmp + i, sizeof tmp - i);
        return 0;
    }
    if (rc < 0)
        return rc;
    uint8_t b = *m->p;
    if (b == 0xca || b == 0xcb) {
        m->p++;
        double v;
        if (b == 0xca) {
            if (need(m, 4))
                return TFTAP_EDECODE;
            uint32_t u = (uint32_t)be(m->p, 4);
            float f;
            memcpy(&f, &u, 4);
            v = f;
            m->p += 4;
        } else {
            if (need(m, 8))
                return TFTAP_EDECODE;
            uint64_t u = be(m->p, 8);
            memcpy(&v, &u, 8);
            m->p += 8;
        }
        if (dec_number_float(v, out))
            return dec_walk_fail(m->w, TFTAP_EDECODE, "number is NaN");
        return 0;
    }
    const char *s;
    size_t n;
    rc = read_str(m, &s, &n, NULL);
    if (rc < 0)
        return rc;
    if (rc > 0)
        return dec_walk_fail(m->w, TFTAP_EDECODE, "number is required");
    rc = dec_number_decimal(s, n, out);
    if (rc == TFTAP_ELIMIT)
        return dec_walk_fail(m->w, rc, "number exponent out of range");
    if (rc)
        return dec_walk_fail(m->w, rc, "number is required");
    return 0;
}

static int refinements(struct mp *m, const dec_type *t, const uint8_t *body, size_t len);

/* An extension at a value position is an unknown value. */
static int unknown(struct mp *m, const dec_type *t)
{
    uint8_t b = *m->p++;
    uint64_t len;
    int rc;
    if (b >= 0xd4 && b <= 0xd8) {
        len = (uint64_t)1 << (b - 0xd4);
    } else {
        rc = read_len(m, b == 0xc7 ? 1 : b == 0xc8 ? 2 : 4, &len);
        if (rc)
            return rc;
    }
    if (need(m, 1))
        return TFTAP_EDECODE;
    int8_t code = (int8_t)*m->p++;
    if ((uint64_t)(m->end - m->p) < len)
        return truncated(m);
    const uint8_t *body = m->p;
    m->p += len;
    /* Only code 12 with a body carries refinements; every other extension
     * (go-cty writes code 0 with one zero byte) is a plain unknown. */
    if (code != 12 || len <= 1 || t->kind == DEC_DYNAMIC) {
        tftap_buf_puts(m->w->out, "{\"$unknown\":{}}");
        return 0;
    }
    if (len > REFINEMENT_MAX_BYTES)
        return dec_walk_fail(m->w, TFTAP_ELIMIT, "unknown value refinements over %d bytes",
                             REFINEMENT_MAX_BYTES);
    return refinements(m, t, body, (size_t)len);
}

static int refinement_fail(struct mp *m, const char *what)
{
    return dec_walk_fail(m->w, TFTAP_EDECODE, "bad unknown value refinement: %s", what);
}

static int refinements(struct mp *outer, const dec_type *t, const uint8_t *body, size_t len)
{
    struct mp m = {body, body + len, outer->w};
    tftap_buf *out = outer->w->out;
    uint64_t count;
    if (read_map(&m, &count) != 0)
        return refinement_fail(outer, "not a map");
    if (check_count(&m, count, 2))
        return TFTAP_EDECODE;
    tftap_buf_puts(out, "{\"$unknown\":{");
    int first = 1;
    unsigned seen = 0; /* bit k: refinement key k already given */
    for (uint64_t i = 0; i < count; i++) {
        int neg;
        uint64_t key;
        int rc = read_int(&m, &neg, &key);
        if (rc < 0)
            return rc;
        if (rc > 0)
            return refinement_fail(outer, "non-integer key");
        if (neg)
            key = 0; /* no such key: ignored below */
        const char *name = NULL;
        switch (key) {
        case 1:
            name = "null";
            break;
        case 2:
            name = "prefix";
            break;
        case 3:
            name = "lower";
            break;
        case 4:
            name = "upper";
            break;
        case 5:
            name = "min_len";
            break;
        case 6:
            name = "max_len";
            break;
        }
        if (!name) {
            /* Unknown keys are reserved for future refinements: skip. */
            rc = skip(&m, outer->w->depth);
            if (rc)
                return rc;
            continue;
        }
        /* One value per key: a refinement given twice has no one meaning
         * (go-cty keeps the tighter bound, or panics on a contradiction). */
        if (seen & 1u << key)
            return refinement_fail(outer, "a refinement given twice");
        seen |= 1u << key;
        if (!first)
            tftap_buf_putc(out, ',');
        first = 0;
        tftap_buf_putc(out, '"');
        tftap_buf_puts(out, name);
        tftap_buf_puts(out, "\":");
        switch (key) {
        case 1:
            if (need(&m, 1))
                return TFTAP_EDECODE;
            if (*m.p != 0xc2 && *m.p != 0xc3)
                return refinement_fail(outer, "nullness is not a bool");
            tftap_buf_puts(out, *m.p++ == 0xc3 ? "true" : "false");
            break;
        case 2: {
            const char *s;
            size_t n;
            if (t->kind != DEC_STRING)
                return refinement_fail(outer, "string prefix for a non-string type");
            rc = read_str(&m, &s, &n, NULL);
            if (rc < 0)
                return rc;
            if (rc > 0)
                return refinement_fail(outer, "string prefix is not a string");
            if (!dec_utf8_valid(s, n))
                return refinement_fail(outer, "string prefix is not valid utf-8");
            tftap_buf_json_string(out, s, n);
            break;
        }
        case 3:
        case 4: {
            uint64_t alen;
            if (t->kind != DEC_NUMBER)
                return refinement_fail(outer, "number bound for a non-number type");
            rc = read_array(&m, &alen);
            if (rc < 0)
                return rc;
            if (rc > 0 || alen != 2)
                return refinement_fail(outer, "number bound is not a [number, bool] array");
            tftap_buf_putc(out, '[');
            if (need(&m, 1))
                return TFTAP_EDECODE;
            if (*m.p == 0xc0 || is_ext(*m.p))
                return refinement_fail(outer, "number bound is not a known number");
            rc = number(&m);
            if (rc)
                return rc;
            if (need(&m, 1))
                return TFTAP_EDECODE;
            if (*m.p != 0xc2 && *m.p != 0xc3)
                return refinement_fail(outer, "number bound inclusiveness is not a bool");
            tftap_buf_puts(out, *m.p++ == 0xc3 ? ",true]" : ",false]");
            break;
        }
        case 5:
        case 6: {
            uint64_t v;
            if (t->kind != DEC_LIST && t->kind != DEC_SET && t->kind != DEC_MAP)
                return refinement_fail(outer, "length bound for a non-collection type");
            rc = read_int(&m, &neg, &v);
            if (rc < 0)
                return rc;
            if (rc > 0)
                return refinement_fail(outer, "length bound is not an integer");
            if (neg)
                return refinement_fail(outer, "length bound is negative");
            tftap_buf_printf(out, "%llu", (unsigned long long)v);
            break;
        }
        }
    }
    /* Trailing bytes after the map are allowed: reserved for the future. */
    tftap_buf_puts(out, "}}");
    return 0;
}

static int value(struct mp *m, const dec_type *t);

static int map_value(struct mp *m, const dec_type *t, uint64_t count)
{
    struct dec_walk *w = m->w;
    if (check_count(m, count, 2))
        return TFTAP_EDECODE;
    struct dec_key *keys = count > 1 ? malloc(sizeof *keys * count) : NULL;
    if (count > 1 && !keys)
        return dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    int rc = 0;
    tftap_buf_putc(w->out, '{');
    for (uint64_t i = 0; i < count; i++) {
        const char *k;
        size_t kn;
        rc = read_str(m, &k, &kn, NULL);
        if (rc) {
            if (rc > 0)
                rc = dec_walk_fail(w, TFTAP_EDECODE, "map key is not a string");
            goto out;
        }
        if (keys)
            keys[i] = (struct dec_key){k, kn};
        if ((rc = dec_walk_push(w, DEC_STEP_KEY, k, kn, 0)))
            goto out;
        if (!dec_utf8_valid(k, kn)) {
            rc = dec_walk_fail(w, TFTAP_EDECODE, "map key is not valid utf-8");
            goto out;
        }
        if (i)
            tftap_buf_putc(w->out, ',');
        tftap_buf_json_string(w->out, k, kn);
        tftap_buf_putc(w->out, ':');
        if ((rc = value(m, t->elem)))
            goto out;
        dec_walk_pop(w);
    }
    tftap_buf_putc(w->out, '}');
    size_t dup = keys ? dec_keys_duplicate(keys, (size_t)count) : (size_t)count;
    if (dup < count) {
        dec_walk_push(w, DEC_STEP_KEY, keys[dup].s, keys[dup].n, 0);
        rc = dec_walk_fail(w, TFTAP_EDECODE, "duplicate map key");
        dec_walk_pop(w);
    }
out:
    free(keys);
    return rc;
}

static int object_value(struct mp *m, const dec_type *t, uint64_t count)
{
    struct dec_walk *w = m->w;
    if (count != t->n)
        return dec_walk_fail(w, TFTAP_EDECODE,
                             "an object with %zu attributes is required "
                             "(%llu given)",
                             t->n, (unsigned long long)count);
    uint64_t small_seen = 0;
    unsigned char *seen = t->n > 64 ? calloc(t->n, 1) : NULL;
    if (t->n > 64 && !seen)
        return dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    int rc = 0;
    tftap_buf_putc(w->out, '{');
    for (uint64_t i = 0; i < count; i++) {
        const char *k;
        size_t kn;
        rc = read_str(m, &k, &kn, NULL);
        if (rc) {
            if (rc > 0)
                rc = dec_walk_fail(w, TFTAP_EDECODE, "object attribute name is not a string");
            goto out;
        }
        if ((rc = dec_walk_push(w, DEC_STEP_ATTR, k, kn, 0)))
            goto out;
        /* go-cty writes an object's attributes in byte order, as they
         * are sorted here: the i-th is nearly always the one. */
        const struct dec_attr *a =
            i < t->n && t->attrs[i].name_len == kn && memcmp(t->attrs[i].name, k, kn) == 0
                ? &t->attrs[i]
                : dec_type_attr(t, k, kn);
        if (!a) {
            rc = dec_walk_fail(w, TFTAP_EDECODE, "unsupported attribute");
            goto out;
        }
        size_t idx = (size_t)(a - t->attrs);
        int dup = seen ? seen[idx] : (int)((small_seen >> idx) & 1);
        if (dup) {
            rc = dec_walk_fail(w, TFTAP_EDECODE, "duplicate attribute");
            goto out;
        }
        if (seen)
            seen[idx] = 1;
        else
            small_seen |= 1ull << idx;
        if (i)
            tftap_buf_putc(w->out, ',');
        tftap_buf_append(w->out, a->json_key, a->json_key_len);
        size_t start = w->out->len;
        if ((rc = value(m, a->type)))
            goto out;
        if (a->sensitive || a->write_only)
            dec_walk_redact(w, start);
        dec_walk_pop(w);
    }
    tftap_buf_putc(w->out, '}');
out:
    free(seen);
    return rc;
}

static int array_value(struct mp *m, const dec_type *t, uint64_t count)
{
    struct dec_walk *w = m->w;
    if (check_count(m, count, 1))
        return TFTAP_EDECODE;
    if (t->kind == DEC_TUPLE && count != t->n)
        return dec_walk_fail(w, TFTAP_EDECODE, "a tuple of length %zu is required (%llu given)",
                             t->n, (unsigned long long)count);
    tftap_buf_putc(w->out, '[');
    for (uint64_t i = 0; i < count; i++) {
        int rc = dec_walk_push(w, DEC_STEP_INDEX, NULL, 0, i);
        if (rc)
            return rc;
        if (i)
            tftap_buf_putc(w->out, ',');
        rc = value(m, t->kind == DEC_TUPLE ? t->elems[i] : t->elem);
        if (rc)
            return rc;
        dec_walk_pop(w);
    }
    tftap_buf_putc(w->out, ']');
    return 0;
}

/* A dynamic value: [type JSON bytes, value]. */
static int dynamic_value(struct mp *m)
{
    struct dec_walk *w = m->w;
    uint64_t count;
    int rc = read_array(m, &count);
    if (rc < 0)
        return rc;
    if (rc > 0 || count != 2)
        return dec_walk_fail(w, TFTAP_EDECODE, "dynamic value must be a two-element array");
    const char *tj;
    size_t tn;
    rc = read_str(m, &tj, &tn, NULL);
    if (rc < 0)
        return rc;
    if (rc > 0)
        return dec_walk_fail(w, TFTAP_EDECODE, "dynamic value type must be bytes");
    /* The embedded type shares the depth budget left at this point. */
    dec_limits lim = {w->max_depth - w->depth, 0};
    dec_type *inner = NULL;
    dec_error terr = DEC_ERROR_INIT;
    rc = dec_type_parse(tj, tn, &lim, &inner, &terr);
    if (rc) {
        rc = dec_walk_fail(
            w, rc, "dynamic value type: %s%s%s", terr.path && terr.path[0] ? terr.path : "",
            terr.path && terr.path[0] ? ": " : "", terr.reason ? terr.reason : tftap_strerror(rc));
        dec_error_done(&terr);
        return rc;
    }
    tftap_buf_puts(w->out, "{\"type\":");
    dec_type_to_json(inner, w->out);
    tftap_buf_puts(w->out, ",\"value\":");
    rc = value(m, inner);
    dec_type_free(inner);
    if (rc)
        return rc;
    tftap_buf_putc(w->out, '}');
    return 0;
}

static int value(struct mp *m, const dec_type *t)
{
    struct dec_walk *w = m->w;
    if (need(m, 1))
        return TFTAP_EDECODE;
    uint8_t b = *m->p;
    if (is_ext(b))
        return unknown(m, t);
    if (b == 0xc0) {
        m->p++;
        tftap_buf_puts(w->out, "null");
        return 0;
    }
    uint64_t count;
    int rc;
    switch (t->kind) {
    case DEC_DYNAMIC:
        return dynamic_value(m);
    case DEC_BOOL:
        if (b != 0xc2 && b != 0xc3)
            return dec_walk_fail(w, TFTAP_EDECODE, "bool is required");
        m->p++;
        tftap_buf_puts(w->out, b == 0xc3 ? "true" : "false");
        return 0;
    case DEC_NUMBER:
        return number(m);
    case DEC_STRING: {
        const char *s;
        size_t n;
        rc = read_str(m, &s, &n, NULL);
        if (rc > 0)
            return dec_walk_fail(w, TFTAP_EDECODE, "string is required");
        return rc ? rc : emit_string(m, s, n);
    }
    case DEC_LIST:
    case DEC_SET:
    case DEC_TUPLE:
        rc = read_array(m, &count);
        if (rc > 0)
            return dec_walk_fail(w, TFTAP_EDECODE, "%s is required",
                                 t->kind == DEC_LIST  ? "a list"
                                 : t->kind == DEC_SET ? "a set"
                                                      : "a tuple");
        return rc ? rc : array_value(m, t, count);
    case DEC_MAP:
    case DEC_OBJECT:
        rc = read_map(m, &count);
        if (rc > 0)
            return dec_walk_fail(w, TFTAP_EDECODE, "%s is required",
                                 t->kind == DEC_MAP ? "a map" : "an object");
        if (rc)
            return rc;
        return t->kind == DEC_MAP ? map_value(m, t, count) : object_value(m, t, count);
    }
    return dec_walk_fail(w, TFTAP_EDECODE, "unsupported type");
}

static int msgpack_body(struct dec_walk *w, const dec_type *t, const void *p, size_t n)
{
    struct mp m = {p, (const uint8_t *)p + n, w};
    if (n == 0)
        return dec_walk_fail(w, TFTAP_EDECODE, "empty msgpack payload");
    int rc = value(&m, t);
    if (!rc && m.p != m.end)
        rc = dec_walk_fail(w, TFTAP_EDECODE, "%zu trailing bytes after the value",
                           (size_t)(m.end - m.p));
    return rc;
}

int dec_msgpack_to_json(const dec_type *t, const void *p, size_t n, const dec_opts *opts,
                        tftap_buf *out, dec_error *err)
{
    return dec_walk_run(t, p, n, opts, out, err, msgpack_body);
}

int dec_dynamic_value_to_json(const dec_type *t, const void *msgpack, size_t msgpack_len,
                              const void *json, size_t json_len, const dec_opts *opts,
                              tftap_buf *out, dec_error *err)
{
    if (msgpack_len > 0)
        return dec_msgpack_to_json(t, msgpack, msgpack_len, opts, out, err);
    if (json_len > 0)
        return dec_json_to_json(t, json, json_len, opts, out, err);
    tftap_buf_puts(out, "null");
    return 0;
}
