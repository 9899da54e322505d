/* cli: finding the providers a working directory uses and putting a shim in
 * front of each (cli/wrap.c), shared by `tftap wrap` and `tftap run`.
 * Private to cli/.
 *
 * Ownership: a wrap_set owns every string in it; wrap_set_done() frees them. */
#ifndef TFTAP_CLI_WRAP_H
#define TFTAP_CLI_WRAP_H

#include <stddef.h>

#include "common/common.h"

struct wrap_provider {
    char *addr;    /* address as the CLI config names it, e.g. "registry.opentofu.org/a/b" */
    char *type;    /* "b" */
    char *version; /* "1.2.3", NULL for a user's dev override */
    char *binary;  /* absolute path of the real provider executable */
};

struct wrap_set {
    struct wrap_provider *v;
    size_t n, cap;
    size_t missing;      /* locked providers found nowhere on disk */
    char *missing_first; /* the first of them, for messages */
    char *user_config;   /* the user's CLI config file, NULL if none */
    tftap_buf user_text; /* its contents ("" if none) */
};

/* Find the providers of the configuration in workdir: those in
 * .terraform.lock.hcl that are installed (under TF_DATA_DIR or .terraform,
 * the plugin cache dir, or a filesystem mirror the CLI config names or
 * implies), plus the user's own dev_overrides. cli is "tofu" or
 * "terraform" (it picks the default registry host and config file).
 * Returns 0 (a set with n == 0 is not an error), or TFTAP_ENOMEM, TFTAP_EIO
 * with a reason in err. */
int wrap_discover(const char *workdir, const char *cli, struct wrap_set *set, tftap_buf *err);
void wrap_set_done(struct wrap_set *set);

struct wrap_opts {
    const char *tftap_exe; /* absolute path of this program */
    const char *db;        /* absolute database path */
    int record_sensitive;
    int keep_raw;
};

/* Write into the existing directory dir one subdirectory per provider (a
 * shim script named terraform-provider-<type> and its tftap-shim.json) and
 * dir/tftap.tfrc: the user's CLI config with dev_overrides pointing every
 * provider at its shim. *config_path receives the config's path (free()).
 * Returns 0, TFTAP_EIO (reason in err) or TFTAP_ENOMEM. */
int wrap_write(const struct wrap_set *set, const char *dir, const struct wrap_opts *opts,
               char **config_path, tftap_buf *err);

/* Remove what wrap_write() wrote in dir (not dir itself). */
void wrap_clean(const struct wrap_set *set, const char *dir);

/* The absolute path of the running tftap executable (free()), or NULL. */
char *wrap_self_exe(void);

/* path made absolute against the current directory (free()), or NULL. */
char *wrap_abspath(const char *path);

#endif
