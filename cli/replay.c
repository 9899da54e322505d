/* tftap replay SOURCE -- tofu|terraform ARGS...: run a command with every
 * provider of a recorded run replaced by the recording itself (launch_replay,
 * launch/replay.c); with --out DIR the files for later commands; without a
 * command, an acceptance test's step run replayed in its kept working
 * directory (launch_replay_step). Here: the options. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cli_store.h"
#include "launch/launch.h"
#include "replay/replay.h"
#include "store/store.h"

static const char usage_text[] =
    "usage: tftap replay RUN|SOURCE[:RUN] [--run RUN] [--ignore PATTERN]... [--db PATH]\n"
    "                    [--record-sensitive] [--keep-raw] [--no-match] [--claims DIR]\n"
    "                    -- tofu|terraform ARGS...\n"
    "       tftap replay RUN|SOURCE[:RUN] [--run RUN] [--ignore PATTERN]... --no-record\n"
    "                    [--claims DIR] -- tofu|terraform ARGS...\n"
    "       tftap replay RUN|SOURCE[:RUN] [--run RUN] [--ignore PATTERN]... [--db PATH]\n"
    "                    [--cli tofu|terraform] --out DIR\n"
    "       tftap replay STEP_RUN|SOURCE[:STEP_RUN] [--dir DIR] [--cli CLI]\n"
    "                    [--ignore PATTERN]... [--db PATH] [--record-sensitive]\n"
    "                    [--keep-raw] [--no-match]\n\n"
    "Run an OpenTofu/Terraform command with every provider of a recorded run\n"
    "answered from the recording: no real provider is installed, started or\n"
    "needed. RUN (a run id or 'last') is a run of the database (--db), as for every\n"
    "other command; SOURCE is a database or a bundle, RUN then one of its runs ('last',\n"
    "the default). Each call is answered by the recorded call of the same method and\n"
    "type whose request values are equal (secrets and provider-private bytes\n"
    "aside); a call nothing matches fails with an error diagnostic naming the\n"
    "nearest recorded request and the paths where they differ. The replay is\n"
    "recorded like 'tftap run' records (into --db), so that 'tftap diff' can\n"
    "compare it with the original; exits with the command's exit code.\n\n"
    "Without a command, RUN is an acceptance test's step run (tftap run -- go test):\n"
    "its working directory as the command found it (configuration, state, lock\n"
    "file, saved plan) is laid out again in --dir DIR or a temporary directory,\n"
    "and the step's own command runs there against the recorded providers,\n"
    "printing the CLI's output; it exits as the recorded step did when the\n"
    "recording answers every call. The configuration comes from the record: replay\n"
    "the steps of records you trust.\n\n"
    "  --run RUN            the recorded run to replay (default: last)\n"
    "  --ignore PATTERN     request paths whose values may differ (a glob on\n"
    "                       attribute paths, as tftap diff --ignore); repeatable\n"
    "  --db PATH            database the replay is recorded into (default:\n"
    "                       $TFTAP_DB, else ./" STORE_DEFAULT_PATH ")\n"
    "  --record-sensitive   store sensitive values instead of redacting them\n"
    "  --keep-raw           store raw message bytes too\n"
    "  --no-match           do not run 'show -json' after plan/apply to tie calls\n"
    "                       to resource addresses\n"
    "  --no-record          run the command straight against the replaying\n"
    "                       providers: nothing of it is recorded, no database is\n"
    "                       opened but SOURCE\n"
    "  --claims DIR         with a command: keep in DIR (empty or missing) which\n"
    "                       contested calls the replay's processes answered; "
    "DIR/" REPLAY_CLAIMS_OUT_OF_STEP "\n"
    "                       tells when they left the recording's steps\n"
    "                       (docs/replay.md)\n"
    "  --out DIR            write the replaying providers, shims and a CLI config\n"
    "                       (DIR/tftap.tfrc) into DIR and print the export line,\n"
    "                       as tftap wrap does, instead of running a command\n"
    "  --cli NAME           with --out: whose CLI config to keep (tofu); for a step:\n"
    "                       the CLI to run, a name on PATH or a path (default: the\n"
    "                       recorded one, when it is here and named tofu or\n"
    "                       terraform, else its name on PATH)\n"
    "  --dir DIR            without a command: lay the step's directory out in DIR\n"
    "                       (new or empty; kept afterwards) instead of a temporary\n"
    "                       one\n\n"
    "Exit status: the command's; 1 when the replay could not be set up, 2 usage.\n";

/* A URI's ":RUN" suffix: a run id or "last" after the last colon, which
 * comes after the URI's authority (a colon there is a port's). */
