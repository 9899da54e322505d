/* tftap complete (hidden): the words the shell completion scripts
 * (completion/) offer that only the database knows: run ids, and the
 * addresses and resource types of one run. One word per line, nothing
 * else; a database that cannot be read prints its one error line (which
 * the scripts discard) and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "launch/launch.h"
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

/* A run's resource types and addresses, to be sorted and told once each. */
struct targets {
    char **v;
    size_t n, cap;
};

static int add_target(struct targets *t, const char *word)
{
    if (word == NULL || *word == '\0')
        return 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **v = realloc(t->v, cap * sizeof *v);
        if (v == NULL)
            return TFTAP_ENOMEM;
        t->v = v;
        t->cap = cap;
    }
    if ((t->v[t->n] = strdup(word)) == NULL)
        return TFTAP_ENOMEM;
    t->n++;
    return 0;
}

static int each_name(void *ctx, const char *rpc, const char *type_name, const char *address)
{
    /* A function's name is no resource type. */
    int rc = strcmp(rpc, "CallFunction") != 0 ? add_target(ctx, type_name) : 0;
    return rc ? rc : add_target(ctx, address);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
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
    const char *path = launch_db_path(db);
    char *owned = NULL;
    int64_t run = 0;
    tftap_buf out = TFTAP_BUF_INIT;
    struct targets t = {NULL, 0, 0};
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
        rc = store_run_names_each(s, run, each_name, &t);
        if (rc == 0 && t.n > 1)
            qsort(t.v, t.n, sizeof *t.v, cmp_str);
        for (size_t i = 0; rc == 0 && i < t.n; i++)
            if (i == 0 || strcmp(t.v[i], t.v[i - 1]) != 0)
                tftap_buf_printf(&out, "%s\n", t.v[i]);
    }
    if (rc != 0) {
        if (rc == TFTAP_ENOMEM)
            cli_error("out of memory");
        else
            cli_error("reading %s: %s", STORE_SHOWN(path), store_errmsg(s));
        rc = 1;
        goto done;
    }
    rc = cli_flush(&out);
done:
    for (size_t i = 0; i < t.n; i++)
        free(t.v[i]);
    free(t.v);
    tftap_buf_done(&out);
    store_close(s);
    free(owned);
    return rc;
}
