/* cli: helpers shared by the commands that read the database (runs, calls,
 * show, export). Private to cli/. */
#ifndef TFTAP_CLI_STORE_H
#define TFTAP_CLI_STORE_H

#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "store/store.h"

/* Options every reading command takes, plus its own. */
struct cli_opt {
    const char *name;   /* "--method" */
    const char **value; /* NULL for a flag */
    int *flag;
};

/* Parse argv[1..] (argv[0] is the command name): options from opts and
 * "--db PATH", "--json", "--help"; the rest are positionals (at most
 * max_pos, stored in pos). Returns 0, or 2 after printing a usage error.
 * *help is set when --help was given (caller prints usage, exits 0). */
int cli_store_args(int argc, char **argv, const struct cli_opt *opts, const char **db, int *json,
                   int *help, const char **pos, int max_pos, int *npos);

/* --db, else TFTAP_DB, else the default path. */
const char *cli_db_path(const char *opt);

/* Open an existing database; on failure print one error and return 1. */
int cli_open_store(const char *path, store **out);

/* Resolve RUN ("last" or an id); on failure print one error, return 1 or 2. */
int cli_resolve_run(store *s, const char *path, const char *spec, int64_t *run_id);

/* 1 when stdout is a terminal and NO_COLOR is unset or empty. */
int cli_use_color(void);

/* "2024-05-01 12:00:03" in local time. */
void cli_format_time(int64_t us, char out[32]);
/* "1.234s", "12ms", "-" for missing. */
void cli_format_duration(int64_t start_us, int64_t end_us, char out[32]);

/* Write a JSON text value, or null when NULL. */
void cli_json_raw(tftap_buf *b, const char *json);
void cli_json_str(tftap_buf *b, const char *s); /* NULL -> null */

/* fwrite the buffer to stdout; 1 (after printing an error) on failure. */
int cli_flush(tftap_buf *b);

#endif
