/* Contract checks: the rules OpenTofu applies to a provider's answers
 * (docs/check.md), over recorded calls' decoded values. The rules follow
 * core's objchange package and the resource instance nodes; the messages
 * name what went wrong in our own words. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

#define CHECK_JSON_MAX_DEPTH TFTAP_JSON_MAX_DEPTH
/* Set elements are correlated pairwise (as core does); beyond this many
 * pairs only elements with identical JSON correlate, so a huge set costs
 * linear time. */
#define CHECK_MAX_SET_PAIRS (1u << 20)

/* ---- findings ------------------------------------------------------------ */

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

/* One check in progress: the call, the rule being checked, the path. */
struct ck {
    const analysis_call *c;
    int64_t other_call_id;
    analysis_findings *out;
    const char *rule;
    enum analysis_verdict verdict;
    tftap_buf path;
    int err; /* TFTAP_ENOMEM once anything failed */
};

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

static void add(struct ck *k, const sj_node *expected, const sj_node *actual, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(struct ck *k, const sj_node *expected, const sj_node *actual, const char *fmt, ...)
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
static void drop_since(struct ck *k, size_t mark)
{
    while (k->out->n > mark)
        finding_free(&k->out->v[--k->out->n]);
}

/* ---- paths --------------------------------------------------------------- */

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

static size_t push_attr(struct ck *k, const char *name, size_t n)
{
    size_t mark = k->path.len;
    if (is_ident(name, n)) {
        tftap_buf_putc(&k->path, '.');
        tftap_buf_append(&k->path, name, n);
    } else {
        tftap_buf_putc(&k->path, '[');
        tftap_buf_json_string(&k->path, name, n);
        tftap_buf_putc(&k->path, ']');
    }
    return mark;
}

static size_t push_key(struct ck *k, const char *key, size_t n)
{
    size_t mark = k->path.len;
    tftap_buf_putc(&k->path, '[');
    tftap_buf_json_string(&k->path, key, n);
    tftap_buf_putc(&k->path, ']');
    return mark;
}

static size_t push_index(struct ck *k, size_t i)
{
    size_t mark = k->path.len;
    tftap_buf_printf(&k->path, "[%zu]", i);
    return mark;
}

static void pop(struct ck *k, size_t mark)
{
    if (k->path.len > mark)
        k->path.len = mark;
    if (k->path.data)
        k->path.data[k->path.len] = '\0';
}

/* A map element or object attribute present on one side only, reported
 * at the collection's path with its key quoted. */
static void key_finding(struct ck *k, const sj_node *expected, const sj_node *actual,
                        const sj_node *m, const char *what)
{
    tftap_buf q = TFTAP_BUF_INIT;
    tftap_buf_json_string(&q, m->key, m->key_len);
    if (tftap_buf_failed(&q))
        k->err = TFTAP_ENOMEM;
    else
        add(k, expected, actual, "element %s %s", tftap_buf_cstr(&q), what);
    tftap_buf_done(&q);
}

/* ---- values -------------------------------------------------------------- */

static int v_null(const sj_node *v)
{
    return !v || v->kind == SJ_NULL;
}

static int v_unknown(const sj_node *v)
{
    return v && sj_is_unknown(v);
}

static int v_sensitive(const sj_node *v)
{
    return v && sj_is_sensitive(v);
}

/* A value as a whole that decoding could not produce. */
static int v_undecoded(const sj_node *v)
{
    return v && v->kind == SJ_OBJECT && (sj_get(v, "$undecoded") || sj_get(v, "$error"));
}

static const sj_node *nth(const sj_node *arr, size_t i)
{
    if (!arr || arr->kind != SJ_ARRAY)
        return NULL;
    const sj_node *c = arr->child;
    while (c && i--)
        c = c->next;
    return c;
}

static size_t count(const sj_node *v)
{
    return v && (v->kind == SJ_ARRAY || v->kind == SJ_OBJECT) ? v->n : 0;
}

/* A `dynamic` value travels as {"type": T, "value": V}. */
static int dyn_unwrap(const sj_node *v, const sj_node **ty, const sj_node **val)
{
    const sj_node *t, *x;
    if (v && v->kind == SJ_OBJECT && v->n == 2 && (t = sj_get(v, "type")) &&
        (x = sj_get(v, "value"))) {
        *ty = t;
        *val = x;
        return 1;
    }
    *ty = NULL;
    *val = v;
    return 0;
}

/* LIST and MAP blocks holding dynamic values travel as dynamic values
 * ({"type": T, "value": V}); other blocks never do, and a block whose only
 * attributes are named type and value must not be mistaken for one. */
static const sj_node *block_unwrap(char nesting, const sj_node *v)
{
    const sj_node *t, *x;
    if (!(nesting == 'L' || nesting == 'M') || !dyn_unwrap(v, &t, &x))
        return v;
    if (nesting == 'M' && t->kind != SJ_STRING && t->kind != SJ_ARRAY)
        return v; /* a map of blocks keyed "type" and "value" */
    return x;
}

/* ---- types: a cty type JSON, or protocol-6 nested attributes -------------- */

enum tk {
    TK_ANY,
    TK_STRING,
    TK_NUMBER,
    TK_BOOL,
    TK_DYN,
    TK_LIST,
    TK_SET,
    TK_MAP,
    TK_TUPLE,
    TK_OBJECT
};

struct ty {
    const sj_node *type;  /* cty type JSON, or NULL */
    const sj_node *attrs; /* nested attribute schemas (array), or NULL */
    char nesting;         /* with attrs: 'S' single/group, 'L' list, 'T' set, 'M' map */
};

static int str_is(const sj_node *n, const char *s)
{
    return n && n->kind == SJ_STRING && strcmp(n->str, s) == 0;
}

static char nesting_char(const sj_node *n)
{
    if (str_is(n, "SINGLE") || str_is(n, "GROUP"))
        return 'S';
    if (str_is(n, "LIST"))
        return 'L';
    if (str_is(n, "SET"))
        return 'T';
    if (str_is(n, "MAP"))
        return 'M';
    return 0;
}

static struct ty ty_of_attr(const sj_node *a)
{
    struct ty t = {NULL, NULL, 0};
    const sj_node *ty = sj_get(a, "type"), *nt = sj_get(a, "nested_type");
    if (nt && nt->kind == SJ_OBJECT) {
        const sj_node *at = sj_get(nt, "attributes");
        t.nesting = nesting_char(sj_get(nt, "nesting"));
        if (at && at->kind == SJ_ARRAY && t.nesting)
            t.attrs = at;
    }
    if (!t.attrs && ty && ty->kind != SJ_NULL)
        t.type = ty;
    return t;
}

static enum tk ty_kind(struct ty t)
{
    if (t.attrs) {
        switch (t.nesting) {
        case 'L':
            return TK_LIST;
        case 'T':
            return TK_SET;
        case 'M':
            return TK_MAP;
        default:
            return TK_OBJECT;
        }
    }
    const sj_node *n = t.type;
    if (!n)
        return TK_ANY;
    if (n->kind == SJ_ARRAY && n->child)
        n = n->child;
    if (str_is(n, "string"))
        return TK_STRING;
    if (str_is(n, "number"))
        return TK_NUMBER;
    if (str_is(n, "bool"))
        return TK_BOOL;
    if (str_is(n, "dynamic"))
        return TK_DYN;
    if (t.type->kind != SJ_ARRAY)
        return TK_ANY;
    if (str_is(n, "list"))
        return TK_LIST;
    if (str_is(n, "set"))
        return TK_SET;
    if (str_is(n, "map"))
        return TK_MAP;
    if (str_is(n, "tuple"))
        return TK_TUPLE;
    if (str_is(n, "object"))
        return TK_OBJECT;
    return TK_ANY;
}

static struct ty ty_elem(struct ty t)
{
    struct ty e = {NULL, NULL, 0};
    if (t.attrs) {
        if (t.nesting != 'S') {
            e.attrs = t.attrs;
            e.nesting = 'S';
        }
    } else if (t.type && t.type->kind == SJ_ARRAY && t.type->n == 2) {
        e.type = t.type->child->next;
    }
    return e;
}

static const sj_node *attr_named(const sj_node *attrs, const char *name, size_t n)
{
    for (const sj_node *a = attrs ? attrs->child : NULL; a; a = a->next) {
        const sj_node *nm = sj_get(a, "name");
        if (nm && nm->kind == SJ_STRING && nm->len == n && memcmp(nm->str, name, n) == 0)
            return a;
    }
    return NULL;
}

static struct ty ty_member(struct ty t, const char *name, size_t n)
{
    struct ty m = {NULL, NULL, 0};
    if (t.attrs) {
        const sj_node *a = t.nesting == 'S' ? attr_named(t.attrs, name, n) : NULL;
        if (a)
            m = ty_of_attr(a);
    } else if (ty_kind(t) == TK_OBJECT && t.type->n >= 2) {
        m.type = sj_get_n(t.type->child->next, name, n);
    }
    return m;
}

static struct ty ty_tuple(struct ty t, size_t i)
{
    struct ty e = {NULL, NULL, 0};
    if (ty_kind(t) == TK_TUPLE && t.type->n >= 2)
        e.type = nth(t.type->child->next, i);
    return e;
}

/* ---- equality (cty RawEquals, optionally ignoring refinements) ------------ */

static int geq(const sj_node *a, const sj_node *b);

static int geq_members(const sj_node *a, const sj_node *b)
{
    for (const sj_node *x = a->child; x; x = x->next) {
        const sj_node *y = sj_get_n(b, x->key, x->key_len);
        if (!y || !geq(x, y))
            return 0;
    }
    return 1;
}

/* Generic: arrays in order, objects in any member order. */
static int geq(const sj_node *a, const sj_node *b)
{
    if (v_null(a) || v_null(b))
        return v_null(a) && v_null(b);
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case SJ_ARRAY:
        if (a->n != b->n)
            return 0;
        for (const sj_node *x = a->child, *y = b->child; x && y; x = x->next, y = y->next)
            if (!geq(x, y))
                return 0;
        return 1;
    case SJ_OBJECT:
        return a->n == b->n && geq_members(a, b);
    default:
        return sj_equal(a, b);
    }
}

