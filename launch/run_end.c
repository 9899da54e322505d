/* tftap run, after the command: the record made final. Every recorder of
 * the run has written what its proxy relayed before the run's end is
 * recorded, its gaps counted, its calls tied to addresses and checked; a
 * database away at that moment gets all of it later, from a finisher in the
 * background. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "launch/launch_int.h"
#include "proxy/proxy.h"
#include "recorder/recorder.h"
#include "store/store.h"

/* After the command: what the store ties calls to resource addresses by,
 * the state before it and `CLI show -json [PLANFILE]` after it (into
 * *out; partial: analysis_match_doc's, the state after may lack what it
 * planned); and the configuration's resource blocks (into *config). Runs unwrapped (env: NULL for
 * ours, or tftap replay's, whose CLI config sends the CLI straight to the replayed providers):
 * nothing of it is recorded. Problems only warn. Returns how many docs it filled. */
static size_t match_docs(const char *cli_path, char *const *env, const char *workdir,
                         const char *planfile, const char *applied_plan, int have_before,
                         const tftap_buf *before, int read_after, int partial,
                         char *const *test_args, tftap_buf *out, tftap_buf *plan, tftap_buf *config,
                         analysis_match_doc docs[4])
{
    char *argv[] = {(char *)cli_path, "show", "-json", (char *)planfile, NULL};
    size_t ndocs = 0;
    if (applied_plan != NULL) {
        /* apply PLANFILE: the plan names every instance it applies, those
         * whose apply failed (and left nothing in the state) too. */
        char *pargv[] = {(char *)cli_path, "show", "-json", (char *)applied_plan, NULL};
        int rc = capture(pargv, env, workdir, CAPTURE_MAX, plan);
        if (rc == 0 && plan->len > 0 && !tftap_buf_failed(plan))
            docs[ndocs++] = (analysis_match_doc){plan->data, plan->len, 0, 0, NULL, 0};
        else
            launch_error("could not read '%s show -json %s' to match calls to addresses", cli_path,
                         applied_plan);
    }
    if (have_before) {
        /* No state yet reads as a state without resources. */
        docs[ndocs++] = (analysis_match_doc){
            before->len ? before->data : "{}", before->len ? before->len : 2, 0, 0, NULL, 0};
    }
    if (read_after) {
        int rc = capture(argv, env, workdir, CAPTURE_MAX, out);
        if (rc == 0 && out->len > 0 && !tftap_buf_failed(out))
            docs[ndocs++] = (analysis_match_doc){out->data, out->len, 1, partial, NULL, 0};
        else
            launch_error("could not read '%s show -json' to match calls to addresses", cli_path);
    }
    /* Nothing names what a plan not saved creates but the configuration,
     * where it is certain; nor a data source read no state after holds
     * (a destroy's) but its block, where it has one instance; nor
     * anything of a `test` (its states are its own, gone at its end). */
    if (launch_config_doc(workdir, test_args, config) == 0)
        docs[ndocs++] = (analysis_match_doc){config->data, config->len, 0, 0, NULL, 0};
    return ndocs;
}

static int match_counted(store *s, int64_t run_id, const analysis_match_doc *docs, size_t ndocs,
                         int *unnamed)
{
    analysis_addresses a;
    int rc = analysis_match_addresses(s, run_id, docs, ndocs,
                                      "neither the state before the run nor a plan or state after "
                                      "it could be read",
                                      &a);
    if (rc == 0)
        rc = store_set_addresses(s, a.v, a.n);
    if (unnamed)
        *unnamed = rc == 0 ? a.unmatched : 0;
    analysis_addresses_done(&a);
    return rc;
}

static int match_apply(store *s, int64_t run_id, const analysis_match_doc *docs, size_t ndocs)
{
    return match_counted(s, run_id, docs, ndocs, NULL);
}

/* The check's reading of the run's changes, on a connection of its own
 * beside the address matching: most of the check's cost, and none of it
 * depends on the addresses the matching writes meanwhile
 * (analysis_check_read). */
