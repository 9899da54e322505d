/* tftap run -- tofu|terraform ARGS...: the options of a run, read and
 * handed to launch_run (launch/run.c), which runs the command with every
 * provider it uses wrapped, as one recorded run. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "launch/launch.h"
#include "store/store.h"

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: tftap run [--db PATH] [--reattach] [--record-sensitive] [--keep-raw]\n"
            "                 [--no-match] [--otlp URL] [--otlp-values] -- tofu|terraform ARGS...\n"
            "       tftap run [options] -- go test ARGS...\n\n"
            "Run one OpenTofu/Terraform command with every provider it uses wrapped by\n"
            "tftap, recording all their calls as one run. The command keeps your terminal;\n"
            "tftap exits with its exit code. Providers are found through the lock file\n"
            "and where init installed them (or the plugin cache and filesystem mirrors of\n"
            "your CLI config); your CLI config is kept, with dev_overrides added for the\n"
            "shims. Commands that install providers ('init', 'get', 'providers lock',\n"
            "'providers mirror') run unwrapped, still recorded as runs.\n\n"
            "A command that is neither tofu nor terraform (go test, make) may run a\n"
            "provider's acceptance tests: tftap points TF_ACC_TERRAFORM_PATH at a front for\n"
            "the CLI (yours, else terraform or tofu on PATH), and each CLI command of each\n"
            "test step is recorded as a run of its own under this one, named TEST / step N /\n"
            "COMMAND, the provider under test (TF_REATTACH_PROVIDERS) relayed and recorded\n"
            "too (docs/acceptance-tests.md).\n\n" CLI_RECORDING_OPTIONS_HELP
            "  --no-match           do not tie calls to resource addresses after the command\n"
            "                       (no 'state pull', 'show -json' or plan made again from\n"
            "                       the recording, offline, to name new instances)\n"
            "  --reattach           start each provider once, behind tftap, and let the CLI\n"
            "                       attach to it (TF_REATTACH_PROVIDERS) instead of using\n"
            "                       shims; every alias of a provider then shares one process\n",
            STORE_DEFAULT_PATH);
}

int cli_recording_opt(const char *cmd, int opt, const char *arg, struct cli_recording *r)
{
    switch (opt) {
    case CLI_OPT_DB:
        r->db = arg;
        return 1;
    case CLI_OPT_SENSITIVE:
        r->record_sensitive = 1;
        return 1;
    case CLI_OPT_RAW:
        r->keep_raw = 1;
        return 1;
    case CLI_OPT_OTLP:
        if (!launch_otlp_url_ok(arg)) {
            cli_usage_error(cmd, "--otlp needs an http:// or https:// URL, not '%s'", arg);
            return -1;
        }
        r->otlp = arg;
        return 1;
    case CLI_OPT_OTLP_VALUES:
        r->otlp_values = 1;
        return 1;
    default:
        return 0;
    }
}

int cli_run(int argc, char **argv)
{
    struct launch_run_opts ro = {0};
    struct cli_recording rec = {0};
    enum { OPT_NO_MATCH = CLI_OPT_OWN, OPT_REATTACH, OPT_FRONT, OPT_PARENT, OPT_OWN_MASK };
    static const struct option longopts[] = {
        CLI_RECORDING_LONGOPTS,
        CLI_OTLP_LONGOPTS,
        {"no-match", no_argument, NULL, OPT_NO_MATCH},
        {"reattach", no_argument, NULL, OPT_REATTACH},
        /* The acceptance tests' CLI front (run_acc.c): not for users. */
        {"front", required_argument, NULL, OPT_FRONT},
        {"parent", required_argument, NULL, OPT_PARENT},
        {"own-log-mask", no_argument, NULL, OPT_OWN_MASK},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 0;
    /* '+': the command's own arguments are not ours, "--" or not. */
    while ((opt = cli_getopt(argc, argv, "+h", longopts)) != -1) {
        switch (opt) {
        case 'h':
            run_usage(stdout);
            return 0;
        case OPT_NO_MATCH:
            ro.no_match = 1;
            break;
        case OPT_REATTACH:
            ro.reattach = 1;
            break;
        case OPT_FRONT:
            ro.front_dir = optarg;
            break;
        case OPT_PARENT:
            ro.parent_id = strtoll(optarg, NULL, 10);
            break;
        case OPT_OWN_MASK:
            ro.own_log_mask = 1;
            break;
        default:
            if (cli_recording_opt("run", opt, optarg, &rec) != 1)
                return 2;
        }
    }
    ro.db = rec.db;
    ro.record_sensitive = rec.record_sensitive;
    ro.keep_raw = rec.keep_raw;
    ro.otlp = rec.otlp;
    ro.otlp_values = rec.otlp_values;
    if (optind >= argc) {
        cli_usage_error("run", "no command given (tftap run -- tofu ARGS...)");
        return 2;
    }
    return launch_run(argv + optind, argc - optind, &ro);
}
