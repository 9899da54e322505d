/* store: a run's resource changes as v_resource_changes lists them (how
 * its calls relate: a plan told again by its apply, the two halves of a
 * replacement; each type's schema block for rendering), its diagnostics,
 * and the calls the address matching reads and the addresses it writes
 * back (call_addresses). */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"

/* A filter (?2) keeps a type's changes, or those of addresses it matches
 * (tftap_filter_keeps): the query keeps the type's and every named change,
 * the rows are filtered as they are read. */
#define FILTER_SQL "(CAST(?2 AS TEXT) IS NULL OR type_name = ?2 OR address IS NOT NULL)"

/* ---- how the changes of a run relate ----------------------------------------
 *
 * A plan whose planned state a later apply carries is told again, with its
 * outcome, by that apply; and a replacement is planned as two calls, the
 * replacing one (prior -> planned, requires_replace set) and the create half
 * (null -> planned, same config), which read as one "-/+" change. Found by
 * digests of the JSON texts, sorted, so that large runs stay O(n log n). */

enum { K_PLAN, K_APPLY, K_OTHER };

struct rel {
    int64_t id;
    int64_t started_us;
    int kind;
    int prior_null, replaces, failed;
    char *type;
    char *address;                /* matched after the run, or NULL */
    char planned[65], config[65]; /* "" when absent */
    int superseded;
    int64_t create_half; /* replaces: the call planning the new object */
    int64_t forced_by;   /* destroyed set: the plan in the run that asked for the
                            replacement (its requires_replace), or 0 */
    int64_t destroyed;   /* an apply creating an object: the apply destroying its
                            predecessor at the same address, when there is one */
};

struct rels {
    struct rel *v;
    size_t n;
};

static void rels_free(struct rels *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].type);
        free(r->v[i].address);
    }
    free(r->v);
}

/* The digest of a value's canonical text (members sorted), or "" for none:
 * the CLI sends a planned map's keys sorted, a provider may not, and the
 * two must compare equal. Unparsable text is digested as it is. */