struct check_reader {
    const char *db;
    int64_t run_id;
    analysis_check_pass *pass; /* NULL: not read, the check reads it all */
    pthread_t thread;
    int started;
};

static void *check_reader_main(void *arg)
{
    struct check_reader *r = arg;
    store *s = NULL;
    if (store_open(r->db, STORE_OPEN_READONLY, &s) == 0 &&
        analysis_check_read(s, r->run_id, &r->pass) != 0)
        r->pass = NULL;
    store_close(s);
    return NULL;
}

static void check_reader_start(struct check_reader *r, const char *db, int64_t run_id)
{
    *r = (struct check_reader){.db = db, .run_id = run_id};
    r->started = pthread_create(&r->thread, NULL, check_reader_main, r) == 0;
}

static analysis_check_pass *check_reader_join(struct check_reader *r)
{
    if (r->started)
        pthread_join(r->thread, NULL);
    r->started = 0;
    return r->pass;
}

/* The write-ahead log copied into the database file beside the matching:
 * it holds everything the recorders wrote, which the close at the end
 * would copy otherwise, after the rest (two syncs and the run's pages). */
struct checkpointer {
    const char *db;
    pthread_t thread;
    int started;
};

static void *checkpointer_main(void *arg)
{
    struct checkpointer *c = arg;
    store *s = NULL;
    if (store_open(c->db, 0, &s) == 0)
        (void)store_checkpoint(s); /* the close does it otherwise */
    store_close(s);
    return NULL;
}

static void checkpointer_start(struct checkpointer *c, const char *db)
{
    *c = (struct checkpointer){.db = db};
    if (!store_path_is_url(db))
        c->started = pthread_create(&c->thread, NULL, checkpointer_main, c) == 0;
}

static void checkpointer_join(struct checkpointer *c)
{
    if (c->started)
        pthread_join(c->thread, NULL);
    c->started = 0;
}

/* How long tftap run's background finisher keeps trying to record the end
 * of a run: as long as the recorders keep their part (it waits for them
 * first), and a minute more. */
#define RUN_FINISH_MS (RECORDER_LINGER_MS + 60000u)

/* How long tftap run, the database open again at the end, lets recorders
 * that found it away write what they kept (they retry every second). */
#define RUN_CATCHUP_MS 3000u

/* A bound in seconds from the environment variable `name` (0 to a day),
 * in ms; unset: default_ms; anything else says so and is default_ms. */
static unsigned env_seconds_ms(const char *name, unsigned default_ms)
{
    const char *e = getenv(name);
    if (e != NULL && e[0] != '\0') {
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(e, &end, 10);
        if (errno == 0 && end != e && *end == '\0' && v <= 86400)
            return (unsigned)v * 1000;
        launch_error("%s is not a number of seconds (0 to 86400); using %u s", name,
                     default_ms / 1000);
    }
    return default_ms;
}

/* How long the finisher keeps trying: TFTAP_FINISH_WAIT seconds, else
 * RUN_FINISH_MS. */
unsigned run_finish_wait_ms(void)
{
    return env_seconds_ms("TFTAP_FINISH_WAIT", RUN_FINISH_MS);
}

/* The finisher gave up: one line in the recorders' log (its stderr is
 * nowhere, and the user's terminal was left long ago), in their format. */
static void finish_log(const char *db, int64_t run_id, int code, const char *why)
{
    char *path = run_log_path(db);
    int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
    free(path);
    if (fd < 0)
        return;
    char text[2048];
    int k = snprintf(text, sizeof text,
                     "gave up recording the end of run %lld (exit code %d) into %s: %s",
                     (long long)run_id, code, STORE_SHOWN(db), why);
    if (k > 0)
        tftap_log_line(fd, "tftap run", text,
                       (size_t)k < sizeof text ? (size_t)k : sizeof text - 1);
    close(fd);
}

