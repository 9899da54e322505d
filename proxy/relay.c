/* proxy: the gRPC relay. One completion queue serves both legs and one
 * thread drives it; every call, whatever its method or streaming kind, runs
 * the same state machine:
 *
 *   client --msg--> [DOWN_RECV] --> [UP_SEND] --> provider, then [UP_CLOSE]
 *   client <--msg-- [DOWN_SEND] <-- [UP_RECV] <-- provider, then the status
 *   headers: [UP_RECV_MD] --> DOWN_SEND;  status: [UP_STATUS] --> [DOWN_STATUS]
 *   client cancellation: [DOWN_CLOSE] --> cancel the upstream call
 *
 * Each direction reads one message ahead of the one being sent (so a unary
 * request's half-close, or a response's end, is already known when the send
 * completes) and holds at most those two, which carries gRPC's flow control
 * across. Messages are the received grpc_byte_buffers passed on as they
 * are; the tee gets a reference-counted copy first, because a sent buffer is
 * drained by the send. Only this thread touches a call's state. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "proxy/proxy_int.h"

enum tag_kind {
    T_UP_SEND_MD,  /* upstream SEND_INITIAL_METADATA */
    T_UP_RECV_MD,  /* upstream RECV_INITIAL_METADATA */
    T_UP_STATUS,   /* upstream RECV_STATUS_ON_CLIENT */
    T_UP_SEND,     /* upstream SEND_MESSAGE */
    T_UP_CLOSE,    /* upstream SEND_CLOSE_FROM_CLIENT */
    T_UP_RECV,     /* upstream RECV_MESSAGE */
    T_DOWN_CLOSE,  /* downstream RECV_CLOSE_ON_SERVER */
    T_DOWN_RECV,   /* downstream RECV_MESSAGE */
    T_DOWN_SEND,   /* downstream SEND_INITIAL_METADATA and/or SEND_MESSAGE */
    T_DOWN_STATUS, /* downstream SEND_STATUS_FROM_SERVER */
    T_COUNT,
    T_NEW_CALL, /* relay-level: grpc_server_request_call */
    T_SHUTDOWN, /* relay-level: grpc_server_shutdown_and_notify */
};

struct relay_call;

struct relay_tag {
    enum tag_kind kind;
    struct relay_call *call; /* NULL for relay-level tags */
};

/* A metadata list as forwarded: entries point into the other call's arrays,
 * which live as long as the call does. */
struct md_list {
    grpc_metadata *md;
    size_t count;
};

struct relay_call {
    proxy_relay *relay;
    uint64_t id;
    grpc_call *down; /* client -> us */
    grpc_call *up;   /* us -> provider */
    grpc_call_details details;
    grpc_metadata_array req_md;   /* from the client */
    grpc_metadata_array resp_md;  /* provider's initial metadata */
    grpc_metadata_array trailers; /* provider's trailing metadata */
    struct md_list fwd_req, fwd_resp, fwd_trailers;
    grpc_status_code status;
    grpc_slice status_details;
    const char *error_string;       /* core's; freed with gpr_free */
    grpc_byte_buffer *down_in;      /* DOWN_RECV lands here */
    grpc_byte_buffer *to_up;        /* being sent to the provider */
    grpc_byte_buffer *to_up_next;   /* read ahead, waiting for to_up */
    grpc_byte_buffer *up_in;        /* UP_RECV lands here */
    grpc_byte_buffer *to_down;      /* being sent to the client */
    grpc_byte_buffer *to_down_next; /* read ahead, waiting for to_down */
    int cancelled;                  /* from RECV_CLOSE_ON_SERVER */
    int pending;                    /* batches started and not yet completed */
    unsigned resp_md_sent : 1;      /* downstream SEND_INITIAL_METADATA started */
    unsigned up_send_busy : 1;
    unsigned down_eof : 1; /* the client half-closed (or failed) */
    unsigned up_close_started : 1;
    unsigned up_failed : 1; /* a send to the provider failed */
    unsigned down_send_busy : 1;
    unsigned down_dead : 1;    /* a send to the client failed */
    unsigned up_recv_done : 1; /* no more messages will come from the provider */
    unsigned status_received : 1;
    unsigned status_sent : 1;
    unsigned up_done : 1; /* upstream finished or cancelled */
    struct relay_tag tags[T_COUNT];
};

