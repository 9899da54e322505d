/* analysis: provider schemas in the format of `tofu providers schema -json`,
 * and the schema diff. A GetProviderSchema response (either protocol) is
 * rendered by the decoder as proto JSON, then reshaped the way OpenTofu's
 * jsonprovider package writes it: attributes and block types as maps
 * sorted by name, empty fields left out, nesting modes in lowercase. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "decoder/decoder.h"

/* ---- proto JSON -> CLI JSON ----------------------------------------------- */

static int node_key_cmp(const void *x, const void *y)
{
    const sj_node *const *a = x, *const *b = y;
    return tftap_bytes_cmp((*a)->key, (*a)->key_len, (*b)->key, (*b)->key_len);
}

static const char *s_of(const sj_node *obj, const char *key)
{
    const sj_node *n = obj ? sj_get(obj, key) : NULL;
    return n && n->kind == SJ_STRING ? n->str : "";
}

static int b_of(const sj_node *obj, const char *key)
{
    const sj_node *n = obj ? sj_get(obj, key) : NULL;
    return n && n->kind == SJ_BOOL && n->boolean;
}

static const char *num_of(const sj_node *obj, const char *key)
{
    const sj_node *n = obj ? sj_get(obj, key) : NULL;
    return n && n->kind == SJ_NUMBER ? n->str : "0";
}

static void put_kstr(tftap_buf *b, int *first, const char *key, const char *v)
{
    tftap_buf_printf(b, "%s\"%s\":", *first ? "" : ",", key);
    tftap_buf_json_string(b, v, strlen(v));
    *first = 0;
}

static void put_kbool(tftap_buf *b, int *first, const char *key, int v)
{
    if (!v)
        return;
    tftap_buf_printf(b, "%s\"%s\":true", *first ? "" : ",", key);
    *first = 0;
}

static const char *kind_lower(const char *k)
{
    return strcmp(k, "MARKDOWN") == 0 ? "markdown" : "plain";
}

