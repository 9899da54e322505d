/* web: the JSON API under /api (docs/web.md). Every list is paged by a
 * cursor and a capped limit, and built row by row from the store's
 * iterators, so a request costs the same whatever the size of the run. */
#include "web/web_int.h"

#include <assert.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* A callback return that stops an iteration without being an error. */
#define STOP 1

static void put_str(tftap_buf *b, const char *s)
{
    if (s)
        tftap_buf_json_string(b, s, strlen(s));
    else
        tftap_buf_puts(b, "null");
}

/* Stored JSON embedded as JSON when it parses, else as a string: one bad
 * row must not make the whole answer unreadable. */
static void put_raw(tftap_buf *b, const char *json)
{
    if (!json) {
        tftap_buf_puts(b, "null");
        return;
    }
    sj_doc *d = NULL;
    size_t n = strlen(json);
    if (sj_parse(json, n, TFTAP_JSON_MAX_DEPTH, &d) == 0)
        tftap_buf_append(b, json, n);
    else
        tftap_buf_json_string(b, json, n);
    sj_free(d);
}

static void put_i64_or_null(tftap_buf *b, int has, int64_t v)
{
    if (has)
        tftap_buf_printf(b, "%lld", (long long)v);
    else
        tftap_buf_puts(b, "null");
}

static int error_body(tftap_buf *b, int status, const char *msg)
{
    tftap_buf_reset(b);
    tftap_buf_puts(b, "{\"error\":");
    put_str(b, msg);
    tftap_buf_puts(b, "}\n");
    return status;
}