static int veq(struct ty t, const sj_node *a, const sj_node *b, int unrefined);

static int set_eq(struct ty e, const sj_node *a, const sj_node *b, int unrefined)
{
    if (a->n != b->n)
        return 0;
    int big = (size_t)a->n * b->n > CHECK_MAX_SET_PAIRS;
    for (const sj_node *x = a->child; x; x = x->next) {
        int found = 0;
        for (const sj_node *y = b->child; y && !found; y = y->next)
            found = big ? geq(x, y) : veq(e, x, y, unrefined);
        if (!found)
            return 0;
    }
    for (const sj_node *y = b->child; y; y = y->next) {
        int found = 0;
        for (const sj_node *x = a->child; x && !found; x = x->next)
            found = big ? geq(x, y) : veq(e, x, y, unrefined);
        if (!found)
            return 0;
    }
    return 1;
}

static int veq(struct ty t, const sj_node *a, const sj_node *b, int unrefined)
{
    if (v_null(a) || v_null(b))
        return v_null(a) && v_null(b);
    if (v_unknown(a) || v_unknown(b)) {
        if (!v_unknown(a) || !v_unknown(b))
            return 0;
        return unrefined || geq(a, b);
    }
    if (v_sensitive(a) || v_sensitive(b))
        return v_sensitive(a) && v_sensitive(b) && geq(a, b);
    enum tk k = ty_kind(t);
    switch (k) {
    case TK_DYN: {
        const sj_node *ta, *va, *tb, *vb;
        int wa = dyn_unwrap(a, &ta, &va), wb = dyn_unwrap(b, &tb, &vb);
        if (wa != wb || (wa && !geq(ta, tb)))
            return 0;
        if (!wa)
            return geq(a, b);
        struct ty inner = {ta, NULL, 0};
        return veq(inner, va, vb, unrefined);
    }
    case TK_LIST:
    case TK_TUPLE: {
        if (a->kind != SJ_ARRAY || b->kind != SJ_ARRAY || a->n != b->n)
            return 0;
        size_t i = 0;
        for (const sj_node *x = a->child, *y = b->child; x && y; x = x->next, y = y->next, i++)
            if (!veq(k == TK_LIST ? ty_elem(t) : ty_tuple(t, i), x, y, unrefined))
                return 0;
        return 1;
    }
    case TK_SET:
        if (a->kind != SJ_ARRAY || b->kind != SJ_ARRAY)
            return 0;
        return set_eq(ty_elem(t), a, b, unrefined);
    case TK_MAP:
    case TK_OBJECT:
        if (a->kind != SJ_OBJECT || b->kind != SJ_OBJECT || a->n != b->n)
            return 0;
        for (const sj_node *x = a->child; x; x = x->next) {
            const sj_node *y = sj_get_n(b, x->key, x->key_len);
            if (!y)
                return 0;
            struct ty m = k == TK_MAP ? ty_elem(t) : ty_member(t, x->key, x->key_len);
            if (!veq(m, x, y, unrefined))
                return 0;
        }
        return 1;
    case TK_ANY:
        if (unrefined) {
            /* Unknowns nested in an untyped value still compare unrefined. */
            if (a->kind != b->kind)
                return 0;
            if (a->kind == SJ_ARRAY) {
                if (a->n != b->n)
                    return 0;
                for (const sj_node *x = a->child, *y = b->child; x && y; x = x->next, y = y->next)
                    if (!veq(t, x, y, 1))
                        return 0;
                return 1;
            }
            if (a->kind == SJ_OBJECT) {
                if (a->n != b->n)
                    return 0;
                for (const sj_node *x = a->child; x; x = x->next) {
                    const sj_node *y = sj_get_n(b, x->key, x->key_len);
                    if (!y || !veq(t, x, y, 1))
                        return 0;
                }
                return 1;
            }
        }
        return geq(a, b);
    default:
        return sj_equal(a, b);
    }
}

