/* decoder: errors, decode paths, redaction and UTF-8 validation shared by
 * the value decoders. */
#include "decoder/decoder_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dec_error_done(dec_error *err)
{
    if (!err)
        return;
    free(err->path);
    free(err->reason);
    err->path = err->reason = NULL;
    err->code = 0;
}

void dec_error_format(const dec_error *err, tftap_buf *out)
{
    tftap_buf_printf(out, "decode error at %s: %s", err->path && err->path[0] ? err->path : ".",
                     err->reason ? err->reason : tftap_strerror(err->code));
}

static void error_vset(dec_error *err, int code, const char *path, const char *fmt, va_list ap)
{
    if (!err || err->code)
        return;
    tftap_buf reason = TFTAP_BUF_INIT;
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n >= 0 && tftap_buf_reserve(&reason, (size_t)n) == 0) {
        vsnprintf(reason.data, (size_t)n + 1, fmt, ap);
        reason.len = (size_t)n;
    }
    err->code = code;
    err->reason = tftap_buf_failed(&reason) ? NULL : tftap_buf_take(&reason, NULL);
    err->path = strdup(path ? path : "");
    tftap_buf_done(&reason);
}

void dec_error_set(dec_error *err, int code, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, path, fmt, ap);
    va_end(ap);
}

int dec_walk_init(struct dec_walk *w, const dec_opts *opts, tftap_buf *out, dec_error *err)
{
    static const dec_opts defaults;
    memset(w, 0, sizeof *w);
    w->opts = opts ? opts : &defaults;
    w->out = out;
    w->err = err;
    w->max_depth = w->opts->limits.max_depth ? w->opts->limits.max_depth : DEC_DEFAULT_MAX_DEPTH;
    /* Not zeroed: a step is written when pushed, before anything reads it,
     * and zeroing max_depth steps cost more than decoding a small value. */
    w->steps = malloc(((size_t)w->max_depth + 1) * sizeof *w->steps);
    if (!w->steps) {
        dec_error_set(err, TFTAP_ENOMEM, "", "out of memory");
        return TFTAP_ENOMEM;
    }
    return 0;
}

void dec_walk_done(struct dec_walk *w)
{
    free(w->steps);
    w->steps = NULL;
}

static int key_cmp(const void *a, const void *b)
{
    const struct dec_key *x = a, *y = b;
    return tftap_bytes_cmp(x->s, x->n, y->s, y->n);
}

size_t dec_keys_duplicate(struct dec_key *keys, size_t n)
{
    if (n < 2)
        return n;
    qsort(keys, n, sizeof *keys, key_cmp);
    for (size_t i = 1; i < n; i++)
        if (key_cmp(&keys[i - 1], &keys[i]) == 0)
            return i;
    return n;
}

int dec_walk_run(const dec_type *t, const void *p, size_t n, const dec_opts *opts, tftap_buf *out,
                 dec_error *err, dec_walk_body body)
{
    size_t max = opts && opts->limits.max_bytes ? opts->limits.max_bytes : DEC_DEFAULT_MAX_BYTES;
    if (n > max) {
        dec_error_set(err, TFTAP_ELIMIT, "", "payload of %zu bytes is over the %zu byte limit", n,
                      max);
        return TFTAP_ELIMIT;
    }
    struct dec_walk w;
    int rc = dec_walk_init(&w, opts, out, err);
    if (rc)
        return rc;
    size_t start = out->len;
    rc = body(&w, t, p, n);
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

int dec_walk_push(struct dec_walk *w, int kind, const char *name, size_t len, uint64_t index)
{
    if (w->depth >= w->max_depth)
        return dec_walk_fail(w, TFTAP_ELIMIT, "nesting deeper than %u levels", w->max_depth);
    struct dec_step *s = &w->steps[w->depth++];
    s->kind = kind;
    s->name = name;
    s->len = len;
    s->index = index;
    return 0;
}

static int is_identifier(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                 (i > 0 && ((c >= '0' && c <= '9') || c == '-'));
        if (!ok)
            return 0;
    }
    return 1;
}

void dec_path_format(const struct dec_step *steps, unsigned n, tftap_buf *out)
{
    /* Paths always start with '.', as in jq: `.tags["x"]`, `.[2]`. */
    if (n > 0 && !(steps[0].kind == DEC_STEP_ATTR && is_identifier(steps[0].name, steps[0].len)))
        tftap_buf_putc(out, '.');
    for (unsigned i = 0; i < n; i++) {
        const struct dec_step *s = &steps[i];
        switch (s->kind) {
        case DEC_STEP_ATTR:
        case DEC_STEP_KEY:
            if (s->kind == DEC_STEP_ATTR && is_identifier(s->name, s->len)) {
                tftap_buf_putc(out, '.');
                tftap_buf_append(out, s->name, s->len);
                break;
            }
            /* Keys, and attribute names that are not identifiers. */
            tftap_buf_putc(out, '[');
            /* Keys come from untrusted input: escape, and never print
             * invalid UTF-8 into an error message. */
            if (dec_utf8_valid(s->name, s->len))
                tftap_buf_json_string(out, s->name, s->len);
            else
                tftap_buf_puts(out, "\"<invalid utf-8>\"");
            tftap_buf_putc(out, ']');
            break;
        case DEC_STEP_INDEX:
            tftap_buf_printf(out, "[%llu]", (unsigned long long)s->index);
            break;
        }
    }
}

int dec_walk_fail(struct dec_walk *w, int code, const char *fmt, ...)
{
    if (w->err && !w->err->code) {
        tftap_buf path = TFTAP_BUF_INIT;
        dec_path_format(w->steps, w->depth, &path);
        va_list ap;
        va_start(ap, fmt);
        error_vset(w->err, code, tftap_buf_cstr(&path), fmt, ap);
        va_end(ap);
        tftap_buf_done(&path);
    }
    return code;
}

void dec_walk_redact(struct dec_walk *w, size_t start)
{
    tftap_buf *out = w->out;
    if (!w->opts->redact || tftap_buf_failed(out))
        return;
    const char *json = out->data + start;
    size_t len = out->len - start;
    if (len == 4 && memcmp(json, "null", 4) == 0)
        return; /* a null secret reveals nothing */
    if (len >= 11 && memcmp(json, "{\"$unknown\"", 11) == 0) {
        /* Refinements (a prefix, bounds) could reveal part of the secret. */
        out->len = start;
        tftap_buf_puts(out, "{\"$unknown\":{}}");
        return;
    }
    char hex[65];
    w->opts->redact(w->opts->redact_ctx, json, len, hex);
    out->len = start;
    tftap_buf_puts(out, "{\"$sensitive\":\"hmac-sha256:");
    tftap_buf_append(out, hex, 64);
    tftap_buf_puts(out, "\"}");
}

int dec_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, eight bytes at a time. */
        while (i + 8 <= n) {
            uint64_t v;
            memcpy(&v, s + i, 8);
            if (v & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i - 1 < need)
            return 0;
        for (size_t k = 1; k <= need; k++) {
            unsigned char cc = s[i + k];
            if ((cc & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (cc & 0x3f);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += need + 1;
    }
    return 1;
}
