/* tftap diff RUN_A RUN_B [ADDRESS|TYPE]: what the provider did differently
 * between two recorded runs of the same configuration. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"
#include "cli/filter.h"

static const char usage_text[] =
    "usage: tftap diff RUN_A RUN_B [ADDRESS|TYPE] [--db PATH] [--json | --format FORMAT]\n"
    "       tftap diff SUITE_A SUITE_B [options]\n"
    "                  [--ignore PATTERN]... [--no-inputs] [--max-bytes N]\n\n"
    "Compare what the providers did in two recorded runs of the same configuration\n"
    "(each an id, 'last', or a bundle or database file, FILE:RUN for one of its runs),\n"
    "typically one command before and after a provider or core upgrade.\n"
    "Calls are paired by provider, method, resource type and address (then order),\n"
    "a call one run named and the other did not by type and order;\n"
    "for each planned, new, read or upgraded value every attribute is labelled by where\n"
    "its value came from (config, prior state, left unknown, chosen by the provider),\n"
    "so values merely carried over (random ids in the prior state) do not count as\n"
    "behaviour; such input differences are listed apart. Also compared: the planned\n"
    "action, requires_replace, diagnostics, private data (by hash), deferrals, status\n"
    "and the type's schema version.\n\n"
    "  --format text|json|markdown   text reads like a plan diff (colour on a terminal);\n"
    "                                markdown suits a pull-request comment\n"
    "  --json                        the same as --format json\n"
    "  --ignore PATTERN              ignore attribute paths matching the glob (\".id\",\n"
    "                                \"tags*\"); may be repeated\n"
    "  --no-inputs                   list no input difference (they are still counted)\n"
    "  --max-bytes N                 cap the markdown at N bytes (default 60000)\n"
    "  --db PATH                     the database (default $TFTAP_DB or .tftap/tftap.db)\n\n"
    "Two acceptance test suites (the runs of 'tftap run -- go test ...', see\n"
    "docs/acceptance-tests.md): their step runs are paired by test, step and CLI\n"
    "command (then order), and each pair is compared as above; also reported: tests\n"
    "and step runs in one suite only, and steps that failed in one only. Markdown\n"
    "gives a summary table, then one collapsed section per test that differs.\n\n"
    "Exit status: 0 the providers behaved the same, 1 they differ, 2 error.\n";

static int count_run(void *ctx, const store_run_row *row)
{
    (void)row;
    (*(size_t *)ctx)++;
    return 0;
}

/* How many step runs run_id has (0: it is no suite). */
static size_t step_runs(store *s, int64_t run_id)
{
    size_t n = 0;
    return store_run_children_each(s, run_id, count_run, &n) == 0 ? n : 0;
}

int cli_diff_format(const char *cmd, const char *format, enum analysis_diff_format *fmt)
{
    if (strcmp(format, "text") == 0)
        *fmt = ANALYSIS_DIFF_TEXT;
    else if (strcmp(format, "json") == 0)
        *fmt = ANALYSIS_DIFF_JSON;
    else if (strcmp(format, "markdown") == 0)
        *fmt = ANALYSIS_DIFF_MARKDOWN;
    else {
        cli_usage_error(cmd, "--format is text, json or markdown, not '%s'", format);
        return 2;
    }
    return 0;
}