/* ---- schema blocks -------------------------------------------------------- */

struct block {
    const sj_node *attrs;  /* array of attribute schemas, or NULL */
    const sj_node *blocks; /* array of nested block types, or NULL */
};

static struct block block_of(const sj_node *b)
{
    struct block x = {NULL, NULL};
    const sj_node *a = sj_get(b, "attributes"), *bt = sj_get(b, "block_types");
    if (a && a->kind == SJ_ARRAY)
        x.attrs = a;
    if (bt && bt->kind == SJ_ARRAY)
        x.blocks = bt;
    return x;
}

static int flag(const sj_node *a, const char *name)
{
    const sj_node *f = sj_get(a, name);
    return f && f->kind == SJ_BOOL && f->boolean;
}

static const sj_node *get_attr(const sj_node *obj, const sj_node *name)
{
    return v_null(obj) || v_unknown(obj) ? NULL : sj_get_n(obj, name->str, name->len);
}

/* ---- AssertPlanValid ------------------------------------------------------ */

static void plan_block(struct ck *k, struct block b, const sj_node *prior, const sj_node *config,
                       const sj_node *planned, int depth);

static void plan_attrs(struct ck *k, const sj_node *attrs, const sj_node *prior,
                       const sj_node *config, const sj_node *planned, int depth);

static void plan_object(struct ck *k, struct ty t, const sj_node *prior, const sj_node *config,
                        const sj_node *planned, int depth)
{
    if (v_null(planned) && !v_null(config)) {
        add(k, config, planned, "planned null for a configured nested attribute");
        return;
    }
    if (v_null(config) && !v_null(planned)) {
        add(k, config, planned,
            "planned a value for a nested attribute the configuration leaves null");
        return;
    }
    if (!v_null(config) && v_unknown(planned)) {
        add(k, config, planned,
            "planned unknown for a configured nested attribute: only values left null in the "
            "configuration may be unknown");
        return;
    }
    if (v_null(planned) || v_unknown(config))
        return;
    if (depth <= 0 || v_sensitive(planned) || v_sensitive(config))
        return;
    switch (t.nesting) {
    case 'S':
        plan_attrs(k, t.attrs, prior, config, planned, depth - 1);
        break;
    case 'L':
        if (count(planned) != count(config)) {
            add(k, config, planned, "planned %zu elements where the configuration has %zu",
                count(planned), count(config));
            return;
        }
        for (size_t i = 0; i < count(planned); i++) {
            size_t mark = push_index(k, i);
            plan_attrs(k, t.attrs, nth(prior, i), nth(config, i), nth(planned, i), depth - 1);
            pop(k, mark);
        }
        break;
    case 'M':
        if (planned->kind != SJ_OBJECT || config->kind != SJ_OBJECT)
            return;
        if (count(planned) != count(config)) {
            add(k, config, planned, "planned %zu elements where the configuration has %zu",
                count(planned), count(config));
            return;
        }
        for (const sj_node *p = planned->child; p; p = p->next) {
            const sj_node *c = sj_get_n(config, p->key, p->key_len);
            if (!c) {
                key_finding(k, NULL, p, p, "is planned, the configuration does not have it");
                continue;
            }
            size_t mark = push_key(k, p->key, p->key_len);
            plan_attrs(k, t.attrs, sj_get_n(prior, p->key, p->key_len), c, p, depth - 1);
            pop(k, mark);
        }
        for (const sj_node *c = config->child; c; c = c->next)
            if (!sj_get_n(planned, c->key, c->key_len))
                key_finding(k, c, NULL, c, "is configured, the plan does not have it");
        break;
    case 'T':
        if (!v_unknown(planned) && !v_unknown(config) && count(planned) != count(config))
            add(k, config, planned, "planned %zu elements where the configuration has %zu",
                count(planned), count(config));
        break;
    }
}

