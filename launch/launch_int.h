/* launch: what launch_run (run.c) shares with the files beside it: the
 * child processes it starts besides the user's command (run_child.c), the
 * providers it starts itself with --reattach (run_reattach.c), the end
 * of the run, once the command is over (run_end.c), the recorders' locks
 * (recwait.c). Private to launch/. */
#ifndef TFTAP_LAUNCH_LAUNCH_INT_H
#define TFTAP_LAUNCH_LAUNCH_INT_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "launch/launch.h"
#include "analysis/analysis.h"
#include "common/common.h"
#include "store/store.h"

struct analysis_match_doc;

/* How much of `CLI show -json` (a large state: LAUNCH_DOC_MAX) and `CLI
 * version -json` is kept. */
#define CAPTURE_MAX LAUNCH_DOC_MAX
#define VERSION_MAX (64u << 10)

/* Print "tftap: <message>" on stderr: what the run could not do, said
 * to the user (launch.h: one line a problem). */
void launch_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- wrap.c: what replay.c and run.c use of it besides launch.h ---- */

/* Put copies of n providers in place of set's (tftap replay: the recorded
 * providers stand in for whatever the directory uses); the user's config
 * stays. 0 or TFTAP_ENOMEM. */
int launch_providers_replace(struct launch_providers *set, const struct launch_provider *v,
                             size_t n);

/* Only the CLI config of launch_wrap_write(): dir/tftap.tfrc, the user's CLI
 * config with dev_overrides pointing every provider of set at dir/p<i>
 * (where the caller put executables of its own). Returns as launch_wrap_write. */
int launch_wrap_write_config(const struct launch_providers *set, const char *dir,
                             char **config_path, tftap_buf *err);

/* Remove what launch_wrap_write() wrote in dir (not dir itself). */
void launch_wrap_clean(const struct launch_providers *set, const char *dir);

/* A new directory of ours (0700), $TMPDIR/tftap-NAME-XXXXXX (/tmp when
 * TMPDIR is unset or empty): its path (free()), or NULL with errno. */
char *launch_tempdir(const char *name);

/* "a/b" (free()), or NULL on ENOMEM. */
char *launch_joinpath(const char *a, const char *b);

/* ---- what a shim uses (shim.c, wrap_run.c, recwait.c, otlp_opts.c) ---- */

/* 1 when path is the running tftap executable itself (same device and
 * inode, whatever the path says), else 0. */
int launch_is_self(const char *path);

/* When path is a tftap shim (a "#!" script that runs `tftap shim`, with
 * tftap-shim.json beside it), that json's path (free()); else NULL. */
char *launch_shim_meta_path(const char *path);

/* ---- knowing when a run's record is complete (launch/recwait.c) ----
 * `tftap run` names a directory in TFTAP_RUN_DIR; each proxy of the run
 * takes a lock file there (launch_recorder_lock(), in the process that then
 * calls proxy_run() with the fd as recorder_hold_fd) which its recorder
 * process holds until it has written everything. */

/* Create and lock (flock, exclusive) a lock file in run_dir naming provider.
 * Returns its fd (close-on-exec), or -1 (errno set). */
int launch_recorder_lock(const char *run_dir, const char *provider);

struct otlp_config;
/* The span export a shim does: from meta_url (tftap wrap --otlp), else
 * TFTAP_OTLP, else the OTEL_EXPORTER_OTLP_* variables; parented under
 * TRACEPARENT; values when meta_values (tftap wrap --otlp-values) or
 * TFTAP_OTLP_VALUES=1; the resource from OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES. 1 and *oc filled (its strings borrowed from the
 * environment, but the endpoint, which *owned holds: free()), or 0 when no
 * spans are wanted. */
int launch_otlp_config(const char *meta_url, int meta_values, struct otlp_config *oc, char **owned);

/* ---- recwait.c: the recorders' locks (launch_recorder_lock) ---- */

/* Wait until every lock file in run_dir is free, at most timeout_ms; after
 * progress_ms says once on stderr how many are left, and on giving up says
 * which. Returns how many were still held. */
size_t wrap_recorders_wait(const char *run_dir, unsigned timeout_ms, unsigned progress_ms);

/* Remove the lock files from run_dir. */
void wrap_recorder_locks_clean(const char *run_dir);
/* The recorder processes' log beside the database (see proxy.h), heap, or
 * NULL when out of memory. */
char *run_log_path(const char *db);
/* For a waiter that outlives run_dir: its lock files, opened (heap array
 * in *fds; returns how many). */
size_t wrap_recorder_locks_open(const char *run_dir, int **fds);
/* Wait until each lock can be taken exclusively: a recorder that found the
 * database unavailable holds its lock shared (wrap_recorders_wait is done
 * with it) until it has written the rest or given up. Closes the fds;
 * returns how many were still held after timeout_ms. */
size_t wrap_recorder_locks_wait_exclusive(int *fds, size_t n, unsigned timeout_ms);

/* ---- otlp_opts.c ---- */

