/* Contract checks over a recorded run: each call's own rules, and the
 * final plan made during apply against the first plan of the same address
 * ("inconsistent final plan"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

/* How many earlier runs are searched for the plan a saved-plan apply
 * carries out. */
#define CHECK_EARLIER_RUNS 20

/* What a call's response says besides its states: its legacy_type_system
 * flag and its new identity. */
struct info {
    int legacy;
    char *identity; /* new_identity.identity_data as JSON text, or NULL */
};

static int read_response(const char *json, struct info *in)
{
    /* Two small members of a response that holds whole states: only they
     * are parsed. */
    static const char *const keys[] = {"legacy_type_system", "new_identity"};
    sj_span m[2];
    if (!json || sj_members(json, strlen(json), TFTAP_JSON_MAX_DEPTH, keys, 2, m) != 0)
        return 0;
    in->legacy = m[0].text && m[0].len == 4 && memcmp(m[0].text, "true", 4) == 0;
    sj_doc *d = NULL;
    if (m[1].text && sj_parse(m[1].text, m[1].len, TFTAP_JSON_MAX_DEPTH, &d) == 0) {
        const sj_node *x = sj_get(sj_root(d), "identity_data");
        if (x && x->kind != SJ_NULL) {
            tftap_buf b = TFTAP_BUF_INIT;
            sj_write(x, &b);
            if (!tftap_buf_failed(&b))
                in->identity = tftap_buf_take(&b, NULL);
            tftap_buf_done(&b);
            if (!in->identity) {
                sj_free(d);
                return TFTAP_ENOMEM;
            }
        }
    }
    sj_free(d);
    return 0;
}

/* A plan or apply kept for the final-plan comparison. */
struct pc {
    int64_t id, process, started;
    int apply;
    char *address, *planned, *schema, *type_name;
};

struct pcs {
    struct pc *v;
    size_t n, cap;
};

static void pcs_done(struct pcs *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].address);
        free(p->v[i].planned);
        free(p->v[i].schema);
        free(p->v[i].type_name);
    }
    free(p->v);
    memset(p, 0, sizeof *p);
}

static int pcs_add(struct pcs *p, const store_change_row *r, int64_t process)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct pc *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        p->v = v;
        p->cap = cap;
    }
    struct pc *x = &p->v[p->n];
    memset(x, 0, sizeof *x);
    x->id = r->call_id;
    x->process = process;
    x->started = r->started_us;
    x->apply = strcmp(r->rpc, "ApplyResourceChange") == 0;
    x->address = strdup(r->address);
    x->planned = r->planned ? strdup(r->planned) : NULL;
    x->schema = r->block_schema ? strdup(r->block_schema) : NULL;
    x->type_name = r->type_name ? strdup(r->type_name) : NULL;
    p->n++;
    if (!x->address || (r->planned && !x->planned) || (r->block_schema && !x->schema) ||
        (r->type_name && !x->type_name))
        return TFTAP_ENOMEM;
    return 0;
}

static int has_error_diag(const char *diags)
{
    sj_doc *d = NULL;
    int err = 0;
    if (diags && sj_parse(diags, strlen(diags), TFTAP_JSON_MAX_DEPTH, &d) == 0) {
        const sj_node *r = sj_root(d);
        for (const sj_node *x = r && r->kind == SJ_ARRAY ? r->child : NULL; x && !err;
             x = x->next) {
            const sj_node *sev = sj_get(x, "severity");
            err = sev && sev->kind == SJ_STRING && strcmp(sev->str, "ERROR") == 0;
        }
    }
    sj_free(d);
    return err;
}

static int dup_or_null(const char *s, char **out)
{
    *out = s ? strdup(s) : NULL;
    return s && !*out ? TFTAP_ENOMEM : 0;
}

static int planned_null(const char *planned)
{
    return !planned || strcmp(planned, "null") == 0;
}

/* Addresses by what a call planned: a call the address matching could not
 * name (an apply whose result is null is in no state, a plan not saved to
 * a file names no new object, the first plan of an object whose apply
 * changed it) takes the address of a call of the same run and type that
 * planned the same state, when only one address did. */