static void digest_or_empty(sdb_stmt *st, int col, char out[65])
{
    const char *t = store_col_text(st, col);
    out[0] = '\0';
    if (!t || strcmp(t, "null") == 0)
        return;
    size_t n = (size_t)sdb_column_bytes(st, col);
    sj_doc *d = NULL;
    tftap_buf canon = TFTAP_BUF_INIT;
    if (sj_parse(t, n, TFTAP_JSON_MAX_DEPTH, &d) == 0 && sj_write_sorted(sj_root(d), &canon) == 0 &&
        !tftap_buf_failed(&canon) && canon.len > 0)
        tftap_sha256_hex(canon.data, canon.len, out);
    else
        tftap_sha256_hex(t, n, out);
    sj_free(d);
    tftap_buf_done(&canon);
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Which of two calls came first: the one that started first, then the
 * lower id. Not the id alone: ids are the order recorders wrote rows in,
 * and each provider process has its own recorder, so a slow one's earlier
 * call can get a later id. */
static int cmp_order(const struct rel *a, const struct rel *b)
{
    if (a->started_us != b->started_us)
        return (a->started_us > b->started_us) - (a->started_us < b->started_us);
    return (a->id > b->id) - (a->id < b->id);
}

/* Applies by (type, planned), searched by that key; sorted with their
 * order as well, so that the last of equals is the latest. Create halves
 * by (type, config, order). */
static int cmp_apply(const void *x, const void *y)
{
    const struct rel *a = *(const struct rel *const *)x, *b = *(const struct rel *const *)y;
    int c = cmp_str(a->type, b->type);
    return c ? c : strcmp(a->planned, b->planned);
}

static int cmp_apply_order(const void *x, const void *y)
{
    int c = cmp_apply(x, y);
    return c ? c : cmp_order(*(const struct rel *const *)x, *(const struct rel *const *)y);
}

/* Applies by (address, order). */
static int cmp_applied(const void *x, const void *y)
{
    const struct rel *a = *(const struct rel *const *)x, *b = *(const struct rel *const *)y;
    int c = cmp_str(a->address, b->address);
    return c ? c : cmp_order(a, b);
}

static int cmp_half(const void *x, const void *y)
{
    const struct rel *a = *(const struct rel *const *)x, *b = *(const struct rel *const *)y;
    int c = cmp_str(a->type, b->type);
    if (!c)
        c = strcmp(a->config, b->config);
    return c ? c : cmp_order(a, b);
}

static int load_rels(store *s, int64_t run_id, struct rels *out)
{
    sdb_stmt *st = NULL;
    /* Only an apply's failure is read (a replacement carried out): other
     * rows skip the view's failed, which parses their diagnostics again. */
#define RELS_SQL(len)                                                                              \
    "SELECT call_id, method, type_name, prior, planned, config, coalesce(" len ", 0), address, "   \
    "CASE method WHEN 'ApplyResourceChange' THEN "                                                 \
    "(SELECT failed FROM v_calls v WHERE v.call_id = v_resource_changes.call_id) END, "            \
    "started_us FROM v_resource_changes WHERE run_id = ? ORDER BY call_id"
    /* SQLite's json_array_length says 0 for a non-array, PostgreSQL's raises. */
    int rc = sdb_prepare(s->db,
                         SDB_SQL(s->db, RELS_SQL("json_array_length(requires_replace)"),
                                 RELS_SQL("CASE WHEN json_typeof(requires_replace) = 'array' "
                                          "THEN json_array_length(requires_replace) END")),
                         &st);
#undef RELS_SQL
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    size_t cap = 0;
    int err = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            struct rel *v = realloc(out->v, cap * sizeof *v);
            if (!v) {
                err = TFTAP_ENOMEM;
                break;
            }
            out->v = v;
        }
        struct rel *r = &out->v[out->n];
        memset(r, 0, sizeof *r);
        const char *m = store_col_text(st, 1);
        r->id = sdb_column_int64(st, 0);
        r->kind = !m                                      ? K_OTHER
                  : strcmp(m, "PlanResourceChange") == 0  ? K_PLAN
                  : strcmp(m, "ApplyResourceChange") == 0 ? K_APPLY
                                                          : K_OTHER;
        const char *t = store_col_text(st, 2);
        r->type = t ? strdup(t) : NULL;
        const char *prior = store_col_text(st, 3);
        r->prior_null = !prior || strcmp(prior, "null") == 0;
        digest_or_empty(st, 4, r->planned);
        digest_or_empty(st, 5, r->config);
        r->replaces = sdb_column_int(st, 6) > 0 && !r->prior_null;
        const char *a = store_col_text(st, 7);
        r->address = a ? strdup(a) : NULL;
        r->failed = sdb_column_int(st, 8);
        r->started_us = sdb_column_int64(st, 9);
        out->n++;
    }
    if (!err && rc != SDB_DONE)
        err = store_err(rc);
    sdb_finalize(st);
    if (err)
        return err;

    struct rel **applies = malloc((out->n ? out->n : 1) * sizeof *applies);
    struct rel **halves = malloc((out->n ? out->n : 1) * sizeof *halves);
    struct rel **applied = malloc((out->n ? out->n : 1) * sizeof *applied);
    size_t na = 0, nh = 0, nd = 0;
    if (!applies || !halves || !applied) {
        free(applies);
        free(halves);
        free(applied);
        return TFTAP_ENOMEM;
    }
    for (size_t i = 0; i < out->n; i++) {
        struct rel *r = &out->v[i];
        if (r->kind == K_APPLY && r->planned[0])
            applies[na++] = r;
        if (r->kind == K_APPLY && r->address)
            applied[nd++] = r;
        if (r->kind == K_PLAN && r->prior_null && r->config[0])
            halves[nh++] = r;
    }
    qsort(applies, na, sizeof *applies, cmp_apply_order);
    qsort(halves, nh, sizeof *halves, cmp_half);
    qsort(applied, nd, sizeof *applied, cmp_applied);
    for (size_t i = 0; i < out->n; i++) {
        struct rel *r = &out->v[i];
        if (r->kind != K_PLAN)
            continue;
        if (r->planned[0]) {
            /* The last apply with this type and planned state. */
            size_t lo = 0, hi = na;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (cmp_apply(&applies[mid], &r) <= 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo > 0 && cmp_apply(&applies[lo - 1], &r) == 0 && cmp_order(applies[lo - 1], r) > 0)
                r->superseded = 1;
        }
        if (r->address) {
            /* Applied later at the same address: the plan of an apply run
             * (whose unknowns the apply may have learnt since) is history. */
            size_t lo = 0, hi = nd;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (cmp_str(applied[mid]->address, r->address) <= 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo > 0 && cmp_str(applied[lo - 1]->address, r->address) == 0 &&
                cmp_order(applied[lo - 1], r) > 0)
                r->superseded = 1;
        }
        if (r->replaces && r->config[0]) {
            /* The first create half after it with the same config. */
            struct rel key = *r;
            struct rel *kp = &key;
            size_t lo = 0, hi = nh;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (cmp_half(&halves[mid], &kp) <= 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < nh && cmp_str(halves[lo]->type, r->type) == 0 &&
                strcmp(halves[lo]->config, r->config) == 0) {
                r->create_half = halves[lo]->id;
                halves[lo]->superseded = 1;
            }
        }
    }
    /* A replacement carried out: an apply destroying the object at an
     * address (planned null) and one creating it anew there (prior null),
     * in either order (create_before_destroy), read as one "-/+". */
    for (size_t i = 0; i + 1 < nd; i++) {
        struct rel *a = applied[i], *b = applied[i + 1];
        if (cmp_str(a->address, b->address) != 0 || a->failed || b->failed)
            continue;
        struct rel *del = !a->prior_null && !a->planned[0] ? a : b;
        struct rel *add = del == a ? b : a;
        if (del->prior_null || del->planned[0] || !add->prior_null || !add->planned[0])
            continue;
        del->superseded = 1;
        add->destroyed = del->id;
        i++;
    }
    /* Which attributes forced it: the latest replacing plan of the address
     * before the apply (the plan is history, its requires_replace is not). */
    size_t nr = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i].kind == K_PLAN && out->v[i].replaces && out->v[i].address)
            halves[nr++] = &out->v[i]; /* halves is free again: reused */
    qsort(halves, nr, sizeof *halves, cmp_applied);
    for (size_t i = 0; i < out->n && nr; i++) {
        struct rel *add = &out->v[i];
        if (!add->destroyed)
            continue;
        size_t lo = 0, hi = nr;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cmp_applied(&halves[mid], &add) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && cmp_str(halves[lo - 1]->address, add->address) == 0)
            add->forced_by = halves[lo - 1]->id;
    }
    free(applies);
    free(halves);
    free(applied);
    return 0;
}

