/* launch: after a run, one line when its calls broke the plugin contract
 * (`tftap check` says which and where: cli/check.c, docs/check.md). */
#include "config.h"

#include "analysis/analysis.h"
#include "launch/launch_int.h"
#include "store/store.h"

static int newest_run(void *ctx, const store_run_row *row)
{
    int64_t *max = ctx;
    if (row->id > *max)
        *max = row->id;
    return 0;
}

void run_check_summary(store *s, int64_t run_id, analysis_check_pass *read)
{
    analysis_findings f = ANALYSIS_FINDINGS_INIT;
    int64_t newest = 0;
    int rc = read ? analysis_check_judge(s, read, &f) : analysis_check_run(s, run_id, NULL, &f);
    if (rc == 0) {
        /* What core rejects and what it only tolerates, apart: the second
         * is no failure of the run. */
        size_t n = 0, tol = 0;
        for (size_t i = 0; i < f.n; i++) {
            n += f.v[i].verdict == ANALYSIS_REJECTS;
            tol += f.v[i].verdict == ANALYSIS_TOLERATES;
        }
        tftap_buf line = TFTAP_BUF_INIT;
        if (n)
            tftap_buf_printf(&line, "%zu provider contract violation%s", n, n == 1 ? "" : "s");
        if (tol)
            tftap_buf_printf(&line, "%s%zu tolerated legacy finding%s (core accepts %s)",
                             n ? ", " : "", tol, tol == 1 ? "" : "s", tol == 1 ? "it" : "them");
        if ((n || tol) && store_runs_each(s, newest_run, &newest) == 0 && newest == run_id)
            launch_error("%s; see tftap check last", tftap_buf_cstr(&line));
        else if (n || tol)
            launch_error("%s; see tftap check %lld", tftap_buf_cstr(&line), (long long)run_id);
        tftap_buf_done(&line);
    }
    analysis_findings_done(&f);
}