struct named {
    int64_t call_id;
    char *type_name, *planned, *address;
};

struct names {
    struct named *v;
    size_t n, cap;
    int err;
};

static void names_done(struct names *ns)
{
    for (size_t i = 0; i < ns->n; i++) {
        free(ns->v[i].type_name);
        free(ns->v[i].planned);
        free(ns->v[i].address);
    }
    free(ns->v);
}

/* The planned state with object members in byte order (a provider may
 * encode a map in any order), or NULL. */
static char *canonical(const char *json)
{
    sj_doc *d = NULL;
    char *out = NULL;
    if (json && strcmp(json, "null") != 0 &&
        sj_parse(json, strlen(json), TFTAP_JSON_MAX_DEPTH, &d) == 0) {
        tftap_buf b = TFTAP_BUF_INIT;
        if (sj_write_sorted(sj_root(d), &b) == 0 && !tftap_buf_failed(&b))
            out = tftap_buf_take(&b, NULL);
        tftap_buf_done(&b);
    }
    sj_free(d);
    return out;
}

static int is_plan_or_apply(const char *rpc)
{
    return rpc &&
           (strcmp(rpc, "PlanResourceChange") == 0 || strcmp(rpc, "ApplyResourceChange") == 0);
}

/* stale: the row's address may change before judging (struct pass). */
static int name_row(struct names *ns, const store_change_row *r, int stale)
{
    if ((!r->address && !stale) || !r->type_name || !is_plan_or_apply(r->rpc))
        return 0;
    char *planned = canonical(r->planned);
    if (!planned)
        return 0;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        struct named *v = realloc(ns->v, cap * sizeof *v);
        if (!v) {
            free(planned);
            return ns->err = TFTAP_ENOMEM;
        }
        ns->v = v;
        ns->cap = cap;
    }
    struct named *x = &ns->v[ns->n++];
    x->call_id = r->call_id;
    x->planned = planned;
    x->type_name = strdup(r->type_name);
    x->address = NULL;
    if (!x->type_name || dup_or_null(stale ? NULL : r->address, &x->address))
        return ns->err = TFTAP_ENOMEM;
    return 0;
}

/* The one address of calls that planned the same, or NULL (none, or two). */
static int named_cmp(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->type_name, y->type_name);
    return c ? c : strcmp(x->planned, y->planned);
}

