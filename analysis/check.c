/* Contract checks: the rules OpenTofu applies to a provider's answers
 * (docs/check.md), over recorded calls' decoded values. The rules follow
 * core's objchange package and the resource instance nodes; the messages
 * name what went wrong in our own words. Here: which rules judge which
 * answer (the entry points); the rules are check_rules.c's, the findings
 * check_findings.c's. */
#include <stdlib.h>
#include <string.h>

#include "analysis/check_int.h"

#define CHECK_JSON_MAX_DEPTH TFTAP_JSON_MAX_DEPTH

/* ---- per call ------------------------------------------------------------- */

struct docs {
    sj_doc *d[8];
};

static void docs_free(struct docs *ds)
{
    for (size_t i = 0; i < sizeof ds->d / sizeof ds->d[0]; i++)
        sj_free(ds->d[i]);
}

/* Parse an optional JSON text; absent text reads as JSON null (NULL node). */
static int parse(struct docs *ds, size_t slot, const char *text, const sj_node **out)
{
    *out = NULL;
    if (!text)
        return 0;
    int rc = sj_parse(text, strlen(text), CHECK_JSON_MAX_DEPTH, &ds->d[slot]);
    if (rc == 0)
        *out = sj_root(ds->d[slot]);
    return rc;
}

static int ck_begin(struct ck *k, const analysis_call *c, analysis_findings *out)
{
    memset(k, 0, sizeof *k);
    k->c = c;
    k->out = out;
    k->path = (tftap_buf)TFTAP_BUF_INIT;
    tftap_buf_puts(&k->path, "");
    return 0;
}

static void ck_rule(struct ck *k, const char *rule, enum analysis_verdict v)
{
    k->rule = rule;
    k->verdict = v;
    ck_pop(k, 0);
}