static struct rel *rel_find(struct rels *r, int64_t id)
{
    size_t lo = 0, hi = r->n; /* sorted by call_id */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->v[lo].id == id ? &r->v[lo] : NULL;
}

/* ---- schema blocks for rendering ------------------------------------------
 * A run's changes use a few schemas (one per provider binary), each decoded
 * once per listing; the JSON of each (schema, type) block is kept as text. */

struct block_text {
    char *key; /* "<sha> <r|d> <type>" */
    char *json;
};

struct schema_cache {
    struct {
        char sha[65];
        sj_doc *doc; /* NULL: could not be decoded */
    } v[16];
    size_t n;
    struct block_text *blocks;
    size_t nblocks, cap;
};

static void schema_cache_done(struct schema_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        sj_free(c->v[i].doc);
    for (size_t i = 0; i < c->nblocks; i++) {
        free(c->blocks[i].key);
        free(c->blocks[i].json);
    }
    free(c->blocks);
}

static sj_doc *schema_doc(store *s, struct schema_cache *c, const char *sha)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].sha, sha) == 0)
            return c->v[i].doc;
    sj_doc *doc = NULL;
    sdb_stmt *st = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    if (sdb_prepare(s->db,
                    "SELECT protocol, raw FROM schemas WHERE sha256 = ? AND kind = "
                    "'provider'",
                    &st) == SDB_OK) {
        sdb_bind_text(st, 1, sha, -1, SDB_STATIC);
        if (sdb_step(st) == SDB_ROW) {
            /* Protocol 5 names the call GetSchema. */
            const char *method = sdb_column_int(st, 0) == 6
                                     ? "/tfplugin6.Provider/GetProviderSchema"
                                     : "/tfplugin5.Provider/GetSchema";
            dec_error err = DEC_ERROR_INIT;
            if (dec_message_to_json(method, 1, sdb_column_blob(st, 1),
                                    (size_t)sdb_column_bytes(st, 1), NULL, NULL, NULL, &out,
                                    &err) == 0 &&
                !tftap_buf_failed(&out))
                sj_parse(out.data, out.len, TFTAP_JSON_MAX_DEPTH, &doc);
            dec_error_done(&err);
        }
    }
    sdb_finalize(st);
    tftap_buf_done(&out);
    if (c->n < sizeof c->v / sizeof c->v[0]) {
        snprintf(c->v[c->n].sha, sizeof c->v[c->n].sha, "%s", sha);
        c->v[c->n++].doc = doc;
    } else {
        sj_free(doc); /* more schemas than we cache: decode again next time */
        return NULL;
    }
    return doc;
}

