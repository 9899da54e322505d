/* tftap export RUN: everything recorded for a run as JSON lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_store.h"

static const char usage_text[] =
    "usage: tftap export RUN [--test PATTERN] [--format jsonl] [--db PATH] [--json]\n\n"
    "Write RUN (an id or 'last') as JSON lines on stdout: one object per line with\n"
    "\"kind\" run, process, call (with decoded request and response) or gap.\n"
    "jsonl is the only format; --json is the same. A run line of an acceptance test\n"
    "step run carries parent_id, test_name and test_step. With --test PATTERN, RUN is\n"
    "an acceptance test suite (the run of 'tftap run -- go test ...'): each step run of\n"
    "the tests whose name matches PATTERN (a shell glob) is written in turn.\n";

static int write_out(void *ctx, const char *p, size_t n)
{
    (void)ctx;
    if (fwrite(p, 1, n, stdout) != n) {
        cli_error("writing output: %s", strerror(errno));
        return TFTAP_EIO;
    }
    return 0;
}

int cli_export(int argc, char **argv)
{
    const char *format = "jsonl", *test = NULL;
    const struct cli_opt opts[] = {{"--format", &format, NULL, 0}, {"--test", &test, NULL, 0}, {0}};
    struct cli_read r;
    int rc = cli_read_parse(argc, argv, opts, usage_text, 1, 1, &r);
    if (rc != CLI_READ_GO)
        return rc;
    if (strcmp(format, "jsonl") != 0) {
        cli_usage_error(argv[0], "unknown export format '%s' (only jsonl)", format);
        return 2;
    }
    rc = cli_read_open(&r);
    if (rc != CLI_READ_GO)
        return rc;
    if (test != NULL) {
        int64_t *ids = NULL;
        size_t n = 0;
        int code = cli_suite_steps(&r, argv[0], test, &ids, &n);
        if (code != 0) {
            cli_read_done(&r);
            return code;
        }
        rc = 0;
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = store_export_jsonl(r.s, ids[i], write_out, NULL);
        free(ids);
    } else {
        rc = store_export_jsonl(r.s, r.run, write_out, NULL);
    }
    int exit_code = 0;
    if (rc) {
        if (rc != TFTAP_EIO)
            cli_error("reading %s: %s", r.path, store_errmsg(r.s));
        exit_code = 1;
    } else if (fflush(stdout) != 0) {
        cli_error("writing output: %s", strerror(errno));
        exit_code = 1;
    }
    cli_read_done(&r);
    return exit_code;
}
