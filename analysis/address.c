/* analysis: giving recorded calls their resource instance addresses.
 *
 * Provider calls name a resource type, never an address. What the CLI says
 * around a run names them: the state it started from (`CLI state pull`)
 * lists every existing object, `CLI show -json` of a saved plan or of the
 * state afterwards lists the objects the run planned or made. Those
 * documents are read into what is known of each instance by
 * address_docs.c; here each call is matched to them. A call is
 * named after an instance of its type (and mode: data sources apart) only
 * when its values agree with everything known of that instance, by when it
 * was known (struct instance): disagreeing where core makes them agree
 * rules the instance out (pair_mode), a null against a value disagrees,
 * and calls that agree with several instances are paired with them only
 * when those are equal in all the call could tell. A wrong name is worse
 * than none: the checker compares a call with its instance's plan.
 *
 * Scoring every call against every instance of its type is quadratic: a
 * plan of 5,000 resources would compare 20,000 calls with 5,000 instances
 * each. Values that carry a string "id" cannot agree with values carrying
 * another, so instances are indexed by their ids and a call whose values
 * all carry one is scored only against the instances with one of its ids
 * (and those with a value without an id); the outcome is the same as
 * scoring them all. */
#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "analysis/address_int.h"

#include <stdint.h>

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

static int skip_value(const sj_node *n)
{
    return !n || n->kind == SJ_NULL || opaque(n);
}

/* A dynamic value as the decoder writes it: {"type": T, "value": V}. */
static const sj_node *dynamic_value(const sj_node *n)
{
    if (!n || n->kind != SJ_OBJECT || n->n != 2)
        return NULL;
    const sj_node *t = sj_get(n, "type"), *v = sj_get(n, "value");
    return t && v && (t->kind == SJ_STRING || t->kind == SJ_ARRAY) ? v : NULL;
}

/* The member of an object by key, or NULL. */
static const sj_node *member(const sj_node *obj, const char *key, size_t key_len)
{
    if (!obj || obj->kind != SJ_OBJECT)
        return NULL;
    for (const sj_node *c = obj->child; c; c = c->next)
        if (c->key_len == key_len && memcmp(c->key, key, key_len) == 0)
            return c;
    return NULL;
}

static const sj_node *element(const sj_node *arr, size_t i)
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
        const sj_node *dv = dynamic_value(call);
        if (dv && !(inst->kind == SJ_OBJECT && sj_get(inst, "type"))) {
            compare(dv, inst, unk, strict, s, depth + 1);
            return;
        }
        if (inst->kind != SJ_OBJECT) {
            s->mismatch++;
            return;
        }
        for (const sj_node *m = call->child; m; m = m->next)
            compare(m, member(inst, m->key, m->key_len), member(unk, m->key, m->key_len), strict, s,
                    depth + 1);
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
            compare(a, b, element(unk, i), strict, &e, depth + 1);
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

/* A call's values, as the store hands them (store_match_call). */
enum { K_PRIOR, K_PROPOSED, K_CONFIG, K_PLANNED, K_NEW, K_N };
/* An upgrade (UpgradeResourceState) is held against instances as a read
 * is by its current state: what it upgraded to is the object before the
 * run, once refreshed the prior state of what follows. A kind of its own:
 * an instance's upgrade and read, in one process, are two calls about it. */
enum { R_PLAN, R_APPLY, R_READ, R_DATA, R_UPGRADE };

/* What one call says: its kind and its values. */
struct call_vals {
    int rpc;
    int replace;           /* a plan that requires replacement: its planned state may
                            * keep values of the object replaced */
    int loose;             /* what it planned or applied need not be what the state
                            * after holds: error diagnostics, a legacy provider (core
                            * tolerates its inconsistencies), or a command that failed */
    int partial;           /* the state after is a failed command's */
    const sj_node *v[K_N]; /* NULL where the call has none */
};

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

/* A configuration is not a whole object: its nulls say nothing of
 * computed attributes. */
static int strict_kind(int k)
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

/* Is what an earlier run read of a data source instance (the state
 * before) beside the point: a document after the run (a saved plan's
 * prior state, the state after) holds what this run read of it? The
 * instances a read agrees with are then told apart by that alone: two
 * instances reading the same now are equal, whatever they read before. */