/* The finisher's redaction, before the run's end is recorded; its
 * problems are its own (said in the log), never a reason to try again. */
static int redact_later(const struct run_end *e, store *s, const analysis_match_doc *docs,
                        size_t ndocs)
{
    (void)run_redact_secrets(s, e->run_id, e->is_cli ? e->workdir : NULL, e->args, e->env, docs,
                             ndocs, 1);
    return 1;
}

/* Why the run a finisher is to end is no longer in the database s opened
 * (deleted, or the file replaced by another database, whose run of that
 * id is another run: ending it would give it this command's exit code), or
 * NULL while it is there or that cannot be told now. */
static const char *run_gone(store *s, int64_t run_id, const char *uuid)
{
    char now[STORE_UUID_LEN + 1];
    int rc = store_run_uuid(s, run_id, now);
    if (rc == TFTAP_ENOTFOUND)
        return "the run is no longer in it (deleted, or the database replaced)";
    if (rc == 0 && uuid != NULL && strcmp(now, uuid) != 0)
        return "the database was replaced: its run of that id is another run";
    return NULL;
}

/* The database was unavailable when the run ended (a PostgreSQL server
 * restarting): the user's command is over and tftap run exits with its
 * code now. A process of its own (init's child, like the recorders) waits
 * until every recorder still holding its part (lock_fds, shared locks:
 * recorder/process.c) has written it, then records the exit code, the CLI's
 * version and the addresses, trying every second for wait_ms. Takes
 * the fds. Returns 0 when the finisher started. */
