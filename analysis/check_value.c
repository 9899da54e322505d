/* Contract checks: the values, cty types and schema blocks the rules read
 * (a value as decoded JSON, its type from the schema), and cty equality. */
#include <string.h>

#include "analysis/check_int.h"

/* ---- values -------------------------------------------------------------- */

int ck_v_null(const sj_node *v)
{
    return !v || v->kind == SJ_NULL;
}

int ck_v_unknown(const sj_node *v)
{
    return v && sj_is_unknown(v);
}

int ck_v_sensitive(const sj_node *v)
{
    return v && sj_is_sensitive(v);
}

/* A value as a whole that decoding could not produce. */
int ck_v_undecoded(const sj_node *v)
{
    return v && v->kind == SJ_OBJECT && (sj_get(v, "$undecoded") || sj_get(v, "$error"));
}

size_t ck_count(const sj_node *v)
{
    return v && (v->kind == SJ_ARRAY || v->kind == SJ_OBJECT) ? v->n : 0;
}

/* A `dynamic` value travels as {"type": T, "value": V}. */
int ck_dyn_unwrap(const sj_node *v, const sj_node **ty, const sj_node **val)
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
const sj_node *ck_block_unwrap(char nesting, const sj_node *v)
{
    const sj_node *t, *x;
    if (!(nesting == 'L' || nesting == 'M') || !ck_dyn_unwrap(v, &t, &x))
        return v;
    if (nesting == 'M' && t->kind != SJ_STRING && t->kind != SJ_ARRAY)
        return v; /* a map of blocks keyed "type" and "value" */
    return x;
}

/* ---- types: a cty type JSON, or protocol-6 nested attributes -------------- */

static int str_is(const sj_node *n, const char *s)
{
    return n && n->kind == SJ_STRING && strcmp(n->str, s) == 0;
}

char ck_nesting_char(const sj_node *n)
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

struct ty ck_ty_of_attr(const sj_node *a)
{
    struct ty t = {NULL, NULL, 0};
    const sj_node *ty = sj_get(a, "type"), *nt = sj_get(a, "nested_type");
    if (nt && nt->kind == SJ_OBJECT) {
        const sj_node *at = sj_get(nt, "attributes");
        t.nesting = ck_nesting_char(sj_get(nt, "nesting"));
        if (at && at->kind == SJ_ARRAY && t.nesting)
            t.attrs = at;
    }
    if (!t.attrs && ty && ty->kind != SJ_NULL)
        t.type = ty;
    return t;
}

enum tk ck_ty_kind(struct ty t)
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

struct ty ck_ty_elem(struct ty t)
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

struct ty ck_ty_member(struct ty t, const char *name, size_t n)
{
    struct ty m = {NULL, NULL, 0};
    if (t.attrs) {
        const sj_node *a = t.nesting == 'S' ? attr_named(t.attrs, name, n) : NULL;
        if (a)
            m = ck_ty_of_attr(a);
    } else if (ck_ty_kind(t) == TK_OBJECT && t.type->n >= 2) {
        m.type = sj_get_n(t.type->child->next, name, n);
    }
    return m;
}

struct ty ck_ty_tuple(struct ty t, size_t i)
{
    struct ty e = {NULL, NULL, 0};
    if (ck_ty_kind(t) == TK_TUPLE && t.type->n >= 2)
        e.type = sj_at(t.type->child->next, i);
    return e;
}

/* ---- equality (cty RawEquals, optionally ignoring refinements) ------------ */

static int geq_members(const sj_node *a, const sj_node *b)
{
    for (const sj_node *x = a->child; x; x = x->next) {
        const sj_node *y = sj_get_n(b, x->key, x->key_len);
        if (!y || !ck_geq(x, y))
            return 0;
    }
    return 1;
}

/* Generic: arrays in order, objects in any member order. */
int ck_geq(const sj_node *a, const sj_node *b)
{
    if (ck_v_null(a) || ck_v_null(b))
        return ck_v_null(a) && ck_v_null(b);
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case SJ_ARRAY:
        if (a->n != b->n)
            return 0;
        for (const sj_node *x = a->child, *y = b->child; x && y; x = x->next, y = y->next)
            if (!ck_geq(x, y))
                return 0;
        return 1;
    case SJ_OBJECT:
        return a->n == b->n && geq_members(a, b);
    default:
        return sj_equal(a, b);
    }
}