static void plan_value(struct ck *k, const sj_node *a, const sj_node *prior, const sj_node *config,
                       const sj_node *planned, int depth)
{
    struct ty t = ty_of_attr(a);
    int computed = flag(a, "computed"), optional = flag(a, "optional");
    int sensitive = flag(a, "sensitive"), write_only = flag(a, "write_only");
    if (veq(t, planned, config, 1))
        return;
    if (!v_null(prior) && !v_null(config) && veq(t, planned, prior, 1))
        return;
    if (computed && !optional)
        return;
    if (v_null(config) && computed)
        return;
    if (v_null(config) && !v_null(planned)) {
        if (sensitive)
            add(k, config, planned,
                "planned a sensitive value for an attribute that is not computed and left null in "
                "the configuration");
        else
            add(k, config, planned,
                "planned a value for an attribute that is not computed and left null in the "
                "configuration");
        return;
    }
    if (t.attrs) {
        plan_object(k, t, prior, config, planned, depth);
        return;
    }
    /* Write-only attributes are always planned null (newer OpenTofu and
     * Terraform accept it; write-only-null below wants it). */
    if (!v_null(config) && v_null(planned) && write_only)
        return;
    if (v_null(prior))
        add(k, config, planned,
            "planned value differs from the configured value%s: only computed attributes left null "
            "in the configuration may be planned freely",
            v_unknown(planned) ? " (planned unknown for a configured value)" : "");
    else
        add(k, config, planned,
            "planned value differs from both the configured value and the prior value%s",
            v_unknown(planned) ? " (planned unknown for a configured value)" : "");
}

