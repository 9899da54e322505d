/* proxy: hands copies of relayed messages to the recorder process from a
 * thread of its own. The relay thread only takes a reference to the
 * message's slices and links an event into a list; writing the bytes into
 * the recorder's pipe happens here, so a 20 MiB schema (or a slow reader)
 * never stalls the relay. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include "proxy/proxy_int.h"

enum tee_kind { TEE_PROCESS, TEE_BEGIN, TEE_MESSAGE, TEE_END };

struct tee_event {
    struct tee_event *next;
    enum tee_kind kind;
    uint64_t call_id;
    int64_t t_us;
    enum store_direction dir;
    int status;           /* END: status; PROCESS: protocol version */
    int pid;              /* PROCESS */
    grpc_byte_buffer *bb; /* TEE_MESSAGE */
    size_t bytes;         /* counted against max_bytes */
    size_t text_len;
    char text[]; /* method (BEGIN), status message (END) or
                  * provider\0version\0binary (PROCESS) */
};

struct proxy_tee {
    int fd;
    int broken; /* tee thread only: the pipe failed, drop the rest */
    size_t max_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct tee_event *head, *tail;
    size_t queued_bytes;
    int stopping;
    uint64_t dropped;
    pthread_t thread;
};

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One frame: header then payload, the message's slices written as they
 * are (no flattening copy). */
static int deliver(proxy_tee *t, struct tee_event *ev)
{
    struct proxy_rec_frame f;
    memset(&f, 0, sizeof f);
    f.call_id = ev->call_id;
    f.t_us = ev->t_us;
    switch (ev->kind) {
    case TEE_PROCESS:
        f.kind = PROXY_REC_PROCESS;
        f.a = ev->status;
        f.b = ev->pid;
        break;
    case TEE_BEGIN:
        f.kind = PROXY_REC_BEGIN;
        break;
    case TEE_END:
        f.kind = PROXY_REC_END;
        f.a = ev->status;
        break;
    case TEE_MESSAGE:
        f.kind = PROXY_REC_MESSAGE;
        f.a = (int32_t)ev->dir;
        break;
    }
    if (ev->kind != TEE_MESSAGE) {
        f.len = (uint32_t)ev->text_len;
        if (write_all(t->fd, &f, sizeof f) != 0 || write_all(t->fd, ev->text, ev->text_len) != 0)
            return -1;
        return 0;
    }
    if (ev->bytes > UINT32_MAX)
        return 0; /* beyond the frame format; the store sees a message missing */
    f.len = (uint32_t)ev->bytes;
    if (write_all(t->fd, &f, sizeof f) != 0)
        return -1;
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, ev->bb))
        return -1;
    grpc_slice slice;
    size_t sent = 0;
    int rc = 0;
    while (rc == 0 && grpc_byte_buffer_reader_next(&reader, &slice)) {
        if (write_all(t->fd, GRPC_SLICE_START_PTR(slice), GRPC_SLICE_LENGTH(slice)) != 0)
            rc = -1;
        sent += GRPC_SLICE_LENGTH(slice);
        grpc_slice_unref(slice);
    }
    grpc_byte_buffer_reader_destroy(&reader);
    /* The frame promised len bytes; anything else would desynchronise the
     * reader, so treat it as a broken pipe. */
    return rc == 0 && sent == ev->bytes ? 0 : -1;
}

static void event_free(struct tee_event *ev)
{
    if (ev->bb != NULL)
        grpc_byte_buffer_destroy(ev->bb);
    free(ev);
}