struct proxy_relay {
    grpc_completion_queue *cq;
    grpc_server *server;
    grpc_channel *channel;
    proxy_tee *tee;
    int notify_fd;
    pthread_t thread;
    int thread_started;
    int server_started;

    /* The slot grpc_server_request_call fills; moved into a call on arrival. */
    grpc_call *new_call;
    grpc_call_details new_details;
    grpc_metadata_array new_md;
    struct relay_tag new_tag, shutdown_tag;

    atomic_uint_fast64_t next_id; /* call ids; our own Shutdown call takes one too */
    atomic_int active;            /* calls in flight */
    atomic_int draining;
    atomic_int shutdown_started;
    int server_down; /* relay thread only */
};

int64_t proxy_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void notify(proxy_relay *r)
{
    uint64_t one = 1;
    if (r->notify_fd >= 0) {
        ssize_t w = write(r->notify_fd, &one, sizeof one);
        (void)w;
    }
}

/* Keys the transport owns: core sets (or refuses) them itself, so they are
 * not forwarded as application metadata. */
static int md_reserved(grpc_slice key)
{
    size_t n = GRPC_SLICE_LENGTH(key);
    const char *k = (const char *)GRPC_SLICE_START_PTR(key);
    static const char *const names[] = {
        "content-type",   "te", "user-agent", "host", "content-length", "content-encoding",
        "accept-encoding"};
    if (n == 0 || k[0] == ':' || (n >= 5 && memcmp(k, "grpc-", 5) == 0))
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], k, n) == 0)
            return 1;
    return 0;
}

static int md_filter(const grpc_metadata_array *in, struct md_list *out)
{
    out->count = 0;
    out->md = NULL;
    if (in->count == 0)
        return 0;
    out->md = calloc(in->count, sizeof *out->md);
    if (out->md == NULL)
        return TFTAP_ENOMEM;
    for (size_t i = 0; i < in->count; i++)
        if (!md_reserved(in->metadata[i].key))
            out->md[out->count++] = in->metadata[i];
    return 0;
}

static char *slice_strdup(grpc_slice s)
{
    size_t n = GRPC_SLICE_LENGTH(s);
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, GRPC_SLICE_START_PTR(s), n);
        d[n] = '\0';
    }
    return d;
}

/* Start a batch; its completion is counted in call->pending. A batch core
 * refuses never completes, so it is not counted and the call is torn down
 * through cancellation instead. */
static int start(struct relay_call *c, grpc_call *call, const grpc_op *ops, size_t n,
                 enum tag_kind kind)
{
    grpc_call_error e = grpc_call_start_batch(call, ops, n, &c->tags[kind], NULL);
    if (e != GRPC_CALL_OK) {
        grpc_call_cancel(c->down, NULL);
        if (c->up != NULL)
            grpc_call_cancel(c->up, NULL);
        return -1;
    }
    c->pending++;
    return 0;
}

static void down_recv(struct relay_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->down_in;
    start(c, c->down, &op, 1, T_DOWN_RECV);
}

static void up_recv(struct relay_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->up_in;
    start(c, c->up, &op, 1, T_UP_RECV);
}

static void drop(grpc_byte_buffer **bb)
{
    if (*bb != NULL)
        grpc_byte_buffer_destroy(*bb);
    *bb = NULL;
}

static void send_up(struct relay_call *c, grpc_byte_buffer *msg)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    c->to_up = msg;
    c->up_send_busy = 1;
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = msg;
    if (start(c, c->up, &op, 1, T_UP_SEND) != 0)
        c->up_send_busy = 0;
}