static const char *nesting_lower(const sj_node *n)
{
    const char *m = s_of(n, "nesting");
    static const char *const names[][2] = {
        {"SINGLE", "single"}, {"GROUP", "group"}, {"LIST", "list"}, {"SET", "set"}, {"MAP", "map"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(m, names[i][0]) == 0)
            return names[i][1];
    return "invalid";
}

/* The elements of a repeated field sorted by their "name" (or
 * "type_name") member; NULL with *n = 0 when empty. */
static const sj_node **sorted_by(const sj_node *arr, const char *namekey, size_t *n, int *err)
{
    *n = 0;
    if (!arr || arr->kind != SJ_ARRAY || arr->n == 0)
        return NULL;
    const sj_node **v = malloc(arr->n * sizeof *v);
    sj_node *keys = calloc(arr->n, sizeof *keys);
    if (!v || !keys) {
        free(v);
        free(keys);
        *err = TFTAP_ENOMEM;
        return NULL;
    }
    /* Sort copies whose key is the name, then map back by position. */
    size_t k = 0;
    for (const sj_node *c = arr->child; c; c = c->next, k++) {
        const sj_node *nm = sj_get(c, namekey);
        keys[k] = *c;
        keys[k].key = nm && nm->kind == SJ_STRING ? nm->str : "";
        keys[k].key_len = nm && nm->kind == SJ_STRING ? nm->len : 0;
        keys[k].next = (sj_node *)c; /* the original */
    }
    const sj_node **idx = malloc(k * sizeof *idx);
    if (!idx) {
        free(v);
        free(keys);
        *err = TFTAP_ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < k; i++)
        idx[i] = &keys[i];
    qsort(idx, k, sizeof *idx, node_key_cmp);
    for (size_t i = 0; i < k; i++)
        v[i] = idx[i]->next;
    free(idx);
    free(keys);
    *n = k;
    return v;
}

static int put_block(tftap_buf *b, const sj_node *blk, unsigned depth);

static void put_type(tftap_buf *b, const sj_node *t)
{
    /* The decoder renders cty type bytes as the JSON they hold. */
    sj_write(t, b);
}

static int put_attr(tftap_buf *b, const sj_node *a, unsigned depth)
{
    if (depth > ANALYSIS_JSON_MAX_DEPTH)
        return TFTAP_ELIMIT;
    int first = 1, rc = 0;
    tftap_buf_putc(b, '{');
    const sj_node *t = sj_get(a, "type");
    if (t && t->kind != SJ_NULL && !(t->kind == SJ_STRING && t->len == 0)) {
        tftap_buf_puts(b, "\"type\":");
        put_type(b, t);
        first = 0;
    }
    const sj_node *nt = sj_get(a, "nested_type");
    if (nt && nt->kind == SJ_OBJECT) {
        tftap_buf_printf(b, "%s\"nested_type\":{", first ? "" : ",");
        first = 0;
        size_t n = 0;
        const sj_node **v = sorted_by(sj_get(nt, "attributes"), "name", &n, &rc);
        if (n) {
            tftap_buf_puts(b, "\"attributes\":{");
            for (size_t i = 0; i < n && !rc; i++) {
                const char *name = s_of(v[i], "name");
                if (i)
                    tftap_buf_putc(b, ',');
                tftap_buf_json_string(b, name, strlen(name));
                tftap_buf_putc(b, ':');
                rc = put_attr(b, v[i], depth + 1);
            }
            tftap_buf_puts(b, "},");
        }
        free(v);
        tftap_buf_printf(b, "\"nesting_mode\":\"%s\"}", nesting_lower(nt));
    }
    if (*s_of(a, "description"))
        put_kstr(b, &first, "description", s_of(a, "description"));
    put_kstr(b, &first, "description_kind", kind_lower(s_of(a, "description_kind")));
    put_kbool(b, &first, "deprecated", b_of(a, "deprecated"));
    put_kbool(b, &first, "required", b_of(a, "required"));
    put_kbool(b, &first, "optional", b_of(a, "optional"));
    put_kbool(b, &first, "computed", b_of(a, "computed"));
    put_kbool(b, &first, "sensitive", b_of(a, "sensitive"));
    put_kbool(b, &first, "write_only", b_of(a, "write_only"));
    tftap_buf_putc(b, '}');
    return rc;
}

static int put_block(tftap_buf *b, const sj_node *blk, unsigned depth)
{
    if (depth > ANALYSIS_JSON_MAX_DEPTH)
        return TFTAP_ELIMIT;
    int first = 1, rc = 0;
    size_t n = 0;
    tftap_buf_putc(b, '{');
    const sj_node **v = sorted_by(sj_get(blk, "attributes"), "name", &n, &rc);
    if (n) {
        tftap_buf_puts(b, "\"attributes\":{");
        for (size_t i = 0; i < n && !rc; i++) {
            const char *name = s_of(v[i], "name");
            if (i)
                tftap_buf_putc(b, ',');
            tftap_buf_json_string(b, name, strlen(name));
            tftap_buf_putc(b, ':');
            rc = put_attr(b, v[i], depth + 1);
        }
        tftap_buf_putc(b, '}');
        first = 0;
    }
    free(v);
    v = sorted_by(sj_get(blk, "block_types"), "type_name", &n, &rc);
    if (n) {
        tftap_buf_printf(b, "%s\"block_types\":{", first ? "" : ",");
        for (size_t i = 0; i < n && !rc; i++) {
            const char *name = s_of(v[i], "type_name");
            if (i)
                tftap_buf_putc(b, ',');
            tftap_buf_json_string(b, name, strlen(name));
            tftap_buf_printf(b, ":{\"nesting_mode\":\"%s\"", nesting_lower(v[i]));
            const sj_node *inner = sj_get(v[i], "block");
            tftap_buf_puts(b, ",\"block\":");
            if (inner && inner->kind == SJ_OBJECT)
                rc = put_block(b, inner, depth + 1);
            else
                tftap_buf_puts(b, "{}");
            if (strcmp(num_of(v[i], "min_items"), "0") != 0)
                tftap_buf_printf(b, ",\"min_items\":%s", num_of(v[i], "min_items"));
            if (strcmp(num_of(v[i], "max_items"), "0") != 0)
                tftap_buf_printf(b, ",\"max_items\":%s", num_of(v[i], "max_items"));
            tftap_buf_putc(b, '}');
        }
        tftap_buf_putc(b, '}');
        first = 0;
    }
    free(v);
    if (*s_of(blk, "description"))
        put_kstr(b, &first, "description", s_of(blk, "description"));
    put_kstr(b, &first, "description_kind", kind_lower(s_of(blk, "description_kind")));
    put_kbool(b, &first, "deprecated", b_of(blk, "deprecated"));
    tftap_buf_putc(b, '}');
    return rc;
}

static int put_schema(tftap_buf *b, const sj_node *s)
{
    const sj_node *blk = s ? sj_get(s, "block") : NULL;
    if (!blk || blk->kind != SJ_OBJECT) {
        tftap_buf_puts(b, "{\"version\":0}");
        return 0;
    }
    tftap_buf_printf(b, "{\"version\":%s,\"block\":", num_of(s, "version"));
    int rc = put_block(b, blk, 0);
    tftap_buf_putc(b, '}');
    return rc;
}

static int put_schemas(tftap_buf *b, int *first, const char *key, const sj_node *map)
{
    if (!map || map->kind != SJ_OBJECT || map->n == 0)
        return 0;
    const sj_node **v = malloc(map->n * sizeof *v);
    if (!v)
        return TFTAP_ENOMEM;
    size_t n = 0;
    for (const sj_node *c = map->child; c; c = c->next)
        v[n++] = c;
    qsort(v, n, sizeof *v, node_key_cmp);
    tftap_buf_printf(b, "%s\"%s\":{", *first ? "" : ",", key);
    *first = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (i)
            tftap_buf_putc(b, ',');
        tftap_buf_json_string(b, v[i]->key, v[i]->key_len);
        tftap_buf_putc(b, ':');
        rc = put_schema(b, v[i]);
    }
    tftap_buf_putc(b, '}');
    free(v);
    return rc;
}

