/* analysis: the run diff. Two recorded runs of the same configuration are
 * compared by what the provider did with what it was given: each planned,
 * new, read or upgraded value is split into attributes labelled by where
 * their value came from (config, prior state, the plan, left unknown,
 * chosen by the provider), so values the provider merely carried over (a
 * random id in the prior state) never count as behaviour. Which call of
 * one run is compared with which of the other is diff_pair.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff_int.h"

/* ---- attribute provenance ------------------------------------------------- */

struct leaf {
    char *path;
    enum src src;
    const sj_node *v;
};

struct leaves {
    struct leaf *v;
    size_t n, cap;
    int err;
};

static void leaves_done(struct leaves *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static void leaf_add(struct leaves *l, const tftap_buf *path, enum src s, const sj_node *v)
{
    if (l->err)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct leaf *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) {
            l->err = TFTAP_ENOMEM;
            return;
        }
        l->v = nv;
        l->cap = cap;
    }
    char *p = strdup(path->len ? path->data : "");
    if (!p) {
        l->err = TFTAP_ENOMEM;
        return;
    }
    l->v[l->n++] = (struct leaf){p, s, v};
}

static int is_marker(const sj_node *v)
{
    return sj_is_unknown(v) || sj_is_sensitive(v);
}

/* Split v into attributes labelled by their source. ref1 (config, or the
 * planned value of an apply) wins over ref2 (the prior state) when both
 * agree; objects and equal-length arrays are followed into while either
 * reference has the same shape, so one changed attribute is one leaf. */
static void walk(struct leaves *l, tftap_buf *path, const sj_node *v, const sj_node *ref1,
                 enum src src1, const sj_node *ref2, unsigned depth)
{
    if (l->err)
        return;
    if (depth > ANALYSIS_JSON_MAX_DEPTH) {
        l->err = TFTAP_ELIMIT;
        return;
    }
    if (sj_is_unknown(v)) {
        leaf_add(l, path, SRC_UNKNOWN, v);
        return;
    }
    /* Objects are followed into whenever a reference is an object too, so
     * that every run splits a value at the same attributes. */
    int follow = (v->kind == SJ_OBJECT && !is_marker(v) &&
                  ((ref1 && ref1->kind == SJ_OBJECT) || (ref2 && ref2->kind == SJ_OBJECT))) ||
                 (v->kind == SJ_ARRAY && ((ref1 && ref1->kind == SJ_ARRAY && ref1->n == v->n) ||
                                          (ref2 && ref2->kind == SJ_ARRAY && ref2->n == v->n)));
    if (!follow && ref1 && ref1->kind != SJ_NULL && sj_equal(v, ref1)) {
        leaf_add(l, path, src1, v);
        return;
    }
    if (!follow && ref2 && ref2->kind != SJ_NULL && sj_equal(v, ref2)) {
        leaf_add(l, path, SRC_PRIOR, v);
        return;
    }
    if (v->kind == SJ_NULL) {
        leaf_add(l, path,
                 ref1 && ref1->kind == SJ_NULL   ? src1
                 : ref2 && ref2->kind == SJ_NULL ? SRC_PRIOR
                                                 : SRC_PROVIDER,
                 v);
        return;
    }
    size_t mark = path->len;
    if (follow && v->kind == SJ_OBJECT) {
        for (const sj_node *c = v->child; c; c = c->next) {
            analysis_path_member(path, c->key, c->key_len);
            if (tftap_buf_failed(path)) {
                l->err = TFTAP_ENOMEM;
                return;
            }
            walk(l, path, c, sj_get_n(ref1, c->key, c->key_len), src1,
                 sj_get_n(ref2, c->key, c->key_len), depth + 1);
            path->len = mark;
            if (path->data)
                path->data[mark] = 0;
        }
        return;
    }
    if (follow && v->kind == SJ_ARRAY) {
        const sj_node *r1 = ref1 && ref1->kind == SJ_ARRAY && ref1->n == v->n ? ref1->child : NULL;
        const sj_node *r2 = ref2 && ref2->kind == SJ_ARRAY && ref2->n == v->n ? ref2->child : NULL;
        size_t i = 0;
        for (const sj_node *c = v->child; c; c = c->next, i++) {
            tftap_buf_printf(path, "[%zu]", i);
            if (tftap_buf_failed(path)) {
                l->err = TFTAP_ENOMEM;
                return;
            }
            walk(l, path, c, r1, src1, r2, depth + 1);
            path->len = mark;
            if (path->data)
                path->data[mark] = 0;
            r1 = r1 ? r1->next : NULL;
            r2 = r2 ? r2->next : NULL;
        }
        return;
    }
    leaf_add(l, path, SRC_PROVIDER, v);
}

