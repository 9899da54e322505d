/* launch: a shim, run as the provider a shim directory stands for (tftap
 * shim META_JSON, cli/shim_opts.c). OpenTofu/Terraform start the shim script
 * believing it is the provider; it execs tftap, and we put ourselves
 * between the two. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "launch/launch_int.h"
#include "proxy/proxy.h"
#include "store/store.h"

/* Set by a shim for the provider it starts. A shim that finds it set was
 * started by a shim (directly, or through scripts or copies no path check
 * can see): it refuses instead of starting shims without end. */
#define SHIM_DEPTH_ENV "TFTAP_SHIM_DEPTH"

static void shim_warn(void *ctx, const char *message)
{
    (void)ctx;
    launch_error("%s", message);
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

int launch_shim(const char *meta_path, char **args)
{
    proxy_meta meta;
    proxy_config cfg;
    tftap_buf err = TFTAP_BUF_INIT;
    int code;

    /* Same contract as any go-plugin provider: started by hand, say so. */
    if (!plugin_cookie_ok(NULL)) {
        fputs(PLUGIN_NOT_A_PROGRAM_MESSAGE, stderr);
        return 1;
    }
    if (proxy_meta_load(meta_path, &meta, &err) != 0) {
        launch_error("%s", tftap_buf_cstr(&err));
        tftap_buf_done(&err);
        return 1;
    }

    const char *why = NULL;
    const char *depth = getenv(SHIM_DEPTH_ENV);
    char *inner = launch_shim_meta_path(meta.binary);
    if (depth != NULL && depth[0] != '\0')
        why = "was started by another tftap shim (" SHIM_DEPTH_ENV " is set)";
    else if (launch_is_self(meta.binary))
        why = "names tftap itself as its provider";
    else if (inner != NULL)
        why = "names another tftap shim as its provider";
    free(inner);
    if (why != NULL) {
        /* One line, on stderr and as the handshake line: go-plugin prints
         * an unrecognised handshake line in the CLI's own error. */
        tftap_buf line = TFTAP_BUF_INIT;
        tftap_buf_printf(&line,
                         "tftap: the shim %s %s; refusing to start it (unset TF_CLI_CONFIG_FILE "
                         "or wrap again)",
                         meta_path, why);
        fprintf(stderr, "%s\n", tftap_buf_cstr(&line));
        printf("%s\n", tftap_buf_cstr(&line));
        fflush(stdout);
        tftap_buf_done(&line);
        proxy_meta_done(&meta);
        return 1;
    }
    if (setenv(SHIM_DEPTH_ENV, "1", 1) != 0) {
        launch_error("cannot set %s: %s", SHIM_DEPTH_ENV, strerror(errno));
        proxy_meta_done(&meta);
        return 1;
    }

    proxy_config_from_meta(&cfg, &meta);
    cfg.args = args;
    /* TFTAP_DB names another database than the metadata's; tftap run
     * exports its own without the password, which the metadata keeps. */
    const char *db_env = getenv("TFTAP_DB");
    if (db_env != NULL && db_env[0] != '\0') {
        char *bare = cfg.db ? store_without_password(cfg.db) : NULL;
        if (bare == NULL || strcmp(bare, db_env) != 0)
            cfg.db = db_env;
        free(bare);
    }
    if (run_id_from_env(&cfg.run_id) != 0) {
        launch_error("TFTAP_RUN_ID is not a positive integer; recording under a new run");
        cfg.run_id = 0;
    }
    store_hold *hold = NULL;
    if (cfg.run_id == 0 && cfg.db != NULL && (cfg.run_id = launch_wrap_join(cfg.db, &hold)) > 0) {
        cfg.leave_run = 1;
        if (!meta.record_sensitive)
            cfg.run_left = launch_wrap_run_left;
    }
    /* Under `tftap run`: a lock its recorder holds until the record is
     * written, so that run returns only then. */
    const char *run_dir = getenv("TFTAP_RUN_DIR");
    if (run_dir != NULL && run_dir[0] != '\0' &&
        (cfg.recorder_hold_fd = launch_recorder_lock(run_dir, meta.provider)) < 0)
        launch_error("cannot lock in %s: %s; tftap run may return before this provider's record "
                     "is complete",
                     run_dir, strerror(errno));
    cfg.warn = shim_warn;
    otlp_config oc;
    char *otlp_url = NULL;
    if (launch_otlp_config(meta.otlp, meta.otlp_values, &oc, &otlp_url) == 1)
        cfg.otlp = &oc;

    code = proxy_run(&cfg, &err);
    store_hold_free(hold);
    free(otlp_url);
    if (cfg.recorder_hold_fd >= 0)
        close(cfg.recorder_hold_fd);
    if (err.len > 0)
        launch_error("%s: %s", meta.provider, tftap_buf_cstr(&err));
    proxy_meta_done(&meta);
    tftap_buf_done(&err);
    return code;
}