static void put_param(tftap_buf *b, const sj_node *p)
{
    tftap_buf_puts(b, "{\"name\":");
    tftap_buf_json_string(b, s_of(p, "name"), strlen(s_of(p, "name")));
    tftap_buf_puts(b, ",\"description\":");
    tftap_buf_json_string(b, s_of(p, "description"), strlen(s_of(p, "description")));
    tftap_buf_puts(b, ",\"type\":");
    const sj_node *t = sj_get(p, "type");
    if (t)
        put_type(b, t);
    else
        tftap_buf_puts(b, "null");
    if (b_of(p, "allow_null_value"))
        tftap_buf_puts(b, ",\"is_nullable\":true");
    tftap_buf_putc(b, '}');
}

static int put_functions(tftap_buf *b, int *first, const sj_node *map)
{
    if (!map || map->kind != SJ_OBJECT || map->n == 0)
        return 0;
    const sj_node **v = malloc(map->n * sizeof *v);
    if (!v)
        return TFTAP_ENOMEM;
    size_t n = 0;
    for (const sj_node *c = map->child; c; c = c->next)
        v[n++] = c;
    qsort(v, n, sizeof *v, node_key_cmp);
    tftap_buf_printf(b, "%s\"functions\":{", *first ? "" : ",");
    *first = 0;
    for (size_t i = 0; i < n; i++) {
        const sj_node *f = v[i];
        if (i)
            tftap_buf_putc(b, ',');
        tftap_buf_json_string(b, f->key, f->key_len);
        tftap_buf_puts(b, ":{\"description\":");
        tftap_buf_json_string(b, s_of(f, "description"), strlen(s_of(f, "description")));
        tftap_buf_puts(b, ",\"summary\":");
        tftap_buf_json_string(b, s_of(f, "summary"), strlen(s_of(f, "summary")));
        tftap_buf_puts(b, ",\"return_type\":");
        const sj_node *ret = sj_get(f, "return");
        const sj_node *rt = ret && ret->kind == SJ_OBJECT ? sj_get(ret, "type") : NULL;
        if (rt)
            put_type(b, rt);
        else
            tftap_buf_puts(b, "null");
        const sj_node *ps = sj_get(f, "parameters");
        if (ps && ps->kind == SJ_ARRAY && ps->n) {
            tftap_buf_puts(b, ",\"parameters\":[");
            for (const sj_node *p = ps->child; p; p = p->next) {
                put_param(b, p);
                if (p->next)
                    tftap_buf_putc(b, ',');
            }
            tftap_buf_putc(b, ']');
        }
        const sj_node *vp = sj_get(f, "variadic_parameter");
        if (vp && vp->kind == SJ_OBJECT) {
            tftap_buf_puts(b, ",\"variadic_parameter\":");
            put_param(b, vp);
        }
        tftap_buf_putc(b, '}');
    }
    tftap_buf_putc(b, '}');
    free(v);
    return 0;
}

int analysis_schema_from_response(int protocol, const void *raw, size_t n, tftap_buf *out,
                                  tftap_buf *errmsg)
{
    const char *method =
        protocol == 5 ? "/tfplugin5.Provider/GetSchema" : "/tfplugin6.Provider/GetProviderSchema";
    tftap_buf pj = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    dec_opts opts;
    memset(&opts, 0, sizeof opts);
    sj_doc *doc = NULL;
    int rc = dec_message_to_json(method, 1, raw, n, NULL, NULL, &opts, &pj, &err);
    if (rc) {
        if (errmsg)
            dec_error_format(&err, errmsg);
        goto out;
    }
    rc = sj_parse(pj.data, pj.len, ANALYSIS_JSON_MAX_DEPTH, &doc);
    if (rc)
        goto out;
    const sj_node *r = sj_root(doc);
    int first = 1;
    tftap_buf_puts(out, "{\"provider\":");
    rc = put_schema(out, sj_get(r, "provider"));
    first = 0;
    if (!rc)
        rc = put_schemas(out, &first, "resource_schemas", sj_get(r, "resource_schemas"));
    if (!rc)
        rc = put_schemas(out, &first, "data_source_schemas", sj_get(r, "data_source_schemas"));
    if (!rc)
        rc = put_schemas(out, &first, "ephemeral_resource_schemas",
                         sj_get(r, "ephemeral_resource_schemas"));
    if (!rc)
        rc = put_functions(out, &first, sj_get(r, "functions"));
    tftap_buf_putc(out, '}');
    if (!rc && tftap_buf_failed(out))
        rc = TFTAP_ENOMEM;
out:
    sj_free(doc);
    dec_error_done(&err);
    tftap_buf_done(&pj);
    return rc;
}

