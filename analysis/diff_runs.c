/* analysis: the run diff over two recorded runs: calls and the schema
 * versions of their types read through the store's queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

/* A type's schema version, per provider and schema. */
struct tver {
    char *provider;
    char *type;
    int64_t version;
};

/* A schema's raw digest and the digest of its canonical form (the same
 * schema sent twice may differ in bytes: Go encodes protobuf maps in a
 * random order). */
struct canon {
    char raw[65], canonical[65];
};

struct side {
    analysis_diff_call *v;
    size_t n, cap;
    struct tver *t;
    size_t nt, capt;
    struct canon *c;
    size_t nc;
    int summarize; /* keep no JSON: summarize each call (analysis_diff_call_summarize) */
    int err;
};

static char *dup_or_null(const char *s, int *err)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *err = TFTAP_ENOMEM;
    return d;
}

static int each_call(void *ctx, const store_call_row *r)
{
    struct side *s = ctx;
    /* go-plugin's streams, and its Shutdown as the process ends (whether
     * its answer arrives before the process is gone is a race, and a
     * replay answers it): how a process ends, not provider behaviour. */
    if (r->stream || r->is_teardown)
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        analysis_diff_call *nv = realloc(s->v, cap * sizeof *nv);
        if (!nv)
            return TFTAP_ENOMEM;
        s->v = nv;
        s->cap = cap;
    }
    analysis_diff_call *c = &s->v[s->n++];
    memset(c, 0, sizeof *c);
    c->call_id = r->id;
    c->has_status = r->has_status;
    c->status_code = r->status_code;
    c->schema_version = -1;
    c->provider = dup_or_null(r->provider, &s->err);
    c->rpc = dup_or_null(r->rpc, &s->err);
    c->type_name = dup_or_null(r->type_name, &s->err);
    c->address = dup_or_null(r->address, &s->err);
    if (s->summarize) {
        /* Read while the row holds it; given again by stream_side. */
        c->request_json = r->request_json;
        c->response_json = r->response_json;
        int rc = analysis_diff_call_summarize(c);
        c->request_json = c->response_json = NULL;
        if (rc && !s->err)
            s->err = rc;
        return s->err;
    }
    c->request_json = dup_or_null(r->request_json, &s->err);
    c->response_json = dup_or_null(r->response_json, &s->err);
    return s->err;
}

static void side_done(struct side *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free((char *)s->v[i].provider);
        free((char *)s->v[i].rpc);
        free((char *)s->v[i].type_name);
        free((char *)s->v[i].address);
        free((char *)s->v[i].request_json);
        free((char *)s->v[i].response_json);
    }
    free(s->v);
    for (size_t i = 0; i < s->nt; i++) {
        free(s->t[i].provider);
        free(s->t[i].type);
    }
    free(s->t);
    free(s->c);
}

struct schema_ctx {
    struct side *side;
    tftap_buf *providers;
};

static int add_versions(struct side *s, const char *provider, const sj_node *map)
{
    for (const sj_node *c = map && map->kind == SJ_OBJECT ? map->child : NULL; c; c = c->next) {
        const sj_node *v = sj_get(c, "version");
        if (s->nt == s->capt) {
            size_t cap = s->capt ? s->capt * 2 : 64;
            struct tver *nt = realloc(s->t, cap * sizeof *nt);
            if (!nt)
                return TFTAP_ENOMEM;
            s->t = nt;
            s->capt = cap;
        }
        struct tver *t = &s->t[s->nt];
        t->provider = strdup(provider ? provider : "");
        t->type = strndup(c->key, c->key_len);
        t->version = v && v->kind == SJ_NUMBER ? strtoll(v->str, NULL, 10) : 0;
        if (!t->provider || !t->type) {
            free(t->provider);
            free(t->type);
            return TFTAP_ENOMEM;
        }
        s->nt++;
    }
    return 0;
}

static int each_schema(void *ctx, const store_schema_row *r)
{
    struct schema_ctx *x = ctx;
    tftap_buf_printf(x->providers, "%s %s\n", r->provider ? r->provider : "?",
                     r->version ? r->version : "(version unknown)");
    tftap_buf entry = TFTAP_BUF_INIT;
    sj_doc *doc = NULL;
    /* A schema that does not decode only costs the versions. */
    int rc = analysis_schema_from_response(r->protocol, r->raw, r->size, &entry, NULL);
    if (rc == 0 && r->sha256 && strlen(r->sha256) == 64) {
        struct canon *nc = realloc(x->side->c, (x->side->nc + 1) * sizeof *nc);
        if (!nc) {
            tftap_buf_done(&entry);
            return TFTAP_ENOMEM;
        }
        x->side->c = nc;
        memcpy(nc[x->side->nc].raw, r->sha256, 65);
        tftap_sha256_hex(entry.data, entry.len, nc[x->side->nc].canonical);
        x->side->nc++;
    }
    if (rc == 0 && sj_parse(entry.data, entry.len, ANALYSIS_JSON_MAX_DEPTH, &doc) == 0) {
        rc = add_versions(x->side, r->provider, sj_get(sj_root(doc), "resource_schemas"));
        if (!rc)
            rc = add_versions(x->side, r->provider, sj_get(sj_root(doc), "data_source_schemas"));
    } else if (rc != TFTAP_ENOMEM) {
        rc = 0;
    }
    sj_free(doc);
    tftap_buf_done(&entry);
    return rc;
}

