/* proxy: the recorder in a process of its own.
 *
 * go-plugin's client gives a plugin two seconds after Shutdown to exit (and
 * waits for EOF on its stdout and stderr) before it sends SIGKILL. Flushing
 * a large record into SQLite can take longer than that, so the recorder does
 * not live in the process the client waits for: it is forked before any
 * thread exists, reads events from a pipe, keeps its own queue in the store's
 * recorder, and flushes and exits when the pipe closes, however long that
 * takes. The relay's process only ever writes into the pipe (from the tee
 * thread), which the recorder process drains as fast as it can read. */
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

/* Messages bigger than this are skipped (and counted) rather than buffered. */
#define RECPROC_MAX_PAYLOAD ((size_t)1 << 30)

/* The pipe read through a buffer: the tee writes many frames at once, so
 * one read usually brings several whole frames. */
struct inbuf {
    int fd;
    size_t off, len;
    char data[65536];
};

static int read_full(struct inbuf *in, void *p, size_t n)
{
    char *c = p;
    size_t have = in->len - in->off;
    if (have > 0) {
        size_t k = have < n ? have : n;
        memcpy(c, in->data + in->off, k);
        in->off += k;
        c += k;
        n -= k;
    }
    while (n > 0) {
        /* Big payloads go straight to their destination; the rest refills
         * the buffer. */
        int direct = n >= sizeof in->data;
        ssize_t r = direct ? read(in->fd, c, n) : read(in->fd, in->data, sizeof in->data);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (direct) {
            c += r;
            n -= (size_t)r;
            continue;
        }
        in->off = 0;
        in->len = (size_t)r;
        size_t k = in->len < n ? in->len : n;
        memcpy(c, in->data, k);
        in->off = k;
        c += k;
        n -= k;
    }
    return 0;
}

static int skip(struct inbuf *in, size_t n)
{
    char chunk[4096];
    while (n > 0) {
        size_t k = n < sizeof chunk ? n : sizeof chunk;
        if (read_full(in, chunk, k) != 0)
            return -1;
        n -= k;
    }
    return 0;
}

/* The recorder process's whole life: events until EOF, then flush. */
static void recorder_main(int fd, const char *db, const store_recorder_opts *opts)
{
    store_recorder *rec = NULL;
    static struct inbuf in; /* this process's only one */
    in.fd = fd;
    if (store_recorder_open(db, opts, &rec) != 0)
        rec = NULL;
    for (;;) {
        struct proxy_rec_frame f;
        if (read_full(&in, &f, sizeof f) != 0)
            break;
        char *payload = NULL;
        if (f.len > RECPROC_MAX_PAYLOAD) {
            if (skip(&in, f.len) != 0)
                break;
            continue;
        }
        payload = malloc((size_t)f.len + 1);
        if (payload == NULL) {
            if (skip(&in, f.len) != 0)
                break;
            continue;
        }
        if (read_full(&in, payload, f.len) != 0) {
            free(payload);
            break;
        }
        payload[f.len] = '\0';
        if (rec != NULL) {
            switch (f.kind) {
            case PROXY_REC_PROCESS: {
                /* provider \0 version \0 binary */
                const char *provider = payload;
                const char *version = provider + strlen(provider) + 1;
                const char *binary = version + strlen(version) + 1;
                if (binary > payload + f.len)
                    break;
                store_recorder_process(rec, provider, version[0] != '\0' ? version : NULL, binary,
                                       f.a, f.b);
                break;
            }
            case PROXY_REC_BEGIN:
                store_recorder_call_begin(rec, f.call_id, payload, f.t_us);
                break;
            case PROXY_REC_MESSAGE:
                store_recorder_message(rec, f.call_id,
                                       f.a == STORE_RESPONSE ? STORE_RESPONSE : STORE_REQUEST,
                                       f.t_us, payload, f.len);
                break;
            case PROXY_REC_END:
                store_recorder_call_end(rec, f.call_id, f.t_us, f.a, payload);
                break;
            default:
                break;
            }
        }
        free(payload);
    }
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
    (void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20);

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
