/* tftap: entry point; dispatches to the subcommands in cli/. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "store/store.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

/* Keep one line per subcommand; each file in cli/ adds its own. */
static const struct command commands[] = {
    {"decode", cli_decode, "decode one DynamicValue payload to JSON"},
    {"run", cli_run, "run a tofu/terraform command (or go test) with every provider recorded"},
    {"wrap", cli_wrap, "write provider shims and a CLI config for manual or CI use"},
    {"replay", cli_replay, "run a command with the providers answered from a recorded run"},
    {"shim", cli_shim, "run as a provider plugin: relay and record (used by shims)"},
    {"runs", cli_runs, "list recorded runs"},
    {"calls", cli_calls, "list the provider calls of a run"},
    {"show", cli_show, "show a run's resource changes the way a plan reads"},
    {"export", cli_export, "export a run as JSON lines"},
    {"check", cli_check, "check a run's provider answers against the plugin contract"},
    {"diff", cli_diff, "what providers did differently between two runs (exit 1: differs)"},
    {"schema", cli_schema, "print a provider's schema, or diff two (schema diff A B)"},
    {"mock", cli_mock, "write mock_provider blocks for tofu test from a run's real values"},
    {"serve", cli_serve, "browse the recorded runs in a web browser"},
    {"bundle", cli_bundle, "write one run to a redacted file for a bug report"},
    {"push", cli_push, "copy runs into a shared record (PostgreSQL), idempotently"},
    {"prune", cli_prune, "remove old runs (never one still recording) and reclaim space"},
    {"match", cli_match, "tie a run's calls to addresses from tofu's plan or state JSON"},
    {"version", cli_version_cmd, "print the version, the protocols and schema it speaks"},
    /* Hidden (no summary): what tofu starts as a replayed provider. */
    {"replay-provider", cli_replay_provider, NULL},
    /* Hidden: what the shell completion scripts ask (run ids, addresses). */
    {"complete", cli_complete, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tftap [--db PATH] COMMAND [ARGS...]\n\n"
               "Records and explains what OpenTofu/Terraform say to provider plugins.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].summary != NULL)
            fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n--db PATH before the command is the same as after it (the database: a\n"
            "file, or a postgresql:// URI; default $TFTAP_DB, else ./%s).\n"
            "Run 'tftap COMMAND --help' for a command's options.\n\n"
            "Exit status: 0 success; 1 an error, told in one line on stderr starting\n"
            "'tftap: '; 2 a usage error. check, diff and schema diff exit 1 when they found\n"
            "something.\n",
            STORE_DEFAULT_PATH);
}

/* Commands that never open the database: a global --db is a mistake there. */
static int takes_db(const char *name)
{
    return strcmp(name, "decode") != 0 && strcmp(name, "shim") != 0 && strcmp(name, "version") != 0;
}

int main(int argc, char **argv)
{
    enum { OPT_DB = 256, OPT_VERSION };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    const char *db = NULL;
    int c;
    /* Global options end at the command ('+'); argv[0] names no command. */
    argv[0] = (char *)"tftap";
    optind = 0;
    while ((c = cli_getopt(argc, argv, "+h", longopts)) != -1) {
        switch (c) {
        case OPT_DB:
            db = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case OPT_VERSION: {
            char *vargv[] = {(char *)"version", NULL};
            optind = 0;
            return cli_version_cmd(1, vargv);
        }
        default:
            return 2;
        }
    }
    if (optind >= argc) {
        cli_usage_error(NULL, "no command given");
        return 2;
    }
    const char *name = argv[optind];
    if (strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    const struct command *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            cmd = &commands[i];
    if (!cmd) {
        cli_usage_error(NULL, "unknown command '%s'", name);
        return 2;
    }
    int cargc = argc - optind;
    char **cargv = argv + optind;
    const char *env_db = getenv("TFTAP_DB");
    if (env_db && *env_db && takes_db(name) && cli_check_db_target(name, "TFTAP_DB", env_db))
        return 2;
    if (!db)
        return cmd->run(cargc, cargv);
    if (!takes_db(name)) {
        cli_usage_error(name, "'%s' reads no database: --db does not apply", name);
        return 2;
    }
    /* "tftap --db X CMD ARGS" is "tftap CMD --db=X ARGS": the command's
     * own --db, given later, wins. */
    char **nargv = calloc((size_t)cargc + 2, sizeof *nargv);
    size_t dl = strlen(db) + sizeof "--db=";
    char *dbopt = malloc(dl);
    if (!nargv || !dbopt) {
        free(nargv);
        free(dbopt);
        cli_error("out of memory");
        return 1;
    }
    snprintf(dbopt, dl, "--db=%s", db);
    nargv[0] = cargv[0];
    nargv[1] = dbopt;
    for (int i = 1; i < cargc; i++)
        nargv[i + 1] = cargv[i];
    int code = cmd->run(cargc + 1, nargv);
    free(nargv);
    free(dbopt);
    return code;
}
