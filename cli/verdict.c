/* cli: a run's verdict, which show, calls and runs say first: the command's
 * exit code and every reason tftap knows the run failed (calls that failed,
 * answers core rejects, records lost to gaps). */
#include <stdio.h>
#include <string.h>

#include "cli/cli_store.h"
#include "cli/verdict.h"

struct run_read {
    cli_verdict *v;
    int detailed; /* -detailed-exitcode: 2 means changes, not failure */
};

static int run_row(void *ctx, const store_run_row *row)
{
    struct run_read *rr = ctx;
    cli_verdict *v = rr->v;
    v->known = 1;
    v->running = row->ended_us == 0;
    v->has_exit = row->has_exit_code;
    v->exit_code = row->exit_code;
    v->lost = row->dropped;
    rr->detailed = row->args_json && strstr(row->args_json, "\"-detailed-exitcode\"") != NULL;
    return 0;
}

static int count_failed(void *ctx, const store_call_row *row)
{
    (void)row;
    ((cli_verdict *)ctx)->failed_calls++;
    return 0;
}

int cli_verdict_read(store *s, int64_t run, cli_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->findings = (analysis_findings)ANALYSIS_FINDINGS_INIT;
    struct run_read rr = {v, 0};
    int rc = store_run_get(s, run, run_row, &rr);
    if (rc)
        return rc;
    store_calls_filter only_failed = {NULL, NULL, 1};
    rc = store_calls_query(s, run, &only_failed, count_failed, v);
    if (rc)
        return rc;
    rc = analysis_check_run(s, run, NULL, &v->findings);
    if (rc)
        return rc;
    for (size_t i = 0; i < v->findings.n; i++) {
        v->rejected += v->findings.v[i].verdict == ANALYSIS_REJECTS;
        v->tolerated += v->findings.v[i].verdict == ANALYSIS_TOLERATES;
    }
    /* A run is failed or clean exactly as the command saw it. */
    int ok_exit = v->has_exit && (v->exit_code == 0 || (rr.detailed && v->exit_code == 2));
    if (ok_exit) {
        v->unconfirmed = v->rejected;
        v->rejected = 0;
    }
    v->failed = v->has_exit ? !ok_exit : (v->failed_calls || v->rejected);
    return 0;
}

void cli_verdict_done(cli_verdict *v)
{
    analysis_findings_done(&v->findings);
}

int cli_verdict_failed(const cli_verdict *v)
{
    return v->failed;
}

const analysis_finding *cli_verdict_reject_of(const cli_verdict *v, int64_t call_id)
{
    for (size_t i = 0; v->rejected && i < v->findings.n; i++)
        if (v->findings.v[i].call_id == call_id && v->findings.v[i].verdict == ANALYSIS_REJECTS)
            return &v->findings.v[i];
    return NULL;
}

/* The reasons, "; "-separated, each counted. */
static void reasons(const cli_verdict *v, tftap_buf *b)
{
    const char *sep = "";
    if (v->has_exit && v->exit_code != 0) {
        tftap_buf_printf(b, "the command exited %d", v->exit_code);
        sep = "; ";
    }
    if (v->rejected) {
        tftap_buf_printf(b, "%s%zu answer%s core rejects", sep, v->rejected,
                         v->rejected == 1 ? "" : "s");
        sep = "; ";
    }
    if (v->failed_calls) {
        tftap_buf_printf(b, "%s%lld call%s failed", sep, (long long)v->failed_calls,
                         v->failed_calls == 1 ? "" : "s");
        sep = "; ";
    }
    if (v->lost)
        tftap_buf_printf(b, "%s%lld record%s lost (gaps: the record is incomplete)", sep,
                         (long long)v->lost, v->lost == 1 ? "" : "s");
}

