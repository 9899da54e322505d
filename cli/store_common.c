/* cli: option parsing and helpers for the commands that read the database. */
#include "cli/cli_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

static int take_value(int argc, char **argv, int *i, const char *name, const char **out)
{
    const char *a = argv[*i];
    size_t nl = strlen(name);
    if (a[nl] == '=') {
        *out = a + nl + 1;
        return 0;
    }
    if (*i + 1 >= argc) {
        cli_error("%s needs a value (see 'tftap %s --help')", name, argv[0]);
        return 2;
    }
    *out = argv[++*i];
    return 0;
}

static int opt_is(const char *arg, const char *name)
{
    size_t nl = strlen(name);
    return strncmp(arg, name, nl) == 0 && (arg[nl] == '\0' || arg[nl] == '=');
}

int cli_store_args(int argc, char **argv, const struct cli_opt *opts, const char **db, int *json,
                   int *help, const char **pos, int max_pos, int *npos)
{
    *npos = 0;
    *help = 0;
    int only_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || strcmp(a, "-") == 0) {
            if (*npos >= max_pos) {
                cli_error("unexpected argument '%s' (see 'tftap %s --help')", a, argv[0]);
                return 2;
            }
            pos[(*npos)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = 1;
        } else if (strcmp(a, "--json") == 0) {
            *json = 1;
        } else if (opt_is(a, "--db")) {
            if (take_value(argc, argv, &i, "--db", db))
                return 2;
        } else {
            const struct cli_opt *o = opts;
            for (; o && o->name; o++)
                if (o->value ? opt_is(a, o->name) : strcmp(a, o->name) == 0)
                    break;
            if (!o || !o->name) {
                cli_error("unknown option '%s' (see 'tftap %s --help')", a, argv[0]);
                return 2;
            }
            if (o->value) {
                if (take_value(argc, argv, &i, o->name, o->value))
                    return 2;
            } else {
                *o->flag = 1;
            }
        }
    }
    return 0;
}

const char *cli_db_path(const char *opt)
{
    if (opt && *opt)
        return opt;
    const char *env = getenv("TFTAP_DB");
    if (env && *env)
        return env;
    return STORE_DEFAULT_PATH;
}

int cli_open_store(const char *path, store **out)
{
    errno = 0;
    int rc = store_open(path, 0, out);
    if (rc == 0)
        return 0;
    if (rc == TFTAP_ENOTFOUND)
        cli_error("no database at %s (record one with 'tftap run', or pass --db)", path);
    else if (rc == TFTAP_EIO)
        cli_error("cannot open %s: %s", path, strerror(errno ? errno : EIO));
    else if (rc == TFTAP_ESTORE)
        cli_error("cannot read %s: not a tftap database, or one from a newer tftap", path);
    else
        cli_error("cannot open %s: %s", path, tftap_strerror(rc));
    return 1;
}

int cli_resolve_run(store *s, const char *path, const char *spec, int64_t *run_id)
{
    int rc = store_resolve_run(s, spec, run_id);
    if (rc == 0)
        return 0;
    if (rc == TFTAP_EINVAL) {
        cli_error("RUN must be a run id or 'last', not '%s'", spec);
        return 2;
    }
    if (rc == TFTAP_ENOTFOUND) {
        if (strcmp(spec, "last") == 0)
            cli_error("no runs recorded in %s", path);
        else
            cli_error("no run %s in %s (see 'tftap runs')", spec, path);
        return 1;
    }
    cli_error("reading %s: %s", path, store_errmsg(s));
    return 1;
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
