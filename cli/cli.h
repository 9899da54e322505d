/* cli: the tftap command's subcommands. Each returns the process exit code:
 * 0 success, 1 failure (after printing one "tftap: ..." line), 2 usage. */
#ifndef TFTAP_CLI_H
#define TFTAP_CLI_H

#include <stdint.h>
#include <getopt.h>

#include "analysis/analysis.h"
#include "store/store.h"

int cli_decode(int argc, char **argv);
int cli_shim(int argc, char **argv);

/* Wrapping providers (cli/run_opts.c, cli/wrap_opts.c; the work is launch/'s). */
int cli_run(int argc, char **argv);
int cli_wrap(int argc, char **argv);
/* A recorded run answering for its providers (cli/replay.c). */
int cli_replay(int argc, char **argv);

/* Reading the database (cli/runs.c, calls.c, show.c, export.c). */
int cli_runs(int argc, char **argv);
int cli_calls(int argc, char **argv);
int cli_show(int argc, char **argv);
int cli_export(int argc, char **argv);

/* Judging recorded runs (cli/check.c): exit 0 fine, 1 found, 2 error. */
int cli_check(int argc, char **argv);
/* Comparing (cli/diff.c, cli/schema.c): exit 0 same, 1 differs, 2 error. */
int cli_diff(int argc, char **argv);
int cli_schema(int argc, char **argv);
/* Their --format: text, json or markdown into *fmt; 0, or 2 after one
 * usage line of cmd. */
int cli_diff_format(const char *cmd, const char *format, enum analysis_diff_format *fmt);
/* Mocks for tofu test from recorded values (cli/mock.c). */
int cli_mock(int argc, char **argv);
/* The web UI (cli/serve.c). */
int cli_serve(int argc, char **argv);
/* One run to a self-contained, redacted file (cli/bundle.c). */
int cli_bundle(int argc, char **argv);
/* tftap push RUN|all --to URL (cli/push.c). */
int cli_push(int argc, char **argv);
/* tftap prune --older-than D | --keep N (cli/prune.c). */
int cli_prune(int argc, char **argv);
/* tftap match RUN --plan/--state/--before FILE (cli/match.c). */
int cli_match(int argc, char **argv);
/* tftap complete (hidden): words for the shell completion scripts. */
int cli_complete(int argc, char **argv);
/* tftap version, and tftap --version. */
int cli_version_cmd(int argc, char **argv);
/* A recorded provider served to tofu (cli/replay_provider.c; hidden). */
int cli_replay_provider(int argc, char **argv);

/* Print "tftap: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error as one line with where to look: "tftap: <message> (see
 * 'tftap CMD --help')" (cmd NULL: 'tftap --help'). Callers exit 2. */
void cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Where a record may be: a file path, or a postgresql:// (postgres://) URI.
 * A value that is empty or looks like
 * another URI ("postgresq://", "https://", "postgresql:/x") and names no
 * existing file is a usage error naming its scheme: 0, or 2 after one
 * usage line. what: the option or variable, as the message names it.
 * cli_getopt checks every --db and --to with it. */
int cli_check_db_target(const char *cmd, const char *what, const char *value);

/* getopt_long for every command (cli/options.c): "--opt value" and
 * "--opt=value", options and operands in any order unless shortopts starts
 * with '+' (then the first operand ends the options). argv[0] is the
 * command's name. Set optind = 0 before the first call. Returns the
 * option's val, -1 after the last, or '?' after printing one usage line
 * (unknown, ambiguous, missing or unexpected value). */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);

/* The recording options run, wrap and replay share: their getopt_long
 * entries (CLI_RECORDING_LONGOPTS; CLI_OTLP_LONGOPTS for run and wrap, which
 * export spans), the values they give (struct cli_recording) and reading
 * one (cli_recording_opt, run_opts.c). A command's own options take vals
 * from CLI_OPT_OWN on. */
enum {
    CLI_OPT_DB = 256,
    CLI_OPT_SENSITIVE,
    CLI_OPT_RAW,
    CLI_OPT_OTLP,
    CLI_OPT_OTLP_VALUES,
    CLI_OPT_OWN
};
#define CLI_RECORDING_LONGOPTS                                                                     \
    {"db", required_argument, NULL, CLI_OPT_DB},                                                   \
        {"record-sensitive", no_argument, NULL, CLI_OPT_SENSITIVE},                                \
    {                                                                                              \
        "keep-raw", no_argument, NULL, CLI_OPT_RAW                                                 \
    }
#define CLI_OTLP_LONGOPTS                                                                          \
    {"otlp", required_argument, NULL, CLI_OPT_OTLP},                                               \
    {                                                                                              \
        "otlp-values", no_argument, NULL, CLI_OPT_OTLP_VALUES                                      \
    }
struct cli_recording {
    const char *db; /* --db, or NULL */
    int record_sensitive, keep_raw;
    const char *otlp; /* --otlp URL, or NULL */
    int otlp_values;
};
/* opt as cli_getopt returned it, with its optarg arg: 1 when it is one of
 * the recording options (taken into r), 0 when it is not, -1 after one
 * usage line of cmd (--otlp without an http:// or https:// URL). */
int cli_recording_opt(const char *cmd, int opt, const char *arg, struct cli_recording *r);

/* The recording options run and wrap share, for their --help (its %s is
 * the default database). */
#define CLI_RECORDING_OPTIONS_HELP                                                                 \
    "  --db PATH            database (default: $TFTAP_DB, else ./%s)\n"                            \
    "  --record-sensitive   store sensitive values instead of redacting them\n"                    \
    "  --keep-raw           store raw message bytes too\n"                                         \
    "  --otlp URL           export each call as a span to this OTLP/HTTP traces\n"                 \
    "                       endpoint (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,\n"             \
    "                       else $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else none)\n"             \
    "  --otlp-values        spans also carry each call's request and response as\n"                \
    "                       stored, redacted (never a secret in clear, even with\n"                \
    "                       --record-sensitive), at most 16 KiB each\n"

#endif
