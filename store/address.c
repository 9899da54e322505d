/* store: giving recorded calls their resource instance addresses.
 *
 * Provider calls name a resource type, never an address. After a plan or
 * apply, `tofu show -json` of what the run wrote lists every instance with
 * its values; a call belongs to the instance of its type whose values agree
 * with the call's: most agreeing known attributes, none disagreeing. */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

#define MAX_JSON_DEPTH 512

struct instance {
    const char *address;
    const char *type;
    const sj_node *vals[2]; /* before/after of a plan, or state values */
};

struct instances {
    struct instance *v;
    size_t n, cap;
};

static int add_instance(struct instances *is, const char *address, const char *type,
                        const sj_node *a, const sj_node *b)
{
    for (size_t i = 0; i < is->n; i++) {
        if (strcmp(is->v[i].address, address) == 0) {
            /* Same instance seen in another section: keep both views. */
            if (!is->v[i].vals[1])
                is->v[i].vals[1] = a ? a : b;
            return 0;
        }
    }
    if (is->n == is->cap) {
        size_t cap = is->cap ? is->cap * 2 : 32;
        struct instance *v = realloc(is->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        is->v = v;
        is->cap = cap;
    }
    is->v[is->n++] = (struct instance){address, type, {a, b}};
    return 0;
}

static int str_is(const sj_node *n, const char *s)
{
    return n && n->kind == SJ_STRING && strcmp(n->str, s) == 0;
}

/* A module's resources (state or planned_values form), then its children. */
static int collect_module(struct instances *is, const sj_node *mod, unsigned depth)
{
    if (!mod || depth > 64)
        return 0;
    const sj_node *res = sj_get(mod, "resources");
    if (res && res->kind == SJ_ARRAY) {
        for (const sj_node *r = res->child; r; r = r->next) {
            const sj_node *addr = sj_get(r, "address"), *type = sj_get(r, "type");
            if (!str_is(sj_get(r, "mode"), "managed") || !addr || addr->kind != SJ_STRING ||
                !type || type->kind != SJ_STRING)
                continue;
            int rc = add_instance(is, addr->str, type->str, sj_get(r, "values"), NULL);
            if (rc)
                return rc;
        }
    }
    const sj_node *kids = sj_get(mod, "child_modules");
    if (kids && kids->kind == SJ_ARRAY)
        for (const sj_node *k = kids->child; k; k = k->next) {
            int rc = collect_module(is, k, depth + 1);
            if (rc)
                return rc;
        }
    return 0;
}

static int collect(struct instances *is, const sj_node *root)
{
    const sj_node *rcs = sj_get(root, "resource_changes");
    if (rcs && rcs->kind == SJ_ARRAY) {
        for (const sj_node *r = rcs->child; r; r = r->next) {
            const sj_node *addr = sj_get(r, "address"), *type = sj_get(r, "type"),
                          *ch = sj_get(r, "change");
            if (!str_is(sj_get(r, "mode"), "managed") || !addr || addr->kind != SJ_STRING ||
                !type || type->kind != SJ_STRING)
                continue;
            int rc =
                add_instance(is, addr->str, type->str, sj_get(ch, "before"), sj_get(ch, "after"));
            if (rc)
                return rc;
        }
    }
    /* A state file, or the plan's prior state. */
    const sj_node *vals = sj_get(root, "values");
    int rc = collect_module(is, sj_get(vals, "root_module"), 0);
    if (!rc)
        rc = collect_module(
            is, sj_get(sj_get(sj_get(root, "prior_state"), "values"), "root_module"), 0);
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

/* Compare what the call knows against the instance's values. */
static void compare(const sj_node *call, const sj_node *inst, struct score *s, unsigned depth)
{
    if (depth > 128 || skip_value(call) || !inst || inst->kind == SJ_NULL)
        return;
    if (call->kind == SJ_OBJECT) {
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
            compare(m, o, s, depth + 1);
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
            compare(a, b, s, depth + 1);
        return;
    }
    if (sj_equal(call, inst))
        s->match++;
    else
        s->mismatch++;
}

/* The best score of any of the call's values against any of the
 * instance's: agreeing leaves, or -1 if every pairing disagrees somewhere. */
static long score_instance(const sj_node *const *cv, size_t ncv, const struct instance *in)
{
    long best = -1;
    int comparable = 0;
    for (size_t i = 0; i < ncv; i++) {
        for (int j = 0; j < 2; j++) {
            if (skip_value(cv[i]) || skip_value(in->vals[j]))
                continue;
            comparable = 1;
            struct score s = {0, 0};
            compare(cv[i], in->vals[j], &s, 0);
            if (!s.mismatch && s.match > best)
                best = s.match;
        }
    }
    return comparable ? best : 0;
}

static int set_address(sqlite3_stmt *up, int64_t call_id, const char *address, const char *note)
{
    if (address)
        sqlite3_bind_text(up, 1, address, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(up, 1);
    if (note)
        sqlite3_bind_text(up, 2, note, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(up, 2);
    sqlite3_bind_int64(up, 3, call_id);
    int rc = sqlite3_step(up);
    sqlite3_reset(up);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int store_match_addresses(store *s, int64_t run_id, const char *show_json, size_t len, int *matched,
                          int *unmatched)
{
    sj_doc *doc = NULL;
    struct instances is = {0};
    sqlite3_stmt *q = NULL, *up = NULL;
    tftap_buf note = TFTAP_BUF_INIT;
    int n_ok = 0, n_bad = 0;
    int err = sj_parse(show_json, len, MAX_JSON_DEPTH, &doc);
    if (err)
        goto done;
    err = collect(&is, sj_root(doc));
    if (err)
        goto done;
    int rc = store_begin(s->db, 0);
    if (rc != SQLITE_OK) {
        err = store_err(rc);
        goto done;
    }
    rc = sqlite3_prepare_v2(s->db,
                            "SELECT call_id, type_name, prior, proposed, config, planned, new "
                            "FROM v_resource_changes WHERE run_id = ? ORDER BY call_id",
                            -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(
            s->db, "UPDATE calls SET address = ?, address_note = ? WHERE id = ?", -1, &up, NULL);
    if (rc != SQLITE_OK)
        goto rollback;
    sqlite3_bind_int64(q, 1, run_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t call_id = sqlite3_column_int64(q, 0);
        const char *type = (const char *)sqlite3_column_text(q, 1);
        sj_doc *vd[5] = {NULL};
        const sj_node *cv[5];
        size_t ncv = 0;
        for (int i = 0; i < 5; i++) {
            const char *t = (const char *)sqlite3_column_text(q, 2 + i);
            if (t && sj_parse(t, strlen(t), MAX_JSON_DEPTH, &vd[i]) == 0)
                cv[ncv++] = sj_root(vd[i]);
        }
        const char *best = NULL;
        long best_score = -1;
        size_t candidates = 0, ties = 0;
        for (size_t i = 0; type && i < is.n; i++) {
            if (strcmp(is.v[i].type, type) != 0)
                continue;
            candidates++;
            long sc = score_instance(cv, ncv, &is.v[i]);
            if (sc > best_score) {
                best_score = sc;
                best = is.v[i].address;
                ties = 1;
            } else if (sc == best_score && sc >= 0) {
                ties++;
            }
        }
        tftap_buf_reset(&note);
        const char *address = NULL;
        if (!type)
            tftap_buf_puts(&note, "call has no resource type");
        else if (candidates == 0)
            tftap_buf_printf(&note, "no %s instance in the plan or state", type);
        else if (best_score < 0)
            tftap_buf_printf(&note, "values match none of the %zu %s instances", candidates, type);
        else if (ties > 1)
            tftap_buf_printf(&note, "values match %zu %s instances equally", ties, type);
        else
            address = best;
        rc = set_address(up, call_id, address, address ? NULL : tftap_buf_cstr(&note));
        for (int i = 0; i < 5; i++)
            sj_free(vd[i]);
        if (rc != SQLITE_OK)
            goto rollback;
        if (address)
            n_ok++;
        else
            n_bad++;
    }
    if (rc != SQLITE_DONE)
        goto rollback;
    rc = store_commit(s->db, 0);
    if (rc != SQLITE_OK)
        goto rollback;
    goto done;
rollback:
    err = store_err(rc);
    if (!err)
        err = TFTAP_ESTORE;
    store_rollback(s->db);
done:
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    sj_free(doc);
    free(is.v);
    tftap_buf_done(&note);
    if (matched)
        *matched = n_ok;
    if (unmatched)
        *unmatched = n_bad;
    return err;
}
