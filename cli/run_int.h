/* cli: what `tftap run` (run.c) shares with the files beside it: the
 * child processes it starts besides the user's command (run_child.c), the
 * providers it starts itself with --reattach (run_reattach.c) and the end
 * of the run, once the command is over (run_end.c). */
#ifndef TFTAP_CLI_RUN_INT_H
#define TFTAP_CLI_RUN_INT_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "cli/wrap.h"
#include "common/common.h"
#include "store/store.h"

struct analysis_match_doc;

/* How much of `CLI show -json` (a large state) and `CLI version -json` is
 * kept. */
#define CAPTURE_MAX (256u << 20)
#define VERSION_MAX (64u << 10)

/* ---- run_child.c ---- */

/* An environment like ours with the given variables set (name=value
 * strings, replacing ours). The array is heap; its strings are borrowed
 * except the new ones, which the caller keeps alive. NULL: out of memory. */
char **run_env_with(char *const *add, size_t nadd);

/* A command started with its stdout into a pipe (capture_start), read and
 * reaped later (capture_finish). */
struct captured {
    pid_t pid; /* 0: not started */
    int fd;
};

/* Start argv in dir (NULL: ours) with env (NULL: ours), stdout into a
 * pipe, stdin and stderr on /dev/null. 0, or -1 when it could not be
 * started. */
int capture_start(char *const *argv, char *const *env, const char *dir, struct captured *c);
/* Its stdout into out (at most max bytes kept), then its exit status as
 * run_command gives it, or -1 when it was not started. */
int capture_finish(struct captured *c, size_t max, tftap_buf *out);
/* Both at once. */
int capture(char *const *argv, char *const *env, const char *dir, size_t max, tftap_buf *out);

/* `CLI version -json`, started (the CLI's start-up is most of its cost:
 * it runs beside tftap's own work after the command) and read later: the
 * version it printed, or NULL, remembered for the next run
 * (cli_version.c). A CLI not started (c->pid 0) is read as nothing. */
void cli_version_start(const char *cli_path, struct captured *c);
char *cli_version_finish(const char *cli_path, struct captured *c);

/* ---- run_signal.c: signals for the command, as they would reach it alone ---- */

/* While the command runs: SIGINT, SIGTERM, SIGHUP and SIGQUIT caught, and
 * a sentinel process in our group that tells a signal sent to the group
 * (the command has it already) from one sent to tftap alone (passed on). */
struct run_signals {
    pid_t sentinel; /* -1: none, signals sent by kill(2) are all passed on */
    int cmd_fd, ack_fd;
    int installed; /* our handlers are in place (old holds what they replaced) */
    struct sigaction old[4], old_chld;
};

/* Before the command is started: 0, or -1 when nothing could be set up. */
int run_signals_start(struct run_signals *rs);
/* In the command's child before exec: our dispositions undone. */
void run_signals_child(const struct run_signals *rs);
/* Wait for pid, passing on what was sent to tftap alone; 0 with its wait
 * status, or -1 with errno. */
int run_signals_wait(struct run_signals *rs, pid_t pid, int *status);
/* After the command: dispositions back, the sentinel gone. */
void run_signals_stop(struct run_signals *rs);

/* ---- run_reattach.c: --reattach, tftap starts each provider itself ---- */

struct reattached {
    pid_t pid;
    int stop_w; /* write end of the stop pipe, -1 once closed */
};

/* Start every provider of set behind a proxy recording into run_id; fills
 * json with the value of TF_REATTACH_PROVIDERS. On failure everything
 * started is stopped again and err says why. */
int reattach_start(const struct wrap_set *set, const struct wrap_opts *o, int64_t run_id,
                   const char *run_dir, struct reattached *r, tftap_buf *json, tftap_buf *err);
/* How many providers a TF_REATTACH_PROVIDERS value names (0 when it is
 * unset or unreadable). */
size_t reattach_count(const char *reattach_json);
/* A relay, recording into run_id, in front of each provider that
 * reattach_json (TF_REATTACH_PROVIDERS) names: each dials the provider
 * where it already listens (it is not started); fills json with the same
 * value pointing at the relays. r holds room for reattach_count() entries;
 * *nr receives how many were started. On failure everything started is
 * stopped again and err says why. */
int reattach_attach_start(const char *reattach_json, const struct wrap_opts *o, int64_t run_id,
                          const char *run_dir, struct reattached *r, size_t *nr, tftap_buf *json,
                          tftap_buf *err);