/* The block schema of type in the schema sha as JSON text, or NULL. */
static const char *block_schema(store *s, struct schema_cache *c, const char *sha, const char *type,
                                int data)
{
    if (!sha || !type)
        return NULL;
    tftap_buf key = TFTAP_BUF_INIT;
    tftap_buf_printf(&key, "%s %c %s", sha, data ? 'd' : 'r', type);
    const char *k = tftap_buf_cstr(&key);
    const char *found = NULL;
    for (size_t i = 0; k && i < c->nblocks; i++)
        if (strcmp(c->blocks[i].key, k) == 0) {
            found = c->blocks[i].json;
            goto done;
        }
    sj_doc *doc = k ? schema_doc(s, c, sha) : NULL;
    const sj_node *blk = sj_get(
        sj_get(sj_get(sj_root(doc), data ? "data_source_schemas" : "resource_schemas"), type),
        "block");
    if (!blk || blk->kind != SJ_OBJECT)
        goto done;
    tftap_buf text = TFTAP_BUF_INIT;
    sj_write(blk, &text);
    if (c->nblocks == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct block_text *v = realloc(c->blocks, cap * sizeof *v);
        if (!v) {
            tftap_buf_done(&text);
            goto done;
        }
        c->blocks = v;
        c->cap = cap;
    }
    tftap_buf_cstr(&text);
    char *json = tftap_buf_failed(&text) ? NULL : tftap_buf_take(&text, NULL);
    tftap_buf_done(&text);
    char *kc = json ? strdup(k) : NULL;
    if (!kc) {
        free(json);
        goto done;
    }
    c->blocks[c->nblocks++] = (struct block_text){kc, json};
    found = json;
done:
    tftap_buf_done(&key);
    return found;
}

/* Does the run hold an apply? Only then can a replacement have been
 * carried out (struct rel's destroyed, forced_by). */
static int has_apply(store *s, int64_t run_id, int *yes)
{
    sdb_stmt *st = NULL;
    *yes = 0;
    int rc = sdb_prepare(s->db,
                         "SELECT 1 FROM calls WHERE run_id = ? AND rpc = 'ApplyResourceChange' "
                         "LIMIT 1",
                         &st);
    if (rc == SDB_OK) {
        sdb_bind_int64(st, 1, run_id);
        rc = sdb_step(st);
        *yes = rc == SDB_ROW;
    }
    return store_finish(st, rc == SDB_ROW ? SDB_DONE : rc, 0);
}

/* Every column a change's row has, for listing it (the view of the call's
 * failure parses its diagnostics once more). */
static const char changes_sql[] =
    "SELECT * FROM (SELECT r.call_id, r.method, r.type_name, r.address, r.address_note, r.prior, "
    "r.proposed, r.config, r.planned, r.new, r.requires_replace, r.diagnostics, r.status_code, "
    "r.started_us, (SELECT schema_sha256 FROM calls c WHERE c.id = r.call_id), v.failed, "
    "v.status_name, v.status_message, v.in_flight, r.run_id, v.process_id, v.response_json "
    "FROM v_resource_changes r JOIN v_calls v ON v.call_id = r.call_id) AS x "
    "WHERE run_id = ?1 AND " FILTER_SQL " AND (CAST(?3 AS INTEGER) = 0 OR failed) "
    "ORDER BY started_us, call_id";

/* The lean query reads each call's JSON whole and takes its states out in
 * C (lean_states): the view's JSON functions render every state as text
 * once more, which was most of what the check read at the end of tftap run
 * cost. The rows are the view's, in its order. */
static const char changes_lean_sql[] =
    "SELECT * FROM (SELECT c.id AS call_id, c.rpc, c.type_name, a.address, a.address_note, "
    "c.request_json, c.response_json, c.status_code, c.started_us, c.schema_sha256, "
    "c.process_id, c.run_id FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id "
    "WHERE c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', 'ReadResource', "
    "'ReadDataSource')) AS x WHERE run_id = ?1 AND " FILTER_SQL " ORDER BY started_us, call_id";

/* The states of a change as v_resource_changes picks them from the call's
 * request and response (NULL: absent, or not a change when the texts are
 * not JSON), copied NUL-terminated into text. 0, or 1 when the texts are
 * not JSON (the view leaves such a call out), or TFTAP_ENOMEM. */
