/* analysis: scoring a recorded call against the resource instances of its
 * type and mode (data sources apart), for address.c to name the call
 * after one of them (address_int.h).
 *
 * A call agrees with an instance only when its values agree with
 * everything known of that instance, by when it was known (struct
 * instance). Each of the call's values is held against each moment as core
 * relates them (pair_mode): disagreeing where core makes them agree rules
 * the instance out, disagreeing with a mere hint (the object may have
 * drifted or been updated since) counts against it. A null against a
 * value disagrees (a null of a configuration excepted: it says nothing of
 * computed attributes); what the call cannot know (unknown, sensitive, not
 * decoded) is left out. The instances agreeing with the fewest
 * disagreements (under `tofu test`, all agreeing) are gathered (struct
 * ranking); which of them, if any, the call is about is the matching's to
 * decide.
 *
 * Scoring every call against every instance of its type is quadratic: a
 * plan of 5,000 resources would compare 20,000 calls with 5,000 instances
 * each. Values that carry a string "id" cannot agree with values carrying
 * another, so instances are indexed by their ids and a call whose values
 * all carry one is scored only against the instances with one of its ids
 * (and those with a value without an id); the outcome is the same as
 * scoring them all. */
#include "analysis/address_int.h"

#include <stdlib.h>
#include <string.h>

struct score {
    long match, mismatch;
};

/* What the call cannot be held to: unknown, sensitive (a hash only) or
 * not decoded. */
static int opaque(const sj_node *n)
{
    return sj_is_unknown(n) || sj_is_sensitive(n) ||
           (n->kind == SJ_OBJECT && n->n == 1 && n->child->key_len && n->child->key[0] == '$');
}

int address_value_absent_or_opaque(const sj_node *n)
{
    return !n || n->kind == SJ_NULL || opaque(n);
}

const sj_node *address_dynamic_value(const sj_node *n)
{
    if (!n || n->kind != SJ_OBJECT || n->n != 2)
        return NULL;
    const sj_node *t = sj_get(n, "type"), *v = sj_get(n, "value");
    return t && v && (t->kind == SJ_STRING || t->kind == SJ_ARRAY) ? v : NULL;
}

const sj_node *address_object_member(const sj_node *obj, const char *key, size_t key_len)
{
    if (!obj || obj->kind != SJ_OBJECT)
        return NULL;
    for (const sj_node *c = obj->child; c; c = c->next)
        if (c->key_len == key_len && memcmp(c->key, key, key_len) == 0)
            return c;
    return NULL;
}

const sj_node *address_array_element(const sj_node *arr, size_t i)
{
    if (!arr || arr->kind != SJ_ARRAY)
        return NULL;
    const sj_node *c = arr->child;
    while (c && i--)
        c = c->next;
    return c;
}

/* Elements of sets may come in another order from the provider than from
 * the CLI: arrays this long or shorter are also compared in any order. */
#define UNORDERED_MAX 64

static void compare(const sj_node *call, const sj_node *inst, const sj_node *unk, int strict,
                    struct score *s, unsigned depth);

/* Each element of call agreeing with an element of inst of its own. */
static int compare_unordered(const sj_node *call, const sj_node *inst, int strict, struct score *s,
                             unsigned depth)
{
    unsigned char used[UNORDERED_MAX] = {0};
    long match = 0;
    for (const sj_node *a = call->child; a; a = a->next) {
        size_t j = 0;
        int found = 0;
        for (const sj_node *b = inst->child; b && !found; b = b->next, j++) {
            struct score e = {0, 0};
            if (used[j])
                continue;
            compare(a, b, NULL, strict, &e, depth + 1);
            if (!e.mismatch) {
                used[j] = 1;
                match += e.match;
                found = 1;
            }
        }
        if (!found)
            return 0;
    }
    s->match += match;
    return 1;
}

/* Compare what the call knows against the instance's values: leaves equal
 * or not, unknown and sensitive values of the call and what the instance
 * does not say (a member absent, unknown in unk) left out. A null of the
 * call against a value is a disagreement when strict (a whole object:
 * prior, planned or new), nothing otherwise (a configuration leaves
 * computed attributes null); a value of the call against a null always is
 * one. */
