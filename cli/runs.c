/* tftap runs: the recorded runs, newest last. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "cli/cli_store.h"
#include "cli/filter.h"
#include "cli/verdict.h"
#include "launch/launch.h"

static const char usage_text[] =
    "usage: tftap runs [--limit N] [--cwd DIR] [--command WORD] [--provider NAME]\n"
    "                  [--since WHEN] [--failed] [--test PATTERN] [--db PATH] [--json]\n\n"
    "List the recorded runs: id, verdict, start time, duration, exit code, provider\n"
    "processes, calls, the working directory and the command. VERDICT is ok, FAILED\n"
    "(why ends the line: a non-zero exit code, calls that failed, answers core rejects\n"
    "as 'tftap check' finds them, records lost), running, or '-' (no failure known and\n"
    "no exit code recorded, as under tftap wrap). RUN arguments of other commands take\n"
    "these ids or 'last'. --json also gives each run's uuid, which names it in every\n"
    "record it is pushed to (tftap push).\n"
    "A CLI command an acceptance test step ran ('tftap run -- go test ...', see\n"
    "docs/acceptance-tests.md) is a run of its own, named TEST / step N / COMMAND, under\n"
    "the run of the test command (--json: parent_id, test, step).\n\n"
    "  --limit N         only the newest N runs that match (still oldest first)\n"
    "  --cwd DIR         runs whose working directory is DIR or below it\n"
    "  --command WORD    runs of this CLI subcommand (plan, apply, destroy, ...: the\n"
    "                    first word of the command's arguments that is no option)\n"
    "  --provider NAME   runs that started this provider: its address\n"
    "                    (HOST/NAMESPACE/TYPE), or its end (hashicorp/random, random)\n"
    "  --since WHEN      runs started since WHEN: a duration ago (2h, 7d, 1h30m) or a\n"
    "                    local date and time (2026-11-28, 2026-11-28T14:00)\n"
    "  --failed          runs whose VERDICT is FAILED\n"
    "  --test PATTERN    only the step runs of the tests whose name matches PATTERN (a\n"
    "                    shell glob: '*' and '?'; without either it matches the name\n"
    "                    exactly)\n\n"
    "Filters combine (a run must match each). Exit 0; 2 when the filters match no\n"
    "run (with the nearest recorded name) or on a usage error; 1 on an error.\n";

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

struct runs_filter {
    char *cwd; /* absolute, without a trailing slash */
    const char *command, *provider;
    const char *test; /* --test PATTERN: step runs of the tests it matches */
    int64_t since_us;
    int failed;
    int any;
};

/* One listed run: its JSON object or its table cells. */
enum {
    COL_RUN,
    COL_VERDICT,
    COL_STARTED,
    COL_DURATION,
    COL_EXIT,
    COL_PROCS,
    COL_CALLS,
    COL_DIR,
    COL_COMMAND,
    NCOLS
};
struct line {
    char *cell[NCOLS]; /* the table's; json holds --json's */
    char *json;
};

struct runs_ctx {
    int json;
    store *s;
    const struct runs_filter *f;
    struct line *v;
    size_t n, cap;
    int64_t limit; /* keep the newest limit lines (0: all) */
    /* What matched each filter alone, and the nearest name each had. */
    int cwd_seen, command_seen, provider_seen, since_seen, failed_seen, test_seen;
    cli_nearest near_cwd, near_command, near_provider;
    const char *home;
};

static int dir_matches(const char *cwd, const char *dir)
{
    size_t n = strlen(dir);
    if (!cwd || strncmp(cwd, dir, n) != 0)
        return 0;
    return cwd[n] == '\0' || cwd[n] == '/' || (n == 1 && dir[0] == '/');
}

static int provider_matches(const char *addr, const char *name)
{
    size_t a = strlen(addr), n = strlen(name);
    if (strcasecmp(addr, name) == 0)
        return 1;
    return a > n && addr[a - n - 1] == '/' && strcasecmp(addr + a - n, name) == 0;
}

struct prov_scan {
    struct runs_ctx *c;
    int matched;
};

static int each_provider(void *ctx, const store_run_provider_row *p)
{
    struct prov_scan *ps = ctx;
    if (!p->provider)
        return 0;
    if (provider_matches(p->provider, ps->c->f->provider)) {
        ps->matched = 1;
        return 0;
    }
    /* The nearest by the part of the address the filter gave. */
    const char *name = p->provider, *f = ps->c->f->provider;
    size_t slashes = 0;
    for (const char *q = f; *q; q++)
        slashes += *q == '/';
    for (const char *q = p->provider + strlen(p->provider); q > p->provider; q--)
        if (q[-1] == '/' && slashes-- == 0) {
            name = q;
            break;
        }
    return cli_nearest_offer(&ps->c->near_provider, name);
}