static int leaf_cmp(const void *x, const void *y)
{
    const struct leaf *a = x, *b = y;
    return strcmp(a->path, b->path);
}

/* ---- findings --------------------------------------------------------------- */

static char *json_text(const sj_node *n)
{
    if (!n)
        return NULL;
    tftap_buf b = TFTAP_BUF_INIT;
    if (sj_write_sorted(n, &b) != 0 || tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return NULL;
    }
    tftap_buf_cstr(&b);
    return tftap_buf_take(&b, NULL);
}

static int ignored(const analysis_diff *d, const char *path)
{
    return d->opts && analysis_path_ignored(d->opts->ignore, d->opts->nignore, path);
}

static struct finding *add(analysis_diff *d, size_t pair, enum kind k, const char *path)
{
    if (d->err || ignored(d, path))
        return NULL;
    if (d->nf == d->capf) {
        size_t cap = d->capf ? d->capf * 2 : 64;
        struct finding *nf = realloc(d->f, cap * sizeof *nf);
        if (!nf) {
            d->err = TFTAP_ENOMEM;
            return NULL;
        }
        d->f = nf;
        d->capf = cap;
    }
    struct finding *f = &d->f[d->nf++];
    memset(f, 0, sizeof *f);
    f->kind = k;
    f->pair = pair;
    if (path && !(f->path = strdup(path)))
        d->err = TFTAP_ENOMEM;
    if (k == K_INPUT)
        d->inputs++;
    else
        d->behaviour++;
    return f;
}

static void set_sides(analysis_diff *d, struct finding *f, const sj_node *a, const sj_node *b)
{
    if (!f)
        return;
    f->has_a = a != NULL;
    f->has_b = b != NULL;
    f->a = json_text(a);
    f->b = json_text(b);
    if ((a && !f->a) || (b && !f->b))
        d->err = TFTAP_ENOMEM;
}

static void set_strs(analysis_diff *d, struct finding *f, const char *a, const char *b)
{
    if (!f)
        return;
    f->has_a = a != NULL;
    f->has_b = b != NULL;
    f->a = a ? strdup(a) : NULL;
    f->b = b ? strdup(b) : NULL;
    if ((a && !f->a) || (b && !f->b))
        d->err = TFTAP_ENOMEM;
}

/* ---- reading a call ----------------------------------------------------------- */

static const sj_node *field(sj_doc *doc, const char *name)
{
    return doc ? sj_get(sj_root(doc), name) : NULL;
}

/* The values a call's behaviour is judged on: out (what the provider
 * answered), ref1 (config or planned, labelled src1), ref2 (prior). */
struct judged {
    const char *what;
    const sj_node *out, *ref1, *ref2;
    enum src src1;
};

static int judged_of(const struct dcall *c, struct judged *j)
{
    memset(j, 0, sizeof *j);
    j->src1 = SRC_CONFIG;
    if (diff_rpc_is(c->c, "PlanResourceChange")) {
        j->what = "planned";
        j->out = field(c->resp, "planned_state");
        j->ref1 = field(c->req, "config");
        j->ref2 = field(c->req, "prior_state");
    } else if (diff_rpc_is(c->c, "ApplyResourceChange")) {
        j->what = "new";
        j->out = field(c->resp, "new_state");
        j->ref1 = field(c->req, "planned_state");
        j->src1 = SRC_PLANNED;
        j->ref2 = field(c->req, "prior_state");
    } else if (diff_rpc_is(c->c, "ReadResource")) {
        j->what = "new";
        j->out = field(c->resp, "new_state");
        j->ref2 = field(c->req, "current_state");
    } else if (diff_rpc_is(c->c, "ReadDataSource")) {
        j->what = "state";
        j->out = field(c->resp, "state");
        j->ref1 = field(c->req, "config");
    } else if (diff_rpc_is(c->c, "UpgradeResourceState")) {
        j->what = "upgraded";
        j->out = field(c->resp, "upgraded_state");
        const sj_node *raw = field(c->req, "raw_state");
        j->ref2 = raw ? sj_get(raw, "json") : NULL;
    } else if (diff_rpc_is(c->c, "CallFunction")) {
        j->what = "result";
        j->out = field(c->resp, "result");
    } else {
        return 0;
    }
    return j->out != NULL || c->resp != NULL;
}

