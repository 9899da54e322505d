/* tftap complete (hidden): the words the shell completion scripts
 * (completion/) offer that only the database knows: run ids, and the
 * addresses and resource types of one run. One word per line, nothing
 * else; a database that cannot be read prints its one error line (which
 * the scripts discard) and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_store.h"

static const char usage_text[] =
    "usage: tftap complete runs [--db PATH]\n"
    "       tftap complete targets RUN [--db PATH]\n\n"
    "For the shell completion scripts: print 'last' and the run ids (runs), or the\n"
    "resource types and addresses of RUN's calls (targets), one per line.\n";

static int each_run(void *ctx, const store_run_row *r)
{
    tftap_buf_printf(ctx, "%lld\n", (long long)r->id);
    return 0;
}

static int each_target(void *ctx, const char *word)
{
    tftap_buf_printf(ctx, "%s\n", word);
    return 0;
}

int cli_complete(int argc, char **argv)
{
    const char *db = NULL, *pos[2] = {NULL, NULL};
    int json = 0, help = 0, npos = 0;
    int rc = cli_store_args(argc, argv, NULL, &db, &json, &help, pos, 2, &npos);
    if (rc || help) {
        if (help)
            fputs(usage_text, stdout);
        return rc;
    }
    int runs = npos == 1 && strcmp(pos[0], "runs") == 0;
    int targets = npos == 2 && strcmp(pos[0], "targets") == 0;
    if (!runs && !targets) {
        cli_usage_error(argv[0], "complete takes 'runs' or 'targets RUN'");
        return 2;
    }
    store *s = NULL;
    const char *path = cli_db_path(db);
    char *owned = NULL;
    int64_t run = 0;
    tftap_buf out = TFTAP_BUF_INIT;
    if (runs) {
        /* Read only: a Tab never migrates a database. */
        rc = store_open(path, STORE_OPEN_READONLY, &s);
        if (rc != 0) {
            cli_store_open_failed(path, STORE_OPEN_READONLY, rc);
            return 1;
        }
        tftap_buf_puts(&out, "last\n");
        rc = store_runs_each(s, each_run, &out);
    } else {
        rc = cli_open_run(path, pos[1], &s, &path, &run, &owned);
        if (rc != 0)
            goto done;
        rc = store_run_targets_each(s, run, each_target, &out);
    }
    if (rc != 0) {
        cli_error("reading %s: %s", STORE_SHOWN(path), store_errmsg(s));
        rc = 1;
        goto done;
    }
    rc = cli_flush(&out);
done:
    tftap_buf_done(&out);
    store_close(s);
    free(owned);
    return rc;
}