static void send_up_close(struct relay_call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    c->up_close_started = 1;
    op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    start(c, c->up, &op, 1, T_UP_CLOSE);
}

/* A message to the client, with the (possibly empty) initial metadata in
 * front of the first one. */
static void send_down(struct relay_call *c, grpc_byte_buffer *msg)
{
    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (!c->resp_md_sent) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        n++;
        c->resp_md_sent = 1;
    }
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = msg;
    n++;
    c->to_down = msg;
    c->down_send_busy = 1;
    if (start(c, c->down, ops, n, T_DOWN_SEND) != 0)
        c->down_send_busy = 0;
}

/* The status goes down once the provider's status is known and every
 * message it sent has been passed on. Initial metadata always goes first:
 * with core 1.51 a server status sent alone (trailers-only) stays queued
 * until the call is cancelled, so a failed call is answered with empty
 * headers and then its status, which clients read the same way. */
static void maybe_send_status(struct relay_call *c)
{
    if (c->status_sent || !c->status_received || !c->up_recv_done || c->down_send_busy ||
        c->to_down_next != NULL)
        return;
    c->status_sent = 1;
    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (!c->resp_md_sent) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].data.send_initial_metadata.count = c->fwd_resp.count;
        ops[n].data.send_initial_metadata.metadata = c->fwd_resp.md;
        n++;
        c->resp_md_sent = 1;
    }
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = c->status;
    ops[n].data.send_status_from_server.status_details = &c->status_details;
    ops[n].data.send_status_from_server.trailing_metadata_count = c->fwd_trailers.count;
    ops[n].data.send_status_from_server.trailing_metadata = c->fwd_trailers.md;
    n++;
    start(c, c->down, ops, n, T_DOWN_STATUS);
}

static void call_free(struct relay_call *c)
{
    proxy_relay *r = c->relay;
    char *details = slice_strdup(c->status_details);
    proxy_tee_end(r->tee, c->id, proxy_now_us(), (int)c->status, details != NULL ? details : "");
    free(details);

    grpc_byte_buffer *bufs[] = {c->down_in, c->to_up,   c->to_up_next,
                                c->up_in,   c->to_down, c->to_down_next};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i] != NULL)
            grpc_byte_buffer_destroy(bufs[i]);
    free(c->fwd_req.md);
    free(c->fwd_resp.md);
    free(c->fwd_trailers.md);
    grpc_slice_unref(c->status_details);
    if (c->error_string != NULL)
        gpr_free((void *)c->error_string);
    /* The arrays reference slices owned by the calls: destroy them first. */
    grpc_metadata_array_destroy(&c->req_md);
    grpc_metadata_array_destroy(&c->resp_md);
    grpc_metadata_array_destroy(&c->trailers);
    grpc_call_details_destroy(&c->details);
    if (c->up != NULL)
        grpc_call_unref(c->up);
    grpc_call_unref(c->down);
    free(c);

    if (atomic_fetch_sub(&r->active, 1) == 1 && atomic_load(&r->draining))
        notify(r);
}

static void request_next_call(proxy_relay *r)
{
    if (r->server_down || atomic_load(&r->shutdown_started))
        return;
    grpc_call_details_init(&r->new_details);
    grpc_metadata_array_init(&r->new_md);
    r->new_call = NULL;
    grpc_call_error e = grpc_server_request_call(r->server, &r->new_call, &r->new_details,
                                                 &r->new_md, r->cq, r->cq, &r->new_tag);
    if (e != GRPC_CALL_OK) {
        grpc_call_details_destroy(&r->new_details);
        grpc_metadata_array_destroy(&r->new_md);
    }
}