/* ---- schema diff --------------------------------------------------------------- */

struct schange {
    const char *section; /* "provider", "resource", "data source", ... */
    char *name;          /* type or function name */
    char *path;          /* attribute/block path, "" for the type itself */
    const char *change;  /* "added", "removed", "type", "required", ... */
    char *a, *b;         /* old and new (JSON text or word), or NULL */
    int breaking;
};

struct analysis_schema_diff {
    struct schange *v;
    size_t n, cap, breaking;
    int err;
};

static struct schange *sadd(analysis_schema_diff *d, const char *section, const char *name,
                            const char *path, const char *change, int breaking)
{
    if (d->err)
        return NULL;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 32;
        struct schange *nv = realloc(d->v, cap * sizeof *nv);
        if (!nv) {
            d->err = TFTAP_ENOMEM;
            return NULL;
        }
        d->v = nv;
        d->cap = cap;
    }
    struct schange *c = &d->v[d->n++];
    memset(c, 0, sizeof *c);
    c->section = section;
    c->change = change;
    c->breaking = breaking;
    c->name = strdup(name);
    c->path = strdup(path);
    if (!c->name || !c->path)
        d->err = TFTAP_ENOMEM;
    d->breaking += breaking != 0;
    return c;
}

static void sset(analysis_schema_diff *d, struct schange *c, const sj_node *a, const sj_node *b)
{
    if (!c)
        return;
    tftap_buf x = TFTAP_BUF_INIT;
    if (a) {
        sj_write_sorted(a, &x);
        tftap_buf_cstr(&x);
        c->a = tftap_buf_take(&x, NULL);
    }
    if (b) {
        sj_write_sorted(b, &x);
        tftap_buf_cstr(&x);
        c->b = tftap_buf_take(&x, NULL);
    }
    if ((a && !c->a) || (b && !c->b))
        d->err = TFTAP_ENOMEM;
}

static void sset_str(analysis_schema_diff *d, struct schange *c, const char *a, const char *b)
{
    if (!c)
        return;
    c->a = a ? strdup(a) : NULL;
    c->b = b ? strdup(b) : NULL;
    if ((a && !c->a) || (b && !c->b))
        d->err = TFTAP_ENOMEM;
}

static int same_json(const sj_node *a, const sj_node *b)
{
    if (!a || !b)
        return a == b;
    return sj_equal(a, b);
}

static const char *mode_of(const sj_node *a)
{
    int r = b_of(a, "required"), o = b_of(a, "optional"), c = b_of(a, "computed");
    return r ? "required" : o && c ? "optional+computed" : o ? "optional" : c ? "computed" : "none";
}

/* Whether a change of an attribute's mode can break a configuration or a
 * plan that worked before. */
static int mode_breaking(const char *from, const char *to)
{
    if (strcmp(to, "required") == 0)
        return 1; /* something that could be left out now must be set */
    if (strcmp(to, "computed") == 0)
        return 1; /* something that could be set now must not be */
    (void)from;
    return 0;
}

static void path_join(tftap_buf *p, const char *base, const char *name, size_t len)
{
    tftap_buf_reset(p);
    tftap_buf_puts(p, base);
    tftap_buf_putc(p, '.');
    tftap_buf_append(p, name, len);
    tftap_buf_cstr(p);
}

static void diff_block(analysis_schema_diff *d, const char *sec, const char *name, const char *base,
                       const sj_node *a, const sj_node *b, unsigned depth);