static char *take(tftap_buf *b)
{
    tftap_buf_cstr(b);
    if (tftap_buf_failed(b)) {
        tftap_buf_done(b);
        return NULL;
    }
    return tftap_buf_take(b, NULL);
}

static void line_free(struct line *l)
{
    for (int i = 0; i < NCOLS; i++)
        free(l->cell[i]);
    free(l->json);
}

static char *cell_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *cell_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = NULL;
    if (vasprintf(&p, fmt, ap) < 0)
        p = NULL;
    va_end(ap);
    return p;
}

/* Whether r passes the filters other than --failed (which needs its
 * verdict), noting for each filter alone whether some run matched it. */
static int filters_keep(struct runs_ctx *c, const store_run_row *r, int *keep)
{
    const struct runs_filter *f = c->f;
    int ok = 1, rc = 0;
    if (f->test) {
        /* A step run: under its suite, or alone (bundled) with its name. */
        int step_run = r->parent_id > 0 || r->test_name != NULL;
        int m = step_run && cli_test_matches(f->test, r->test_name);
        c->test_seen |= m;
        ok &= m;
    }
    if (f->since_us) {
        int m = r->started_us >= f->since_us;
        c->since_seen |= m;
        ok &= m;
    }
    if (f->cwd) {
        int m = dir_matches(r->cwd, f->cwd);
        c->cwd_seen |= m;
        ok &= m;
        if (!m && (rc = cli_nearest_offer(&c->near_cwd, r->cwd)))
            return rc;
    }
    if (f->command) {
        /* The subcommand: the first argument that is no option (tofu
         * -chdir=x plan: plan). */
        char *w = analysis_args_subcommand(r->args_json);
        int m = w != NULL && strcmp(w, f->command) == 0;
        c->command_seen |= m;
        ok &= m;
        if (!m && w != NULL && w[0])
            rc = cli_nearest_offer(&c->near_command, w);
        free(w);
        if (rc)
            return rc;
    }
    if (f->provider) {
        struct prov_scan ps = {c, 0};
        if ((rc = store_run_providers_each(c->s, r->id, each_provider, &ps)))
            return rc;
        c->provider_seen |= ps.matched;
        ok &= ps.matched;
    }
    *keep = ok;
    return 0;
}