/* A client call arrived: open its twin to the provider and start both legs. */
static void on_new_call(proxy_relay *r, int ok)
{
    if (!ok) {
        /* The server is shutting down; no more calls will come. */
        grpc_call_details_destroy(&r->new_details);
        grpc_metadata_array_destroy(&r->new_md);
        return;
    }
    struct relay_call *c = calloc(1, sizeof *c);
    if (c == NULL) {
        grpc_call_cancel_with_status(r->new_call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                                     "tftap: out of memory", NULL);
        grpc_call_unref(r->new_call);
        grpc_call_details_destroy(&r->new_details);
        grpc_metadata_array_destroy(&r->new_md);
        request_next_call(r);
        return;
    }
    c->relay = r;
    c->id = atomic_fetch_add(&r->next_id, 1) + 1;
    c->down = r->new_call;
    c->details = r->new_details;
    c->req_md = r->new_md;
    c->status = GRPC_STATUS_UNKNOWN;
    c->status_details = grpc_empty_slice();
    grpc_metadata_array_init(&c->resp_md);
    grpc_metadata_array_init(&c->trailers);
    for (int k = 0; k < T_COUNT; k++) {
        c->tags[k].kind = (enum tag_kind)k;
        c->tags[k].call = c;
    }
    atomic_fetch_add(&r->active, 1);
    request_next_call(r);

    char *method = slice_strdup(c->details.method);
    proxy_tee_begin(r->tee, c->id, method != NULL ? method : "", proxy_now_us());
    free(method);

    /* The client's deadline travels with the call (core sends grpc-timeout). */
    c->up = grpc_channel_create_call(r->channel, NULL, GRPC_PROPAGATE_DEFAULTS, r->cq,
                                     c->details.method, NULL, c->details.deadline, NULL);
    if (c->up == NULL || md_filter(&c->req_md, &c->fwd_req) != 0) {
        c->status = GRPC_STATUS_INTERNAL;
        grpc_slice_unref(c->status_details);
        c->status_details = grpc_slice_from_static_string("tftap: cannot open upstream call");
        grpc_call_cancel_with_status(c->down, c->status, "tftap: cannot open upstream call", NULL);
        call_free(c);
        return;
    }

    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_SEND_INITIAL_METADATA;
    op.data.send_initial_metadata.count = c->fwd_req.count;
    op.data.send_initial_metadata.metadata = c->fwd_req.md;
    start(c, c->up, &op, 1, T_UP_SEND_MD);

    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_INITIAL_METADATA;
    op.data.recv_initial_metadata.recv_initial_metadata = &c->resp_md;
    start(c, c->up, &op, 1, T_UP_RECV_MD);

    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    op.data.recv_status_on_client.trailing_metadata = &c->trailers;
    op.data.recv_status_on_client.status = &c->status;
    op.data.recv_status_on_client.status_details = &c->status_details;
    op.data.recv_status_on_client.error_string = &c->error_string;
    start(c, c->up, &op, 1, T_UP_STATUS);

    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->cancelled;
    start(c, c->down, &op, 1, T_DOWN_CLOSE);

    down_recv(c);

    if (c->pending == 0)
        call_free(c);
}