static int tver_cmp(const void *x, const void *y)
{
    const struct tver *a = x, *b = y;
    int c = strcmp(a->provider, b->provider);
    return c ? c : strcmp(a->type, b->type);
}

/* A schema answer ({"$schema": RAW_SHA}) names its schema by the digest of
 * its canonical form instead, in *out (malloc'd; NULL: json is none).
 * Returns 0 or TFTAP_ENOMEM. */
static int canonical_schema(const struct side *s, const char *json, char **out)
{
    *out = NULL;
    const char *sha = json ? strstr(json, "{\"$schema\":\"") : NULL;
    if (sha != json || !sha)
        return 0;
    sha += 12;
    for (size_t k = 0; k < s->nc; k++)
        if (strncmp(sha, s->c[k].raw, 64) == 0) {
            if (!(*out = malloc(96)))
                return TFTAP_ENOMEM;
            snprintf(*out, 96, "{\"$schema\":\"%s\"}", s->c[k].canonical);
            return 0;
        }
    return 0;
}

/* A summarized side's calls once more, each with its JSON (the schema
 * answers canonical, as load makes them), for analysis_diff_calls_streamed. */
struct stream_ctx {
    store *st;
    int64_t run;
    const struct side *side;
    analysis_diff_json_fn fn;
    void *fctx;
};

static int each_streamed(void *ctx, const store_call_row *r)
{
    struct stream_ctx *x = ctx;
    if (r->stream || r->is_teardown) /* as each_call */
        return 0;
    char *canon = NULL;
    if (canonical_schema(x->side, r->response_json, &canon) != 0)
        return TFTAP_ENOMEM;
    int rc = x->fn(x->fctx, r->id, r->request_json, canon ? canon : r->response_json);
    free(canon);
    return rc;
}

static int stream_side(void *ctx, analysis_diff_json_fn fn, void *fctx)
{
    struct stream_ctx *x = ctx;
    x->fn = fn;
    x->fctx = fctx;
    return store_calls_each(x->st, x->run, NULL, NULL, each_streamed, x);
}

