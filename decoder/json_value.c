/* decoder: go-cty's JSON encoding of a value, decoded against its type into
 * decoded-value JSON. A small bounded tokenizer of our own: cJSON turns
 * numbers into doubles, and numbers here must stay exact. */
#include "decoder/decoder_int.h"

#include <stdlib.h>
#include <string.h>

struct js {
    const char *p;
    const char *end;
    struct dec_walk *w;
    tftap_buf scratch; /* unescaped string values, reused */
};

static void ws(struct js *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int fail(struct js *j, const char *reason)
{
    return dec_walk_fail(j->w, TFTAP_EDECODE, "%s", reason);
}

static int peek(struct js *j)
{
    ws(j);
    return j->p < j->end ? (unsigned char)*j->p : -1;
}

static int hex4(const char *p, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

static void put_utf8(tftap_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    tftap_buf_append(b, u, n);
}

/* Read a string token. *s and *n point into the input when it has no escapes,
 * else into dst (which is reset first). */
static int string_tok(struct js *j, tftap_buf *dst, const char **s, size_t *n)
{
    if (peek(j) != '"')
        return fail(j, "expected a string");
    const char *start = ++j->p;
    const char *q = start;
    while (q < j->end && *q != '"' && *q != '\\') {
        if ((unsigned char)*q < 0x20)
            return fail(j, "control character in string");
        q++;
    }
    if (q >= j->end)
        return fail(j, "unterminated string");
    if (*q == '"') {
        if (!dec_utf8_valid(start, (size_t)(q - start)))
            return fail(j, "string is not valid utf-8");
        *s = start;
        *n = (size_t)(q - start);
        j->p = q + 1;
        return 0;
    }
    tftap_buf_reset(dst);
    tftap_buf_append(dst, start, (size_t)(q - start));
    while (q < j->end && *q != '"') {
        if ((unsigned char)*q < 0x20)
            return fail(j, "control character in string");
        if (*q != '\\') {
            tftap_buf_putc(dst, *q++);
            continue;
        }
        if (++q >= j->end)
            break;
        char c = *q++;
        switch (c) {
        case '"':
            tftap_buf_putc(dst, '"');
            break;
        case '\\':
            tftap_buf_putc(dst, '\\');
            break;
        case '/':
            tftap_buf_putc(dst, '/');
            break;
        case 'b':
            tftap_buf_putc(dst, '\b');
            break;
        case 'f':
            tftap_buf_putc(dst, '\f');
            break;
        case 'n':
            tftap_buf_putc(dst, '\n');
            break;
        case 'r':
            tftap_buf_putc(dst, '\r');
            break;
        case 't':
            tftap_buf_putc(dst, '\t');
            break;
        case 'u': {
            uint32_t cp, lo;
            if (j->end - q < 4 || hex4(q, &cp))
                return fail(j, "bad \\u escape in string");
            q += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return fail(j, "unpaired surrogate in string");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (j->end - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, &lo) ||
                    lo < 0xdc00 || lo > 0xdfff)
                    return fail(j, "unpaired surrogate in string");
                q += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            put_utf8(dst, cp);
            break;
        }
        default:
            return fail(j, "bad escape in string");
        }
    }
    if (q >= j->end)
        return fail(j, "unterminated string");
    j->p = q + 1;
    if (tftap_buf_failed(dst))
        return dec_walk_fail(j->w, TFTAP_ENOMEM, "out of memory");
    if (!dec_utf8_valid(dst->data, dst->len))
        return fail(j, "string is not valid utf-8");
    *s = dst->data;
    *n = dst->len;
    return 0;
}

static int number_tok(struct js *j, const char **s, size_t *n)
{
    ws(j);
    const char *start = j->p;
    while (j->p < j->end && strchr("+-0123456789.eE", *j->p))
        j->p++;
    *s = start;
    *n = (size_t)(j->p - start);
    if (!*n || !dec_json_number_valid(start, *n))
        return fail(j, "invalid JSON number");
    return 0;
}

static int literal(struct js *j, const char *word)
{
    size_t n = strlen(word);
    ws(j);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return fail(j, "invalid JSON");
    j->p += n;
    return 0;
}

/* Expect c (after whitespace). */
static int expect(struct js *j, char c, const char *what)
{
    if (peek(j) != c)
        return fail(j, what);
    j->p++;
    return 0;
}

static int skip_value(struct js *j, unsigned depth)
{
    if (depth > j->w->max_depth)
        return dec_walk_fail(j->w, TFTAP_ELIMIT, "nesting deeper than %u levels", j->w->max_depth);
    const char *s;
    size_t n;
    int c = peek(j), rc;
    switch (c) {
    case '"':
        return string_tok(j, &j->scratch, &s, &n);
    case 't':
        return literal(j, "true");
    case 'f':
        return literal(j, "false");
    case 'n':
        return literal(j, "null");
    case '[':
        j->p++;
        if (peek(j) == ']') {
            j->p++;
            return 0;
        }
        for (;;) {
            if ((rc = skip_value(j, depth + 1)))
                return rc;
            c = peek(j);
            j->p++;
            if (c == ']')
                return 0;
            if (c != ',')
                return fail(j, "expected ',' or ']'");
        }
    case '{':
        j->p++;
        if (peek(j) == '}') {
            j->p++;
            return 0;
        }
        for (;;) {
            if ((rc = string_tok(j, &j->scratch, &s, &n)) || (rc = expect(j, ':', "expected ':'")))
                return rc;
            if ((rc = skip_value(j, depth + 1)))
                return rc;
            c = peek(j);
            j->p++;
            if (c == '}')
                return 0;
            if (c != ',')
                return fail(j, "expected ',' or '}'");
        }
    default:
        return number_tok(j, &s, &n);
    }
}

static int value(struct js *j, const dec_type *t);

/* Iterate "[ v, v, ... ]": calls value() for each element. */
static int array_value(struct js *j, const dec_type *t)
{
    struct dec_walk *w = j->w;
    if (peek(j) != '[')
        return fail(j, t->kind == DEC_LIST  ? "need JSON array for list"
                       : t->kind == DEC_SET ? "need JSON array for set"
                                            : "need JSON array for tuple");
    j->p++;
    tftap_buf_putc(w->out, '[');
    uint64_t i = 0;
    if (peek(j) == ']') {
        j->p++;
    } else {
        for (;; i++) {
            int rc = dec_walk_push(w, DEC_STEP_INDEX, NULL, 0, i);
            if (rc)
                return rc;
            if (t->kind == DEC_TUPLE && i >= t->n)
                return fail(j, "too many tuple elements");
            if (i)
                tftap_buf_putc(w->out, ',');
            rc = value(j, t->kind == DEC_TUPLE ? t->elems[i] : t->elem);
            if (rc)
                return rc;
            dec_walk_pop(w);
            int c = peek(j);
            j->p++;
            if (c == ']') {
                i++;
                break;
            }
            if (c != ',')
                return fail(j, "expected ',' or ']'");
        }
    }
    if (t->kind == DEC_TUPLE && i != t->n)
        return dec_walk_fail(w, TFTAP_EDECODE, "not enough tuple elements (need %zu)", t->n);
    tftap_buf_putc(w->out, ']');
    return 0;
}

/* Keys are kept alive for the path while their value decodes: a key that
 * needed unescaping gets its own copy. */
static int key_tok(struct js *j, const char **k, size_t *kn, char **owned)
{
    int rc = string_tok(j, &j->scratch, k, kn);
    *owned = NULL;
    if (rc)
        return rc;
    if (*k == j->scratch.data) {
        *owned = malloc(*kn ? *kn : 1);
        if (!*owned)
            return dec_walk_fail(j->w, TFTAP_ENOMEM, "out of memory");
        memcpy(*owned, *k, *kn);
        *k = *owned;
    }
    rc = expect(j, ':', "expected ':'");
    if (rc) {
        free(*owned);
        *owned = NULL;
    }
    return rc;
}

static int map_value(struct js *j, const dec_type *t)
{
    struct dec_walk *w = j->w;
    if (peek(j) != '{')
        return fail(j, "need JSON object for map");
    j->p++;
    tftap_buf_putc(w->out, '{');
    struct dec_key *keys = NULL;
    size_t nkeys = 0, cap = 0;
    int rc = 0;
    if (peek(j) == '}') {
        j->p++;
        goto done;
    }
    for (;;) {
        const char *k;
        size_t kn;
        char *owned;
        if ((rc = key_tok(j, &k, &kn, &owned)))
            goto out;
        if (nkeys == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct dec_key *nk = realloc(keys, ncap * sizeof *nk);
            if (!nk) {
                free(owned);
                rc = dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
                goto out;
            }
            keys = nk;
            cap = ncap;
        }
        /* Keep every key (for the duplicate check): copy the borrowed ones. */
        if (!owned && !(owned = malloc(kn ? kn : 1))) {
            rc = dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
            goto out;
        }
        if (owned != k)
            memcpy(owned, k, kn);
        keys[nkeys++] = (struct dec_key){owned, kn};
        if ((rc = dec_walk_push(w, DEC_STEP_KEY, owned, kn, 0)))
            goto out;
        if (nkeys > 1)
            tftap_buf_putc(w->out, ',');
        tftap_buf_json_string(w->out, owned, kn);
        tftap_buf_putc(w->out, ':');
        if ((rc = value(j, t->elem)))
            goto out;
        dec_walk_pop(w);
        int c = peek(j);
        j->p++;
        if (c == '}')
            break;
        if (c != ',') {
            rc = fail(j, "expected ',' or '}'");
            goto out;
        }
    }
    size_t dup = dec_keys_duplicate(keys, nkeys);
    if (dup < nkeys) {
        dec_walk_push(w, DEC_STEP_KEY, keys[dup].s, keys[dup].n, 0);
        rc = fail(j, "duplicate map key");
        goto out;
    }
done:
    tftap_buf_putc(w->out, '}');
out:
    /* Any error has been formatted with its path already: safe to free. */
    for (size_t i = 0; i < nkeys; i++)
        free((char *)keys[i].s); /* every key here is our own copy */
    free(keys);
    return rc;
}

static int object_value(struct js *j, const dec_type *t)
{
    struct dec_walk *w = j->w;
    if (peek(j) != '{')
        return fail(j, "need JSON object for object");
    j->p++;
    unsigned char *seen = calloc(t->n ? t->n : 1, 1);
    if (!seen)
        return dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    tftap_buf_putc(w->out, '{');
    size_t emitted = 0;
    int rc = 0;
    char *owned = NULL;
    if (peek(j) == '}') {
        j->p++;
    } else {
        for (;;) {
            const char *k;
            size_t kn;
            if ((rc = key_tok(j, &k, &kn, &owned)))
                goto out;
            if ((rc = dec_walk_push(w, DEC_STEP_ATTR, k, kn, 0)))
                goto out;
            const struct dec_attr *a = dec_type_attr(t, k, kn);
            if (!a) {
                rc = fail(j, "unsupported attribute");
                goto out;
            }
            size_t idx = (size_t)(a - t->attrs);
            if (seen[idx]) {
                rc = fail(j, "duplicate attribute");
                goto out;
            }
            seen[idx] = 1;
            if (emitted++)
                tftap_buf_putc(w->out, ',');
            tftap_buf_json_string(w->out, a->name, a->name_len);
            tftap_buf_putc(w->out, ':');
            size_t start = w->out->len;
            if ((rc = value(j, a->type)))
                goto out;
            if (a->sensitive || a->write_only)
                dec_walk_redact(w, start);
            dec_walk_pop(w);
            free(owned);
            owned = NULL;
            int c = peek(j);
            j->p++;
            if (c == '}')
                break;
            if (c != ',') {
                rc = fail(j, "expected ',' or '}'");
                goto out;
            }
        }
    }
    /* go-cty fills attributes the JSON leaves out with null. */
    for (size_t i = 0; i < t->n; i++) {
        if (seen[i])
            continue;
        if (emitted++)
            tftap_buf_putc(w->out, ',');
        tftap_buf_json_string(w->out, t->attrs[i].name, t->attrs[i].name_len);
        tftap_buf_puts(w->out, ":null");
    }
    tftap_buf_putc(w->out, '}');
out:
    /* Any error has been formatted with its path already: safe to free. */
    free(owned);
    free(seen);
    return rc;
}

/* A dynamic value: {"type": T, "value": V} in either order. */
static int dynamic_value(struct js *j)
{
    struct dec_walk *w = j->w;
    if (peek(j) != '{')
        return fail(j, "need JSON object for dynamically-typed value");
    j->p++;
    const char *type_at = NULL, *type_end = NULL, *value_at = NULL;
    int rc;
    if (peek(j) != '}') {
        for (;;) {
            const char *k;
            size_t kn;
            if ((rc = string_tok(j, &j->scratch, &k, &kn)) || (rc = expect(j, ':', "expected ':'")))
                return rc;
            int is_type = kn == 4 && memcmp(k, "type", 4) == 0;
            int is_value = kn == 5 && memcmp(k, "value", 5) == 0;
            if (!is_type && !is_value)
                return fail(j, "invalid key in dynamically-typed value");
            ws(j);
            const char *at = j->p;
            if ((rc = skip_value(j, w->depth + 1)))
                return rc;
            if (is_type) {
                type_at = at;
                type_end = j->p;
            } else {
                value_at = at;
            }
            int c = peek(j);
            j->p++;
            if (c == '}')
                break;
            if (c != ',')
                return fail(j, "expected ',' or '}'");
        }
    }
    if (!type_at)
        return fail(j, "missing type in dynamically-typed value");
    if (!value_at)
        return fail(j, "missing value in dynamically-typed value");
    dec_limits lim = {w->max_depth - w->depth, 0};
    dec_type *inner = NULL;
    dec_error terr = DEC_ERROR_INIT;
    rc = dec_type_parse(type_at, (size_t)(type_end - type_at), &lim, &inner, &terr);
    if (rc) {
        rc = dec_walk_fail(w, rc, "dynamic value type: %s", terr.reason ? terr.reason : "invalid");
        dec_error_done(&terr);
        return rc;
    }
    tftap_buf_puts(w->out, "{\"type\":");
    dec_type_to_json(inner, w->out);
    tftap_buf_puts(w->out, ",\"value\":");
    const char *resume = j->p;
    j->p = value_at;
    rc = value(j, inner);
    j->p = resume;
    dec_type_free(inner);
    if (rc)
        return rc;
    tftap_buf_putc(w->out, '}');
    return 0;
}

static int value(struct js *j, const dec_type *t)
{
    struct dec_walk *w = j->w;
    int c = peek(j);
    if (c < 0)
        return fail(j, "unexpected end of JSON");
    if (c == 'n') {
        int rc = literal(j, "null");
        if (!rc)
            tftap_buf_puts(w->out, "null");
        return rc;
    }
    const char *s;
    size_t n;
    int rc;
    switch (t->kind) {
    case DEC_DYNAMIC:
        return dynamic_value(j);
    case DEC_BOOL:
        if (c == 't' || c == 'f') {
            rc = literal(j, c == 't' ? "true" : "false");
            if (!rc)
                tftap_buf_puts(w->out, c == 't' ? "true" : "false");
            return rc;
        }
        if (c == '"') {
            /* go-cty converts the strings "true"/"false" ("1"/"0") to bools */
            if ((rc = string_tok(j, &j->scratch, &s, &n)))
                return rc;
            if ((n == 4 && memcmp(s, "true", 4) == 0) || (n == 1 && s[0] == '1'))
                tftap_buf_puts(w->out, "true");
            else if ((n == 5 && memcmp(s, "false", 5) == 0) || (n == 1 && s[0] == '0'))
                tftap_buf_puts(w->out, "false");
            else
                return fail(j, "a bool is required");
            return 0;
        }
        return fail(j, "bool is required");
    case DEC_NUMBER:
        if (c == '"') {
            if ((rc = string_tok(j, &j->scratch, &s, &n)))
                return rc;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if ((rc = number_tok(j, &s, &n)))
                return rc;
        } else {
            return fail(j, "number is required");
        }
        /* A valid JSON number comes out as it went in. */
        rc = dec_number_decimal(s, n, w->out);
        if (rc == TFTAP_ELIMIT)
            return dec_walk_fail(w, rc, "number exponent out of range");
        if (rc)
            return fail(j, "a number is required");
        return 0;
    case DEC_STRING:
        if (c == '"') {
            if ((rc = string_tok(j, &j->scratch, &s, &n)))
                return rc;
            tftap_buf_json_string(w->out, s, n);
            return 0;
        }
        if (c == 't' || c == 'f') {
            rc = literal(j, c == 't' ? "true" : "false");
            if (!rc)
                tftap_buf_puts(w->out, c == 't' ? "\"true\"" : "\"false\"");
            return rc;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            if ((rc = number_tok(j, &s, &n)))
                return rc;
            tftap_buf_json_string(w->out, s, n);
            return 0;
        }
        return fail(j, "string is required");
    case DEC_LIST:
    case DEC_SET:
    case DEC_TUPLE:
        return array_value(j, t);
    case DEC_MAP:
        return map_value(j, t);
    case DEC_OBJECT:
        return object_value(j, t);
    }
    return fail(j, "unsupported type");
}

static int json_body(struct dec_walk *w, const dec_type *t, const void *p, size_t n)
{
    struct js j = {p, (const char *)p + n, w, TFTAP_BUF_INIT};
    int rc = value(&j, t);
    if (!rc && peek(&j) >= 0)
        rc = dec_walk_fail(w, TFTAP_EDECODE, "trailing data after the value");
    if (!rc && tftap_buf_failed(&j.scratch))
        rc = dec_walk_fail(w, TFTAP_ENOMEM, "out of memory");
    tftap_buf_done(&j.scratch);
    return rc;
}

int dec_json_to_json(const dec_type *t, const void *p, size_t n, const dec_opts *opts,
                     tftap_buf *out, dec_error *err)
{
    return dec_walk_run(t, p, n, opts, out, err, json_body);
}