static int set_eq(struct ty e, const sj_node *a, const sj_node *b, int unrefined)
{
    if (a->n != b->n)
        return 0;
    int big = (size_t)a->n * b->n > CHECK_MAX_SET_PAIRS;
    for (const sj_node *x = a->child; x; x = x->next) {
        int found = 0;
        for (const sj_node *y = b->child; y && !found; y = y->next)
            found = big ? ck_geq(x, y) : ck_veq(e, x, y, unrefined);
        if (!found)
            return 0;
    }
    for (const sj_node *y = b->child; y; y = y->next) {
        int found = 0;
        for (const sj_node *x = a->child; x && !found; x = x->next)
            found = big ? ck_geq(x, y) : ck_veq(e, x, y, unrefined);
        if (!found)
            return 0;
    }
    return 1;
}

int ck_veq(struct ty t, const sj_node *a, const sj_node *b, int unrefined)
{
    if (ck_v_null(a) || ck_v_null(b))
        return ck_v_null(a) && ck_v_null(b);
    if (ck_v_unknown(a) || ck_v_unknown(b)) {
        if (!ck_v_unknown(a) || !ck_v_unknown(b))
            return 0;
        return unrefined || ck_geq(a, b);
    }
    if (ck_v_sensitive(a) || ck_v_sensitive(b))
        return ck_v_sensitive(a) && ck_v_sensitive(b) && ck_geq(a, b);
    enum tk k = ck_ty_kind(t);
    switch (k) {
    case TK_DYN: {
        const sj_node *ta, *va, *tb, *vb;
        int wa = ck_dyn_unwrap(a, &ta, &va), wb = ck_dyn_unwrap(b, &tb, &vb);
        if (wa != wb || (wa && !ck_geq(ta, tb)))
            return 0;
        if (!wa)
            return ck_geq(a, b);
        struct ty inner = {ta, NULL, 0};
        return ck_veq(inner, va, vb, unrefined);
    }
    case TK_LIST:
    case TK_TUPLE: {
        if (a->kind != SJ_ARRAY || b->kind != SJ_ARRAY || a->n != b->n)
            return 0;
        size_t i = 0;
        for (const sj_node *x = a->child, *y = b->child; x && y; x = x->next, y = y->next, i++)
            if (!ck_veq(k == TK_LIST ? ck_ty_elem(t) : ck_ty_tuple(t, i), x, y, unrefined))
                return 0;
        return 1;
    }
    case TK_SET:
        if (a->kind != SJ_ARRAY || b->kind != SJ_ARRAY)
            return 0;
        return set_eq(ck_ty_elem(t), a, b, unrefined);
    case TK_MAP:
    case TK_OBJECT:
        if (a->kind != SJ_OBJECT || b->kind != SJ_OBJECT || a->n != b->n)
            return 0;
        for (const sj_node *x = a->child; x; x = x->next) {
            const sj_node *y = sj_get_n(b, x->key, x->key_len);
            if (!y)
                return 0;
            struct ty m = k == TK_MAP ? ck_ty_elem(t) : ck_ty_member(t, x->key, x->key_len);
            if (!ck_veq(m, x, y, unrefined))
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
                    if (!ck_veq(t, x, y, 1))
                        return 0;
                return 1;
            }
            if (a->kind == SJ_OBJECT) {
                if (a->n != b->n)
                    return 0;
                for (const sj_node *x = a->child; x; x = x->next) {
                    const sj_node *y = sj_get_n(b, x->key, x->key_len);
                    if (!y || !ck_veq(t, x, y, 1))
                        return 0;
                }
                return 1;
            }
        }
        return ck_geq(a, b);
    default:
        return sj_equal(a, b);
    }
}

/* ---- schema blocks -------------------------------------------------------- */

struct block ck_block_of(const sj_node *b)
{
    struct block x = {NULL, NULL};
    const sj_node *a = sj_get(b, "attributes"), *bt = sj_get(b, "block_types");
    if (a && a->kind == SJ_ARRAY)
        x.attrs = a;
    if (bt && bt->kind == SJ_ARRAY)
        x.blocks = bt;
    return x;
}

int ck_flag(const sj_node *a, const char *name)
{
    const sj_node *f = sj_get(a, name);
    return f && f->kind == SJ_BOOL && f->boolean;
}

const sj_node *ck_get_attr(const sj_node *obj, const sj_node *name)
{
    return ck_v_null(obj) || ck_v_unknown(obj) ? NULL : sj_get_n(obj, name->str, name->len);
}
