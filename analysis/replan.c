/* analysis: may a recorded run be planned again against its recording?
 *
 * A replaying provider answers a call with the recorded call that asked
 * the same (replay/book.c: the first of them not answered yet). When two
 * calls of a run asked the same and were answered differently (a value a
 * provider chose at random while planning, a data source read twice at
 * different moments), a plan made again may give one instance the other's
 * answer, and the names taken from that plan would swap them. Such a run
 * is not planned again (launch/run_replan.c). */
#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One answer: what was asked and what was answered, as canonical text,
 * and the process that answered. */
struct asked {
    char *request, *response;
    int64_t process;
};

struct asking {
    struct asked *v;
    size_t n, cap;
    int applies; /* ApplyResourceChange too (a replay that applies) */
    int err;
};

/* Canonical text of the values of a call (members in key order), one
 * after the other; NULL members as "-". */
static int put_values(tftap_buf *b, const sj_node *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            tftap_buf_putc(b, '\x1f');
        if (!v[i])
            tftap_buf_putc(b, '-');
        else if (sj_write_sorted(v[i], b) != 0)
            return TFTAP_ENOMEM;
    }
    return tftap_buf_failed(b) ? TFTAP_ENOMEM : 0;
}

static int on_asked(void *ctx, const store_match_call *c)
{
    struct asking *a = ctx;
    const char *rpc = c->rpc ? c->rpc : "";
    /* store_match_call's values: prior, proposed, config, planned, new. */
    int plan = strcmp(rpc, "PlanResourceChange") == 0;
    int apply = a->applies && strcmp(rpc, "ApplyResourceChange") == 0;
    if (!plan && !apply && strcmp(rpc, "ReadResource") != 0 && strcmp(rpc, "ReadDataSource") != 0)
        return 0;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        struct asked *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return a->err = TFTAP_ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    tftap_buf q = TFTAP_BUF_INIT, r = TFTAP_BUF_INIT;
    tftap_buf_printf(&q, "%s\x1f%s\x1f", rpc, c->type_name ? c->type_name : "");
    /* An apply asks with its planned state (values[3]) and answers the
     * new one. */
    const sj_node *asked[4] = {c->values[0], c->values[1], c->values[2],
                               apply ? c->values[3] : NULL};
    const sj_node *answered[1] = {plan ? c->values[3] : c->values[4]};
    int rc = put_values(&q, asked, 4);
    if (!rc)
        rc = put_values(&r, answered, 1);
    if (!rc) {
        a->v[a->n].request = tftap_buf_take(&q, NULL);
        a->v[a->n].response = tftap_buf_take(&r, NULL);
        a->v[a->n].process = a->applies ? c->process_id : 0;
        if (!a->v[a->n].request || !a->v[a->n].response) {
            free(a->v[a->n].request);
            free(a->v[a->n].response);
            rc = TFTAP_ENOMEM;
        } else {
            a->n++;
        }
    }
    tftap_buf_done(&q);
    tftap_buf_done(&r);
    return a->err = rc;
}

static int cmp_asked(const void *x, const void *y)
{
    const struct asked *a = x, *b = y;
    int c = strcmp(a->request, b->request);
    if (!c)
        c = (a->process > b->process) - (a->process < b->process);
    return c ? c : strcmp(a->response, b->response);
}

/* The processes kept, by provider and start. */
struct span {
    char *provider;
    int64_t started, ended; /* ended INT64_MAX: never ended */
};
struct spans {
    struct span *v;
    size_t n, cap;
    int (*keep)(void *ctx, const store_process_row *p);
    void *ctx;
};

static int on_process(void *ctx, const store_process_row *p)
{
    struct spans *s = ctx;
    if (!s->keep(s->ctx, p))
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        struct span *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n].provider = strdup(p->provider ? p->provider : "")))
        return TFTAP_ENOMEM;
    s->v[s->n].started = p->started_us;
    s->v[s->n].ended = p->ended_us ? p->ended_us : INT64_MAX;
    s->n++;
    return 0;
}