static int load(store *st, int64_t run, struct side *s, tftap_buf *providers)
{
    int rc = store_calls_each(st, run, NULL, NULL, each_call, s);
    if (!rc)
        rc = s->err;
    struct schema_ctx x = {s, providers};
    if (!rc)
        rc = store_schemas_each(st, run, each_schema, &x);
    if (rc)
        return rc;
    if (s->nt)
        qsort(s->t, s->nt, sizeof *s->t, tver_cmp);
    for (size_t i = 0; i < s->n; i++) {
        analysis_diff_call *c = &s->v[i];
        char *nj = NULL;
        if (canonical_schema(s, c->response_json, &nj) != 0)
            return TFTAP_ENOMEM;
        if (nj) {
            free((char *)c->response_json);
            c->response_json = nj;
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        analysis_diff_call *c = &s->v[i];
        if (!c->type_name)
            continue;
        struct tver key = {(char *)(c->provider ? c->provider : ""), (char *)c->type_name, 0};
        struct tver *t = s->nt ? bsearch(&key, s->t, s->nt, sizeof *s->t, tver_cmp) : NULL;
        if (t)
            c->schema_version = t->version;
    }
    return 0;
}

struct cmd_ctx {
    char *out;
    int err;
};

static int each_run(void *ctx, const store_run_row *r)
{
    struct cmd_ctx *x = ctx;
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_puts(&b, r->command ? r->command : "?");
    sj_doc *doc = NULL;
    if (r->args_json && sj_parse(r->args_json, strlen(r->args_json), 8, &doc) == 0) {
        const sj_node *a = sj_root(doc);
        for (const sj_node *c = a && a->kind == SJ_ARRAY ? a->child : NULL; c; c = c->next)
            if (c->kind == SJ_STRING) {
                tftap_buf_putc(&b, ' ');
                tftap_buf_puts(&b, c->str);
            }
    }
    sj_free(doc);
    tftap_buf_cstr(&b);
    if (tftap_buf_failed(&b)) {
        x->err = TFTAP_ENOMEM;
        tftap_buf_done(&b);
        return TFTAP_ENOMEM;
    }
    x->out = tftap_buf_take(&b, NULL);
    return 0;
}

int analysis_diff_runs(store *sa, int64_t run_a, store *sb, int64_t run_b,
                       const analysis_diff_opts *opts, analysis_diff **out)
{
    *out = NULL;
    struct side a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    tftap_buf pa = TFTAP_BUF_INIT, pb = TFTAP_BUF_INIT;
    struct cmd_ctx ca = {0}, cb = {0};
    /* Run A's JSON is read twice (summarized, then again as its pairs are
     * compared) rather than held: with both runs' held, a diff of two
     * 50,000-call runs peaked at 600 MB, most of it that text. */
    a.summarize = 1;
    int rc = load(sa, run_a, &a, &pa);
    if (!rc)
        rc = load(sb, run_b, &b, &pb);
    if (!rc)
        rc = store_run_get(sa, run_a, each_run, &ca);
    if (!rc)
        rc = store_run_get(sb, run_b, each_run, &cb);
    if (!rc && (tftap_buf_failed(&pa) || tftap_buf_failed(&pb)))
        rc = TFTAP_ENOMEM;
    analysis_diff *d = NULL;
    struct stream_ctx sx = {sa, run_a, &a, NULL, NULL};
    if (!rc)
        rc = analysis_diff_calls_streamed(a.v, a.n, stream_side, &sx, b.v, b.n, opts, &d);
    if (!rc) {
        /* The diff borrows the calls: hand them over. */
        struct analysis_diff_meta *m = analysis_diff_meta_of(d);
        m->set = 1;
        m->run[0] = run_a;
        m->run[1] = run_b;
        m->command[0] = ca.out;
        m->command[1] = cb.out;
        ca.out = cb.out = NULL;
        m->providers[0] = pa;
        m->providers[1] = pb;
        pa = (tftap_buf)TFTAP_BUF_INIT;
        pb = (tftap_buf)TFTAP_BUF_INIT;
        m->owned_calls[0] = a.v;
        m->owned_calls[1] = b.v;
        m->nowned[0] = a.n;
        m->nowned[1] = b.n;
        a.v = b.v = NULL;
        a.n = b.n = 0;
        *out = d;
    }
    free(ca.out);
    free(cb.out);
    tftap_buf_done(&pa);
    tftap_buf_done(&pb);
    side_done(&a);
    side_done(&b);
    return rc;
}

static void lines(tftap_buf *out, const tftap_buf *b, const char *prefix, const char *sep)
{
    const char *s = b->len ? b->data : "";
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        tftap_buf_puts(out, prefix);
        tftap_buf_append(out, s, n);
        tftap_buf_puts(out, sep);
        s += n + (e ? 1 : 0);
    }
}

void analysis_diff_meta_text(const struct analysis_diff_meta *m, tftap_buf *out)
{
    if (!m->set)
        return;
    for (int i = 0; i < 2; i++) {
        tftap_buf_printf(out, "%c: run %lld: %s\n", 'A' + i, (long long)m->run[i],
                         m->command[i] ? m->command[i] : "");
        lines(out, &m->providers[i], "     ", "\n");
    }
}

void analysis_diff_meta_markdown(const struct analysis_diff_meta *m, tftap_buf *out)
{
    if (!m->set)
        return;
    for (int i = 0; i < 2; i++) {
        tftap_buf_printf(out, "- %c: run %lld `%s`", 'A' + i, (long long)m->run[i],
                         m->command[i] ? m->command[i] : "");
        lines(out, &m->providers[i], ", `", "`");
        tftap_buf_putc(out, '\n');
    }
    tftap_buf_putc(out, '\n');
}

void analysis_diff_meta_json(const struct analysis_diff_meta *m, tftap_buf *out)
{
    if (!m->set)
        return;
    tftap_buf_puts(out, "\"runs\":[");
    for (int i = 0; i < 2; i++) {
        tftap_buf_printf(out, "%s{\"id\":%lld,\"command\":", i ? "," : "", (long long)m->run[i]);
        const char *c = m->command[i] ? m->command[i] : "";
        tftap_buf_json_string(out, c, strlen(c));
        tftap_buf_puts(out, ",\"providers\":{");
        const char *s = m->providers[i].len ? m->providers[i].data : "";
        int first = 1;
        while (*s) {
            const char *e = strchr(s, '\n');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            const char *sp = memchr(s, ' ', n);
            size_t an = sp ? (size_t)(sp - s) : n;
            tftap_buf_puts(out, first ? "" : ",");
            tftap_buf_json_string(out, s, an);
            tftap_buf_putc(out, ':');
            tftap_buf_json_string(out, sp ? sp + 1 : "", sp ? n - an - 1 : 0);
            first = 0;
            s += n + (e ? 1 : 0);
        }
        tftap_buf_puts(out, "}}");
    }
    tftap_buf_puts(out, "],");
}