static int lean_states(store_change_row *c, const char *request, const char *response,
                       tftap_buf *text)
{
    enum { CURRENT, PRIOR, PROPOSED, CONFIG, APPLY_PLANNED, NREQ };
    enum { PLANNED, STATE, NEW_STATE, REPLACE, DIAGS, NRESP };
    static const char *const req_keys[NREQ] = {"current_state", "prior_state", "proposed_new_state",
                                               "config", "planned_state"};
    static const char *const resp_keys[NRESP] = {"planned_state", "state", "new_state",
                                                 "requires_replace", "diagnostics"};
    sj_span req[NREQ], resp[NRESP];
    /* Nested as deep as a value may be, two levels below the message. */
    unsigned depth = TFTAP_JSON_MAX_DEPTH + 2;
    if (sj_members(request ? request : "{}", request ? strlen(request) : 2, depth, req_keys, NREQ,
                   req) != 0 ||
        sj_members(response ? response : "{}", response ? strlen(response) : 2, depth, resp_keys,
                   NRESP, resp) != 0)
        return 1;
    int read = strcmp(c->rpc, "ReadResource") == 0, data = strcmp(c->rpc, "ReadDataSource") == 0;
    int plan = strcmp(c->rpc, "PlanResourceChange") == 0;
    int apply = strcmp(c->rpc, "ApplyResourceChange") == 0;
    const sj_span none = {NULL, 0};
    sj_span prior = read ? req[CURRENT] : req[PRIOR], planned = none, new_state = resp[NEW_STATE];
    if (data) {
        prior = none;
        new_state = resp[STATE];
    }
    if (plan) {
        planned = resp[PLANNED];
        new_state = none;
    } else if (apply) {
        planned = req[APPLY_PLANNED];
    }
    const sj_span pick[] = {prior,     req[PROPOSED], req[CONFIG], planned,
                            new_state, resp[REPLACE], resp[DIAGS]};
    enum { NPICK = sizeof pick / sizeof pick[0] };
    size_t at[NPICK];
    text->len = 0;
    for (size_t i = 0; i < NPICK; i++) {
        at[i] = text->len;
        tftap_buf_append(text, pick[i].text, pick[i].len);
        tftap_buf_putc(text, '\0');
    }
    if (tftap_buf_failed(text))
        return TFTAP_ENOMEM;
    const char **to[NPICK] = {&c->prior,     &c->proposed,         &c->config,     &c->planned,
                              &c->new_state, &c->requires_replace, &c->diagnostics};
    for (size_t i = 0; i < NPICK; i++)
        *to[i] = pick[i].text ? text->data + at[i] : NULL;
    return 0;
}

/* A row of changes_sql; *schema_sha: the call's schema digest. 0. */
static int full_row(sdb_stmt *st, store_change_row *c, const char **schema_sha)
{
    *c = (store_change_row){
        .call_id = sdb_column_int64(st, 0),
        .rpc = store_col_text(st, 1),
        .type_name = store_col_text(st, 2),
        .address = store_col_text(st, 3),
        .address_note = store_col_text(st, 4),
        .prior = store_col_text(st, 5),
        .proposed = store_col_text(st, 6),
        .config = store_col_text(st, 7),
        .planned = store_col_text(st, 8),
        .new_state = store_col_text(st, 9),
        .requires_replace = store_col_text(st, 10),
        .diagnostics = store_col_text(st, 11),
        .has_status = sdb_column_type(st, 12) != SDB_NULL,
        .status_code = sdb_column_int(st, 12),
        .started_us = sdb_column_int64(st, 13),
        .failed = sdb_column_int(st, 15),
        .status_name = store_col_text(st, 16),
        .status_message = store_col_text(st, 17),
        .in_flight = sdb_column_int(st, 18),
        .process_id = sdb_column_int64(st, 20),
        .response_json = store_col_text(st, 21),
    };
    *schema_sha = store_col_text(st, 14);
    return 0;
}

/* A row of changes_lean_sql, its states copied into text: 0, 1 when the
 * call is no change (lean_states), or TFTAP_ENOMEM. */
static int lean_row(sdb_stmt *st, store_change_row *c, tftap_buf *text, const char **schema_sha)
{
    *c = (store_change_row){
        .call_id = sdb_column_int64(st, 0),
        .rpc = store_col_text(st, 1),
        .type_name = store_col_text(st, 2),
        .address = store_col_text(st, 3),
        .address_note = store_col_text(st, 4),
        .has_status = sdb_column_type(st, 7) != SDB_NULL,
        .status_code = sdb_column_int(st, 7),
        .started_us = sdb_column_int64(st, 8),
        .process_id = sdb_column_int64(st, 10),
        .response_json = store_col_text(st, 6),
    };
    *schema_sha = store_col_text(st, 9);
    return c->rpc ? lean_states(c, store_col_text(st, 5), c->response_json, text) : 1;
}

