/* tftap runs: the recorded runs, newest last. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "cli/cli_store.h"
#include "cli/verdict.h"

static const char usage_text[] =
    "usage: tftap runs [--limit N] [--test PATTERN] [--db PATH] [--json]\n\n"
    "List the recorded runs: id, verdict, start time, duration, exit code, provider\n"
    "processes, calls and the command. VERDICT is ok, FAILED (why ends the line: a\n"
    "non-zero exit code, calls that failed, answers core rejects as 'tftap check' finds\n"
    "them, records lost), running, or '-' (no failure known and no exit code recorded,\n"
    "as under tftap wrap). RUN arguments of other commands take these ids or 'last'.\n"
    "--limit N lists only the newest N runs (still oldest first). --json also gives each\n"
    "run's uuid, which names it in every record it is pushed to (tftap push).\n"
    "A CLI command an acceptance test step ran ('tftap run -- go test ...', see\n"
    "docs/acceptance-tests.md) is a run of its own, named TEST / step N / COMMAND, under\n"
    "the run of the test command (--json: parent_id, test, step). --test PATTERN lists\n"
    "only the step runs of the tests whose name matches PATTERN (a shell glob: '*' and\n"
    "'?'; a PATTERN without either matches the name exactly).\n";

struct runs_ctx {
    tftap_buf out;
    int json;
    int n;
    store *s;
    const char *test; /* --test PATTERN, or NULL */
};

void cli_step_name(const store_run_row *r, tftap_buf *out)
{
    tftap_buf_puts(out, r->test_name ? r->test_name : "(test not known)");
    if (r->test_step > 0)
        tftap_buf_printf(out, " / step %d", r->test_step);
    else
        tftap_buf_puts(out, " / step ?");
    char *sub = analysis_args_subcommand(r->args_json);
    tftap_buf_printf(out, " / %s", sub != NULL && sub[0] ? sub : "-");
    free(sub);
}

int cli_test_matches(const char *pattern, const char *test)
{
    return pattern == NULL || (test != NULL && fnmatch(pattern, test, 0) == 0);
}