/* A decimal id of at most 18 digits (no sign, no leading +). */
static int parse_id(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* An optional numeric argument: absent -> def; present -> 0..max or -1. */
static int64_t arg_num(const struct web_request *r, const char *name, int64_t def, int64_t max)
{
    const char *v = r->arg(r->arg_ctx, name);
    int64_t n;
    if (!v || !*v)
        return def;
    if (parse_id(v, strlen(v), &n) != 0 || n > max)
        return -1;
    return n;
}

static const char *arg_str(const struct web_request *r, const char *name)
{
    const char *v = r->arg(r->arg_ctx, name);
    return v && *v ? v : NULL;
}

/* ---- the analyses' memory ------------------------------------------------ */

/* Wait until bytes fit in what analyses may hold (or none holds any), and
 * take them; returns what to give back. */
static size_t budget_take(const struct web_request *r, size_t bytes)
{
    struct web_budget *b = r->budget;
    if (!b)
        return 0;
    uv_mutex_lock(&b->lock);
    while (b->used > 0 && b->used + bytes > WEB_ANALYSIS_BYTES)
        uv_cond_wait(&b->freed, &b->lock);
    b->used += bytes;
    uv_mutex_unlock(&b->lock);
    return bytes;
}

static void budget_give(const struct web_request *r, size_t bytes)
{
    struct web_budget *b = r->budget;
    if (!b)
        return;
    uv_mutex_lock(&b->lock);
    assert(b->used >= bytes);
    b->used -= bytes;
    /* No analysis holds memory now: what they freed goes back to the
     * system before the next starts (glibc keeps each thread's freed
     * memory in that thread's arena, where an analysis on another thread
     * does not reuse it: two diffs of large runs one after the other held
     * both their peaks). */
    if (b->used == 0 && bytes > 0)
        malloc_trim(0);
    uv_cond_broadcast(&b->freed);
    uv_mutex_unlock(&b->lock);
}

static int run_calls_row(void *ctx, const store_run_row *r)
{
    *(int64_t *)ctx = r->calls;
    return 0;
}

/* A run's calls (0 when it cannot be read: the analysis will say why). */
static size_t run_calls(store *s, int64_t run)
{
    int64_t n = 0;
    if (store_run_get(s, run, run_calls_row, &n) != 0 || n < 0)
        return 0;
    return (size_t)n;
}

/* ---- runs ------------------------------------------------------------- */

static void run_json(tftap_buf *b, const store_run_row *r)
{
    tftap_buf_printf(b, "{\"id\":%lld,\"command\":", (long long)r->id);
    put_str(b, r->command);
    tftap_buf_puts(b, ",\"args\":");
    put_raw(b, r->args_json);
    tftap_buf_puts(b, ",\"cwd\":");
    put_str(b, r->cwd);
    tftap_buf_puts(b, ",\"cli_name\":");
    put_str(b, r->cli_name);
    tftap_buf_puts(b, ",\"cli_version\":");
    put_str(b, r->cli_version);
    tftap_buf_printf(b, ",\"started_us\":%lld,\"ended_us\":", (long long)r->started_us);
    put_i64_or_null(b, r->ended_us > 0, r->ended_us);
    tftap_buf_puts(b, ",\"exit_code\":");
    put_i64_or_null(b, r->has_exit_code, r->exit_code);
    tftap_buf_printf(b, ",\"processes\":%lld,\"calls\":%lld,\"dropped\":%lld",
                     (long long)r->processes, (long long)r->calls, (long long)r->dropped);
    /* An acceptance test's step run: its suite, test and step. */
    tftap_buf_puts(b, ",\"parent_id\":");
    put_i64_or_null(b, r->parent_id > 0, r->parent_id);
    tftap_buf_puts(b, ",\"test\":");
    put_str(b, r->test_name);
    tftap_buf_puts(b, ",\"step\":");
    put_i64_or_null(b, r->test_step > 0, r->test_step);
    tftap_buf_putc(b, '}');
}

struct page_ctx {
    tftap_buf *b;
    int n, limit;
    int64_t last;
    int more;
    /* runs: each row's id and where its closing brace is in b */
    int64_t ids[WEB_PAGE_MAX];
    size_t ends[WEB_PAGE_MAX];
    char running[WEB_PAGE_MAX];
};

static int each_run(void *ctx, const store_run_row *r)
{
    struct page_ctx *p = ctx;
    if (p->n == p->limit || p->b->len > WEB_PAGE_BYTES) {
        p->more = 1;
        return STOP;
    }
    if (p->n++)
        tftap_buf_putc(p->b, ',');
    run_json(p->b, r);
    p->ids[p->n - 1] = r->id;
    p->ends[p->n - 1] = p->b->len - 1;
    p->running[p->n - 1] = r->ended_us == 0;
    p->last = r->id;
    return 0;
}

static int one_run(void *ctx, const store_run_row *r)
{
    run_json(ctx, r);
    return 0;
}

static int each_process(void *ctx, const store_process_row *p)
{
    struct page_ctx *x = ctx;
    if (x->n++)
        tftap_buf_putc(x->b, ',');
    tftap_buf_printf(x->b, "{\"id\":%lld,\"provider\":", (long long)p->id);
    put_str(x->b, p->provider);
    tftap_buf_puts(x->b, ",\"version\":");
    put_str(x->b, p->version);
    tftap_buf_printf(x->b, ",\"protocol\":%d,\"pid\":%d,\"schema_sha256\":", p->protocol, p->pid);
    put_str(x->b, p->schema_sha256);
    tftap_buf_printf(x->b, ",\"started_us\":%lld,\"ended_us\":", (long long)p->started_us);
    put_i64_or_null(x->b, p->ended_us > 0, p->ended_us);
    tftap_buf_printf(x->b, ",\"calls\":%lld,\"dropped\":%lld}", (long long)p->calls,
                     (long long)p->dropped);
    return 0;
}

static int api_run(store *s, int64_t run, tftap_buf *b)
{
    tftap_buf_puts(b, "{\"run\":");
    int rc = store_run_get(s, run, one_run, b);
    if (rc)
        return rc == TFTAP_ENOTFOUND ? error_body(b, 404, "no such run")
                                     : error_body(b, 500, store_errmsg(s));
    struct page_ctx p = {.b = b};
    tftap_buf_puts(b, ",\"processes\":[");
    rc = store_processes_each(s, run, each_process, &p);
    int64_t first = 0, last = 0;
    if (!rc)
        rc = store_run_span(s, run, &first, &last);
    if (rc)
        return error_body(b, 500, store_errmsg(s));
    tftap_buf_printf(b, "],\"span\":{\"first_us\":%lld,\"last_us\":%lld}}\n", (long long)first,
                     (long long)last);
    return 200;
}

/* ---- a run's verdict: analysis_run_verdict, as the CLI says it ---------- */

/* One run's verdict as the API sends it: the JSON `tftap show --json` prints
 * as "verdict", the gaps' JSON members, the first failed calls. */
struct verdict_out {
    char *json;
    char *gaps; /* "gap_reason":..,"gap_providers":[..] */
    int64_t *ids;
    size_t nids;
};

static void verdict_out_done(struct verdict_out *o)
{
    free(o->json);
    free(o->gaps);
    free(o->ids);
    memset(o, 0, sizeof *o);
}

static int verdict_out_copy(struct verdict_out *to, const char *json, const char *gaps,
                            const int64_t *ids, size_t nids)
{
    to->json = strdup(json);
    to->gaps = strdup(gaps);
    to->ids = malloc((nids ? nids : 1) * sizeof *ids);
    to->nids = nids;
    if (!to->json || !to->gaps || !to->ids) {
        verdict_out_done(to);
        return TFTAP_ENOMEM;
    }
    if (nids)
        memcpy(to->ids, ids, nids * sizeof *ids);
    return 0;
}

/* run's verdict, from the cache while the database has not changed since
 * (r->seq). lazy: the check may be left out for a command that succeeded
 * (the runs list). 0, or an HTTP status with the error in b. */
static int verdict_get(store *s, const struct web_request *r, int64_t run, int lazy,
                       struct verdict_out *out, tftap_buf *b)
{
    struct web_verdict_cache *c = r->verdicts;
    int found = 0, rc = 0;
    memset(out, 0, sizeof *out);
    uv_mutex_lock(&c->lock);
    for (unsigned i = 0; i < WEB_VERDICTS && !found; i++) {
        if (c->e[i].json && c->e[i].run == run && c->e[i].seq == r->seq && (c->e[i].full || lazy)) {
            found = 1;
            rc = verdict_out_copy(out, c->e[i].json, c->e[i].gaps, c->e[i].ids, c->e[i].nids);
        }
    }
    uv_mutex_unlock(&c->lock);
    if (found)
        return rc ? error_body(b, 500, "out of memory") : 0;
    analysis_run_verdict v;
    size_t held = budget_take(r, run_calls(s, run) * WEB_COST_CHECK);
    rc = analysis_run_verdict_read(s, run, lazy ? ANALYSIS_VERDICT_LAZY : 0, &v);
    budget_give(r, held);
    if (rc) {
        analysis_run_verdict_done(&v);
        return rc == TFTAP_ENOTFOUND ? error_body(b, 404, "no such run")
               : rc == TFTAP_ESTORE  ? error_body(b, 500, store_errmsg(s))
                                     : error_body(b, 500, tftap_strerror(rc));
    }
    tftap_buf json = TFTAP_BUF_INIT, gaps = TFTAP_BUF_INIT;
    analysis_run_verdict_json(&v, WEB_PAGE_BYTES, &json);
    tftap_buf_puts(&gaps, "\"gap_reason\":");
    put_str(&gaps, v.gap_reason);
    tftap_buf_puts(&gaps, ",\"gap_providers\":[");
    for (size_t i = 0; i < v.ngap_providers; i++) {
        if (i)
            tftap_buf_putc(&gaps, ',');
        put_str(&gaps, v.gap_providers[i]);
    }
    tftap_buf_putc(&gaps, ']');
    tftap_buf_cstr(&json);
    tftap_buf_cstr(&gaps);
    rc = tftap_buf_failed(&json) || tftap_buf_failed(&gaps)
             ? TFTAP_ENOMEM
             : verdict_out_copy(out, json.data, gaps.data, v.failed_ids, v.nfailed_ids);
    tftap_buf_done(&json);
    tftap_buf_done(&gaps);
    analysis_run_verdict_done(&v);
    if (rc)
        return error_body(b, 500, "out of memory");
    /* Kept in the slot written longest ago. */
    struct verdict_out keep;
    if (verdict_out_copy(&keep, out->json, out->gaps, out->ids, out->nids) == 0) {
        uv_mutex_lock(&c->lock);
        unsigned slot = c->next++ % WEB_VERDICTS;
        free(c->e[slot].json);
        free(c->e[slot].gaps);
        free(c->e[slot].ids);
        c->e[slot].json = keep.json;
        c->e[slot].gaps = keep.gaps;
        c->e[slot].ids = keep.ids;
        c->e[slot].nids = keep.nids;
        c->e[slot].run = run;
        c->e[slot].full = !lazy; /* a whole verdict serves a lazy ask too */
        c->e[slot].seq = r->seq;
        uv_mutex_unlock(&c->lock);
    }
    return 0;
}

/* With verdict=1, each run that ended carries its verdict (lazy: the
 * check only of runs whose command failed; a run still recording has none
 * yet, and checking it again at each of its commits is what starved the
 * server), added once the page is read (no query runs while another
 * iterates). */
static int api_runs(store *s, const struct web_request *r, tftap_buf *b)
{
    int64_t before = arg_num(r, "before", 0, INT64_MAX);
    int64_t limit = arg_num(r, "limit", WEB_PAGE_DEFAULT, WEB_PAGE_MAX);
    const char *verdicts = arg_str(r, "verdict");
    if (before < 0 || limit <= 0)
        return error_body(b, 400, "before must be a run id and limit 1..1000");
    struct page_ctx *p = calloc(1, sizeof *p);
    if (!p)
        return error_body(b, 500, "out of memory");
    *p = (struct page_ctx){.b = b, .limit = (int)limit};
    tftap_buf_puts(b, "{\"runs\":[");
    int rc = store_runs_page(s, before, (int)limit + 1, each_run, p);
    if (rc && rc != STOP) {
        free(p);
        return error_body(b, 500, store_errmsg(s));
    }
    if (verdicts && strcmp(verdicts, "0") != 0 && p->n) {
        tftap_buf out = TFTAP_BUF_INIT;
        size_t from = 0;
        for (int i = 0; i < p->n; i++) {
            if (p->running[i])
                continue;
            struct verdict_out v;
            tftap_buf err = TFTAP_BUF_INIT;
            int status = verdict_get(s, r, p->ids[i], 1, &v, &err);
            tftap_buf_done(&err);
            if (status) {
                free(p);
                tftap_buf_done(&out);
                return error_body(b, 500, "the runs' verdicts could not be read");
            }
            tftap_buf_append(&out, b->data + from, p->ends[i] - from);
            tftap_buf_puts(&out, ",\"verdict\":");
            tftap_buf_puts(&out, v.json);
            from = p->ends[i];
            verdict_out_done(&v);
        }
        tftap_buf_append(&out, b->data + from, b->len - from);
        tftap_buf_reset(b);
        tftap_buf_append(b, out.data, out.len);
        tftap_buf_done(&out);
    }
    tftap_buf_puts(b, "],\"next\":");
    put_i64_or_null(b, p->more, p->last);
    tftap_buf_puts(b, "}\n");
    free(p);
    return 200;
}

static int api_verdict(store *s, const struct web_request *r, int64_t run, tftap_buf *b);

/* ---- calls ------------------------------------------------------------- */

static void call_json(tftap_buf *b, const store_call_row *c, int with_json)
{
    tftap_buf_printf(b,
                     "{\"id\":%lld,\"run_id\":%lld,\"process_id\":%lld,\"call_seq\":%lld,"
                     "\"provider\":",
                     (long long)c->id, (long long)c->run_id, (long long)c->process_id,
                     (long long)c->call_seq);
    put_str(b, c->provider);
    tftap_buf_puts(b, ",\"method\":");
    put_str(b, c->method);
    tftap_buf_puts(b, ",\"rpc\":");
    put_str(b, c->rpc);
    tftap_buf_printf(b, ",\"stream\":%s,\"started_us\":%lld,\"ended_us\":",
                     c->stream ? "true" : "false", (long long)c->started_us);
    put_i64_or_null(b, c->ended_us > 0, c->ended_us);
    tftap_buf_puts(b, ",\"status_code\":");
    put_i64_or_null(b, c->has_status, c->status_code);
    tftap_buf_puts(b, ",\"status_name\":");
    put_str(b, c->status_name);
    tftap_buf_puts(b, ",\"status_message\":");
    put_str(b, c->status_message);
    tftap_buf_printf(b,
                     ",\"failed\":%s,\"teardown\":%s,\"expected_close\":%s,"
                     "\"not_recorded\":%s,\"error_count\":%lld,\"warning_count\":%lld",
                     c->failed ? "true" : "false", c->is_teardown ? "true" : "false",
                     c->expected_close ? "true" : "false", c->not_recorded ? "true" : "false",
                     (long long)c->error_count, (long long)c->warning_count);
    tftap_buf_printf(b,
                     ",\"request_bytes\":%lld,\"response_bytes\":%lld,\"request_count\":%lld,"
                     "\"response_count\":%lld,\"type_name\":",
                     (long long)c->request_bytes, (long long)c->response_bytes,
                     (long long)c->request_count, (long long)c->response_count);
    put_str(b, c->type_name);
    tftap_buf_puts(b, ",\"address\":");
    put_str(b, c->address);
    tftap_buf_puts(b, ",\"decode_error\":");
    put_str(b, c->decode_error);
    if (with_json) {
        /* As text: the page parses it keeping numbers exact, which the
         * browser's JSON.parse would round. */
        tftap_buf_puts(b, ",\"request\":");
        put_str(b, c->request_json);
        tftap_buf_puts(b, ",\"response\":");
        put_str(b, c->response_json);
    }
    tftap_buf_putc(b, '}');
}

static int each_call(void *ctx, const store_call_row *c)
{
    struct page_ctx *p = ctx;
    if (p->n == p->limit || p->b->len > WEB_PAGE_BYTES) {
        p->more = 1;
        return STOP;
    }
    if (p->n++)
        tftap_buf_putc(p->b, ',');
    call_json(p->b, c, 0);
    p->last = c->id;
    return 0;
}

static int api_calls(store *s, int64_t run, const struct web_request *r, tftap_buf *b)
{
    int64_t after = arg_num(r, "after", 0, INT64_MAX);
    int64_t limit = arg_num(r, "limit", WEB_PAGE_DEFAULT, WEB_PAGE_MAX);
    if (after < 0 || limit <= 0)
        return error_body(b, 400, "after must be a call id and limit 1..1000");
    store_call_filter f = {arg_str(r, "method"), arg_str(r, "type"), arg_str(r, "address"),
                           arg_str(r, "status")};
    int rc = store_run_get(s, run, one_run, b);
    tftap_buf_reset(b);
    if (rc)
        return rc == TFTAP_ENOTFOUND ? error_body(b, 404, "no such run")
                                     : error_body(b, 500, store_errmsg(s));
    struct page_ctx p = {.b = b, .limit = (int)limit, .last = after};
    tftap_buf_puts(b, "{\"calls\":[");
    rc = store_calls_page(s, run, &f, after, (int)limit + 1, 0, each_call, &p);
    if (rc == TFTAP_EINVAL)
        return error_body(b, 400, "status must be ok, error, inflight or a status code");
    if (rc && rc != STOP)
        return error_body(b, 500, store_errmsg(s));
    /* next: the cursor to continue from; last: where a live view polls
     * from once it has everything (the same id, returned even at the end). */
    tftap_buf_puts(b, "],\"next\":");
    put_i64_or_null(b, p.more, p.last);
    tftap_buf_printf(b, ",\"last\":%lld}\n", (long long)p.last);
    return 200;
}

static int one_call(void *ctx, const store_call_row *c)
{
    call_json(ctx, c, 1);
    return 0;
}

static int one_call_row(void *ctx, const store_call_row *c)
{
    call_json(ctx, c, 0);
    return 0;
}

static int api_call(store *s, int64_t run, int64_t call, tftap_buf *b)
{
    tftap_buf_puts(b, "{\"call\":");
    int rc = store_call_get(s, run, call, one_call, b);
    if (rc)
        return rc == TFTAP_ENOTFOUND ? error_body(b, 404, "no such call in this run")
                                     : error_body(b, 500, store_errmsg(s));
    tftap_buf_puts(b, "}\n");
    return 200;
}

/* GET /api/runs/RUN/verdict[?lazy=1]: {"verdict": {...as tftap show --json},
 * "failed_ids": [...], "gap_reason", "gap_providers": [...], "failed":
 * [call rows of failed_ids]}. */
static int api_verdict(store *s, const struct web_request *r, int64_t run, tftap_buf *b)
{
    struct verdict_out v;
    const char *lazy = arg_str(r, "lazy");
    int status = verdict_get(s, r, run, lazy && strcmp(lazy, "0") != 0, &v, b);
    if (status)
        return status;
    tftap_buf_puts(b, "{\"verdict\":");
    tftap_buf_puts(b, v.json);
    tftap_buf_puts(b, ",\"failed_ids\":[");
    for (size_t i = 0; i < v.nids; i++)
        tftap_buf_printf(b, "%s%lld", i ? "," : "", (long long)v.ids[i]);
    tftap_buf_puts(b, "],");
    tftap_buf_puts(b, v.gaps);
    tftap_buf_puts(b, ",\"failed\":[");
    int n = 0;
    for (size_t i = 0; i < v.nids; i++) {
        size_t mark = b->len;
        if (n)
            tftap_buf_putc(b, ',');
        if (store_call_get(s, run, v.ids[i], one_call_row, b) == 0)
            n++;
        else
            b->len = mark; /* gone meanwhile (the record changed): left out */
    }
    tftap_buf_puts(b, "]}\n");
    verdict_out_done(&v);
    return 200;
}

/* ---- a resource's history: every run that touched an address ------------ */

#define HISTORY_RUNS 50  /* runs looked at per page */
#define HISTORY_CALLS 50 /* calls listed per run */

struct history_runs {
    int64_t ids[HISTORY_RUNS];
    int n;
    int more;
};

static int history_run(void *ctx, const store_run_row *r)
{
    struct history_runs *h = ctx;
    if (h->n == HISTORY_RUNS) {
        h->more = 1;
        return STOP;
    }
    h->ids[h->n++] = r->id;
    return 0;
}

/* GET /api/history?address=A&before=RUN: the runs older than before
 * (newest first, HISTORY_RUNS of them looked at) with calls about address
 * or its instances: {"address", "runs": [{"run": {...}, "calls": [...],
 * "more": bool}], "next": RUN|null}. Runs without such a call are left out. */
static int api_history(store *s, const struct web_request *r, tftap_buf *b)
{
    const char *address = arg_str(r, "address");
    int64_t before = arg_num(r, "before", 0, INT64_MAX);
    if (!address || before < 0)
        return error_body(b, 400, "address is required and before must be a run id");
    struct history_runs h = {.n = 0};
    int rc = store_runs_page(s, before, HISTORY_RUNS + 1, history_run, &h);
    if (rc && rc != STOP)
        return error_body(b, 500, store_errmsg(s));
    tftap_buf_puts(b, "{\"address\":");
    put_str(b, address);
    tftap_buf_puts(b, ",\"runs\":[");
    store_call_filter f = {NULL, NULL, address, NULL};
    int listed = 0;
    for (int i = 0; i < h.n; i++) {
        size_t mark = b->len;
        if (listed)
            tftap_buf_putc(b, ',');
        tftap_buf_puts(b, "{\"run\":");
        if ((rc = store_run_get(s, h.ids[i], one_run, b)) != 0) {
            b->len = mark; /* gone meanwhile */
            continue;
        }
        struct page_ctx p = {.b = b, .limit = HISTORY_CALLS};
        tftap_buf_puts(b, ",\"calls\":[");
        rc = store_calls_page(s, h.ids[i], &f, 0, HISTORY_CALLS + 1, 0, each_call, &p);
        if (rc && rc != STOP)
            return error_body(b, 500, store_errmsg(s));
        if (p.n == 0) {
            b->len = mark;
            continue;
        }
        tftap_buf_printf(b, "],\"more\":%s}", p.more ? "true" : "false");
        listed++;
    }
    tftap_buf_puts(b, "],\"next\":");
    put_i64_or_null(b, h.more && h.n, h.n ? h.ids[h.n - 1] : 0);
    tftap_buf_puts(b, "}\n");
    return 200;
}

/* ---- changes: `tftap show` as JSON, one rendered text per change -------- */

struct changes_ctx {
    tftap_buf *b;
    int all;
    int64_t offset, limit;
    int64_t seen; /* changes shown so far, counting those before offset */
    int n, more, err;
    int counts[ANALYSIS_ACTION_READ + 1];
    int skipped;
    tftap_buf text;
};

static int each_change(void *ctx, const store_change_row *c)
{
    struct changes_ctx *x = ctx;
    enum analysis_action a = ANALYSIS_ACTION_NOOP;
    if (analysis_change_action(c, &a) != 0) {
        x->err = TFTAP_EDECODE;
        return TFTAP_EDECODE;
    }
    int is_read = a == ANALYSIS_ACTION_READ || (c->rpc && strcmp(c->rpc, "ReadResource") == 0);
    if (!x->all && (a == ANALYSIS_ACTION_NOOP || is_read || c->superseded)) {
        x->skipped++;
        return 0;
    }
    x->counts[a]++;
    int64_t idx = x->seen++;
    if (idx < x->offset)
        return 0;
    if (x->n == x->limit || x->b->len > WEB_PAGE_BYTES) {
        x->more = 1; /* keep counting: the totals are the run's */
        return 0;
    }
    tftap_buf_reset(&x->text);
    int rc = analysis_render_change(c, 0, &x->text);
    if (rc) {
        x->err = rc;
        return rc;
    }
    tftap_buf *b = x->b;
    if (x->n++)
        tftap_buf_putc(b, ',');
    tftap_buf_printf(b, "{\"call_id\":%lld,\"rpc\":", (long long)c->call_id);
    put_str(b, c->rpc);
    tftap_buf_puts(b, ",\"type_name\":");
    put_str(b, c->type_name);
    tftap_buf_puts(b, ",\"address\":");
    put_str(b, c->address);
    tftap_buf_puts(b, ",\"address_note\":");
    put_str(b, c->address_note);
    tftap_buf_printf(b, ",\"action\":\"%s\",\"superseded\":%s,\"status_code\":",
                     analysis_action_name(a), c->superseded ? "true" : "false");
    put_i64_or_null(b, c->has_status, c->status_code);
    tftap_buf_puts(b, ",\"status_name\":");
    put_str(b, c->has_status ? tftap_grpc_status_name(c->status_code) : NULL);
    tftap_buf_puts(b, ",\"text\":");
    tftap_buf_json_string(b, x->text.data ? x->text.data : "", x->text.len);
    tftap_buf_puts(b, ",\"diagnostics\":");
    put_raw(b, c->diagnostics);
    tftap_buf_putc(b, '}');
    return 0;
}

static int api_changes(store *s, int64_t run, const struct web_request *r, tftap_buf *b)
{
    int64_t offset = arg_num(r, "offset", 0, INT64_MAX);
    int64_t limit = arg_num(r, "limit", WEB_CHANGES_DEFAULT, WEB_CHANGES_MAX);
    const char *all = arg_str(r, "all");
    if (offset < 0 || limit <= 0)
        return error_body(b, 400, "offset must be a number and limit 1..200");
    int rc = store_run_get(s, run, one_run, b);
    tftap_buf_reset(b);
    if (rc)
        return rc == TFTAP_ENOTFOUND ? error_body(b, 404, "no such run")
                                     : error_body(b, 500, store_errmsg(s));
    struct changes_ctx x = {.b = b,
                            .all = all && strcmp(all, "0") != 0,
                            .offset = offset,
                            .limit = limit,
                            .text = TFTAP_BUF_INIT};
    tftap_buf_puts(b, "{\"changes\":[");
    size_t held = budget_take(r, run_calls(s, run) * WEB_COST_CHANGES);
    rc = store_changes_each(s, run, arg_str(r, "filter"), each_change, &x);
    budget_give(r, held);
    tftap_buf_done(&x.text);
    if (rc)
        return x.err == TFTAP_EDECODE ? error_body(b, 500, "a change's JSON is malformed")
                                      : error_body(b, 500, store_errmsg(s));
    tftap_buf_puts(b, "],\"next\":");
    put_i64_or_null(b, x.more, offset + x.n);
    tftap_buf_printf(b,
                     ",\"total\":%lld,\"skipped\":%d,\"counts\":{\"create\":%d,\"update\":%d,"
                     "\"replace\":%d,\"delete\":%d,\"noop\":%d,\"read\":%d}}\n",
                     (long long)x.seen, x.skipped, x.counts[ANALYSIS_ACTION_CREATE],
                     x.counts[ANALYSIS_ACTION_UPDATE], x.counts[ANALYSIS_ACTION_REPLACE],
                     x.counts[ANALYSIS_ACTION_DELETE], x.counts[ANALYSIS_ACTION_NOOP],
                     x.counts[ANALYSIS_ACTION_READ]);
    return 200;
}

/* ---- check and diff: `tftap check --json` and `tftap diff --json` -------- */

static int run_exists(store *s, int64_t run, tftap_buf *b)
{
    int rc = store_run_get(s, run, one_run, b);
    tftap_buf_reset(b);
    if (rc)
        return rc == TFTAP_ENOTFOUND ? error_body(b, 404, "no such run")
                                     : error_body(b, 500, store_errmsg(s));
    return 0;
}

static int api_check(store *s, int64_t run, const struct web_request *r, tftap_buf *b)
{
    int status = run_exists(s, run, b);
    if (status)
        return status;
    analysis_findings f = ANALYSIS_FINDINGS_INIT;
    size_t held = budget_take(r, run_calls(s, run) * WEB_COST_CHECK);
    int rc = analysis_check_run(s, run, arg_str(r, "filter"), &f);
    budget_give(r, held);
    if (!rc)
        rc = analysis_findings_json(&f, run, WEB_PAGE_BYTES, b);
    analysis_findings_done(&f);
    if (rc)
        return error_body(b, 500, rc == TFTAP_ESTORE ? store_errmsg(s) : tftap_strerror(rc));
    return 200;
}

static int api_diff(store *s, int64_t a, int64_t bb, const struct web_request *r, tftap_buf *b)
{
    int status = run_exists(s, a, b);
    if (!status)
        status = run_exists(s, bb, b);
    if (status)
        return status;
    const char *ignore[1] = {arg_str(r, "ignore")};
    analysis_diff_opts o = {arg_str(r, "filter"), ignore, ignore[0] ? 1 : 0};
    analysis_diff *d = NULL;
    size_t held =
        budget_take(r, run_calls(s, a) * WEB_COST_DIFF_A + run_calls(s, bb) * WEB_COST_DIFF_B);
    int rc = analysis_diff_runs(s, a, s, bb, &o, &d);
    if (!rc)
        rc = analysis_diff_render(d, ANALYSIS_DIFF_JSON, 0, 0, b);
    analysis_diff_free(d);
    budget_give(r, held);
    if (rc)
        return error_body(b, 500,
                          rc == TFTAP_ESTORE    ? store_errmsg(s)
                          : rc == TFTAP_EDECODE ? "a call's JSON is malformed"
                                                : tftap_strerror(rc));
    /* The JSON form has no cap of its own: a diff too big for a page is
     * refused whole rather than cut into invalid JSON. */
    if (b->len > WEB_DIFF_BYTES)
        return error_body(b, 500, "the diff is too large to show here: use tftap diff");
    return 200;
}

/* ---- schemas ------------------------------------------------------------- */

static int each_schema(void *ctx, const store_schema_info *r)
{
    struct page_ctx *p = ctx;
    if (p->n++)
        tftap_buf_putc(p->b, ',');
    tftap_buf_puts(p->b, "{\"sha256\":");
    put_str(p->b, r->sha256);
    tftap_buf_puts(p->b, ",\"provider\":");
    put_str(p->b, r->provider);
    tftap_buf_puts(p->b, ",\"versions\":");
    put_str(p->b, r->versions);
    tftap_buf_printf(p->b, ",\"protocol\":%d,\"size\":%lld,\"first_seen_us\":%lld}", r->protocol,
                     (long long)r->size, (long long)r->first_seen_us);
    return 0;
}

static int api_schemas(store *s, tftap_buf *b)
{
    struct page_ctx p = {.b = b};
    tftap_buf_puts(b, "{\"schemas\":[");
    if (store_schemas_list(s, each_schema, &p))
        return error_body(b, 500, store_errmsg(s));
    tftap_buf_puts(b, "]}\n");
    return 200;
}

static int is_sha(const char *p, size_t n)
{
    if (n != 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return 0;
    return 1;
}

/* Names of the members of obj containing q (any case), as a JSON array. */
static void names(tftap_buf *b, const sj_node *obj, const char *q)
{
    int n = 0;
    tftap_buf_putc(b, '[');
    for (const sj_node *m = obj && obj->kind == SJ_OBJECT ? obj->child : NULL; m; m = m->next) {
        if (q && !strcasestr(m->key, q))
            continue;
        if (n++)
            tftap_buf_putc(b, ',');
        tftap_buf_json_string(b, m->key, m->key_len);
    }
    tftap_buf_putc(b, ']');
}

static const char *const schema_kinds[] = {"resource_schemas", "data_source_schemas",
                                           "ephemeral_resource_schemas", "functions"};

static int api_schema_locked(store *s, struct web_schema_cache *cache, const char *sha,
                             const struct web_request *r, tftap_buf *b);

static int api_schema(store *s, struct web_schema_cache *cache, const char *sha,
                      const struct web_request *r, tftap_buf *b)
{
    uv_mutex_lock(&cache->lock);
    int status = api_schema_locked(s, cache, sha, r, b);
    uv_mutex_unlock(&cache->lock);
    return status;
}

static int api_schema_locked(store *s, struct web_schema_cache *cache, const char *sha,
                             const struct web_request *r, tftap_buf *b)
{
    if (strcmp(cache->sha, sha) != 0) {
        tftap_buf text = TFTAP_BUF_INIT;
        int rc = store_schema_json(s, sha, &text);
        if (rc) {
            tftap_buf_done(&text);
            return rc == TFTAP_ENOTFOUND ? error_body(b, 404, "no such schema")
                   : rc == TFTAP_EDECODE ? error_body(b, 500, "the schema could not be decoded")
                                         : error_body(b, 500, tftap_strerror(rc));
        }
        free(cache->json);
        tftap_buf_cstr(&text);
        cache->json = tftap_buf_take(&text, &cache->len);
        memcpy(cache->sha, sha, 65);
    }
    sj_doc *d = NULL;
    if (!cache->json || sj_parse(cache->json, cache->len, TFTAP_JSON_MAX_DEPTH, &d) != 0)
        return error_body(b, 500, "the schema could not be read");
    const sj_node *root = sj_root(d);
    const char *kind = arg_str(r, "kind");
    const char *type = arg_str(r, "type");
    int status = 200;
    if (type) {
        const sj_node *blk = NULL;
        for (size_t i = 0; i < sizeof schema_kinds / sizeof *schema_kinds && !blk; i++)
            if (!kind || strcmp(kind, schema_kinds[i]) == 0)
                blk = sj_get(sj_get(root, schema_kinds[i]), type);
        if (!blk) {
            status = error_body(b, 404, "no such type in this schema");
        } else {
            tftap_buf_puts(b, "{\"type\":");
            put_str(b, type);
            /* The block as text: the page parses it keeping numbers exact. */
            tftap_buf_puts(b, ",\"schema\":");
            tftap_buf text = TFTAP_BUF_INIT;
            sj_write(blk, &text);
            tftap_buf_json_string(b, text.data ? text.data : "", text.len);
            tftap_buf_done(&text);
            tftap_buf_puts(b, "}\n");
        }
    } else {
        const char *q = arg_str(r, "q");
        tftap_buf_puts(b, "{\"sha256\":");
        put_str(b, sha);
        for (size_t i = 0; i < sizeof schema_kinds / sizeof *schema_kinds; i++) {
            tftap_buf_printf(b, ",\"%s\":", schema_kinds[i]);
            names(b, sj_get(root, schema_kinds[i]), q);
        }
        tftap_buf_puts(b, "}\n");
    }
    sj_free(d);
    return status;
}

/* ---- routing ------------------------------------------------------------- */

/* Split path into at most max segments (no empty ones allowed). */
static int segments(const char *path, const char **seg, size_t *len, int max)
{
    int n = 0;
    const char *p = path;
    if (*p != '/')
        return -1;
    while (*p) {
        p++; /* the '/' */
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0 || n == max)
            return -1;
        seg[n] = p;
        len[n++] = l;
        p += l;
    }
    return n;
}

static int seg_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* A run named in a path: a decimal id or "last". 0, or the error status. */
static int run_id(store *s, const char *seg, size_t len, int64_t *run, tftap_buf *b)
{
    if (seg_is(seg, len, "last")) {
        if (store_resolve_run(s, "last", run) != 0)
            return error_body(b, 404, "no runs recorded");
    } else if (parse_id(seg, len, run) != 0) {
        return error_body(b, 400, "a run id is a decimal number or 'last'");
    }
    return 0;
}

int web_api(store *s, struct web_schema_cache *cache, const struct web_request *r, tftap_buf *b)
{
    const char *seg[5];
    size_t len[5];
    int n = segments(r->path, seg, len, 5);
    if (n <= 0)
        return error_body(b, 404, "no such API path");
    if (seg_is(seg[0], len[0], "runs")) {
        if (n == 1)
            return api_runs(s, r, b);
        int64_t run;
        int status = run_id(s, seg[1], len[1], &run, b);
        if (status)
            return status;
        if (n == 2)
            return api_run(s, run, b);
        if (seg_is(seg[2], len[2], "calls")) {
            if (n == 3)
                return api_calls(s, run, r, b);
            int64_t call;
            if (n == 4 && parse_id(seg[3], len[3], &call) == 0)
                return api_call(s, run, call, b);
            return error_body(b, n == 4 ? 400 : 404,
                              n == 4 ? "a call id is a decimal number" : "no such API path");
        }
        if (n == 3 && seg_is(seg[2], len[2], "changes"))
            return api_changes(s, run, r, b);
        if (n == 3 && seg_is(seg[2], len[2], "check"))
            return api_check(s, run, r, b);
        if (n == 3 && seg_is(seg[2], len[2], "verdict"))
            return api_verdict(s, r, run, b);
        return error_body(b, 404, "no such API path");
    }
    if (seg_is(seg[0], len[0], "history") && n == 1)
        return api_history(s, r, b);
    if (seg_is(seg[0], len[0], "diff")) {
        if (n != 3)
            return error_body(b, 404, "no such API path: /api/diff/A/B");
        int64_t a, bb;
        int status = run_id(s, seg[1], len[1], &a, b);
        if (!status)
            status = run_id(s, seg[2], len[2], &bb, b);
        return status ? status : api_diff(s, a, bb, r, b);
    }
    if (seg_is(seg[0], len[0], "schemas")) {
        if (n == 1)
            return api_schemas(s, b);
        if (n == 2 && is_sha(seg[1], len[1])) {
            char sha[65];
            memcpy(sha, seg[1], 64);
            sha[64] = '\0';
            return api_schema(s, cache, sha, r, b);
        }
        return error_body(b, n == 2 ? 400 : 404,
                          n == 2 ? "a schema is named by its SHA-256 (64 lowercase hex digits)"
                                 : "no such API path");
    }
    return error_body(b, 404, "no such API path");
}