/* What the change c's relations to other changes (rels) add to its row:
 * the replacement's other half, the object an apply destroyed. */
static void related(struct rels *rels, sdb_stmt *half, sdb_stmt *gone, sdb_stmt *forced,
                    store_change_row *c)
{
    struct rel *r = rel_find(rels, c->call_id);
    if (!r)
        return;
    c->superseded = r->superseded;
    if (r->create_half) {
        sdb_reset(half);
        sdb_bind_int64(half, 1, r->create_half);
        if (sdb_step(half) == SDB_ROW) {
            c->replace_planned = store_col_text(half, 0);
            c->replace_call_id = r->create_half;
        }
    }
    if (r->destroyed) {
        sdb_reset(gone);
        sdb_bind_int64(gone, 1, r->destroyed);
        if (sdb_step(gone) == SDB_ROW) {
            c->destroyed_prior = store_col_text(gone, 0);
            c->replace_call_id = r->destroyed;
        }
        if (r->forced_by && !c->requires_replace) {
            sdb_reset(forced);
            sdb_bind_int64(forced, 1, r->forced_by);
            if (sdb_step(forced) == SDB_ROW)
                c->requires_replace = store_col_text(forced, 0);
        }
    }
}

static int changes_query(store *s, int64_t run_id, const char *filter, int failed_only, int lean,
                         int (*fn)(void *ctx, const store_change_row *row), void *ctx)
{
    struct rels rels = {NULL, 0};
    struct schema_cache schemas;
    memset(&schemas, 0, sizeof schemas);
    sdb_stmt *st = NULL, *half = NULL, *gone = NULL, *forced = NULL;
    tftap_buf states = TFTAP_BUF_INIT; /* lean: this row's states as text */
    int pairs = 1, err = lean ? has_apply(s, run_id, &pairs) : 0;
    if (!err && pairs)
        err = load_rels(s, run_id, &rels);
    if (err)
        goto done;
    int rc = sdb_prepare_large(s->db, lean ? changes_lean_sql : changes_sql, &st);
    if (rc == SDB_OK)
        rc = sdb_prepare(s->db, "SELECT planned FROM v_resource_changes WHERE call_id = ?", &half);
    if (rc == SDB_OK)
        rc = sdb_prepare(s->db, "SELECT requires_replace FROM v_resource_changes WHERE call_id = ?",
                         &forced);
    if (rc == SDB_OK)
        rc = sdb_prepare(s->db, "SELECT prior FROM v_resource_changes WHERE call_id = ?", &gone);
    if (rc != SDB_OK) {
        err = store_err(rc);
        goto done;
    }
    sdb_bind_int64(st, 1, run_id);
    if (filter)
        sdb_bind_text(st, 2, filter, -1, SDB_STATIC);
    if (!lean)
        sdb_bind_int(st, 3, failed_only);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_change_row c;
        const char *schema_sha = NULL;
        int got = lean ? lean_row(st, &c, &states, &schema_sha) : full_row(st, &c, &schema_sha);
        if (got == 1)
            continue; /* not a change */
        if ((err = got))
            break;
        if (!tftap_filter_keeps(filter, c.type_name, c.address))
            continue;
        c.block_schema = block_schema(s, &schemas, schema_sha, c.type_name,
                                      c.rpc && strcmp(c.rpc, "ReadDataSource") == 0);
        related(&rels, half, gone, forced, &c);
        if ((err = fn(ctx, &c)))
            break;
    }
    if (!err && rc != SDB_DONE)
        err = store_err(rc);
done:
    sdb_finalize(st);
    sdb_finalize(half);
    sdb_finalize(gone);
    sdb_finalize(forced);
    rels_free(&rels);
    schema_cache_done(&schemas);
    tftap_buf_done(&states);
    return err;
}

int store_changes_query(store *s, int64_t run_id, const char *filter, int failed_only,
                        int (*fn)(void *ctx, const store_change_row *row), void *ctx)
{
    return changes_query(s, run_id, filter, failed_only, 0, fn, ctx);
}

int store_changes_each(store *s, int64_t run_id, const char *filter,
                       int (*fn)(void *ctx, const store_change_row *row), void *ctx)
{
    return changes_query(s, run_id, filter, 0, 0, fn, ctx);
}

int store_changes_each_judged(store *s, int64_t run_id, const char *filter,
                              int (*fn)(void *ctx, const store_change_row *row), void *ctx)
{
    return changes_query(s, run_id, filter, 0, 1, fn, ctx);
}