static int cmp_span(const void *x, const void *y)
{
    const struct span *a = x, *b = y;
    int c = strcmp(a->provider, b->provider);
    return c ? c : (a->started > b->started) - (a->started < b->started);
}

int analysis_processes_one_after_another(store *s, int64_t run_id,
                                         int (*keep)(void *ctx, const store_process_row *p),
                                         void *ctx, int *yes)
{
    struct spans sp = {.keep = keep, .ctx = ctx};
    *yes = 0;
    int rc = store_processes_each(s, run_id, on_process, &sp);
    if (!rc) {
        if (sp.n > 1)
            qsort(sp.v, sp.n, sizeof *sp.v, cmp_span);
        *yes = 1;
        /* Sorted by start, any two that overlap make two neighbours that do. */
        for (size_t i = 1; i < sp.n && *yes; i++)
            if (strcmp(sp.v[i - 1].provider, sp.v[i].provider) == 0 &&
                sp.v[i].started < sp.v[i - 1].ended)
                *yes = 0;
    }
    for (size_t i = 0; i < sp.n; i++)
        free(sp.v[i].provider);
    free(sp.v);
    return rc;
}

/* The processes `only` (sorted ids) of struct ids. */
struct ids {
    const int64_t *v;
    size_t n;
};

static int cmp_id(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static int among(void *ctx, const store_process_row *p)
{
    const struct ids *only = ctx;
    return bsearch(&p->id, only->v, only->n, sizeof *only->v, cmp_id) != NULL;
}

static int repeatable_of(store *s, int64_t run_id, int applies, int *repeatable)
{
    struct asking a = {.applies = applies};
    *repeatable = 0;
    int rc = store_match_calls_each(s, run_id, on_asked, &a);
    if (!rc)
        rc = a.err;
    /* The processes of calls asked the same in two processes and answered
     * otherwise. */
    int64_t *across = NULL;
    size_t nacross = 0;
    if (!rc) {
        if (a.n > 1)
            qsort(a.v, a.n, sizeof *a.v, cmp_asked);
        *repeatable = 1;
        for (size_t first = 0, end; first < a.n && *repeatable && !rc; first = end) {
            int differ = 0;
            for (end = first + 1; end < a.n && strcmp(a.v[first].request, a.v[end].request) == 0;
                 end++) {
                if (a.v[end - 1].process == a.v[end].process &&
                    strcmp(a.v[end - 1].response, a.v[end].response) != 0)
                    *repeatable = 0;
                else if (strcmp(a.v[first].response, a.v[end].response) != 0)
                    differ = 1;
            }
            if (!differ)
                continue;
            int64_t *v = realloc(across, (nacross + end - first) * sizeof *v);
            if (!v) {
                rc = TFTAP_ENOMEM;
                break;
            }
            across = v;
            for (size_t i = first; i < end; i++)
                across[nacross++] = a.v[i].process;
        }
    }
    if (!rc && *repeatable && nacross) {
        qsort(across, nacross, sizeof *across, cmp_id);
        struct ids only = {across, nacross};
        rc = analysis_processes_one_after_another(s, run_id, among, &only, repeatable);
    }
    free(across);
    for (size_t i = 0; i < a.n; i++) {
        free(a.v[i].request);
        free(a.v[i].response);
    }
    free(a.v);
    return rc;
}

int analysis_replay_repeatable(store *s, int64_t run_id, int *repeatable)
{
    return repeatable_of(s, run_id, 0, repeatable);
}

/* A replay that applies (`tofu test`'s run blocks) asks its applies too.
 * Equal calls of one process answered otherwise (two creates given random
 * ids) could swap in a replay; of two processes, a replay whose processes
 * share their claims (replay.h) gives each its own, when the provider's
 * processes ran one after the other as a replay's will. */
int analysis_replay_repeatable_applies(store *s, int64_t run_id, int *repeatable)
{
    return repeatable_of(s, run_id, 1, repeatable);
}
