/* proxy: the recorder in a process of its own.
 *
 * go-plugin's client gives a plugin two seconds after Shutdown to exit (and
 * waits for EOF on its stdout and stderr) before it sends SIGKILL. Flushing
 * a large record into SQLite can take longer than that, so the recorder does
 * not live in the process the client waits for: it is forked before any
 * thread exists, reads events from a pipe (recpipe.c) into the store's
 * recorder, and flushes and exits when the pipe closes, however long that
 * takes. The relay's process only ever writes into the pipe (from the tee
 * thread); when the recorder is behind it stops reading, and the tee's
 * queue takes the rest (and drops past its bound). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proxy/proxy_int.h"

/* The recorder's niceness. Its work can always wait (the record is
 * written in the end, the queue is bounded) and the relay's, the client's
 * and the provider's cannot: on a machine with few cores, a recorder at the
 * same priority takes turns with them mid-call. */
#define RECPROC_NICE 10

/* How long the recorder process stops reading the pipe when its share of
 * the budget is full before it drops instead: the relay's process must be
 * able to write out its tee and exit within go-plugin's two seconds. */
#define RECPROC_BLOCK_MS 1000

/* The sink of the pipe's reader: the store's recorder, which in blocking
 * mode makes the reader wait while its share of the budget is full, so the
 * pipe fills and the tee (the one place that drops) holds the rest. */
static void on_process(void *ctx, const char *provider, const char *version, const char *binary,
                       int protocol, int pid)
{
    store_recorder_process(ctx, provider, version, binary, protocol, pid);
}

static void on_begin(void *ctx, uint64_t call_id, const char *method, int64_t t_us)
{
    store_recorder_call_begin(ctx, call_id, method, t_us);
}

static void on_message(void *ctx, uint64_t call_id, enum store_direction dir, int64_t t_us,
                       uint8_t *bytes, size_t len)
{
    store_recorder_message_take(ctx, call_id, dir, t_us, bytes, len);
}

static void on_end(void *ctx, uint64_t call_id, int64_t t_us, int status, const char *message)
{
    store_recorder_call_end(ctx, call_id, t_us, status, message);
}

static void on_lost(void *ctx, uint64_t n, enum store_lost why)
{
    store_recorder_lost(ctx, n, why);
}

/* The recorder process's whole life: events until EOF, then flush. A
 * recorder that cannot start still drains the pipe, so the tee never
 * blocks on it. */
static void recorder_main(int fd, const char *db, const store_recorder_opts *opts)
{
    store_recorder *rec = NULL;
    store_recorder_opts o = *opts;
    o.max_queue_bytes = PROXY_RECORDER_MAX_BYTES;
    o.block_ms = RECPROC_BLOCK_MS;
    if (store_recorder_open(db, &o, &rec) != 0)
        rec = NULL;
    proxy_recpipe_sink sink = {rec, on_process, on_begin, on_message, on_end, on_lost};
    (void)proxy_recpipe_read(fd, PROXY_REC_MESSAGE_MAX, &sink);
    store_recorder_close(rec);
}

int proxy_recproc_start(const char *db, const store_recorder_opts *opts, proxy_recproc *rp,
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
    (void)fcntl(p[1], F_SETPIPE_SZ, (int)PROXY_REC_PIPE_BYTES);

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
         * our stdout and stderr before it believes we exited. The terminal's
         * ^C is for tofu and the provider; the record must still be
         * written. */
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
        close(p[1]);
        /* Nothing else of ours stays open in here (a reattach caller's
         * handshake pipe, say): only the event pipe, as fd 3. */
        int fd = p[0];
        if (fd != 3) {
            if (dup2(fd, 3) < 0)
                _exit(1);
            fd = 3;
        }
        close_range(4, ~0U, 0);
        recorder_main(fd, db, opts);
        _exit(0);
    }
    close(p[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    rp->pid = pid;
    rp->fd = p[1];
    return 0;
}

void proxy_recproc_detach(proxy_recproc *rp)
{
    if (rp->fd >= 0)
        close(rp->fd);
    rp->fd = -1;
    rp->pid = -1; /* init's child: it flushes on its own time */
}