static void on_call_event(struct relay_call *c, enum tag_kind kind, int ok)
{
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    c->pending--;

    switch (kind) {
    case T_UP_SEND_MD:
    case T_UP_CLOSE:
    case T_DOWN_STATUS:
        break;

    case T_DOWN_RECV: {
        grpc_byte_buffer *msg = c->down_in;
        c->down_in = NULL;
        if (ok && msg != NULL) {
            proxy_tee_message(c->relay->tee, c->id, STORE_REQUEST, proxy_now_us(), msg);
            if (c->up_failed) {
                /* The provider's status is on its way; the rest is moot. */
                grpc_byte_buffer_destroy(msg);
            } else if (!c->up_send_busy) {
                send_up(c, msg);
                down_recv(c);
            } else {
                c->to_up_next = msg; /* read no further until it is sent */
            }
        } else {
            /* Half-close, or the client failed (its close event says
             * whether it cancelled). */
            drop(&msg);
            c->down_eof = 1;
            if (!c->up_send_busy && !c->up_close_started && !c->up_failed)
                send_up_close(c);
        }
        break;
    }

    case T_UP_SEND:
        drop(&c->to_up);
        c->up_send_busy = 0;
        if (!ok) {
            c->up_failed = 1;
            drop(&c->to_up_next);
        } else if (c->to_up_next != NULL) {
            grpc_byte_buffer *msg = c->to_up_next;
            c->to_up_next = NULL;
            send_up(c, msg);
            down_recv(c);
        } else if (c->down_eof && !c->up_close_started) {
            send_up_close(c);
        }
        break;

    case T_UP_RECV_MD:
        if (md_filter(&c->resp_md, &c->fwd_resp) != 0) {
            grpc_call_cancel(c->up, NULL);
            c->up_recv_done = 1;
            maybe_send_status(c);
            break;
        }
        if (c->fwd_resp.count > 0) {
            /* The provider sent headers: pass them on now, a streaming
             * client may be waiting for them. */
            c->resp_md_sent = 1;
            c->down_send_busy = 1;
            ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
            ops[0].data.send_initial_metadata.count = c->fwd_resp.count;
            ops[0].data.send_initial_metadata.metadata = c->fwd_resp.md;
            if (start(c, c->down, ops, 1, T_DOWN_SEND) != 0)
                c->down_send_busy = 0;
        }
        up_recv(c);
        break;

    case T_UP_RECV: {
        grpc_byte_buffer *msg = c->up_in;
        c->up_in = NULL;
        if (ok && msg != NULL) {
            proxy_tee_message(c->relay->tee, c->id, STORE_RESPONSE, proxy_now_us(), msg);
            if (c->down_dead) {
                grpc_byte_buffer_destroy(msg);
                up_recv(c); /* the cancelled call ends soon; read to its end */
            } else if (!c->down_send_busy) {
                send_down(c, msg);
                up_recv(c);
            } else {
                c->to_down_next = msg;
            }
        } else {
            drop(&msg);
            c->up_recv_done = 1;
            maybe_send_status(c);
        }
        break;
    }

    case T_DOWN_SEND:
        drop(&c->to_down);
        c->down_send_busy = 0;
        if (!ok) {
            /* The client is gone; the provider's side is of no more use. */
            c->down_dead = 1;
            if (!c->up_done)
                grpc_call_cancel(c->up, NULL);
            if (c->to_down_next != NULL) {
                drop(&c->to_down_next);
                up_recv(c);
            }
        } else if (c->to_down_next != NULL) {
            grpc_byte_buffer *msg = c->to_down_next;
            c->to_down_next = NULL;
            send_down(c, msg);
            if (!c->up_recv_done)
                up_recv(c);
        }
        maybe_send_status(c);
        break;

    case T_UP_STATUS:
        c->status_received = 1;
        c->up_done = 1;
        if (md_filter(&c->trailers, &c->fwd_trailers) != 0)
            c->fwd_trailers.count = 0;
        maybe_send_status(c);
        break;

    case T_DOWN_CLOSE:
        if (c->cancelled && !c->up_done)
            grpc_call_cancel(c->up, NULL);
        break;

    default:
        break;
    }

    if (c->pending == 0)
        call_free(c);
}

static void *relay_main(void *arg)
{
    proxy_relay *r = arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(r->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        struct relay_tag *tag = ev.tag;
        if (tag->kind == T_NEW_CALL) {
            on_new_call(r, ev.success);
        } else if (tag->kind == T_SHUTDOWN) {
            r->server_down = 1;
        } else {
            on_call_event(tag->call, tag->kind, ev.success);
        }
        /* Once the server has stopped and the last call is freed nothing can
         * complete on the queue any more except its own shutdown. */
        if (r->server_down && atomic_load(&r->active) == 0) {
            grpc_completion_queue_shutdown(r->cq);
            r->server_down = 0; /* only once */
        }
    }
    return NULL;
}