/* A null value is "no object": prior null = create, planned null = delete. */
static int is_nullish(const sj_node *n)
{
    return !n || n->kind == SJ_NULL;
}

static const char *action_of(const struct dcall *c)
{
    if (diff_rpc_is(c->c, "PlanResourceChange") || diff_rpc_is(c->c, "ApplyResourceChange")) {
        const sj_node *prior = field(c->req, "prior_state");
        const sj_node *after = diff_rpc_is(c->c, "PlanResourceChange")
                                   ? field(c->resp, "planned_state")
                                   : field(c->resp, "new_state");
        const sj_node *rr = field(c->resp, "requires_replace");
        if (!c->resp)
            return NULL;
        if (is_nullish(prior) && is_nullish(after))
            return "no-op";
        if (is_nullish(prior))
            return "create";
        if (is_nullish(after))
            return "delete";
        if (rr && rr->kind == SJ_ARRAY && rr->n > 0)
            return "replace";
        return sj_equal(prior, after) ? "no-op" : "update";
    }
    return NULL;
}

static const char *path_of(const sj_node *attr)
{
    const sj_node *p = attr && attr->kind == SJ_OBJECT ? sj_get(attr, "path") : NULL;
    return p && p->kind == SJ_STRING ? p->str : NULL;
}

const char *analysis_diff_str_of(const sj_node *obj, const char *key)
{
    const sj_node *n = obj ? sj_get(obj, key) : NULL;
    return n && n->kind == SJ_STRING ? n->str : "";
}

/* ---- comparing one pair ----------------------------------------------------------- */

static void compare_values(analysis_diff *d, size_t pi, const struct dcall *a,
                           const struct dcall *b)
{
    struct judged ja, jb;
    int ha = judged_of(a, &ja), hb = judged_of(b, &jb);
    if (!ha && !hb)
        return;
    struct leaves la = {0}, lb = {0};
    tftap_buf path = TFTAP_BUF_INIT;
    if (ja.out)
        walk(&la, &path, ja.out, ja.ref1, ja.src1, ja.ref2, 0);
    tftap_buf_reset(&path);
    if (jb.out)
        walk(&lb, &path, jb.out, jb.ref1, jb.src1, jb.ref2, 0);
    tftap_buf_done(&path);
    if (la.err || lb.err) {
        d->err = la.err ? la.err : lb.err;
        goto out;
    }
    /* (qsort's pointer must not be NULL, even for no elements.) */
    if (la.n)
        qsort(la.v, la.n, sizeof *la.v, leaf_cmp);
    if (lb.n)
        qsort(lb.v, lb.n, sizeof *lb.v, leaf_cmp);
    const char *what = ja.what ? ja.what : jb.what;
    size_t i = 0, k = 0;
    while (i < la.n || k < lb.n) {
        int c = i == la.n ? 1 : k == lb.n ? -1 : strcmp(la.v[i].path, lb.v[k].path);
        const struct leaf *x = c <= 0 ? &la.v[i] : NULL, *y = c >= 0 ? &lb.v[k] : NULL;
        if (c <= 0)
            i++;
        if (c >= 0)
            k++;
        enum kind kind = K_VALUE;
        /* An attribute only one run has, passed through from that run's
         * config or prior state: its input had it (typically a schema
         * change, reported with the schema). */
        const struct leaf *only = x && !y ? x : y && !x ? y : NULL;
        if (only && only->src != SRC_PROVIDER && only->src != SRC_UNKNOWN)
            kind = K_INPUT;
        if (x && y) {
            if (x->src == y->src && sj_equal(x->v, y->v))
                continue;
            /* Same source, different value: the input differs, unless
             * the provider chose (or left unknown) both values. */
            if (x->src == y->src && x->src != SRC_PROVIDER && x->src != SRC_UNKNOWN)
                kind = K_INPUT;
        }
        struct finding *f = add(d, pi, kind, x ? x->path : y->path);
        if (!f)
            continue;
        if (!(f->what = strdup(what)))
            d->err = TFTAP_ENOMEM;
        set_sides(d, f, x ? x->v : NULL, y ? y->v : NULL);
        f->src_a = x ? x->src : SRC_PROVIDER;
        f->src_b = y ? y->src : SRC_PROVIDER;
    }
out:
    leaves_done(&la);
    leaves_done(&lb);
}

