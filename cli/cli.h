/* cli: the tftap command's subcommands. Each returns the process exit code:
 * 0 success, 1 failure (after printing one "tftap: ..." line), 2 usage. */
#ifndef TFTAP_CLI_H
#define TFTAP_CLI_H

int cli_decode(int argc, char **argv);
int cli_shim(int argc, char **argv);

/* Wrapping providers (cli/run.c, cli/wrap.c). */
int cli_run(int argc, char **argv);
int cli_wrap(int argc, char **argv);

/* Reading the database (cli/runs.c, calls.c, show.c, export.c). */
int cli_runs(int argc, char **argv);
int cli_calls(int argc, char **argv);
int cli_show(int argc, char **argv);
int cli_export(int argc, char **argv);

/* Comparing (cli/diff.c, cli/schema.c): exit 0 same, 1 differs, 2 error. */
int cli_diff(int argc, char **argv);
int cli_schema(int argc, char **argv);

/* Print "tftap: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