void cli_verdict_line(const cli_verdict *v, int64_t run, tftap_buf *b)
{
    if (v->running) {
        tftap_buf_printf(b, "Run %lld is still running", (long long)run);
        if (cli_verdict_failed(v)) {
            tftap_buf_puts(b, "; so far: ");
            reasons(v, b);
        }
    } else if (cli_verdict_failed(v)) {
        tftap_buf_printf(b, "Run %lld failed: ", (long long)run);
        reasons(v, b);
    } else if (v->has_exit) {
        tftap_buf_printf(b, "Run %lld succeeded: the command exited %d", (long long)run,
                         v->exit_code);
        if (!v->failed_calls && !v->unconfirmed)
            tftap_buf_puts(b, ", every call was answered as core expects");
        else if (v->failed_calls)
            tftap_buf_printf(b, "; %lld call%s failed and core carried on",
                             (long long)v->failed_calls, v->failed_calls == 1 ? "" : "s");
    } else if (!v->failed_calls) {
        tftap_buf_printf(b,
                         "Run %lld: every call was answered as core expects; the command's "
                         "exit code was not recorded (a tftap wrap run)",
                         (long long)run);
    }
    if (!v->failed && v->lost)
        tftap_buf_printf(b, "; %lld record%s lost (gaps: the record is incomplete)",
                         (long long)v->lost, v->lost == 1 ? "" : "s");
    if (v->tolerated)
        tftap_buf_printf(b, " (%zu tolerated legacy finding%s: core accepts %s)", v->tolerated,
                         v->tolerated == 1 ? "" : "s", v->tolerated == 1 ? "it" : "them");
    if (v->unconfirmed)
        tftap_buf_printf(b,
                         " (tftap check names %zu answer%s core would reject, but the command "
                         "succeeded: see tftap check)",
                         v->unconfirmed, v->unconfirmed == 1 ? "" : "s");
    tftap_buf_puts(b, ".\n");
}

void cli_verdict_short(const cli_verdict *v, tftap_buf *b)
{
    if (cli_verdict_failed(v))
        reasons(v, b);
}

void cli_verdict_json(const cli_verdict *v, tftap_buf *b)
{
    tftap_buf_printf(b, "{\"failed\":%s,\"running\":%s,\"exit_code\":",
                     cli_verdict_failed(v) ? "true" : "false", v->running ? "true" : "false");
    if (v->has_exit)
        tftap_buf_printf(b, "%d", v->exit_code);
    else
        tftap_buf_puts(b, "null");
    tftap_buf_printf(b,
                     ",\"failed_calls\":%lld,\"records_lost\":%lld,\"tolerated\":%zu,"
                     "\"unconfirmed\":%zu",
                     (long long)v->failed_calls, (long long)v->lost, v->tolerated, v->unconfirmed);
    tftap_buf_puts(b, ",\"rejected\":[");
    int n = 0;
    for (size_t i = 0; v->rejected && i < v->findings.n; i++) {
        const analysis_finding *f = &v->findings.v[i];
        if (f->verdict != ANALYSIS_REJECTS)
            continue;
        tftap_buf_printf(b, "%s{\"call_id\":%lld,\"method\":", n++ ? "," : "",
                         (long long)f->call_id);
        cli_json_str(b, f->rpc);
        tftap_buf_puts(b, ",\"address\":");
        cli_json_str(b, f->address);
        tftap_buf_puts(b, ",\"type_name\":");
        cli_json_str(b, f->type_name);
        tftap_buf_puts(b, ",\"rule\":");
        cli_json_str(b, f->rule);
        tftap_buf_puts(b, ",\"path\":");
        cli_json_str(b, f->path);
        tftap_buf_puts(b, ",\"expected\":");
        cli_json_raw(b, f->expected);
        tftap_buf_puts(b, ",\"actual\":");
        cli_json_raw(b, f->actual);
        tftap_buf_puts(b, ",\"message\":");
        cli_json_str(b, f->message);
        tftap_buf_putc(b, '}');
    }
    tftap_buf_puts(b, "]}");
}
