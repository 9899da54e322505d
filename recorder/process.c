/* recorder: the recorder in a process of its own.
 *
 * go-plugin's client gives a plugin two seconds after Shutdown to exit (and
 * waits for EOF on its stdout and stderr) before it sends SIGKILL. Flushing
 * a large record into SQLite can take longer than that, so the recorder does
 * not live in the process the client waits for: it is forked before any
 * thread exists, reads events from a pipe (pipe.c) into the store's
 * recorder, and flushes and exits when the pipe closes, however long that
 * takes. The relay's process only ever writes into the pipe (from the tee
 * thread); when the recorder is behind it stops reading, and the tee's
 * queue takes the rest (and drops past its bound). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "recorder/recorder_int.h"

/* The recorder's niceness. Its work can always wait (the record is
 * written in the end, the queue is bounded) and the relay's, the client's
 * and the provider's cannot: on a machine with few cores, a recorder at the
 * same priority takes turns with them mid-call. */
#define RECPROC_NICE 10

/* How long the recorder process stops reading the pipe when its share of
 * the budget is full before it drops instead: the relay's process must be
 * able to write out its tee and exit within go-plugin's two seconds. */
#define RECPROC_BLOCK_MS 1000

/* How long the recorder process, its record written, keeps trying to send
 * the last spans to an OTLP receiver before it drops them (counted). */
#define RECPROC_OTLP_FLUSH_MS 5000

/* ---- the recorder process's log --------------------------------------------
 * Its lines go, prefixed with the time, the pid and the provider, to
 * RECORDER_LOG_NAME beside the database: the provider's stderr is the CLI's
 * plugin log, which nobody reads, and the terminal is the user's. The
 * recorder, the span exporter and this file say what they have to say
 * through reclog(); the process's stderr is /dev/null. The file is opened
 * at the first line: no problems, no file. */
static struct reclog {
    char *path;
    const char *provider;
    int fd;
    pthread_mutex_t lock; /* the recorder's threads and the exporter's */
} the_log = {NULL, NULL, -1, PTHREAD_MUTEX_INITIALIZER};

static void reclog_line(const char *text)
{
    struct reclog *l = &the_log;
    pthread_mutex_lock(&l->lock);
    if (l->fd < 0 && l->path != NULL) {
        l->fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (l->fd < 0) {
            free(l->path); /* nowhere to write: dropped */
            l->path = NULL;
        }
    }
    if (l->fd >= 0)
        tftap_log_line(l->fd, l->provider ? l->provider : "recorder", text, strlen(text));
    pthread_mutex_unlock(&l->lock);
}

static void reclog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reclog(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    reclog_line(line);
}

/* The recorder's and the exporter's lines (opts.log, otlp_config.log). */
static void reclog_from(void *ctx, const char *line)
{
    (void)ctx; /* the log's lines already name the provider */
    reclog_line(line);
}

/* Where the lines go: the log beside db. Failing costs only the messages. */
static void reclog_start(const char *db, const char *provider)
{
    size_t dirlen = 0;
    const char *dir = store_side_dir(db, &dirlen);
    the_log.provider = provider;
    the_log.path = malloc(dirlen + sizeof "/" RECORDER_LOG_NAME + 1);
    if (the_log.path == NULL)
        return;
    if (dir)
        memcpy(the_log.path, dir, dirlen);
    else
        the_log.path[dirlen++] = '.';
    memcpy(the_log.path + dirlen, "/" RECORDER_LOG_NAME, sizeof "/" RECORDER_LOG_NAME);
}

/* A run shared by the provider processes of one CLI command: this
 * recorder's part is written; the last one to leave ends the run. */
void recorder_proc_leave_run(const char *db, int64_t run_id)
{
    store *s = NULL;
    int rc = store_open(db, 0, &s);
    if (rc == 0)
        rc = store_run_leave(s, run_id);
    if (rc != 0)
        reclog("cannot record the end of run %lld in %s: %s", (long long)run_id, STORE_SHOWN(db),
               tftap_strerror(rc));
    store_close(s);
}

/* The sink of the pipe's reader: the recorder, whose first stage decodes
 * in the reader's thread and in blocking mode makes it wait while its share
 * of the budget is full, so the pipe fills and the tee (the one place that
 * drops) holds the rest. Spans are made as calls are decoded (on_call below), from each
 * call's final decoded image: the same call, sizes, type and status the
 * record holds, and its values redacted as stored. */
