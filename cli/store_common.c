/* cli: option parsing and helpers for the commands that read the database. */
#include "cli/cli_store.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "launch/launch.h"

int cli_store_args(int argc, char **argv, const struct cli_opt *opts, const char **db, int *json,
                   int *help, const char **pos, int max_pos, int *npos)
{
    enum { OPT_DB = 256, OPT_JSON, OPT_OWN };
    struct option longopts[16] = {
        {"db", required_argument, NULL, OPT_DB},
        {"help", no_argument, NULL, 'h'},
        {"json", no_argument, NULL, OPT_JSON},
    };
    size_t n = json ? 3 : 2; /* no --json for a command that prints none */
    for (const struct cli_opt *o = opts; o && o->name; o++) {
        if (n + 1 >= sizeof longopts / sizeof longopts[0])
            return 2; /* a programming error: more options than room */
        longopts[n] = (struct option){o->name + 2, o->value ? required_argument : no_argument, NULL,
                                      OPT_OWN + (int)(o - opts)};
        n++;
    }
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    /* "h" and the options' short names ("o:" for -o FILE). */
    char shortopts[2 * 16 + 2] = "h";
    size_t ns = 1;
    for (const struct cli_opt *o = opts; o && o->name; o++)
        if (o->shortopt) {
            shortopts[ns++] = o->shortopt;
            if (o->value)
                shortopts[ns++] = ':';
        }
    shortopts[ns] = '\0';
    *npos = 0;
    *help = 0;
    optind = 0;
    int c;
    while ((c = cli_getopt(argc, argv, shortopts, longopts)) != -1) {
        if (c == '?')
            return 2;
        if (c == 'h') {
            *help = 1;
            continue;
        }
        if (c == OPT_JSON) {
            *json = 1;
            continue;
        }
        if (c == OPT_DB) {
            *db = optarg;
            continue;
        }
        const struct cli_opt *o = c >= OPT_OWN ? &opts[c - OPT_OWN] : NULL;
        for (const struct cli_opt *p = opts; !o && p && p->name; p++)
            if (p->shortopt == c)
                o = p;
        if (o == NULL)
            return 2;
        if (o->value)
            *o->value = optarg;
        else
            *o->flag = 1;
    }
    for (int i = optind; i < argc; i++) {
        if (*npos >= max_pos) {
            cli_usage_error(argv[0], "unexpected argument '%s'", argv[i]);
            return 2;
        }
        pos[(*npos)++] = argv[i];
    }
    return 0;
}

/* The server's message without its severity word ("ERROR:  permission
 * denied ..."): the line says what failed already. */
static const char *server_reason(void)
{
    const char *why = store_open_error();
    static const char *const levels[] = {"ERROR:", "FATAL:", "PANIC:"};
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (strncmp(why, levels[i], strlen(levels[i])) == 0) {
            why += strlen(levels[i]);
            while (*why == ' ')
                why++;
            break;
        }
    return why;
}