int store_diagnostics_each(store *s, int64_t run_id, const char *filter,
                           int (*fn)(void *ctx, const store_diag_row *row), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT call_id, method, type_name, address, severity, summary, "
                         "detail, attribute FROM v_diagnostics WHERE run_id = ?1 AND " FILTER_SQL
                         " ORDER BY call_id",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    if (filter)
        sdb_bind_text(st, 2, filter, -1, SDB_STATIC);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_diag_row d = {
            .call_id = sdb_column_int64(st, 0),
            .rpc = store_col_text(st, 1),
            .type_name = store_col_text(st, 2),
            .address = store_col_text(st, 3),
            .severity = store_col_text(st, 4),
            .summary = store_col_text(st, 5),
            .detail = store_col_text(st, 6),
            .attribute = store_col_text(st, 7),
        };
        if (!tftap_filter_keeps(filter, d.type_name, d.address))
            continue;
        cb = fn(ctx, &d);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

/* A change's values from its request and response, picked as
 * v_resource_changes picks them (which reads the JSON once per column:
 * most of the matching's time at the end of a run, before this). */
static void match_values(const char *rpc, const sj_node *req, const sj_node *resp,
                         const sj_node *v[5])
{
    int read = strcmp(rpc, "ReadResource") == 0, data = strcmp(rpc, "ReadDataSource") == 0;
    int plan = strcmp(rpc, "PlanResourceChange") == 0;
    if (strcmp(rpc, "UpgradeResourceState") == 0) {
        /* The state as upgraded is the prior state core goes on with. */
        v[0] = sj_get(resp, "upgraded_state");
        v[1] = v[2] = v[3] = v[4] = NULL;
        return;
    }
    v[0] = read ? sj_get(req, "current_state") : data ? NULL : sj_get(req, "prior_state");
    v[1] = sj_get(req, "proposed_new_state");
    v[2] = sj_get(req, "config");
    v[3] = plan                                      ? sj_get(resp, "planned_state")
           : strcmp(rpc, "ApplyResourceChange") == 0 ? sj_get(req, "planned_state")
                                                     : NULL;
    v[4] = plan ? NULL : sj_get(resp, data ? "state" : "new_state");
}

/* A call's request and response JSON, columns col and col + 1 of st,
 * parsed (at most depth deep) into doc and root; a NULL column stays NULL.
 * 0, TFTAP_ENOMEM, or TFTAP_EDECODE when one is not JSON (it stays NULL,
 * the other is parsed). */
static int call_docs(sdb_stmt *st, int col, unsigned depth, sj_doc *doc[2], const sj_node *root[2])
{
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        const char *t = store_col_text(st, col + i);
        if (t == NULL)
            continue;
        int rc = sj_parse(t, strlen(t), depth, &doc[i]);
        if (rc == TFTAP_ENOMEM)
            return rc;
        if (rc)
            bad = 1;
        else
            root[i] = sj_root(doc[i]);
    }
    return bad ? TFTAP_EDECODE : 0;
}

