/* recorder: hands copies of relayed messages to the recorder process from a
 * thread of its own. The relay thread only links an event (holding the
 * message bytes it assembled) into a list; writing the bytes into the
 * recorder's pipe happens here, so a 20 MiB schema (or a slow reader) never
 * stalls the relay.
 *
 * Wake-ups are what a relayed call costs most here, not bytes: the relay
 * wakes this thread only when it sleeps with nothing queued, and the thread
 * then lets events gather for a moment (TEE_GATHER_MS, cut short when much
 * is queued or the tee stops) and writes all of them with one writev. A
 * run of small calls thus costs one wake-up and one write (and one wake-up
 * of the recorder process) per few calls instead of several per call. */
#include "config.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "recorder/recorder_int.h"

#define TEE_GATHER_MS 10
#define TEE_URGENT_BYTES ((size_t)1 << 20) /* this much queued: write at once */
#define TEE_IOV 256                        /* iovecs per writev */

enum tee_kind {
    TEE_PROCESS,
    TEE_BEGIN,
    TEE_MESSAGE,
    TEE_END,
    TEE_LOST,
    TEE_START_FAILED,
    TEE_SPILL /* text: the spill file's name */
};

struct tee_event {
    struct tee_event *next;
    enum tee_kind kind;
    uint64_t call_id;
    int64_t t_us;
    enum recorder_direction dir;
    int status;    /* END: status; PROCESS: protocol version; LOST: enum recorder_lost */
    int pid;       /* PROCESS */
    uint8_t *data; /* TEE_MESSAGE: the message, owned */
    size_t bytes;  /* counted against max_bytes: struct, text, message */
    size_t len;    /* TEE_MESSAGE: message bytes */
    struct recorder_frame frame;
    size_t text_len;
    char text[]; /* method (BEGIN), status message (END) or
                  * provider\0version\0binary (PROCESS) */
};

enum tee_state { TEE_WORKING, TEE_IDLE, TEE_GATHERING };

/* unsent[] is indexed by enum recorder_lost, up to the last reason a tee
 * drops for. */
#define TEE_LOST_WHYS (RECORDER_LOST_SPILL_FAILED + 1)

struct recorder_tee {
    int fd;
    int broken; /* tee thread only: the pipe failed, drop the rest */
    size_t max_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct tee_event *head, *tail;
    size_t queued_bytes; /* queued and being written */
    size_t peak_bytes;
    enum tee_state state;
    int stopping;
    int urgent; /* a process event is queued: write without gathering */
    uint64_t dropped;
    /* Dropped, not yet told to the recorder (a LOST frame each), by why
     * (QUEUE_FULL, TOO_LARGE, SPILL_FAILED: what a tee drops for). */
    uint64_t unsent[TEE_LOST_WHYS];
    /* Spill files (recorder_tee_spill_*): the directory, opened at the first. */
    char *spill_dir;
    int spill_dfd;      /* -1 until opened */
    int spill_failed;   /* it cannot be made: big messages pass through memory */
    unsigned spill_seq; /* names files uniquely with the pid */
    /* What the relay saw of each call (enum store_relayed by call id - 1),
     * for its shim to tell what a dead recorder did not write. */
    unsigned char *ledger;
    size_t ledger_len, ledger_cap;
    int ledger_short; /* a call id past what the ledger could hold */
    pthread_t thread;
};

/* The most calls one provider process's ledger follows (a byte each). */
#define TEE_LEDGER_MAX ((size_t)1 << 27)

/* call_id seen as begun or answered: each call is begun once, then
 * answered once (the watcher ends every call it began, and only those). */
static void ledger_mark(recorder_tee *t, uint64_t call_id, unsigned char what)
{
    pthread_mutex_lock(&t->mu);
    if (call_id == 0 || call_id > TEE_LEDGER_MAX) {
        t->ledger_short = 1;
        goto out;
    }
    size_t i = (size_t)(call_id - 1);
    unsigned char was = i < t->ledger_cap ? t->ledger[i] : STORE_RELAYED_NONE;
    assert(what != STORE_RELAYED_BEGUN || was == STORE_RELAYED_NONE);
    assert(what != STORE_RELAYED_ANSWERED || was == STORE_RELAYED_BEGUN || t->ledger_short);
    (void)was;
    if (i >= t->ledger_cap) {
        size_t cap = t->ledger_cap ? t->ledger_cap : 1024;
        while (cap <= i)
            cap *= 2;
        unsigned char *n = realloc(t->ledger, cap);
        if (n == NULL) {
            t->ledger_short = 1;
            goto out;
        }
        memset(n + t->ledger_cap, STORE_RELAYED_NONE, cap - t->ledger_cap);
        t->ledger = n;
        t->ledger_cap = cap;
    }
    t->ledger[i] = what;
    if (i + 1 > t->ledger_len)
        t->ledger_len = i + 1;
out:
    pthread_mutex_unlock(&t->mu);
}