/* Put url (--otlp, when not NULL) in the environment as TFTAP_OTLP for
 * the shims (and values, --otlp-values, as TFTAP_OTLP_VALUES=1), and, when
 * spans are exported and the CLI gave no TRACEPARENT, one
 * TFTAP_OTLP_TRACE_ID for all of this run's spans. Spans with values and
 * at_end: TFTAP_OTLP_AT_END=1, the shims export nothing and the end of the
 * run exports the run's spans from its record once it is redacted
 * (run_export_spans). */
void run_otlp_env(const char *url, int values, int at_end);

/* ---- cli_version.c: the CLI binary's version, remembered ---- */

/* A CLI binary's version as a run recorded it before, remembered by the
 * binary's identity (NULL: not known; heap), and remembering one. Best
 * effort: nothing is said when the cache cannot be read or written. */
char *run_version_remembered(const char *cli_path);
void run_version_remember(const char *cli_path, const char *version);

/* ---- run_check.c ---- */

/* After the run: one "tftap: N provider contract violations; see tftap
 * check last" line on stderr when the run broke any rule, else nothing (a
 * database that cannot be read says nothing either: it never changes the
 * command's output or exit status). read: the run's changes as
 * analysis_check_read read them while the addresses were matched, or NULL
 * (read here). */
void run_check_summary(store *s, int64_t run_id, analysis_check_pass *read);

/* ---- run_child.c ---- */

/* An environment like ours with the given variables set (name=value
 * strings, replacing ours). The array is heap; its strings are borrowed
 * except the new ones, which the caller keeps alive. NULL: out of memory. */
char **run_env_with(char *const *add, size_t nadd);

/* A command started with its stdout into a pipe, read and reaped later
 * (capture_finish). */
struct captured {
    pid_t pid; /* 0: not started */
    int fd;
};

/* Its stdout into out (at most max bytes kept), then its exit status as
 * launch_run gives it, or -1 when it was not started. */
int capture_finish(struct captured *c, size_t max, tftap_buf *out);
/* Both at once. */
int capture(char *const *argv, char *const *env, const char *dir, size_t max, tftap_buf *out);
/* Go on in the background, as a process of its own that nobody waits for
 * (setsid, SIGINT, SIGHUP and SIGPIPE ignored, stdio on /dev/null): 0 in
 * that process (which must _exit), 1 in the caller once it is started,
 * -1 if it could not be. */
int run_detach(void);

/* `CLI version -json`, started (the CLI's start-up is most of its cost:
 * it runs beside tftap's own work after the command) and read later: the
 * version it printed, or NULL, remembered for the next run
 * (cli_version.c). A CLI not started (c->pid 0) is read as nothing. */
void run_version_start(const char *cli_path, struct captured *c);
char *run_version_finish(const char *cli_path, struct captured *c);

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
/* Once the command has exited with code: a SIGBUS (what SQLite's mapped
 * -shm file gives a write the file refuses) ends tftap run with one line
 * and code, instead of a crash whose status the caller would read as the
 * command's. */
void run_signals_keep_code(int code);

/* ---- run_reattach.c: --reattach, tftap starts each provider itself ---- */

struct reattached {
    pid_t pid;
    int stop_w; /* write end of the stop pipe, -1 once closed */
};

/* Start every provider of set behind a proxy recording into run_id; fills
 * json with the value of TF_REATTACH_PROVIDERS. On failure everything
 * started is stopped again and err says why. */
int reattach_start(const struct launch_providers *set, const struct launch_wrap_opts *o,
                   int64_t run_id, const char *run_dir, struct reattached *r, tftap_buf *json,
                   tftap_buf *err);
/* How many providers a TF_REATTACH_PROVIDERS value names (0 when it is
 * unset or unreadable). */
size_t reattach_count(const char *reattach_json);
/* A relay, recording into run_id, in front of each provider that
 * reattach_json (TF_REATTACH_PROVIDERS) names: each dials the provider
 * where it already listens (it is not started); fills json with the same
 * value pointing at the relays. r holds room for reattach_count() entries;
 * *nr receives how many were started. On failure everything started is
 * stopped again and err says why. */
int reattach_attach_start(const char *reattach_json, const struct launch_wrap_opts *o,
                          int64_t run_id, const char *run_dir, struct reattached *r, size_t *nr,
                          tftap_buf *json, tftap_buf *err);
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
                    int64_t parent_id, const struct launch_run_opts *ro, int own_mask,
                    char **front_path, tftap_buf *err);
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

/* ---- run_state.c: the state a command starts from ---- */

/* Before the command, for the matching after it: the state the command
 * starts from, the only record of objects it may destroy or that a plan
 * not saved to a file never names. 0 if read into out ("" when there is no
 * state yet), -1 if it cannot be. env: the helpers' environment (NULL:
 * ours). */
int run_state_before(const char *cli_path, char *const *env, const char *workdir, char *const *args,
                     tftap_buf *out);

/* The local state file the command in workdir with args uses when nothing
 * but the defaults decide where it is (no backend, no -state), read into
 * out: 0 (out empty when there is no such file yet), or -1 when the state
 * is not such a file or it cannot be read (or is encrypted). */