/* End the n proxies (closing their stop pipes) and their providers, and
 * reap them. */
void reattach_stop(struct reattached *r, size_t n);

/* ---- run_acc.c: acceptance tests, each CLI command of a step a run ---- */

/* The CLI the harness would run: TF_ACC_TERRAFORM_PATH (absolute), else
 * terraform, else tofu on PATH; NULL when there is none or the harness
 * installs one itself (TF_ACC_TERRAFORM_VERSION). Heap. */
char *acc_real_cli(void);
/* Into dir (the run's directory): the front, an executable script named
 * like real_cli that runs `tftap run --front dir --parent parent_id [the
 * recording options of ro] -- real_cli ARGS...`, the database's name
 * (0600), and the directories for the steps' state (and the harness's
 * per-test logs when own_mask). *front_path: the script (heap). 0, or -1
 * with err saying why. */
int acc_front_write(const char *dir, const char *tftap_exe, const char *real_cli, const char *db,
                    int64_t parent_id, const struct run_opts *ro, int own_mask, char **front_path,
                    tftap_buf *err);
/* Remove what acc_front_write() made in dir (not dir). */
void acc_front_clean(const char *dir, const char *real_cli);
/* The front's side: the database its parent records into (heap), or NULL. */
char *acc_front_db(const char *dir);
/* The test the harness runs this command for, read back from TF_LOG_PATH
 * through TF_LOG_PATH_MASK (heap), or NULL when it does not say. */
char *acc_test_name(void);
/* The step of test a command in workdir belongs to (1-based; 0 when it
 * cannot be told), remembered in dir per test and test process (our
 * parent); is_init: the command is `init` (it prepares the step that
 * follows and starts none). */
int acc_step_of(const char *dir, const char *test, const char *workdir, int is_init);

/* ---- run_workdir.c: a step's working directory, kept with its run ---- */

/* What is kept of a step's working directory: at most WORKDIR_FILES_MAX
 * regular files at its top, each at most WORKDIR_FILE_MAX bytes, at most
 * WORKDIR_TOTAL_MAX in all; a file over a limit is listed without its
 * content, with a note. */
#define WORKDIR_FILES_MAX 256
#define WORKDIR_FILE_MAX (8u << 20)
#define WORKDIR_TOTAL_MAX (32u << 20)
struct workdir_file {
    char *name;
    int64_t size;
    char sha256[65];
    tftap_buf content;
    int kept;         /* content holds the file */
    const char *note; /* why not, static */
};
struct workdir_snap {
    struct workdir_file *v;
    size_t n, cap;
    int taken;
};
/* Before the command: the files at the top of workdir (the state's
 * backup and lock aside), read into w (workdir_snap_done frees). Nothing
 * readable: w holds nothing. */
void workdir_snap_take(const char *workdir, struct workdir_snap *w);
/* After the command, its record complete: w into run_id's run_files in
 * db, the files that may hold a secret listed without their content
 * (docs/acceptance-tests.md). Problems are said on stderr. */
void workdir_snap_store(const char *db, int64_t run_id, const struct workdir_snap *w);
void workdir_snap_done(struct workdir_snap *w);

/* ---- run_end.c: after the command, the record made final ---- */

/* Before the command, for the matching after it: the state the command
 * starts from, the only record of objects it may destroy or that a plan
 * not saved to a file never names. 0 if read into out ("" when there is no
 * state yet), -1 if it cannot be. env: the helpers' environment (NULL:
 * ours). */
int run_state_before(const char *cli_path, char *const *env, const char *workdir, char *const *args,
                     tftap_buf *out);

/* The configuration in workdir (the command's -chdir) as the address
 * matching reads it (analysis_match_doc): its resource blocks, and whether
 * each is certain to have one instance of that address, and the root
 * module's import blocks with literal targets and ids, as JSON into out
 * (run_config.c). test_args: the arguments of a `test` command (NULL for
 * any other): every object its run blocks make is then one of the
 * configuration's (said in the document), unless a test file reads
 * another module or cannot be read with certainty (-1). 0, or -1 when it
 * cannot be read with certainty (out empty). */
int run_config_doc(const char *workdir, char *const *test_args, tftap_buf *out);

/* The recorder processes' log beside the database (see proxy.h), heap, or
 * NULL when out of memory. */
char *run_log_path(const char *db);

