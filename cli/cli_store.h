/* cli: helpers shared by the commands that read the database (runs, calls,
 * show, export). Private to cli/. */
#ifndef TFTAP_CLI_STORE_H
#define TFTAP_CLI_STORE_H

#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "store/store.h"

/* Options every reading command takes, plus its own. */
/* An acceptance test step run's name: "TEST / step N / SUBCOMMAND" (runs.c). */
void cli_step_name(const store_run_row *r, tftap_buf *out);
/* 1 when test matches --test's shell glob (pattern NULL: everything). */
int cli_test_matches(const char *pattern, const char *test);

struct cli_opt {
    const char *name;   /* "--method" */
    const char **value; /* NULL for a flag */
    int *flag;
    char shortopt; /* its one-letter form ('o' for -o), or 0 */
};

/* Parse argv[1..] (argv[0] is the command name) with cli_getopt: options
 * from opts and "--db PATH", "--json" (unless json is NULL), "--help"
 * (each also "--opt=value"); the rest are operands (at most max_pos,
 * stored in pos). Returns 0, or 2 after printing a one-line usage error.
 * *help is set when --help was given (caller prints usage, exits 0). */
int cli_store_args(int argc, char **argv, const struct cli_opt *opts, const char **db, int *json,
                   int *help, const char **pos, int max_pos, int *npos);

/* The one error line for store_open(path, flags) failing with rc (errno
 * and store_open_error() as it left them): a file's or a server's words. */
void cli_store_open_failed(const char *path, int flags, int rc);

/* Open an existing database; on failure print one error and return 1. */
int cli_open_store(const char *path, store **out);

/* Resolve RUN ("last" or an id); on failure print one error, return 1 or 2. */
int cli_resolve_run(store *s, const char *path, const char *spec, int64_t *run_id);

/* 1 when s is "last" or a decimal run id: a RUN, never a file. */
int cli_is_run_spec(const char *s);

/* A RUN operand, wherever a command takes one: "last" and decimal ids name
 * a run of the database at db_path; any other operand that names an
 * existing file is a SOURCE, a bundle or database whose last run it means;
 * FILE:RUN names a run of that file. Opens the store (*s, closed by the
 * caller), sets *path to the file read and *run; *owned (free()d by the
 * caller) holds the path when it had to be cut from FILE:RUN. Returns 0,
 * or 1 or 2 after printing one error. */
/* A bundle (file; anything else passes) is checked before it is believed:
 * every schema against its digest (its values were decoded with them, a
 * replay answers with them). 0, or 1 after one line naming the damage. */
int cli_bundle_intact(store *s, const char *file);

int cli_open_run(const char *db_path, const char *operand, store **s, const char **path,
                 int64_t *run, char **owned);

/* The preamble of every command that reads the database: options, the
 * store opened, RUN resolved. */
struct cli_read {
    const char *path; /* the database */
    store *s;
    int64_t run;        /* RUN, when the command takes one */
    int json;           /* --json */
    const char *pos[4]; /* operands; pos[0] is RUN when the command takes one */
    int npos;
    int takes_run;
    char *owned_path; /* path when cut from FILE:RUN */
};
#define CLI_READ_GO (-1)
/* Parse argv (see cli_store_args; max_pos operands, the first RUN when
 * takes_run), print usage on --help, open the database and resolve RUN.
 * Returns CLI_READ_GO when the command goes on (then cli_read_done),
 * otherwise the exit code: 0 after --help, 1 or 2 after one error line. */
int cli_read_begin(int argc, char **argv, const struct cli_opt *opts, const char *usage,
                   int takes_run, int max_pos, struct cli_read *r);
void cli_read_done(struct cli_read *r);
/* cli_read_begin in two steps, for commands that check their options'
 * values between: parse (no database touched yet), then open. */
int cli_read_parse(int argc, char **argv, const struct cli_opt *opts, const char *usage,
                   int takes_run, int max_pos, struct cli_read *r);
int cli_read_open(struct cli_read *r);

/* RUN of r an acceptance test suite (the run of `tftap run -- go test`):
 * its step runs whose test matches pattern (--test, cli_test_matches), in
 * order, into *ids (heap, free()) and *n. 0; 2 after one usage line (of
 * cmd) when none matches; 1 after one error line when the record cannot
 * be read (then *ids is NULL). */
int cli_suite_steps(const struct cli_read *r, const char *cmd, const char *pattern, int64_t **ids,
                    size_t *n);

/* 1 when stdout is a terminal and NO_COLOR is unset or empty. */
int cli_use_color(void);

/* "2024-05-01 12:00:03" in local time. */
void cli_format_time(int64_t us, char out[32]);
/* "1.234s", "12ms", "-" for missing. */
void cli_format_duration(int64_t start_us, int64_t end_us, char out[32]);

/* A duration: a positive number and its unit, s, m, h, d or w, or several
 * ("1h30m"), into microseconds. 0, or -1 when text is none. */
int cli_parse_duration(const char *text, int64_t *us);
/* A point in time: a duration ago (as above: "2h" is two hours before
 * now_us), or a local date and time, YYYY-MM-DD[(T| )HH:MM[:SS]], into
 * microseconds since the epoch. 0, or -1 when text is neither. */
int cli_parse_when(const char *text, int64_t now_us, int64_t *us);

/* A run's args column (a JSON array of strings) appended as a shell would
 * take the words, each after a space, quoting only those that need it. */
void cli_args_text(tftap_buf *b, const char *args_json);

/* Write a JSON text value, or null when NULL. */
void cli_json_raw(tftap_buf *b, const char *json);
void cli_json_str(tftap_buf *b, const char *s); /* NULL -> null */

/* fwrite the buffer to stdout; 1 (after printing an error) on failure. */
int cli_flush(tftap_buf *b);

#endif
