/* analysis: giving recorded calls their resource instance addresses.
 *
 * Provider calls name a resource type, never an address. What the CLI says
 * around a run names them: the state it started from (`CLI state pull`)
 * lists every existing object, `CLI show -json` of a saved plan or of the
 * state afterwards lists the objects the run planned or made. A call
 * belongs to the instance of its type (and mode: data sources apart) whose
 * values agree with the call's: most agreeing known attributes, none
 * disagreeing. A call about an existing object is compared by its prior
 * state with what the object was before; every call is compared with what
 * the plan or the state says after.
 *
 * Scoring every call against every instance of its type is quadratic: a
 * plan of 5,000 resources would compare 20,000 calls with 5,000 instances
 * each. Values that carry a string "id" cannot agree with values carrying
 * another, so instances are indexed by their ids and a call whose values
 * all carry one is scored only against the instances with one of its ids
 * (and those with a value without an id); the outcome is the same as
 * scoring them all. */
#include "analysis/analysis.h"

#include <stdint.h>

#include <stdlib.h>
#include <string.h>

#define MAX_VALS 4

struct instance {
    char *address; /* owned */
    const char *type;
    int data;                        /* a data source (mode "data") */
    const sj_node *before[MAX_VALS]; /* the object before the run */
    const sj_node *after[MAX_VALS];  /* planned or applied values */
    unsigned nbefore, nafter;
};

struct instances {
    struct instance *v;
    size_t n, cap;
    size_t *slots;  /* open addressing by address and mode: instance + 1, 0 empty */
    size_t nslots;  /* a power of two, at least twice n */
    int have_after; /* some document names objects as the run left them */
};

static void push_val(const sj_node **vals, unsigned *n, const sj_node *v)
{
    if (!v || v->kind == SJ_NULL || *n >= MAX_VALS)
        return;
    vals[(*n)++] = v;
}

static size_t address_hash(const char *address, size_t alen, int data)
{
    uint64_t h = 1469598103934665603u ^ (uint64_t)data; /* FNV-1a */
    for (size_t i = 0; i < alen; i++)
        h = (h ^ (unsigned char)address[i]) * 1099511628211u;
    return (size_t)h;
}

/* The slot of (address, data): its instance, or the empty slot for it. */
static size_t *address_slot(const struct instances *is, const char *address, size_t alen, int data)
{
    size_t mask = is->nslots - 1;
    for (size_t k = address_hash(address, alen, data) & mask;; k = (k + 1) & mask) {
        size_t *slot = &is->slots[k];
        if (*slot == 0)
            return slot;
        const struct instance *in = &is->v[*slot - 1];
        if (in->data == data && strncmp(in->address, address, alen) == 0 &&
            in->address[alen] == '\0')
            return slot;
    }
}

static int slots_grow(struct instances *is)
{
    size_t nslots = is->nslots ? is->nslots * 2 : 64;
    size_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return TFTAP_ENOMEM;
    free(is->slots);
    is->slots = slots;
    is->nslots = nslots;
    for (size_t i = 0; i < is->n; i++) {
        const struct instance *in = &is->v[i];
        *address_slot(is, in->address, strlen(in->address), in->data) = i + 1;
    }
    return 0;
}

/* address is copied; values live in their document. */
static int add_instance(struct instances *is, const char *address, size_t alen, const char *type,
                        int data, const sj_node *before, const sj_node *after)
{
    struct instance *in = NULL;
    if (is->nslots < 2 * (is->n + 1) && slots_grow(is) != 0)
        return TFTAP_ENOMEM;
    size_t *slot = address_slot(is, address, alen, data);
    if (*slot)
        in = &is->v[*slot - 1]; /* the same instance seen in another section */
    if (!in) {
        if (is->n == is->cap) {
            size_t cap = is->cap ? is->cap * 2 : 32;
            struct instance *v = realloc(is->v, cap * sizeof *v);
            if (!v)
                return TFTAP_ENOMEM;
            is->v = v;
            is->cap = cap;
        }
        char *a = malloc(alen + 1);
        if (!a)
            return TFTAP_ENOMEM;
        memcpy(a, address, alen);
        a[alen] = '\0';
        in = &is->v[is->n++];
        *slot = is->n;
        memset(in, 0, sizeof *in);
        in->address = a;
        in->type = type;
        in->data = data;
    }
    push_val(in->before, &in->nbefore, before);
    push_val(in->after, &in->nafter, after);
    if (after && after->kind != SJ_NULL)
        is->have_after = 1;
    return 0;
}