struct recsink {
    recorder *rec;
    otlp_exporter *ox;
    const char *provider, *version;
    char *spill_dir;       /* where the shim's big messages are (recorder_spill_dir) */
    uint64_t begun, ended; /* calls, to count those a dying shim cut off */
    int bye;               /* the shim ended on purpose */
};

static void on_process(void *ctx, const char *provider, const char *version, const char *binary,
                       int protocol, int pid)
{
    struct recsink *k = ctx;
    recorder_process(k->rec, provider, version, binary, protocol, pid);
}

static void on_begin(void *ctx, uint64_t call_id, const char *method, int64_t t_us)
{
    struct recsink *k = ctx;
    k->begun++;
    recorder_call_begin(k->rec, call_id, method, t_us);
}

static void on_message(void *ctx, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                       uint8_t *bytes, size_t len)
{
    struct recsink *k = ctx;
    recorder_message_take(k->rec, call_id, dir, t_us, bytes, len);
}

static void on_spilled(void *ctx, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                       const char *name)
{
    struct recsink *k = ctx;
    tftap_buf path = TFTAP_BUF_INIT;
    tftap_buf_printf(&path, "%s/%s", k->spill_dir ? k->spill_dir : ".", name);
    if (tftap_buf_failed(&path) || k->spill_dir == NULL) {
        tftap_buf_done(&path);
        recorder_lost(k->rec, 1, RECORDER_LOST_SPILL_FAILED);
        return;
    }
    recorder_message_file(k->rec, call_id, dir, t_us, tftap_buf_take(&path, NULL));
}

static void on_end(void *ctx, uint64_t call_id, int64_t t_us, int status, const char *message)
{
    struct recsink *k = ctx;
    k->ended++;
    recorder_call_end(k->rec, call_id, t_us, status, message);
}

static void on_start_failed(void *ctx, const char *why)
{
    struct recsink *k = ctx;
    recorder_start_failed(k->rec, why);
}

static void on_bye(void *ctx)
{
    ((struct recsink *)ctx)->bye = 1;
}

static void on_lost(void *ctx, uint64_t n, enum recorder_lost why)
{
    struct recsink *k = ctx;
    recorder_lost(k->rec, n, why);
}

/* A call recorded: its span (the exporter only queues, bounded, never
 * waits). */
static void on_call(void *ctx, const recorder_call_summary *c)
{
    struct recsink *k = ctx;
    if (k->ox == NULL || c->method == NULL || c->method[0] == '\0')
        return;
    tftap_buf first = TFTAP_BUF_INIT;
    int errors = 0;
    if (c->status == 0 && c->response_json != NULL)
        errors = otlp_error_diagnostics(c->response_json, strlen(c->response_json), &first);
    recorder_stats st;
    recorder_get_stats(k->rec, &st);
    otlp_span sp = {
        .method = c->method,
        .provider = k->provider,
        .version = k->version,
        .type = c->type_name,
        .status_message = c->status_message,
        .error_count = errors,
        .error_summary = first.len ? tftap_buf_cstr(&first) : NULL,
        .request_json = c->request_value,
        .response_json = c->response_value,
        .request_withheld = c->request_withheld,
        .response_withheld = c->response_withheld,
        .start_us = c->started_us,
        .end_us = c->ended_us,
        .grpc_status = c->status,
        .request_bytes = (uint64_t)c->request_bytes,
        .response_bytes = (uint64_t)c->response_bytes,
        .call_id = (uint64_t)c->call_seq,
        .run_id = st.run_id,
    };
    otlp_exporter_add(k->ox, &sp);
    tftap_buf_done(&first);
}

/* The recorder process's whole life: events until EOF, then flush. A
 * recorder that cannot start still drains the pipe, so the tee never
 * blocks on it. Returns the span exporter, still sending, or NULL. */