static int read_since(const struct call_vals *c, const struct instance *in, int m)
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
        if (skip_value(c->v[K_PRIOR]) &&
            (!skip_value(c->v[K_PLANNED]) || !skip_value(c->v[K_NEW])) && kept(in, c->partial))
            return (struct verdict_of){V_RULED_OUT, 0, 0, 0};
    }
    for (int k = 0; k < K_N; k++) {
        if (skip_value(c->v[k]))
            continue;
        for (int m = 0; m < MO_N; m++) {
            int mode = pair_mode(c, k, m);
            if (mode == P_NONE || in->nval[m] == 0 || read_since(c, in, m))
                continue;
            long best = -1;
            for (unsigned j = 0; j < in->nval[m]; j++) {
                struct score s = {0, 0};
                compare(c->v[k], in->val[m][j], in->unk[m][j], strict_kind(k), &s, 0);
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
    if (!v || v->kind != SJ_OBJECT || dynamic_value(v))
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

struct index {
    struct group *groups; /* sorted by type and mode */
    size_t ngroups;
    size_t *pool;          /* the groups' lists */
    struct id_ref *ids[2]; /* per side, sorted by type, mode, id */
    size_t nids[2];
    size_t *stamp; /* per instance: the last call (1-based) it was scored for */
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

static void index_free(struct index *ix)
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

static int index_build(struct index *ix, const struct instances *is)
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
        index_free(ix);
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
                    if (!skip_value(v[x])) {
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
                    if (skip_value(v[x]))
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
                    any |= !skip_value(in->val[mo][x]);
            g->n_either += any;
        }
        k = end;
    }
    qsort(ix->ids[0], ix->nids[0], sizeof *ix->ids[0], cmp_ref);
    qsort(ix->ids[1], ix->nids[1], sizeof *ix->ids[1], cmp_ref);
    free(order);
    return 0;
}

static const struct group *group_find(const struct index *ix, const char *type, int data)
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

/* A call's values held against each side of the index (side_vals): the
 * kinds pair_mode() compares with a moment of that side. */
struct call_sides {
    const sj_node *v[2][K_N];
    size_t n[2];
};

static void call_sides(const struct call_vals *c, struct call_sides *cs)
{
    memset(cs, 0, sizeof *cs);
    for (int k = 0; k < K_N; k++) {
        if (skip_value(c->v[k]))
            continue;
        for (int side = 0; side < 2; side++) {
            int m0 = side ? MO_AP : MO_B0;
            if (pair_mode(c, k, m0) != P_NONE || pair_mode(c, k, m0 + 1) != P_NONE)
                cs->v[side][cs->n[side]++] = c->v[k];
        }
    }
}

/* How many instances of g score_instance() can compare c with at all
 * (the others are NO_PAIR): what the call has against what they have. */
static size_t comparable(const struct group *g, const struct call_sides *cs)
{
    if (cs->n[0] && cs->n[1])
        return g->n_either;
    return cs->n[1] ? g->nwith[1] : cs->n[0] ? g->nwith[0] : 0;
}

/* The instances the call agrees with (none ruled out, something agreed)
 * with the fewest disagreements. */
struct ranking {
    long best_score; /* agreeing leaves of the first of them */
    long fewest;     /* their disagreements */
    size_t ties;     /* how many */
    size_t *tied;    /* which, up to MAX_TIED */
};
/* Calls agreeing with more instances than this stay unnamed. */
#define MAX_TIED 4096

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

/* Score c against the instances of g whose values on one side may agree
 * with the call's values vals (those compared with that side): with every
 * one of those carrying an id, the instances holding one of the ids there
 * and those with a value there without one; otherwise all with a value
 * there. Every other pairing disagrees on "id". */
static void score_side(const struct instances *is, struct index *ix, size_t seq,
                       const struct group *g, int side, const struct call_vals *c,
                       const sj_node *const *vals, size_t nvals, struct ranking *r)
{
    int any = 0, by_id = 1;
    for (size_t v = 0; v < nvals; v++) {
        if (skip_value(vals[v]))
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
        if (skip_value(vals[v]))
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

/* What matching decided for one call. */
struct verdict {
    int64_t call_id;
    int64_t process;
    int cls;             /* call_class() */
    long score;          /* agreeing leaves with what it was named after */
    size_t inst;         /* the instance of address, when it was the only one agreeing */
    const char *address; /* borrowed from the instances, or NULL */
    char *note;          /* owned, or NULL */
    size_t *tied;        /* owned: equal instances it agrees with (ntied > 1), sorted */
    size_t ntied;
};

/* A named plan that requires replacing its object: the create half that
 * follows it in its process (a plan with no prior state, the same
 * configuration) is of the same instance. */
struct replacing {
    int64_t process;
    char *type;
    char *config; /* its configuration, members sorted */
    size_t verdict;
    int paired;
};

struct matching {
    struct instances *is;
    struct index *ix;
    sj_doc **refreshed; /* copies of what ReadResource calls returned */
    size_t nrefreshed, caprefreshed;
    struct replacing *rp;
    size_t nrp, caprp;
    size_t ndocs;
    const char *missing;
    size_t seq;
    struct verdict *v;
    size_t n, cap;
    size_t *scratch; /* MAX_TIED instance indices */
    int err;
};

/* Addresses in the CLI's order: runs of digits compared as numbers, so
 * web[2] comes before web[10]. */
int analysis_address_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            const char *ea = a, *eb = b;
            while (*a == '0' && a[1] >= '0' && a[1] <= '9')
                a++;
            while (*b == '0' && b[1] >= '0' && b[1] <= '9')
                b++;
            for (ea = a; *ea >= '0' && *ea <= '9'; ea++)
                ;
            for (eb = b; *eb >= '0' && *eb <= '9'; eb++)
                ;
            if (ea - a != eb - b)
                return ea - a < eb - b ? -1 : 1;
            int c = memcmp(a, b, (size_t)(ea - a));
            if (c)
                return c;
            a = ea;
            b = eb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

/* qsort has no context argument: the instances being sorted. */
static _Thread_local const struct instances *sorting;

static int cmp_tied(const void *a, const void *b)
{
    const struct instance *x = &sorting->v[*(const size_t *)a];
    const struct instance *y = &sorting->v[*(const size_t *)b];
    return analysis_address_cmp(x->address, y->address);
}

/* Are x and y (values of two instances at one moment) the same wherever
 * the call's whole values cv know something (not unknown)? A sensitive
 * value counts as known: tftap cannot tell two secrets apart. */
static int same_known(const sj_node *x, const sj_node *y, const sj_node *const *cv, size_t ncv,
                      unsigned depth)
{
    if (x && y && sj_equal(x, y))
        return 1;
    const sj_node *sub[K_N];
    int known = 0;
    for (size_t i = 0; i < ncv; i++) {
        const sj_node *v = cv[i];
        const sj_node *dv = dynamic_value(v);
        if (dv && !(x && x->kind == SJ_OBJECT && sj_get(x, "type")))
            v = dv;
        sub[i] = v;
        known |= v && !sj_is_unknown(v);
    }
    if (!known)
        return 1;
    if (!x || !y || depth > 128 || x->kind != y->kind)
        return 0;
    const sj_node *kid[K_N];
    if (x->kind == SJ_OBJECT) {
        for (int pass = 0; pass < 2; pass++) {
            const sj_node *a = pass ? y : x, *b = pass ? x : y;
            for (const sj_node *m = a->child; m; m = m->next) {
                const sj_node *o = member(b, m->key, m->key_len);
                if (pass && o)
                    continue; /* compared in the first pass */
                for (size_t i = 0; i < ncv; i++)
                    kid[i] = member(sub[i], m->key, m->key_len);
                if (!same_known(pass ? o : m, pass ? m : o, kid, ncv, depth + 1))
                    return 0;
            }
        }
        return 1;
    }
    if (x->kind == SJ_ARRAY) {
        if (x->n != y->n)
            return 0;
        size_t j = 0;
        for (const sj_node *a = x->child, *b = y->child; a && b; a = a->next, b = b->next, j++) {
            for (size_t i = 0; i < ncv; i++)
                kid[i] = sub[i] && sub[i]->kind == SJ_ARRAY && sub[i]->n == x->n
                             ? element(sub[i], j)
                             : NULL;
            if (!same_known(a, b, kid, ncv, depth + 1))
                return 0;
        }
        return 1;
    }
    return 0;
}

/* Are the instances the call agrees with equal in all that is known of
 * them, but for what the call itself does not know (a value computed
 * later)? Then nothing tells them apart and the call may be paired with
 * one of them; otherwise it stays unnamed. */
static int all_equal(const struct instances *is, const size_t *tied, size_t n,
                     const struct call_vals *c)
{
    const sj_node *cv[K_N];
    size_t ncv = 0;
    for (int k = 0; k < K_N; k++)
        if (strict_kind(k) && c->v[k] && c->v[k]->kind != SJ_NULL)
            cv[ncv++] = c->v[k];
    const struct instance *a = &is->v[tied[0]];
    for (size_t t = 1; t < n; t++) {
        const struct instance *b = &is->v[tied[t]];
        for (int m = 0; m < MO_N; m++) {
            if (read_since(c, a, m) && read_since(c, b, m))
                continue;
            if (a->nval[m] != b->nval[m])
                return 0;
            for (unsigned j = 0; j < a->nval[m]; j++)
                if (!same_known(a->val[m][j], b->val[m][j], cv, ncv, 0))
                    return 0;
        }
    }
    return 1;
}

/* How long the part of address before its resource name is
 * ("module.a.random_pet." of "module.a.random_pet.web[1]"). */
static size_t name_prefix_len(const char *address)
{
    size_t key = strcspn(address, "[");
    size_t dot = 0;
    for (size_t i = 0; i < key; i++)
        if (address[i] == '.')
            dot = i + 1;
    return dot;
}

/* "web[1], web[2]": instances named as the resource of first is named,
 * its module and type said once; at most 8, then how many more. */
static void others_list(tftap_buf *b, const struct instances *is, const size_t *tied, size_t n,
                        const char *first, size_t skip)
{
    size_t pl = first ? name_prefix_len(first) : 0, said = 0;
    for (size_t t = 0; t < n; t++) {
        const char *other = is->v[tied[t]].address;
        if (t == skip)
            continue;
        if (said == 8) {
            tftap_buf_printf(b, " and %zu more", n - t - (skip > t));
            break;
        }
        if (said++)
            tftap_buf_puts(b, ", ");
        if (first && strncmp(other, first, pl) == 0)
            other += pl;
        tftap_buf_puts(b, other);
    }
}

static int cmp_grouped(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = analysis_address_cmp(sorting->v[x].address, sorting->v[y].address);
    return c ? c : (x > y) - (x < y);
}

/* May calls agreeing with the addresses of tied (one instance each) be
 * paired with them? In every group of documents (run block) where one of
 * them is, all are, equal in all the call could tell: count over equal
 * values. Two addresses equal in one run block only (the values one had
 * in another) are not interchangeable. */
static int equal_in_every_group(const struct instances *is, const size_t *tied, size_t n,
                                const struct call_vals *c)
{
    for (int g = 0; g <= is->ngroups; g++) {
        size_t first = (size_t)-1;
        for (size_t t = 0; t < n; t++) {
            const struct instance *in = &is->v[tied[t]];
            size_t i = am_instance_find(is, in->address, in->data, g);
            if (t == 0) {
                first = i;
                continue;
            }
            if ((i == (size_t)-1) != (first == (size_t)-1))
                return 0;
            size_t pair[2] = {first, i};
            if (i != (size_t)-1 && !all_equal(is, pair, 2, c))
                return 0;
        }
    }
    return 1;
}

/* Of instances sorted by address (cmp_grouped), one of each address, in
 * place: that of the first group that has it, so that calls agreeing with
 * the same addresses in other run blocks are paired among the same
 * instances (same_ties); how many are left. */
static size_t one_per_address(const struct instances *is, size_t *tied, size_t n)
{
    size_t k = 0;
    for (size_t t = 0; t < n; t++)
        if (k == 0 || strcmp(is->v[tied[k - 1]].address, is->v[tied[t]].address) != 0)
            tied[k++] = tied[t];
    for (size_t t = 0; t < k; t++) {
        const struct instance *in = &is->v[tied[t]];
        for (int g = 0; g <= is->ngroups; g++) {
            size_t i = am_instance_find(is, in->address, in->data, g);
            if (i != (size_t)-1) {
                tied[t] = i;
                break;
            }
        }
    }
    return k;
}

/* Decide one call: an address, equal instances to pair it with later, or
 * a note saying why there is none. */
static int match_call(struct matching *m, const char *type, const struct call_vals *c,
                      struct verdict *out)
{
    const struct instances *is = m->is;
    struct ranking r = {-1, 0, 0, m->scratch};
    size_t candidates = 0;
    tftap_buf note = TFTAP_BUF_INIT;
    size_t seq = ++m->seq;
    int data = c->rpc == R_DATA;
    const struct group *g = type ? group_find(m->ix, type, data) : NULL;
    struct call_sides cs;
    call_sides(c, &cs);
    if (g) {
        candidates = comparable(g, &cs);
        score_side(is, m->ix, seq, g, 0, c, cs.v[0], cs.n[0], &r);
        score_side(is, m->ix, seq, g, 1, c, cs.v[1], cs.n[1], &r);
    }
    const char *what = data ? "data." : "";
    int is_new = !data && skip_value(c->v[K_PRIOR]);
    if (!type)
        tftap_buf_puts(&note, "call has no resource type");
    else if (m->ndocs == 0)
        tftap_buf_puts(&note, m->missing ? m->missing : "no plan or state was read to match it");
    else if ((candidates == 0 || r.ties == 0) && is->have_config &&
             (is_new || data || is->config_whole) && am_config_address(is, type, data)) {
        /* No document names an instance its values agree with (a plan
         * not saved, a create that failed and left nothing in the state
         * after, a read nothing after holds), but the configuration is
         * certain: every new object and every read of the type is of its
         * one instance (an object of the type the configuration no longer
         * has is only ever destroyed, with a prior state); under `test`
         * every object of the type is. */
        out->address = am_config_address(is, type, data);
        out->inst = (size_t)-1;
        tftap_buf_printf(&note, "the configuration's only %s%s block", what, type);
    } else if (candidates == 0 && !is->have_after && is->config_whole)
        /* A test's run blocks keep their plans and states in memory. */
        tftap_buf_printf(&note,
                         "a %s%s%s object of a test: no plan or state of the test is left to "
                         "name it, and its run blocks could not be run again offline",
                         is_new ? "new " : "", what, type);
    else if (candidates == 0 && is_new && !is->have_after)
        tftap_buf_printf(&note,
                         "a new %s object: only a saved plan (plan -out=FILE) or the state after "
                         "an apply names new instances",
                         type);
    else if (candidates == 0)
        tftap_buf_printf(&note, "no %s%s instance in the plan or state", what, type);
    else if (r.ties == 0)
        tftap_buf_printf(&note, "values match none of the %zu %s%s instances%s", candidates, what,
                         type, is->grouped ? " of the run blocks" : "");
    else if (r.ties > MAX_TIED)
        tftap_buf_printf(&note, "values match %zu %s%s instances equally", r.ties, what, type);
    else if (r.ties > 1 && is->grouped) {
        /* One address in several run blocks is one instance to the call;
         * several addresses are paired only when every run block's
         * instances are equal. */
        sorting = is;
        qsort(r.tied, r.ties, sizeof *r.tied, cmp_grouped);
        sorting = NULL;
        size_t naddr = one_per_address(is, r.tied, r.ties);
        if (naddr == 1) {
            out->inst = r.tied[0];
            out->address = is->v[r.tied[0]].address;
            out->score = r.best_score;
        } else if (equal_in_every_group(is, r.tied, naddr, c)) {
            out->tied = malloc(naddr * sizeof *out->tied);
            if (!out->tied)
                return TFTAP_ENOMEM;
            memcpy(out->tied, r.tied, naddr * sizeof *out->tied);
            out->ntied = naddr;
            out->score = r.best_score;
        } else {
            tftap_buf_printf(&note,
                             "values agree with %zu %s%s instances of the run blocks that differ "
                             "elsewhere: ",
                             naddr, what, type);
            others_list(&note, is, r.tied, naddr, NULL, (size_t)-1);
        }
    } else if (r.ties > 1) {
        sorting = is;
        qsort(r.tied, r.ties, sizeof *r.tied, cmp_tied);
        sorting = NULL;
        if (all_equal(is, r.tied, r.ties, c)) {
            out->tied = malloc(r.ties * sizeof *out->tied);
            if (!out->tied)
                return TFTAP_ENOMEM;
            memcpy(out->tied, r.tied, r.ties * sizeof *out->tied);
            out->ntied = r.ties;
            out->score = r.best_score;
        } else {
            tftap_buf_printf(&note,
                             "values agree with %zu %s%s instances that differ elsewhere: ", r.ties,
                             what, type);
            others_list(&note, is, r.tied, r.ties, NULL, (size_t)-1);
        }
    } else {
        out->inst = r.tied[0];
        out->address = is->v[r.tied[0]].address;
        out->score = r.best_score;
    }
    if (note.len) {
        out->note = tftap_buf_take(&note, NULL);
        if (!out->note)
            return TFTAP_ENOMEM;
    }
    tftap_buf_done(&note);
    return 0;
}

/* A ReadResource named after an instance by the object it read (which
 * must be the object before the run) says what that object is once
 * refreshed: the prior state the plans and applies of the instance that
 * follow carry (they come later in call order). Kept as a value known of
 * the instance before (BR), as a saved plan's prior state would be: its
 * plans then must agree with it, and another instance's object cannot pass
 * for it however its id reads. A copy: the call's values go when it has
 * been matched. */
static int keep_refreshed(struct matching *m, size_t inst, const sj_node *state)
{
    struct instance *in = &m->is->v[inst];
    if (in->nval[MO_BR] >= MAX_PER)
        return 0;
    if (m->nrefreshed == m->caprefreshed) {
        size_t cap = m->caprefreshed ? 2 * m->caprefreshed : 64;
        sj_doc **v = realloc(m->refreshed, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        m->refreshed = v;
        m->caprefreshed = cap;
    }
    tftap_buf b = TFTAP_BUF_INIT;
    sj_doc *d = NULL;
    sj_write(state, &b);
    int rc =
        tftap_buf_failed(&b) ? TFTAP_ENOMEM : sj_parse(b.data, b.len, TFTAP_JSON_MAX_DEPTH + 2, &d);
    tftap_buf_done(&b);
    if (rc)
        return rc == TFTAP_ENOMEM ? rc : 0; /* too deep to keep: not kept */
    m->refreshed[m->nrefreshed++] = d;
    am_push_val(in, MO_BR, sj_root(d), NULL);
    return 0;
}

static int set_note(struct verdict *v, tftap_buf *note);

/* A plan with no prior state that nothing named: the create half of a
 * replacement, when one named replacing plan of its process and type,
 * not paired yet, came before it with the same configuration (core plans
 * a replacement's new object right after the replacing plan, from the
 * same configuration). What no document after a refresh says (it lists
 * no replacement): its plan of the new object is of the instance whose
 * replacement it planned. A replacing plan named is remembered. */
static int create_half(struct matching *m, const char *type, const struct call_vals *c, size_t vi)
{
    struct verdict *out = &m->v[vi];
    int is_new = skip_value(c->v[K_PRIOR]);
    if (!(c->replace && !is_new && out->address) && !(is_new && !out->address && !out->ntied))
        return 0;
    tftap_buf b = TFTAP_BUF_INIT;
    if (sj_write_sorted(c->v[K_CONFIG], &b) != 0 || tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return TFTAP_ENOMEM;
    }
    tftap_buf_cstr(&b);
    if (!is_new) {
        if (m->nrp == m->caprp) {
            size_t cap = m->caprp ? 2 * m->caprp : 16;
            struct replacing *v = realloc(m->rp, cap * sizeof *v);
            if (!v) {
                tftap_buf_done(&b);
                return TFTAP_ENOMEM;
            }
            m->rp = v;
            m->caprp = cap;
        }
        char *t = strdup(type), *config = tftap_buf_take(&b, NULL);
        if (!t || !config) {
            free(t);
            free(config);
            return TFTAP_ENOMEM;
        }
        m->rp[m->nrp++] = (struct replacing){out->process, t, config, vi, 0};
        return 0;
    }
    struct replacing *one = NULL;
    size_t found = 0;
    for (size_t i = 0; i < m->nrp; i++) {
        struct replacing *r = &m->rp[i];
        if (!r->paired && r->process == out->process && strcmp(r->type, type) == 0 &&
            strcmp(r->config, b.data) == 0) {
            one = r;
            found++;
        }
    }
    tftap_buf_done(&b);
    if (found != 1)
        return 0; /* none, or equal configurations: which one is not known */
    const struct verdict *by = &m->v[one->verdict];
    tftap_buf note = TFTAP_BUF_INIT;
    tftap_buf_printf(&note, "the create half of its replacement (call %lld)",
                     (long long)by->call_id);
    if (tftap_buf_failed(&note)) {
        tftap_buf_done(&note);
        return TFTAP_ENOMEM;
    }
    one->paired = 1;
    out->address = by->address;
    out->inst = by->inst;
    out->score = by->score;
    return set_note(out, &note);
}

/* Calls of one provider process that cannot be about the same instance:
 * per method, a plan or apply of an existing object or of a new one, and
 * one planned or applied away (a replacement is one of each). */
static int call_class(int rpc, const sj_node *prior, const sj_node *planned)
{
    return rpc * 4 + 2 * (prior == NULL || prior->kind == SJ_NULL) +
           (planned == NULL || planned->kind == SJ_NULL);
}

static int on_call(void *ctx, const store_match_call *call)
{
    struct matching *m = ctx;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        struct verdict *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return m->err = TFTAP_ENOMEM;
        m->v = v;
        m->cap = cap;
    }
    struct verdict *out = &m->v[m->n++];
    memset(out, 0, sizeof *out);
    out->call_id = call->call_id;
    out->process = call->process_id;
    struct call_vals c;
    memset(&c, 0, sizeof c);
    const char *rpc = call->rpc ? call->rpc : "";
    c.rpc = strcmp(rpc, "ReadDataSource") == 0         ? R_DATA
            : strcmp(rpc, "ReadResource") == 0         ? R_READ
            : strcmp(rpc, "UpgradeResourceState") == 0 ? R_UPGRADE
            : strcmp(rpc, "ApplyResourceChange") == 0  ? R_APPLY
                                                       : R_PLAN;
    c.replace = call->requires_replace && call->requires_replace->kind == SJ_ARRAY &&
                call->requires_replace->n > 0;
    c.partial = m->is->partial;
    c.loose = call->failed || call->legacy || c.partial;
    for (int i = 0; i < K_N; i++)
        c.v[i] = call->values[i];
    out->cls = call_class(c.rpc, c.v[K_PRIOR],
                          c.rpc == R_READ || c.rpc == R_UPGRADE ? NULL : c.v[K_PLANNED]);
    int rc = match_call(m, call->type_name, &c, out);
    if (!rc && c.rpc == R_PLAN && call->type_name && c.v[K_CONFIG])
        rc = create_half(m, call->type_name, &c, m->n - 1);
    /* Not for run blocks' instances: what one read refreshed, kept as
     * another run block's instance's, would rule out that block's own
     * plans. */
    if (!rc && c.rpc == R_READ && out->address && out->inst != (size_t)-1 && !m->is->grouped &&
        !skip_value(c.v[K_NEW]))
        rc = keep_refreshed(m, out->inst, c.v[K_NEW]);
    return m->err = rc;
}

/* Calls agreeing with the same equal instances, of one process and class,
 * are told apart by order alone: the k-th such call (in call order) gets
 * the k-th instance (in address order). More such calls than instances
 * cannot all be right: none is named. */
static int same_ties(const struct verdict *a, const struct verdict *b)
{
    return a->ntied == b->ntied && a->process == b->process && a->cls == b->cls &&
           memcmp(a->tied, b->tied, a->ntied * sizeof *a->tied) == 0;
}

static int set_note(struct verdict *v, tftap_buf *note)
{
    free(v->note);
    v->note = tftap_buf_take(note, NULL);
    tftap_buf_done(note);
    return v->note ? 0 : TFTAP_ENOMEM;
}

static int pair_ties(struct matching *m)
{
    const struct instances *is = m->is;
    for (size_t i = 0; i < m->n; i++) {
        struct verdict *v = &m->v[i];
        if (v->ntied < 2 || v->address || v->note)
            continue;
        size_t calls = 0;
        for (size_t j = i; j < m->n; j++)
            calls +=
                m->v[j].ntied >= 2 && !m->v[j].address && !m->v[j].note && same_ties(v, &m->v[j]);
        size_t k = 0, ntied = v->ntied;
        for (size_t j = i; j < m->n; j++) {
            struct verdict *w = &m->v[j];
            if (w->ntied < 2 || w->address || w->note || !same_ties(v, w))
                continue;
            tftap_buf note = TFTAP_BUF_INIT;
            if (calls > ntied) {
                tftap_buf_printf(&note,
                                 "%zu calls of one provider process agree with %zu equal "
                                 "instances: ",
                                 calls, ntied);
                others_list(&note, is, w->tied, ntied, NULL, (size_t)-1);
            } else {
                size_t pick = k++;
                w->address = is->v[w->tied[pick]].address;
                /* "identical to web[1], web[2]" */
                tftap_buf_puts(&note, "identical to ");
                others_list(&note, is, w->tied, ntied, w->address, pick);
            }
            int rc = set_note(w, &note);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* qsort has no context argument: the verdicts being sorted. */
static _Thread_local const struct verdict *sorting_v;

static int cmp_claim(const void *a, const void *b)
{
    const struct verdict *x = &sorting_v[*(const size_t *)a], *y = &sorting_v[*(const size_t *)b];
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    int c = strcmp(x->address, y->address);
    if (c)
        return c;
    return x->call_id < y->call_id ? -1 : x->call_id > y->call_id;
}

/* One provider process asks about an instance once per class: two calls
 * of a class named alike cannot both be right. The one agreeing with it
 * strictly best, when it was the only instance it agreed with, keeps it
 * (the instance's own call, beside one whose instance the documents do
 * not have: a create that failed); otherwise none does. */
static int one_claim_each(struct matching *m)
{
    size_t *idx = malloc((m->n ? m->n : 1) * sizeof *idx), n = 0;
    if (!idx)
        return TFTAP_ENOMEM;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].address)
            idx[n++] = i;
    sorting_v = m->v;
    qsort(idx, n, sizeof *idx, cmp_claim);
    sorting_v = NULL;
    int rc = 0;
    for (size_t i = 0; i < n && !rc;) {
        const struct verdict *first = &m->v[idx[i]];
        size_t end = i + 1;
        while (end < n && m->v[idx[end]].process == first->process &&
               m->v[idx[end]].cls == first->cls &&
               strcmp(m->v[idx[end]].address, first->address) == 0)
            end++;
        if (end - i > 1) {
            size_t keep = (size_t)-1, nbest = 0;
            long best = -1;
            for (size_t j = i; j < end; j++) {
                long sc = m->v[idx[j]].score;
                if (sc > best) {
                    best = sc;
                    keep = idx[j];
                    nbest = 1;
                } else if (sc == best) {
                    nbest++;
                }
            }
            if (nbest != 1 || m->v[keep].ntied > 1)
                keep = (size_t)-1;
            const char *address = first->address;
            for (size_t j = i; j < end && !rc; j++) {
                struct verdict *w = &m->v[idx[j]];
                if (idx[j] == keep)
                    continue;
                tftap_buf note = TFTAP_BUF_INIT;
                tftap_buf_printf(&note, "%zu calls of one provider process agree with %s%s",
                                 end - i, address,
                                 keep != (size_t)-1 ? "; another agrees better" : "");
                w->address = NULL;
                free(w->tied);
                w->tied = NULL;
                w->ntied = 0;
                rc = set_note(w, &note);
            }
        }
        i = end;
    }
    free(idx);
    return rc;
}

void analysis_addresses_done(analysis_addresses *a)
{
    for (size_t i = 0; a && i < a->n; i++) {
        free((char *)a->v[i].address);
        free((char *)a->v[i].note);
    }
    if (a)
        free(a->v);
    if (a)
        *a = (analysis_addresses){0};
}

int analysis_match_addresses(store *s, int64_t run_id, const analysis_match_doc *docs, size_t ndocs,
                             const char *missing, analysis_addresses *out)
{
    sj_doc **parsed = NULL;
    struct instances is = {0};
    struct index ix = {0};
    struct matching m = {.is = &is, .ix = &ix, .ndocs = ndocs, .missing = missing};
    store_address_set *sets = NULL;
    int n_ok = 0, n_bad = 0, err = 0;
    *out = (analysis_addresses){0};
    if (ndocs) {
        parsed = calloc(ndocs, sizeof *parsed);
        if (!parsed) {
            err = TFTAP_ENOMEM;
            goto done;
        }
    }
    for (size_t d = 0; d < ndocs; d++) {
        err = sj_parse(docs[d].json, docs[d].len, TFTAP_JSON_MAX_DEPTH, &parsed[d]);
        if (!err) {
            is.group = docs[d].group;
            is.grouped |= docs[d].group != 0;
            if (docs[d].group > is.ngroups)
                is.ngroups = docs[d].group;
            err = am_instances_collect(&is, sj_root(parsed[d]), docs[d].after, docs[d].partial,
                                       docs[d].targets);
        }
        if (err)
            goto done;
    }
    is.group = 0;
    err = am_instances_imports(&is, s, run_id);
    if (!err)
        err = index_build(&ix, &is);
    if (err)
        goto done;
    m.scratch = malloc(MAX_TIED * sizeof *m.scratch);
    if (!m.scratch) {
        err = TFTAP_ENOMEM;
        goto done;
    }
    err = store_match_calls_each(s, run_id, on_call, &m);
    if (!err)
        err = m.err;
    if (!err)
        err = pair_ties(&m);
    if (!err)
        err = one_claim_each(&m);
    if (err)
        goto done;
    sets = calloc(m.n ? m.n : 1, sizeof *sets);
    if (!sets) {
        err = TFTAP_ENOMEM;
        goto done;
    }
    /* The addresses are the instances' (freed below): copied; the notes
     * move. */
    for (size_t i = 0; i < m.n; i++) {
        char *address = m.v[i].address ? strdup(m.v[i].address) : NULL;
        sets[i] = (store_address_set){m.v[i].call_id, address, m.v[i].note};
        m.v[i].note = NULL;
        if (m.v[i].address && !address)
            err = TFTAP_ENOMEM;
        if (m.v[i].address)
            n_ok++;
        else
            n_bad++;
    }
    *out = (analysis_addresses){sets, m.n, n_ok, n_bad};
    sets = NULL;
    if (err)
        analysis_addresses_done(out);
done:
    for (size_t i = 0; i < m.n; i++) {
        free(m.v[i].note);
        free(m.v[i].tied);
    }
    free(m.v);
    free(m.scratch);
    for (size_t i = 0; i < m.nrefreshed; i++)
        sj_free(m.refreshed[i]);
    free(m.refreshed);
    for (size_t i = 0; i < m.nrp; i++) {
        free(m.rp[i].type);
        free(m.rp[i].config);
    }
    free(m.rp);
    for (size_t d = 0; parsed && d < ndocs; d++)
        sj_free(parsed[d]);
    free(parsed);
    index_free(&ix);
    am_instances_free(&is);
    return err;
}