int cli_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},        {"json", no_argument, NULL, 'j'},
        {"format", required_argument, NULL, 'f'},    {"ignore", required_argument, NULL, 'i'},
        {"max-bytes", required_argument, NULL, 'm'}, {"help", no_argument, NULL, 'h'},
        {"no-inputs", no_argument, NULL, 'n'},       {NULL, 0, NULL, 0}};
    const char *db = NULL, *format = "text";
    const char **ignore = calloc((size_t)argc + 1, sizeof *ignore);
    size_t nignore = 0, max_bytes = 60000;
    int rc = 2, no_inputs = 0;
    if (!ignore) {
        cli_error("out of memory");
        return 2;
    }
    optind = 0; /* a full reset: main ran getopt before */
    int c;
    while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'j':
            format = "json";
            break;
        case 'f':
            format = optarg;
            break;
        case 'i':
            ignore[nignore++] = optarg;
            break;
        case 'm': {
            char *end = NULL;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!*optarg || *end || v < 1000) {
                cli_error("--max-bytes needs a number of at least 1000, not '%s'", optarg);
                goto out;
            }
            max_bytes = (size_t)v;
            break;
        }
        case 'n':
            no_inputs = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            rc = 0;
            goto out;
        default: /* cli_getopt said what was wrong */
            goto out;
        }
    }
    enum analysis_diff_format fmt;
    if (cli_diff_format(argv[0], format, &fmt) != 0)
        goto out;
    int npos = argc - optind;
    if (npos < 2 || npos > 3) {
        cli_error("diff needs RUN_A and RUN_B, and at most an ADDRESS or TYPE (see 'tftap diff "
                  "--help')");
        goto out;
    }
    const char *db_path = launch_db_path(db), *path[2] = {NULL, NULL};
    char *owned[2] = {NULL, NULL};
    store *s[2] = {NULL, NULL};
    int64_t ra = 0, rb = 0;
    analysis_diff *d = NULL;
    if (cli_open_run(db_path, argv[optind], &s[0], &path[0], &ra, &owned[0]) ||
        cli_open_run(db_path, argv[optind + 1], &s[1], &path[1], &rb, &owned[1]))
        goto close;
    /* A run still being recorded (a wrapped command's recorders writing)
     * or cut short: "the same" would be of part of it. */
    for (int i = 0; i < 2; i++) {
        int ended = 0;
        /* When it cannot be told, no warning: the diff says what fails. */
        if (store_run_has_ended(s[i], i ? rb : ra, &ended) == 0 && !ended)
            cli_error("warning: run %s has no end in the record yet (still being recorded, or "
                      "cut short): it is compared as far as it is recorded",
                      argv[optind + i]);
    }
    analysis_diff_opts o = {
        .filter = npos == 3 ? argv[optind + 2] : NULL, .ignore = ignore, .nignore = nignore};
    size_t steps_a = step_runs(s[0], ra), steps_b = step_runs(s[1], rb);
    if (steps_a > 0 || steps_b > 0) {
        if (steps_a == 0 || steps_b == 0) {
            cli_error("run %s is an acceptance test suite and %s is not: diff two suites or two "
                      "runs",
                      argv[optind + (steps_a == 0)], argv[optind + (steps_a != 0)]);
            goto close;
        }
        if (o.filter != NULL) {
            cli_usage_error(argv[0], "an ADDRESS or TYPE takes two runs, not two suites");
            goto close;
        }
        analysis_suite_diff *sd = NULL;
        int serr = analysis_suite_diff_runs(s[0], ra, s[1], rb, &o, &sd);
        if (serr) {
            cli_error("diff: %s", serr == TFTAP_ESTORE ? store_errmsg(s[0]) : tftap_strerror(serr));
            goto close;
        }
        tftap_buf b = TFTAP_BUF_INIT;
        int flags = (fmt == ANALYSIS_DIFF_TEXT && cli_use_color() ? ANALYSIS_DIFF_COLOR : 0) |
                    (no_inputs ? ANALYSIS_DIFF_NO_INPUTS : 0);
        serr = analysis_suite_diff_render(sd, fmt, flags,
                                          fmt == ANALYSIS_DIFF_MARKDOWN ? max_bytes : 0, &b);
        if (serr)
            cli_error("diff: %s", tftap_strerror(serr));
        else if (cli_flush(&b) == 0)
            rc = analysis_suite_diff_count(sd) ? 1 : 0;
        tftap_buf_done(&b);
        analysis_suite_diff_free(sd);
        goto close;
    }
    int64_t rs[2] = {ra, rb};
    int frc = cli_filter_check(s, path, rs, 2, CLI_FILTER_ADDRESS_OR_TYPE, o.filter);
    if (frc)
        goto close; /* rc is 2: an error, as a filter that matches nothing */
    int err = analysis_diff_runs(s[0], ra, s[1], rb, &o, &d);
    if (err) {
        if (err == TFTAP_ESTORE) {
            int i = strcmp(store_errmsg(s[0]), "not an error") != 0 ? 0 : 1;
            cli_error("reading %s: %s", path[i], store_errmsg(s[i]));
        } else if (err == TFTAP_EDECODE)
            cli_error("a recorded call's JSON is malformed");
        else
            cli_error("diff: %s", tftap_strerror(err));
        goto close;
    }
    tftap_buf b = TFTAP_BUF_INIT;
    int flags = (fmt == ANALYSIS_DIFF_TEXT && cli_use_color() ? ANALYSIS_DIFF_COLOR : 0) |
                (no_inputs ? ANALYSIS_DIFF_NO_INPUTS : 0);
    /* Secret values are recorded as keyed hashes: equal values hashed with
     * different keys (a run pushed from another record, a bundle's) never
     * compare equal, and different ones never look alike. */
    char key[2][STORE_RUN_KEY_ID_SIZE];
    if (store_run_key_id(s[0], ra, key[0]) == 0 && store_run_key_id(s[1], rb, key[1]) == 0 &&
        strcmp(key[0], key[1]) != 0) {
        cli_error("warning: runs %s and %s hashed their secret values with different keys "
                  "(runs.key_id): secret values are not comparable between these runs",
                  argv[optind], argv[optind + 1]);
        flags |= ANALYSIS_DIFF_SECRETS_APART;
    }
    err = analysis_diff_render(d, fmt, flags, fmt == ANALYSIS_DIFF_MARKDOWN ? max_bytes : 0, &b);
    if (err) {
        cli_error("diff: %s", tftap_strerror(err));
    } else if (cli_flush(&b) == 0) {
        rc = analysis_diff_count(d) ? 1 : 0;
    }
    tftap_buf_done(&b);
close:
    analysis_diff_free(d);
    for (int i = 0; i < 2; i++) {
        store_close(s[i]);
        free(owned[i]);
    }
out:
    free(ignore);
    return rc;
}