static void compare_replace(analysis_diff *d, size_t pi, const struct dcall *a,
                            const struct dcall *b)
{
    const sj_node *ra = field(a->resp, "requires_replace"),
                  *rb = field(b->resp, "requires_replace");
    for (int side = 0; side < 2; side++) {
        const sj_node *from = side ? rb : ra, *other = side ? ra : rb;
        if (!from || from->kind != SJ_ARRAY)
            continue;
        for (const sj_node *p = from->child; p; p = p->next) {
            const char *ps = path_of(p);
            int found = 0;
            if (other && other->kind == SJ_ARRAY)
                for (const sj_node *q = other->child; q && !found; q = q->next)
                    found = ps && path_of(q) && strcmp(ps, path_of(q)) == 0;
            if (found)
                continue;
            struct finding *f = add(d, pi, K_REPLACE, ps ? ps : "");
            if (f) {
                f->has_a = !side;
                f->has_b = side;
            }
        }
    }
}

static void diag_key(const sj_node *g, tftap_buf *out)
{
    tftap_buf_reset(out);
    tftap_buf_puts(out, analysis_diff_str_of(g, "severity"));
    tftap_buf_putc(out, '\n');
    tftap_buf_puts(out, analysis_diff_str_of(g, "summary"));
    tftap_buf_putc(out, '\n');
    const char *p = path_of(sj_get(g, "attribute"));
    tftap_buf_puts(out, p ? p : "");
    tftap_buf_cstr(out);
}

static void diag_json(const sj_node *g, tftap_buf *out)
{
    tftap_buf_reset(out);
    tftap_buf_puts(out, "{\"severity\":");
    tftap_buf_json_string(out, analysis_diff_str_of(g, "severity"),
                          strlen(analysis_diff_str_of(g, "severity")));
    tftap_buf_puts(out, ",\"summary\":");
    tftap_buf_json_string(out, analysis_diff_str_of(g, "summary"),
                          strlen(analysis_diff_str_of(g, "summary")));
    tftap_buf_puts(out, ",\"detail\":");
    tftap_buf_json_string(out, analysis_diff_str_of(g, "detail"),
                          strlen(analysis_diff_str_of(g, "detail")));
    tftap_buf_puts(out, ",\"attribute\":");
    const char *p = path_of(sj_get(g, "attribute"));
    if (p)
        tftap_buf_json_string(out, p, strlen(p));
    else
        tftap_buf_puts(out, "null");
    tftap_buf_putc(out, '}');
    tftap_buf_cstr(out);
}

/* Diagnostics are matched by severity, summary and attribute path (as a
 * multiset); a matched pair whose detail differs is "changed". */
