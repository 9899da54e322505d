/* cli: the one option parser of every command (getopt_long) and its
 * one-line errors (worded as the run's own, launch_vmessage). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "launch/launch.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    launch_vmessage(fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    launch_vmessage(fmt, ap);
    va_end(ap);
    if (cmd)
        fprintf(stderr, " (see 'tftap %s --help')\n", cmd);
    else
        fputs(" (see 'tftap --help')\n", stderr);
}

/* The long option an argument names ("--db=x" -> "db"), its length, or 0
 * when the argument is not a long option. */
static size_t long_name(const char *arg, const char **name)
{
    if (strncmp(arg, "--", 2) != 0)
        return 0;
    *name = arg + 2;
    return strcspn(arg + 2, "=");
}

static const struct option *find_by_val(const struct option *longopts, int val)
{
    for (const struct option *o = longopts; o && o->name; o++)
        if (!o->flag && o->val == val)
            return o;
    return NULL;
}

/* How many long options an abbreviation could mean (0: none). */
static int candidates(const struct option *longopts, const char *name, size_t n)
{
    int k = 0;
    for (const struct option *o = longopts; o && o->name; o++) {
        if (strlen(o->name) == n && strncmp(o->name, name, n) == 0)
            return 1;
        k += strncmp(o->name, name, n) == 0;
    }
    return k;
}

/* The scheme a value starts with ("https" of "https://x"), its length, or
 * 0: letters, digits, '+', '-' and '.' after a letter, at least two of
 * them, then ':', before any '/'. */
static size_t uri_scheme(const char *v)
{
    size_t n = 0;
    if (!((v[0] >= 'a' && v[0] <= 'z') || (v[0] >= 'A' && v[0] <= 'Z')))
        return 0;
    while (v[n] && strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.",
                          v[n]) != NULL)
        n++;
    return n >= 2 && v[n] == ':' ? n : 0;
}

int cli_check_db_target(const char *cmd, const char *what, const char *value)
{
    struct stat st;
    if (value == NULL || *value == '\0') {
        cli_usage_error(cmd, "%s is empty: give a database file or a postgresql:// URI", what);
        return 2;
    }
    size_t n = uri_scheme(value);
    int pg = strncmp(value, "postgresql://", 13) == 0 || strncmp(value, "postgres://", 11) == 0;
    if (pg)
        return 0;
    if (n > 0 && stat(value, &st) != 0) {
        int pgish = (n == 10 && strncmp(value, "postgresql", 10) == 0) ||
                    (n == 8 && strncmp(value, "postgres", 8) == 0);
        if (pgish)
            cli_usage_error(cmd, "%s '%.*s...': a PostgreSQL URI starts '%.*s://'", what,
                            (int)(n + 1), value, (int)n, value);
        else
            cli_usage_error(cmd,
                            "%s '%.60s' is a URI of scheme '%.*s', which tftap does not "
                            "read: give a file path or a postgresql:// URI",
                            what, value, (int)n, value);
        return 2;
    }
    return 0;
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    /* Our own messages: ':' first (after '+') makes a missing value ':'. */
    char spec[32];
    int stop = shortopts[0] == '+';
    snprintf(spec, sizeof spec, "%s:%s", stop ? "+" : "", shortopts + stop);
    opterr = 0;
    int prev = optind ? optind : 1;
    int idx = -1;
    int c = getopt_long(argc, argv, spec, longopts, &idx);
    /* main's global options name no command. */
    const char *cmd = strcmp(argv[0], "tftap") == 0 ? NULL : argv[0];
    if (c != '?' && c != ':') {
        /* Where a record is: checked once here for every command. */
        const char *lname = idx >= 0 ? longopts[idx].name : NULL;
        if (lname && optarg && strcmp(lname, "db") == 0 &&
            cli_check_db_target(cmd, "--db", optarg) != 0)
            return '?';
        if (lname && optarg && strcmp(lname, "to") == 0 &&
            cli_check_db_target(cmd, "--to", optarg) != 0)
            return '?';
        return c;
    }
    /* The argument at fault: getopt has stepped past it. */
    const char *arg = optind - 1 >= prev && optind - 1 < argc ? argv[optind - 1] : argv[prev];
    const char *name = NULL;
    size_t n = arg ? long_name(arg, &name) : 0;
    if (c == ':') {
        const struct option *o = find_by_val(longopts, optopt);
        if (n)
            cli_usage_error(cmd, "option '--%.*s' needs a value", (int)n, name);
        else if (o && optopt > 255)
            cli_usage_error(cmd, "option '--%s' needs a value", o->name);
        else
            cli_usage_error(cmd, "option '-%c' needs a value", optopt);
    } else if (n) {
        int k = candidates(longopts, name, n);
        if (k == 1 && name[n] == '=')
            cli_usage_error(cmd, "option '--%.*s' takes no value", (int)n, name);
        else if (k > 1)
            cli_usage_error(cmd, "ambiguous option '--%.*s'", (int)n, name);
        else
            cli_usage_error(cmd, "unknown option '--%.*s'", (int)n, name);
    } else if (optopt > 0 && optopt < 256) {
        cli_usage_error(cmd, "unknown option '-%c'", optopt);
    } else {
        cli_usage_error(cmd, "unknown option '%s'", arg ? arg : "?");
    }
    return '?';
}
