/* recorder: the clear strings of a call's schema-sensitive values, seen
 * while its messages are rendered (decode.c), cut out of the provider's own
 * words in the same call: a diagnostic's detail, a function's error, a
 * status message, a decode error. Once rendered, a secret is known only by
 * its hash, so what quotes it can only be cut here. */
#include "recorder/recorder_int.h"

#include <stdlib.h>
#include <string.h>

/* A schema-sensitive string, once the call's messages are rendered, is
 * known only by its hash: a provider's words quoting it (a diagnostic's
 * detail, a status message) can only be cut while it is seen here. At
 * least this long, so that a short value (a word, a number) never cuts a
 * message's own words. */
#define QUOTED_MIN 6

static const char quoted_hidden[] = "(sensitive value)"; /* as core writes it */

void rec_quoted_note(struct call *c, const char *json, size_t len)
{
    sj_doc *d = NULL;
    if (len < 2 + QUOTED_MIN || json[0] != '"' || sj_parse(json, len, 1, &d) != 0)
        return;
    const sj_node *n = sj_root(d);
    int fresh = n->kind == SJ_STRING && n->len >= QUOTED_MIN && !memchr(n->str, '\0', n->len);
    for (size_t at = 0; fresh && at < c->quoted.len; at += strlen(c->quoted.data + at) + 1)
        fresh =
            strlen(c->quoted.data + at) != n->len || memcmp(c->quoted.data + at, n->str, n->len);
    if (fresh) {
        tftap_buf_append(&c->quoted, n->str, n->len);
        tftap_buf_putc(&c->quoted, '\0');
    }
    sj_free(d);
}

/* s (n bytes) into out with every quoted secret of c cut out; how many. */
static int64_t cut_quoted(const struct call *c, const char *s, size_t n, tftap_buf *out)
{
    int64_t cut = 0;
    tftap_buf_reset(out);
    tftap_buf_append(out, s, n);
    for (size_t at = 0; !tftap_buf_failed(&c->quoted) && at < c->quoted.len;) {
        const char *q = c->quoted.data + at;
        size_t k = strlen(q), from = 0;
        at += k + 1;
        const char *hit;
        while (out->data && from < out->len &&
               (hit = memmem(out->data + from, out->len - from, q, k)) != NULL) {
            size_t pos = (size_t)(hit - out->data);
            tftap_buf t = TFTAP_BUF_INIT;
            tftap_buf_append(&t, out->data, pos);
            tftap_buf_puts(&t, quoted_hidden);
            tftap_buf_append(&t, out->data + pos + k, out->len - pos - k);
            tftap_buf_done(out);
            *out = t;
            from = pos + sizeof quoted_hidden - 1;
            cut++;
        }
    }
    return cut;
}

static int never_secret(void *ctx, const char *s, size_t n)
{
    (void)ctx, (void)s, (void)n;
    return 0;
}

static int64_t quoted_text(void *ctx, const char *s, size_t n, tftap_buf *out)
{
    tftap_buf t = TFTAP_BUF_INIT;
    int64_t cut = cut_quoted(ctx, s, n, &t);
    if (tftap_buf_failed(&t))
        out->failed = 1;
    else
        tftap_buf_json_string(out, t.data ? t.data : "", t.len);
    tftap_buf_done(&t);
    return cut;
}

/* Whether any quoted secret of c is in json (n bytes of rendered JSON):
 * escaping is per character, so a secret inside a string shows as its own
 * escaped form. Most answers quote none, and are then not parsed again. */
static int quoted_in(const struct call *c, const char *json, size_t n)
{
    int found = 0;
    tftap_buf esc = TFTAP_BUF_INIT;
    for (size_t at = 0; !found && at < c->quoted.len;) {
        const char *q = c->quoted.data + at;
        size_t k = strlen(q);
        at += k + 1;
        tftap_buf_reset(&esc);
        tftap_buf_json_string(&esc, q, k);
        /* Without its quotes; a buffer that failed: look the long way. */
        found = tftap_buf_failed(&esc) || esc.len < 2 ||
                memmem(json, n, esc.data + 1, esc.len - 2) != NULL;
    }
    tftap_buf_done(&esc);
    return found;
}

/* The message rendered into out from mark on: its diagnostics and a
 * function's error lose the quoted secrets of c (the values stay). */
void rec_quoted_cut_words(struct call *c, tftap_buf *out, size_t mark)
{
    static const char *const texts[] = {"diagnostics", "error"}, *const verbatim[] = {"severity"};
    sj_doc *d = NULL;
    if (c->quoted.len == 0 || out->len <= mark ||
        !quoted_in(c, out->data + mark, out->len - mark) ||
        sj_parse(out->data + mark, out->len - mark, 0, &d) != 0)
        return;
    sj_redactor rr = {.secret = never_secret,
                      .ctx = c,
                      .text = quoted_text,
                      .texts = texts,
                      .ntexts = 2,
                      .verbatim = verbatim,
                      .nverbatim = 1};
    tftap_buf t = TFTAP_BUF_INIT;
    int64_t counts[2] = {0, 0};
    if (sj_redact(sj_root(d), &rr, &t, counts) == 0 && counts[SJ_REDACT_EQUAL] > 0) {
        out->len = mark;
        tftap_buf_append(out, t.data, t.len);
    }
    tftap_buf_done(&t);
    sj_free(d);
}

/* A provider's plain words (a status message, a decode error) without the
 * call's quoted secrets: a new string, or NULL for as it was. */
char *rec_quoted_without(const struct call *c, const char *s)
{
    if (!s || c->quoted.len == 0)
        return NULL;
    tftap_buf t = TFTAP_BUF_INIT;
    char *r = NULL;
    if (cut_quoted(c, s, strlen(s), &t) > 0 && !tftap_buf_failed(&t))
        r = rec_dupstr(tftap_buf_cstr(&t));
    tftap_buf_done(&t);
    return r;
}