static int each_run(void *ctx, const store_run_row *r)
{
    struct runs_ctx *c = ctx;
    int keep = 1;
    int rc = filters_keep(c, r, &keep);
    if (rc)
        return rc;
    /* --failed needs the verdict, which the other filters may spare. */
    if (!keep && !c->f->failed)
        return 0;
    cli_verdict v;
    rc = cli_verdict_read(c->s, r->id, CLI_VERDICT_LAZY, &v);
    if (rc) {
        cli_verdict_done(&v);
        return rc;
    }
    if (c->f->failed) {
        int m = cli_verdict_failed(&v);
        c->failed_seen |= m;
        keep &= m;
    }
    if (!keep) {
        cli_verdict_done(&v);
        return 0;
    }
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 32;
        struct line *nv = realloc(c->v, nc * sizeof *nv);
        if (!nv) {
            cli_verdict_done(&v);
            return TFTAP_ENOMEM;
        }
        c->v = nv;
        c->cap = nc;
    }
    struct line *l = &c->v[c->n++];
    memset(l, 0, sizeof *l);
    tftap_buf bb = TFTAP_BUF_INIT, *b = &bb;
    if (c->json) {
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
        if (r->parent_id > 0 || r->test_name != NULL) {
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
        l->json = take(b);
    } else {
        char when[32], dur[32];
        cli_format_time(r->started_us, when);
        cli_format_duration(r->started_us, r->ended_us, dur);
        const char *verdict = cli_verdict_failed(&v) ? "FAILED"
                              : v.running            ? "running"
                              : v.has_exit           ? "ok"
                                                     : "-";
        l->cell[COL_RUN] = cell_printf("%lld", (long long)r->id);
        l->cell[COL_VERDICT] = strdup(verdict);
        l->cell[COL_STARTED] = strdup(when);
        l->cell[COL_DURATION] = strdup(dur);
        if (r->has_exit_code)
            l->cell[COL_EXIT] = cell_printf("%d", r->exit_code);
        else
            /* Ended without one: a tftap wrap run, whose CLI's exit no
             * tftap process sees (docs/running.md). */
            l->cell[COL_EXIT] = strdup(r->ended_us ? "unknown" : "running");
        l->cell[COL_PROCS] = cell_printf("%lld", (long long)r->processes);
        l->cell[COL_CALLS] = cell_printf("%lld", (long long)r->calls);
        /* The home directory as ~, as a shell prompt shows it. */
        size_t hl = c->home ? strlen(c->home) : 0;
        if (!r->cwd || !*r->cwd)
            l->cell[COL_DIR] = strdup("-");
        else if (hl > 1 && dir_matches(r->cwd, c->home))
            l->cell[COL_DIR] = cell_printf("~%s", r->cwd + hl);
        else
            l->cell[COL_DIR] = strdup(r->cwd);
        if (r->parent_id > 0 || r->test_name != NULL) {
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
        l->cell[COL_COMMAND] = take(b);
        for (int i = 0; i < NCOLS; i++)
            if (!l->cell[i]) {
                cli_verdict_done(&v);
                return TFTAP_ENOMEM;
            }
    }
    tftap_buf_done(b);
    cli_verdict_done(&v);
    if (c->json && !l->json)
        return TFTAP_ENOMEM;
    /* Only the newest limit are kept. */
    if (c->limit > 0 && (int64_t)c->n > c->limit) {
        line_free(&c->v[0]);
        memmove(c->v, c->v + 1, (c->n - 1) * sizeof *c->v);
        c->n--;
    }
    return 0;
}

/* The directory column at most this wide: longer ones lose their start. */
#define DIR_WIDTH_MAX 48

static void print_table(struct runs_ctx *c, tftap_buf *b)
{
    static const char *const head[NCOLS] = {"RUN",   "VERDICT", "STARTED",   "DURATION", "EXIT",
                                            "PROCS", "CALLS",   "DIRECTORY", "COMMAND"};
    /* The minimum widths of the columns as they always were. */
    size_t w[NCOLS] = {5, 7, 19, 9, 7, 5, 6, 0, 0};
    for (size_t i = 0; i < c->n; i++)
        for (int k = 0; k < COL_COMMAND; k++) {
            size_t n = strlen(c->v[i].cell[k]);
            if (n > w[k])
                w[k] = n;
        }
    if (w[COL_DIR] < strlen(head[COL_DIR]))
        w[COL_DIR] = strlen(head[COL_DIR]);
    if (w[COL_DIR] > DIR_WIDTH_MAX)
        w[COL_DIR] = DIR_WIDTH_MAX;
    for (size_t i = 0; i <= c->n; i++) {
        const char *const *cell = i == 0 ? head : (const char *const *)c->v[i - 1].cell;
        char dir[DIR_WIDTH_MAX + 1];
        size_t dl = strlen(cell[COL_DIR]);
        if (dl > DIR_WIDTH_MAX)
            snprintf(dir, sizeof dir, "...%s", cell[COL_DIR] + dl - (DIR_WIDTH_MAX - 3));
        else
            snprintf(dir, sizeof dir, "%s", cell[COL_DIR]);
        tftap_buf_printf(b, "%-*s %-*s %-*s %*s %*s %*s %*s  %-*s  %s\n", (int)w[0], cell[0],
                         (int)w[1], cell[1], (int)w[2], cell[2], (int)w[3], cell[3], (int)w[4],
                         cell[4], (int)w[5], cell[5], (int)w[6], cell[6], (int)w[COL_DIR], dir,
                         cell[COL_COMMAND]);
    }
}

/* The one line for filters that matched no run: each filter no run
 * matched even alone, with the nearest recorded name. */
static void nothing_matched(struct runs_ctx *c, const char *cmd, const char *path)
{
    const struct runs_filter *f = c->f;
    tftap_buf why = TFTAP_BUF_INIT;
    struct {
        int given, seen;
        const char *opt, *value;
        cli_nearest *near;
    } parts[] = {
        {f->cwd != NULL, c->cwd_seen, "--cwd", f->cwd, &c->near_cwd},
        {f->command != NULL, c->command_seen, "--command", f->command, &c->near_command},
        {f->provider != NULL, c->provider_seen, "--provider", f->provider, &c->near_provider},
        {f->since_us != 0, c->since_seen, "--since", NULL, NULL},
        {f->failed, c->failed_seen, "--failed", NULL, NULL},
        {f->test != NULL, c->test_seen, "--test", f->test, NULL},
    };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if (!parts[i].given || parts[i].seen)
            continue;
        tftap_buf_puts(&why, why.len ? "; " : "");
        if (parts[i].value)
            tftap_buf_printf(&why, "%s '%.80s%s'", parts[i].opt, parts[i].value,
                             strlen(parts[i].value) > 80 ? "..." : "");
        else
            tftap_buf_puts(&why, parts[i].opt);
        tftap_buf_puts(&why, " matches no run");
        if (parts[i].near && parts[i].near->best)
            tftap_buf_printf(&why, " (nearest: %.200s)", parts[i].near->best);
        else if (strcmp(parts[i].opt, "--since") == 0)
            tftap_buf_puts(&why, " (none started since)");
    }
    if (why.len)
        cli_usage_error(cmd, "%s in %s", tftap_buf_cstr(&why), STORE_SHOWN(path));
    else
        cli_usage_error(cmd, "no run of %s matches all of the filters together", STORE_SHOWN(path));
    tftap_buf_done(&why);
}