/* Write all of iov[0..n), advancing through partial writes. */
static int writev_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Fill in an event's frame header; -1 if it cannot be framed (the store
 * then sees that message missing). */
static int frame(struct tee_event *ev)
{
    struct recorder_frame *f = &ev->frame;
    memset(f, 0, sizeof *f);
    f->call_id = ev->call_id;
    f->t_us = ev->t_us;
    switch (ev->kind) {
    case TEE_PROCESS:
        f->kind = RECORDER_FRAME_PROCESS;
        f->a = ev->status;
        f->b = ev->pid;
        break;
    case TEE_BEGIN:
        f->kind = RECORDER_FRAME_BEGIN;
        break;
    case TEE_END:
        f->kind = RECORDER_FRAME_END;
        f->a = ev->status;
        break;
    case TEE_MESSAGE:
        f->kind = RECORDER_FRAME_MESSAGE;
        f->a = (int32_t)ev->dir;
        break;
    case TEE_LOST:
        f->kind = RECORDER_FRAME_LOST;
        f->a = ev->status;
        break;
    case TEE_START_FAILED:
        f->kind = RECORDER_FRAME_START_FAILED;
        break;
    case TEE_SPILL:
        f->kind = RECORDER_FRAME_SPILL;
        f->a = (int32_t)ev->dir;
        break;
    }
    if (ev->kind != TEE_MESSAGE) {
        f->len = (uint32_t)ev->text_len;
        return 0;
    }
    if (ev->len > RECORDER_FRAME_MAX)
        return -1; /* beyond what the reader takes */
    f->len = (uint32_t)ev->len;
    return 0;
}

/* Write a list of events with as few writev calls as iovecs allow. Events
 * that cannot be framed are counted in *skipped. -1 once the pipe broke. */
static int deliver(recorder_tee *t, struct tee_event *list, uint64_t *skipped)
{
    struct iovec iov[TEE_IOV];
    int n = 0;
    for (struct tee_event *ev = list; ev != NULL; ev = ev->next) {
        if (frame(ev) != 0) {
            (*skipped)++;
            continue;
        }
        /* Room for the header and its payload. */
        if (n + 2 > TEE_IOV) {
            if (writev_all(t->fd, iov, n) != 0)
                return -1;
            n = 0;
        }
        iov[n++] = (struct iovec){&ev->frame, sizeof ev->frame};
        void *p = ev->kind == TEE_MESSAGE ? (void *)ev->data : (void *)ev->text;
        size_t len = ev->kind == TEE_MESSAGE ? ev->len : ev->text_len;
        if (len > 0)
            iov[n++] = (struct iovec){p, len};
    }
    if (n > 0 && writev_all(t->fd, iov, n) != 0)
        return -1;
    return 0;
}

static void event_free(struct tee_event *ev)
{
    free(ev->data);
    free(ev);
}

/* A spill event that never reached the recorder: its file goes too. */
static void event_drop(recorder_tee *t, struct tee_event *ev)
{
    if (ev->kind == TEE_SPILL && t->spill_dfd >= 0)
        (void)unlinkat(t->spill_dfd, ev->text, 0);
    event_free(ev);
}

static int has_unsent(const recorder_tee *t)
{
    for (int i = 0; i < TEE_LOST_WHYS; i++)
        if (t->unsent[i] > 0)
            return 1;
    return 0;
}

