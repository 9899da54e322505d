/* analysis: attribute paths, --ignore patterns and differences between two
 * decoded values, shared by the run diff and replay's request matching. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

static int is_ident(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

void analysis_path_member(tftap_buf *path, const char *key, size_t len)
{
    if (is_ident(key, len)) {
        tftap_buf_putc(path, '.');
        tftap_buf_append(path, key, len);
    } else {
        tftap_buf_putc(path, '[');
        tftap_buf_json_string(path, key, len);
        tftap_buf_putc(path, ']');
    }
}

int analysis_path_ignored(const char *const *patterns, size_t n, const char *path)
{
    if (!path)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = patterns[i];
        if (fnmatch(p, path, 0) == 0)
            return 1;
        /* "id" means ".id" too. */
        if (p[0] != '.' && path[0] == '.' && fnmatch(p, path + 1, 0) == 0)
            return 1;
    }
    return 0;
}

static int same_key(const sj_node *x, const sj_node *y)
{
    return x->key_len == y->key_len && memcmp(x->key, y->key, x->key_len) == 0;
}

const sj_node *analysis_member_pair(const sj_node *obj, const sj_node *x_first, const sj_node *x)
{
    if (!obj || obj->kind != SJ_OBJECT)
        return NULL;
    size_t k = 0;
    for (const sj_node *c = x_first; c && c != x; c = c->next)
        k += same_key(c, x);
    for (const sj_node *c = obj->child; c; c = c->next)
        if (same_key(c, x) && k-- == 0)
            return c;
    return NULL;
}

struct vd {
    const analysis_value_diff_opts *o;
    size_t prefix_len;
    tftap_buf path;
    int (*fn)(void *ctx, const char *path, const sj_node *a, const sj_node *b);
    void *ctx;
};

static int vd_ignored(struct vd *v)
{
    if (!v->o || !v->o->nignore)
        return 0;
    const char *p = tftap_buf_cstr(&v->path);
    if (analysis_path_ignored(v->o->ignore, v->o->nignore, p))
        return 1;
    return v->prefix_len && v->path.len > v->prefix_len &&
           analysis_path_ignored(v->o->ignore, v->o->nignore, p + v->prefix_len);
}

static int vd_walk(struct vd *v, const sj_node *a, const sj_node *b, unsigned depth);

/* Descend into one step (already appended at mark) and come back. */
static int vd_step(struct vd *v, size_t mark, const sj_node *a, const sj_node *b, unsigned depth)
{
    int rc = tftap_buf_failed(&v->path) ? TFTAP_ENOMEM : vd_walk(v, a, b, depth + 1);
    v->path.len = mark;
    if (v->path.data)
        v->path.data[mark] = 0;
    return rc;
}