static void plan_attrs(struct ck *k, const sj_node *attrs, const sj_node *prior,
                       const sj_node *config, const sj_node *planned, int depth)
{
    for (const sj_node *a = attrs ? attrs->child : NULL; a && !k->err; a = a->next) {
        const sj_node *name = sj_get(a, "name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = push_attr(k, name->str, name->len);
        plan_value(k, a, get_attr(prior, name), get_attr(config, name), get_attr(planned, name),
                   depth);
        pop(k, mark);
    }
}

static void plan_nested_block(struct ck *k, const sj_node *bt, const sj_node *prior,
                              const sj_node *config, const sj_node *planned, int depth)
{
    struct block sub = block_of(sj_get(bt, "block"));
    char nesting = nesting_char(sj_get(bt, "nesting"));
    planned = block_unwrap(nesting, planned);
    config = block_unwrap(nesting, config);
    prior = block_unwrap(nesting, prior);
    if (veq((struct ty){NULL, NULL, 0}, planned, config, 0))
        return;
    if (v_unknown(config)) {
        add(k, config, planned,
            "planned a value for a block whose configuration is unknown "
            "(a dynamic block over an unknown collection)");
        return;
    }
    if (v_unknown(planned)) {
        add(k, config, planned,
            "planned a nested block as unknown: plan its attributes unknown instead");
        return;
    }
    switch (nesting) {
    case 'S':
        plan_block(k, sub, prior, config, planned, depth - 1);
        break;
    case 'L':
        if (v_null(planned)) {
            add(k, config, planned, "planned null for a list of blocks: plan [] for no blocks");
            return;
        }
        if (count(planned) != count(config)) {
            add(k, config, planned, "planned %zu blocks where the configuration has %zu",
                count(planned), count(config));
            return;
        }
        for (size_t i = 0; i < count(planned); i++) {
            const sj_node *pe = nth(planned, i);
            size_t mark = push_index(k, i);
            if (v_unknown(pe))
                add(k, NULL, pe,
                    "planned a nested block as unknown: plan its attributes unknown "
                    "instead");
            else
                plan_block(k, sub, nth(prior, i), nth(config, i), pe, depth - 1);
            pop(k, mark);
        }
        break;
    case 'M':
        if (v_null(planned)) {
            add(k, config, planned, "planned null for a map of blocks: plan {} for no blocks");
            return;
        }
        if (planned->kind != SJ_OBJECT)
            return;
        if (count(planned) != count(config)) {
            add(k, config, planned, "planned %zu blocks where the configuration has %zu",
                count(planned), count(config));
            return;
        }
        for (const sj_node *p = planned->child; p; p = p->next) {
            const sj_node *c = sj_get_n(config, p->key, p->key_len);
            if (!c) {
                key_finding(k, NULL, p, p,
                            "is a planned block key the configuration does not have");
                continue;
            }
            size_t mark = push_key(k, p->key, p->key_len);
            if (v_unknown(p))
                add(k, NULL, p,
                    "planned a nested block as unknown: plan its attributes unknown "
                    "instead");
            else
                plan_block(k, sub, sj_get_n(prior, p->key, p->key_len), c, p, depth - 1);
            pop(k, mark);
        }
        for (const sj_node *c = config && config->kind == SJ_OBJECT ? config->child : NULL; c;
             c = c->next)
            if (!sj_get_n(planned, c->key, c->key_len))
                key_finding(k, c, NULL, c, "is a configured block key the plan does not have");
        break;
    case 'T':
        if (v_null(planned)) {
            add(k, config, planned, "planned null for a set of blocks: plan [] for no blocks");
            return;
        }
        for (const sj_node *p = planned->kind == SJ_ARRAY ? planned->child : NULL; p; p = p->next)
            if (v_unknown(p)) {
                add(k, NULL, p,
                    "planned a nested block as unknown: plan its attributes unknown "
                    "instead");
                break;
            }
        break;
    }
}

static void plan_block(struct ck *k, struct block b, const sj_node *prior, const sj_node *config,
                       const sj_node *planned, int depth)
{
    if (v_null(planned) && !v_null(config)) {
        add(k, config, planned, "planned null where the configuration wants an object");
        return;
    }
    if (v_null(config) && !v_null(planned)) {
        add(k, config, planned, "planned an object where the configuration wants none");
        return;
    }
    if (v_null(planned) || depth <= 0 || k->err)
        return;
    plan_attrs(k, b.attrs, prior, config, planned, depth);
    for (const sj_node *bt = b.blocks ? b.blocks->child : NULL; bt && !k->err; bt = bt->next) {
        const sj_node *name = sj_get(bt, "type_name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = push_attr(k, name->str, name->len);
        plan_nested_block(k, bt, get_attr(prior, name), get_attr(config, name),
                          get_attr(planned, name), depth);
        pop(k, mark);
    }
}

/* ---- AssertObjectCompatible ------------------------------------------------ */

static int num_cmp(const sj_node *a, const sj_node *b)
{
    double x = strtod(a->str, NULL), y = strtod(b->str, NULL);
    return x < y ? -1 : x > y;
}

/* Does a known value satisfy an unknown's refinements? */
static int refinement_ok(const sj_node *unknown, const sj_node *v)
{
    const sj_node *r = sj_get(unknown, "$unknown"), *x;
    if (!r || r->kind != SJ_OBJECT || v_unknown(v) || v_sensitive(v))
        return 1;
    if (v_null(v))
        return !((x = sj_get(r, "null")) && x->kind == SJ_BOOL && !x->boolean);
    if ((x = sj_get(r, "prefix")) && x->kind == SJ_STRING && v->kind == SJ_STRING &&
        (v->len < x->len || memcmp(v->str, x->str, x->len) != 0))
        return 0;
    if (v->kind == SJ_NUMBER) {
        const char *bounds[2] = {"lower", "upper"};
        for (int i = 0; i < 2; i++) {
            const sj_node *bnd = sj_get(r, bounds[i]);
            const sj_node *num = nth(bnd, 0), *inc = nth(bnd, 1);
            if (!num || num->kind != SJ_NUMBER)
                continue;
            int c = num_cmp(v, num), inclusive = inc && inc->kind == SJ_BOOL && inc->boolean;
            if (i == 0 ? (c < 0 || (c == 0 && !inclusive)) : (c > 0 || (c == 0 && !inclusive)))
                return 0;
        }
    }
    if (v->kind == SJ_ARRAY || v->kind == SJ_OBJECT) {
        const sj_node *mn = sj_get(r, "min_len"), *mx = sj_get(r, "max_len");
        double n = (double)v->n;
        if (mn && mn->kind == SJ_NUMBER && n < strtod(mn->str, NULL))
            return 0;
        if (mx && mx->kind == SJ_NUMBER && n > strtod(mx->str, NULL))
            return 0;
    }
    return 1;
}

static void compat_value(struct ck *k, struct ty t, const sj_node *planned, const sj_node *actual,
                         int depth);

/* Sets: every planned element must correlate with some actual one and
 * back, and a set may shrink (equal elements coalesce) but not grow. */
static void compat_set(struct ck *k, const sj_node *planned, const sj_node *actual,
                       int (*ok)(struct ck *, const void *, const sj_node *, const sj_node *, int),
                       const void *elem, int depth, const char *grew)
{
    if (planned->kind != SJ_ARRAY || actual->kind != SJ_ARRAY)
        return;
    int big = (size_t)planned->n * actual->n > CHECK_MAX_SET_PAIRS, lacking = 0;
    for (const sj_node *p = planned->child; p && !k->err; p = p->next) {
        int found = 0;
        for (const sj_node *a = actual->child; a && !found; a = a->next)
            found = big ? geq(p, a) : ok(k, elem, p, a, depth);
        if (!found) {
            add(k, p, NULL, "a planned set element has no counterpart in the result");
            lacking = 1;
        }
    }
    for (const sj_node *a = actual->child; a && !lacking && !k->err; a = a->next) {
        int found = 0;
        for (const sj_node *p = planned->child; p && !found; p = p->next)
            found = big ? geq(p, a) : ok(k, elem, p, a, depth);
        if (!found)
            add(k, NULL, a, "a set element in the result has no counterpart in the plan");
    }
    if (planned->n < actual->n)
        add(k, planned, actual, "%s from %zu to %zu elements: a set may only shrink", grew,
            planned->n, actual->n);
}

/* Correlation probes run the same checks into a scratch list. */
static int value_ok(struct ck *k, const void *elem, const sj_node *p, const sj_node *a, int depth)
{
    analysis_findings scratch = ANALYSIS_FINDINGS_INIT;
    struct ck probe = *k;
    probe.out = &scratch;
    probe.path = (tftap_buf)TFTAP_BUF_INIT;
    compat_value(&probe, *(const struct ty *)elem, p, a, depth - 1);
    int ok = scratch.n == 0 && !probe.err;
    if (probe.err)
        k->err = probe.err;
    analysis_findings_done(&scratch);
    tftap_buf_done(&probe.path);
    return ok;
}

static void compat_value(struct ck *k, struct ty t, const sj_node *planned, const sj_node *actual,
                         int depth)
{
    enum tk kind = ty_kind(t);
    if (depth <= 0 || k->err)
        return;
    if (kind == TK_DYN) {
        const sj_node *tp, *ta, *vp, *va;
        int wp = dyn_unwrap(planned, &tp, &vp), wa = dyn_unwrap(actual, &ta, &va);
        if (!wp && v_unknown(planned))
            return; /* an unknown of unknown type: anything goes */
        if (wp && wa && !geq(tp, ta)) {
            add(k, tp, ta, "the result's type differs from the planned type");
            return;
        }
        t = (struct ty){wp ? tp : ta, NULL, 0};
        if (!wp && !wa)
            t.type = NULL;
        planned = vp;
        actual = va;
        kind = ty_kind(t);
    }
    if (v_unknown(planned)) {
        if (!refinement_ok(planned, actual))
            add(k, planned, actual,
                "the result does not satisfy what the plan promised about this unknown value "
                "(its refinements: prefix, bounds, length or not null)");
        return;
    }
    if (v_null(actual)) {
        if (!v_null(planned))
            add(k, planned, actual, "planned a known value, the result is null");
        return;
    }
    if (v_null(planned)) {
        add(k, planned, actual, "planned null, the result has a value");
        return;
    }
    if (v_unknown(actual)) {
        add(k, planned, actual, "planned a known value, the result is unknown");
        return;
    }
    if (v_sensitive(planned) || v_sensitive(actual)) {
        if (v_sensitive(planned) && v_sensitive(actual) && !geq(planned, actual))
            add(k, planned, actual, "planned a known value, the result differs");
        return;
    }
    switch (kind) {
    case TK_LIST:
    case TK_TUPLE:
        if (planned->kind != SJ_ARRAY || actual->kind != SJ_ARRAY)
            break;
        /* Like core, elements that vanish or appear are reported at the
         * collection's path. */
        for (size_t i = 0; i < planned->n; i++) {
            if (i >= actual->n) {
                add(k, nth(planned, i), NULL, "planned element %zu vanished from the result", i);
                continue;
            }
            size_t mark = push_index(k, i);
            compat_value(k, kind == TK_LIST ? ty_elem(t) : ty_tuple(t, i), nth(planned, i),
                         nth(actual, i), depth - 1);
            pop(k, mark);
        }
        for (size_t i = planned->n; i < actual->n; i++)
            add(k, NULL, nth(actual, i),
                "element %zu appeared in the result, the plan did not have it", i);
        return;
    case TK_MAP:
    case TK_OBJECT:
        if (planned->kind != SJ_OBJECT || actual->kind != SJ_OBJECT)
            break;
        for (const sj_node *p = planned->child; p; p = p->next) {
            const sj_node *a = sj_get_n(actual, p->key, p->key_len);
            if (!a) {
                key_finding(k, p, NULL, p, "vanished from the result");
                continue;
            }
            size_t mark =
                kind == TK_MAP ? push_key(k, p->key, p->key_len) : push_attr(k, p->key, p->key_len);
            compat_value(k, kind == TK_MAP ? ty_elem(t) : ty_member(t, p->key, p->key_len), p, a,
                         depth - 1);
            pop(k, mark);
        }
        for (const sj_node *a = actual->child; a; a = a->next)
            if (!sj_get_n(planned, a->key, a->key_len))
                key_finding(k, NULL, a, a, "appeared in the result, the plan did not have it");
        return;
    case TK_SET: {
        struct ty e = ty_elem(t);
        compat_set(k, planned, actual, value_ok, &e, depth, "the set grew");
        return;
    }
    default:
        break;
    }
    if (!geq(planned, actual))
        add(k, planned, actual, "planned a known value, the result differs");
}

static void compat_block(struct ck *k, struct block b, const sj_node *planned,
                         const sj_node *actual, int depth);

static int block_ok(struct ck *k, const void *elem, const sj_node *p, const sj_node *a, int depth)
{
    analysis_findings scratch = ANALYSIS_FINDINGS_INIT;
    struct ck probe = *k;
    probe.out = &scratch;
    probe.path = (tftap_buf)TFTAP_BUF_INIT;
    compat_block(&probe, *(const struct block *)elem, p, a, depth - 1);
    int ok = scratch.n == 0 && !probe.err;
    if (probe.err)
        k->err = probe.err;
    analysis_findings_done(&scratch);
    tftap_buf_done(&probe.path);
    return ok;
}

static void compat_nested_block(struct ck *k, const sj_node *bt, const sj_node *planned,
                                const sj_node *actual, int depth)
{
    struct block sub = block_of(sj_get(bt, "block"));
    char nesting = nesting_char(sj_get(bt, "nesting"));
    planned = block_unwrap(nesting, planned);
    actual = block_unwrap(nesting, actual);
    switch (nesting) {
    case 'S':
        if (v_unknown(planned))
            return;
        compat_block(k, sub, planned, actual, depth - 1);
        return;
    case 'L':
    case 'M':
        if (v_unknown(planned) || v_unknown(actual) || v_null(planned) || v_null(actual))
            return;
        if (planned->kind != actual->kind || count(planned) != count(actual)) {
            add(k, planned, actual, "planned %zu blocks, the result has %zu", count(planned),
                count(actual));
            return;
        }
        if (nesting == 'L') {
            size_t i = 0;
            for (const sj_node *p = planned->child, *a = actual->child; p && a;
                 p = p->next, a = a->next, i++) {
                size_t mark = push_index(k, i);
                compat_block(k, sub, p, a, depth - 1);
                pop(k, mark);
            }
        } else {
            for (const sj_node *p = planned->child; p; p = p->next) {
                const sj_node *a = sj_get_n(actual, p->key, p->key_len);
                if (!a)
                    continue;
                size_t mark = push_key(k, p->key, p->key_len);
                compat_block(k, sub, p, a, depth - 1);
                pop(k, mark);
            }
        }
        return;
    case 'T':
        if (v_unknown(planned) || v_unknown(actual) || v_null(planned) || v_null(actual))
            return;
        compat_set(k, planned, actual, block_ok, &sub, depth, "the set of blocks grew");
        return;
    }
}

static void compat_attr(struct ck *k, const sj_node *a, const sj_node *planned,
                        const sj_node *actual, int depth)
{
    size_t mark = k->out->n;
    compat_value(k, ty_of_attr(a), planned, actual, depth);
    if (flag(a, "sensitive") && k->out->n > mark) {
        /* Like core, one vague finding for a sensitive attribute. */
        drop_since(k, mark);
        add(k, NULL, NULL, "planned and resulting values of a sensitive attribute differ");
    }
}

static void compat_block(struct ck *k, struct block b, const sj_node *planned,
                         const sj_node *actual, int depth)
{
    if (v_null(planned) && !v_null(actual)) {
        add(k, planned, actual, "planned no object, the result has one");
        return;
    }
    if (v_null(actual) && !v_null(planned)) {
        add(k, planned, actual, "planned an object, the result is null");
        return;
    }
    if (v_null(planned) || depth <= 0 || k->err)
        return;
    for (const sj_node *a = b.attrs ? b.attrs->child : NULL; a && !k->err; a = a->next) {
        const sj_node *name = sj_get(a, "name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = push_attr(k, name->str, name->len);
        compat_attr(k, a, get_attr(planned, name), get_attr(actual, name), depth - 1);
        pop(k, mark);
    }
    for (const sj_node *bt = b.blocks ? b.blocks->child : NULL; bt && !k->err; bt = bt->next) {
        const sj_node *name = sj_get(bt, "type_name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = push_attr(k, name->str, name->len);
        compat_nested_block(k, bt, get_attr(planned, name), get_attr(actual, name), depth - 1);
        pop(k, mark);
    }
}

/* ---- wholly known, write-only --------------------------------------------- */

static void find_unknowns(struct ck *k, const sj_node *v, int depth)
{
    if (!v || depth <= 0 || k->err)
        return;
    if (v_unknown(v)) {
        add(k, NULL, v, "the result still holds an unknown value: every value must be known");
        return;
    }
    if (v_sensitive(v))
        return;
    size_t i = 0;
    for (const sj_node *c = v->child; c; c = c->next, i++) {
        size_t mark = v->kind == SJ_OBJECT ? push_attr(k, c->key, c->key_len) : push_index(k, i);
        find_unknowns(k, c, depth - 1);
        pop(k, mark);
    }
}

/* Terraform: a write-only attribute is never kept: planned and stored null. */
static void find_write_only(struct ck *k, struct block b, const sj_node *v, int depth)
{
    if (v_null(v) || v_unknown(v) || depth <= 0 || k->err)
        return;
    for (const sj_node *a = b.attrs ? b.attrs->child : NULL; a; a = a->next) {
        const sj_node *name = sj_get(a, "name"), *x;
        if (!name || name->kind != SJ_STRING || !flag(a, "write_only"))
            continue;
        if (!v_null(x = get_attr(v, name))) {
            size_t mark = push_attr(k, name->str, name->len);
            add(k, NULL, x, "a write-only attribute must be null in plans and results");
            pop(k, mark);
        }
    }
    for (const sj_node *bt = b.blocks ? b.blocks->child : NULL; bt; bt = bt->next) {
        const sj_node *name = sj_get(bt, "type_name"), *x;
        if (!name || name->kind != SJ_STRING || v_null(x = get_attr(v, name)))
            continue;
        struct block sub = block_of(sj_get(bt, "block"));
        char nesting = nesting_char(sj_get(bt, "nesting"));
        x = block_unwrap(nesting, x);
        size_t mark = push_attr(k, name->str, name->len);
        if (nesting == 'S') {
            find_write_only(k, sub, x, depth - 1);
        } else if (x->kind == SJ_ARRAY) {
            size_t i = 0;
            for (const sj_node *e = x->child; e; e = e->next, i++) {
                size_t m2 = push_index(k, i);
                find_write_only(k, sub, e, depth - 1);
                pop(k, m2);
            }
        } else if (x->kind == SJ_OBJECT) {
            for (const sj_node *e = x->child; e; e = e->next) {
                size_t m2 = push_key(k, e->key, e->key_len);
                find_write_only(k, sub, e, depth - 1);
                pop(k, m2);
            }
        }
        pop(k, mark);
    }
}

/* ---- requires_replace paths ------------------------------------------------ */

/* Does the path (AttributePath steps) lead to a value in v? */
static int path_exists(const sj_node *v, const sj_node *steps)
{
    for (const sj_node *st = steps ? steps->child : NULL; st; st = st->next) {
        const sj_node *x, *ty, *inner;
        if (v_null(v) || v_unknown(v) || v_sensitive(v))
            return 0;
        if (((x = sj_get(st, "attribute_name")) && x->kind == SJ_STRING) ||
            ((x = sj_get(st, "element_key_string")) && x->kind == SJ_STRING)) {
            /* A member of the value itself, else of a dynamic value's. */
            const sj_node *m = v->kind == SJ_OBJECT ? sj_get_n(v, x->str, x->len) : NULL;
            if (!m && dyn_unwrap(v, &ty, &inner) && inner->kind == SJ_OBJECT)
                m = sj_get_n(inner, x->str, x->len);
            if (!(v = m))
                return 0;
        } else if ((x = sj_get(st, "element_key_int")) && x->kind == SJ_NUMBER) {
            dyn_unwrap(v, &ty, &v);
            char *end;
            long long i = strtoll(x->str, &end, 10);
            if (*end || i < 0 || v->kind != SJ_ARRAY || !(v = nth(v, (size_t)i)))
                return 0;
        } else {
            return 1; /* a step of a kind newer than us: do not judge */
        }
    }
    return 1;
}

/* ---- per call ------------------------------------------------------------- */

struct docs {
    sj_doc *d[8];
};

static void docs_free(struct docs *ds)
{
    for (size_t i = 0; i < sizeof ds->d / sizeof ds->d[0]; i++)
        sj_free(ds->d[i]);
}

/* Parse an optional JSON text; absent text reads as JSON null (NULL node). */
static int parse(struct docs *ds, size_t slot, const char *text, const sj_node **out)
{
    *out = NULL;
    if (!text)
        return 0;
    int rc = sj_parse(text, strlen(text), CHECK_JSON_MAX_DEPTH, &ds->d[slot]);
    if (rc == 0)
        *out = sj_root(ds->d[slot]);
    return rc;
}

static int ck_begin(struct ck *k, const analysis_call *c, analysis_findings *out)
{
    memset(k, 0, sizeof *k);
    k->c = c;
    k->out = out;
    k->path = (tftap_buf)TFTAP_BUF_INIT;
    tftap_buf_puts(&k->path, "");
    return 0;
}

static void ck_rule(struct ck *k, const char *rule, enum analysis_verdict v)
{
    k->rule = rule;
    k->verdict = v;
    pop(k, 0);
}

static int is(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

int analysis_check_call(const analysis_call *c, analysis_findings *out)
{
    struct docs ds = {{0}};
    const sj_node *schema, *prior, *config, *planned, *nw, *rr, *identity;
    int rc = 0;
    if (!c->block_schema) {
        out->unchecked++;
        return 0;
    }
    if (parse(&ds, 0, c->block_schema, &schema) || parse(&ds, 1, c->prior, &prior) ||
        parse(&ds, 2, c->config, &config) || parse(&ds, 3, c->planned, &planned) ||
        parse(&ds, 4, c->new_state, &nw) || parse(&ds, 5, c->requires_replace, &rr) ||
        parse(&ds, 6, c->identity, &identity) || !schema || schema->kind != SJ_OBJECT) {
        docs_free(&ds);
        out->unchecked++;
        return TFTAP_EDECODE;
    }
    if (v_undecoded(prior) || v_undecoded(config) || sj_get(schema, "$undecoded")) {
        docs_free(&ds);
        out->unchecked++;
        return 0;
    }
    struct ck k;
    ck_begin(&k, c, out);
    struct block b = block_of(schema);
    enum analysis_verdict legacy = c->legacy ? ANALYSIS_TOLERATES : ANALYSIS_REJECTS;
    const int depth = CHECK_JSON_MAX_DEPTH;

    if (is(c->rpc, "PlanResourceChange") && !c->has_error) {
        if (v_undecoded(planned)) {
            ck_rule(&k, "plan-conforms", ANALYSIS_REJECTS);
            if (sj_get(planned, "$error"))
                add(&k, NULL, planned, "the planned state does not conform to the schema");
        } else if (v_null(config)) {
            ck_rule(&k, "plan-destroy-null", ANALYSIS_REJECTS);
            if (!v_null(planned))
                add(&k, NULL, planned, "a destroy plan must plan null");
        } else {
            ck_rule(&k, "plan-valid", legacy);
            plan_block(&k, b, prior, config, planned, depth);
            ck_rule(&k, "plan-requires-replace", ANALYSIS_REJECTS);
            for (const sj_node *p = rr && rr->kind == SJ_ARRAY ? rr->child : NULL;
                 p && !v_null(prior); p = p->next) {
                const sj_node *steps = sj_get(p, "steps"), *ps = sj_get(p, "path");
                if (!path_exists(prior, steps) && !path_exists(planned, steps)) {
                    tftap_buf_puts(&k.path, ps && ps->kind == SJ_STRING ? ps->str : "");
                    add(&k, NULL, NULL,
                        "requires_replace names an attribute path that exists in neither the "
                        "prior nor the planned state");
                    pop(&k, 0);
                }
            }
            ck_rule(&k, "write-only-null", ANALYSIS_REJECTS);
            find_write_only(&k, b, planned, depth);
        }
    } else if (is(c->rpc, "ApplyResourceChange")) {
        if (v_undecoded(nw)) {
            ck_rule(&k, "apply-conforms", ANALYSIS_REJECTS);
            if (sj_get(nw, "$error"))
                add(&k, NULL, nw, "the new state does not conform to the schema");
        } else {
            ck_rule(&k, "apply-known", ANALYSIS_REJECTS);
            size_t before = out->n;
            find_unknowns(&k, nw, depth);
            int unknowns = out->n > before;
            if (!c->has_error && !unknowns && !v_undecoded(planned)) {
                if (v_null(planned)) {
                    ck_rule(&k, "apply-delete-null", ANALYSIS_REJECTS);
                    if (!v_null(nw))
                        add(&k, NULL, nw, "destroying must return a null new state");
                } else {
                    ck_rule(&k, "apply-compatible", legacy);
                    compat_block(&k, b, planned, nw, depth);
                    /* Tolerated incompatibilities are only logged; a null
                     * result is then an error of its own. */
                    if (c->legacy && v_null(nw)) {
                        ck_rule(&k, "apply-not-null", ANALYSIS_REJECTS);
                        add(&k, planned, nw, "only destroying may return a null new state");
                    }
                    ck_rule(&k, "write-only-null", ANALYSIS_REJECTS);
                    find_write_only(&k, b, nw, depth);
                    ck_rule(&k, "identity-known", ANALYSIS_REJECTS);
                    if (!v_undecoded(identity))
                        find_unknowns(&k, identity, depth);
                }
            }
        }
    } else if (is(c->rpc, "ReadResource") && !c->has_error) {
        if (v_undecoded(nw)) {
            ck_rule(&k, "read-conforms", ANALYSIS_REJECTS);
            if (sj_get(nw, "$error"))
                add(&k, NULL, nw, "the refreshed state does not conform to the schema");
        } else if (!v_undecoded(prior)) {
            ck_rule(&k, "identity-known", ANALYSIS_REJECTS);
            if (!v_undecoded(identity))
                find_unknowns(&k, identity, depth);
            ck_rule(&k, "read-drift", ANALYSIS_DRIFT);
            if (v_null(nw) && !v_null(prior))
                add(&k, prior, nw, "the object is gone (refresh returned null)");
            else
                compat_block(&k, b, prior, nw, depth);
        }
    } else if (is(c->rpc, "ReadDataSource") && !c->has_error) {
        if (v_undecoded(nw)) {
            ck_rule(&k, "data-conforms", ANALYSIS_REJECTS);
            if (sj_get(nw, "$error"))
                add(&k, NULL, nw, "the data source's state does not conform to the schema");
        } else if (v_null(nw)) {
            ck_rule(&k, "data-not-null", ANALYSIS_REJECTS);
            add(&k, NULL, nw, "a data source read must return an object, not null");
        } else {
            ck_rule(&k, "data-known", ANALYSIS_REJECTS);
            find_unknowns(&k, nw, depth);
        }
    }
    rc = k.err;
    tftap_buf_done(&k.path);
    docs_free(&ds);
    return rc;
}

/* Replace each "from" in *msg by "to". 0 or TFTAP_ENOMEM. */
static int reword(char **msg, const char *from, const char *to)
{
    tftap_buf b = TFTAP_BUF_INIT;
    const char *p = *msg, *q;
    size_t fl = strlen(from);
    while ((q = strstr(p, from))) {
        tftap_buf_append(&b, p, (size_t)(q - p));
        tftap_buf_puts(&b, to);
        p = q + fl;
    }
    tftap_buf_puts(&b, p);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return TFTAP_ENOMEM;
    }
    free(*msg);
    *msg = tftap_buf_take(&b, NULL);
    return *msg ? 0 : TFTAP_ENOMEM;
}

int analysis_check_final_plan(const analysis_call *first, const analysis_call *final,
                              analysis_findings *out)
{
    struct docs ds = {{0}};
    const sj_node *schema, *p1, *p2;
    if (!final->block_schema) {
        out->unchecked++;
        return 0;
    }
    if (parse(&ds, 0, final->block_schema, &schema) || parse(&ds, 1, first->planned, &p1) ||
        parse(&ds, 2, final->planned, &p2) || !schema || schema->kind != SJ_OBJECT) {
        docs_free(&ds);
        out->unchecked++;
        return TFTAP_EDECODE;
    }
    int rc = 0;
    if (!v_undecoded(p1) && !v_undecoded(p2) && !v_null(p1) && !v_null(p2)) {
        struct ck k;
        ck_begin(&k, final, out);
        k.other_call_id = first->call_id;
        ck_rule(&k, "final-plan", ANALYSIS_REJECTS);
        size_t mark = out->n;
        compat_block(&k, block_of(schema), p1, p2, CHECK_JSON_MAX_DEPTH);
        /* The messages speak of the plan and the result; here the result
         * is the plan made during apply. */
        for (size_t i = mark; i < out->n && !k.err; i++)
            if (reword(&out->v[i].message, "the result", "the final plan"))
                k.err = TFTAP_ENOMEM;
        rc = k.err;
        tftap_buf_done(&k.path);
    }
    docs_free(&ds);
    return rc;
}