static void *tee_main(void *arg)
{
    recorder_tee *t = arg;
    pthread_setname_np(pthread_self(), "tftap-tee"); /* for top and perf */
    pthread_mutex_lock(&t->mu);
    for (;;) {
        /* (A broken pipe tells nobody of drops: t->broken is this
         * thread's own.) */
        while (t->head == NULL && (!has_unsent(t) || t->broken) && !t->stopping) {
            t->state = TEE_IDLE;
            pthread_cond_wait(&t->cv, &t->mu);
        }
        if (t->head == NULL && (!has_unsent(t) || t->broken))
            break; /* stopping and drained */
        if (!t->stopping && t->queued_bytes < TEE_URGENT_BYTES && !t->urgent) {
            /* Let what the relay is about to queue join this write. */
            struct timespec until;
            tftap_deadline_in(&until, TEE_GATHER_MS);
            t->state = TEE_GATHERING;
            while (!t->stopping && t->queued_bytes < TEE_URGENT_BYTES && !t->urgent &&
                   pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0)
                ;
        }
        t->urgent = 0;
        t->state = TEE_WORKING;
        struct tee_event *list = t->head;
        t->head = t->tail = NULL;
        uint64_t unsent[TEE_LOST_WHYS];
        memcpy(unsent, t->unsent, sizeof unsent);
        memset(t->unsent, 0, sizeof t->unsent);
        pthread_mutex_unlock(&t->mu);

        for (int i = 0; i < TEE_LOST_WHYS; i++) {
            if (unsent[i] == 0)
                continue;
            /* What was dropped goes first, so the record's gap says so. */
            struct tee_event *ev = calloc(1, sizeof *ev);
            if (ev != NULL) {
                ev->kind = TEE_LOST;
                ev->call_id = unsent[i];
                ev->status = i; /* enum recorder_lost */
                ev->next = list;
                list = ev;
            } else {
                pthread_mutex_lock(&t->mu);
                t->unsent[i] += unsent[i]; /* told next time */
                pthread_mutex_unlock(&t->mu);
            }
        }

        uint64_t lost = 0;
        size_t bytes = 0;
        if (t->broken || deliver(t, list, &lost) != 0) {
            t->broken = 1;
            lost = 0;
            for (struct tee_event *ev = list; ev != NULL; ev = ev->next)
                lost++;
        }
        while (list != NULL) {
            struct tee_event *next = list->next;
            bytes += list->bytes;
            if (t->broken)
                event_drop(t, list); /* its spill file will never be read */
            else
                event_free(list);
            list = next;
        }

        pthread_mutex_lock(&t->mu);
        assert(bytes <= t->queued_bytes); /* push counted each one */
        t->queued_bytes -= bytes;
        t->dropped += lost;
    }
    assert(t->head == NULL && t->queued_bytes == 0); /* all written or dropped */
    pthread_mutex_unlock(&t->mu);
    if (!t->broken) {
        /* Everything is written: the recorder knows we ended on purpose
         * (EOF without this: we died, and it says so in a gap). */
        struct recorder_frame bye = {.kind = RECORDER_FRAME_BYE};
        struct iovec iov = {&bye, sizeof bye};
        if (writev_all(t->fd, &iov, 1) != 0)
            t->broken = 1;
    }
    return NULL;
}

int recorder_tee_new(int fd, size_t max_bytes, recorder_tee **out)
{
    *out = NULL;
    if (fd < 0)
        return 0;
    recorder_tee *t = calloc(1, sizeof *t);
    if (t == NULL)
        return TFTAP_ENOMEM;
    t->fd = fd;
    t->spill_dfd = -1;
    t->max_bytes = max_bytes;
    t->state = TEE_WORKING;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&t->thread, NULL, tee_main, t) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return TFTAP_ENOMEM;
    }
    *out = t;
    return 0;
}

/* Queue ev, or drop it when the bound would be passed. Every event counts
 * (its struct, text and message bytes). Messages stop at 15/16 of
 * max_bytes; begin and end events are tiny and use the rest, so
 * that calls stay paired while messages drop; past max_bytes everything
 * drops. The thread is woken only from its idle sleep, or to end its
 * gathering early when much is queued. */
