/* cli: a run's verdict as the CLI says it (show, calls, runs and bundle
 * lead with it). What the verdict is, analysis_run_verdict_read decides:
 * the web API says the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_store.h"
#include "cli/verdict.h"

int cli_verdict_read(store *s, int64_t run, int flags, cli_verdict *v)
{
    return analysis_run_verdict_read(s, run, flags & CLI_VERDICT_LAZY ? ANALYSIS_VERDICT_LAZY : 0,
                                     v);
}

void cli_verdict_done(cli_verdict *v)
{
    analysis_run_verdict_done(v);
}

int cli_verdict_failed(const cli_verdict *v)
{
    return v->failed;
}

int cli_verdict_unrecorded(const cli_verdict *v, const store_call_row *row)
{
    return analysis_run_verdict_unrecorded(v, row);
}

int cli_verdict_unrecorded_id(const cli_verdict *v, int64_t call_id)
{
    return analysis_run_verdict_unrecorded_id(v, call_id);
}

const analysis_finding *cli_verdict_reject_of(const cli_verdict *v, int64_t call_id)
{
    return analysis_run_verdict_reject_of(v, call_id);
}

/* "3 records lost (gaps: REASON; 2 calls not recorded)". */
static void lost_text(const cli_verdict *v, const char *sep, tftap_buf *b)
{
    const char *why = v->gap_reason ? v->gap_reason : "the record is incomplete";
    tftap_buf_printf(b, "%s%lld record%s lost (gaps: %.120s%s", sep, (long long)v->lost,
                     v->lost == 1 ? "" : "s", why, strlen(why) > 120 ? "..." : "");
    if (v->unrecorded)
        tftap_buf_printf(b, "; %lld call%s not recorded", (long long)v->unrecorded,
                         v->unrecorded == 1 ? "" : "s");
    tftap_buf_putc(b, ')');
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
        lost_text(v, sep, b);
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
        if (!v->failed_calls && !v->unconfirmed && !v->lost && !v->unrecorded)
            tftap_buf_puts(b, ", every call was answered as core expects");
        else if (v->failed_calls)
            tftap_buf_printf(b, "; %lld call%s failed and core carried on",
                             (long long)v->failed_calls, v->failed_calls == 1 ? "" : "s");
    } else if (!v->failed_calls && !v->lost && !v->unrecorded) {
        tftap_buf_printf(b,
                         "Run %lld: every call was answered as core expects; the command's "
                         "exit code is unknown (a tftap wrap run)",
                         (long long)run);
    } else {
        tftap_buf_printf(b, "Run %lld: the command's exit code is unknown (a tftap wrap run)",
                         (long long)run);
    }
    if (!v->failed && v->lost)
        lost_text(v, "; ", b);
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
    analysis_run_verdict_json(v, 0, b);
}