int run_local_state(const char *workdir, char *const *args, tftap_buf *out);

/* The command's directory and arguments as its run recorded them
 * (runs.cwd, runs.args), for redacting a run after it. */
struct run_words {
    char *cwd;
    char **args; /* NULL-terminated, or NULL */
    size_t n;
};
/* 0 with w filled (run_words_done frees), else a store error. */
int run_words_read(store *s, int64_t run_id, struct run_words *w);
void run_words_done(struct run_words *w);

/* ---- run_end.c: after the command, the record made final ---- */

/* What the end of a run needs to know of it. */
struct run_end {
    const char *db;
    int64_t run_id;   /* 0: nothing recorded under a run */
    const char *uuid; /* the run's runs.uuid, or NULL: which run run_id names */
    int code;         /* the command's exit code */
    int64_t ended_us; /* when it exited */
    const char *cli_path;
    char *const *aux_env; /* the helpers' environment (NULL: ours) */
    int replayed;         /* tftap replay's: its providers answer from a recording */
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
    /* db is a spool holding the run back from this PostgreSQL record (URI),
     * or NULL: a finisher copies the run into it once it has ended it */
    const char *record;
};

/* Wait for every recorder of the run, then record the run's end, report
 * its gaps and the recorders' log, tie its calls to addresses, check it
 * and record the CLI's version (*version, read from ver when NULL); or,
 * the database away, leave all that to a finisher in the background
 * (returns 1; it also copies a spool's run into e->record then), else 0.
 * *s: the run's connection if kept open through the command, closed here. */
int run_end(const struct run_end *e, store **s, char **version, struct captured *ver);

/* ---- run_replan.c ---- */

/* A plan not saved (no -out) that succeeded, or an apply without a plan
 * file that failed: the plan it made, made again offline against its
 * recording (tftap replay) from the state before it, as `CLI show -json`
 * prints it, into plan; it names the new objects of count or for_each
 * (and the creates that failed among them), which nothing else does.
 * Only where that plan is the same (a local state in clear, no providers
 * reattached, no arguments for the apply or the plan alone, no two calls
 * asking the same answered differently: analysis_replay_repeatable).
 * config: the configuration as run_config_doc reads it (empty: not
 * read); when read, only its blocks of the types whose calls are still
 * unnamed are planned again (-target), said in targets (one address a
 * line; empty: the whole plan), analysis_match_doc's targets. Writes
 * nothing of the user's. 0, or -1 when there is none (plan empty). */
int run_replan(const struct run_end *e, store *s, const tftap_buf *config, tftap_buf *plan,
               tftap_buf *targets);
/* The head of a command that runs the CLI again offline against the run's
 * recording (`tftap replay DB --run N --no-record [--claims DIR] -- CLI`;
 * self: this program, run_id: N as text, claims: DIR or NULL) into argv,
 * which has room for 10: how many it put. The command's own words follow
 * (run_replan, run_retest). */
size_t run_replay_argv(const struct run_end *e, char *self, char *run_id, char *claims,
                       char **argv);

/* ---- run_retest.c ---- */

/* What a `test` run again printed: a group of documents per run block
 * (analysis_match_doc): its plan or state, and the state it started from
 * (its file's last state before it); and each test file's last state as
 * the state before the destroy at its end. */
struct run_retest {
    analysis_match_doc *docs;
    size_t n;
    tftap_buf text; /* the documents' text */
};

/* A `tofu test` (or `terraform test`) that exited 0 or 1, run again
 * offline against its recording (tftap replay --no-record, its arguments
 * and -json -verbose, in its working directory): its run blocks' plans and
 * states into out. Only where the run is the same again (its CLI's own
 * providers, none reattached, the configuration and test files read with
 * certainty, no two calls asking the same answered differently:
 * analysis_replay_repeatable_applies) and came out the same (its exit
 * code, no call the recording could not answer, no run block in error).
 * Writes nothing of the user's. 0, or -1 when there is none (out empty). */
int run_retest(const struct run_end *e, store *s, struct run_retest *out);
void run_retest_done(struct run_retest *r);

/* ---- run_spans.c ---- */

/* With TFTAP_OTLP_AT_END (run_otlp_env): export run_id's spans, with
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

/* ---- replay_claims.c ---- */

/* 1 when the replay using the claims directory (tftap replay --claims)
 * went out of step with its recording, else 0. */
int launch_claims_out_of_step(const char *claims);
/* 1 when the directory is empty or missing (a replay may start with it). */
int launch_claims_empty(const char *claims);
/* The same as launch_claims_out_of_step, and the directory removed. */
int launch_claims_finish(const char *claims);

/* What `tftap replay` says when its processes left the recording's steps
 * (replay.h, REPLAY_CLAIMS_OUT_OF_STEP). */
#define LAUNCH_REPLAY_OUT_OF_STEP                                                                  \
    "replay: the replaying providers' processes did not keep in step with the recorded ones: "     \
    "two calls that asked the same may have been given each other's answers (docs/replay.md)"

#endif