static void diff_attrs(analysis_schema_diff *d, const char *sec, const char *name, const char *base,
                       const sj_node *aa, const sj_node *ba, unsigned depth)
{
    tftap_buf p = TFTAP_BUF_INIT;
    for (const sj_node *x = aa ? aa->child : NULL; x; x = x->next) {
        const sj_node *y = sj_get_n(ba, x->key, x->key_len);
        path_join(&p, base, x->key, x->key_len);
        if (!y) {
            sset_str(d, sadd(d, sec, name, p.data, "attribute removed", 1), mode_of(x), NULL);
            continue;
        }
        const sj_node *ta = sj_get(x, "type"), *tb = sj_get(y, "type");
        const sj_node *na = sj_get(x, "nested_type"), *nb = sj_get(y, "nested_type");
        if (!same_json(ta, tb) || !!na != !!nb)
            sset(d, sadd(d, sec, name, p.data, "type changed", 1), ta ? ta : na, tb ? tb : nb);
        const char *ma = mode_of(x), *mb = mode_of(y);
        if (strcmp(ma, mb) != 0)
            sset_str(d, sadd(d, sec, name, p.data, "mode changed", mode_breaking(ma, mb)), ma, mb);
        if (b_of(x, "sensitive") != b_of(y, "sensitive"))
            sset_str(d,
                     sadd(d, sec, name, p.data,
                          b_of(y, "sensitive") ? "became sensitive" : "no longer sensitive", 0),
                     NULL, NULL);
        if (b_of(x, "write_only") != b_of(y, "write_only"))
            sset_str(d,
                     sadd(d, sec, name, p.data,
                          b_of(y, "write_only") ? "became write-only" : "no longer write-only", 1),
                     NULL, NULL);
        if (b_of(x, "deprecated") != b_of(y, "deprecated"))
            sset_str(d,
                     sadd(d, sec, name, p.data,
                          b_of(y, "deprecated") ? "deprecated" : "no longer deprecated", 0),
                     NULL, NULL);
        if (na && nb && depth < ANALYSIS_JSON_MAX_DEPTH) {
            const char *nma = s_of(na, "nesting_mode"), *nmb = s_of(nb, "nesting_mode");
            if (strcmp(nma, nmb) != 0)
                sset_str(d, sadd(d, sec, name, p.data, "nesting mode changed", 1), nma, nmb);
            diff_attrs(d, sec, name, p.data, sj_get(na, "attributes"), sj_get(nb, "attributes"),
                       depth + 1);
        }
    }
    for (const sj_node *y = ba ? ba->child : NULL; y; y = y->next) {
        if (sj_get_n(aa, y->key, y->key_len))
            continue;
        path_join(&p, base, y->key, y->key_len);
        sset_str(d, sadd(d, sec, name, p.data, "attribute added", b_of(y, "required")), NULL,
                 mode_of(y));
    }
    if (tftap_buf_failed(&p))
        d->err = TFTAP_ENOMEM;
    tftap_buf_done(&p);
}

static long long items(const sj_node *bt, const char *key)
{
    return strtoll(num_of(bt, key), NULL, 10);
}

static void diff_block(analysis_schema_diff *d, const char *sec, const char *name, const char *base,
                       const sj_node *a, const sj_node *b, unsigned depth)
{
    if (depth > ANALYSIS_JSON_MAX_DEPTH) {
        d->err = TFTAP_ELIMIT;
        return;
    }
    diff_attrs(d, sec, name, base, a ? sj_get(a, "attributes") : NULL,
               b ? sj_get(b, "attributes") : NULL, depth);
    if (b_of(a, "deprecated") != b_of(b, "deprecated"))
        sset_str(d,
                 sadd(d, sec, name, base,
                      b_of(b, "deprecated") ? "deprecated" : "no longer deprecated", 0),
                 NULL, NULL);
    const sj_node *ab = a ? sj_get(a, "block_types") : NULL,
                  *bb = b ? sj_get(b, "block_types") : NULL;
    tftap_buf p = TFTAP_BUF_INIT;
    char num[2][24];
    for (const sj_node *x = ab ? ab->child : NULL; x; x = x->next) {
        const sj_node *y = sj_get_n(bb, x->key, x->key_len);
        path_join(&p, base, x->key, x->key_len);
        if (!y) {
            sset_str(d, sadd(d, sec, name, p.data, "block removed", 1), s_of(x, "nesting_mode"),
                     NULL);
            continue;
        }
        const char *ma = s_of(x, "nesting_mode"), *mb = s_of(y, "nesting_mode");
        if (strcmp(ma, mb) != 0)
            sset_str(d, sadd(d, sec, name, p.data, "nesting mode changed", 1), ma, mb);
        long long mina = items(x, "min_items"), minb = items(y, "min_items");
        long long maxa = items(x, "max_items"), maxb = items(y, "max_items");
        if (mina != minb) {
            snprintf(num[0], sizeof num[0], "%lld", mina);
            snprintf(num[1], sizeof num[1], "%lld", minb);
            sset_str(d, sadd(d, sec, name, p.data, "min_items changed", minb > mina), num[0],
                     num[1]);
        }
        if (maxa != maxb) {
            snprintf(num[0], sizeof num[0], "%lld", maxa);
            snprintf(num[1], sizeof num[1], "%lld", maxb);
            /* 0 is no limit: shrinking is breaking. */
            int shrink = maxb != 0 && (maxa == 0 || maxb < maxa);
            sset_str(d, sadd(d, sec, name, p.data, "max_items changed", shrink), num[0], num[1]);
        }
        diff_block(d, sec, name, p.data, sj_get(x, "block"), sj_get(y, "block"), depth + 1);
    }
    for (const sj_node *y = bb ? bb->child : NULL; y; y = y->next) {
        if (sj_get_n(ab, y->key, y->key_len))
            continue;
        path_join(&p, base, y->key, y->key_len);
        sset_str(d, sadd(d, sec, name, p.data, "block added", items(y, "min_items") > 0), NULL,
                 s_of(y, "nesting_mode"));
    }
    if (tftap_buf_failed(&p))
        d->err = TFTAP_ENOMEM;
    tftap_buf_done(&p);
}