static void compare_diags(analysis_diff *d, size_t pi, const struct dcall *a, const struct dcall *b)
{
    const sj_node *da = field(a->resp, "diagnostics"), *db = field(b->resp, "diagnostics");
    size_t na = da && da->kind == SJ_ARRAY ? da->n : 0, nb = db && db->kind == SJ_ARRAY ? db->n : 0;
    if (na == 0 && nb == 0)
        return;
    char *used = calloc(nb + 1, 1);
    tftap_buf ka = TFTAP_BUF_INIT, kb = TFTAP_BUF_INIT, ja = TFTAP_BUF_INIT, jb = TFTAP_BUF_INIT;
    if (!used) {
        d->err = TFTAP_ENOMEM;
        return;
    }
    for (const sj_node *x = na ? da->child : NULL; x; x = x->next) {
        diag_key(x, &ka);
        const sj_node *match = NULL;
        size_t mi = 0, i = 0;
        for (const sj_node *y = nb ? db->child : NULL; y; y = y->next, i++) {
            if (used[i])
                continue;
            diag_key(y, &kb);
            if (strcmp(tftap_buf_cstr(&ka), tftap_buf_cstr(&kb)) == 0) {
                match = y;
                mi = i;
                break;
            }
        }
        if (match) {
            used[mi] = 1;
            if (strcmp(analysis_diff_str_of(x, "detail"), analysis_diff_str_of(match, "detail")) ==
                0)
                continue;
        }
        diag_json(x, &ja);
        if (match)
            diag_json(match, &jb);
        struct finding *f = add(d, pi, K_DIAG, NULL);
        set_strs(d, f, tftap_buf_cstr(&ja), match ? tftap_buf_cstr(&jb) : NULL);
    }
    size_t i = 0;
    for (const sj_node *y = nb ? db->child : NULL; y; y = y->next, i++) {
        if (used[i])
            continue;
        diag_json(y, &jb);
        struct finding *f = add(d, pi, K_DIAG, NULL);
        set_strs(d, f, NULL, tftap_buf_cstr(&jb));
    }
    if (tftap_buf_failed(&ka) || tftap_buf_failed(&kb) || tftap_buf_failed(&ja) ||
        tftap_buf_failed(&jb))
        d->err = TFTAP_ENOMEM;
    tftap_buf_done(&ka);
    tftap_buf_done(&kb);
    tftap_buf_done(&ja);
    tftap_buf_done(&jb);
    free(used);
}

static const char *private_hash(const struct dcall *c)
{
    const sj_node *p = NULL;
    if (diff_rpc_is(c->c, "PlanResourceChange"))
        p = field(c->resp, "planned_private");
    else if (diff_rpc_is(c->c, "ApplyResourceChange") || diff_rpc_is(c->c, "ReadResource"))
        p = field(c->resp, "private");
    const sj_node *h = p && p->kind == SJ_OBJECT ? sj_get(p, "sha256") : NULL;
    const sj_node *sz = p && p->kind == SJ_OBJECT ? sj_get(p, "size") : NULL;
    /* No private bytes at all hash as nothing. */
    if (sz && sz->kind == SJ_NUMBER && strcmp(sz->str, "0") == 0)
        return NULL;
    return h && h->kind == SJ_STRING ? h->str : NULL;
}

/* A gRPC status by name, or "status N" for a code gRPC does not define. */
static void status_text(int code, char *out, size_t n)
{
    const char *name = tftap_grpc_status_name(code);
    if (name)
        snprintf(out, n, "%s", name);
    else
        snprintf(out, n, "status %d", code);
}

/* Compare a pair of calls already looked up. */
static void compare_parsed(analysis_diff *d, size_t pi, const struct dcall *a,
                           const struct dcall *b)
{
    if (!a || !b) {
        struct finding *f = add(d, pi, a ? K_ONLY_A : K_ONLY_B, NULL);
        if (f) {
            const char *act = (a ? a : b)->action;
            if (act)
                set_strs(d, f, a ? act : NULL, b ? act : NULL);
        }
        return;
    }
    int sa = a->c->has_status ? a->c->status_code : -1;
    int sb = b->c->has_status ? b->c->status_code : -1;
    if (sa != sb) {
        /* By name, as every output says a status (a code gRPC does not
         * define by number). */
        char xa[24], xb[24];
        status_text(sa, xa, sizeof xa);
        status_text(sb, xb, sizeof xb);
        set_strs(d, add(d, pi, K_STATUS, NULL), sa < 0 ? NULL : xa, sb < 0 ? NULL : xb);
    }
    if (a->c->schema_version != b->c->schema_version && a->c->schema_version >= 0 &&
        b->c->schema_version >= 0) {
        char xa[24], xb[24];
        snprintf(xa, sizeof xa, "%lld", (long long)a->c->schema_version);
        snprintf(xb, sizeof xb, "%lld", (long long)b->c->schema_version);
        set_strs(d, add(d, pi, K_SCHEMAVER, NULL), xa, xb);
    }
    if (diff_rpc_is(a->c, "GetProviderSchema") || diff_rpc_is(a->c, "GetSchema")) {
        const sj_node *ha = field(a->resp, "$schema"), *hb = field(b->resp, "$schema");
        if (ha && hb && !sj_equal(ha, hb))
            set_sides(d, add(d, pi, K_SCHEMA, NULL), ha, hb);
    }
    const char *aa = a->action, *ab = b->action;
    if (aa && ab && strcmp(aa, ab) != 0)
        set_strs(d, add(d, pi, K_ACTION, NULL), aa, ab);
    compare_values(d, pi, a, b);
    compare_replace(d, pi, a, b);
    compare_diags(d, pi, a, b);
    const char *pa = private_hash(a), *pb = private_hash(b);
    if ((pa || pb) && !(pa && pb && strcmp(pa, pb) == 0))
        set_strs(d, add(d, pi, K_PRIVATE, NULL), pa, pb);
    const sj_node *fa = field(a->resp, "deferred"), *fb = field(b->resp, "deferred");
    if (is_nullish(fa))
        fa = NULL;
    if (is_nullish(fb))
        fb = NULL;
    if ((fa || fb) && !(fa && fb && sj_equal(fa, fb)))
        set_sides(d, add(d, pi, K_DEFERRED, NULL), fa, fb);
}

