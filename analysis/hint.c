/* analysis: what a provider's schema says about a decoded value, followed
 * down the value (render.c's plan text, mock.c's HCL): one walker, so the
 * two read a member or an element alike. */
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

int analysis_type_is(const sj_node *t, const char *kind)
{
    if (t && t->kind == SJ_ARRAY)
        t = t->child;
    return t && t->kind == SJ_STRING && t->len == strlen(kind) && memcmp(t->str, kind, t->len) == 0;
}

struct analysis_hint analysis_hint_of_attr(const sj_node *a)
{
    struct analysis_hint h = {NULL, NULL, NULL};
    const sj_node *t = sj_get(a, "type"), *nt = sj_get(a, "nested_type");
    if (t && t->kind != SJ_NULL)
        h.ty = t;
    if (nt && nt->kind == SJ_OBJECT) {
        const sj_node *at = sj_get(nt, "attributes"), *n = sj_get(nt, "nesting");
        h.attrs = at && at->kind == SJ_ARRAY ? at : NULL;
        h.nesting = n && n->kind == SJ_STRING ? n->str : NULL;
    }
    return h;
}

int analysis_hint_nested_collection(const struct analysis_hint *h)
{
    return h->attrs && h->nesting &&
           (strcmp(h->nesting, "LIST") == 0 || strcmp(h->nesting, "SET") == 0 ||
            strcmp(h->nesting, "MAP") == 0);
}

struct analysis_hint analysis_hint_elem(const struct analysis_hint *h, size_t i)
{
    struct analysis_hint e = {NULL, NULL, NULL};
    if (analysis_hint_nested_collection(h)) {
        e.attrs = h->attrs;
    } else if (!h->attrs && h->ty && h->ty->kind == SJ_ARRAY && h->ty->n == 2) {
        const sj_node *arg = h->ty->child->next;
        if (analysis_type_is(h->ty, "tuple")) {
            for (const sj_node *t = arg->kind == SJ_ARRAY ? arg->child : NULL; t; t = t->next, i--)
                if (i == 0) {
                    e.ty = t;
                    break;
                }
        } else if (!analysis_type_is(h->ty, "object")) {
            e.ty = arg;
        }
    }
    return e;
}

struct analysis_hint analysis_hint_member(const struct analysis_hint *h, const char *key,
                                          size_t klen)
{
    struct analysis_hint m = {NULL, NULL, NULL};
    if (h->attrs && !analysis_hint_nested_collection(h)) {
        for (const sj_node *a = h->attrs->child; a; a = a->next) {
            const sj_node *n = sj_get(a, "name");
            if (n && n->kind == SJ_STRING && n->len == klen && memcmp(n->str, key, klen) == 0)
                return analysis_hint_of_attr(a);
        }
    } else if (analysis_hint_nested_collection(h) || analysis_type_is(h->ty, "map")) {
        return analysis_hint_elem(h, 0);
    } else if (analysis_type_is(h->ty, "object") && h->ty->kind == SJ_ARRAY && h->ty->n >= 2) {
        const sj_node *attrs = h->ty->child->next;
        if (attrs->kind == SJ_OBJECT)
            m.ty = sj_get_n(attrs, key, klen);
    }
    return m;
}
