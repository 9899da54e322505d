/* tftap mock RUN [ADDRESS|TYPE]: the values a run's providers really
 * returned, as mock_provider blocks for `tofu test` (docs/replay.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"
#include "cli/filter.h"

static const char usage_text[] =
    "usage: tftap mock RUN [ADDRESS|TYPE] [--provider P] [-o FILE [--force]] [--db PATH]\n\n"
    "Write mock_provider blocks for tofu test (and terraform test) from the values\n"
    "RUN (an id, 'last', or a bundle or database file, FILE:RUN) recorded: one per\n"
    "provider, named by its type, with a\n"
    "mock_resource or mock_data block per resource type and data source whose\n"
    "defaults are the real values: the new state of an apply, else a refresh, else\n"
    "the plan (data sources: the state read). Only what tofu test accepts is written:\n"
    "computed attributes the recorded configuration does not set, nested blocks as\n"
    "one object where every configuration has them; sensitive, unknown and\n"
    "write-only values never (comments say what was left out). With several\n"
    "instances of one type the first address in byte order gives the defaults and a\n"
    "comment names it. ADDRESS (test_thing.a, also matching its instances; module.m,\n"
    "module.m[0], module.m.test_thing.a) or TYPE keeps only those; --provider P (an\n"
    "address, hashicorp/random, or a type, random) only that provider's block (none is\n"
    "written for a provider nothing was kept of).\n"
    "-o FILE (--output FILE) writes FILE instead of stdout; a FILE that\n"
    "exists (the test file you add run blocks to) is left alone unless --force.\n";

struct mock_ctx {
    analysis_mocks *m;
    const char *filter;
    const char *provider; /* --provider: its address, or its last part */
    int provider_seen;
    /* call id -> provider address, for the calls of the run that carry values */
    struct idprov {
        int64_t id;
        char *provider;
    } * v;
    size_t n, cap;
};

/* --provider names an address ("registry.opentofu.org/hashicorp/random",
 * "hashicorp/random") or its type ("random"). */
static int provider_keeps(const char *want, const char *provider)
{
    if (!want)
        return 1;
    if (!provider)
        return 0;
    size_t n = strlen(provider), w = strlen(want);
    if (w > n)
        return 0;
    return strcmp(provider + n - w, want) == 0 && (w == n || provider[n - w - 1] == '/');
}

static int filter_keeps(const char *filter, const char *type, const char *address)
{
    return tftap_filter_keeps(filter, type, address);
}

static int each_call(void *ctx, const store_call_row *r)
{
    struct mock_ctx *x = ctx;
    if (!r->provider)
        return 0;
    x->provider_seen |= provider_keeps(x->provider, r->provider);
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        struct idprov *v = realloc(x->v, cap * sizeof *v);
        if (!v)
            return TFTAP_ENOMEM;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n].provider = strdup(r->provider);
    if (!x->v[x->n].provider)
        return TFTAP_ENOMEM;
    x->v[x->n++].id = r->id;
    return 0;
}