/* names must be sorted with named_cmp. */
static const char *name_of(const struct names *ns, const store_change_row *r)
{
    if (!ns || !ns->n || !r->type_name || !is_plan_or_apply(r->rpc))
        return NULL;
    char *planned = canonical(r->planned);
    if (!planned)
        return NULL;
    /* The first entry not ordered before the key, then its equals. */
    struct named key = {0, (char *)r->type_name, planned, NULL};
    size_t lo = 0, hi = ns->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (named_cmp(&ns->v[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const char *found = NULL;
    for (size_t i = lo; i < ns->n && named_cmp(&ns->v[i], &key) == 0; i++) {
        if (found && strcmp(found, ns->v[i].address) != 0) {
            found = NULL;
            break;
        }
        found = ns->v[i].address;
    }
    free(planned);
    return found;
}

/* A change to judge, kept from the one pass over the run's changes: the
 * calls it cannot name yet are named from every plan of the run, which
 * only the whole pass knows. */
struct kept {
    int64_t call_id, process_id, started_us;
    char *rpc, *type_name, *address, *prior, *config, *planned, *new_state, *requires_replace;
    const char *block_schema;         /* interned in struct pass */
    const sj_node *block_schema_node; /* parsed there, or NULL */
    int has_error;
    struct info info;
    size_t found_first, found_n; /* its findings in struct pass's found */
};

/* The rows a pass yields are valid only until the next: a run's changes
 * use a few block schemas, each kept once. */
struct schema_text {
    const char *row; /* the pointer the rows carried */
    char *copy;
    sj_doc *doc; /* copy parsed (NULL: malformed, each call says so) */
};

/* stale: read while the run's addresses were being matched (another
 * connection); they are read again before judging, and the rows' own are
 * not kept. applied: the run has an apply, whose replacements the store
 * pairs by address (requires_replace): read again whole. */
struct pass {
    struct names *names;
    struct kept *v;
    size_t n, cap;
    struct schema_text *schemas;
    size_t nschemas, schemas_cap;
    int err, stale, applied;
    /* Each call judged on its own as it is read (without its address,
     * which judging only carries); moved out with their addresses. */
    analysis_findings found;
};

static void pass_done(struct pass *p)
{
    for (size_t i = 0; i < p->n; i++) {
        struct kept *k = &p->v[i];
        free(k->rpc);
        free(k->type_name);
        free(k->address);
        free(k->prior);
        free(k->config);
        free(k->planned);
        free(k->new_state);
        free(k->requires_replace);
        free(k->info.identity);
    }
    free(p->v);
    for (size_t i = 0; i < p->nschemas; i++) {
        free(p->schemas[i].copy);
        sj_free(p->schemas[i].doc);
    }
    free(p->schemas);
    analysis_findings_done(&p->found);
}

static int intern_schema(struct pass *p, const char *text, const char **out, const sj_node **node)
{
    *out = NULL;
    *node = NULL;
    if (!text)
        return 0;
    for (size_t i = 0; i < p->nschemas; i++)
        if (p->schemas[i].row == text || strcmp(p->schemas[i].copy, text) == 0) {
            p->schemas[i].row = text;
            *out = p->schemas[i].copy;
            *node = p->schemas[i].doc ? sj_root(p->schemas[i].doc) : NULL;
            return 0;
        }
    if (p->nschemas == p->schemas_cap) {
        size_t cap = p->schemas_cap ? p->schemas_cap * 2 : 8;
        struct schema_text *v = realloc(p->schemas, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        p->schemas = v;
        p->schemas_cap = cap;
    }
    char *copy = strdup(text);
    if (!copy)
        return TFTAP_ENOMEM;
    sj_doc *doc = NULL;
    int rc = sj_parse(copy, strlen(copy), TFTAP_JSON_MAX_DEPTH, &doc);
    if (rc == TFTAP_ENOMEM) {
        free(copy);
        return rc;
    }
    p->schemas[p->nschemas++] = (struct schema_text){text, copy, rc == 0 ? doc : NULL};
    *out = copy;
    *node = rc == 0 ? sj_root(doc) : NULL;
    return 0;
}

static int pass_row(void *ctx, const store_change_row *r)
{
    struct pass *p = ctx;
    if (r->rpc && strcmp(r->rpc, "ApplyResourceChange") == 0)
        p->applied = 1;
    int e = name_row(p->names, r, p->stale);
    if (e)
        return p->err = e;
    if (!r->has_status || r->status_code != 0)
        return 0; /* no answer to judge */
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        struct kept *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return p->err = TFTAP_ENOMEM;
        p->v = v;
        p->cap = cap;
    }
    struct kept *k = &p->v[p->n++];
    memset(k, 0, sizeof *k);
    k->call_id = r->call_id;
    k->process_id = r->process_id;
    k->started_us = r->started_us;
    k->has_error = has_error_diag(r->diagnostics);
    if ((e = dup_or_null(r->rpc, &k->rpc)) || (e = dup_or_null(r->type_name, &k->type_name)) ||
        (e = dup_or_null(p->stale ? NULL : r->address, &k->address)) ||
        (e = dup_or_null(r->prior, &k->prior)) || (e = dup_or_null(r->config, &k->config)) ||
        (e = dup_or_null(r->planned, &k->planned)) ||
        (e = dup_or_null(r->new_state, &k->new_state)) ||
        (e = dup_or_null(r->requires_replace, &k->requires_replace)) ||
        (e = intern_schema(p, r->block_schema, &k->block_schema, &k->block_schema_node)))
        return p->err = e;
    /* What the calls of these methods answer besides their states. */
    if (r->rpc && (is_plan_or_apply(r->rpc) || strcmp(r->rpc, "ReadResource") == 0) &&
        (e = read_response(r->response_json, &k->info)))
        return p->err = e;
    return 0;
}

struct run_ctx {
    const struct names *names;
    analysis_findings *out;
    struct pcs pcs;
    int err;
};

/* The call of k as the rules see it (address: NULL while judging, which
 * only carries it into findings). */
static analysis_call call_of(const struct kept *k, const char *address)
{
    return (analysis_call){
        .call_id = k->call_id,
        .rpc = k->rpc,
        .type_name = k->type_name,
        .address = address,
        .block_schema = k->block_schema,
        .block_schema_node = k->block_schema_node,
        .prior = k->prior,
        .config = k->config,
        .planned = k->planned,
        .new_state = k->new_state,
        .requires_replace = k->requires_replace,
        .identity = k->info.identity,
        .legacy = k->info.legacy,
        .has_error = k->has_error,
    };
}

/* Judge each kept call on its own, as soon as it is read: in tftap run that
 * is beside the address matching, which its findings do not wait for. */
static int judge_each(struct pass *p)
{
    for (size_t i = 0; i < p->n; i++) {
        struct kept *k = &p->v[i];
        analysis_call c = call_of(k, NULL);
        k->found_first = p->found.n;
        if (analysis_check_call(&c, &p->found) == TFTAP_ENOMEM)
            return TFTAP_ENOMEM;
        k->found_n = p->found.n - k->found_first;
    }
    return 0;
}

/* Move n findings from from (at first) to the end of to, each with address
 * (copied; may be NULL). */
static int findings_move(analysis_findings *from, size_t first, size_t n, analysis_findings *to,
                         const char *address)
{
    if (to->n + n > to->cap) {
        size_t cap = to->cap ? to->cap : 16;
        while (cap < to->n + n)
            cap *= 2;
        analysis_finding *v = realloc(to->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        to->v = v;
        to->cap = cap;
    }
    for (size_t i = first; i < first + n; i++) {
        analysis_finding *f = &from->v[i];
        if (address && !(f->address = strdup(address)))
            return TFTAP_ENOMEM;
        to->v[to->n++] = *f;
        memset(f, 0, sizeof *f); /* now to's */
    }
    return 0;
}

static int change_row(struct run_ctx *rc, struct pass *p, const struct kept *k)
{
    store_change_row named = {
        .call_id = k->call_id,
        .rpc = k->rpc,
        .type_name = k->type_name,
        .address = k->address,
        .planned = k->planned,
    };
    if (!named.address)
        named.address = name_of(rc->names, &named);
    int e = findings_move(&p->found, k->found_first, k->found_n, rc->out, named.address);
    if (e)
        return rc->err = e;
    if (named.address && !k->has_error &&
        (strcmp(k->rpc, "PlanResourceChange") == 0 || strcmp(k->rpc, "ApplyResourceChange") == 0)) {
        store_change_row r = named;
        r.prior = k->prior;
        r.config = k->config;
        r.new_state = k->new_state;
        r.requires_replace = k->requires_replace;
        r.has_status = 1;
        r.started_us = k->started_us;
        r.block_schema = k->block_schema;
        r.process_id = k->process_id;
        if ((e = pcs_add(&rc->pcs, &r, k->process_id)))
            return rc->err = e;
    }
    return 0;
}

/* Plans of one address in an earlier run. */
struct earlier {
    const char *address;
    struct pcs pcs;
    int applied, err;
};

static int earlier_row(void *ctx, const store_change_row *r)
{
    struct earlier *e = ctx;
    if (!r->address || strcmp(r->address, e->address) != 0)
        return 0;
    if (strcmp(r->rpc, "ApplyResourceChange") == 0)
        e->applied = 1;
    else if (strcmp(r->rpc, "PlanResourceChange") == 0 && r->has_status && r->status_code == 0 &&
             !planned_null(r->planned) && !has_error_diag(r->diagnostics) &&
             (e->err = pcs_add(&e->pcs, r, 0)))
        return e->err;
    return 0;
}

struct runs {
    int64_t *v;
    size_t n, cap;
    int64_t before;
};

static int run_row(void *ctx, const store_run_row *row)
{
    struct runs *rs = ctx;
    if (row->id >= rs->before)
        return 0;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 16;
        int64_t *v = realloc(rs->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        rs->v = v;
        rs->cap = cap;
    }
    rs->v[rs->n++] = row->id;
    return 0;
}

static int desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x > y ? -1 : x < y;
}

/* The first plan of an address a saved-plan apply carries out: the last
 * plan of it in the latest earlier run that planned it without applying. */
static int earlier_plan(store *s, const struct runs *rs, const char *address, struct pc *out,
                        int *found)
{
    *found = 0;
    for (size_t i = 0; i < rs->n && i < CHECK_EARLIER_RUNS; i++) {
        struct earlier e = {address, {NULL, 0, 0}, 0, 0};
        int rc = store_changes_each_judged(s, rs->v[i], address, earlier_row, &e);
        if (rc == 0)
            rc = e.err;
        if (rc) {
            pcs_done(&e.pcs);
            return rc;
        }
        if (e.applied || e.pcs.n) {
            if (!e.applied) {
                *out = e.pcs.v[e.pcs.n - 1];
                e.pcs.n--; /* ownership moves to out */
                *found = 1;
            }
            pcs_done(&e.pcs);
            return 0;
        }
        pcs_done(&e.pcs);
    }
    return 0;
}

static int pc_cmp(const void *a, const void *b)
{
    const struct pc *x = a, *y = b;
    int c = strcmp(x->address, y->address);
    if (c)
        return c;
    if (x->started != y->started)
        return x->started < y->started ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Does the run apply a saved plan? Its plans are then final plans of the
 * plan an earlier run saved. */
static int run_row_saved(void *ctx, const store_run_row *row)
{
    int *v = ctx;
    v[0] = tftap_args_apply_saved_plan(row->args_json);
    v[1] = tftap_args_subcommand_is(row->args_json, "test");
    return 0;
}

/* Each plan made by a later walk (a provider process of its own) is the
 * final plan of the latest plan of the same address an earlier walk made:
 * core checks the two agree before it applies. */
static int final_plans(store *s, int64_t run_id, struct pcs *p, analysis_findings *out)
{
    struct runs rs = {NULL, 0, 0, run_id};
    int rc = 0, have_runs = 0, kind[2] = {0, 0};
    if ((rc = store_run_get(s, run_id, run_row_saved, kind)))
        return rc;
    /* A test's run blocks plan one after the other, each with values of
     * its own: a final plan is only an apply walk's (its process then
     * applies the address), of the latest plan since the address was
     * last applied (a plan after an apply is another run block's). */
    int saved = kind[0], tests = kind[1];
    /* By address, then start: each plan compares within its address. */
    if (p->n)
        qsort(p->v, p->n, sizeof *p->v, pc_cmp);
    size_t group = 0;
    for (size_t i = 0; i < p->n && !rc; i++) {
        const struct pc *x = &p->v[i];
        if (i > 0 && strcmp(p->v[i - 1].address, x->address) != 0)
            group = i;
        if (x->apply || planned_null(x->planned))
            continue;
        const struct pc *first = NULL;
        int64_t applied = INT64_MIN; /* the last apply of the address before x (tests) */
        int applies = !tests;        /* x's process applies the address after x */
        for (size_t j = group; tests && j < p->n && strcmp(p->v[j].address, x->address) == 0; j++) {
            const struct pc *y = &p->v[j];
            if (y->apply && y->started < x->started && y->started > applied)
                applied = y->started;
            if (y->apply && y->process == x->process && y->started > x->started)
                applies = 1;
        }
        if (!applies)
            continue;
        for (size_t j = group; j < p->n && strcmp(p->v[j].address, x->address) == 0; j++) {
            const struct pc *y = &p->v[j];
            if (y->apply || y->process == x->process || strcmp(y->address, x->address) != 0 ||
                y->started >= x->started || y->started <= applied || planned_null(y->planned))
                continue;
            if (!first || y->started >= first->started)
                first = y;
        }
        analysis_call fin = {.call_id = x->id,
                             .rpc = "PlanResourceChange",
                             .type_name = x->type_name,
                             .address = x->address,
                             .block_schema = x->schema,
                             .planned = x->planned};
        if (first) {
            analysis_call fc = {.call_id = first->id, .planned = first->planned};
            rc = analysis_check_final_plan(&fc, &fin, out);
        } else if (saved) {
            if (!have_runs) {
                if ((rc = store_runs_each(s, run_row, &rs)))
                    break;
                if (rs.n)
                    qsort(rs.v, rs.n, sizeof *rs.v, desc);
                have_runs = 1;
            }
            struct pc e;
            int found;
            if ((rc = earlier_plan(s, &rs, x->address, &e, &found)) || !found)
                continue;
            analysis_call fc = {.call_id = e.id, .planned = e.planned};
            rc = analysis_check_final_plan(&fc, &fin, out);
            free(e.address);
            free(e.planned);
            free(e.schema);
            free(e.type_name);
        }
        if (rc == TFTAP_EDECODE)
            rc = 0; /* counted as unchecked */
    }
    free(rs.v);
    return rc;
}

struct analysis_check_pass {
    int64_t run_id;
    struct names names;
    struct pass pass;
};

void analysis_check_pass_free(analysis_check_pass *c)
{
    if (!c)
        return;
    pass_done(&c->pass);
    names_done(&c->names);
    free(c);
}

/* One pass over the changes: each query of them costs as much as all the
 * judging (the views extract every state from the calls' JSON). */
static int check_read(store *s, int64_t run_id, const char *filter, int stale,
                      analysis_check_pass **out)
{
    *out = NULL;
    analysis_check_pass *c = calloc(1, sizeof *c);
    if (!c)
        return TFTAP_ENOMEM;
    c->run_id = run_id;
    c->pass.names = &c->names;
    c->pass.stale = stale;
    int rc = store_changes_each_judged(s, run_id, filter, pass_row, &c->pass);
    if (c->pass.err)
        rc = c->pass.err;
    if (c->names.err)
        rc = c->names.err;
    if (!rc)
        rc = judge_each(&c->pass);
    if (rc) {
        analysis_check_pass_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int analysis_check_read(store *s, int64_t run_id, analysis_check_pass **out)
{
    return check_read(s, run_id, NULL, 1, out);
}

/* Call ids and their addresses now, in id order. */
struct addrs {
    int64_t *id;
    char **address;
    size_t n, cap;
    int err;
};

static int addr_row(void *ctx, int64_t call_id, const char *address)
{
    struct addrs *a = ctx;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        int64_t *id = realloc(a->id, cap * sizeof *id);
        if (id)
            a->id = id;
        char **ad = id ? realloc(a->address, cap * sizeof *ad) : NULL;
        if (!ad)
            return a->err = TFTAP_ENOMEM;
        a->address = ad;
        a->cap = cap;
    }
    a->id[a->n] = call_id;
    if (dup_or_null(address, &a->address[a->n]))
        return a->err = TFTAP_ENOMEM;
    a->n++;
    return 0;
}

static void addrs_done(struct addrs *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->address[i]);
    free(a->id);
    free(a->address);
}

static int addr_of(const struct addrs *a, int64_t call_id, char **out)
{
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->id[mid] < call_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    free(*out);
    return dup_or_null(lo < a->n && a->id[lo] == call_id ? a->address[lo] : NULL, out);
}

/* The addresses of a stale pass, as a pass now would have read them. */
static int refresh(store *s, analysis_check_pass *c)
{
    struct addrs a = {NULL, NULL, 0, 0, 0};
    int rc = store_call_addresses_each(s, c->run_id, addr_row, &a);
    if (!rc)
        rc = a.err;
    for (size_t i = 0; !rc && i < c->pass.n; i++)
        rc = addr_of(&a, c->pass.v[i].call_id, &c->pass.v[i].address);
    size_t kept = 0;
    for (size_t i = 0; i < c->names.n; i++) {
        struct named *x = &c->names.v[i];
        if (!rc)
            rc = addr_of(&a, x->call_id, &x->address);
        if (rc || !x->address) {
            free(x->type_name);
            free(x->planned);
            free(x->address);
            continue;
        }
        c->names.v[kept++] = *x;
    }
    c->names.n = kept;
    addrs_done(&a);
    return rc;
}

int analysis_check_judge(store *s, analysis_check_pass *c, analysis_findings *out)
{
    int rc = 0;
    analysis_check_pass *fresh = NULL;
    if (c->pass.stale && c->pass.applied) {
        if ((rc = check_read(s, c->run_id, NULL, 0, &fresh)))
            return rc;
        c = fresh;
    } else if (c->pass.stale) {
        if ((rc = refresh(s, c)))
            return rc;
        c->pass.stale = 0;
    }
    struct names *ns = &c->names;
    if (ns->n)
        qsort(ns->v, ns->n, sizeof *ns->v, named_cmp);
    struct run_ctx ctx = {ns, out, {NULL, 0, 0}, 0};
    for (size_t i = 0; !rc && i < c->pass.n; i++)
        rc = change_row(&ctx, &c->pass, &c->pass.v[i]);
    if (ctx.err)
        rc = ctx.err;
    out->unchecked += c->pass.found.unchecked;
    if (!rc)
        rc = final_plans(s, c->run_id, &ctx.pcs, out);
    pcs_done(&ctx.pcs);
    analysis_check_pass_free(fresh);
    return rc;
}

int analysis_check_run(store *s, int64_t run_id, const char *filter, analysis_findings *out)
{
    analysis_check_pass *c = NULL;
    int rc = check_read(s, run_id, filter, 0, &c);
    if (!rc)
        rc = analysis_check_judge(s, c, out);
    int ended = 0;
    if (!rc && (rc = store_run_has_ended(s, run_id, &ended)) == 0)
        out->running = !ended;
    analysis_check_pass_free(c);
    return rc;
}

static void json_finding(tftap_buf *b, const analysis_finding *f)
{
    tftap_buf_printf(b, "{\"call_id\":%lld,\"method\":", (long long)f->call_id);
    analysis_json_str(b, f->rpc);
    tftap_buf_puts(b, ",\"type_name\":");
    analysis_json_str(b, f->type_name);
    tftap_buf_puts(b, ",\"address\":");
    analysis_json_str(b, f->address);
    tftap_buf_puts(b, ",\"rule\":");
    analysis_json_str(b, f->rule);
    tftap_buf_puts(b, ",\"path\":");
    analysis_json_str(b, f->path);
    tftap_buf_puts(b, ",\"verdict\":");
    analysis_json_str(b, analysis_verdict_name(f->verdict));
    tftap_buf_puts(b, ",\"expected\":");
    analysis_json_raw(b, f->expected);
    tftap_buf_puts(b, ",\"actual\":");
    analysis_json_raw(b, f->actual);
    tftap_buf_puts(b, ",\"message\":");
    analysis_json_str(b, f->message);
    if (f->other_call_id)
        tftap_buf_printf(b, ",\"compared_call_id\":%lld", (long long)f->other_call_id);
    tftap_buf_putc(b, '}');
}

int analysis_findings_json(const analysis_findings *f, int64_t run, size_t max_bytes,
                           tftap_buf *out)
{
    size_t violations = analysis_findings_violations(f),
           rejected = analysis_findings_count(f, ANALYSIS_REJECTS), shown = 0;
    tftap_buf_printf(out, "{\"run\":%lld,\"findings\":[", (long long)run);
    size_t start = out->len;
    for (size_t i = 0; i < f->n; i++) {
        if (max_bytes && out->len - start > max_bytes)
            break;
        tftap_buf_puts(out, i ? ",\n  " : "\n  ");
        json_finding(out, &f->v[i]);
        shown++;
    }
    tftap_buf_printf(out,
                     "%s],\"violations\":%zu,\"rejected\":%zu,\"tolerated\":%zu,\"drift\":%zu,"
                     "\"unchecked\":%zu",
                     f->n ? "\n" : "", violations, rejected, violations - rejected,
                     f->n - violations, f->unchecked);
    /* Only when cut short: the command line's output stays as it was. */
    if (shown < f->n)
        tftap_buf_printf(out, ",\"truncated\":%zu", f->n - shown);
    if (f->running)
        tftap_buf_puts(out, ",\"running\":true");
    tftap_buf_puts(out, "}\n");
    return tftap_buf_failed(out) ? TFTAP_ENOMEM : 0;
}
