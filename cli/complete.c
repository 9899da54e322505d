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
    "addresses and resource types of RUN's calls (targets), one per line.\n";

struct words {
    char **v;
    size_t n, cap;
    int oom;
};

static void words_add(struct words *w, const char *s)
{
    if (s == NULL || *s == '\0' || w->oom)
        return;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        char **v = realloc(w->v, cap * sizeof *v);
        if (v == NULL) {
            w->oom = 1;
            return;
        }
        w->v = v;
        w->cap = cap;
    }
    if ((w->v[w->n] = strdup(s)) == NULL)
        w->oom = 1;
    else
        w->n++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int each_run(void *ctx, const store_run_row *r)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)r->id);
    words_add(ctx, id);
    return 0;
}

static int each_call(void *ctx, const store_call_row *c)
{
    /* A function's name is no resource type. */
    if (strcmp(c->rpc, "CallFunction") != 0)
        words_add(ctx, c->type_name);
    words_add(ctx, c->address);
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
    struct words w = {0};
    store *s = NULL;
    const char *path = NULL;
    char *owned = NULL;
    int64_t run = 0;
    if (runs) {
        path = cli_db_path(db);
        rc = store_open(path, STORE_OPEN_READONLY, &s);
        if (rc != 0) {
            cli_store_open_failed(path, STORE_OPEN_READONLY, rc);
            return 1;
        }
        words_add(&w, "last");
        rc = store_runs_each(s, each_run, &w);
    } else {
        rc = cli_open_run(cli_db_path(db), pos[1], &s, &path, &run, &owned);
        if (rc != 0)
            goto done;
        rc = store_calls_each(s, run, NULL, NULL, each_call, &w);
    }
    if (rc != 0 || w.oom) {
        cli_error("reading %s: %s", STORE_SHOWN(path), w.oom ? "out of memory" : store_errmsg(s));
        rc = 1;
        goto done;
    }
    /* Types and addresses once each, in byte order (runs: 'last' first). */
    if (targets && w.n > 1)
        qsort(w.v, w.n, sizeof *w.v, cmp_str);
    tftap_buf out = TFTAP_BUF_INIT;
    for (size_t i = 0; i < w.n; i++)
        if (i == 0 || runs || strcmp(w.v[i], w.v[i - 1]) != 0)
            tftap_buf_printf(&out, "%s\n", w.v[i]);
    rc = cli_flush(&out);
    tftap_buf_done(&out);
done:
    store_close(s);
    free(owned);
    for (size_t i = 0; i < w.n; i++)
        free(w.v[i]);
    free(w.v);
    return rc;
}