static int file_is_empty(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

void cli_store_open_failed(const char *path, int flags, int rc)
{
    const char *shown = STORE_SHOWN(path);
    if (store_path_is_url(path)) {
        /* A server, not a file: libpq's or the server's reason when there
         * is one, and no advice about files. */
        const char *why = server_reason();
        if (rc == TFTAP_ENOLIB) /* no server was asked: the URI is not the trouble */
            cli_error("%s", why);
        else if (rc == TFTAP_ENOTFOUND)
            cli_error("no tftap record in %s (record one with 'tftap run --db URI')", shown);
        else if (rc == TFTAP_EIO)
            cli_error("cannot connect to %s: %s", shown, *why ? why : tftap_strerror(rc));
        else if (*why)
            cli_error("cannot open %s: %s", shown, why);
        else if (rc == TFTAP_ESTORE && (flags & STORE_OPEN_READONLY))
            cli_error("cannot read %s: its tftap record is of another tftap version (an older "
                      "one is brought up to date by recording into it: 'tftap run --db URI' or "
                      "'tftap push --to URI')",
                      shown);
        else if (rc == TFTAP_ESTORE)
            cli_error("cannot read %s: its tftap record is from a newer tftap", shown);
        else
            cli_error("cannot open %s: %s", shown, tftap_strerror(rc));
        return;
    }
    struct stat st;
    if (rc == TFTAP_ENOTFOUND)
        cli_error("no database at %s (record one with 'tftap run', or pass --db)", shown);
    else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        cli_error("cannot read %s: a directory (--db names a database file, e.g. %s/tftap.db)",
                  shown, shown);
    else if (rc == TFTAP_EIO)
        cli_error("cannot open %s: %s", shown, strerror(errno ? errno : EIO));
    else if (rc == TFTAP_ESTORE && (flags & STORE_OPEN_READONLY) && file_is_empty(path))
        cli_error("cannot read %s: an empty file, not a tftap record", shown);
    else if (rc == TFTAP_ESTORE && (flags & STORE_OPEN_READONLY))
        cli_error("cannot read %s: not a tftap database or bundle, or one of another tftap "
                  "version",
                  shown);
    else if (rc == TFTAP_ESTORE)
        cli_error("cannot read %s: not a tftap database, or one from a newer tftap", shown);
    else
        cli_error("cannot open %s: %s", shown, tftap_strerror(rc));
}

static int open_store(const char *path, int flags, store **out)
{
    errno = 0;
    int rc = store_open(path, flags, out);
    if (rc == 0)
        return 0;
    cli_store_open_failed(path, flags, rc);
    return 1;
}

int cli_open_store(const char *path, store **out)
{
    /* Reading never writes: no migration, no WAL switch, no key, and a file
     * or server database that is not a tftap record is refused as it is. */
    return open_store(path, STORE_OPEN_READONLY, out);
}

int cli_resolve_run(store *s, const char *path, const char *spec, int64_t *run_id)
{
    int rc = store_resolve_run(s, spec, run_id);
    if (rc == 0)
        return 0;
    if (rc == TFTAP_EINVAL) {
        cli_error("RUN must be a run id, 'last', or a bundle or database file (FILE or "
                  "FILE:RUN), not '%s'",
                  spec);
        return 2;
    }
    if (rc == TFTAP_ENOTFOUND) {
        if (strcmp(spec, "last") == 0)
            cli_error("no runs recorded in %s", STORE_SHOWN(path));
        else
            cli_error("no run %s in %s (see 'tftap runs')", spec, STORE_SHOWN(path));
        return 1;
    }
    cli_error("reading %s: %s", STORE_SHOWN(path), store_errmsg(s));
    return 1;
}

int cli_is_run_spec(const char *s)
{
    if (strcmp(s, "last") == 0)
        return 1;
    if (!*s)
        return 0;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

int cli_bundle_intact(store *s, const char *file)
{
    if (store_path_is_url(file) || store_file_is_bundle(file) != 1)
        return 0;
    char bad[65];
    int rc = store_schemas_verify(s, bad);
    if (rc == 0)
        return 0;
    if (rc == TFTAP_EDECODE)
        cli_error("%s: the schema %.16s... does not match its digest: the bundle is damaged", file,
                  bad);
    else
        cli_error("reading %s: %s", file, store_errmsg(s));
    return 1;
}

int cli_open_run(const char *db_path, const char *operand, store **s, const char **path,
                 int64_t *run, char **owned)
{
    const char *file = db_path, *spec = operand;
    *s = NULL;
    *owned = NULL;
    if (!cli_is_run_spec(operand)) {
        const char *colon = strrchr(operand, ':');
        if (is_file(operand)) {
            file = operand;
            spec = "last";
        } else if (colon && colon != operand && cli_is_run_spec(colon + 1)) {
            *owned = strndup(operand, (size_t)(colon - operand));
            if (!*owned) {
                cli_error("out of memory");
                return 1;
            }
            if (!is_file(*owned)) {
                cli_error("no file %s (RUN is a run id, 'last', or a bundle or database file, "
                          "optionally FILE:RUN)",
                          *owned);
                free(*owned);
                *owned = NULL;
                return 2;
            }
            file = *owned;
            spec = colon + 1;
        } else {
            cli_error("RUN must be a run id, 'last', or a bundle or database file (FILE or "
                      "FILE:RUN), not '%s'",
                      operand);
            return 2;
        }
    }
    *path = file;
    /* Read as it is, never migrated: it may be someone else's bundle, or
     * no database at all. */
    if (open_store(file, STORE_OPEN_READONLY, s))
        goto fail;
    int rc = cli_bundle_intact(*s, file);
    if (rc == 0)
        rc = cli_resolve_run(*s, file, spec, run);
    if (rc == 0)
        return 0;
    store_close(*s);
    *s = NULL;
    free(*owned);
    *owned = NULL;
    return rc;
fail:
    free(*owned);
    *owned = NULL;
    return 1;
}

int cli_read_parse(int argc, char **argv, const struct cli_opt *opts, const char *usage,
                   int takes_run, int max_pos, struct cli_read *r)
{
    const char *db = NULL;
    int help = 0;
    memset(r, 0, sizeof *r);
    if (max_pos > (int)(sizeof r->pos / sizeof r->pos[0]))
        max_pos = (int)(sizeof r->pos / sizeof r->pos[0]);
    int rc = cli_store_args(argc, argv, opts, &db, &r->json, &help, r->pos, max_pos, &r->npos);
    if (rc)
        return rc;
    if (help) {
        fputs(usage, stdout);
        return 0;
    }
    if (takes_run && r->npos < 1) {
        cli_usage_error(argv[0], "%s needs RUN (a run id or 'last')", argv[0]);
        return 2;
    }
    r->path = launch_db_path(db);
    r->takes_run = takes_run;
    return CLI_READ_GO;
}

int cli_read_open(struct cli_read *r)
{
    if (r->takes_run) {
        int rc = cli_open_run(r->path, r->pos[0], &r->s, &r->path, &r->run, &r->owned_path);
        return rc ? rc : CLI_READ_GO;
    }
    if (cli_open_store(r->path, &r->s))
        return 1;
    return CLI_READ_GO;
}

int cli_read_begin(int argc, char **argv, const struct cli_opt *opts, const char *usage,
                   int takes_run, int max_pos, struct cli_read *r)
{
    int rc = cli_read_parse(argc, argv, opts, usage, takes_run, max_pos, r);
    return rc == CLI_READ_GO ? cli_read_open(r) : rc;
}

void cli_read_done(struct cli_read *r)
{
    store_close(r->s);
    r->s = NULL;
    free(r->owned_path);
    r->owned_path = NULL;
}

int cli_use_color(void)
{
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc)
        return 0;
    const char *term = getenv("TERM");
    if (term && strcmp(term, "dumb") == 0)
        return 0;
    return isatty(STDOUT_FILENO);
}

void cli_format_time(int64_t us, char out[32])
{
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    if (us <= 0 || !localtime_r(&t, &tm) || strftime(out, 32, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf(out, 32, "-");
}

void cli_format_duration(int64_t start_us, int64_t end_us, char out[32])
{
    if (end_us <= 0 || start_us <= 0 || end_us < start_us) {
        snprintf(out, 32, "-");
        return;
    }
    int64_t d = end_us - start_us;
    if (d < 1000)
        snprintf(out, 32, "%lldus", (long long)d);
    else if (d < 1000000)
        snprintf(out, 32, "%.1fms", (double)d / 1000.0);
    else
        snprintf(out, 32, "%.2fs", (double)d / 1e6);
}

int cli_parse_duration(const char *text, int64_t *us)
{
    static const struct {
        char unit;
        int64_t us;
    } units[] = {{'s', 1000000LL},
                 {'m', 60000000LL},
                 {'h', 3600000000LL},
                 {'d', 86400000000LL},
                 {'w', 604800000000LL}};
    int64_t total = 0;
    const char *p = text;
    if (!p || !*p)
        return -1;
    while (*p) {
        int64_t n = 0;
        const char *start = p;
        while (*p >= '0' && *p <= '9') {
            if (n > (INT64_MAX / 10 - 9) / 604800000000LL)
                return -1; /* past any record's age */
            n = n * 10 + (*p++ - '0');
        }
        if (p == start)
            return -1;
        size_t i = 0;
        while (i < sizeof units / sizeof *units && units[i].unit != *p)
            i++;
        if (i == sizeof units / sizeof *units)
            return -1;
        p++;
        total += n * units[i].us;
        if (total < 0)
            return -1;
    }
    if (total <= 0)
        return -1;
    *us = total;
    return 0;
}

int cli_parse_when(const char *text, int64_t now_us, int64_t *us)
{
    int64_t d;
    if (cli_parse_duration(text, &d) == 0) {
        *us = now_us - d;
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = text ? strptime(text, "%Y-%m-%d", &tm) : NULL;
    if (end && (*end == 'T' || *end == ' ') && end[1]) {
        const char *t = strptime(end + 1, "%H:%M:%S", &tm);
        end = t ? t : strptime(end + 1, "%H:%M", &tm);
    }
    if (!end || *end)
        return -1;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    if (t == (time_t)-1)
        return -1;
    *us = (int64_t)t * 1000000;
    return 0;
}

void cli_args_text(tftap_buf *b, const char *args_json)
{
    sj_doc *doc = NULL;
    if (!args_json || sj_parse(args_json, strlen(args_json), 0, &doc) != 0)
        return;
    const sj_node *a = sj_root(doc);
    for (const sj_node *e = a->kind == SJ_ARRAY ? a->child : NULL; e; e = e->next) {
        if (e->kind != SJ_STRING)
            continue;
        const char *w = e->str;
        int plain = *w != '\0';
        for (const char *p = w; *p && plain; p++)
            plain = strchr("-_./=:,+@%", *p) || (*p >= 'a' && *p <= 'z') ||
                    (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        tftap_buf_putc(b, ' ');
        if (plain) {
            tftap_buf_puts(b, w);
        } else {
            tftap_buf_putc(b, '\'');
            for (const char *p = w; *p; p++) {
                if (*p == '\'')
                    tftap_buf_puts(b, "'\\''");
                else
                    tftap_buf_putc(b, *p);
            }
            tftap_buf_putc(b, '\'');
        }
    }
    sj_free(doc);
}

void cli_json_raw(tftap_buf *b, const char *json)
{
    tftap_buf_puts(b, json && *json ? json : "null");
}

void cli_json_str(tftap_buf *b, const char *s)
{
    if (s)
        tftap_buf_json_string(b, s, strlen(s));
    else
        tftap_buf_puts(b, "null");
}

int cli_flush(tftap_buf *b)
{
    if (tftap_buf_failed(b)) {
        cli_error("out of memory");
        return 1;
    }
    if (b->len && fwrite(b->data, 1, b->len, stdout) != b->len) {
        cli_error("writing output: %s", strerror(errno));
        return 1;
    }
    tftap_buf_reset(b);
    return 0;
}

int cli_test_matches(const char *pattern, const char *test)
{
    return pattern == NULL || (test != NULL && fnmatch(pattern, test, 0) == 0);
}

struct suite_steps {
    int64_t *ids;
    size_t n, cap;
    const char *test;
};

static int collect_step(void *ctx, const store_run_row *row)
{
    struct suite_steps *c = ctx;
    if (!cli_test_matches(c->test, row->test_name))
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        int64_t *v = realloc(c->ids, cap * sizeof *v);
        if (v == NULL)
            return TFTAP_ENOMEM;
        c->ids = v;
        c->cap = cap;
    }
    c->ids[c->n++] = row->id;
    return 0;
}

int cli_suite_steps(const struct cli_read *r, const char *cmd, const char *pattern, int64_t **ids,
                    size_t *n)
{
    struct suite_steps c = {NULL, 0, 0, pattern};
    int rc = store_run_children_each(r->s, r->run, collect_step, &c);
    int exit_code = 0;
    if (rc) {
        cli_error("reading %s: %s", r->path,
                  rc == TFTAP_ENOMEM ? "out of memory" : store_errmsg(r->s));
        exit_code = 1;
    } else if (c.n == 0) {
        cli_usage_error(cmd, "run %lld has no step run of a test matching '%s'", (long long)r->run,
                        pattern);
        exit_code = 2;
    }
    if (exit_code != 0) {
        free(c.ids);
        c.ids = NULL;
        c.n = 0;
    }
    *ids = c.ids;
    *n = c.n;
    return exit_code;
}