static int vd_walk(struct vd *v, const sj_node *a, const sj_node *b, unsigned depth)
{
    if (depth > TFTAP_JSON_MAX_DEPTH)
        return TFTAP_ELIMIT;
    if (vd_ignored(v))
        return 0;
    if (a && b && (v->o && (v->o->flags & ANALYSIS_VDIFF_SENSITIVE_EQUAL)) && sj_is_sensitive(a) &&
        sj_is_sensitive(b))
        return 0;
    if (a && b && v->o && (v->o->flags & ANALYSIS_VDIFF_REDACTED_MATCHES) &&
        ((sj_is_sensitive(a) && !sj_is_unknown(b) && !sj_is_sensitive(b) &&
          (!v->o->redacted_equal || v->o->redacted_equal(v->o->redacted_ctx, a, b))) ||
         (sj_is_unknown(a) && a->child && a->child->kind == SJ_OBJECT && a->child->n == 0 &&
          sj_is_unknown(b))))
        return 0;
    size_t mark = v->path.len;
    if (a && b && a->kind == SJ_OBJECT && b->kind == SJ_OBJECT && !sj_is_unknown(a) &&
        !sj_is_unknown(b) && !sj_is_sensitive(a) && !sj_is_sensitive(b)) {
        for (const sj_node *x = a->child; x; x = x->next) {
            analysis_path_member(&v->path, x->key, x->key_len);
            int rc = vd_step(v, mark, x, analysis_member_pair(b, a->child, x), depth);
            if (rc)
                return rc;
        }
        for (const sj_node *y = b->child; y; y = y->next) {
            if (analysis_member_pair(a, b->child, y))
                continue;
            analysis_path_member(&v->path, y->key, y->key_len);
            int rc = vd_step(v, mark, NULL, y, depth);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (a && b && a->kind == SJ_ARRAY && b->kind == SJ_ARRAY) {
        const sj_node *x = a->child, *y = b->child;
        for (size_t i = 0; x || y; i++) {
            tftap_buf_printf(&v->path, "[%zu]", i);
            int rc = vd_step(v, mark, x, y, depth);
            if (rc)
                return rc;
            x = x ? x->next : NULL;
            y = y ? y->next : NULL;
        }
        return 0;
    }
    if (a && b && sj_equal(a, b))
        return 0;
    return v->fn(v->ctx, tftap_buf_cstr(&v->path), a, b);
}

int analysis_value_diff(const sj_node *a, const sj_node *b, const char *prefix,
                        const analysis_value_diff_opts *o,
                        int (*fn)(void *ctx, const char *path, const sj_node *a, const sj_node *b),
                        void *ctx)
{
    struct vd v = {o, prefix ? strlen(prefix) : 0, TFTAP_BUF_INIT, fn, ctx};
    if (prefix)
        tftap_buf_puts(&v.path, prefix);
    int rc = tftap_buf_failed(&v.path) ? TFTAP_ENOMEM : vd_walk(&v, a, b, 0);
    tftap_buf_done(&v.path);
    return rc;
}

/* ---- a request's canonical digest ---------------------------------------- */

/* Provider-private bytes: recorded as a size and a hash, sent back by a
 * replay as other bytes, so never a reason not to match. They are fields
 * of the request itself: inside a value the same names are attributes
 * (a repository's "private" flag) and compare like any other. */
static const char *const private_members[] = {"private",        "prior_private",  "planned_private",
                                              "source_private", "target_private", NULL};

int analysis_private_member(const sj_node *member)
{
    for (const char *const *p = private_members; *p; p++)
        if (member->key_len == strlen(*p) && memcmp(member->key, *p, member->key_len) == 0)
            return 1;
    return 0;
}

static int member_cmp(const void *x, const void *y)
{
    const sj_node *a = *(const sj_node *const *)x, *b = *(const sj_node *const *)y;
    return tftap_bytes_cmp(a->key, a->key_len, b->key, b->key_len);
}

/* A text that is one text for requests the comparison (without --ignore
 * patterns) finds equal: members in key order, every secret marker one
 * token, the request's provider-private fields left out unless
 * private_too. */
static int canon(tftap_buf *out, const sj_node *n, int private_too, unsigned depth)
{
    if (depth > TFTAP_JSON_MAX_DEPTH)
        return TFTAP_ELIMIT;
    if (sj_is_sensitive(n)) {
        tftap_buf_puts(out, "{\"$sensitive\":0}");
        return 0;
    }
    if (n->kind == SJ_ARRAY) {
        tftap_buf_putc(out, '[');
        for (const sj_node *c = n->child; c; c = c->next) {
            if (c != n->child)
                tftap_buf_putc(out, ',');
            int rc = canon(out, c, private_too, depth + 1);
            if (rc)
                return rc;
        }
        tftap_buf_putc(out, ']');
        return 0;
    }
    if (n->kind != SJ_OBJECT) {
        sj_write(n, out);
        return 0;
    }
    const sj_node **m = malloc((n->n + 1) * sizeof *m);
    if (!m)
        return TFTAP_ENOMEM;
    size_t k = 0;
    for (const sj_node *c = n->child; c && k < n->n; c = c->next)
        if (depth > 0 || private_too || !analysis_private_member(c))
            m[k++] = c;
    if (k > 1)
        qsort(m, k, sizeof *m, member_cmp);
    tftap_buf_putc(out, '{');
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++) {
        if (i)
            tftap_buf_putc(out, ',');
        tftap_buf_json_string(out, m[i]->key, m[i]->key_len);
        tftap_buf_putc(out, ':');
        rc = canon(out, m[i], private_too, depth + 1);
    }
    tftap_buf_putc(out, '}');
    free(m);
    return rc;
}

int analysis_request_digest(const sj_node *request, int private_too, char hex[65])
{
    tftap_buf t = TFTAP_BUF_INIT;
    int rc = canon(&t, request, private_too, 0);
    if (!rc && tftap_buf_failed(&t))
        rc = TFTAP_ENOMEM;
    if (!rc)
        tftap_sha256_hex(t.data ? t.data : "", t.len, hex);
    tftap_buf_done(&t);
    return rc == TFTAP_ENOMEM ? rc : rc == 0;
}