static int cmp_idprov(const void *a, const void *b)
{
    const struct idprov *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static const char *provider_of(const struct mock_ctx *x, int64_t id)
{
    struct idprov key = {id, NULL};
    const struct idprov *p = x->n ? bsearch(&key, x->v, x->n, sizeof *x->v, cmp_idprov) : NULL;
    return p ? p->provider : NULL;
}

static int each_change(void *ctx, const store_change_row *c)
{
    struct mock_ctx *x = ctx;
    if (!c->rpc || !c->type_name)
        return 0;
    int data = strcmp(c->rpc, "ReadDataSource") == 0;
    const char *value = strcmp(c->rpc, "PlanResourceChange") == 0 ? c->planned : c->new_state;
    analysis_mock_value v = {
        .provider = provider_of(x, c->call_id),
        .data = data,
        .type_name = c->type_name,
        .address = c->address,
        .rpc = c->rpc,
        .call_id = c->call_id,
        .block_schema = c->block_schema,
        .value = value,
        .config = c->config,
        /* Every configuration of a type counts (a default for an attribute
         * one instance sets is refused for all), whatever the filter, also
         * that of a failed call; a failed call's values never do. */
        .config_only = c->failed || !filter_keeps(x->filter, c->type_name, c->address) ||
                       !provider_keeps(x->provider, provider_of(x, c->call_id)),
    };
    return analysis_mocks_add(x->m, &v);
}

int cli_mock(int argc, char **argv)
{
    const char *db = NULL, *output = NULL, *provider = NULL, *pos[2];
    int force = 0, help = 0, npos = 0;
    const struct cli_opt opts[] = {{"--output", &output, NULL, 'o'},
                                   {"--force", NULL, &force, 0},
                                   {"--provider", &provider, NULL, 0},
                                   {0}};
    if (cli_store_args(argc, argv, opts, &db, NULL, &help, pos, 2, &npos) != 0)
        return 2;
    if (help) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (npos < 1) {
        cli_usage_error(argv[0], "mock needs RUN");
        return 2;
    }
    if (output && !*output) {
        cli_usage_error(argv[0], "-o needs a file name");
        return 2;
    }
    if (force && !output) {
        cli_usage_error(argv[0], "--force goes with -o FILE");
        return 2;
    }
    struct stat st;
    if (output && !force && lstat(output, &st) == 0) {
        cli_error("%s exists (--force replaces it)", output);
        return 1;
    }
    const char *path = NULL;
    const char *filter = npos > 1 ? pos[1] : NULL;
    char *owned = NULL;
    store *s = NULL;
    int64_t run = 0;
    int exit_code = cli_open_run(launch_db_path(db), pos[0], &s, &path, &run, &owned);
    if (exit_code)
        return exit_code;
    exit_code = cli_filter_check(&s, &path, &run, 1, CLI_FILTER_ADDRESS_OR_TYPE, filter);
    if (exit_code) {
        store_close(s);
        free(owned);
        return exit_code;
    }
    struct mock_ctx x = {.filter = filter, .provider = provider};
    tftap_buf out = TFTAP_BUF_INIT;
    size_t ntypes = 0;
    int rc = analysis_mocks_new(&x.m);
    static const char *const methods[] = {"PlanResourceChange", "ApplyResourceChange",
                                          "ReadResource", "ReadDataSource"};
    for (size_t i = 0; !rc && i < sizeof methods / sizeof methods[0]; i++) {
        store_calls_filter f = {methods[i], NULL, 0};
        rc = store_calls_query(s, run, &f, each_call, &x);
    }
    if (!rc && provider && !x.provider_seen) {
        /* A filter that matches nothing is a usage error. */
        tftap_buf names = TFTAP_BUF_INIT;
        for (size_t i = 0; i < x.n; i++)
            if (!strstr(tftap_buf_cstr(&names), x.v[i].provider))
                tftap_buf_printf(&names, "%s%s", names.len ? ", " : "", x.v[i].provider);
        cli_error("--provider '%s' names no provider of run %lld (%s%s)", provider, (long long)run,
                  names.len ? "its providers: " : "it has none", tftap_buf_cstr(&names));
        tftap_buf_done(&names);
        exit_code = 2;
        goto finish;
    }
    if (!rc) {
        if (x.n)
            qsort(x.v, x.n, sizeof *x.v, cmp_idprov);
        rc = store_changes_each(s, run, NULL, each_change, &x);
    }
    if (!rc)
        rc = analysis_mocks_render(x.m, run, &out, &ntypes);
    if (rc == TFTAP_ENOMEM) {
        cli_error("out of memory");
        exit_code = 1;
    } else if (rc == TFTAP_EDECODE) {
        cli_error("run %lld holds a value or schema whose JSON is malformed", (long long)run);
        exit_code = 1;
    } else if (rc) {
        cli_error("reading %s: %s", STORE_SHOWN(path), store_errmsg(s));
        exit_code = 1;
    } else if (ntypes == 0) {
        cli_error("run %lld recorded no resource or data source values%s%s to mock", (long long)run,
                  filter ? " for " : "", filter ? filter : "");
        exit_code = 1;
    } else if (output) {
        errno = 0;
        FILE *f = fopen(output, "w");
        int bad = !f || fwrite(out.data, 1, out.len, f) != out.len;
        if ((f && fclose(f) != 0) || bad) {
            cli_error("cannot write %s: %s", output, strerror(errno ? errno : EIO));
            exit_code = 1;
        }
    } else {
        exit_code = cli_flush(&out);
    }
finish:
    for (size_t i = 0; i < x.n; i++)
        free(x.v[i].provider);
    free(x.v);
    analysis_mocks_free(x.m);
    tftap_buf_done(&out);
    store_close(s);
    free(owned);
    return exit_code;
}