static int finish_later(const struct run_end *e, const char *db, int64_t run_id, int code,
                        int64_t ended_us, const char *version, const analysis_match_doc *docs,
                        size_t ndocs, int *lock_fds, size_t nlocks, unsigned wait_ms)
{
    int detached = run_detach();
    if (detached == 0) {
        int64_t deadline = tftap_mono_ms() + wait_ms;
        (void)wrap_recorder_locks_wait_exclusive(
            lock_fds, nlocks, wait_ms < RECORDER_LINGER_MS ? wait_ms : RECORDER_LINGER_MS);
        store_hold *hold = NULL; /* the run, held until it is ended (prune leaves it) */
        for (;;) {
            store *s = NULL;
            char why[600];
            /* The exit code last: a reader who sees it sees the rest. */
            /* Matching may fail on the documents (not JSON): only a store
             * error is worth another try. */
            int rc = store_open(db, 0, &s);
            /* Nothing will bring it back: say so now, not after wait_ms. */
            const char *gone = rc == TFTAP_ENOTFOUND && !store_path_is_url(db)
                                   ? "the database file is gone"
                               : rc == 0 ? run_gone(s, run_id, e->uuid)
                                         : NULL;
            if (gone != NULL) {
                store_close(s);
                finish_log(db, run_id, code, gone);
                _exit(1);
            }
            if (rc == 0 && hold == NULL && store_hold_run(db, run_id, &hold) != 0)
                hold = NULL;
            if (rc != 0)
                snprintf(why, sizeof why, "cannot open it: %s",
                         store_path_is_url(db) && *store_open_error() ? store_open_error()
                                                                      : tftap_strerror(rc));
            else if ((ndocs == 0 || match_apply(s, run_id, docs, ndocs) != TFTAP_ESTORE) &&
                     redact_later(e, s, docs, ndocs) &&
                     (version == NULL || store_run_set_cli_version(s, run_id, version) == 0) &&
                     (rc = store_run_end_at(s, run_id, code, ended_us)) == 0) {
                run_export_spans(s, run_id);
                store_close(s);
                /* Ended and redacted: a spool's run may go to its record. */
                if (e->record != NULL)
                    run_spool_publish(e->record, db, run_id, wait_ms, 1);
                _exit(0);
            } else
                snprintf(why, sizeof why, "cannot write it: %s",
                         tftap_strerror(rc ? rc : TFTAP_ESTORE));
            store_close(s);
            if (tftap_mono_ms() >= deadline) {
                char left[700];
                snprintf(left, sizeof left, "%s (tried every second for %u s)", why,
                         wait_ms / 1000);
                finish_log(db, run_id, code, left);
                _exit(1);
            }
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
    }
    for (size_t i = 0; i < nlocks; i++)
        close(lock_fds[i]);
    return detached > 0 ? 0 : -1;
}

/* How long to wait for the recorders: TFTAP_RECORDER_WAIT seconds, 60 by
 * default. */
static unsigned recorder_wait_ms(void)
{
    return env_seconds_ms("TFTAP_RECORDER_WAIT", 60000);
}

/* One line when the recorders logged anything since the run began (lines
 * of other commands writing into the same log meanwhile count too). */
static void report_log(const char *path, off_t from)
{
    char chunk[65536], first[200] = "";
    size_t lines = 0, flen = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (lseek(fd, from, SEEK_SET) == from) {
        ssize_t n;
        while (lines < 1000000 && (n = read(fd, chunk, sizeof chunk)) > 0) {
            for (ssize_t i = 0; i < n; i++) {
                /* Shown on the terminal: no control characters from a
                 * file others' messages (a collector's, say) went into. */
                if (lines == 0 && chunk[i] != '\n' && flen + 1 < sizeof first)
                    first[flen++] =
                        (unsigned char)chunk[i] < 0x20 || chunk[i] == 0x7f ? '?' : chunk[i];
                lines += chunk[i] == '\n';
            }
        }
    }
    close(fd);
    first[flen] = '\0';
    if (lines > 0)
        launch_error("the recorders logged %zu problem(s) in %s; the first: %s", lines, path,
                     first);
}

/* "194 lost from tftest5 (recorder died ...)", joined by "; ". */
static int gap_words(void *ctx, const char *provider, const char *reason, int64_t lost)
{
    tftap_buf *b = ctx;
    if (b->len > 0)
        tftap_buf_puts(b, "; ");
    tftap_buf_printf(b, "%lld lost from %s (%s)", (long long)lost,
                     provider != NULL ? provider : "a provider",
                     reason ? reason : "no reason given");
    return 0;
}

static int run_lost(void *ctx, const store_run_row *row)
{
    *(int64_t *)ctx = row->dropped;
    return 0;
}

/* The check reads a run beside the matching when its messages are at most
 * this big. */
#define ANALYSES_BESIDE_MAX ((int64_t)256 << 20)

/* What the analyses at the end of a run got through (analyses_apart). */
enum stage { STAGE_NONE, STAGE_MATCHED, STAGE_REDACTED, STAGE_CHECKED };

static void stage_done(int fd, enum stage st)
{
    unsigned char b = (unsigned char)st;
    (void)!write(fd, &b, 1);
}

/* The run's analyses: the matching of calls to addresses, the redaction
 * of what core marks sensitive, the check's summary, the CLI's version and
 * the spans, on a connection of its own. Each stage passed is one byte on
 * stages. */
static void analyses(const struct run_end *e, store *s, int plans, int after, int partial,
                     const char *version, int stages)
{
    struct checkpointer ckpt = {0};
    checkpointer_start(&ckpt, e->db);
    struct check_reader reader = {0};
    int redacted = 0;
    if (e->match) {
        /* An apply's changes are read again after the matching (their
         * replacements are paired by address): no reading beside. */
        /* Beside it only when the values are small: the two read every
         * value at once, and a run of huge ones (a 64 MiB attribute) took
         * them to 4 GB together. */
        int64_t bytes = 0;
        if (strcmp(e->sub, "apply") != 0 && strcmp(e->sub, "destroy") != 0 &&
            store_run_message_bytes(s, e->run_id, &bytes) == 0 && bytes <= ANALYSES_BESIDE_MAX)
            check_reader_start(&reader, e->db, e->run_id);
        tftap_buf out = TFTAP_BUF_INIT, plan = TFTAP_BUF_INIT, config = TFTAP_BUF_INIT,
                  replan = TFTAP_BUF_INIT, targets = TFTAP_BUF_INIT;
        analysis_match_doc docs[5];
        int tests = strcmp(e->sub, "test") == 0, unnamed = 0;
        struct run_retest retest = {0};
        analysis_match_doc *all = NULL; /* docs and the test's run again */
        size_t nall = 0;
        size_t ndocs = match_docs(e->cli_path, e->aux_env, e->workdir, plans ? e->planfile : NULL,
                                  e->applied_plan, e->have_before, e->before, after, partial,
                                  tests ? e->args : NULL, &out, &plan, &config, docs);
        if (match_counted(s, e->run_id, docs, ndocs, &unnamed) != 0)
            launch_error("matching calls to addresses failed: %s", store_errmsg(s));
        else if (unnamed > 0 && ndocs < 5 && run_replan(e, s, &config, &replan, &targets) == 0) {
            /* The new objects of a plan not saved, a failed apply's
             * creates: no document names them but their plan, made again. */
            docs[ndocs++] = (analysis_match_doc){
                replan.data, replan.len, 0, 0, targets.len ? tftap_buf_cstr(&targets) : NULL, 0};
            if (match_apply(s, e->run_id, docs, ndocs) != 0)
                launch_error("matching calls to addresses failed: %s", store_errmsg(s));
        } else if (unnamed > 0 && tests && run_retest(e, s, &retest) == 0 &&
                   (all = malloc((ndocs + retest.n) * sizeof *all)) != NULL) {
            /* A test's instances of count or for_each: no document names
             * them but its run blocks' plans and states, run again. */
            memcpy(all, docs, ndocs * sizeof *all);
            memcpy(all + ndocs, retest.docs, retest.n * sizeof *all);
            nall = ndocs + retest.n;
            if (match_apply(s, e->run_id, all, nall) != 0)
                launch_error("matching calls to addresses failed: %s", store_errmsg(s));
        }
        stage_done(stages, STAGE_MATCHED);
        /* After the matching, which compares the values in clear, and
         * the checkpoint beside it, which would keep the log from being
         * emptied. */
        checkpointer_join(&ckpt);
        redacted = run_redact_secrets(s, e->run_id, e->is_cli ? e->workdir : NULL, e->args, e->env,
                                      all ? all : docs, all ? nall : ndocs, 1);
        free(all);
        run_retest_done(&retest);
        tftap_buf_done(&out);
        tftap_buf_done(&plan);
        tftap_buf_done(&config);
        tftap_buf_done(&replan);
        tftap_buf_done(&targets);
    } else if (e->is_cli) {
        checkpointer_join(&ckpt);
        redacted = run_redact_secrets(s, e->run_id, e->workdir, e->args, e->env, NULL, 0, 1);
    } else {
        /* Not a CLI command (go test, make): nothing tells its core's
         * marks; what the schemas marked is redacted already. */
        (void)store_run_hold_back(s, e->run_id, 0);
    }
    stage_done(stages, STAGE_REDACTED);
    analysis_check_pass *read = check_reader_join(&reader);
    if (redacted && read) {
        /* Read before the redaction: the check reads the record as kept. */
        analysis_check_pass_free(read);
        read = NULL;
    }
    run_check_summary(s, e->run_id, read);
    analysis_check_pass_free(read);
    stage_done(stages, STAGE_CHECKED);
    if (version != NULL)
        (void)store_run_set_cli_version(s, e->run_id, version); /* for display only */
    run_export_spans(s, e->run_id);
    checkpointer_join(&ckpt);
}

/* The analyses in a process of their own: they read every value the run
 * recorded, and a run of huge values (a 64 MiB attribute) takes them to
 * gigabytes. Should the kernel kill them for memory (they ask to be its
 * first choice) or should they crash, tftap run still exits with the
 * command's code, and says what is missing. */
static void analyses_apart(const struct run_end *e, int plans, int after, int partial,
                           const char *version)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        launch_error("cannot analyse run %lld: pipe: %s", (long long)e->run_id, strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        prctl(PR_SET_NAME, "tftap-analyses"); /* for top, and the kernel's choice */
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, "1000", 4);
            close(fd);
        }
        store *s = NULL;
        int rc = store_open(e->db, 0, &s);
        if (rc == 0)
            analyses(e, s, plans, after, partial, version, p[1]);
        else
            launch_error("cannot analyse run %lld: %s: %s", (long long)e->run_id,
                         STORE_SHOWN(e->db), tftap_strerror(rc));
        store_close(s);
        fflush(NULL);
        _exit(rc == 0 ? 0 : 1);
    }
    close(p[1]);
    if (pid < 0) {
        launch_error("cannot analyse run %lld: fork: %s", (long long)e->run_id, strerror(errno));
        close(p[0]);
        return;
    }
    enum stage reached = STAGE_NONE;
    unsigned char b;
    ssize_t n;
    while ((n = read(p[0], &b, 1)) != 0)
        if (n == 1 && b > reached)
            reached = (enum stage)b;
        else if (n < 0 && errno != EINTR)
            break;
    close(p[0]);
    int wst = 0;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
        ;
    if (!WIFSIGNALED(wst))
        return;
    static const char *missing[] = {
        [STAGE_NONE] = "the calls' addresses, the redaction of values core marks sensitive "
                       "(they may be in clear in the record) and the check",
        [STAGE_MATCHED] = "the redaction of values core marks sensitive (they may be in clear "
                          "in the record) and the check",
        [STAGE_REDACTED] = "the check's summary",
        [STAGE_CHECKED] = "the CLI's version and the spans",
    };
    int sig = WTERMSIG(wst);
    launch_error("the analyses at the end of run %lld were cut off by signal %d (%s%s): %s %s "
                 "missing; `tftap check %lld` reads the record",
                 (long long)e->run_id, sig, strsignal(sig),
                 sig == SIGKILL ? ", out of memory?" : "", missing[reached],
                 reached == STAGE_REDACTED || reached == STAGE_CHECKED ? "is" : "are",
                 (long long)e->run_id);
}