int store_match_calls_each(store *s, int64_t run_id,
                           int (*fn)(void *ctx, const store_match_call *call), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare_large(s->db,
                               "SELECT id, rpc, type_name, request_json, response_json, "
                               "process_id FROM calls "
                               "WHERE run_id = ? AND rpc IN ('PlanResourceChange', "
                               "'ApplyResourceChange', 'ReadResource', 'ReadDataSource', "
                               "'UpgradeResourceState') ORDER BY id",
                               &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_match_call c = {
            .call_id = sdb_column_int64(st, 0),
            .rpc = store_col_text(st, 1),
            .type_name = store_col_text(st, 2),
            .process_id = sdb_column_int64(st, 5),
        };
        /* As the view: a call whose request or response is not JSON is no
         * change (the nesting bound leaves room for the two levels above
         * the values). */
        sj_doc *doc[2] = {NULL, NULL};
        const sj_node *root[2] = {NULL, NULL};
        int prc =
            c.rpc != NULL ? call_docs(st, 3, TFTAP_JSON_MAX_DEPTH + 2, doc, root) : TFTAP_EDECODE;
        if (prc == TFTAP_ENOMEM)
            cb = prc;
        if (prc == 0) {
            match_values(c.rpc, root[0], root[1], c.values);
            if (strcmp(c.rpc, "PlanResourceChange") == 0)
                c.requires_replace = sj_get(root[1], "requires_replace");
            const sj_node *legacy = sj_get(root[1], "legacy_type_system");
            c.legacy = legacy && legacy->kind == SJ_BOOL && legacy->boolean;
            const sj_node *diags = sj_get(root[1], "diagnostics");
            for (const sj_node *d = diags && diags->kind == SJ_ARRAY ? diags->child : NULL; d;
                 d = d->next) {
                const sj_node *sev = sj_get(d, "severity");
                if (sev && sev->kind == SJ_STRING && strcmp(sev->str, "ERROR") == 0)
                    c.failed = 1;
            }
            cb = fn(ctx, &c);
        }
        sj_free(doc[0]);
        sj_free(doc[1]);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_import_calls_each(store *s, int64_t run_id,
                            int (*fn)(void *ctx, const store_import_call *call), void *ctx)
{
    sdb_stmt *st = NULL;
    /* The JSON read here, as store_match_calls_each does: either backend. */
    int rc = sdb_prepare(s->db,
                         "SELECT id, type_name, request_json, response_json FROM calls "
                         "WHERE run_id = ? AND rpc = 'ImportResourceState' ORDER BY id",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_import_call c = {
            .call_id = sdb_column_int64(st, 0),
            .type_name = store_col_text(st, 1),
        };
        sj_doc *doc[2] = {NULL, NULL};
        const sj_node *root[2] = {NULL, NULL};
        /* A side that is not JSON reads as absent. */
        if (call_docs(st, 2, TFTAP_JSON_MAX_DEPTH + 3, doc, root) == TFTAP_ENOMEM)
            cb = TFTAP_ENOMEM;
        if (!cb) {
            const sj_node *id = sj_get(root[0], "id");
            const sj_node *imp = sj_get(root[1], "imported_resources");
            if (id && id->kind == SJ_STRING)
                c.id = id->str;
            if (imp && imp->kind == SJ_ARRAY && imp->n == 1)
                c.state = sj_get(imp->child, "state");
            cb = fn(ctx, &c);
        }
        sj_free(doc[0]);
        sj_free(doc[1]);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_call_addresses_each(store *s, int64_t run_id,
                              int (*fn)(void *ctx, int64_t call_id, const char *address), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT c.id, a.address FROM calls c "
                         "LEFT JOIN call_addresses a ON a.call_id = c.id WHERE c.run_id = ? "
                         "AND c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', "
                         "'ReadResource', 'ReadDataSource', 'UpgradeResourceState') "
                         "ORDER BY c.id",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while (!cb && (rc = sdb_step(st)) == SDB_ROW)
        cb = fn(ctx, sdb_column_int64(st, 0), store_col_text(st, 1));
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_set_addresses(store *s, const store_address_set *sets, size_t n)
{
    sdb_stmt *up = NULL, *del = NULL;
    int rc = store_begin(s->db, 0);
    if (rc != SDB_OK)
        return store_err(rc);
    /* A row of its own per call (not calls' own columns): the calls rows,
     * kilobytes of JSON each, are not written again. Matching a run again
     * replaces what it said; a call it has nothing to say about loses its
     * row. */
    rc = sdb_prepare(s->db,
                     "INSERT INTO call_addresses (call_id, address, address_note) VALUES (?, ?, ?) "
                     "ON CONFLICT (call_id) DO UPDATE SET address = excluded.address, "
                     "address_note = excluded.address_note",
                     &up);
    for (size_t i = 0; rc == SDB_OK && i < n; i++) {
        int keep = sets[i].address || sets[i].note;
        /* Prepared when first needed: rarely, and a server round trip. */
        if (!keep && !del &&
            (rc = sdb_prepare(s->db, "DELETE FROM call_addresses WHERE call_id = ?", &del)) !=
                SDB_OK)
            break;
        sdb_stmt *st = keep ? up : del;
        sdb_bind_int64(st, 1, sets[i].call_id);
        if (st == up) {
            if (sets[i].address)
                sdb_bind_text(up, 2, sets[i].address, -1, SDB_STATIC);
            else
                sdb_bind_null(up, 2);
            if (sets[i].note)
                sdb_bind_text(up, 3, sets[i].note, -1, SDB_STATIC);
            else
                sdb_bind_null(up, 3);
        }
        rc = sdb_step(st);
        sdb_reset(st);
        if (rc == SDB_DONE)
            rc = SDB_OK;
    }
    sdb_finalize(up);
    sdb_finalize(del);
    if (rc == SDB_OK)
        rc = store_commit(s->db, 0);
    if (rc != SDB_OK) {
        store_rollback(s->db);
        int err = store_err(rc);
        return err ? err : TFTAP_ESTORE;
    }
    return 0;
}
