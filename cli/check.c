/* tftap check RUN [ADDRESS|TYPE]: which provider answer broke which rule of
 * the plugin contract, at which attribute path (docs/check.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"
#include "cli/filter.h"

static const char usage_text[] =
    "usage: tftap check RUN [ADDRESS|TYPE] [--strict] [--db PATH] [--json]\n\n"
    "Check every recorded provider answer of RUN (an id, 'last', or a bundle or database\n"
    "file, FILE:RUN for one of its runs) against the rules\n"
    "OpenTofu applies to it: plans valid against config and prior state, apply results\n"
    "compatible with the plan and wholly known, requires_replace paths that exist, destroy\n"
    "plans and results null, data source reads known, the plan made during apply\n"
    "consistent with the first plan. Each finding names the call, address, rule,\n"
    "attribute path, both values (redacted ones stay redacted) and whether core rejects\n"
    "it or tolerates it (legacy type system). Refreshes that changed an object are listed\n"
    "as drift, not as violations. ADDRESS (test_thing.a, also matching its instances;\n"
    "module.m, module.m[0], module.m.test_thing.a) or TYPE keeps only those calls (one\n"
    "that names nothing in RUN is an error that names the nearest type or address).\n\n"
    "Exit status: 1 when core rejects an answer, 0 otherwise: what core only tolerates\n"
    "from legacy-SDK providers is reported and passes, unless --strict (then it fails\n"
    "too); 2 error.\n";

static void text_finding(tftap_buf *b, const analysis_finding *f)
{
    tftap_buf_printf(b, "call %lld %s %s: %s at %s (%s)\n", (long long)f->call_id,
                     f->rpc ? f->rpc : "?",
                     f->address ? f->address : (f->type_name ? f->type_name : "?"), f->rule,
                     *f->path ? f->path : "the object", analysis_verdict_name(f->verdict));
    tftap_buf_printf(b, "  %s\n", f->message);
    if (f->other_call_id)
        tftap_buf_printf(b, "  compared with the plan of call %lld\n", (long long)f->other_call_id);
    if (f->expected)
        tftap_buf_printf(b, "  expected: %s\n", f->expected);
    if (f->actual)
        tftap_buf_printf(b, "  actual:   %s\n", f->actual);
    if (!f->address && f->type_name)
        tftap_buf_puts(b, "  (the call was not matched to an address)\n");
}

int cli_check(int argc, char **argv)
{
    const char *db = NULL, *pos[2] = {NULL, NULL};
    int json = 0, help = 0, npos = 0, strict = 0;
    const struct cli_opt opts[] = {{"--strict", NULL, &strict, 0}, {0}};
    int rc = cli_store_args(argc, argv, opts, &db, &json, &help, pos, 2, &npos);
    if (!rc && !help && npos < 1) {
        cli_error("check needs RUN (a run id or 'last')");
        rc = 2;
    }
    if (rc || help) {
        if (!rc)
            fputs(usage_text, stdout);
        return rc ? 2 : 0;
    }
    const char *path = NULL;
    char *owned = NULL;
    store *s = NULL;
    int64_t run = 0;
    if (cli_open_run(launch_db_path(db), pos[0], &s, &path, &run, &owned))
        return 2;
    if (cli_filter_check(&s, &path, &run, 1, CLI_FILTER_ADDRESS_OR_TYPE, pos[1])) {
        store_close(s);
        free(owned);
        return 2;
    }
    analysis_findings f = ANALYSIS_FINDINGS_INIT;
    rc = analysis_check_run(s, run, pos[1], &f);
    if (rc) {
        if (rc == TFTAP_ESTORE)
            cli_error("reading %s: %s", STORE_SHOWN(path), store_errmsg(s));
        else
            cli_error("checking run %lld: %s", (long long)run, tftap_strerror(rc));
        analysis_findings_done(&f);
        store_close(s);
        free(owned);
        return 2;
    }
    size_t violations = analysis_findings_violations(&f), rejected = 0;
    for (size_t i = 0; i < f.n; i++)
        rejected += f.v[i].verdict == ANALYSIS_REJECTS;
    tftap_buf out = TFTAP_BUF_INIT;
    if (json) {
        if (analysis_findings_json(&f, run, 0, &out) != 0)
            out.failed = 1; /* cli_flush reports it: no cut-off JSON */
    } else {
        for (size_t i = 0; i < f.n; i++) {
            if (i)
                tftap_buf_putc(&out, '\n');
            text_finding(&out, &f.v[i]);
        }
        if (f.n)
            tftap_buf_putc(&out, '\n');
        size_t tolerated = violations - rejected;
        if (rejected)
            tftap_buf_printf(&out, "Run %lld: %zu provider contract violation%s (core rejects %s)",
                             (long long)run, rejected, rejected == 1 ? "" : "s",
                             rejected == 1 ? "it" : "them");
        else
            tftap_buf_printf(&out, "Run %lld: no provider contract violations", (long long)run);
        if (tolerated)
            tftap_buf_printf(&out, "; %zu tolerated legacy finding%s (core accepts %s%s)",
                             tolerated, tolerated == 1 ? "" : "s", tolerated == 1 ? "it" : "them",
                             strict ? "; --strict fails on it" : "");
        if (f.n > violations)
            tftap_buf_printf(&out, ", %zu drift", f.n - violations);
        if (f.unchecked)
            tftap_buf_printf(&out, "; %zu call%s could not be checked (no schema recorded)",
                             f.unchecked, f.unchecked == 1 ? "" : "s");
        /* Under tftap wrap a run ends when its last recorder is done. */
        if (f.running)
            tftap_buf_puts(&out, "; the run has not ended: calls recorded after this are "
                                 "not checked");
        tftap_buf_puts(&out, ".\n");
    }
    int err = cli_flush(&out);
    tftap_buf_done(&out);
    analysis_findings_done(&f);
    store_close(s);
    free(owned);
    if (err)
        return 2;
    return rejected || (strict && violations) ? 1 : 0;
}
