/* Contract checks: the rules themselves, each as core applies it to a
 * provider's answer (docs/check.md): AssertPlanValid, AssertObjectCompatible,
 * wholly known values, null write-only attributes, requires_replace paths. */
#include <stdlib.h>
#include <string.h>

#include "analysis/check_int.h"

/* ---- AssertPlanValid ------------------------------------------------------ */

static void plan_attrs(struct ck *k, const sj_node *attrs, const sj_node *prior,
                       const sj_node *config, const sj_node *planned, int depth);

static void plan_object(struct ck *k, struct ty t, const sj_node *prior, const sj_node *config,
                        const sj_node *planned, int depth)
{
    if (ck_v_null(planned) && !ck_v_null(config)) {
        ck_add(k, config, planned, "planned null for a configured nested attribute");
        return;
    }
    if (ck_v_null(config) && !ck_v_null(planned)) {
        ck_add(k, config, planned,
               "planned a value for a nested attribute the configuration leaves null");
        return;
    }
    if (!ck_v_null(config) && ck_v_unknown(planned)) {
        ck_add(k, config, planned,
               "planned unknown for a configured nested attribute: only values left null in the "
               "configuration may be unknown");
        return;
    }
    if (ck_v_null(planned) || ck_v_unknown(config))
        return;
    if (depth <= 0 || ck_v_sensitive(planned) || ck_v_sensitive(config))
        return;
    switch (t.nesting) {
    case 'S':
        plan_attrs(k, t.attrs, prior, config, planned, depth - 1);
        break;
    case 'L':
        if (ck_count(planned) != ck_count(config)) {
            ck_add(k, config, planned, "planned %zu elements where the configuration has %zu",
                   ck_count(planned), ck_count(config));
            return;
        }
        for (size_t i = 0; i < ck_count(planned); i++) {
            size_t mark = ck_push_index(k, i);
            plan_attrs(k, t.attrs, sj_at(prior, i), sj_at(config, i), sj_at(planned, i), depth - 1);
            ck_pop(k, mark);
        }
        break;
    case 'M':
        if (planned->kind != SJ_OBJECT || config->kind != SJ_OBJECT)
            return;
        if (ck_count(planned) != ck_count(config)) {
            ck_add(k, config, planned, "planned %zu elements where the configuration has %zu",
                   ck_count(planned), ck_count(config));
            return;
        }
        for (const sj_node *p = planned->child; p; p = p->next) {
            const sj_node *c = sj_get_n(config, p->key, p->key_len);
            if (!c) {
                ck_key_finding(k, NULL, p, p, "is planned, the configuration does not have it");
                continue;
            }
            size_t mark = ck_push_key(k, p->key, p->key_len);
            plan_attrs(k, t.attrs, sj_get_n(prior, p->key, p->key_len), c, p, depth - 1);
            ck_pop(k, mark);
        }
        for (const sj_node *c = config->child; c; c = c->next)
            if (!sj_get_n(planned, c->key, c->key_len))
                ck_key_finding(k, c, NULL, c, "is configured, the plan does not have it");
        break;
    case 'T':
        if (!ck_v_unknown(planned) && !ck_v_unknown(config) &&
            ck_count(planned) != ck_count(config))
            ck_add(k, config, planned, "planned %zu elements where the configuration has %zu",
                   ck_count(planned), ck_count(config));
        break;
    }
}

