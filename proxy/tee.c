/* proxy: hands copies of relayed messages to the recorder from a thread of
 * its own. The relay thread only takes a reference to the message's slices
 * and links an event into a list; flattening the bytes and the recorder's
 * own copy happen here, so a 20 MiB schema never stalls the relay. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include "proxy/proxy_int.h"

enum tee_kind { TEE_BEGIN, TEE_MESSAGE, TEE_END };

struct tee_event {
    struct tee_event *next;
    enum tee_kind kind;
    uint64_t call_id;
    int64_t t_us;
    enum store_direction dir;
    int status;
    grpc_byte_buffer *bb; /* TEE_MESSAGE */
    size_t bytes;         /* counted against max_bytes */
    char text[];          /* method (BEGIN) or status message (END) */
};

struct proxy_tee {
    store_recorder *rec;
    size_t max_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct tee_event *head, *tail;
    size_t queued_bytes;
    int stopping;
    uint64_t dropped;
    pthread_t thread;
};

static void deliver(proxy_tee *t, struct tee_event *ev)
{
    switch (ev->kind) {
    case TEE_BEGIN:
        store_recorder_call_begin(t->rec, ev->call_id, ev->text, ev->t_us);
        break;
    case TEE_END:
        store_recorder_call_end(t->rec, ev->call_id, ev->t_us, ev->status, ev->text);
        break;
    case TEE_MESSAGE: {
        grpc_byte_buffer_reader reader;
        if (!grpc_byte_buffer_reader_init(&reader, ev->bb))
            break;
        grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        store_recorder_message(t->rec, ev->call_id, ev->dir, ev->t_us, GRPC_SLICE_START_PTR(all),
                               GRPC_SLICE_LENGTH(all));
        grpc_slice_unref(all);
        break;
    }
    }
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
        deliver(t, ev);
        pthread_mutex_lock(&t->mu);
        t->queued_bytes -= ev->bytes;
        pthread_mutex_unlock(&t->mu);
        event_free(ev);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int proxy_tee_new(store_recorder *rec, size_t max_bytes, proxy_tee **out)
{
    *out = NULL;
    if (rec == NULL)
        return 0;
    proxy_tee *t = calloc(1, sizeof *t);
    if (t == NULL)
        return TFTAP_ENOMEM;
    t->rec = rec;
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

static struct tee_event *event_new(proxy_tee *t, enum tee_kind kind, const char *text)
{
    size_t n = text != NULL ? strlen(text) : 0;
    struct tee_event *ev = calloc(1, sizeof *ev + n + 1);
    if (ev == NULL) {
        pthread_mutex_lock(&t->mu);
        t->dropped++;
        pthread_mutex_unlock(&t->mu);
        return NULL;
    }
    ev->kind = kind;
    if (n > 0)
        memcpy(ev->text, text, n);
    return ev;
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