static otlp_exporter *recorder_main(int fd, int hold, const char *db, const recorder_opts *opts,
                                    const recorder_proc *rp, int later, int64_t *process_row)
{
    recorder_opts o = *opts;
    o.max_queue_bytes = RECORDER_PROCESS_MAX_BYTES;
    o.block_ms = RECPROC_BLOCK_MS;
    o.linger_ms = RECORDER_LINGER_MS;
    struct recsink k = {.provider = rp->provider, .version = rp->version};
    /* The exporter first: spans are made as soon as calls are decoded. */
    if (rp->otlp != NULL) {
        otlp_config oc = *rp->otlp;
        oc.log = reclog_from;
        oc.log_ctx = NULL;
        int rc = otlp_exporter_open(&oc, &k.ox);
        if (rc != 0)
            reclog("otlp: cannot export spans to %s: %s", oc.endpoint ? oc.endpoint : "(none)",
                   tftap_strerror(rc));
        if (k.ox != NULL && !later) {
            o.on_call = on_call;
            o.on_call_ctx = &k;
            o.on_call_values = oc.values;
        }
    }
    o.log = reclog_from;
    o.log_ctx = NULL;
    if (recorder_open(db, &o, &k.rec) != 0)
        k.rec = NULL;
    k.spill_dir = recorder_spill_dir(db);
    recorder_pipe_sink sink = {&k,      on_process, on_begin,        on_message, on_end,
                               on_lost, on_bye,     on_start_failed, on_spilled};
    (void)recorder_pipe_read(fd, RECORDER_MESSAGE_MAX, &sink);
    if (!k.bye) /* the shim died: we outlived it, the gap is ours to write */
        recorder_lost(k.rec, k.begun > k.ended ? k.begun - k.ended : 0, RECORDER_LOST_SHIM_DIED);
    if (recorder_drain(k.rec) != 0 && hold >= 0) {
        /* The database is unavailable: whoever waits for the record (tftap
         * run, its bounded wait) must not wait for it to come back. The
         * lock becomes shared, which that wait takes; an exclusive one
         * (tftap run's background finisher, launch/recwait.c) still waits
         * until the rest is written or given up. */
        reclog("%s is unavailable: the record of this provider process is written when it "
               "comes back (trying for %u s)",
               STORE_SHOWN(db), RECORDER_LINGER_MS / 1000);
        (void)flock(hold, LOCK_SH);
    }
    if (k.rec) {
        recorder_stats st;
        recorder_get_stats(k.rec, &st);
        *process_row = st.process_row;
    }
    recorder_close(k.rec); /* its last spans are queued by now */
    free(k.spill_dir);
    return k.ox;
}