/* Parse a call's JSON texts (its own, or a summarized call's handed over
 * again) into x, unless already there. */
static int dcall_parse_text(struct dcall *x, const char *req, const char *resp)
{
    int rc = 0;
    if (req && !x->req)
        rc = sj_parse(req, strlen(req), ANALYSIS_JSON_MAX_DEPTH, &x->req);
    if (!rc && resp && !x->resp)
        rc = sj_parse(resp, strlen(resp), ANALYSIS_JSON_MAX_DEPTH, &x->resp);
    return rc;
}

static int dcall_parse(struct dcall *x)
{
    return dcall_parse_text(x, x->c->request_json, x->c->response_json);
}

/* An unnamed call's request digest (analysis_diff_call.request_digest),
 * from its parsed request, private fields too (they tell calls apart
 * here); 0 without one. */
static uint64_t request_digest(const struct dcall *x)
{
    char hex[65];
    if (!x->req || analysis_request_digest(sj_root(x->req), 1, hex) != 1)
        return 0;
    hex[16] = '\0';
    return strtoull(hex, NULL, 16);
}

static void dcall_unparse(struct dcall *x)
{
    if (!x)
        return;
    sj_free(x->req);
    sj_free(x->resp);
    x->req = x->resp = NULL;
}

static void compare_calls(analysis_diff *d, size_t pi, struct dcall *a, struct dcall *b)
{
    int rc = 0;
    if (a && b) {
        rc = dcall_parse(a);
        if (!rc)
            rc = dcall_parse(b);
    }
    if (rc)
        d->err = rc;
    else
        compare_parsed(d, pi, a, b);
    dcall_unparse(a);
    dcall_unparse(b);
}

int analysis_diff_call_summarize(analysis_diff_call *c)
{
    struct dcall x;
    memset(&x, 0, sizeof x);
    x.c = c;
    int rc = dcall_parse(&x);
    if (!rc) {
        c->action = action_of(&x);
        c->prior_null = is_nullish(field(x.req, "prior_state"));
        c->request_digest = c->address ? 0 : request_digest(&x);
        c->summarized = 1;
    }
    dcall_unparse(&x);
    return rc;
}

/* ---- loading a side -------------------------------------------------------------- */

static int filter_keeps(const analysis_diff_opts *o, const analysis_diff_call *c)
{
    if (!o || !o->filter)
        return 1;
    return tftap_filter_keeps(o->filter, c->type_name, c->address);
}

/* One run's calls that the filter keeps, each parsed once for what
 * pairing needs (the action, a null prior state, the request digest). */
static int load_side(analysis_diff *d, const analysis_diff_call *calls, size_t n,
                     struct dcall **out, size_t *nout)
{
    struct dcall *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return TFTAP_ENOMEM;
    *out = v;
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const analysis_diff_call *c = &calls[i];
        if (!filter_keeps(d->opts, c))
            continue;
        struct dcall *x = &v[k++];
        x->c = c;
        x->idx = i;
        if (c->summarized) {
            x->action = c->action;
            x->prior_null = c->prior_null;
            x->req_digest = c->request_digest;
            continue;
        }
        /* Every call is parsed once here (or was, summarized), so
         * malformed JSON fails the diff before anything is compared. */
        if ((rc = dcall_parse(x)) != 0)
            break;
        x->action = action_of(x);
        x->prior_null = is_nullish(field(x->req, "prior_state"));
        x->req_digest = c->address ? 0 : request_digest(x);
        dcall_unparse(x);
    }
    *nout = k;
    return rc;
}

