/* common: decoded values redacted after the fact. The decoder redacts what
 * a provider's schema marks as it decodes; what core marks (a sensitive
 * variable, a value derived from one, an attribute marked in the state)
 * is known only at the end of a run, from the plan and the state, so the
 * stored JSON is walked again: the values at paths marked secret, and
 * every string equal to a known secret, become {"$sensitive": ...} the
 * way the decoder writes them (equal secrets keep equal hashes); a
 * provider's free text (diagnostics) is handed to the caller whole, to cut
 * the secrets it quotes out of its words. */
#include "common/common.h"

#include <stdio.h>
#include <string.h>

void sj_path_member(tftap_buf *path, const char *key, size_t n)
{
    tftap_buf_printf(path, "k%zu:", n);
    tftap_buf_append(path, key, n);
}

void sj_path_index(tftap_buf *path, size_t i)
{
    tftap_buf_printf(path, "i%zu;", i);
}

struct walk {
    const sj_redactor *r;
    tftap_buf *out;
    tftap_buf path;
    int64_t *counts;
};

/* The whole value replaced, as the decoder would: null stays null (it
 * reveals nothing), an unknown loses its refinements (a prefix could
 * reveal part of it), a value already redacted stays as it is. */
static void redact_value(struct walk *w, const sj_node *n)
{
    if (n->kind == SJ_NULL || sj_is_sensitive(n)) {
        sj_write(n, w->out);
        return;
    }
    if (sj_is_unknown(n)) {
        tftap_buf_puts(w->out, "{\"$unknown\":{}}");
        return;
    }
    tftap_buf text = TFTAP_BUF_INIT;
    sj_write(n, &text);
    char hex[65] = "";
    if (tftap_buf_failed(&text)) {
        w->out->failed = 1;
        return;
    }
    w->r->mac(w->r->ctx, text.data ? text.data : "", text.len, hex);
    hex[64] = '\0';
    tftap_buf_printf(w->out, "{\"$sensitive\":\"hmac-sha256:%s\"}", hex);
    tftap_buf_done(&text);
}

static int is_member(const char *const *names, size_t n, const sj_node *c)
{
    for (size_t k = 0; k < n; k++)
        if (strlen(names[k]) == c->key_len && memcmp(names[k], c->key, c->key_len) == 0)
            return 1;
    return 0;
}

/* Free text and what holds it: every string given to r->text. */
static void walk_text(struct walk *w, const sj_node *n, unsigned depth)
{
    if (n->kind == SJ_STRING) {
        w->counts[SJ_REDACT_EQUAL] += w->r->text(w->r->ctx, n->str, n->len, w->out);
        return;
    }
    if ((n->kind != SJ_ARRAY && n->kind != SJ_OBJECT) || sj_is_sensitive(n) ||
        depth > TFTAP_JSON_MAX_DEPTH) {
        sj_write(n, w->out);
        return;
    }
    tftap_buf_putc(w->out, n->kind == SJ_ARRAY ? '[' : '{');
    for (const sj_node *c = n->child; c; c = c->next) {
        if (c != n->child)
            tftap_buf_putc(w->out, ',');
        if (n->kind == SJ_OBJECT) {
            tftap_buf_json_string(w->out, c->key, c->key_len);
            tftap_buf_putc(w->out, ':');
            if (is_member(w->r->verbatim, w->r->nverbatim, c)) {
                sj_write(c, w->out);
                continue;
            }
        }
        walk_text(w, c, depth + 1);
    }
    tftap_buf_putc(w->out, n->kind == SJ_ARRAY ? ']' : '}');
}

/* marking: 1 when paths below n are looked up in r->marked (n is inside a
 * root), 0 when not. */
static void walk(struct walk *w, const sj_node *n, int marking, unsigned depth)
{
    if (marking && w->r->marked && w->r->marked(w->r->ctx, w->path.data, w->path.len) &&
        n->kind != SJ_NULL && !sj_is_sensitive(n)) {
        redact_value(w, n);
        w->counts[SJ_REDACT_MARKED]++;
        return;
    }
    if (n->kind == SJ_STRING && n->len > 0 && w->r->secret(w->r->ctx, n->str, n->len)) {
        redact_value(w, n);
        w->counts[SJ_REDACT_EQUAL]++;
        return;
    }
    if ((n->kind != SJ_ARRAY && n->kind != SJ_OBJECT) || sj_is_sensitive(n) || sj_is_unknown(n) ||
        depth > TFTAP_JSON_MAX_DEPTH) {
        sj_write(n, w->out);
        return;
    }
    size_t mark = w->path.len;
    size_t i = 0;
    tftap_buf_putc(w->out, n->kind == SJ_ARRAY ? '[' : '{');
    for (const sj_node *c = n->child; c; c = c->next, i++) {
        if (c != n->child)
            tftap_buf_putc(w->out, ',');
        int below = marking;
        if (n->kind == SJ_OBJECT) {
            tftap_buf_json_string(w->out, c->key, c->key_len);
            tftap_buf_putc(w->out, ':');
            if (depth == 0 && !marking) {
                /* A root: a resource's value, whose paths marks name. */
                if (is_member(w->r->roots, w->r->nroots, c)) {
                    walk(w, c, 1, depth + 1);
                    continue;
                }
                if (w->r->text && is_member(w->r->texts, w->r->ntexts, c)) {
                    walk_text(w, c, depth + 1);
                    continue;
                }
            }
            if (marking)
                sj_path_member(&w->path, c->key, c->key_len);
        } else if (marking) {
            sj_path_index(&w->path, i);
        }
        walk(w, c, below, depth + 1);
        w->path.len = mark;
    }
    tftap_buf_putc(w->out, n->kind == SJ_ARRAY ? ']' : '}');
}

int sj_redact(const sj_node *root, const sj_redactor *r, tftap_buf *out, int64_t counts[2])
{
    struct walk w = {.r = r, .out = out, .path = TFTAP_BUF_INIT, .counts = counts};
    tftap_buf_puts(&w.path, ""); /* a path of its own, empty, never NULL */
    walk(&w, root, 0, 0);
    int failed = tftap_buf_failed(&w.path) || tftap_buf_failed(out);
    tftap_buf_done(&w.path);
    return failed ? TFTAP_ENOMEM : 0;
}