int recorder_proc_start(const char *db, const recorder_opts *opts, recorder_proc *rp,
                        tftap_buf *err)
{
    int p[2];
    rp->pid = -1;
    rp->fd = -1;
    if (pipe2(p, O_CLOEXEC) != 0) {
        if (err)
            tftap_buf_printf(err, "pipe: %s", strerror(errno));
        return TFTAP_EIO;
    }
    /* Bigger batches per write; failure only costs speed. */
    (void)fcntl(p[1], F_SETPIPE_SZ, (int)RECORDER_PIPE_BYTES);

    /* Forked twice: the recorder is at once init's child, so it never
     * lingers as our zombie and its exit is no SIGCHLD of ours. */
    pid_t pid = fork();
    if (pid < 0) {
        if (err)
            tftap_buf_printf(err, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return TFTAP_EIO;
    }
    if (pid == 0 && fork() != 0)
        _exit(0); /* the intermediate: done (a failed second fork loses only the record) */
    if (pid == 0) {
        /* Single-threaded here (forked before any thread exists). Let go of
         * the client's pipes at once: go-plugin's client waits for EOF on
         * our stdout and stderr before it believes we exited. What is sent
         * to the job (the terminal's ^C, a CI cancel, timeout(1)'s SIGTERM
         * or SIGKILL to the group) is for tofu and the provider; the
         * record must still be written: a session of our own, out of the
         * group. The shim's end (EOF on the pipe) ends us. */
        (void)setsid();                  /* fails only for a group leader, which we are not */
        prctl(PR_SET_NAME, "tftap-rec"); /* for top and perf */
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        errno = 0;
        int prio = getpriority(PRIO_PROCESS, 0);
        if (errno == 0 && prio < RECPROC_NICE)
            (void)setpriority(PRIO_PROCESS, 0, RECPROC_NICE); /* failing costs only speed */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        reclog_start(db, rp->provider);
        close(p[1]);
        /* The caller's hold fd (a lock whoever waits for the record takes)
         * is ours until we exit, however we exit: out of the way first. */
        int hold = rp->hold_fd >= 0 ? fcntl(rp->hold_fd, F_DUPFD_CLOEXEC, 10) : -1;
        /* Nothing else of ours stays open in here (a reattach caller's
         * handshake pipe, say): only the event pipe, as fd 3, and the hold
         * fd, as fd 4. */
        int fd = p[0];
        if (fd != 3) {
            if (dup2(fd, 3) < 0)
                _exit(1);
            fd = 3;
        }
        if (hold >= 0 && dup2(hold, 4) < 0)
            _exit(1);
        close_range(hold >= 0 ? 5 : 4, ~0U, 0);
        /* Values in spans wait for the redaction of a wrapped run (run_left):
         * this process's spans then come from the redacted record. */
        int later = rp->otlp && rp->otlp->values && rp->leave_run && rp->run_left;
        int64_t process_row = 0;
        /* A wrapped run is held (tftap prune leaves it) until it is left
         * and redacted, past the recorder's own hold, which ends with its
         * record. */
        store_hold *run_hold = NULL;
        if (rp->leave_run && opts->run_id > 0 && store_hold_run(db, opts->run_id, &run_hold))
            run_hold = NULL;
        otlp_exporter *ox =
            recorder_main(fd, hold >= 0 ? 4 : -1, db, opts, rp, later, &process_row);
        if (rp->leave_run && opts->run_id > 0) {
            recorder_proc_leave_run(db, opts->run_id);
            if (rp->run_left)
                rp->run_left(db, opts->run_id);
        }
        store_hold_free(run_hold);
        if (ox != NULL && later && process_row > 0) {
            store *s = NULL;
            if (store_open(db, STORE_OPEN_READONLY, &s) == 0) {
                int64_t n = recorder_export_spans(s, opts->run_id, process_row, ox);
                if (n < 0)
                    reclog("otlp: cannot read the calls to export: %s", tftap_strerror((int)n));
            }
            store_close(s);
        }
        if (ox != NULL) {
            /* The record is complete: whoever waits for it (tftap run) goes
             * on now, and the last spans are sent without holding it up. */
            if (hold >= 0)
                close(4);
            otlp_exporter_close(ox, RECPROC_OTLP_FLUSH_MS);
        }
        _exit(0);
    }
    close(p[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    rp->pid = pid;
    rp->fd = p[1];
    return 0;
}

void recorder_proc_detach(recorder_proc *rp)
{
    if (rp->fd >= 0)
        close(rp->fd);
    rp->fd = -1;
    rp->pid = -1; /* init's child: it flushes on its own time */
}

/* ---- spans from the record ------------------------------------------------ */

struct spans_from {
    otlp_exporter *ox;
    int64_t process_id;
    int64_t n;
};

static int span_of_row(void *ctx, const store_call_row *c)
{
    struct spans_from *sp = ctx;
    if (c->in_flight || c->method == NULL || c->method[0] == '\0' ||
        (sp->process_id > 0 && c->process_id != sp->process_id))
        return 0; /* never answered: no span, as for a call as it ends */
    tftap_buf first = TFTAP_BUF_INIT;
    int errors = 0;
    if (c->status_code == 0 && c->response_json != NULL)
        errors = otlp_error_diagnostics(c->response_json, strlen(c->response_json), &first);
    otlp_span s = {
        .method = c->method,
        .provider = c->provider,
        .version = c->provider_version,
        .type = c->type_name,
        .status_message = c->status_message,
        .error_count = errors,
        .error_summary = first.len ? tftap_buf_cstr(&first) : NULL,
        .request_json = c->request_json,
        .response_json = c->response_json,
        .start_us = c->started_us,
        .end_us = c->ended_us,
        .grpc_status = c->has_status ? c->status_code : 0,
        .request_bytes = (uint64_t)c->request_bytes,
        .response_bytes = (uint64_t)c->response_bytes,
        .call_id = (uint64_t)c->call_seq,
        .run_id = c->run_id,
    };
    otlp_exporter_add(sp->ox, &s);
    sp->n++;
    tftap_buf_done(&first);
    return 0;
}

int64_t recorder_export_spans(store *s, int64_t run_id, int64_t process_id, otlp_exporter *ox)
{
    struct spans_from sp = {ox, process_id, 0};
    int rc = store_calls_each(s, run_id, NULL, NULL, span_of_row, &sp);
    return rc != 0 ? rc : sp.n;
}