static void compare(const sj_node *call, const sj_node *inst, const sj_node *unk, int strict,
                    struct score *s, unsigned depth)
{
    if (depth > 128 || !call || !inst || (unk && unk->kind == SJ_BOOL && unk->boolean))
        return;
    if (call->kind == SJ_NULL) {
        if (strict) {
            if (inst->kind == SJ_NULL)
                s->match++;
            else
                s->mismatch++;
        }
        return;
    }
    if (opaque(call))
        return;
    if (call->kind == SJ_OBJECT) {
        /* `show -json` writes a dynamic value bare; a raw state keeps the
         * wrapper as we do. */
        const sj_node *dv = address_dynamic_value(call);
        if (dv && !(inst->kind == SJ_OBJECT && sj_get(inst, "type"))) {
            compare(dv, inst, unk, strict, s, depth + 1);
            return;
        }
        if (inst->kind != SJ_OBJECT) {
            s->mismatch++;
            return;
        }
        for (const sj_node *m = call->child; m; m = m->next)
            compare(m, address_object_member(inst, m->key, m->key_len),
                    address_object_member(unk, m->key, m->key_len), strict, s, depth + 1);
        return;
    }
    if (inst->kind == SJ_NULL) {
        s->mismatch++;
        return;
    }
    if (call->kind == SJ_ARRAY) {
        if (inst->kind != SJ_ARRAY || inst->n != call->n) {
            s->mismatch++;
            return;
        }
        if (sj_equal(call, inst)) {
            s->match++;
            return;
        }
        struct score e = {0, 0};
        size_t i = 0;
        for (const sj_node *a = call->child, *b = inst->child; a && b;
             a = a->next, b = b->next, i++)
            compare(a, b, address_array_element(unk, i), strict, &e, depth + 1);
        if (!e.mismatch) {
            s->match += e.match;
            return;
        }
        if (call->n <= UNORDERED_MAX && !unk && compare_unordered(call, inst, strict, s, depth))
            return;
        s->mismatch++;
        return;
    }
    if (sj_equal(call, inst))
        s->match++;
    else
        s->mismatch++;
}

/* How a call's value k is held against an instance's values of moment m:
 * not at all, as a hint (agreeing counts, disagreeing counts against it
 * without ruling the instance out: the object may have drifted, been
 * updated since, or the provider misbehaved), or as a requirement (core
 * sees to it that they agree when the call is about the instance:
 * disagreeing rules it out). */
enum { P_NONE, P_HINT, P_MUST };

static int pair_mode(const struct call_vals *c, int k, int m)
{
    int after_loose = c->loose || (m == MO_AS && c->partial);
    switch (c->rpc) {
    case R_UPGRADE: /* upgraded_state, as prior */
    case R_READ:    /* current_state, new_state */
        if (k == K_PRIOR)
            return m == MO_B0 ? P_MUST : m == MO_BR ? P_HINT : P_NONE;
        if (k == K_NEW)
            return m == MO_BR ? P_MUST : P_HINT;
        return P_NONE;
    case R_DATA: /* config, state */
        if (k != K_CONFIG && k != K_NEW)
            return P_NONE;
        /* Read again each run: the state before holds the last run's. */
        if (m == MO_B0 || (k == K_NEW && m == MO_AP))
            return P_HINT;
        if (k == K_CONFIG && (after_loose || m == MO_AP))
            return P_HINT;
        /* What was read is in the state after, a failed command's too. */
        return P_MUST;
    default: /* plans and applies */
        if (k == K_PRIOR)
            return m == MO_BR ? P_MUST : m == MO_B0 ? P_HINT : P_NONE;
        if (m == MO_B0 || m == MO_BR || k == K_PROPOSED)
            return P_NONE;
        if (k == K_CONFIG)
            return after_loose ? P_HINT : P_MUST;
        if (k == K_PLANNED)
            return c->replace || after_loose ? P_HINT : P_MUST;
        if (k == K_NEW)
            return m == MO_AS && !c->partial ? P_MUST : P_HINT;
        return P_NONE;
    }
}

int address_kind_is_whole_object(int k)
{
    return k == K_PRIOR || k == K_PLANNED || k == K_NEW;
}

static const sj_node *value_id(const sj_node *v);

/* Does some value of moment m carry the id id (a string)? -1 when none of
 * them carries an id at all. */
static int has_id(const struct instance *in, int m, const sj_node *id)
{
    int any = 0;
    for (unsigned j = 0; j < in->nval[m]; j++) {
        const sj_node *x = value_id(in->val[m][j]);
        if (!x)
            continue;
        any = 1;
        if (sj_equal(x, id))
            return 1;
    }
    return any ? 0 : -1;
}

