/* cli: finding the providers a working directory uses and putting a shim in
 * front of each (cli/wrap.c), shared by `tftap wrap` and `tftap run`.
 * Private to cli/.
 *
 * Ownership: a wrap_set owns every string in it; wrap_set_done() frees them. */
#ifndef TFTAP_CLI_WRAP_H
#define TFTAP_CLI_WRAP_H

#include <stddef.h>
#include <stdint.h>

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
    size_t shims;        /* tftap shims found in the user's config and resolved to
                          * the providers they stood for (a config `tftap wrap`
                          * wrote, read again) */
    char *user_config;   /* the user's CLI config file, NULL if none */
    tftap_buf user_text; /* its contents ("" if none) */
    int unreadable;      /* wrap_discover failed on a file it could not read or tokenize
                          * (the CLI config or the lock file), not on what it says */
};

/* Find the providers of the configuration in workdir: those in
 * .terraform.lock.hcl that are installed (under TF_DATA_DIR or .terraform,
 * the plugin cache dir, or a filesystem mirror the CLI config names or
 * implies), plus the user's own dev_overrides. cli is "tofu" or
 * "terraform" (it picks the default registry host and config file).
 * tftap's own shims met on the way (a config written by `tftap wrap`) are
 * replaced by the providers they stand for and counted in set->shims.
 * Returns 0 (a set with n == 0 is not an error), or TFTAP_ENOMEM, TFTAP_EIO,
 * TFTAP_EINVAL (a shim whose provider is tftap again) with a reason in err. */
int wrap_discover(const char *workdir, const char *cli, struct wrap_set *set, tftap_buf *err);
void wrap_set_done(struct wrap_set *set);

/* Put copies of n providers in place of set's (tftap replay: the recorded
 * providers stand in for whatever the directory uses); the user's config
 * stays. 0 or TFTAP_ENOMEM. */
int wrap_set_replace(struct wrap_set *set, const struct wrap_provider *v, size_t n);

struct wrap_opts {
    const char *tftap_exe; /* absolute path of this program */
    const char *db;        /* absolute database path */
    int record_sensitive;
    int keep_raw;
    const char *otlp; /* NULL, or the OTLP traces endpoint the shims export spans to */
    int otlp_values;  /* 1: their spans carry the calls' values (redacted) */
};

/* Write into the existing directory dir one subdirectory per provider (a
 * shim script named terraform-provider-<type> and its tftap-shim.json) and
 * dir/tftap.tfrc: the user's CLI config with dev_overrides pointing every
 * provider at its shim. *config_path receives the config's path (free()).
 * Returns 0, TFTAP_EIO (reason in err) or TFTAP_ENOMEM. */
int wrap_write(const struct wrap_set *set, const char *dir, const struct wrap_opts *opts,
               char **config_path, tftap_buf *err);

/* Only the CLI config of wrap_write(): dir/tftap.tfrc, the user's CLI
 * config with dev_overrides pointing every provider of set at dir/p<i>
 * (where the caller put executables of its own). Returns as wrap_write. */
int wrap_write_config(const struct wrap_set *set, const char *dir, char **config_path,
                      tftap_buf *err);

/* Remove what wrap_write() wrote in dir (not dir itself). */
void wrap_clean(const struct wrap_set *set, const char *dir);

/* 1 when path is the running tftap executable itself (same device and
 * inode, whatever the path says), else 0. */
int wrap_is_self(const char *path);

/* When path is a tftap shim (a "#!" script that runs `tftap shim`, with
 * tftap-shim.json beside it), that json's path (free()); else NULL. */
char *wrap_shim_meta_path(const char *path);

/* ---- one command with its providers wrapped (cli/run.c) ---- */
struct run_opts {
    const char *db; /* NULL: $TFTAP_DB, else the default */
    int record_sensitive, keep_raw, no_match, reattach;
    /* The command is tofu or terraform whatever its name (a step's
     * recorded CLI: the harness runs TF_ACC_TERRAFORM_PATH, which may be
     * a script in front of one). */
    int is_cli;
    const char *otlp; /* --otlp URL, or NULL */
    int otlp_values;  /* --otlp-values */
    /* tftap replay: these providers (borrowed) are wrapped in place of
     * those the directory uses, whatever the command (init too). */
    const struct wrap_provider *providers;
    size_t nproviders;
    /* "NAME=value" strings added to the environment of the CLI commands
     * tftap itself runs around the command (state pull, show -json). */
    char *const *aux_env;
    size_t naux_env;
    /* The CLI front of an acceptance test (run_acc.c): front_dir is the
     * parent run's directory, parent_id the parent run; the command is
     * recorded as a step run under it, named by test and step, with a
     * relay in front of each provider of TF_REATTACH_PROVIDERS.
     * own_log_mask: TF_LOG_PATH_MASK is tftap's, not the user's. */
    const char *front_dir;
    int64_t parent_id;
    int own_log_mask;
};

/* What `tftap run` does once its options are read: run cmd (ncmd words)
 * with every provider wrapped, as one recorded run. Returns the exit code
 * to exit with (the command's, or 1 after one error line). */
int run_command(char **cmd, int ncmd, const struct run_opts *ro);

/* ---- knowing when a run's record is complete (cli/recwait.c) ----
 * `tftap run` names a directory in TFTAP_RUN_DIR; each proxy of the run
 * takes a lock file there (wrap_recorder_lock(), in the process that then
 * calls proxy_run() with the fd as recorder_hold_fd) which its recorder
 * process holds until it has written everything. */

/* Create and lock (flock, exclusive) a lock file in run_dir naming provider.
 * Returns its fd (close-on-exec), or -1 (errno set). */
int wrap_recorder_lock(const char *run_dir, const char *provider);

/* Wait until every lock file in run_dir is free, at most timeout_ms; after
 * progress_ms says once on stderr how many are left, and on giving up says
 * which. Returns how many were still held. */
size_t wrap_recorders_wait(const char *run_dir, unsigned timeout_ms, unsigned progress_ms);

/* Remove the lock files from run_dir. */
void wrap_recorder_locks_clean(const char *run_dir);
/* For a waiter that outlives run_dir: its lock files, opened (heap array
 * in *fds; returns how many). */
size_t wrap_recorder_locks_open(const char *run_dir, int **fds);
/* Wait until each lock can be taken exclusively: a recorder that found the
 * database unavailable holds its lock shared (wrap_recorders_wait is done
 * with it) until it has written the rest or given up. Closes the fds;
 * returns how many were still held after timeout_ms. */
size_t wrap_recorder_locks_wait_exclusive(int *fds, size_t n, unsigned timeout_ms);

/* The absolute path of the running tftap executable (free()), or NULL. */
char *wrap_self_exe(void);

/* path made absolute against the current directory (free()), or NULL. */
char *wrap_abspath(const char *path);

/* "a/b" (free()), or NULL on ENOMEM. */
char *wrap_joinpath(const char *a, const char *b);

/* Append s as one single-quoted word of sh. */
void wrap_sh_quote(tftap_buf *b, const char *s);

#endif