static int str_is(const sj_node *n, const char *s)
{
    return n && n->kind == SJ_STRING && strcmp(n->str, s) == 0;
}

static int mode_of(const sj_node *r, int *data)
{
    const sj_node *m = sj_get(r, "mode");
    *data = str_is(m, "data");
    return str_is(m, "managed") || *data;
}

/* A module's resources in `show -json` form, then its children. */
static int collect_module(struct instances *is, const sj_node *mod, int after, unsigned depth)
{
    if (!mod || depth > 64)
        return 0;
    const sj_node *res = sj_get(mod, "resources");
    if (res && res->kind == SJ_ARRAY) {
        for (const sj_node *r = res->child; r; r = r->next) {
            const sj_node *addr = sj_get(r, "address"), *type = sj_get(r, "type");
            int data;
            if (!mode_of(r, &data) || !addr || addr->kind != SJ_STRING || !type ||
                type->kind != SJ_STRING)
                continue;
            const sj_node *v = sj_get(r, "values");
            int rc = add_instance(is, addr->str, addr->len, type->str, data, after ? NULL : v,
                                  after ? v : NULL);
            if (rc)
                return rc;
        }
    }
    const sj_node *kids = sj_get(mod, "child_modules");
    if (kids && kids->kind == SJ_ARRAY)
        for (const sj_node *k = kids->child; k; k = k->next) {
            int rc = collect_module(is, k, after, depth + 1);
            if (rc)
                return rc;
        }
    return 0;
}

/* A raw state (`CLI state pull`, format 4): resources with their instances'
 * attributes; addresses are put together as the CLI writes them. */
static int collect_raw_state(struct instances *is, const sj_node *root, int after)
{
    const sj_node *res = sj_get(root, "resources");
    tftap_buf a = TFTAP_BUF_INIT;
    int rc = 0;
    if (!res || res->kind != SJ_ARRAY)
        return 0;
    for (const sj_node *r = res->child; r && !rc; r = r->next) {
        const sj_node *type = sj_get(r, "type"), *name = sj_get(r, "name"),
                      *module = sj_get(r, "module"), *insts = sj_get(r, "instances");
        int data;
        if (!mode_of(r, &data) || !type || type->kind != SJ_STRING || !name ||
            name->kind != SJ_STRING || !insts || insts->kind != SJ_ARRAY)
            continue;
        for (const sj_node *in = insts->child; in && !rc; in = in->next) {
            const sj_node *key = sj_get(in, "index_key"), *attrs = sj_get(in, "attributes");
            tftap_buf_reset(&a);
            if (module && module->kind == SJ_STRING && module->len)
                tftap_buf_printf(&a, "%s.", module->str);
            tftap_buf_printf(&a, "%s%s.%s", data ? "data." : "", type->str, name->str);
            if (key && key->kind == SJ_NUMBER) {
                tftap_buf_printf(&a, "[%.*s]", (int)key->len, key->str);
            } else if (key && key->kind == SJ_STRING) {
                tftap_buf_putc(&a, '[');
                tftap_buf_json_string(&a, key->str, key->len);
                tftap_buf_putc(&a, ']');
            }
            if (tftap_buf_failed(&a)) {
                rc = TFTAP_ENOMEM;
                break;
            }
            rc = add_instance(is, a.data, a.len, type->str, data, after ? NULL : attrs,
                              after ? attrs : NULL);
        }
    }
    tftap_buf_done(&a);
    return rc;
}