/* Was the instance's object kept through the run (the same id before and
 * after)? Then no call creating an object is about it. The state after a
 * refresh says nothing of it: it applied nothing, and its plan of a
 * replacement (the create half) is of an object it kept. */
static int kept(const struct instance *in, int partial)
{
    for (int m = MO_B0; m <= MO_BR; m++)
        for (unsigned j = 0; j < in->nval[m]; j++) {
            const sj_node *id = value_id(in->val[m][j]);
            if (id && (has_id(in, MO_AP, id) == 1 || (partial != 2 && has_id(in, MO_AS, id) == 1)))
                return 1;
        }
    return 0;
}

/* How a call's values compare with an instance's. */
struct verdict_of {
    int state;     /* one of the below */
    long agree;    /* agreeing leaves */
    long disagree; /* comparisons that disagreed (hints) */
    int must;      /* a comparison core makes agree agreed */
};
enum { V_NO_PAIR, V_RULED_OUT, V_NONE_AGREE, V_AGREES };

int address_earlier_read_superseded(const struct call_vals *c, const struct instance *in, int m)
{
    return c->rpc == R_DATA && m == MO_B0 && (in->nval[MO_BR] > 0 || in->nval[MO_AS] > 0);
}

static struct verdict_of score_instance(const struct call_vals *c, const struct instance *in)
{
    struct verdict_of r = {V_NO_PAIR, 0, 0, 0};
    int agreed = 0, compared = 0;
    if (c->rpc == R_PLAN || c->rpc == R_APPLY) {
        const sj_node *id = value_id(c->v[K_PRIOR]);
        /* An existing object is known by its id: the state before the run
         * may be older than the prior state (refreshed since), never of
         * another object. */
        if (id && has_id(in, MO_B0, id) == 0)
            return (struct verdict_of){V_RULED_OUT, 0, 0, 0};
        /* A new object is not one the run kept. */
        if (address_value_absent_or_opaque(c->v[K_PRIOR]) &&
            (!address_value_absent_or_opaque(c->v[K_PLANNED]) ||
             !address_value_absent_or_opaque(c->v[K_NEW])) &&
            kept(in, c->partial))
            return (struct verdict_of){V_RULED_OUT, 0, 0, 0};
    }
    for (int k = 0; k < K_N; k++) {
        if (address_value_absent_or_opaque(c->v[k]))
            continue;
        for (int m = 0; m < MO_N; m++) {
            int mode = pair_mode(c, k, m);
            if (mode == P_NONE || in->nval[m] == 0 || address_earlier_read_superseded(c, in, m))
                continue;
            long best = -1;
            for (unsigned j = 0; j < in->nval[m]; j++) {
                struct score s = {0, 0};
                compare(c->v[k], in->val[m][j], in->unk[m][j], address_kind_is_whole_object(k), &s,
                        0);
                if (!s.mismatch && s.match > best)
                    best = s.match;
            }
            compared = 1;
            if (best >= 0) {
                r.agree += best;
                agreed = 1;
                r.must |= mode == P_MUST;
            } else if (mode == P_MUST) {
                return (struct verdict_of){V_RULED_OUT, 0, 0, 0};
            } else {
                r.disagree++;
            }
        }
    }
    r.state = !compared ? V_NO_PAIR : agreed ? V_AGREES : V_NONE_AGREE;
    return r;
}

/* The "id" a value carries, when it has the shape whose "id" compare()
 * holds against the other side's: an object (not a dynamic wrapper) whose
 * first "id" member is a string. */
static const sj_node *value_id(const sj_node *v)
{
    if (!v || v->kind != SJ_OBJECT || address_dynamic_value(v))
        return NULL;
    const sj_node *id = sj_get(v, "id");
    return id && id->kind == SJ_STRING ? id : NULL;
}

/* Instances of one type and mode, per side (0: values from before the
 * run, 1: from after it): those with a value on that side, and those with
 * a value there that has no id (scored whatever the call's ids). */
struct group {
    const char *type;
    int data;
    size_t *with[2], nwith[2];
    size_t *must[2], nmust[2];
    size_t n_either; /* with a value on either side */
};

struct id_ref {
    const char *type;
    int data;
    const sj_node *id;
    size_t inst;
};