int proxy_relay_start(const proxy_relay_opts *o, int connect_timeout_ms, proxy_relay **out,
                      tftap_buf *err)
{
    int rc = TFTAP_ENOMEM;
    proxy_relay *r = calloc(1, sizeof *r);
    grpc_completion_queue *wait_cq = NULL;

    *out = NULL;
    if (r == NULL)
        return TFTAP_ENOMEM;
    r->tee = o->tee;
    r->notify_fd = o->notify_fd;
    r->new_tag.kind = T_NEW_CALL;
    r->shutdown_tag.kind = T_SHUTDOWN;
    atomic_init(&r->active, 0);
    atomic_init(&r->draining, 0);
    atomic_init(&r->shutdown_started, 0);
    atomic_init(&r->next_id, 0);

    /* Provider schemas run to tens of MB: no message limit on either leg. */
    grpc_arg args[3];
    memset(args, 0, sizeof args);
    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[0].value.integer = -1;
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    args[1].value.integer = -1;
    args[2].type = GRPC_ARG_STRING;
    args[2].key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
    args[2].value.string = (char *)"localhost";
    grpc_channel_args server_args = {2, args};
    grpc_channel_args channel_args = {o->tls_upstream ? 3 : 2, args};

    r->cq = grpc_completion_queue_create_for_next(NULL);
    r->server = grpc_server_create(&server_args, NULL);
    if (r->cq == NULL || r->server == NULL)
        goto fail;
    grpc_server_register_completion_queue(r->server, r->cq, NULL);
    if (grpc_server_add_http2_port(r->server, o->listen_addr, o->server_creds) == 0) {
        if (err)
            tftap_buf_printf(err, "cannot listen on %s", o->listen_addr);
        rc = TFTAP_EIO;
        goto fail;
    }
    /* Started at once so that every failure below takes the one shutdown
     * path; nobody knows the address yet, so no call can arrive. */
    grpc_server_start(r->server);
    r->server_started = 1;
    r->channel = grpc_channel_create(o->upstream_target, o->channel_creds, &channel_args);
    if (r->channel == NULL)
        goto fail;

    /* Dial the provider before telling the client we exist, so a provider
     * we cannot reach (or whose certificate we refuse) fails the start-up
     * rather than the first call. */
    wait_cq = grpc_completion_queue_create_for_next(NULL);
    if (wait_cq == NULL)
        goto fail;
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(connect_timeout_ms, GPR_TIMESPAN));
    grpc_connectivity_state st = grpc_channel_check_connectivity_state(r->channel, 1);
    while (st != GRPC_CHANNEL_READY && st != GRPC_CHANNEL_SHUTDOWN) {
        grpc_channel_watch_connectivity_state(r->channel, st, deadline, wait_cq, NULL);
        grpc_event ev =
            grpc_completion_queue_next(wait_cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type != GRPC_OP_COMPLETE || !ev.success)
            break; /* deadline */
        st = grpc_channel_check_connectivity_state(r->channel, 1);
    }
    grpc_completion_queue_shutdown(wait_cq);
    while (grpc_completion_queue_next(wait_cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(wait_cq);
    if (st != GRPC_CHANNEL_READY) {
        if (err)
            tftap_buf_printf(err, "cannot connect to the provider at %s", o->upstream_target);
        rc = TFTAP_ECHILD;
        goto fail;
    }

    request_next_call(r);
    if (pthread_create(&r->thread, NULL, relay_main, r) != 0)
        goto fail;
    r->thread_started = 1;
    *out = r;
    return 0;

fail:
    proxy_relay_stop(r);
    return rc;
}

int proxy_relay_shutdown_provider(proxy_relay *r, int timeout_ms)
{
    /* Its own queue, plucked here: the relay thread never sees this call,
     * and the caller waits no longer than the call's deadline. */
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    if (cq == NULL)
        return TFTAP_ENOMEM;
    int rc = TFTAP_ECHILD;
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    static const char method_name[] = "/plugin.GRPCController/Shutdown";
    grpc_slice method = grpc_slice_from_static_string(method_name);
    grpc_call *call = grpc_channel_create_call(r->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                               method, NULL, deadline, NULL);
    grpc_byte_buffer *empty = grpc_raw_byte_buffer_create(NULL, 0); /* plugin.Empty */
    grpc_byte_buffer *answer = NULL;
    grpc_metadata_array md, trailers;
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_metadata_array_init(&md);
    grpc_metadata_array_init(&trailers);
    if (call != NULL && empty != NULL) {
        grpc_op ops[6];
        memset(ops, 0, sizeof ops);
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = empty;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &md;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &answer;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[5].data.recv_status_on_client.trailing_metadata = &trailers;
        ops[5].data.recv_status_on_client.status = &status;
        ops[5].data.recv_status_on_client.status_details = &details;
        static int tag;
        /* The provider sees this call like any other: so does the record. */
        uint64_t id = atomic_fetch_add(&r->next_id, 1) + 1;
        proxy_tee_begin(r->tee, id, method_name, proxy_now_us());
        proxy_tee_message(r->tee, id, STORE_REQUEST, proxy_now_us(), empty);
        if (grpc_call_start_batch(call, ops, 6, &tag, NULL) == GRPC_CALL_OK) {
            /* The call's deadline ends the batch; no later wait is needed. */
            grpc_event ev =
                grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
            if (ev.type == GRPC_OP_COMPLETE && status == GRPC_STATUS_OK)
                rc = 0;
            if (ev.type == GRPC_OP_COMPLETE && answer != NULL)
                proxy_tee_message(r->tee, id, STORE_RESPONSE, proxy_now_us(), answer);
        } else {
            status = GRPC_STATUS_INTERNAL;
        }
        char *text = slice_strdup(details);
        proxy_tee_end(r->tee, id, proxy_now_us(), (int)status, text != NULL ? text : "");
        free(text);
    }
    if (answer != NULL)
        grpc_byte_buffer_destroy(answer);
    if (empty != NULL)
        grpc_byte_buffer_destroy(empty);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&md);
    grpc_metadata_array_destroy(&trailers);
    if (call != NULL)
        grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    return rc;
}

