/* cli: a filter that matches nothing in a run is a usage error, which names
 * the nearest name the run has (a typo's fix), never an empty success. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/filter.h"

/* Names longer than this are compared by their first bytes only: the
 * distance costs their product. */
#define NAME_CMP_MAX 128

struct near {
    enum cli_filter_kind kind;
    const char *filter;
    int matched;
    cli_nearest n;
};

/* Levenshtein distance, case-insensitive, over at most NAME_CMP_MAX bytes
 * of each. */
static size_t distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > NAME_CMP_MAX)
        n = NAME_CMP_MAX;
    if (m > NAME_CMP_MAX)
        m = NAME_CMP_MAX;
    size_t row[NAME_CMP_MAX + 1];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
            size_t best = diag + (same ? 0 : 1);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

int cli_nearest_offer(cli_nearest *n, const char *name)
{
    if (!name || !*name)
        return 0;
    size_t d = distance(n->filter, name);
    if (n->best && (d > n->dist || (d == n->dist && strcmp(name, n->best) >= 0)))
        return 0;
    char *c = strdup(name);
    if (!c)
        return TFTAP_ENOMEM;
    free(n->best);
    n->best = c;
    n->dist = d;
    return 0;
}

void cli_nearest_done(cli_nearest *n)
{
    free(n->best);
    n->best = NULL;
}

static int consider(struct near *x, const char *name)
{
    return cli_nearest_offer(&x->n, name);
}

static int each_name(void *ctx, const char *rpc, const char *type_name, const char *address)
{
    struct near *x = ctx;
    if (x->matched)
        return 0;
    switch (x->kind) {
    case CLI_FILTER_METHOD: {
        /* A method by name or full path, in any case. */
        const char *f = x->filter, *slash = strrchr(f, '/');
        if (rpc && strcasecmp(slash ? slash + 1 : f, rpc) == 0) {
            x->matched = 1;
            return 0;
        }
        return consider(x, rpc);
    }
    case CLI_FILTER_TYPE:
        if (type_name && strcmp(type_name, x->filter) == 0) {
            x->matched = 1;
            return 0;
        }
        return consider(x, type_name);
    case CLI_FILTER_ADDRESS_OR_TYPE:
        if (tftap_filter_keeps(x->filter, type_name, address)) {
            x->matched = 1;
            return 0;
        }
        int rc = consider(x, type_name);
        return rc ? rc : consider(x, address);
    }
    return 0;
}

int cli_filter_check(store *const *s, const char *const *paths, const int64_t *runs, size_t nruns,
                     enum cli_filter_kind kind, const char *filter)
{
    if (!filter)
        return 0;
    struct near x = {kind, filter, 0, {filter, NULL, 0}};
    for (size_t i = 0; i < nruns && !x.matched; i++) {
        int rc = store_run_names_each(s[i], runs[i], each_name, &x);
        if (rc) {
            free(x.n.best);
            if (rc == TFTAP_ENOMEM)
                cli_error("out of memory");
            else
                cli_error("reading %s: %s", STORE_SHOWN(paths[i]), store_errmsg(s[i]));
            return 1;
        }
    }
    if (x.matched) {
        free(x.n.best);
        return 0;
    }
    static const char *const what[] = {"no call of", "no resource type or address in",
                                       "no resource type in"};
    const char *words = kind == CLI_FILTER_METHOD ? what[0]
                        : kind == CLI_FILTER_TYPE ? what[2]
                                                  : what[1];
    char runs_text[64];
    if (nruns == 2)
        snprintf(runs_text, sizeof runs_text, "runs %lld and %lld", (long long)runs[0],
                 (long long)runs[1]);
    else
        snprintf(runs_text, sizeof runs_text, "run %lld", nruns ? (long long)runs[0] : 0LL);
    /* A filter is shown cut: it may be any size. */
    int len = (int)strlen(filter);
    const char *cut = len > 80 ? "..." : "";
    if (len > 80)
        len = 80;
    if (kind == CLI_FILTER_METHOD)
        cli_error("%s %s is '%.*s%s'%s%s%s", words, runs_text, len, filter, cut,
                  x.n.best ? " (nearest: " : " (it has no calls)", x.n.best ? x.n.best : "",
                  x.n.best ? ")" : "");
    else
        cli_error("'%.*s%s' names %s %s%s%s%s", len, filter, cut, words, runs_text,
                  x.n.best ? " (nearest: " : "", x.n.best ? x.n.best : "", x.n.best ? ")" : "");
    free(x.n.best);
    return 2;
}