static void plan_value(struct ck *k, const sj_node *a, const sj_node *prior, const sj_node *config,
                       const sj_node *planned, int depth)
{
    struct ty t = ck_ty_of_attr(a);
    int computed = ck_flag(a, "computed"), optional = ck_flag(a, "optional");
    int sensitive = ck_flag(a, "sensitive"), write_only = ck_flag(a, "write_only");
    if (ck_veq(t, planned, config, 1))
        return;
    if (!ck_v_null(prior) && !ck_v_null(config) && ck_veq(t, planned, prior, 1))
        return;
    if (computed && !optional)
        return;
    if (ck_v_null(config) && computed)
        return;
    if (ck_v_null(config) && !ck_v_null(planned)) {
        if (sensitive)
            ck_add(
                k, config, planned,
                "planned a sensitive value for an attribute that is not computed and left null in "
                "the configuration");
        else
            ck_add(k, config, planned,
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
    if (!ck_v_null(config) && ck_v_null(planned) && write_only)
        return;
    if (ck_v_null(prior))
        ck_add(
            k, config, planned,
            "planned value differs from the configured value%s: only computed attributes left null "
            "in the configuration may be planned freely",
            ck_v_unknown(planned) ? " (planned unknown for a configured value)" : "");
    else
        ck_add(k, config, planned,
               "planned value differs from both the configured value and the prior value%s",
               ck_v_unknown(planned) ? " (planned unknown for a configured value)" : "");
}

static void plan_attrs(struct ck *k, const sj_node *attrs, const sj_node *prior,
                       const sj_node *config, const sj_node *planned, int depth)
{
    for (const sj_node *a = attrs ? attrs->child : NULL; a && !k->err; a = a->next) {
        const sj_node *name = sj_get(a, "name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = ck_push_attr(k, name->str, name->len);
        plan_value(k, a, ck_get_attr(prior, name), ck_get_attr(config, name),
                   ck_get_attr(planned, name), depth);
        ck_pop(k, mark);
    }
}

static void plan_nested_block(struct ck *k, const sj_node *bt, const sj_node *prior,
                              const sj_node *config, const sj_node *planned, int depth)
{
    struct block sub = ck_block_of(sj_get(bt, "block"));
    char nesting = ck_nesting_char(sj_get(bt, "nesting"));
    planned = ck_block_unwrap(nesting, planned);
    config = ck_block_unwrap(nesting, config);
    prior = ck_block_unwrap(nesting, prior);
    if (ck_veq((struct ty){NULL, NULL, 0}, planned, config, 0))
        return;
    if (ck_v_unknown(config)) {
        ck_add(k, config, planned,
               "planned a value for a block whose configuration is unknown "
               "(a dynamic block over an unknown collection)");
        return;
    }
    if (ck_v_unknown(planned)) {
        ck_add(k, config, planned,
               "planned a nested block as unknown: plan its attributes unknown instead");
        return;
    }
    switch (nesting) {
    case 'S':
        ck_plan_block(k, sub, prior, config, planned, depth - 1);
        break;
    case 'L':
        if (ck_v_null(planned)) {
            ck_add(k, config, planned, "planned null for a list of blocks: plan [] for no blocks");
            return;
        }
        if (ck_count(planned) != ck_count(config)) {
            ck_add(k, config, planned, "planned %zu blocks where the configuration has %zu",
                   ck_count(planned), ck_count(config));
            return;
        }
        for (size_t i = 0; i < ck_count(planned); i++) {
            const sj_node *pe = sj_at(planned, i);
            size_t mark = ck_push_index(k, i);
            if (ck_v_unknown(pe))
                ck_add(k, NULL, pe,
                       "planned a nested block as unknown: plan its attributes unknown "
                       "instead");
            else
                ck_plan_block(k, sub, sj_at(prior, i), sj_at(config, i), pe, depth - 1);
            ck_pop(k, mark);
        }
        break;
    case 'M':
        if (ck_v_null(planned)) {
            ck_add(k, config, planned, "planned null for a map of blocks: plan {} for no blocks");
            return;
        }
        if (planned->kind != SJ_OBJECT)
            return;
        if (ck_count(planned) != ck_count(config)) {
            ck_add(k, config, planned, "planned %zu blocks where the configuration has %zu",
                   ck_count(planned), ck_count(config));
            return;
        }
        for (const sj_node *p = planned->child; p; p = p->next) {
            const sj_node *c = sj_get_n(config, p->key, p->key_len);
            if (!c) {
                ck_key_finding(k, NULL, p, p,
                               "is a planned block key the configuration does not have");
                continue;
            }
            size_t mark = ck_push_key(k, p->key, p->key_len);
            if (ck_v_unknown(p))
                ck_add(k, NULL, p,
                       "planned a nested block as unknown: plan its attributes unknown "
                       "instead");
            else
                ck_plan_block(k, sub, sj_get_n(prior, p->key, p->key_len), c, p, depth - 1);
            ck_pop(k, mark);
        }
        for (const sj_node *c = config && config->kind == SJ_OBJECT ? config->child : NULL; c;
             c = c->next)
            if (!sj_get_n(planned, c->key, c->key_len))
                ck_key_finding(k, c, NULL, c, "is a configured block key the plan does not have");
        break;
    case 'T':
        if (ck_v_null(planned)) {
            ck_add(k, config, planned, "planned null for a set of blocks: plan [] for no blocks");
            return;
        }
        for (const sj_node *p = planned->kind == SJ_ARRAY ? planned->child : NULL; p; p = p->next)
            if (ck_v_unknown(p)) {
                ck_add(k, NULL, p,
                       "planned a nested block as unknown: plan its attributes unknown "
                       "instead");
                break;
            }
        break;
    }
}

void ck_plan_block(struct ck *k, struct block b, const sj_node *prior, const sj_node *config,
                   const sj_node *planned, int depth)
{
    if (ck_v_null(planned) && !ck_v_null(config)) {
        ck_add(k, config, planned, "planned null where the configuration wants an object");
        return;
    }
    if (ck_v_null(config) && !ck_v_null(planned)) {
        ck_add(k, config, planned, "planned an object where the configuration wants none");
        return;
    }
    if (ck_v_null(planned) || depth <= 0 || k->err)
        return;
    plan_attrs(k, b.attrs, prior, config, planned, depth);
    for (const sj_node *bt = b.blocks ? b.blocks->child : NULL; bt && !k->err; bt = bt->next) {
        const sj_node *name = sj_get(bt, "type_name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = ck_push_attr(k, name->str, name->len);
        plan_nested_block(k, bt, ck_get_attr(prior, name), ck_get_attr(config, name),
                          ck_get_attr(planned, name), depth);
        ck_pop(k, mark);
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
    if (!r || r->kind != SJ_OBJECT || ck_v_unknown(v) || ck_v_sensitive(v))
        return 1;
    if (ck_v_null(v))
        return !((x = sj_get(r, "null")) && x->kind == SJ_BOOL && !x->boolean);
    if ((x = sj_get(r, "prefix")) && x->kind == SJ_STRING && v->kind == SJ_STRING &&
        (v->len < x->len || memcmp(v->str, x->str, x->len) != 0))
        return 0;
    if (v->kind == SJ_NUMBER) {
        const char *bounds[2] = {"lower", "upper"};
        for (int i = 0; i < 2; i++) {
            const sj_node *bnd = sj_get(r, bounds[i]);
            const sj_node *num = sj_at(bnd, 0), *inc = sj_at(bnd, 1);
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
            found = big ? ck_geq(p, a) : ok(k, elem, p, a, depth);
        if (!found) {
            ck_add(k, p, NULL, "a planned set element has no counterpart in the result");
            lacking = 1;
        }
    }
    for (const sj_node *a = actual->child; a && !lacking && !k->err; a = a->next) {
        int found = 0;
        for (const sj_node *p = planned->child; p && !found; p = p->next)
            found = big ? ck_geq(p, a) : ok(k, elem, p, a, depth);
        if (!found)
            ck_add(k, NULL, a, "a set element in the result has no counterpart in the plan");
    }
    if (planned->n < actual->n)
        ck_add(k, planned, actual, "%s from %zu to %zu elements: a set may only shrink", grew,
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
    enum tk kind = ck_ty_kind(t);
    if (depth <= 0 || k->err)
        return;
    if (kind == TK_DYN) {
        const sj_node *tp, *ta, *vp, *va;
        int wp = ck_dyn_unwrap(planned, &tp, &vp), wa = ck_dyn_unwrap(actual, &ta, &va);
        if (!wp && ck_v_unknown(planned))
            return; /* an unknown of unknown type: anything goes */
        if (wp && wa && !ck_geq(tp, ta)) {
            ck_add(k, tp, ta, "the result's type differs from the planned type");
            return;
        }
        t = (struct ty){wp ? tp : ta, NULL, 0};
        if (!wp && !wa)
            t.type = NULL;
        planned = vp;
        actual = va;
        kind = ck_ty_kind(t);
    }
    if (ck_v_unknown(planned)) {
        if (!refinement_ok(planned, actual))
            ck_add(k, planned, actual,
                   "the result does not satisfy what the plan promised about this unknown value "
                   "(its refinements: prefix, bounds, length or not null)");
        return;
    }
    if (ck_v_null(actual)) {
        if (!ck_v_null(planned))
            ck_add(k, planned, actual, "planned a known value, the result is null");
        return;
    }
    if (ck_v_null(planned)) {
        ck_add(k, planned, actual, "planned null, the result has a value");
        return;
    }
    if (ck_v_unknown(actual)) {
        ck_add(k, planned, actual, "planned a known value, the result is unknown");
        return;
    }
    if (ck_v_sensitive(planned) || ck_v_sensitive(actual)) {
        if (ck_v_sensitive(planned) && ck_v_sensitive(actual) && !ck_geq(planned, actual))
            ck_add(k, planned, actual, "planned a known value, the result differs");
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
                ck_add(k, sj_at(planned, i), NULL, "planned element %zu vanished from the result",
                       i);
                continue;
            }
            size_t mark = ck_push_index(k, i);
            compat_value(k, kind == TK_LIST ? ck_ty_elem(t) : ck_ty_tuple(t, i), sj_at(planned, i),
                         sj_at(actual, i), depth - 1);
            ck_pop(k, mark);
        }
        for (size_t i = planned->n; i < actual->n; i++)
            ck_add(k, NULL, sj_at(actual, i),
                   "element %zu appeared in the result, the plan did not have it", i);
        return;
    case TK_MAP:
    case TK_OBJECT:
        if (planned->kind != SJ_OBJECT || actual->kind != SJ_OBJECT)
            break;
        for (const sj_node *p = planned->child; p; p = p->next) {
            const sj_node *a = sj_get_n(actual, p->key, p->key_len);
            if (!a) {
                ck_key_finding(k, p, NULL, p, "vanished from the result");
                continue;
            }
            size_t mark = kind == TK_MAP ? ck_push_key(k, p->key, p->key_len)
                                         : ck_push_attr(k, p->key, p->key_len);
            compat_value(k, kind == TK_MAP ? ck_ty_elem(t) : ck_ty_member(t, p->key, p->key_len), p,
                         a, depth - 1);
            ck_pop(k, mark);
        }
        for (const sj_node *a = actual->child; a; a = a->next)
            if (!sj_get_n(planned, a->key, a->key_len))
                ck_key_finding(k, NULL, a, a, "appeared in the result, the plan did not have it");
        return;
    case TK_SET: {
        struct ty e = ck_ty_elem(t);
        compat_set(k, planned, actual, value_ok, &e, depth, "the set grew");
        return;
    }
    default:
        break;
    }
    if (!ck_geq(planned, actual))
        ck_add(k, planned, actual, "planned a known value, the result differs");
}

static int block_ok(struct ck *k, const void *elem, const sj_node *p, const sj_node *a, int depth)
{
    analysis_findings scratch = ANALYSIS_FINDINGS_INIT;
    struct ck probe = *k;
    probe.out = &scratch;
    probe.path = (tftap_buf)TFTAP_BUF_INIT;
    ck_compat_block(&probe, *(const struct block *)elem, p, a, depth - 1);
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
    struct block sub = ck_block_of(sj_get(bt, "block"));
    char nesting = ck_nesting_char(sj_get(bt, "nesting"));
    planned = ck_block_unwrap(nesting, planned);
    actual = ck_block_unwrap(nesting, actual);
    switch (nesting) {
    case 'S':
        if (ck_v_unknown(planned))
            return;
        ck_compat_block(k, sub, planned, actual, depth - 1);
        return;
    case 'L':
    case 'M':
        if (ck_v_unknown(planned) || ck_v_unknown(actual) || ck_v_null(planned) ||
            ck_v_null(actual))
            return;
        if (planned->kind != actual->kind || ck_count(planned) != ck_count(actual)) {
            ck_add(k, planned, actual, "planned %zu blocks, the result has %zu", ck_count(planned),
                   ck_count(actual));
            return;
        }
        if (nesting == 'L') {
            size_t i = 0;
            for (const sj_node *p = planned->child, *a = actual->child; p && a;
                 p = p->next, a = a->next, i++) {
                size_t mark = ck_push_index(k, i);
                ck_compat_block(k, sub, p, a, depth - 1);
                ck_pop(k, mark);
            }
        } else {
            for (const sj_node *p = planned->child; p; p = p->next) {
                const sj_node *a = sj_get_n(actual, p->key, p->key_len);
                if (!a)
                    continue;
                size_t mark = ck_push_key(k, p->key, p->key_len);
                ck_compat_block(k, sub, p, a, depth - 1);
                ck_pop(k, mark);
            }
        }
        return;
    case 'T':
        if (ck_v_unknown(planned) || ck_v_unknown(actual) || ck_v_null(planned) ||
            ck_v_null(actual))
            return;
        compat_set(k, planned, actual, block_ok, &sub, depth, "the set of blocks grew");
        return;
    }
}

static void compat_attr(struct ck *k, const sj_node *a, const sj_node *planned,
                        const sj_node *actual, int depth)
{
    size_t mark = k->out->n;
    compat_value(k, ck_ty_of_attr(a), planned, actual, depth);
    if (ck_flag(a, "sensitive") && k->out->n > mark) {
        /* Like core, one vague finding for a sensitive attribute. */
        ck_drop_since(k, mark);
        ck_add(k, NULL, NULL, "planned and resulting values of a sensitive attribute differ");
    }
}

void ck_compat_block(struct ck *k, struct block b, const sj_node *planned, const sj_node *actual,
                     int depth)
{
    if (ck_v_null(planned) && !ck_v_null(actual)) {
        ck_add(k, planned, actual, "planned no object, the result has one");
        return;
    }
    if (ck_v_null(actual) && !ck_v_null(planned)) {
        ck_add(k, planned, actual, "planned an object, the result is null");
        return;
    }
    if (ck_v_null(planned) || depth <= 0 || k->err)
        return;
    for (const sj_node *a = b.attrs ? b.attrs->child : NULL; a && !k->err; a = a->next) {
        const sj_node *name = sj_get(a, "name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = ck_push_attr(k, name->str, name->len);
        compat_attr(k, a, ck_get_attr(planned, name), ck_get_attr(actual, name), depth - 1);
        ck_pop(k, mark);
    }
    for (const sj_node *bt = b.blocks ? b.blocks->child : NULL; bt && !k->err; bt = bt->next) {
        const sj_node *name = sj_get(bt, "type_name");
        if (!name || name->kind != SJ_STRING)
            continue;
        size_t mark = ck_push_attr(k, name->str, name->len);
        compat_nested_block(k, bt, ck_get_attr(planned, name), ck_get_attr(actual, name),
                            depth - 1);
        ck_pop(k, mark);
    }
}

/* ---- wholly known, write-only --------------------------------------------- */

void ck_find_unknowns(struct ck *k, const sj_node *v, int depth)
{
    if (!v || depth <= 0 || k->err)
        return;
    if (ck_v_unknown(v)) {
        ck_add(k, NULL, v, "the result still holds an unknown value: every value must be known");
        return;
    }
    if (ck_v_sensitive(v))
        return;
    size_t i = 0;
    for (const sj_node *c = v->child; c; c = c->next, i++) {
        size_t mark =
            v->kind == SJ_OBJECT ? ck_push_attr(k, c->key, c->key_len) : ck_push_index(k, i);
        ck_find_unknowns(k, c, depth - 1);
        ck_pop(k, mark);
    }
}

/* Terraform: a write-only attribute is never kept: planned and stored null. */
void ck_find_write_only(struct ck *k, struct block b, const sj_node *v, int depth)
{
    if (ck_v_null(v) || ck_v_unknown(v) || depth <= 0 || k->err)
        return;
    for (const sj_node *a = b.attrs ? b.attrs->child : NULL; a; a = a->next) {
        const sj_node *name = sj_get(a, "name"), *x;
        if (!name || name->kind != SJ_STRING || !ck_flag(a, "write_only"))
            continue;
        if (!ck_v_null(x = ck_get_attr(v, name))) {
            size_t mark = ck_push_attr(k, name->str, name->len);
            ck_add(k, NULL, x, "a write-only attribute must be null in plans and results");
            ck_pop(k, mark);
        }
    }
    for (const sj_node *bt = b.blocks ? b.blocks->child : NULL; bt; bt = bt->next) {
        const sj_node *name = sj_get(bt, "type_name"), *x;
        if (!name || name->kind != SJ_STRING || ck_v_null(x = ck_get_attr(v, name)))
            continue;
        struct block sub = ck_block_of(sj_get(bt, "block"));
        char nesting = ck_nesting_char(sj_get(bt, "nesting"));
        x = ck_block_unwrap(nesting, x);
        size_t mark = ck_push_attr(k, name->str, name->len);
        if (nesting == 'S') {
            ck_find_write_only(k, sub, x, depth - 1);
        } else if (x->kind == SJ_ARRAY) {
            size_t i = 0;
            for (const sj_node *e = x->child; e; e = e->next, i++) {
                size_t m2 = ck_push_index(k, i);
                ck_find_write_only(k, sub, e, depth - 1);
                ck_pop(k, m2);
            }
        } else if (x->kind == SJ_OBJECT) {
            for (const sj_node *e = x->child; e; e = e->next) {
                size_t m2 = ck_push_key(k, e->key, e->key_len);
                ck_find_write_only(k, sub, e, depth - 1);
                ck_pop(k, m2);
            }
        }
        ck_pop(k, mark);
    }
}

/* ---- requires_replace paths ------------------------------------------------ */

/* Does the path (AttributePath steps) lead to a value in v? */
int ck_path_exists(const sj_node *v, const sj_node *steps)
{
    for (const sj_node *st = steps ? steps->child : NULL; st; st = st->next) {
        const sj_node *x, *ty, *inner;
        if (ck_v_null(v) || ck_v_unknown(v) || ck_v_sensitive(v))
            return 0;
        if (((x = sj_get(st, "attribute_name")) && x->kind == SJ_STRING) ||
            ((x = sj_get(st, "element_key_string")) && x->kind == SJ_STRING)) {
            /* A member of the value itself, else of a dynamic value's. */
            const sj_node *m = v->kind == SJ_OBJECT ? sj_get_n(v, x->str, x->len) : NULL;
            if (!m && ck_dyn_unwrap(v, &ty, &inner) && inner->kind == SJ_OBJECT)
                m = sj_get_n(inner, x->str, x->len);
            if (!(v = m))
                return 0;
        } else if ((x = sj_get(st, "element_key_int")) && x->kind == SJ_NUMBER) {
            ck_dyn_unwrap(v, &ty, &v);
            char *end;
            long long i = strtoll(x->str, &end, 10);
            if (*end || i < 0 || v->kind != SJ_ARRAY || !(v = sj_at(v, (size_t)i)))
                return 0;
        } else {
            return 1; /* a step of a kind newer than us: do not judge */
        }
    }
    return 1;
}
