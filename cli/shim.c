/* tftap shim META_JSON [ARGS...]: run as the provider a shim directory
 * stands for. OpenTofu/Terraform start the shim script believing it is the
 * provider; it execs this, and we put ourselves between the two. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "proxy/proxy.h"

static void shim_warn(void *ctx, const char *message)
{
    (void)ctx;
    cli_error("%s", message);
}

/* TFTAP_RUN_ID: a positive decimal run id, or absent. */
static int run_id_from_env(int64_t *out)
{
    const char *s = getenv("TFTAP_RUN_ID");
    *out = 0;
    if (s == NULL || s[0] == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v <= 0)
        return -1;
    *out = v;
    return 0;
}

int cli_shim(int argc, char **argv)
{
    proxy_meta meta;
    proxy_config cfg;
    tftap_buf err = TFTAP_BUF_INIT;
    int code;

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: tftap shim META_JSON [ARGS...]\n\n"
                "Run as a provider plugin: start the provider META_JSON names, relay and\n"
                "record every call. Shim scripts written by 'tftap wrap' call this.\n");
        return argc < 2 ? 2 : 0;
    }
    /* Same contract as any go-plugin provider: started by hand, say so. */
    if (!plugin_cookie_ok(NULL)) {
        fputs(PLUGIN_NOT_A_PROGRAM_MESSAGE, stderr);
        return 1;
    }
    if (proxy_meta_load(argv[1], &meta, &err) != 0) {
        cli_error("%s", tftap_buf_cstr(&err));
        tftap_buf_done(&err);
        return 1;
    }

    proxy_config_from_meta(&cfg, &meta);
    cfg.args = argv + 2;
    const char *db_env = getenv("TFTAP_DB");
    if (db_env != NULL && db_env[0] != '\0')
        cfg.db = db_env;
    if (run_id_from_env(&cfg.run_id) != 0) {
        cli_error("TFTAP_RUN_ID is not a positive integer; recording under a new run");
        cfg.run_id = 0;
    }
    cfg.warn = shim_warn;

    code = proxy_run(&cfg, &err);
    if (err.len > 0)
        cli_error("%s: %s", meta.provider, tftap_buf_cstr(&err));
    proxy_meta_done(&meta);
    tftap_buf_done(&err);
    return code;
}