static void diff_section(analysis_schema_diff *d, const char *sec, const sj_node *a,
                         const sj_node *b, int functions)
{
    tftap_buf nm = TFTAP_BUF_INIT;
    for (const sj_node *x = a ? a->child : NULL; x; x = x->next) {
        tftap_buf_reset(&nm);
        tftap_buf_append(&nm, x->key, x->key_len);
        tftap_buf_cstr(&nm);
        const sj_node *y = sj_get_n(b, x->key, x->key_len);
        if (!y) {
            sadd(d, sec, nm.data, "", "removed", 1);
            continue;
        }
        if (functions) {
            const sj_node *ra = sj_get(x, "return_type"), *rb = sj_get(y, "return_type");
            if (!same_json(ra, rb))
                sset(d, sadd(d, sec, nm.data, "", "return type changed", 1), ra, rb);
            const sj_node *pa = sj_get(x, "parameters"), *pb = sj_get(y, "parameters");
            const sj_node *va = sj_get(x, "variadic_parameter"),
                          *vb = sj_get(y, "variadic_parameter");
            /* Parameters are positional: names are documentation. */
            int same = (pa ? pa->n : 0) == (pb ? pb->n : 0) && !!va == !!vb;
            for (const sj_node *p = pa ? pa->child : NULL, *q = pb ? pb->child : NULL;
                 same && p && q; p = p->next, q = q->next)
                same = same_json(sj_get(p, "type"), sj_get(q, "type")) &&
                       b_of(p, "is_nullable") == b_of(q, "is_nullable");
            if (same && va && vb)
                same = same_json(sj_get(va, "type"), sj_get(vb, "type"));
            if (!same)
                sset(d, sadd(d, sec, nm.data, "", "parameters changed", 1), pa, pb);
            continue;
        }
        const char *va = num_of(x, "version"), *vb = num_of(y, "version");
        if (strcmp(va, vb) != 0)
            sset_str(d, sadd(d, sec, nm.data, "", "schema version changed", 0), va, vb);
        diff_block(d, sec, nm.data, "", sj_get(x, "block"), sj_get(y, "block"), 0);
    }
    for (const sj_node *y = b ? b->child : NULL; y; y = y->next) {
        if (sj_get_n(a, y->key, y->key_len))
            continue;
        tftap_buf_reset(&nm);
        tftap_buf_append(&nm, y->key, y->key_len);
        tftap_buf_cstr(&nm);
        sadd(d, sec, nm.data, "", "added", 0);
    }
    if (tftap_buf_failed(&nm))
        d->err = TFTAP_ENOMEM;
    tftap_buf_done(&nm);
}

/* The provider entry of a `providers schema -json` document: the one
 * named provider (an address or its suffix), or the only one. */
static const sj_node *provider_entry(const sj_node *root, const char *provider)
{
    const sj_node *ps = sj_get(root, "provider_schemas");
    if (!ps) /* an entry on its own */
        return root && root->kind == SJ_OBJECT ? root : NULL;
    if (ps->kind != SJ_OBJECT)
        return NULL;
    if (!provider)
        return ps->n == 1 ? ps->child : NULL;
    size_t n = strlen(provider);
    for (const sj_node *c = ps->child; c; c = c->next)
        if (c->key_len == n && memcmp(c->key, provider, n) == 0)
            return c;
    for (const sj_node *c = ps->child; c; c = c->next)
        if (c->key_len > n && memcmp(c->key + c->key_len - n, provider, n) == 0 &&
            c->key[c->key_len - n - 1] == '/')
            return c;
    return NULL;
}

int analysis_schema_entry(const char *json, size_t len, const char *provider, tftap_buf *out,
                          tftap_buf *address)
{
    sj_doc *doc = NULL;
    int rc = sj_parse(json, len, ANALYSIS_JSON_MAX_DEPTH, &doc);
    if (rc)
        return rc;
    const sj_node *e = provider_entry(sj_root(doc), provider);
    if (!e || e->kind != SJ_OBJECT) {
        rc = TFTAP_ENOTFOUND;
    } else {
        sj_write(e, out);
        if (address && e->key)
            tftap_buf_append(address, e->key, e->key_len);
        if (address)
            tftap_buf_cstr(address);
    }
    sj_free(doc);
    return rc ? rc : tftap_buf_failed(out) ? TFTAP_ENOMEM : 0;
}