static void *tee_main(void *arg)
{
    proxy_tee *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (t->head == NULL && !t->stopping)
            pthread_cond_wait(&t->cv, &t->mu);
        struct tee_event *ev = t->head;
        if (ev == NULL)
            break; /* stopping and drained */
        t->head = ev->next;
        if (t->head == NULL)
            t->tail = NULL;
        pthread_mutex_unlock(&t->mu);
        int failed = t->broken || deliver(t, ev) != 0;
        if (failed)
            t->broken = 1;
        size_t bytes = ev->bytes;
        event_free(ev);
        pthread_mutex_lock(&t->mu);
        t->queued_bytes -= bytes;
        if (failed)
            t->dropped++;
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int proxy_tee_new(int fd, size_t max_bytes, proxy_tee **out)
{
    *out = NULL;
    if (fd < 0)
        return 0;
    proxy_tee *t = calloc(1, sizeof *t);
    if (t == NULL)
        return TFTAP_ENOMEM;
    t->fd = fd;
    t->max_bytes = max_bytes;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (pthread_create(&t->thread, NULL, tee_main, t) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return TFTAP_ENOMEM;
    }
    *out = t;
    return 0;
}

/* Queue ev, or drop it when the bytes bound would be passed. Begin and end
 * events are tiny and always queued so that every call stays paired. */
static void push(proxy_tee *t, struct tee_event *ev)
{
    pthread_mutex_lock(&t->mu);
    if (ev->kind == TEE_MESSAGE && t->queued_bytes + ev->bytes > t->max_bytes) {
        t->dropped++;
        pthread_mutex_unlock(&t->mu);
        event_free(ev);
        return;
    }
    t->queued_bytes += ev->bytes;
    ev->next = NULL;
    if (t->tail != NULL)
        t->tail->next = ev;
    else
        t->head = ev;
    t->tail = ev;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static struct tee_event *event_new_n(proxy_tee *t, enum tee_kind kind, const char *text, size_t n)
{
    struct tee_event *ev = calloc(1, sizeof *ev + n + 1);
    if (ev == NULL) {
        pthread_mutex_lock(&t->mu);
        t->dropped++;
        pthread_mutex_unlock(&t->mu);
        return NULL;
    }
    ev->kind = kind;
    ev->text_len = n;
    if (n > 0)
        memcpy(ev->text, text, n);
    return ev;
}

static struct tee_event *event_new(proxy_tee *t, enum tee_kind kind, const char *text)
{
    return event_new_n(t, kind, text, text != NULL ? strlen(text) : 0);
}

void proxy_tee_process(proxy_tee *t, const char *provider, const char *version, const char *binary,
                       int protocol_version, int pid)
{
    if (t == NULL)
        return;
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_puts(&b, provider != NULL ? provider : "");
    tftap_buf_putc(&b, '\0');
    tftap_buf_puts(&b, version != NULL ? version : "");
    tftap_buf_putc(&b, '\0');
    tftap_buf_puts(&b, binary != NULL ? binary : "");
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

void proxy_tee_begin(proxy_tee *t, uint64_t call_id, const char *method, int64_t t_us)
{
    if (t == NULL)
        return;
    struct tee_event *ev = event_new(t, TEE_BEGIN, method);
    if (ev == NULL)
        return;
    ev->call_id = call_id;
    ev->t_us = t_us;
    push(t, ev);
}

void proxy_tee_message(proxy_tee *t, uint64_t call_id, enum store_direction dir, int64_t t_us,
                       grpc_byte_buffer *bb)
{
    if (t == NULL || bb == NULL)
        return;
    struct tee_event *ev = event_new(t, TEE_MESSAGE, NULL);
    if (ev == NULL)
        return;
    ev->call_id = call_id;
    ev->t_us = t_us;
    ev->dir = dir;
    ev->bytes = grpc_byte_buffer_length(bb);
    /* A new buffer holding references to the same slices: no byte copied. */
    ev->bb = grpc_byte_buffer_copy(bb);
    if (ev->bb == NULL) {
        free(ev);
        return;
    }
    push(t, ev);
}

void proxy_tee_end(proxy_tee *t, uint64_t call_id, int64_t t_us, int status, const char *message)
{
    if (t == NULL)
        return;
    struct tee_event *ev = event_new(t, TEE_END, message);
    if (ev == NULL)
        return;
    ev->call_id = call_id;
    ev->t_us = t_us;
    ev->status = status;
    push(t, ev);
}

uint64_t proxy_tee_dropped(const proxy_tee *t)
{
    if (t == NULL)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&t->mu);
    uint64_t n = t->dropped;
    pthread_mutex_unlock((pthread_mutex_t *)&t->mu);
    return n;
}

void proxy_tee_free(proxy_tee *t)
{
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->mu);
    t->stopping = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