/* One document, whichever of the forms it is. */
static int collect(struct instances *is, const sj_node *root, int after)
{
    if (!root || root->kind != SJ_OBJECT)
        return TFTAP_EDECODE;
    if (!sj_get(root, "format_version") && sj_get(root, "resources"))
        return collect_raw_state(is, root, after);
    /* A saved plan: its changes say before and after themselves. */
    const sj_node *rcs = sj_get(root, "resource_changes");
    if (rcs && rcs->kind == SJ_ARRAY) {
        for (const sj_node *r = rcs->child; r; r = r->next) {
            const sj_node *addr = sj_get(r, "address"), *type = sj_get(r, "type"),
                          *ch = sj_get(r, "change");
            int data;
            if (!mode_of(r, &data) || !addr || addr->kind != SJ_STRING || !type ||
                type->kind != SJ_STRING)
                continue;
            int rc = add_instance(is, addr->str, addr->len, type->str, data, sj_get(ch, "before"),
                                  sj_get(ch, "after"));
            if (rc)
                return rc;
        }
    }
    /* The plan's prior state (data sources read while planning are there). */
    int rc = collect_module(
        is, sj_get(sj_get(sj_get(root, "prior_state"), "values"), "root_module"), 0, 0);
    /* A state. */
    if (!rc)
        rc = collect_module(is, sj_get(sj_get(root, "values"), "root_module"), after, 0);
    return rc;
}

struct score {
    long match, mismatch;
};

static int skip_value(const sj_node *n)
{
    return !n || n->kind == SJ_NULL || sj_is_unknown(n) || sj_is_sensitive(n) ||
           (n->kind == SJ_OBJECT && n->n == 1 && n->child->key_len && n->child->key[0] == '$');
}

/* A dynamic value as the decoder writes it: {"type": T, "value": V}. */
static const sj_node *dynamic_value(const sj_node *n)
{
    if (!n || n->kind != SJ_OBJECT || n->n != 2)
        return NULL;
    const sj_node *t = sj_get(n, "type"), *v = sj_get(n, "value");
    return t && v && (t->kind == SJ_STRING || t->kind == SJ_ARRAY) ? v : NULL;
}

/* Compare what the call knows against the instance's values. strict: a
 * null on one side where the other has a value disagrees (matching leaves
 * nulls out otherwise: a configuration's null may become anything). */
static void compare(const sj_node *call, const sj_node *inst, struct score *s, unsigned depth,
                    int strict)
{
    if (depth > 128)
        return;
    if (strict && call && inst && (call->kind == SJ_NULL) != (inst->kind == SJ_NULL) &&
        !(call->kind != SJ_NULL && skip_value(call))) {
        s->mismatch++;
        return;
    }
    if (skip_value(call) || !inst || inst->kind == SJ_NULL)
        return;
    if (call->kind == SJ_OBJECT) {
        /* `show -json` writes a dynamic value bare; a raw state keeps the
         * wrapper as we do. */
        const sj_node *dv = dynamic_value(call);
        if (dv && !(inst->kind == SJ_OBJECT && sj_get(inst, "type"))) {
            compare(dv, inst, s, depth + 1, strict);
            return;
        }
        if (inst->kind != SJ_OBJECT) {
            s->mismatch++;
            return;
        }
        for (const sj_node *m = call->child; m; m = m->next) {
            const sj_node *o = NULL;
            for (const sj_node *c = inst->child; c; c = c->next)
                if (c->key_len == m->key_len && memcmp(c->key, m->key, m->key_len) == 0) {
                    o = c;
                    break;
                }
            compare(m, o, s, depth + 1, strict);
        }
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
        for (const sj_node *a = call->child, *b = inst->child; a && b; a = a->next, b = b->next)
            compare(a, b, s, depth + 1, strict);
        return;
    }
    if (sj_equal(call, inst))
        s->match++;
    else
        s->mismatch++;
}

/* What one call says: its kind and its values. */
struct call_vals {
    int data;               /* ReadDataSource */
    const sj_node *prior;   /* the existing object, NULL for a new one */
    const sj_node *vals[5]; /* prior, proposed, config, planned, new */
    int strict[5];          /* a plan's or apply's planned, an apply's new state */
    size_t nvals;
};

/* How many nulls of the call's planned or new state the instance's values
 * contradict (and values of them it has null), at best: core keeps a
 * planned null null, so among instances that tie on everything else, those
 * that contradict fewer are the better ones. */