static int uri_run_suffix(const char *arg, const char *colon)
{
    const char *auth = strstr(arg, "://");
    const char *path = auth ? strchr(auth + 3, '/') : NULL;
    if (path == NULL || colon < path)
        return 0;
    if (strcmp(colon + 1, "last") == 0)
        return 1;
    for (const char *p = colon + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return colon[1] != '\0';
}

/* SOURCE[:RUN]: a path that exists is a path, colons and all. */
static int split_source(const char *arg, char **path, const char **run)
{
    struct stat st;
    const char *colon = strrchr(arg, ':');
    *run = NULL;
    if (colon != NULL && store_path_is_url(arg) && !uri_run_suffix(arg, colon))
        colon = NULL;
    if (colon != NULL && stat(arg, &st) != 0 && colon[1] != '\0') {
        *path = strndup(arg, (size_t)(colon - arg));
        *run = colon + 1;
    } else {
        *path = strdup(arg);
    }
    return *path ? 0 : TFTAP_ENOMEM;
}

/* The run run_spec ("last", an id) of the record at path, resolved into
 * *run, and its providers into r (launch_replay_read). 0, or 1 after one
 * error line. */
static int read_source(const char *path, const char *run_spec, int64_t *run,
                       struct launch_recorded *r)
{
    store *s = NULL;
    int rc = store_open(path, STORE_OPEN_READONLY, &s);
    if (rc != 0 && store_path_is_url(path)) {
        cli_store_open_failed(path, STORE_OPEN_READONLY, rc);
        return 1;
    }
    if (rc != 0) {
        cli_error("cannot open %s: %s", path,
                  rc == TFTAP_ENOTFOUND ? "no such file"
                  : s                   ? store_errmsg(s)
                                        : tftap_strerror(rc));
        store_close(s);
        return 1;
    }
    if (cli_bundle_intact(s, path)) {
        store_close(s);
        return 1;
    }
    const char *shown = STORE_SHOWN(path);
    rc = store_resolve_run(s, run_spec, run);
    if (rc != 0) {
        cli_error("%s: no run '%s'%s", shown, run_spec,
                  rc == TFTAP_EINVAL ? " (a run id or 'last')" : "");
        store_close(s);
        return 1;
    }
    rc = launch_replay_read(s, *run, shown, r);
    store_close(s);
    return rc;
}

int cli_replay(int argc, char **argv)
{
    enum {
        OPT_RUN = CLI_OPT_OWN,
        OPT_IGNORE,
        OPT_OUT,
        OPT_CLI,
        OPT_NO_MATCH,
        OPT_DIR,
        OPT_NO_RECORD,
        OPT_CLAIMS
    };
    static const struct option longopts[] = {
        CLI_RECORDING_LONGOPTS,
        {"run", required_argument, NULL, OPT_RUN},
        {"ignore", required_argument, NULL, OPT_IGNORE},
        {"out", required_argument, NULL, OPT_OUT},
        {"cli", required_argument, NULL, OPT_CLI},
        {"no-match", no_argument, NULL, OPT_NO_MATCH},
        {"dir", required_argument, NULL, OPT_DIR},
        {"no-record", no_argument, NULL, OPT_NO_RECORD},
        {"claims", required_argument, NULL, OPT_CLAIMS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_recording opts = {0};
    struct launch_source src = {0};
    struct launch_run_opts ro = {0};
    struct launch_wrap_opts wo = {0};
    struct launch_recorded rec = {0};
    const char *run_opt = NULL, *out = NULL, *dir = NULL, *cli = NULL, *source_arg = NULL,
               *claims = NULL, *run_spec;
    char *source = NULL, *exe = NULL, *db = NULL;
    int code = 2, no_record = 0;
    const char **ignore = calloc((size_t)argc + 1, sizeof *ignore);
    size_t nignore = 0;
    if (ignore == NULL) {
        cli_error("out of memory");
        return 1;
    }
    /* Our options end at "--": what follows is the command's. */
    int nours = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            nours = i;
            break;
        }
    int opt;
    optind = 0;
    while ((opt = cli_getopt(nours, argv, "h", longopts)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage_text, stdout);
            code = 0;
            goto cleanup;
        case OPT_RUN:
            run_opt = optarg;
            break;
        case OPT_IGNORE:
            ignore[nignore++] = optarg;
            break;
        case OPT_OUT:
            out = optarg;
            break;
        case OPT_CLI:
            cli = optarg;
            break;
        case OPT_NO_MATCH:
            ro.no_match = 1;
            break;
        case OPT_DIR:
            dir = optarg;
            break;
        case OPT_NO_RECORD:
            no_record = 1;
            break;
        case OPT_CLAIMS:
            claims = optarg;
            break;
        default:
            if (cli_recording_opt("replay", opt, optarg, &opts) != 1)
                goto cleanup;
        }
    }
    ro.db = opts.db;
    ro.record_sensitive = wo.record_sensitive = opts.record_sensitive;
    ro.keep_raw = wo.keep_raw = opts.keep_raw;
    for (int i = optind; i < nours; i++) {
        if (source_arg != NULL) {
            cli_usage_error("replay", "unexpected argument '%s' (the command goes after --)",
                            argv[i]);
            goto cleanup;
        }
        source_arg = argv[i];
    }
    char **cmd = nours < argc ? argv + nours + 1 : NULL;
    int ncmd = nours < argc ? argc - nours - 1 : 0;
    if (source_arg == NULL) {
        cli_usage_error("replay", "no SOURCE given (a database or bundle)");
        goto cleanup;
    }
    if (out != NULL && ncmd > 0) {
        cli_usage_error("replay", "--out DIR writes files for later commands: give no command");
        goto cleanup;
    }
    if (dir != NULL && (out != NULL || ncmd > 0)) {
        cli_usage_error("replay", "--dir DIR is where a step's directory is laid out: give no "
                                  "command and no --out");
        goto cleanup;
    }
    if (no_record &&
        (ncmd == 0 || ro.db != NULL || ro.record_sensitive || ro.keep_raw || ro.no_match)) {
        cli_usage_error("replay", "--no-record runs a command and records nothing: give a "
                                  "command, and no --db, --record-sensitive, --keep-raw or "
                                  "--no-match");
        goto cleanup;
    }
    if (claims != NULL && ncmd == 0) {
        cli_usage_error("replay", "--claims DIR is for a command's replay: give a command");
        goto cleanup;
    }
    if (cli != NULL && ncmd > 0) {
        cli_usage_error("replay", "--cli is for --out or a step's replay: the command names its "
                                  "CLI");
        goto cleanup;
    }
    /* A step's replay runs the CLI --cli names (a path too); --out keeps
     * the config of one of the two. */
    if (out != NULL && cli != NULL && strcmp(cli, "tofu") != 0 && strcmp(cli, "terraform") != 0) {
        cli_usage_error("replay", "--cli must be tofu or terraform, not '%s'", cli);
        goto cleanup;
    }
    code = 1;
    const char *db_path = launch_db_path(ro.db);
    /* RUN alone, as every other command takes it: a run of the database
     * (--db), when no file has that name. */
    struct stat sst;
    int run_alone = cli_is_run_spec(source_arg) && stat(source_arg, &sst) != 0;
    if (run_alone) {
        source = strdup(db_path);
        run_spec = source_arg;
    }
    if (run_alone ? source == NULL : split_source(source_arg, &source, &run_spec) != 0) {
        cli_error("out of memory");
        goto cleanup;
    }
    if (run_opt != NULL && run_spec != NULL && strcmp(run_opt, run_spec) != 0) {
        cli_usage_error("replay", "two runs given: %s and --run %s", STORE_SHOWN(source_arg),
                        run_opt);
        code = 2;
        goto cleanup;
    }
    if (run_spec == NULL)
        run_spec = run_opt ? run_opt : "last";

    if ((exe = launch_self_exe()) == NULL || (db = launch_abspath(db_path)) == NULL) {
        cli_error("cannot find this program's path: %s", strerror(errno));
        goto cleanup;
    }
    src.exe = exe;
    char *abs = launch_abspath(source);
    if (abs == NULL) {
        cli_error("cannot resolve %s: %s", source, strerror(errno));
        goto cleanup;
    }
    free(source);
    source = abs;
    src.path = source;
    src.ignore = ignore;
    src.nignore = nignore;
    if (claims != NULL && (src.claims = launch_abspath(claims)) == NULL) {
        cli_error("cannot resolve %s: %s", claims, strerror(errno));
        goto cleanup;
    }
    /* The run is resolved now: a replay recorded into the same database
     * becomes its last run. */
    if (read_source(source, run_spec, &src.run, &rec) != 0)
        goto cleanup;
    wo.tftap_exe = exe;
    if (out != NULL)
        code = launch_replay_out(&rec, out, cli ? cli : "tofu", db, &src, &wo);
    else if (ncmd == 0)
        code = launch_replay_step(&rec, &src, dir, cli, &ro);
    else
        code = launch_replay(&rec, cmd, ncmd, &src, &ro, !no_record);
cleanup:
    launch_recorded_done(&rec);
    free((char *)src.claims);
    free(ignore);
    free(source);
    free(exe);
    free(db);
    return code;
}
