/* analysis: a run's verdict, which the CLI's show, calls, runs and bundle
 * and the web API say first: the command's exit code and every reason
 * tftap knows the run failed (calls that failed, answers core rejects,
 * records lost to gaps). */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

struct run_read {
    analysis_run_verdict *v;
    int detailed; /* -detailed-exitcode: 2 means changes, not failure */
};

static int run_row(void *ctx, const store_run_row *row)
{
    struct run_read *rr = ctx;
    analysis_run_verdict *v = rr->v;
    v->known = 1;
    v->running = row->ended_us == 0;
    v->has_exit = row->has_exit_code;
    v->exit_code = row->exit_code;
    v->lost = row->dropped;
    /* Go's flag package takes -flag and --flag alike. */
    rr->detailed = row->args_json && (strstr(row->args_json, "\"-detailed-exitcode\"") ||
                                      strstr(row->args_json, "\"--detailed-exitcode\""));
    return 0;
}

static int count_failed(void *ctx, const store_call_row *row)
{
    analysis_run_verdict *v = ctx;
    if (!analysis_run_verdict_unrecorded(v, row)) {
        v->failed_calls++;
        if (v->nfailed_ids < ANALYSIS_VERDICT_FAILED_IDS) {
            if (!v->failed_ids &&
                !(v->failed_ids = malloc(ANALYSIS_VERDICT_FAILED_IDS * sizeof *v->failed_ids)))
                return TFTAP_ENOMEM;
            v->failed_ids[v->nfailed_ids++] = row->id;
        }
        return 0;
    }
    int64_t *ids = realloc(v->unrecorded_ids, (size_t)(v->unrecorded + 1) * sizeof *ids);
    if (!ids)
        return TFTAP_ENOMEM;
    v->unrecorded_ids = ids;
    ids[v->unrecorded++] = row->id;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int analysis_run_verdict_unrecorded_id(const analysis_run_verdict *v, int64_t call_id)
{
    return v && v->unrecorded &&
           bsearch(&call_id, v->unrecorded_ids, (size_t)v->unrecorded, sizeof call_id, cmp_i64);
}

static int each_gap(void *ctx, const char *provider, const char *reason, int64_t lost)
{
    analysis_run_verdict *v = ctx;
    if (lost <= 0)
        return 0;
    if (!v->gap_reason && reason && !(v->gap_reason = strdup(reason)))
        return TFTAP_ENOMEM;
    char **p = realloc(v->gap_providers, (v->ngap_providers + 1) * sizeof *p);
    if (!p)
        return TFTAP_ENOMEM;
    v->gap_providers = p;
    if (!(p[v->ngap_providers] = strdup(provider ? provider : "")))
        return TFTAP_ENOMEM;
    v->ngap_providers++;
    return 0;
}

int analysis_run_verdict_unrecorded(const analysis_run_verdict *v, const store_call_row *row)
{
    (void)v;
    /* v_calls says it, process by process: no end, and a gap in the record
     * of the process that made the call. */
    return row->not_recorded;
}

int analysis_run_verdict_read(store *s, int64_t run, int flags, analysis_run_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->findings = (analysis_findings)ANALYSIS_FINDINGS_INIT;
    struct run_read rr = {v, 0};
    int rc = store_run_get(s, run, run_row, &rr);
    if (rc)
        return rc;
    rc = store_run_gaps_each(s, run, each_gap, v);
    if (rc)
        return rc;
    store_calls_filter only_failed = {NULL, NULL, 1};
    rc = store_calls_query(s, run, &only_failed, count_failed, v);
    if (rc)
        return rc;
    if (v->unrecorded)
        qsort(v->unrecorded_ids, (size_t)v->unrecorded, sizeof *v->unrecorded_ids, cmp_i64);
    /* A run is failed or clean exactly as the command saw it. */
    int ok_exit = v->has_exit && (v->exit_code == 0 || (rr.detailed && v->exit_code == 2));
    if (!(ok_exit && (flags & ANALYSIS_VERDICT_LAZY))) {
        rc = analysis_check_run(s, run, NULL, &v->findings);
        if (rc)
            return rc;
        v->checked = 1;
    }
    v->rejected = analysis_findings_count(&v->findings, ANALYSIS_REJECTS);
    v->tolerated = analysis_findings_count(&v->findings, ANALYSIS_TOLERATES);
    if (ok_exit) {
        v->unconfirmed = v->rejected;
        v->rejected = 0;
    }
    v->failed = v->has_exit ? !ok_exit : (v->failed_calls || v->rejected);
    return 0;
}

void analysis_run_verdict_done(analysis_run_verdict *v)
{
    analysis_findings_done(&v->findings);
    for (size_t i = 0; i < v->ngap_providers; i++)
        free(v->gap_providers[i]);
    free(v->gap_providers);
    free(v->gap_reason);
    free(v->unrecorded_ids);
    free(v->failed_ids);
    v->unrecorded_ids = NULL;
    v->failed_ids = NULL;
    v->nfailed_ids = 0;
    v->gap_providers = NULL;
    v->ngap_providers = 0;
    v->gap_reason = NULL;
}

const analysis_finding *analysis_run_verdict_reject_of(const analysis_run_verdict *v,
                                                       int64_t call_id)
{
    for (size_t i = 0; v->rejected && i < v->findings.n; i++)
        if (v->findings.v[i].call_id == call_id && v->findings.v[i].verdict == ANALYSIS_REJECTS)
            return &v->findings.v[i];
    return NULL;
}

void analysis_run_verdict_json(const analysis_run_verdict *v, size_t max_bytes, tftap_buf *b)
{
    tftap_buf_printf(b, "{\"failed\":%s,\"running\":%s,\"checked\":%s,\"exit_code\":",
                     v->failed ? "true" : "false", v->running ? "true" : "false",
                     v->checked ? "true" : "false");
    if (v->has_exit)
        tftap_buf_printf(b, "%d", v->exit_code);
    else
        tftap_buf_puts(b, "null");
    tftap_buf_printf(b,
                     ",\"failed_calls\":%lld,\"records_lost\":%lld,\"not_recorded\":%lld,"
                     "\"tolerated\":%zu,\"unconfirmed\":%zu",
                     (long long)v->failed_calls, (long long)v->lost, (long long)v->unrecorded,
                     v->tolerated, v->unconfirmed);
    tftap_buf_puts(b, ",\"rejected\":[");
    size_t n = 0, start = b->len;
    for (size_t i = 0; v->rejected && i < v->findings.n; i++) {
        const analysis_finding *f = &v->findings.v[i];
        if (f->verdict != ANALYSIS_REJECTS)
            continue;
        if (max_bytes && b->len - start > max_bytes)
            break;
        tftap_buf_printf(b, "%s{\"call_id\":%lld,\"method\":", n++ ? "," : "",
                         (long long)f->call_id);
        analysis_json_str(b, f->rpc);
        tftap_buf_puts(b, ",\"address\":");
        analysis_json_str(b, f->address);
        tftap_buf_puts(b, ",\"type_name\":");
        analysis_json_str(b, f->type_name);
        tftap_buf_puts(b, ",\"rule\":");
        analysis_json_str(b, f->rule);
        tftap_buf_puts(b, ",\"path\":");
        analysis_json_str(b, f->path);
        tftap_buf_puts(b, ",\"expected\":");
        analysis_json_raw(b, f->expected);
        tftap_buf_puts(b, ",\"actual\":");
        analysis_json_raw(b, f->actual);
        tftap_buf_puts(b, ",\"message\":");
        analysis_json_str(b, f->message);
        tftap_buf_putc(b, '}');
    }
    tftap_buf_putc(b, ']');
    if (n < v->rejected)
        tftap_buf_printf(b, ",\"rejected_count\":%zu", v->rejected);
    tftap_buf_putc(b, '}');
}