/* ---- the diff ------------------------------------------------------------------------ */

/* The report's order of pairs: by group (diff_pair.c), then call order. */
static int pair_cmp(const void *x, const void *y)
{
    const struct pair *a = x, *b = y;
    int c = strcmp(a->group ? a->group : "", b->group ? b->group : "");
    if (c)
        return c;
    /* Within a group: run A's order, calls only B made after their
     * neighbours in B's order. */
    size_t ka = a->a ? a->ia : a->ib, kb = b->a ? b->ia : b->ib;
    if (!!a->a != !!b->a)
        return a->a ? -1 : 1;
    return ka < kb ? -1 : ka > kb;
}

void analysis_diff_free(analysis_diff *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->na; i++) {
        sj_free(d->ca[i].req);
        sj_free(d->ca[i].resp);
        free(d->ca[i].key);
        free(d->ca[i].rkey);
    }
    for (size_t i = 0; i < d->nb; i++) {
        sj_free(d->cb[i].req);
        sj_free(d->cb[i].resp);
        free(d->cb[i].key);
        free(d->cb[i].rkey);
    }
    free(d->ca);
    free(d->cb);
    free(d->pairs);
    for (size_t i = 0; i < d->nf; i++) {
        free(d->f[i].path);
        free(d->f[i].what);
        free(d->f[i].a);
        free(d->f[i].b);
    }
    free(d->f);
    analysis_diff_meta_done(&d->meta);
    free(d);
}

/* Comparing pairs whose A side comes streamed: the pairs to compare by
 * their A call's id. */
struct pending {
    int64_t call_id;
    size_t pair;
};

struct streaming {
    analysis_diff *d;
    struct dcall **pa, **pb;
    struct pending *v;
    size_t n;
    unsigned char *done; /* per pair */
};

static int pending_cmp(const void *x, const void *y)
{
    const struct pending *a = x, *b = y;
    return a->call_id < b->call_id ? -1 : a->call_id > b->call_id;
}

static void compare_pair(analysis_diff *d, size_t p, struct dcall *a, struct dcall *b)
{
    size_t first = d->nf;
    compare_calls(d, p, a, b);
    d->pairs[p].first = first;
    d->pairs[p].nfind = d->nf - first;
}

static int on_streamed(void *ctx, int64_t call_id, const char *req, const char *resp)
{
    struct streaming *x = ctx;
    struct pending key = {call_id, 0};
    struct pending *hit = bsearch(&key, x->v, x->n, sizeof *x->v, pending_cmp);
    if (!hit || x->done[hit->pair])
        return 0;
    size_t p = hit->pair;
    int rc = dcall_parse_text(x->pa[p], req, resp);
    if (rc) {
        dcall_unparse(x->pa[p]);
        return rc;
    }
    compare_pair(x->d, p, x->pa[p], x->pb[p]);
    x->done[p] = 1;
    return x->d->err;
}

/* Compare every pair, in any order (each pair's findings stay together):
 * with a stream, the pairs whose A side is summarized as its calls come
 * again, then the rest. */
static int compare_all(analysis_diff *d, struct dcall **pa, struct dcall **pb, size_t n,
                       analysis_diff_stream stream, void *stream_ctx)
{
    struct streaming x = {d, pa, pb, NULL, 0, NULL};
    int rc = 0;
    if (stream) {
        x.v = malloc((n + 1) * sizeof *x.v);
        x.done = calloc(n + 1, 1);
        if (!x.v || !x.done)
            rc = TFTAP_ENOMEM;
        for (size_t p = 0; p < n && !rc; p++)
            if (pa[p] && pb[p] && pa[p]->c->summarized)
                x.v[x.n++] = (struct pending){pa[p]->c->call_id, p};
        if (!rc) {
            qsort(x.v, x.n, sizeof *x.v, pending_cmp);
            rc = stream(stream_ctx, on_streamed, &x);
        }
    }
    for (size_t p = 0; p < n && !rc && !d->err; p++) {
        if (x.done && x.done[p])
            continue;
        if (pa[p] && pb[p] && pa[p]->c->summarized)
            rc = TFTAP_ENOTFOUND; /* its JSON never came */
        else
            compare_pair(d, p, pa[p], pb[p]);
    }
    free(x.v);
    free(x.done);
    return rc ? rc : d->err;
}