/* What the end of a run needs to know of it. */
struct run_end {
    const char *db;
    int64_t run_id;   /* 0: nothing recorded under a run */
    int code;         /* the command's exit code */
    int64_t ended_us; /* when it exited */
    const char *cli_path;
    char *const *aux_env; /* the helpers' environment (NULL: ours) */
    const char *workdir;
    const char *sub;          /* the CLI's subcommand, or NULL */
    const char *planfile;     /* -out's file, absolute, or NULL */
    const char *applied_plan; /* apply PLANFILE: that file, absolute, or NULL */
    int refresh_only;         /* refresh, -refresh-only: what it planned is not applied */
    int match;                /* tie the run's calls to addresses */
    int have_before;          /* before holds the state before the command */
    const tftap_buf *before;
    int wrapped;
    const char *run_dir; /* the shims' and recorders' directory when wrapped */
    const char *log_path;
    off_t log_size;    /* the log's size when the run began */
    int is_cli;        /* the command is tofu or terraform itself */
    char *const *args; /* its arguments (after its name) */
    char *const *env;  /* its environment */
};

/* Wait for every recorder of the run, then record the run's end, report
 * its gaps and the recorders' log, tie its calls to addresses, check it
 * and record the CLI's version (*version, read from ver when NULL); or,
 * the database away, leave all that to a finisher in the background. *s:
 * the run's connection if kept open through the command, closed here. */
void run_end(const struct run_end *e, store **s, char **version, struct captured *ver);

/* The local state file the command in workdir with args uses when nothing
 * but the defaults decide where it is (no backend, no -state), read into
 * out: 0, or -1 when there is none such or it cannot be read (or is
 * encrypted). */
int run_local_state(const char *workdir, char *const *args, tftap_buf *out);

/* ---- run_replan.c ---- */

/* An apply without a plan file that failed: the plan it made, made again
 * offline against its recording (tftap replay) from the state before it,
 * as `CLI show -json` prints it, into plan; it names the creates that
 * failed among instances of count or for_each, which nothing else does.
 * Only where that plan is the same (a local state in clear, no providers
 * reattached, no arguments for the apply or the plan alone, no two calls
 * asking the same answered differently: analysis_replay_repeatable).
 * Writes nothing of the user's. 0, or -1 when there is none (plan
 * empty). */
int run_replan(const struct run_end *e, store *s, tftap_buf *plan);

/* ---- run_spans.c ---- */

/* With TFTAP_OTLP_AT_END (cli_otlp_run_env): export run_id's spans, with
 * their values as the record holds them, now that it is redacted; a
 * no-op otherwise. Problems are said on stderr. */
void run_export_spans(store *s, int64_t run_id);

/* ---- run_spool.c ---- */

/* 1 when path names a spool (run_spool_make): a run recorded into it is
 * held back (store_run_hold_back) until its end redacted it. */
int run_spool_is(const char *path);
/* A spool for the PostgreSQL record at uri (open as record): a SQLite file
 * (0600) in the record's side directory, keyed with the record's redaction
 * key: a new one of its own, or (command_key: a wrapped command's, as its
 * shims name it) the one every shim of that command opens. *path (heap).
 * 0 or a tftap error. */
int run_spool_make(store *record, const char *uri, const char *command_key, char **path);
/* After the run's end: the spool's runs copied into the record at uri and
 * the spool removed, then the spools of runs whose tftap run died
 * (redacted first by what their record tells). What cannot be copied
 * now (the server away) is tried again in the background for wait_ms;
 * what stays is said, on stderr or (to_log: a wrapped command's recorder)
 * in the recorders' log. */
void run_spool_publish(const char *uri, const char *spool, int64_t run_id, unsigned wait_ms,
                       int to_log);
/* How long the finishers in the background keep trying:
 * TFTAP_FINISH_WAIT seconds, or as long as recorders linger and a minute. */
unsigned run_finish_wait_ms(void);

/* ---- run_secrets.c ---- */

/* Redact run_id's record by what core treats as sensitive (rewrite: then
 * rewrite the file, store_scrub, which holds up every other writer of
 * it meanwhile: 0 while other recorders still write the run): what the
 * documents (the state before, `show -json` after) mark, and, for a
 * command of the CLI in workdir (NULL: none), the values its arguments,
 * variable files and environment give the variables the configuration
 * declares sensitive. Then the file is scrubbed of what the recorders
 * wrote. Problems are said on stderr, never fatal. 1 when a value of the
 * record changed (what was read of it before is stale), else 0. */
int run_redact_secrets(store *s, int64_t run_id, const char *workdir, char *const *args,
                       char *const *env, const struct analysis_match_doc *docs, size_t ndocs,
                       int rewrite);

#endif
