/* tftap export RUN: everything recorded for a run as JSON lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_store.h"

static const char usage_text[] =
    "usage: tftap export RUN [--format jsonl] [--db PATH] [--json]\n\n"
    "Write RUN (an id or 'last') as JSON lines on stdout: one object per line with\n"
    "\"kind\" run, process, call (with decoded request and response) or gap.\n"
    "jsonl is the only format; --json is the same.\n";

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
    const char *db = NULL, *format = "jsonl", *pos[1];
    int json = 0, help = 0, npos = 0;
    const struct cli_opt opts[] = {{"--format", &format, NULL}, {0}};
    int rc = cli_store_args(argc, argv, opts, &db, &json, &help, pos, 1, &npos);
    if (!rc && !help && npos != 1) {
        cli_error("export needs RUN (a run id or 'last')");
        rc = 2;
    }
    if (!rc && !help && strcmp(format, "jsonl") != 0) {
        cli_error("unknown export format '%s' (only jsonl)", format);
        rc = 2;
    }
    if (rc || help) {
        if (!rc)
            fputs(usage_text, stdout);
        return rc;
    }
    const char *path = cli_db_path(db);
    store *s = NULL;
    if (cli_open_store(path, &s))
        return 1;
    int64_t run = 0;
    rc = cli_resolve_run(s, path, pos[0], &run);
    if (rc) {
        store_close(s);
        return rc;
    }
    rc = store_export_jsonl(s, run, write_out, NULL);
    int exit_code = 0;
    if (rc) {
        if (rc != TFTAP_EIO)
            cli_error("reading %s: %s", path, store_errmsg(s));
        exit_code = 1;
    } else if (fflush(stdout) != 0) {
        cli_error("writing output: %s", strerror(errno));
        exit_code = 1;
    }
    store_close(s);
    return exit_code;
}
