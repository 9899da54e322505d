/* store: giving recorded calls their resource instance addresses.
 *
 * Provider calls name a resource type, never an address. What the CLI says
 * around a run names them: the state it started from (`CLI state pull`)
 * lists every existing object, `CLI show -json` of a saved plan or of the
 * state afterwards lists the objects the run planned or made. A call
 * belongs to the instance of its type (and mode: data sources apart) whose
 * values agree with the call's: most agreeing known attributes, none
 * disagreeing. A call about an existing object is compared by its prior
 * state with what the object was before; every call is compared with what
 * the plan or the state says after. */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

#define MAX_JSON_DEPTH 512
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
    int have_after; /* some document names objects as the run left them */
};

static void push_val(const sj_node **vals, unsigned *n, const sj_node *v)
{
    if (!v || v->kind == SJ_NULL || *n >= MAX_VALS)
        return;
    vals[(*n)++] = v;
}

/* address is copied; values live in their document. */
static int add_instance(struct instances *is, const char *address, size_t alen, const char *type,
                        int data, const sj_node *before, const sj_node *after)
{
    struct instance *in = NULL;
    for (size_t i = 0; i < is->n; i++)
        if (strlen(is->v[i].address) == alen && memcmp(is->v[i].address, address, alen) == 0 &&
            is->v[i].data == data) {
            in = &is->v[i]; /* the same instance seen in another section */
            break;
        }
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

/* Compare what the call knows against the instance's values. */
static void compare(const sj_node *call, const sj_node *inst, struct score *s, unsigned depth)
{
    if (depth > 128 || skip_value(call) || !inst || inst->kind == SJ_NULL)
        return;
    if (call->kind == SJ_OBJECT) {
        /* `show -json` writes a dynamic value bare; a raw state keeps the
         * wrapper as we do. */
        const sj_node *dv = dynamic_value(call);
        if (dv && !(inst->kind == SJ_OBJECT && sj_get(inst, "type"))) {
            compare(dv, inst, s, depth + 1);
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

/* What one call says: its kind and its values. */
struct call_vals {
    int data;               /* ReadDataSource */
    const sj_node *prior;   /* the existing object, NULL for a new one */
    const sj_node *vals[5]; /* prior, proposed, config, planned, new */
    size_t nvals;
};

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
        compare(cv, iv[j], &s, 0);
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

static void instances_free(struct instances *is)
{
    for (size_t i = 0; i < is->n; i++)
        free(is->v[i].address);
    free(is->v);
}

/* Why a call got no address, or NULL with *address set. */
static void match_call(const struct instances *is, const char *type, const struct call_vals *c,
                       size_t ndocs, const char *missing, tftap_buf *note, const char **address)
{
    const char *best = NULL;
    long best_score = -1;
    size_t candidates = 0, ties = 0;
    *address = NULL;
    for (size_t i = 0; type && i < is->n; i++) {
        if (strcmp(is->v[i].type, type) != 0 || is->v[i].data != c->data)
            continue;
        long sc = score_instance(c, &is->v[i]);
        if (sc == NO_PAIR)
            continue;
        candidates++;
        if (sc > best_score) {
            best_score = sc;
            best = is->v[i].address;
            ties = 1;
        } else if (sc == best_score && sc >= 0) {
            ties++;
        }
    }
    const char *what = c->data ? "data." : "";
    if (!type)
        tftap_buf_puts(note, "call has no resource type");
    else if (ndocs == 0)
        tftap_buf_puts(note, missing ? missing : "no plan or state was read to match it");
    else if (candidates == 0 && !c->data && !c->prior && !is->have_after)
        tftap_buf_printf(note,
                         "a new %s object: only a saved plan (plan -out=FILE) or the state after "
                         "an apply names new instances",
                         type);
    else if (candidates == 0)
        tftap_buf_printf(note, "no %s%s instance in the plan or state", what, type);
    else if (best_score < 0)
        tftap_buf_printf(note, "values match none of the %zu %s%s instances", candidates, what,
                         type);
    else if (ties > 1)
        tftap_buf_printf(note, "values match %zu %s%s instances equally", ties, what, type);
    else
        *address = best;
}

int store_match_addresses(store *s, int64_t run_id, const store_match_doc *docs, size_t ndocs,
                          const char *missing, int *matched, int *unmatched)
{
    sj_doc **parsed = NULL;
    struct instances is = {0};
    sqlite3_stmt *q = NULL, *up = NULL;
    tftap_buf note = TFTAP_BUF_INIT;
    int n_ok = 0, n_bad = 0, err = 0;
    if (ndocs) {
        parsed = calloc(ndocs, sizeof *parsed);
        if (!parsed) {
            err = TFTAP_ENOMEM;
            goto done;
        }
    }
    for (size_t d = 0; d < ndocs; d++) {
        err = sj_parse(docs[d].json, docs[d].len, MAX_JSON_DEPTH, &parsed[d]);
        if (!err)
            err = collect(&is, sj_root(parsed[d]), docs[d].after);
        if (err)
            goto done;
    }
    int rc = store_begin(s->db, 0);
    if (rc != SQLITE_OK) {
        err = store_err(rc);
        goto done;
    }
    rc = sqlite3_prepare_v2(s->db,
                            "SELECT call_id, method, type_name, prior, proposed, config, planned, "
                            "new FROM v_resource_changes WHERE run_id = ? ORDER BY call_id",
                            -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(
            s->db, "UPDATE calls SET address = ?, address_note = ? WHERE id = ?", -1, &up, NULL);
    if (rc != SQLITE_OK)
        goto rollback;
    sqlite3_bind_int64(q, 1, run_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t call_id = sqlite3_column_int64(q, 0);
        const char *method = (const char *)sqlite3_column_text(q, 1);
        const char *type = (const char *)sqlite3_column_text(q, 2);
        sj_doc *vd[5] = {NULL};
        struct call_vals c;
        memset(&c, 0, sizeof c);
        c.data = method && strcmp(method, "ReadDataSource") == 0;
        for (int i = 0; i < 5; i++) {
            const char *t = (const char *)sqlite3_column_text(q, 3 + i);
            if (t && sj_parse(t, strlen(t), MAX_JSON_DEPTH, &vd[i]) == 0) {
                const sj_node *v = sj_root(vd[i]);
                if (i == 0 && v && v->kind != SJ_NULL)
                    c.prior = v;
                c.vals[c.nvals++] = v;
            }
        }
        const char *address = NULL;
        tftap_buf_reset(&note);
        match_call(&is, type, &c, ndocs, missing, &note, &address);
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
    for (size_t d = 0; parsed && d < ndocs; d++)
        sj_free(parsed[d]);
    free(parsed);
    instances_free(&is);
    tftap_buf_done(&note);
    if (matched)
        *matched = n_ok;
    if (unmatched)
        *unmatched = n_bad;
    return err;
}
