/* launch: running a CLI command with every provider it uses wrapped, as one
 * recorded run (launch/run.c and the run_*.c beside it), and what that takes:
 * finding the providers a working directory uses and putting a shim in
 * front of each with a CLI config that sends the CLI to them (wrap.c), the
 * recorders' locks that tell when a run's record is complete (recwait.c),
 * the OTLP environment of the shims (otlp_opts.c), and a recorded run
 * answering for its providers (replay.c, replay_step.c). The module's one public
 * header: `tftap run`, `tftap wrap`, `tftap replay` and `tftap shim` (cli/)
 * parse their arguments and call it; launch_int.h is private to launch/.
 *
 * Messages: the run says what it could not do as "tftap: ..." lines on
 * stderr (it is the user's command: its notes are its output), never more
 * than one per problem, and never instead of the command's own output.
 *
 * Ownership: a launch_providers owns every string in it;
 * launch_providers_done() frees them. Strings a function returns are heap
 * (free()) unless it says otherwise. */
#ifndef TFTAP_LAUNCH_LAUNCH_H
#define TFTAP_LAUNCH_LAUNCH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "store/store.h"

struct launch_provider {
    char *addr;    /* address as the CLI config names it, e.g. "registry.opentofu.org/a/b" */
    char *type;    /* "b" */
    char *version; /* "1.2.3", NULL for a user's dev override */
    char *binary;  /* absolute path of the real provider executable */
};

struct launch_providers {
    struct launch_provider *v;
    size_t n, cap;
    size_t missing;      /* locked providers found nowhere on disk */
    char *missing_first; /* the first of them, for messages */
    size_t shims;        /* tftap shims found in the user's config and resolved to
                          * the providers they stood for (a config `tftap wrap`
                          * wrote, read again) */
    char *user_config;   /* the user's CLI config file, NULL if none */
    tftap_buf user_text; /* its contents ("" if none) */
    int unreadable;      /* launch_discover failed on a file it could not read or tokenize
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
int launch_discover(const char *workdir, const char *cli, struct launch_providers *set,
                    tftap_buf *err);
void launch_providers_done(struct launch_providers *set);

struct launch_wrap_opts {
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
int launch_wrap_write(const struct launch_providers *set, const char *dir,
                      const struct launch_wrap_opts *opts, char **config_path, tftap_buf *err);

/* ---- one command with its providers wrapped (launch/run.c) ---- */
struct launch_run_opts {
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
    const struct launch_provider *providers;
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
int launch_run(char **cmd, int ncmd, const struct launch_run_opts *ro);

/* How much of a document the matching reads (a state, a plan, `CLI show
 * -json` of a large state) is read at most. */
#define LAUNCH_DOC_MAX (256u << 20)

/* The configuration in workdir (the command's -chdir) as the address
 * matching reads it (analysis_match_doc): its resource blocks, and whether
 * each is certain to have one instance of that address, and the root
 * module's import blocks with literal targets and ids, as JSON into out
 * (run_config.c). test_args: the arguments of a `test` command (NULL for
 * any other): every object its run blocks make is then one of the
 * configuration's (said in the document), unless a test file reads
 * another module or cannot be read with certainty (-1). 0, or -1 when it
 * cannot be read with certainty (out empty). */
int launch_config_doc(const char *workdir, char *const *test_args, tftap_buf *out);

/* ---- a shim (launch/shim.c) ---- */

/* Run as the provider the shim metadata at meta_path (tftap-shim.json)
 * stands for, with args its arguments: refuse a shim that would start
 * tftap again, join the run of the CLI command that started it (under
 * tftap wrap: launch/wrap_run.c) or record into TFTAP_RUN_ID (under tftap
 * run), and relay and record every call (proxy_run). The exit code. */
int launch_shim(const char *meta_path, char **args);

/* ---- spans (launch/otlp_opts.c, docs/otlp.md) ---- */

/* 1 when url is an http:// or https:// URL (--otlp). */
int launch_otlp_url_ok(const char *url);

/* ---- a recorded run answering for its providers (launch/replay.c,
 * replay_step.c, docs/replay.md) ---- */

/* The recorded providers of one run (launch_replay_read fills it,
 * launch_recorded_done frees it). */
struct launch_recorded {
    struct launch_provider *v;
    size_t n, cap;
    int err;
};

/* Where the recording is and how its providers answer (all borrowed). */
struct launch_source {
    const char *exe;  /* this program, absolute */
    const char *path; /* the database or bundle, absolute */
    int64_t run;
    const char *const *ignore; /* --ignore patterns */
    size_t nignore;
    /* --claims: the directory the replaying processes of a command share,
     * kept for the caller (NULL: one of the replay's own, read and removed
     * when the command ends: its out-of-step said). */
    const char *claims;
};

/* The providers run_id of s recorded, into r, each checked: an address a
 * CLI accepts, a schema recorded (a replaying provider answers with it).
 * shown: the record as messages name it. 0, or 1 after one error line
 * (also when the run has no provider calls). */
int launch_replay_read(store *s, int64_t run_id, const char *shown, struct launch_recorded *r);
void launch_recorded_done(struct launch_recorded *r);

/* Into out: the replaying providers, shims recording into db and a CLI
 * config of cli's (tofu or terraform), as `tftap wrap` writes them; prints
 * the export line. The exit code: 0, or 1 after one error line. */
int launch_replay_out(struct launch_recorded *r, const char *out, const char *cli, const char *db,
                      const struct launch_source *src, const struct launch_wrap_opts *wo);

/* Run cmd (ncmd words) with every provider of r answered from src, as
 * launch_run with ro runs it (recorded into ro->db); record 0: straight
 * against the replaying providers, nothing recorded (ro unused). The
 * command's exit code, or 1 after one error line. */
int launch_replay(struct launch_recorded *r, char **cmd, int ncmd, const struct launch_source *src,
                  struct launch_run_opts *ro, int record);

/* A step run of src laid out again in dir_opt (NULL: a temporary
 * directory, removed afterwards) and its command run there with cli_opt
 * (NULL: the recorded CLI, docs/acceptance-tests.md) against r, each
 * provider reattached; the command's exit code, or 1 after one error line
 * (the run kept no working directory, its files cannot be written). */
int launch_replay_step(struct launch_recorded *r, const struct launch_source *src,
                       const char *dir_opt, const char *cli_opt, struct launch_run_opts *ro);

/* Where a command records or reads: given (--db, a global --db before the
 * command too) when not NULL or empty, else $TFTAP_DB, else
 * STORE_DEFAULT_PATH. Borrowed. */
const char *launch_db_path(const char *given);

/* The absolute path of the running tftap executable (free()), or NULL. */
char *launch_self_exe(void);

/* path made absolute against the current directory (free()), or NULL. */
char *launch_abspath(const char *path);

/* Append s as one single-quoted word of sh. */
void launch_sh_quote(tftap_buf *b, const char *s);

/* "tftap: " and the message of fmt on stderr, cut to one line of at most
 * 1 KiB (an argument that came in whole is not echoed), without the
 * newline: the shape of every message of tftap's (launch/message.c). */
void launch_vmessage(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