static int each_run(void *ctx, const store_run_row *r)
{
    struct runs_ctx *c = ctx;
    tftap_buf *b = &c->out;
    cli_verdict v;
    /* A step run: under its suite, or alone (bundled) with its name. */
    int step_run = r->parent_id > 0 || r->test_name != NULL;
    if (c->test != NULL && (!step_run || !cli_test_matches(c->test, r->test_name)))
        return 0;
    int rc = cli_verdict_read(c->s, r->id, CLI_VERDICT_LAZY, &v);
    if (rc) {
        cli_verdict_done(&v);
        return rc;
    }
    if (c->json) {
        tftap_buf_puts(b, c->n ? ",\n  " : "[\n  ");
        tftap_buf_printf(b, "{\"id\":%lld,\"command\":", (long long)r->id);
        cli_json_str(b, r->command);
        tftap_buf_puts(b, ",\"args\":");
        cli_json_raw(b, r->args_json);
        tftap_buf_puts(b, ",\"cwd\":");
        cli_json_str(b, r->cwd);
        tftap_buf_puts(b, ",\"cli_name\":");
        cli_json_str(b, r->cli_name);
        tftap_buf_puts(b, ",\"cli_version\":");
        cli_json_str(b, r->cli_version);
        tftap_buf_printf(b, ",\"started_us\":%lld,\"ended_us\":", (long long)r->started_us);
        if (r->ended_us)
            tftap_buf_printf(b, "%lld", (long long)r->ended_us);
        else
            tftap_buf_puts(b, "null");
        if (r->has_exit_code)
            tftap_buf_printf(b, ",\"exit_code\":%d", r->exit_code);
        else
            tftap_buf_puts(b, ",\"exit_code\":null");
        tftap_buf_printf(b, ",\"processes\":%lld,\"calls\":%lld,\"dropped\":%lld,\"uuid\":",
                         (long long)r->processes, (long long)r->calls, (long long)r->dropped);
        cli_json_str(b, r->uuid);
        if (step_run) {
            if (r->parent_id > 0)
                tftap_buf_printf(b, ",\"parent_id\":%lld,\"test\":", (long long)r->parent_id);
            else
                tftap_buf_puts(b, ",\"parent_id\":null,\"test\":");
            cli_json_str(b, r->test_name);
            if (r->test_step > 0)
                tftap_buf_printf(b, ",\"step\":%d", r->test_step);
            else
                tftap_buf_puts(b, ",\"step\":null");
        } else {
            tftap_buf_puts(b, ",\"parent_id\":null,\"test\":null,\"step\":null");
        }
        tftap_buf_puts(b, ",\"verdict\":");
        cli_verdict_json(&v, b);
        tftap_buf_putc(b, '}');
    } else {
        char when[32], dur[32], exit_code[16];
        cli_format_time(r->started_us, when);
        cli_format_duration(r->started_us, r->ended_us, dur);
        if (r->has_exit_code)
            snprintf(exit_code, sizeof exit_code, "%d", r->exit_code);
        else
            snprintf(exit_code, sizeof exit_code, "%s", r->ended_us ? "-" : "running");
        const char *verdict = cli_verdict_failed(&v) ? "FAILED"
                              : v.running            ? "running"
                              : v.has_exit           ? "ok"
                                                     : "-";
        if (c->n == 0)
            tftap_buf_printf(b, "%-5s %-7s %-19s %9s %7s %5s %6s  %s\n", "RUN", "VERDICT",
                             "STARTED", "DURATION", "EXIT", "PROCS", "CALLS", "COMMAND");
        tftap_buf_printf(b, "%-5lld %-7s %-19s %9s %7s %5lld %6lld  ", (long long)r->id, verdict,
                         when, dur, exit_code, (long long)r->processes, (long long)r->calls);
        if (step_run) {
            cli_step_name(r, b);
            if (r->parent_id > 0)
                tftap_buf_printf(b, " (run %lld)", (long long)r->parent_id);
            tftap_buf_puts(b, ": ");
        }
        tftap_buf_puts(b, r->command && *r->command ? r->command : "-");
        cli_args_text(b, r->args_json);
        if (cli_verdict_failed(&v)) {
            tftap_buf_puts(b, "  (");
            cli_verdict_short(&v, b);
            tftap_buf_putc(b, ')');
        }
        tftap_buf_putc(b, '\n');
    }
    c->n++;
    cli_verdict_done(&v);
    return cli_flush(b) ? TFTAP_EIO : 0;
}

int cli_runs(int argc, char **argv)
{
    const char *limit_text = NULL, *test = NULL;
    const struct cli_opt opts[] = {{"--limit", &limit_text, NULL}, {"--test", &test, NULL}, {0}};
    struct cli_read r;
    int rc = cli_read_parse(argc, argv, opts, usage_text, 0, 0, &r);
    if (rc != CLI_READ_GO)
        return rc;
    long long limit = 0;
    if (limit_text) {
        char *end = NULL;
        errno = 0;
        limit = strtoll(limit_text, &end, 10);
        if (errno || end == limit_text || *end || limit <= 0) {
            cli_usage_error(argv[0], "--limit must be a positive number, not '%s'", limit_text);
            return 2;
        }
    }
    rc = cli_read_open(&r);
    if (rc != CLI_READ_GO)
        return rc;
    struct runs_ctx c = {TFTAP_BUF_INIT, r.json, 0, r.s, test};
    rc = store_runs_last(r.s, limit, each_run, &c);
    int exit_code = 0;
    if (rc) {
        if (rc != TFTAP_EIO)
            cli_error("reading %s: %s", r.path, store_errmsg(r.s));
        exit_code = 1;
    } else if (r.json) {
        tftap_buf_puts(&c.out, c.n ? "\n]\n" : "[]\n");
        exit_code = cli_flush(&c.out);
    } else if (c.n == 0 && test != NULL) {
        cli_usage_error(argv[0], "no step run of a test matching '%s' in %s", test,
                        STORE_SHOWN(r.path));
        exit_code = 2;
    } else if (c.n == 0) {
        fprintf(stderr, "no runs recorded in %s\n", STORE_SHOWN(r.path));
    }
    tftap_buf_done(&c.out);
    cli_read_done(&r);
    return exit_code;
}
