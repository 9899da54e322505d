/* Contract checks: the findings a check adds (the list and what each says),
 * and the path of the value a rule is looking at. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "analysis/check_int.h"

/* ---- findings ------------------------------------------------------------ */

size_t analysis_findings_count(const analysis_findings *f, enum analysis_verdict v)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += f->v[i].verdict == v;
    return n;
}

void analysis_json_str(tftap_buf *b, const char *s)
{
    if (s)
        tftap_buf_json_string(b, s, strlen(s));
    else
        tftap_buf_puts(b, "null");
}

void analysis_json_raw(tftap_buf *b, const char *json)
{
    tftap_buf_puts(b, json && *json ? json : "null");
}

static void finding_free(analysis_finding *f)
{
    free(f->rpc);
    free(f->type_name);
    free(f->address);
    free(f->path);
    free(f->expected);
    free(f->actual);
    free(f->message);
}

void analysis_findings_done(analysis_findings *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        finding_free(&f->v[i]);
    free(f->v);
    f->v = NULL;
    f->n = f->cap = 0;
}

size_t analysis_findings_violations(const analysis_findings *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += f->v[i].verdict != ANALYSIS_DRIFT;
    return n;
}

const char *analysis_verdict_name(enum analysis_verdict v)
{
    switch (v) {
    case ANALYSIS_REJECTS:
        return "rejects";
    case ANALYSIS_TOLERATES:
        return "tolerates";
    case ANALYSIS_DRIFT:
        return "drift";
    }
    return "?";
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static char *node_json(const sj_node *n)
{
    if (!n)
        return NULL;
    tftap_buf b = TFTAP_BUF_INIT;
    sj_write(n, &b);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return NULL;
    }
    char *s = tftap_buf_take(&b, NULL);
    return s ? s : strdup("");
}

void ck_add(struct ck *k, const sj_node *expected, const sj_node *actual, const char *fmt, ...)
{
    analysis_findings *o = k->out;
    if (k->err)
        return;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 8;
        analysis_finding *v = realloc(o->v, cap * sizeof *v);
        if (!v) {
            k->err = TFTAP_ENOMEM;
            return;
        }
        o->v = v;
        o->cap = cap;
    }
    analysis_finding *f = &o->v[o->n];
    memset(f, 0, sizeof *f);
    f->call_id = k->c->call_id;
    f->other_call_id = k->other_call_id;
    f->rule = k->rule;
    f->verdict = k->verdict;
    f->rpc = dup_or_null(k->c->rpc);
    f->type_name = dup_or_null(k->c->type_name);
    f->address = dup_or_null(k->c->address);
    f->path = strdup(tftap_buf_cstr(&k->path));
    f->expected = node_json(expected);
    f->actual = node_json(actual);
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len >= 0 && (f->message = malloc((size_t)len + 1))) {
        va_start(ap, fmt);
        vsnprintf(f->message, (size_t)len + 1, fmt, ap);
        va_end(ap);
    }
    if (!f->path || !f->message || (k->c->rpc && !f->rpc) || (k->c->type_name && !f->type_name) ||
        (k->c->address && !f->address) || (expected && !f->expected) || (actual && !f->actual)) {
        finding_free(f);
        k->err = TFTAP_ENOMEM;
        return;
    }
    o->n++;
}

/* Drop findings added since mark (a sensitive attribute's details). */
void ck_drop_since(struct ck *k, size_t mark)
{
    while (k->out->n > mark)
        finding_free(&k->out->v[--k->out->n]);
}

/* ---- paths --------------------------------------------------------------- */

size_t ck_push_attr(struct ck *k, const char *name, size_t n)
{
    size_t mark = k->path.len;
    analysis_path_member(&k->path, name, n); /* the diff's path syntax */
    return mark;
}

size_t ck_push_key(struct ck *k, const char *key, size_t n)
{
    size_t mark = k->path.len;
    tftap_buf_putc(&k->path, '[');
    tftap_buf_json_string(&k->path, key, n);
    tftap_buf_putc(&k->path, ']');
    return mark;
}

size_t ck_push_index(struct ck *k, size_t i)
{
    size_t mark = k->path.len;
    tftap_buf_printf(&k->path, "[%zu]", i);
    return mark;
}

void ck_pop(struct ck *k, size_t mark)
{
    if (k->path.len > mark)
        k->path.len = mark;
    if (k->path.data)
        k->path.data[k->path.len] = '\0';
}

/* A map element or object attribute present on one side only, reported
 * at the collection's path with its key quoted. */
void ck_key_finding(struct ck *k, const sj_node *expected, const sj_node *actual, const sj_node *m,
                    const char *what)
{
    tftap_buf q = TFTAP_BUF_INIT;
    tftap_buf_json_string(&q, m->key, m->key_len);
    if (tftap_buf_failed(&q))
        k->err = TFTAP_ENOMEM;
    else
        ck_add(k, expected, actual, "element %s %s", tftap_buf_cstr(&q), what);
    tftap_buf_done(&q);
}