static void push(recorder_tee *t, struct tee_event *ev)
{
    ev->bytes += sizeof *ev + ev->text_len;
    size_t limit = ev->kind == TEE_MESSAGE ? t->max_bytes - t->max_bytes / 16 : t->max_bytes;
    pthread_mutex_lock(&t->mu);
    if (t->queued_bytes + ev->bytes > limit) {
        t->dropped++;
        t->unsent[RECORDER_LOST_QUEUE_FULL]++;
        pthread_mutex_unlock(&t->mu);
        event_drop(t, ev);
        return;
    }
    t->queued_bytes += ev->bytes;
    if (t->queued_bytes > t->peak_bytes)
        t->peak_bytes = t->queued_bytes;
    ev->next = NULL;
    if (t->tail != NULL)
        t->tail->next = ev;
    else
        t->head = ev;
    t->tail = ev;
    /* A process event goes out at once: it names the process before its
     * provider may fail to start, and the client then kills us. */
    if (ev->kind == TEE_PROCESS || ev->kind == TEE_START_FAILED)
        t->urgent = 1;
    if (t->state == TEE_IDLE ||
        (t->state == TEE_GATHERING && (t->queued_bytes >= TEE_URGENT_BYTES || t->urgent))) {
        t->state = TEE_WORKING; /* one wake-up is enough */
        pthread_cond_signal(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
}

static struct tee_event *event_new_n(recorder_tee *t, enum tee_kind kind, const char *text,
                                     size_t n)
{
    struct tee_event *ev = calloc(1, sizeof *ev + n + 1);
    if (ev == NULL) {
        pthread_mutex_lock(&t->mu);
        t->dropped++;
        t->unsent[RECORDER_LOST_QUEUE_FULL]++;
        pthread_mutex_unlock(&t->mu);
        return NULL;
    }
    ev->kind = kind;
    ev->text_len = n;
    if (n > 0)
        memcpy(ev->text, text, n);
    return ev;
}

/* Texts are cut to what the reader accepts (the watcher keeps less). */
static struct tee_event *event_new(recorder_tee *t, enum tee_kind kind, const char *text)
{
    return event_new_n(t, kind, text, text != NULL ? strnlen(text, RECORDER_TEXT_MAX) : 0);
}

void recorder_tee_process(recorder_tee *t, const char *provider, const char *version,
                          const char *binary, int protocol_version, int pid)
{
    if (t == NULL)
        return;
    tftap_buf b = TFTAP_BUF_INIT;
    const char *s[3] = {provider, version, binary};
    for (int i = 0; i < 3; i++) {
        if (i > 0)
            tftap_buf_putc(&b, '\0');
        if (s[i] != NULL)
            tftap_buf_append(&b, s[i], strnlen(s[i], RECORDER_TEXT_MAX));
    }
    if (!tftap_buf_failed(&b)) {
        struct tee_event *ev = event_new_n(t, TEE_PROCESS, b.data, b.len);
        if (ev != NULL) {
            ev->status = protocol_version;
            ev->pid = pid;
            push(t, ev);
        }
    }
    tftap_buf_done(&b);
}

void recorder_tee_begin(recorder_tee *t, uint64_t call_id, const char *method, int64_t t_us)
{
    if (t == NULL)
        return;
    /* The ledger says what the relay saw, recorded or not. */
    ledger_mark(t, call_id, STORE_RELAYED_BEGUN);
    struct tee_event *ev = event_new(t, TEE_BEGIN, method);
    if (ev == NULL)
        return;
    ev->call_id = call_id;
    ev->t_us = t_us;
    push(t, ev);
}

void recorder_tee_message(recorder_tee *t, uint64_t call_id, enum recorder_direction dir,
                          int64_t t_us, uint8_t *data, size_t len)
{
    if (t == NULL) {
        free(data);
        return;
    }
    struct tee_event *ev = event_new(t, TEE_MESSAGE, NULL);
    if (ev == NULL) {
        free(data);
        return;
    }
    ev->call_id = call_id;
    ev->t_us = t_us;
    ev->dir = dir;
    ev->data = data;
    ev->len = len;
    ev->bytes = len;
    push(t, ev);
}

void recorder_tee_start_failed(recorder_tee *t, const char *why)
{
    if (t == NULL)
        return;
    struct tee_event *ev = event_new(t, TEE_START_FAILED, why);
    if (ev != NULL)
        push(t, ev);
}

void recorder_tee_lost(recorder_tee *t)
{
    recorder_tee_lost_as(t, RECORDER_LOST_QUEUE_FULL);
}

void recorder_tee_lost_as(recorder_tee *t, enum recorder_lost why)
{
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->mu);
    t->dropped++;
    assert(why == RECORDER_LOST_QUEUE_FULL || why == RECORDER_LOST_TOO_LARGE ||
           why == RECORDER_LOST_SPILL_FAILED);
    t->unsent[why < TEE_LOST_WHYS ? why : RECORDER_LOST_QUEUE_FULL]++;
    if (t->state == TEE_IDLE) {
        t->state = TEE_WORKING;
        pthread_cond_signal(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
}

void recorder_tee_end(recorder_tee *t, uint64_t call_id, int64_t t_us, int status,
                      const char *message)
{
    if (t == NULL)
        return;
    ledger_mark(t, call_id, STORE_RELAYED_ANSWERED);
    struct tee_event *ev = event_new(t, TEE_END, message);
    if (ev == NULL)
        return;
    ev->call_id = call_id;
    ev->t_us = t_us;
    ev->status = status;
    push(t, ev);
}

size_t recorder_tee_peak_bytes(const recorder_tee *t)
{
    if (t == NULL)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&t->mu);
    size_t n = t->peak_bytes;
    pthread_mutex_unlock((pthread_mutex_t *)&t->mu);
    return n;
}

uint64_t recorder_tee_dropped(const recorder_tee *t)
{
    if (t == NULL)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&t->mu);
    uint64_t n = t->dropped;
    pthread_mutex_unlock((pthread_mutex_t *)&t->mu);
    return n;
}

/* The recorder is gone: the spill files it did not read, ours by their
 * names, go. */
static void spill_sweep(int dfd)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "s%ld-", (long)getpid());
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, prefix, (size_t)n) == 0)
            (void)unlinkat(dfd, e->d_name, 0);
    closedir(d);
}

