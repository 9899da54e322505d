/* tftap wrap --out DIR: shims for every provider of the working directory
 * and a CLI config that sends the CLI to them (launch_discover,
 * launch_wrap_write), for later commands to record without `tftap run`. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "launch/launch.h"
#include "store/store.h"

static void wrap_usage(FILE *f)
{
    fprintf(
        f,
        "usage: tftap wrap [--db PATH] [--record-sensitive] [--keep-raw] [--cli tofu|terraform]\n"
        "                  [--otlp URL] [--otlp-values] --out DIR\n\n"
        "Write into DIR a shim for every provider the configuration in the current\n"
        "directory uses (run 'tofu init' first) and a CLI config, DIR/tftap.tfrc, that\n"
        "keeps your own CLI config and sends the CLI to the shims. Then\n\n"
        "  eval \"$(tftap wrap --out DIR)\"\n\n"
        "makes every later tofu/terraform command record into the database, each\n"
        "command as one run. Prints the export line on stdout. Run it again after\n"
        "'init' (with the export in force it reads its own config, and its shims\n"
        "still stand for the real providers: a shim never starts a "
        "shim).\n\n" CLI_RECORDING_OPTIONS_HELP
        "  --cli NAME           whose CLI config and registry host to assume (tofu)\n",
        STORE_DEFAULT_PATH);
}

int cli_wrap(int argc, char **argv)
{
    const char *db_opt = NULL, *out = NULL, *cli = "tofu";
    struct launch_wrap_opts o = {0};
    struct launch_providers set;
    tftap_buf err = TFTAP_BUF_INIT;
    char *exe = NULL, *db = NULL, *dir = NULL, *cwd = NULL, *config = NULL;
    int code = 1;

    memset(&set, 0, sizeof set);
    struct cli_recording rec = {0};
    enum { OPT_OUT = CLI_OPT_OWN, OPT_CLI };
    static const struct option longopts[] = {
        CLI_RECORDING_LONGOPTS,
        CLI_OTLP_LONGOPTS,
        {"out", required_argument, NULL, OPT_OUT},
        {"cli", required_argument, NULL, OPT_CLI},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 0;
    while ((opt = cli_getopt(argc, argv, "h", longopts)) != -1) {
        switch (opt) {
        case 'h':
            wrap_usage(stdout);
            return 0;
        case OPT_OUT:
            out = optarg;
            break;
        case OPT_CLI:
            cli = optarg;
            break;
        default:
            if (cli_recording_opt("wrap", opt, optarg, &rec) != 1)
                return 2;
        }
    }
    db_opt = rec.db;
    o.record_sensitive = rec.record_sensitive;
    o.keep_raw = rec.keep_raw;
    o.otlp = rec.otlp;
    o.otlp_values = rec.otlp_values;
    if (optind < argc) {
        cli_usage_error("wrap", "unexpected argument '%s'", argv[optind]);
        return 2;
    }
    if (out == NULL) {
        cli_usage_error("wrap", "--out DIR is required");
        return 2;
    }
    if (strcmp(cli, "tofu") != 0 && strcmp(cli, "terraform") != 0) {
        cli_usage_error("wrap", "--cli must be tofu or terraform, not '%s'", cli);
        return 2;
    }
    const char *db_path = launch_db_path(db_opt);
    if ((exe = launch_self_exe()) == NULL || (db = launch_abspath(db_path)) == NULL ||
        (cwd = getcwd(NULL, 0)) == NULL) {
        cli_error("cannot find this program's or the current directory's path: %s",
                  strerror(errno));
        goto cleanup;
    }
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
        cli_error("cannot create %s: %s", out, strerror(errno));
        goto cleanup;
    }
    if ((dir = realpath(out, NULL)) == NULL) {
        cli_error("cannot resolve %s: %s", out, strerror(errno));
        goto cleanup;
    }
    if (launch_discover(cwd, cli, &set, &err) != 0) {
        cli_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    if (set.shims)
        cli_error("%s was written by tftap wrap: its %zu shim(s) replaced by the providers they "
                  "stand for",
                  set.user_config, set.shims);
    if (set.n == 0) {
        cli_error("no installed providers found for %s (run '%s init' first)", cwd, cli);
        goto cleanup;
    }
    if (set.missing)
        cli_error("%zu provider(s) not installed, not wrapped (first: %s); run '%s init' and "
                  "wrap again",
                  set.missing, set.missing_first, cli);
    o.tftap_exe = exe;
    o.db = db;
    if (launch_wrap_write(&set, dir, &o, &config, &err) != 0) {
        cli_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    tftap_buf q = TFTAP_BUF_INIT;
    launch_sh_quote(&q, config);
    printf("export TF_CLI_CONFIG_FILE=%s\n", tftap_buf_cstr(&q));
    tftap_buf_done(&q);
    for (size_t i = 0; i < set.n; i++)
        fprintf(stderr, "tftap: wrapped %s %s (%s)\n", set.v[i].addr,
                set.v[i].version ? set.v[i].version : "dev override", set.v[i].binary);
    code = fflush(stdout) == 0 ? 0 : 1;

cleanup:
    launch_providers_done(&set);
    tftap_buf_done(&err);
    free(exe);
    free(db);
    free(dir);
    free(cwd);
    free(config);
    return code;
}