static int cmp_group(const char *ta, int da, const char *tb, int db)
{
    int c = strcmp(ta, tb);
    return c ? c : da - db;
}

/* qsort has no context argument; the index is built by one thread. */
static const struct instances *sort_is;

static int cmp_inst(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const struct instance *ix = &sort_is->v[x], *iy = &sort_is->v[y];
    int c = cmp_group(ix->type, ix->data, iy->type, iy->data);
    return c ? c : (x > y) - (x < y);
}

static int cmp_id(const sj_node *a, const sj_node *b)
{
    return tftap_bytes_cmp(a->str, a->len, b->str, b->len);
}

static int cmp_ref(const void *a, const void *b)
{
    const struct id_ref *x = a, *y = b;
    int c = cmp_group(x->type, x->data, y->type, y->data);
    return c ? c : cmp_id(x->id, y->id);
}

void address_index_free(struct index *ix)
{
    free(ix->groups);
    free(ix->pool);
    free(ix->ids[0]);
    free(ix->ids[1]);
    free(ix->stamp);
    memset(ix, 0, sizeof *ix);
}

/* The values of one side of the index: 0, what was before the run (B0,
 * BR); 1, what was planned or left (AP, AS). */
static unsigned side_vals(const struct instance *in, int side, const sj_node *v[MAX_VALS])
{
    unsigned n = 0;
    for (int m = side ? MO_AP : MO_B0; m <= (side ? MO_AS : MO_BR); m++)
        for (unsigned j = 0; j < in->nval[m]; j++)
            v[n++] = in->val[m][j];
    return n;
}