static long strict_mismatches(const struct call_vals *c, const struct instance *in)
{
    long total = 0;
    for (size_t i = 0; i < c->nvals; i++) {
        if (!c->strict[i] || skip_value(c->vals[i]))
            continue;
        long best = -1;
        for (unsigned j = 0; j < in->nafter; j++) {
            if (skip_value(in->after[j]))
                continue;
            struct score s = {0, 0};
            compare(c->vals[i], in->after[j], &s, 0, 1);
            if (best < 0 || (long)s.mismatch < best)
                best = (long)s.mismatch;
        }
        if (best > 0)
            total += best;
    }
    return total;
}

#define NO_PAIR (-2L)

/* Best pairing's agreeing leaves; -1 if every pairing disagrees somewhere;
 * NO_PAIR if nothing of the call could be held against the instance. */
static long pair_score(const sj_node *cv, const sj_node *const *iv, unsigned niv, long *best,
                       int *compared)
{
    for (unsigned j = 0; j < niv; j++) {
        if (skip_value(cv) || skip_value(iv[j]))
            continue;
        *compared = 1;
        struct score s = {0, 0};
        compare(cv, iv[j], &s, 0, 0);
        if (!s.mismatch && s.match > *best)
            *best = s.match;
    }
    return *best;
}

static long score_instance(const struct call_vals *c, const struct instance *in)
{
    long best = -1;
    int compared = 0;
    if (c->data) {
        /* Data sources are read again each run: any recorded values do. */
        for (size_t i = 0; i < c->nvals; i++) {
            pair_score(c->vals[i], in->before, in->nbefore, &best, &compared);
            pair_score(c->vals[i], in->after, in->nafter, &best, &compared);
        }
    } else {
        /* An existing object is known by what it was; a new one only by
         * what the plan or state afterwards says. */
        if (c->prior)
            pair_score(c->prior, in->before, in->nbefore, &best, &compared);
        for (size_t i = 0; i < c->nvals; i++)
            pair_score(c->vals[i], in->after, in->nafter, &best, &compared);
    }
    return compared ? best : NO_PAIR;
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

static void side_vals(const struct instance *in, int side, const sj_node *const **v, unsigned *n)
{
    *v = side ? in->after : in->before;
    *n = side ? in->nafter : in->nbefore;
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
                const sj_node *const *v;
                unsigned nv;
                side_vals(&is->v[order[j]], side, &v, &nv);
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
                const sj_node *const *v;
                unsigned nv;
                int must = 0;
                side_vals(&is->v[i], side, &v, &nv);
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
            for (unsigned x = 0; x < in->nbefore; x++)
                any |= !skip_value(in->before[x]);
            for (unsigned x = 0; x < in->nafter; x++)
                any |= !skip_value(in->after[x]);
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

/* How many instances of g score_instance() can compare c with at all
 * (the others are NO_PAIR): what the call has against what they have. */
static size_t comparable(const struct group *g, const struct call_vals *c)
{
    int vals = 0;
    for (size_t i = 0; i < c->nvals; i++)
        vals |= !skip_value(c->vals[i]);
    if (c->data)
        return vals ? g->n_either : 0;
    if (c->prior && !skip_value(c->prior))
        return g->n_either; /* the prior is one of the values too */
    return vals ? g->nwith[1] : 0;
}

static void instances_free(struct instances *is)
{
    for (size_t i = 0; i < is->n; i++)
        free(is->v[i].address);
    free(is->v);
    free(is->slots);
}

/* Best and ties among the instances scored so far. */
struct ranking {
    const char *best;
    long best_score;
    size_t ties;
    size_t *tied; /* the instances of the ties (best first), up to MAX_TIED */
};
/* Calls among more equal instances than this stay unnamed. */
#define MAX_TIED 4096

static void score_one(const struct instances *is, struct index *ix, size_t seq,
                      const struct call_vals *c, size_t i, struct ranking *r)
{
    if (ix->stamp[i] == seq)
        return;
    ix->stamp[i] = seq;
    long sc = score_instance(c, &is->v[i]);
    if (sc == NO_PAIR)
        return;
    if (sc > r->best_score) {
        r->best_score = sc;
        r->best = is->v[i].address;
        r->ties = 1;
        r->tied[0] = i;
    } else if (sc == r->best_score && sc >= 0) {
        if (r->ties < MAX_TIED)
            r->tied[r->ties] = i;
        r->ties++;
    }
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
    const char *rpc;
    const char *address; /* borrowed from the instances, or NULL */
    char *note;          /* owned, or NULL */
    size_t *tied;        /* owned: instances tied for it (ntied > 1), sorted */
    size_t ntied;
};

struct matching {
    const struct instances *is;
    struct index *ix;
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

/* Decide one call: an address, a tie among equal instances (paired later),
 * or a note saying why there is none. */
static int match_call(struct matching *m, const char *type, const struct call_vals *c,
                      struct verdict *out)
{
    const struct instances *is = m->is;
    struct ranking r = {NULL, -1, 0, m->scratch};
    size_t candidates = 0;
    tftap_buf note = TFTAP_BUF_INIT;
    size_t seq = ++m->seq;
    const struct group *g = type ? group_find(m->ix, type, c->data) : NULL;
    if (g) {
        candidates = comparable(g, c);
        /* As score_instance() pairs them: a data source's values with both
         * sides; a resource's prior with before, all its values with after. */
        if (c->data) {
            score_side(is, m->ix, seq, g, 0, c, c->vals, c->nvals, &r);
        } else if (c->prior) {
            score_side(is, m->ix, seq, g, 0, c, &c->prior, 1, &r);
        }
        score_side(is, m->ix, seq, g, 1, c, c->vals, c->nvals, &r);
    }
    /* Instances that tie are identical only as far as the call's values
     * tell: keep those whose nulls the call's planned or new state does
     * not contradict the most (a plan with little configured names the
     * instance without the values it left null). */
    if (r.ties > 1 && r.ties <= MAX_TIED && r.best_score >= 0) {
        long least = -1;
        for (size_t t = 0; t < r.ties; t++) {
            long mm = strict_mismatches(c, &is->v[r.tied[t]]);
            if (least < 0 || mm < least)
                least = mm;
        }
        size_t kept = 0;
        for (size_t t = 0; t < r.ties; t++)
            if (strict_mismatches(c, &is->v[r.tied[t]]) == least)
                r.tied[kept++] = r.tied[t];
        r.ties = kept;
        r.best = is->v[r.tied[0]].address;
    }
    const char *what = c->data ? "data." : "";
    if (!type)
        tftap_buf_puts(&note, "call has no resource type");
    else if (m->ndocs == 0)
        tftap_buf_puts(&note, m->missing ? m->missing : "no plan or state was read to match it");
    else if (candidates == 0 && !c->data && !c->prior && !is->have_after)
        tftap_buf_printf(&note,
                         "a new %s object: only a saved plan (plan -out=FILE) or the state after "
                         "an apply names new instances",
                         type);
    else if (candidates == 0)
        tftap_buf_printf(&note, "no %s%s instance in the plan or state", what, type);
    else if (r.best_score < 0)
        tftap_buf_printf(&note, "values match none of the %zu %s%s instances", candidates, what,
                         type);
    else if (r.ties > MAX_TIED)
        tftap_buf_printf(&note, "values match %zu %s%s instances equally", r.ties, what, type);
    else if (r.ties > 1) {
        out->tied = malloc(r.ties * sizeof *out->tied);
        if (!out->tied)
            return TFTAP_ENOMEM;
        memcpy(out->tied, r.tied, r.ties * sizeof *out->tied);
        sorting = is;
        qsort(out->tied, r.ties, sizeof *out->tied, cmp_tied);
        sorting = NULL;
        out->ntied = r.ties;
    } else
        out->address = r.best;
    if (note.len) {
        out->note = tftap_buf_take(&note, NULL);
        if (!out->note)
            return TFTAP_ENOMEM;
    }
    tftap_buf_done(&note);
    return 0;
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
    out->rpc = NULL;
    struct call_vals c;
    memset(&c, 0, sizeof c);
    c.data = call->rpc && strcmp(call->rpc, "ReadDataSource") == 0;
    int plan = call->rpc && strcmp(call->rpc, "PlanResourceChange") == 0;
    int apply = call->rpc && strcmp(call->rpc, "ApplyResourceChange") == 0;
    for (int i = 0; i < 5; i++) {
        const sj_node *v = call->values[i];
        if (v == NULL)
            continue;
        if (i == 0 && v->kind != SJ_NULL)
            c.prior = v;
        c.strict[c.nvals] = (i == 3 && (plan || apply)) || (i == 4 && apply);
        c.vals[c.nvals++] = v;
    }
    int rc = match_call(m, call->type_name, &c, out);
    if (!rc && call->rpc && !(out->rpc = strdup(call->rpc)))
        rc = TFTAP_ENOMEM;
    return m->err = rc;
}

/* Calls tied among the same equal instances, by the same method, are told
 * apart by order alone: the k-th such call (in call order) gets the k-th
 * instance (in address order), round again when the CLI asked about each
 * instance more than once (a plan, then the plan made during apply). */
static int same_ties(const struct verdict *a, const struct verdict *b)
{
    return a->ntied == b->ntied && strcmp(a->rpc ? a->rpc : "", b->rpc ? b->rpc : "") == 0 &&
           memcmp(a->tied, b->tied, a->ntied * sizeof *a->tied) == 0;
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

static int pair_ties(struct matching *m)
{
    const struct instances *is = m->is;
    for (size_t i = 0; i < m->n; i++) {
        struct verdict *v = &m->v[i];
        if (v->ntied < 2 || v->address)
            continue;
        size_t k = 0;
        for (size_t j = i; j < m->n; j++) {
            struct verdict *w = &m->v[j];
            if (w->ntied < 2 || w->address || !same_ties(v, w))
                continue;
            size_t pick = w->tied[k++ % w->ntied];
            w->address = is->v[pick].address;
            tftap_buf note = TFTAP_BUF_INIT;
            /* "identical to web[1], web[2]": the others, named as the
             * resource is named, the module and type said once. */
            size_t pl = name_prefix_len(w->address);
            tftap_buf_puts(&note, "identical to ");
            int first = 1;
            for (size_t t = 0; t < w->ntied; t++) {
                const char *other = is->v[w->tied[t]].address;
                if (w->tied[t] == pick)
                    continue;
                if (!first)
                    tftap_buf_puts(&note, ", ");
                first = 0;
                if (strncmp(other, w->address, pl) == 0)
                    other += pl;
                tftap_buf_puts(&note, other);
            }
            free(w->note);
            w->note = tftap_buf_take(&note, NULL);
            if (!w->note)
                return TFTAP_ENOMEM;
        }
    }
    return 0;
}

int analysis_match_addresses(store *s, int64_t run_id, const analysis_match_doc *docs, size_t ndocs,
                             const char *missing, int *matched, int *unmatched)
{
    sj_doc **parsed = NULL;
    struct instances is = {0};
    struct index ix = {0};
    struct matching m = {&is, &ix, ndocs, missing, 0, NULL, 0, 0, NULL, 0};
    store_address_set *sets = NULL;
    int n_ok = 0, n_bad = 0, err = 0;
    if (ndocs) {
        parsed = calloc(ndocs, sizeof *parsed);
        if (!parsed) {
            err = TFTAP_ENOMEM;
            goto done;
        }
    }
    for (size_t d = 0; d < ndocs; d++) {
        err = sj_parse(docs[d].json, docs[d].len, TFTAP_JSON_MAX_DEPTH, &parsed[d]);
        if (!err)
            err = collect(&is, sj_root(parsed[d]), docs[d].after);
        if (err)
            goto done;
    }
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
    if (err)
        goto done;
    sets = calloc(m.n ? m.n : 1, sizeof *sets);
    if (!sets) {
        err = TFTAP_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < m.n; i++) {
        sets[i] = (store_address_set){m.v[i].call_id, m.v[i].address, m.v[i].note};
        if (m.v[i].address)
            n_ok++;
        else
            n_bad++;
    }
    err = store_set_addresses(s, sets, m.n);
done:
    free(sets);
    for (size_t i = 0; i < m.n; i++) {
        free(m.v[i].note);
        free(m.v[i].tied);
        free((char *)m.v[i].rpc);
    }
    free(m.v);
    free(m.scratch);
    for (size_t d = 0; parsed && d < ndocs; d++)
        sj_free(parsed[d]);
    free(parsed);
    index_free(&ix);
    instances_free(&is);
    if (matched)
        *matched = err ? 0 : n_ok;
    if (unmatched)
        *unmatched = err ? 0 : n_bad;
    return err;
}