void recorder_tee_finish(recorder_tee *t, struct recorder_tee_outcome *out)
{
    if (out != NULL)
        memset(out, 0, sizeof *out);
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->mu);
    t->stopping = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    if (out != NULL) {
        out->pipe_broke = t->broken;
        out->dropped = t->dropped;
        out->ledger_short = t->ledger_short;
        out->ledger = t->ledger;
        out->ncalls = t->ledger_len;
        t->ledger = NULL;
    }
    free(t->ledger);
    if (t->broken && t->spill_dfd >= 0)
        spill_sweep(t->spill_dfd);
    if (t->spill_dfd >= 0)
        close(t->spill_dfd);
    free(t->spill_dir);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void recorder_tee_free(recorder_tee *t)
{
    recorder_tee_finish(t, NULL);
}

/* ---- spill files ------------------------------------------------------------ */

char *recorder_spill_dir(const char *db)
{
    size_t len = 0;
    const char *dir = store_side_dir(db, &len);
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_printf(&b, "%.*s/spill", dir ? (int)len : 1, dir ? dir : ".");
    return tftap_buf_failed(&b) ? NULL : tftap_buf_take(&b, NULL);
}

void recorder_tee_spill_to(recorder_tee *t, const char *dir)
{
    if (t == NULL || dir == NULL)
        return;
    free(t->spill_dir);
    t->spill_dir = strdup(dir);
}

/* The spill directory, made and opened at the first big message (relay
 * thread only). Ours and private, or none: the files hold values in clear. */
static int spill_dir_fd(recorder_tee *t)
{
    if (t->spill_dfd >= 0 || t->spill_failed || t->spill_dir == NULL)
        return t->spill_dfd;
    (void)mkdir(t->spill_dir, 0700);
    int fd = open(t->spill_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        t->spill_failed = 1;
    t->spill_dfd = fd;
    return fd;
}

int recorder_tee_spill_open(recorder_tee *t, uint64_t call_id, enum recorder_direction dir,
                            recorder_spill *sp)
{
    sp->fd = -1;
    if (t == NULL || spill_dir_fd(t) < 0)
        return -1;
    snprintf(sp->name, sizeof sp->name, "s%ld-%llu-%d-%u", (long)getpid(),
             (unsigned long long)call_id, (int)dir, t->spill_seq++);
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    sp->fd = openat(t->spill_dfd, sp->name, flags, 0600);
    if (sp->fd < 0 && errno == EEXIST) {
        /* Left by a dead process that had our pid: its name is ours now. */
        (void)unlinkat(t->spill_dfd, sp->name, 0);
        sp->fd = openat(t->spill_dfd, sp->name, flags, 0600);
    }
    return sp->fd >= 0 ? 0 : -1;
}

int recorder_tee_spill_write(recorder_tee *t, recorder_spill *sp, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(sp->fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            recorder_tee_spill_abort(t, sp);
            recorder_tee_lost_as(t, RECORDER_LOST_SPILL_FAILED);
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

void recorder_tee_spill_done(recorder_tee *t, recorder_spill *sp, uint64_t call_id,
                             enum recorder_direction dir, int64_t t_us)
{
    if (sp->fd < 0)
        return;
    int failed = close(sp->fd) != 0;
    sp->fd = -1;
    if (failed) {
        (void)unlinkat(t->spill_dfd, sp->name, 0);
        recorder_tee_lost_as(t, RECORDER_LOST_SPILL_FAILED);
        return;
    }
    struct tee_event *ev = event_new(t, TEE_SPILL, sp->name);
    if (ev == NULL) {
        (void)unlinkat(t->spill_dfd, sp->name, 0);
        return; /* counted by event_new */
    }
    ev->call_id = call_id;
    ev->t_us = t_us;
    ev->dir = dir;
    push(t, ev);
}

void recorder_tee_spill_abort(recorder_tee *t, recorder_spill *sp)
{
    if (sp->fd < 0)
        return;
    close(sp->fd);
    sp->fd = -1;
    (void)unlinkat(t->spill_dfd, sp->name, 0);
}