int address_index_build(struct index *ix, const struct instances *is)
{
    size_t n = is->n, m = n ? n : 1;
    memset(ix, 0, sizeof *ix);
    size_t *order = malloc(m * sizeof *order);
    ix->groups = malloc(m * sizeof *ix->groups);
    ix->pool = malloc(m * 4 * sizeof *ix->pool);
    ix->ids[0] = malloc(m * MAX_VALS * sizeof *ix->ids[0]);
    ix->ids[1] = malloc(m * MAX_VALS * sizeof *ix->ids[1]);
    ix->stamp = calloc(m, sizeof *ix->stamp);
    if (!order || !ix->groups || !ix->pool || !ix->ids[0] || !ix->ids[1] || !ix->stamp) {
        free(order);
        address_index_free(ix);
        return TFTAP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    sort_is = is;
    qsort(order, n, sizeof *order, cmp_inst);
    size_t *pool = ix->pool;
    for (size_t k = 0; k < n;) {
        const struct instance *first = &is->v[order[k]];
        size_t end = k;
        while (end < n && cmp_group(is->v[order[end]].type, is->v[order[end]].data, first->type,
                                    first->data) == 0)
            end++;
        struct group *g = &ix->groups[ix->ngroups++];
        memset(g, 0, sizeof *g);
        g->type = first->type;
        g->data = first->data;
        for (int side = 0; side < 2; side++) {
            g->with[side] = pool;
            for (size_t j = k; j < end; j++) {
                const sj_node *v[MAX_VALS];
                unsigned nv = side_vals(&is->v[order[j]], side, v);
                for (unsigned x = 0; x < nv; x++)
                    if (!address_value_absent_or_opaque(v[x])) {
                        *pool++ = order[j];
                        break;
                    }
            }
            g->nwith[side] = (size_t)(pool - g->with[side]);
            g->must[side] = pool;
            for (size_t j = k; j < end; j++) {
                size_t i = order[j];
                const sj_node *v[MAX_VALS];
                unsigned nv = side_vals(&is->v[i], side, v);
                int must = 0;
                for (unsigned x = 0; x < nv; x++) {
                    const sj_node *id;
                    if (address_value_absent_or_opaque(v[x]))
                        continue;
                    if ((id = value_id(v[x])) != NULL)
                        ix->ids[side][ix->nids[side]++] =
                            (struct id_ref){is->v[i].type, is->v[i].data, id, i};
                    else
                        must = 1;
                }
                if (must)
                    *pool++ = i;
            }
            g->nmust[side] = (size_t)(pool - g->must[side]);
        }
        for (size_t j = k; j < end; j++) {
            const struct instance *in = &is->v[order[j]];
            int any = 0;
            for (int mo = 0; mo < MO_N; mo++)
                for (unsigned x = 0; x < in->nval[mo]; x++)
                    any |= !address_value_absent_or_opaque(in->val[mo][x]);
            g->n_either += any;
        }
        k = end;
    }
    qsort(ix->ids[0], ix->nids[0], sizeof *ix->ids[0], cmp_ref);
    qsort(ix->ids[1], ix->nids[1], sizeof *ix->ids[1], cmp_ref);
    free(order);
    return 0;
}

const struct group *address_index_group(const struct index *ix, const char *type, int data)
{
    size_t lo = 0, hi = ix->ngroups;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_group(ix->groups[mid].type, ix->groups[mid].data, type, data);
        if (c == 0)
            return &ix->groups[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void address_call_sides_fill(const struct call_vals *c, struct call_sides *cs)
{
    memset(cs, 0, sizeof *cs);
    for (int k = 0; k < K_N; k++) {
        if (address_value_absent_or_opaque(c->v[k]))
            continue;
        for (int side = 0; side < 2; side++) {
            int m0 = side ? MO_AP : MO_B0;
            if (pair_mode(c, k, m0) != P_NONE || pair_mode(c, k, m0 + 1) != P_NONE)
                cs->v[side][cs->n[side]++] = c->v[k];
        }
    }
}

size_t address_comparable_count(const struct group *g, const struct call_sides *cs)
{
    if (cs->n[0] && cs->n[1])
        return g->n_either;
    return cs->n[1] ? g->nwith[1] : cs->n[0] ? g->nwith[0] : 0;
}

static void score_one(const struct instances *is, struct index *ix, size_t seq,
                      const struct call_vals *c, size_t i, struct ranking *r)
{
    if (ix->stamp[i] == seq)
        return;
    ix->stamp[i] = seq;
    struct verdict_of v = score_instance(c, &is->v[i]);
    /* Hints alone name nothing they disagree with: an object that changed
     * since, or another instance's. */
    if (v.state != V_AGREES || (!v.must && v.disagree > 0))
        return;
    /* A data source read agreeing only with what an earlier run read (the
     * state before) may be of another instance of its block, whose count
     * or keys changed since: only a block with one instance is certain. */
    if (c->rpc == R_DATA && !v.must && !am_config_certain(is, is->v[i].address))
        return;
    if (is->grouped) {
        /* Run blocks' documents (`tofu test`): every instance agreeing
         * counts, whatever its hints. The call's own instance is among
         * them; another run block's that agrees better must not push it
         * aside. */
        if (r->ties == 0 || v.agree > r->best_score)
            r->best_score = v.agree;
        if (r->ties < MAX_TIED)
            r->tied[r->ties] = i;
        r->ties++;
        return;
    }
    if (r->ties == 0 || v.disagree < r->fewest) {
        r->fewest = v.disagree;
        r->best_score = v.agree;
        r->ties = 0;
    } else if (v.disagree > r->fewest) {
        return;
    }
    if (r->ties < MAX_TIED)
        r->tied[r->ties] = i;
    r->ties++;
}

void address_score_side(const struct instances *is, struct index *ix, size_t seq,
                        const struct group *g, int side, const struct call_vals *c,
                        const sj_node *const *vals, size_t nvals, struct ranking *r)
{
    int any = 0, by_id = 1;
    for (size_t v = 0; v < nvals; v++) {
        if (address_value_absent_or_opaque(vals[v]))
            continue;
        any = 1;
        by_id &= value_id(vals[v]) != NULL;
    }
    if (!any)
        return;
    if (!by_id) {
        for (size_t k = 0; k < g->nwith[side]; k++)
            score_one(is, ix, seq, c, g->with[side][k], r);
        return;
    }
    for (size_t k = 0; k < g->nmust[side]; k++)
        score_one(is, ix, seq, c, g->must[side][k], r);
    const struct id_ref *refs = ix->ids[side];
    size_t nrefs = ix->nids[side];
    for (size_t v = 0; v < nvals; v++) {
        if (address_value_absent_or_opaque(vals[v]))
            continue;
        struct id_ref key = {g->type, g->data, value_id(vals[v]), 0};
        size_t lo = 0, hi = nrefs;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_ref(&refs[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < nrefs && cmp_ref(&refs[lo], &key) == 0; lo++)
            score_one(is, ix, seq, c, refs[lo].inst, r);
    }
}
