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
 * was known (address_score.c scores them), and calls that agree with
 * several instances are paired with them only when those are equal in all
 * the call could tell. A wrong name is worse than none: the checker
 * compares a call with its instance's plan. */
#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "analysis/address_int.h"

#include <stdint.h>

#include <stdlib.h>
#include <string.h>

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
        const sj_node *dv = address_dynamic_value(v);
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
                const sj_node *o = address_object_member(b, m->key, m->key_len);
                if (pass && o)
                    continue; /* compared in the first pass */
                for (size_t i = 0; i < ncv; i++)
                    kid[i] = address_object_member(sub[i], m->key, m->key_len);
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
                             ? address_array_element(sub[i], j)
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
        if (address_kind_is_whole_object(k) && c->v[k] && c->v[k]->kind != SJ_NULL)
            cv[ncv++] = c->v[k];
    const struct instance *a = &is->v[tied[0]];
    for (size_t t = 1; t < n; t++) {
        const struct instance *b = &is->v[tied[t]];
        for (int m = 0; m < MO_N; m++) {
            if (address_earlier_read_superseded(c, a, m) &&
                address_earlier_read_superseded(c, b, m))
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
    const struct group *g = type ? address_index_group(m->ix, type, data) : NULL;
    struct call_sides cs;
    address_call_sides_fill(c, &cs);
    if (g) {
        candidates = address_comparable_count(g, &cs);
        address_score_side(is, m->ix, seq, g, 0, c, cs.v[0], cs.n[0], &r);
        address_score_side(is, m->ix, seq, g, 1, c, cs.v[1], cs.n[1], &r);
    }
    const char *what = data ? "data." : "";
    int is_new = !data && address_value_absent_or_opaque(c->v[K_PRIOR]);
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
    int is_new = address_value_absent_or_opaque(c->v[K_PRIOR]);
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
        !address_value_absent_or_opaque(c.v[K_NEW]))
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
        err = address_index_build(&ix, &is);
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
    address_index_free(&ix);
    am_instances_free(&is);
    return err;
}