int analysis_schema_diff_new(const char *a, size_t alen, const char *b, size_t blen,
                             analysis_schema_diff **out)
{
    *out = NULL;
    analysis_schema_diff *d = calloc(1, sizeof *d);
    if (!d)
        return TFTAP_ENOMEM;
    sj_doc *da = NULL, *db = NULL;
    int rc = sj_parse(a, alen, ANALYSIS_JSON_MAX_DEPTH, &da);
    if (!rc)
        rc = sj_parse(b, blen, ANALYSIS_JSON_MAX_DEPTH, &db);
    if (rc)
        goto out;
    const sj_node *ea = provider_entry(sj_root(da), NULL), *eb = provider_entry(sj_root(db), NULL);
    if (!ea || !eb || ea->kind != SJ_OBJECT || eb->kind != SJ_OBJECT) {
        rc = TFTAP_EDECODE;
        goto out;
    }
    const sj_node *pa = sj_get(ea, "provider"), *pb = sj_get(eb, "provider");
    diff_block(d, "provider", "", "", pa ? sj_get(pa, "block") : NULL,
               pb ? sj_get(pb, "block") : NULL, 0);
    diff_section(d, "resource", sj_get(ea, "resource_schemas"), sj_get(eb, "resource_schemas"), 0);
    diff_section(d, "data source", sj_get(ea, "data_source_schemas"),
                 sj_get(eb, "data_source_schemas"), 0);
    diff_section(d, "ephemeral resource", sj_get(ea, "ephemeral_resource_schemas"),
                 sj_get(eb, "ephemeral_resource_schemas"), 0);
    diff_section(d, "function", sj_get(ea, "functions"), sj_get(eb, "functions"), 1);
    rc = d->err;
out:
    sj_free(da);
    sj_free(db);
    if (rc) {
        analysis_schema_diff_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void analysis_schema_diff_free(analysis_schema_diff *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].name);
        free(d->v[i].path);
        free(d->v[i].a);
        free(d->v[i].b);
    }
    free(d->v);
    free(d);
}

size_t analysis_schema_diff_count(const analysis_schema_diff *d, int breaking_only)
{
    return !d ? 0 : breaking_only ? d->breaking : d->n;
}

static void jstr(tftap_buf *b, const char *s)
{
    if (s)
        tftap_buf_json_string(b, s, strlen(s));
    else
        tftap_buf_puts(b, "null");
}

int analysis_schema_diff_render(const analysis_schema_diff *d, enum analysis_diff_format fmt,
                                int flags, int breaking_only, tftap_buf *out)
{
    size_t shown = analysis_schema_diff_count(d, breaking_only);
    const char *red = flags & ANALYSIS_DIFF_COLOR ? "\033[31m" : "";
    const char *reset = flags & ANALYSIS_DIFF_COLOR ? "\033[0m" : "";
    if (fmt == ANALYSIS_DIFF_JSON)
        tftap_buf_printf(out, "{\"same\":%s,\"changes\":%zu,\"breaking\":%zu,\"list\":[",
                         d->n ? "false" : "true", d->n, d->breaking);
    else if (fmt == ANALYSIS_DIFF_MARKDOWN)
        tftap_buf_printf(
            out,
            "### tftap schema diff\n\n**%zu change%s, %zu breaking**\n\n"
            "| | kind | name | path | change | old | new |\n|---|---|---|---|---|---|---|\n",
            d->n, d->n == 1 ? "" : "s", d->breaking);
    int n = 0;
    const char *sec = NULL, *name = NULL;
    for (size_t i = 0; i < d->n; i++) {
        const struct schange *c = &d->v[i];
        if (breaking_only && !c->breaking)
            continue;
        if (fmt == ANALYSIS_DIFF_JSON) {
            tftap_buf_puts(out, n ? ",\n  " : "\n  ");
            tftap_buf_puts(out, "{\"kind\":");
            jstr(out, c->section);
            tftap_buf_puts(out, ",\"name\":");
            jstr(out, c->name);
            tftap_buf_puts(out, ",\"path\":");
            jstr(out, c->path);
            tftap_buf_puts(out, ",\"change\":");
            jstr(out, c->change);
            tftap_buf_printf(out, ",\"breaking\":%s,\"a\":", c->breaking ? "true" : "false");
            jstr(out, c->a);
            tftap_buf_puts(out, ",\"b\":");
            jstr(out, c->b);
            tftap_buf_putc(out, '}');
        } else if (fmt == ANALYSIS_DIFF_MARKDOWN) {
            tftap_buf_printf(out, "| %s | %s | `%s` | `%s` | %s | %s | %s |\n",
                             c->breaking ? "**breaking**" : "", c->section, c->name,
                             *c->path ? c->path : "-", c->change, c->a ? c->a : "",
                             c->b ? c->b : "");
        } else {
            if (!sec || strcmp(sec, c->section) != 0 || strcmp(name, c->name) != 0)
                tftap_buf_printf(out, "%s%s%s:\n", c->section, *c->name ? " " : "", c->name);
            sec = c->section;
            name = c->name;
            tftap_buf_printf(out, "  %s%s%s", c->path, *c->path ? " " : "", c->change);
            if (c->a || c->b)
                tftap_buf_printf(out, ": %s -> %s", c->a ? c->a : "-", c->b ? c->b : "-");
            if (c->breaking)
                tftap_buf_printf(out, "  %s[breaking]%s", red, reset);
            tftap_buf_putc(out, '\n');
        }
        n++;
    }
    if (fmt == ANALYSIS_DIFF_JSON)
        tftap_buf_puts(out, n ? "\n]}\n" : "]}\n");
    else if (fmt == ANALYSIS_DIFF_TEXT)
        tftap_buf_printf(out, "%s%zu schema change%s, %zu breaking.\n", n ? "\n" : "", d->n,
                         d->n == 1 ? "" : "s", d->breaking);
    (void)shown;
    return tftap_buf_failed(out) ? TFTAP_ENOMEM : 0;
}