int analysis_diff_calls(const analysis_diff_call *a, size_t na, const analysis_diff_call *b,
                        size_t nb, const analysis_diff_opts *opts, analysis_diff **out)
{
    return analysis_diff_calls_streamed(a, na, NULL, NULL, b, nb, opts, out);
}

int analysis_diff_calls_streamed(const analysis_diff_call *a, size_t na,
                                 analysis_diff_stream stream, void *stream_ctx,
                                 const analysis_diff_call *b, size_t nb,
                                 const analysis_diff_opts *opts, analysis_diff **out)
{
    *out = NULL;
    /* Only run A's calls come again: a summarized call of B would be
     * compared without its values. */
    for (size_t i = 0; i < nb; i++)
        if (b[i].summarized)
            return TFTAP_EINVAL;
    analysis_diff *d = calloc(1, sizeof *d);
    if (!d)
        return TFTAP_ENOMEM;
    d->opts = opts;
    struct dcall **pa = NULL, **pb = NULL;
    int rc = load_side(d, a, na, &d->ca, &d->na);
    if (!rc)
        rc = load_side(d, b, nb, &d->cb, &d->nb);
    if (!rc)
        rc = diff_pair_calls(d, &pa, &pb);
    if (rc)
        goto fail;
    size_t n = d->npairs;
    /* Compare (in pairing order, or as run A's calls stream by), then
     * order pairs (with their findings) by group for the report. */
    rc = compare_all(d, pa, pb, n, stream, stream_ctx);
    free(pa);
    free(pb);
    if (rc)
        goto fail;
    /* Findings refer to pairs by index: sort an index, then renumber. */
    struct pair *sorted = malloc((n + 1) * sizeof *sorted);
    struct finding *nf = malloc((d->nf + 1) * sizeof *nf);
    if (!sorted || !nf) {
        free(sorted);
        free(nf);
        rc = TFTAP_ENOMEM;
        goto fail;
    }
    memcpy(sorted, d->pairs, n * sizeof *sorted);
    for (size_t p = 0; p < n; p++)
        sorted[p].nfind = p; /* remember the old index through the sort */
    qsort(sorted, n, sizeof *sorted, pair_cmp);
    size_t w = 0;
    for (size_t p = 0; p < n; p++) {
        const struct pair *old = &d->pairs[sorted[p].nfind];
        sorted[p].first = w;
        sorted[p].nfind = old->nfind;
        for (size_t q = 0; q < old->nfind; q++) {
            nf[w] = d->f[old->first + q];
            nf[w].pair = p;
            w++;
        }
    }
    free(d->pairs);
    free(d->f);
    d->pairs = sorted;
    d->f = nf;
    d->capf = d->nf + 1;
    *out = d;
    return 0;
fail:
    analysis_diff_free(d);
    return rc;
}

size_t analysis_diff_count(const analysis_diff *d)
{
    return d ? d->behaviour : 0;
}

size_t analysis_diff_input_count(const analysis_diff *d)
{
    return d ? d->inputs : 0;
}

void analysis_diff_meta_done(struct analysis_diff_meta *m)
{
    for (int i = 0; i < 2; i++) {
        free(m->command[i]);
        tftap_buf_done(&m->providers[i]);
        for (size_t k = 0; k < m->nowned[i]; k++) {
            analysis_diff_call *c = &m->owned_calls[i][k];
            free((char *)c->provider);
            free((char *)c->rpc);
            free((char *)c->type_name);
            free((char *)c->address);
            free((char *)c->request_json);
            free((char *)c->response_json);
        }
        free(m->owned_calls[i]);
    }
}

struct analysis_diff_meta *analysis_diff_meta_of(analysis_diff *d)
{
    return &d->meta;
}