void proxy_relay_drain(proxy_relay *r)
{
    atomic_store(&r->draining, 1);
    if (atomic_load(&r->active) == 0)
        notify(r);
}

int proxy_relay_active(proxy_relay *r)
{
    return atomic_load(&r->active);
}

void proxy_relay_stop(proxy_relay *r)
{
    if (r == NULL)
        return;
    atomic_store(&r->shutdown_started, 1);
    if (r->server_started) {
        /* Stop accepting, then end what is left: the client sees its calls
         * cancelled and the connection closing, as if the plugin had exited. */
        grpc_server_shutdown_and_notify(r->server, r->cq, &r->shutdown_tag);
        grpc_server_cancel_all_calls(r->server);
    }
    if (r->thread_started) {
        pthread_join(r->thread, NULL);
    } else if (r->cq != NULL) {
        /* No thread yet: collect the server's shutdown (and the failed call
         * request, if any) here. */
        if (!r->server_started)
            grpc_completion_queue_shutdown(r->cq);
        for (;;) {
            grpc_event ev =
                grpc_completion_queue_next(r->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
            if (ev.type == GRPC_QUEUE_SHUTDOWN)
                break;
            if (ev.type != GRPC_OP_COMPLETE)
                continue;
            struct relay_tag *tag = ev.tag;
            if (tag->kind == T_NEW_CALL)
                on_new_call(r, 0);
            else if (tag->kind == T_SHUTDOWN)
                grpc_completion_queue_shutdown(r->cq);
        }
    }
    if (r->server != NULL)
        grpc_server_destroy(r->server);
    if (r->channel != NULL)
        grpc_channel_destroy(r->channel);
    if (r->cq != NULL)
        grpc_completion_queue_destroy(r->cq);
    free(r);
}