static int is(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

int analysis_check_call(const analysis_call *c, analysis_findings *out)
{
    struct docs ds = {{0}};
    const sj_node *schema, *prior, *config, *planned, *nw, *rr, *identity;
    int rc = 0;
    if (!c->block_schema) {
        out->unchecked++;
        return 0;
    }
    /* The schema block as parsed once for many calls, else parsed here. */
    schema = c->block_schema_node;
    if ((!schema && parse(&ds, 0, c->block_schema, &schema)) || parse(&ds, 1, c->prior, &prior) ||
        parse(&ds, 2, c->config, &config) || parse(&ds, 3, c->planned, &planned) ||
        parse(&ds, 4, c->new_state, &nw) || parse(&ds, 5, c->requires_replace, &rr) ||
        parse(&ds, 6, c->identity, &identity) || !schema || schema->kind != SJ_OBJECT) {
        docs_free(&ds);
        out->unchecked++;
        return TFTAP_EDECODE;
    }
    if (ck_v_undecoded(prior) || ck_v_undecoded(config) || sj_get(schema, "$undecoded")) {
        docs_free(&ds);
        out->unchecked++;
        return 0;
    }
    struct ck k;
    ck_begin(&k, c, out);
    struct block b = ck_block_of(schema);
    enum analysis_verdict legacy = c->legacy ? ANALYSIS_TOLERATES : ANALYSIS_REJECTS;
    const int depth = CHECK_JSON_MAX_DEPTH;

    if (is(c->rpc, "PlanResourceChange") && !c->has_error) {
        if (ck_v_undecoded(planned)) {
            ck_rule(&k, "plan-conforms", ANALYSIS_REJECTS);
            if (sj_get(planned, "$error"))
                ck_add(&k, NULL, planned, "the planned state does not conform to the schema");
        } else if (ck_v_null(config)) {
            ck_rule(&k, "plan-destroy-null", ANALYSIS_REJECTS);
            if (!ck_v_null(planned))
                ck_add(&k, NULL, planned, "a destroy plan must plan null");
        } else {
            ck_rule(&k, "plan-valid", legacy);
            ck_plan_block(&k, b, prior, config, planned, depth);
            ck_rule(&k, "plan-requires-replace", ANALYSIS_REJECTS);
            for (const sj_node *p = rr && rr->kind == SJ_ARRAY ? rr->child : NULL;
                 p && !ck_v_null(prior); p = p->next) {
                const sj_node *steps = sj_get(p, "steps"), *ps = sj_get(p, "path");
                if (!ck_path_exists(prior, steps) && !ck_path_exists(planned, steps)) {
                    tftap_buf_puts(&k.path, ps && ps->kind == SJ_STRING ? ps->str : "");
                    ck_add(&k, NULL, NULL,
                           "requires_replace names an attribute path that exists in neither the "
                           "prior nor the planned state");
                    ck_pop(&k, 0);
                }
            }
            ck_rule(&k, "write-only-null", ANALYSIS_REJECTS);
            ck_find_write_only(&k, b, planned, depth);
        }
    } else if (is(c->rpc, "ApplyResourceChange")) {
        if (ck_v_undecoded(nw)) {
            ck_rule(&k, "apply-conforms", ANALYSIS_REJECTS);
            if (sj_get(nw, "$error"))
                ck_add(&k, NULL, nw, "the new state does not conform to the schema");
        } else {
            ck_rule(&k, "apply-known", ANALYSIS_REJECTS);
            size_t before = out->n;
            ck_find_unknowns(&k, nw, depth);
            int unknowns = out->n > before;
            if (!c->has_error && !unknowns && !ck_v_undecoded(planned)) {
                if (ck_v_null(planned)) {
                    ck_rule(&k, "apply-delete-null", ANALYSIS_REJECTS);
                    if (!ck_v_null(nw))
                        ck_add(&k, NULL, nw, "destroying must return a null new state");
                } else {
                    ck_rule(&k, "apply-compatible", legacy);
                    ck_compat_block(&k, b, planned, nw, depth);
                    /* Tolerated incompatibilities are only logged; a null
                     * result is then an error of its own. */
                    if (c->legacy && ck_v_null(nw)) {
                        ck_rule(&k, "apply-not-null", ANALYSIS_REJECTS);
                        ck_add(&k, planned, nw, "only destroying may return a null new state");
                    }
                    ck_rule(&k, "write-only-null", ANALYSIS_REJECTS);
                    ck_find_write_only(&k, b, nw, depth);
                    ck_rule(&k, "identity-known", ANALYSIS_REJECTS);
                    if (!ck_v_undecoded(identity))
                        ck_find_unknowns(&k, identity, depth);
                }
            }
        }
    } else if (is(c->rpc, "ReadResource") && !c->has_error) {
        if (ck_v_undecoded(nw)) {
            ck_rule(&k, "read-conforms", ANALYSIS_REJECTS);
            if (sj_get(nw, "$error"))
                ck_add(&k, NULL, nw, "the refreshed state does not conform to the schema");
        } else if (!ck_v_undecoded(prior)) {
            ck_rule(&k, "identity-known", ANALYSIS_REJECTS);
            if (!ck_v_undecoded(identity))
                ck_find_unknowns(&k, identity, depth);
            ck_rule(&k, "read-drift", ANALYSIS_DRIFT);
            if (ck_v_null(nw) && !ck_v_null(prior))
                ck_add(&k, prior, nw, "the object is gone (refresh returned null)");
            else
                ck_compat_block(&k, b, prior, nw, depth);
        }
    } else if (is(c->rpc, "ReadDataSource") && !c->has_error) {
        if (ck_v_undecoded(nw)) {
            ck_rule(&k, "data-conforms", ANALYSIS_REJECTS);
            if (sj_get(nw, "$error"))
                ck_add(&k, NULL, nw, "the data source's state does not conform to the schema");
        } else if (ck_v_null(nw)) {
            ck_rule(&k, "data-not-null", ANALYSIS_REJECTS);
            ck_add(&k, NULL, nw, "a data source read must return an object, not null");
        } else {
            ck_rule(&k, "data-known", ANALYSIS_REJECTS);
            ck_find_unknowns(&k, nw, depth);
        }
    }
    rc = k.err;
    tftap_buf_done(&k.path);
    docs_free(&ds);
    return rc;
}

/* Replace each "from" in *msg by "to". 0 or TFTAP_ENOMEM. */
static int reword(char **msg, const char *from, const char *to)
{
    tftap_buf b = TFTAP_BUF_INIT;
    const char *p = *msg, *q;
    size_t fl = strlen(from);
    while ((q = strstr(p, from))) {
        tftap_buf_append(&b, p, (size_t)(q - p));
        tftap_buf_puts(&b, to);
        p = q + fl;
    }
    tftap_buf_puts(&b, p);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return TFTAP_ENOMEM;
    }
    free(*msg);
    *msg = tftap_buf_take(&b, NULL);
    return *msg ? 0 : TFTAP_ENOMEM;
}

int analysis_check_final_plan(const analysis_call *first, const analysis_call *final,
                              analysis_findings *out)
{
    struct docs ds = {{0}};
    const sj_node *schema, *p1, *p2;
    if (!final->block_schema) {
        out->unchecked++;
        return 0;
    }
    if (parse(&ds, 0, final->block_schema, &schema) || parse(&ds, 1, first->planned, &p1) ||
        parse(&ds, 2, final->planned, &p2) || !schema || schema->kind != SJ_OBJECT) {
        docs_free(&ds);
        out->unchecked++;
        return TFTAP_EDECODE;
    }
    int rc = 0;
    if (!ck_v_undecoded(p1) && !ck_v_undecoded(p2) && !ck_v_null(p1) && !ck_v_null(p2)) {
        struct ck k;
        ck_begin(&k, final, out);
        k.other_call_id = first->call_id;
        ck_rule(&k, "final-plan", ANALYSIS_REJECTS);
        size_t mark = out->n;
        ck_compat_block(&k, ck_block_of(schema), p1, p2, CHECK_JSON_MAX_DEPTH);
        /* The messages speak of the plan and the result; here the result
         * is the plan made during apply. */
        for (size_t i = mark; i < out->n && !k.err; i++)
            if (reword(&out->v[i].message, "the result", "the final plan"))
                k.err = TFTAP_ENOMEM;
        rc = k.err;
        tftap_buf_done(&k.path);
    }
    docs_free(&ds);
    return rc;
}
