/* tftap: entry point; dispatches to the subcommands in cli/. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

/* Keep one line per subcommand; each file in cli/ adds its own. */
static const struct command commands[] = {
    {"decode", cli_decode, "decode one DynamicValue payload to JSON"},
    {"run", cli_run, "run a tofu/terraform command with every provider recorded"},
    {"wrap", cli_wrap, "write provider shims and a CLI config for manual or CI use"},
    {"shim", cli_shim, "run as a provider plugin: relay and record (used by shims)"},
    {"runs", cli_runs, "list recorded runs"},
    {"calls", cli_calls, "list the provider calls of a run"},
    {"show", cli_show, "show a run's resource changes the way a plan reads"},
    {"export", cli_export, "export a run as JSON lines"},
    {"diff", cli_diff, "what providers did differently between two runs (exit 1: differs)"},
    {"schema", cli_schema, "print a provider's schema, or diff two (schema diff A B)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tftap COMMAND [ARGS...]\n\n"
               "Records and explains what OpenTofu/Terraform say to provider plugins.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'tftap COMMAND --help' for a command's options.\n");
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("tftap: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("tftap %s\n", PACKAGE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    cli_error("unknown command '%s' (see 'tftap --help')", argv[1]);
    return 2;
}