int run_end(const struct run_end *e, store **s, char **version, struct captured *ver)
{
    /* The record is final only once every recorder has written what its
     * proxy relayed: the run's end, its gaps and the address matching
     * come after. */
    if (e->wrapped)
        wrap_recorders_wait(e->run_dir, recorder_wait_ms(), 1000);
    if (e->log_path != NULL)
        report_log(e->log_path, e->log_size);

    if (e->run_id > 0) {
        int64_t lost = 0;
        /* A saved plan exists only when planning succeeded; any other
         * command may have changed the state, even when it failed. */
        int plans = e->match && strcmp(e->sub, "plan") == 0;
        /* `test`: nothing after it holds what its run blocks made (the
         * working directory's state is not theirs). */
        int tests = e->match && strcmp(e->sub, "test") == 0;
        int after = plans ? e->planfile != NULL && (e->code == 0 || e->code == 2) : tests ? 0 : 1;
        /* A state after that need not hold what the run planned: a failed
         * command's (1), or a refresh's (2: it plans, and applies only what
         * it read). */
        int partial = e->refresh_only ? 2 : !plans && e->code != 0;
        int opened = *s != NULL || store_open(e->db, 0, s) == 0;
        /* A recorder that found the database refusing its writes (away, or
         * its disk full) holds its part under a shared lock and retries
         * every second: give it a moment to write it (a server back), and
         * while one still holds data the run is not over in the record. */
        size_t held = 0;
        if (e->wrapped) {
            int *fds = NULL;
            size_t nfds = wrap_recorder_locks_open(e->run_dir, &fds);
            held = wrap_recorder_locks_wait_exclusive(fds, nfds, opened ? RUN_CATCHUP_MS : 0);
            free(fds);
        }
        int ended =
            opened && held == 0 && store_run_end_at(*s, e->run_id, e->code, e->ended_us) == 0;
        if (opened && !ended && held == 0) {
            /* A connection kept through a long command may have gone (a
             * server restarted meanwhile): once more on a fresh one. */
            store_close(*s);
            *s = NULL;
            opened = store_open(e->db, 0, s) == 0;
            ended = opened && store_run_end_at(*s, e->run_id, e->code, e->ended_us) == 0;
        }
        /* Reads but does not take writes (its disk full), or away? A kept
         * connection may have gone with its server. */
        int reachable =
            ended || (opened && *s != NULL && store_run_get(*s, e->run_id, run_lost, &lost) == 0);
        if (!ended) {
            /* Unavailable (a server restarting): never the user's problem
             * beyond this line; the rest is written when it is back. */
            tftap_buf out = TFTAP_BUF_INIT, plan = TFTAP_BUF_INIT, config = TFTAP_BUF_INIT;
            analysis_match_doc docs[4];
            size_t ndocs = e->match ? match_docs(e->cli_path, e->aux_env, e->workdir,
                                                 plans ? e->planfile : NULL, e->applied_plan,
                                                 e->have_before, e->before, after, partial,
                                                 tests ? e->args : NULL, &out, &plan, &config, docs)
                                    : 0;
            store_close(*s);
            *s = NULL;
            if (*version == NULL)
                *version = run_version_finish(e->cli_path, ver);
            int *fds = NULL;
            size_t nfds = e->wrapped ? wrap_recorder_locks_open(e->run_dir, &fds) : 0;
            unsigned wait_ms = run_finish_wait_ms();
            if (finish_later(e, e->db, e->run_id, e->code, e->ended_us, *version, docs, ndocs, fds,
                             nfds, wait_ms) != 0)
                launch_error("cannot record the exit code into %s", STORE_SHOWN(e->db));
            else if (held > 0 && reachable)
                launch_error("the record of run %lld is not complete yet: %zu recorder%s still "
                             "hold%s calls %s did not take (its disk full, or unavailable); "
                             "they keep trying, and the run is ended in the record once they "
                             "have written them (for up to %u %s, in the background)",
                             (long long)e->run_id, held, held == 1 ? "" : "s", held == 1 ? "s" : "",
                             STORE_SHOWN(e->db),
                             wait_ms >= 60000 ? wait_ms / 60000 : wait_ms / 1000,
                             wait_ms >= 60000 ? "min" : "s");
            else
                launch_error(
                    "cannot record the end of run %lld into %s now: it is recorded when "
                    "the database is back (tftap keeps trying for %u %s in the background)",
                    (long long)e->run_id, STORE_SHOWN(e->db),
                    wait_ms >= 60000 ? wait_ms / 60000 : wait_ms / 1000,
                    wait_ms >= 60000 ? "min" : "s");
            free(fds);
            tftap_buf_done(&out);
            tftap_buf_done(&plan);
            tftap_buf_done(&config);
            return 1;
        }
        if (store_run_get(*s, e->run_id, run_lost, &lost) == 0 && lost > 0) {
            /* The recorders' own warnings go to their log, not to the
             * terminal: say it here, once, with each reason. */
            tftap_buf why = TFTAP_BUF_INIT;
            (void)store_run_gaps_each(*s, e->run_id, gap_words, &why);
            launch_error("the record of run %lld has gaps: %s (tftap runs)", (long long)e->run_id,
                         why.len > 0 ? tftap_buf_cstr(&why) : "events lost");
            tftap_buf_done(&why);
        }
        if (*version == NULL)
            *version = run_version_finish(e->cli_path, ver);
        store_close(*s); /* no connection crosses the fork */
        *s = NULL;
        analyses_apart(e, plans, after, partial, *version);
    }
    return 0;
}
