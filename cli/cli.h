/* cli: the tftap command's subcommands. Each returns the process exit code:
 * 0 success, 1 failure (after printing one "tftap: ..." line), 2 usage. */
#ifndef TFTAP_CLI_H
#define TFTAP_CLI_H

int cli_decode(int argc, char **argv);

/* Print "tftap: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