/* "name (required, sensitive)" for each attribute, ", " between. */
static void text_attrs(tftap_buf *b, const sj_node *attrs, const char *prefix)
{
    int first = 1;
    for (const sj_node *a = attrs && attrs->kind == SJ_OBJECT ? attrs->child : NULL; a;
         a = a->next) {
        tftap_buf_puts(b, first ? "" : ", ");
        first = 0;
        tftap_buf_puts(b, prefix);
        tftap_buf_append(b, a->key, a->key_len);
        tftap_buf_printf(b, " (%s", mode_of(a));
        if (b_of(a, "sensitive"))
            tftap_buf_puts(b, ", sensitive");
        if (b_of(a, "write_only"))
            tftap_buf_puts(b, ", write-only");
        if (b_of(a, "deprecated"))
            tftap_buf_puts(b, ", deprecated");
        tftap_buf_putc(b, ')');
    }
}

static void text_block(tftap_buf *b, const sj_node *blk, int indent, unsigned depth)
{
    if (!blk || depth > 64)
        return;
    const sj_node *attrs = sj_get(blk, "attributes");
    if (attrs && attrs->n) {
        tftap_buf_printf(b, "%*s", indent, "");
        text_attrs(b, attrs, "");
        tftap_buf_putc(b, '\n');
    }
    const sj_node *bt = sj_get(blk, "block_types");
    for (const sj_node *x = bt && bt->kind == SJ_OBJECT ? bt->child : NULL; x; x = x->next) {
        tftap_buf_printf(b, "%*sblock ", indent, "");
        tftap_buf_append(b, x->key, x->key_len);
        tftap_buf_printf(b, " (%s", s_of(x, "nesting_mode"));
        if (strcmp(num_of(x, "min_items"), "0") != 0)
            tftap_buf_printf(b, ", min %s", num_of(x, "min_items"));
        if (strcmp(num_of(x, "max_items"), "0") != 0)
            tftap_buf_printf(b, ", max %s", num_of(x, "max_items"));
        tftap_buf_puts(b, "):\n");
        text_block(b, sj_get(x, "block"), indent + 2, depth + 1);
    }
}

int analysis_schema_render_text(const char *entry, size_t len, const char *address, tftap_buf *out)
{
    sj_doc *doc = NULL;
    int rc = sj_parse(entry, len, ANALYSIS_JSON_MAX_DEPTH, &doc);
    if (rc)
        return rc;
    const sj_node *r = sj_root(doc);
    tftap_buf_printf(out, "%s\n", address ? address : "provider");
    const sj_node *p = sj_get(r, "provider");
    if (p && sj_get(p, "block")) {
        tftap_buf_puts(out, "  provider configuration:\n");
        text_block(out, sj_get(p, "block"), 4, 0);
    }
    static const char *const secs[][2] = {{"resource_schemas", "resource"},
                                          {"data_source_schemas", "data source"},
                                          {"ephemeral_resource_schemas", "ephemeral resource"}};
    for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++) {
        const sj_node *m = sj_get(r, secs[i][0]);
        for (const sj_node *t = m && m->kind == SJ_OBJECT ? m->child : NULL; t; t = t->next) {
            tftap_buf_printf(out, "  %s ", secs[i][1]);
            tftap_buf_append(out, t->key, t->key_len);
            tftap_buf_printf(out, " (schema version %s):\n", num_of(t, "version"));
            text_block(out, sj_get(t, "block"), 4, 0);
        }
    }
    const sj_node *f = sj_get(r, "functions");
    for (const sj_node *t = f && f->kind == SJ_OBJECT ? f->child : NULL; t; t = t->next) {
        tftap_buf_puts(out, "  function ");
        tftap_buf_append(out, t->key, t->key_len);
        tftap_buf_putc(out, '(');
        const sj_node *ps = sj_get(t, "parameters");
        for (const sj_node *q = ps && ps->kind == SJ_ARRAY ? ps->child : NULL; q; q = q->next) {
            tftap_buf_printf(out, "%s%s ", q == ps->child ? "" : ", ", s_of(q, "name"));
            const sj_node *ty = sj_get(q, "type");
            if (ty)
                sj_write(ty, out);
        }
        tftap_buf_puts(out, ") ");
        const sj_node *rt = sj_get(t, "return_type");
        if (rt)
            sj_write(rt, out);
        tftap_buf_putc(out, '\n');
    }
    sj_free(doc);
    return tftap_buf_failed(out) ? TFTAP_ENOMEM : 0;
}