int cli_runs(int argc, char **argv)
{
    const char *limit_text = NULL, *cwd = NULL, *command = NULL, *provider = NULL, *since = NULL,
               *test = NULL;
    int failed = 0;
    const struct cli_opt opts[] = {
        {"--limit", &limit_text, NULL, 0}, {"--cwd", &cwd, NULL, 0},
        {"--command", &command, NULL, 0},  {"--provider", &provider, NULL, 0},
        {"--since", &since, NULL, 0},      {"--failed", NULL, &failed, 0},
        {"--test", &test, NULL, 0},        {0}};
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
            cli_usage_error(argv[0], "--limit must be a positive number, not '%.200s'", limit_text);
            return 2;
        }
    }
    struct runs_filter f = {NULL, command, provider, test, 0, failed, 0};
    if (since && cli_parse_when(since, tftap_now_us(), &f.since_us) != 0) {
        cli_usage_error(argv[0],
                        "--since takes a duration (2h, 7d) or a date (2026-11-28, "
                        "2026-11-28T14:00), not '%.200s'",
                        since);
        return 2;
    }
    if ((command && !*command) || (provider && !*provider) || (cwd && !*cwd)) {
        cli_usage_error(argv[0], "an empty filter matches nothing");
        return 2;
    }
    if (cwd) {
        /* The directory as runs record it: absolute, symbolic links
         * resolved (one that is gone is taken as written). */
        f.cwd = realpath(cwd, NULL);
        if (!f.cwd)
            f.cwd = launch_abspath(cwd);
        if (!f.cwd) {
            cli_error("out of memory");
            return 1;
        }
        size_t n = strlen(f.cwd);
        while (n > 1 && f.cwd[n - 1] == '/')
            f.cwd[--n] = '\0';
    }
    f.any = since || cwd || command || provider || failed || test;
    rc = cli_read_open(&r);
    if (rc != CLI_READ_GO) {
        free(f.cwd);
        return rc;
    }
    struct runs_ctx c = {.json = r.json, .s = r.s, .f = &f, .limit = limit};
    c.near_cwd.filter = f.cwd;
    c.near_command.filter = command;
    c.near_provider.filter = provider;
    c.home = getenv("HOME");
    /* Without filters only the newest are read; with them, every run. */
    rc = f.any ? store_runs_each(r.s, each_run, &c) : store_runs_last(r.s, limit, each_run, &c);
    int exit_code = 0;
    tftap_buf out = TFTAP_BUF_INIT;
    if (rc) {
        if (rc == TFTAP_ENOMEM)
            cli_error("out of memory");
        else
            cli_error("reading %s: %s", STORE_SHOWN(r.path), store_errmsg(r.s));
        exit_code = 1;
    } else if (c.n == 0 && f.any) {
        nothing_matched(&c, argv[0], r.path);
        exit_code = 2;
    } else if (r.json) {
        tftap_buf_puts(&out, c.n ? "[\n  " : "[]\n");
        for (size_t i = 0; i < c.n; i++) {
            tftap_buf_puts(&out, c.v[i].json);
            tftap_buf_puts(&out, i + 1 < c.n ? ",\n  " : "\n]\n");
        }
        exit_code = cli_flush(&out);
    } else if (c.n == 0) {
        fprintf(stderr, "no runs recorded in %s\n", STORE_SHOWN(r.path));
    } else {
        print_table(&c, &out);
        exit_code = cli_flush(&out);
    }
    tftap_buf_done(&out);
    for (size_t i = 0; i < c.n; i++)
        line_free(&c.v[i]);
    free(c.v);
    cli_nearest_done(&c.near_cwd);
    cli_nearest_done(&c.near_command);
    cli_nearest_done(&c.near_provider);
    free(f.cwd);
    cli_read_done(&r);
    return exit_code;
}
