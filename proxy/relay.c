/* proxy: the gRPC relay. One completion queue serves both legs and one
 * thread drives it; every call, whatever its method or streaming kind, runs
 * the same state machine, one direction per side:
 *
 *   request:  client --[DOWN_RECV]--> held --[UP_SEND]--> provider
 *   response: client <--[DOWN_SEND]-- held <--[UP_RECV]-- provider
 *   headers: [UP_RECV_MD] --> DOWN_SEND;  status: [UP_STATUS] --> DOWN_SEND
 *   client cancellation: [DOWN_CLOSE] --> cancel the upstream call
 *
 * Sends are not started from the event that makes them possible but when
 * the queue has nothing more ready at once (or after a few events), so that
 * what arrived together leaves together: a unary request's headers, message
 * and half-close go to the provider as one batch, and its answer's headers,
 * message and status to the client as one, each one write on the socket
 * (and one TLS record) instead of three. The wait is only for completions
 * already due, never for the network.
 *
 * Each direction reads one message ahead (so a unary request's half-close,
 * or a response's end, is known when its message is sent) and holds at most
 * two messages, which carries gRPC's flow control across. Messages are the
 * received grpc_byte_buffers passed on as they are; the tee gets a
 * reference-counted copy first, because a sent buffer is drained by the
 * send. Only this thread touches a call's state. */
#include "config.h"

#include <dlfcn.h>
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

/* Events handled before deferred sends go out even if more are ready, so
 * that a busy queue cannot hold them back. */
#define RELAY_FLUSH_EVERY 16

enum tag_kind {
    T_UP_RECV_MD, /* upstream RECV_INITIAL_METADATA */
    T_UP_STATUS,  /* upstream RECV_STATUS_ON_CLIENT */
    T_UP_SEND,    /* upstream SEND_INITIAL_METADATA, SEND_MESSAGE, SEND_CLOSE_FROM_CLIENT */
    T_UP_RECV,    /* upstream RECV_MESSAGE */
    T_DOWN_CLOSE, /* downstream RECV_CLOSE_ON_SERVER */
    T_DOWN_RECV,  /* downstream RECV_MESSAGE */
    T_DOWN_SEND,  /* downstream SEND_INITIAL_METADATA, SEND_MESSAGE, SEND_STATUS_FROM_SERVER */
    T_UP_UNARY,   /* upstream, a known unary method: the whole call in one batch */
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

/* One direction of a call: messages read on one leg, sent on the other. */
struct relay_dir {
    grpc_byte_buffer *in;      /* RECV_MESSAGE lands here */
    grpc_byte_buffer *held[2]; /* read, not sent yet; oldest first */
    unsigned nheld;
    grpc_byte_buffer *sending; /* in the send batch in flight */
    unsigned reading : 1;      /* a RECV_MESSAGE is outstanding */
    unsigned eof : 1;          /* nothing more will be read */
    unsigned busy : 1;         /* a send batch is outstanding */
    unsigned failed : 1;       /* a send failed: the rest is dropped */
    unsigned md_sent : 1;      /* SEND_INITIAL_METADATA started */
    unsigned end_sent : 1;     /* half-close (request) or status (response) started */
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
    const char *error_string; /* core's; freed with gpr_free */
    struct relay_dir req;     /* client -> provider */
    struct relay_dir resp;    /* provider -> client */
    int cancelled;            /* from RECV_CLOSE_ON_SERVER */
    int pending;              /* batches started and not yet completed */
    unsigned resp_md_received : 1;
    unsigned status_received : 1;
    unsigned up_done : 1; /* upstream finished or cancelled */
    unsigned dirty : 1;   /* on the relay's flush list */
    unsigned unary : 1;   /* a method known to be unary: the short path */
    struct relay_call *next_dirty;
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

    struct relay_call *dirty;     /* relay thread only: calls with sends to start */
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

/* Debian builds abseil without NDEBUG, which leaves absl::Mutex's deadlock
 * detector on: every lock gRPC core takes (over a hundred per relayed call)
 * then updates a global lock graph, an eighth of the relay's instructions.
 * Switch it off through abseil's own API when the library has it (its
 * mangled name carries the build's inline namespace); elsewhere this is a
 * no-op. Called before gRPC starts. */
void proxy_relay_tune_abseil(void)
{
    static const char *const names[] = {
        "_ZN4absl7debian329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
        "_ZN4absl7debian229SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
        "_ZN4absl29SetMutexDeadlockDetectionModeENS_15OnDeadlockCycleE",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *sym = dlsym(RTLD_DEFAULT, names[i]);
        if (sym != NULL) {
            void (*set_mode)(int);
            memcpy(&set_mode, &sym, sizeof set_mode);
            set_mode(0); /* absl::OnDeadlockCycle::kIgnore */
            return;
        }
    }
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

static void drop(grpc_byte_buffer **bb)
{
    if (*bb != NULL)
        grpc_byte_buffer_destroy(*bb);
    *bb = NULL;
}

static void dir_drop_all(struct relay_dir *d)
{
    for (unsigned i = 0; i < d->nheld; i++)
        drop(&d->held[i]);
    d->nheld = 0;
}

static grpc_byte_buffer *dir_pop(struct relay_dir *d)
{
    grpc_byte_buffer *bb = d->held[0];
    d->held[0] = d->held[1];
    d->held[1] = NULL;
    d->nheld--;
    return bb;
}

/* Read on while fewer than two messages are held or being sent. */
static int dir_may_read(const struct relay_dir *d)
{
    return !d->reading && !d->eof && d->nheld + (d->sending != NULL) < 2;
}

static void read_msg(struct relay_call *c, grpc_call *call, struct relay_dir *d, enum tag_kind kind)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &d->in;
    if (start(c, call, &op, 1, kind) == 0)
        d->reading = 1;
    else
        d->eof = 1;
}

/* Start the reads the state allows: requests stop once the provider
 * refused one; responses are read to their end even when the client is
 * gone, so the upstream call can finish. */
static void read_on(struct relay_call *c)
{
    if (!c->req.failed && dir_may_read(&c->req))
        read_msg(c, c->down, &c->req, T_DOWN_RECV);
    if (c->resp_md_received && dir_may_read(&c->resp))
        read_msg(c, c->up, &c->resp, T_UP_RECV);
}

static void mark_dirty(struct relay_call *c)
{
    if (c->dirty)
        return;
    c->dirty = 1;
    c->next_dirty = c->relay->dirty;
    c->relay->dirty = c;
}

/* Toward the provider: headers (once), the oldest held message, and the
 * half-close once the client's is known and nothing is left to send; one
 * batch at a time. */
static void flush_req(struct relay_call *c)
{
    struct relay_dir *d = &c->req;
    grpc_op ops[3];
    size_t n = 0;
    if (d->busy)
        return;
    if (d->failed)
        dir_drop_all(d);
    memset(ops, 0, sizeof ops);
    if (!d->md_sent) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].data.send_initial_metadata.count = c->fwd_req.count;
        ops[n].data.send_initial_metadata.metadata = c->fwd_req.md;
        n++;
        d->md_sent = 1;
    }
    if (d->nheld > 0) {
        d->sending = dir_pop(d);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = d->sending;
        n++;
    }
    if (!d->failed && d->eof && d->nheld == 0 && !d->end_sent) {
        ops[n].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        n++;
        d->end_sent = 1;
    }
    if (n == 0)
        return;
    d->busy = 1;
    if (start(c, c->up, ops, n, T_UP_SEND) != 0) {
        d->busy = 0;
        d->failed = 1;
        drop(&d->sending);
        dir_drop_all(d);
    }
}

/* Toward the client: the provider's headers (as soon as it sent any, a
 * streaming client may be waiting for them; else with the first message or
 * the status), the oldest held message, and the status once every message
 * went before it. With core 1.51 a server status sent alone (trailers-only)
 * stays queued until the call is cancelled, so a failed call is answered
 * with empty headers and then its status, which clients read the same way. */
static void flush_resp(struct relay_call *c)
{
    struct relay_dir *d = &c->resp;
    grpc_op ops[3];
    size_t n = 0;
    if (d->busy || d->end_sent)
        return;
    if (d->failed) {
        dir_drop_all(d); /* the client is gone */
        return;
    }
    int send_msg = d->nheld > 0;
    int send_status = c->status_received && d->eof && d->nheld == (unsigned)send_msg;
    memset(ops, 0, sizeof ops);
    if (!d->md_sent && (send_msg || send_status || c->fwd_resp.count > 0)) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].data.send_initial_metadata.count = c->fwd_resp.count;
        ops[n].data.send_initial_metadata.metadata = c->fwd_resp.md;
        n++;
        d->md_sent = 1;
    }
    if (send_msg) {
        d->sending = dir_pop(d);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = d->sending;
        n++;
    }
    if (send_status) {
        ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[n].data.send_status_from_server.status = c->status;
        ops[n].data.send_status_from_server.status_details = &c->status_details;
        ops[n].data.send_status_from_server.trailing_metadata_count = c->fwd_trailers.count;
        ops[n].data.send_status_from_server.trailing_metadata = c->fwd_trailers.md;
        n++;
        d->end_sent = 1;
    }
    if (n == 0)
        return;
    d->busy = 1;
    if (start(c, c->down, ops, n, T_DOWN_SEND) != 0) {
        d->busy = 0;
        d->failed = 1;
        drop(&d->sending);
        dir_drop_all(d);
    }
}

static void call_free(struct relay_call *c)
{
    proxy_relay *r = c->relay;
    char *details = slice_strdup(c->status_details);
    proxy_tee_end(r->tee, c->id, proxy_now_us(), (int)c->status, details != NULL ? details : "");
    free(details);

    struct relay_dir *dirs[] = {&c->req, &c->resp};
    for (size_t i = 0; i < 2; i++) {
        drop(&dirs[i]->in);
        drop(&dirs[i]->sending);
        dir_drop_all(dirs[i]);
    }
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

/* Start what the events since the last flush made possible. */
static void flush_call(struct relay_call *c)
{
    c->dirty = 0;
    if (c->up != NULL) {
        flush_req(c);
        flush_resp(c);
        read_on(c);
    }
    if (c->pending == 0)
        call_free(c);
}

static void flush_all(proxy_relay *r)
{
    while (r->dirty != NULL) {
        struct relay_call *c = r->dirty;
        r->dirty = c->next_dirty;
        c->next_dirty = NULL;
        flush_call(c);
    }
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

/* Methods of the plugin protocols (proto/tfplugin5.proto, tfplugin6.proto)
 * and of go-plugin known to be unary. Only those take the short path; any
 * other method, streaming or newer than this list, takes the general one. */
static const char *const unary_v5[] = {"ApplyResourceChange",
                                       "CallFunction",
                                       "CloseEphemeralResource",
                                       "Configure",
                                       "GenerateResourceConfig",
                                       "GetFunctions",
                                       "GetMetadata",
                                       "GetResourceIdentitySchemas",
                                       "GetSchema",
                                       "ImportResourceState",
                                       "MoveResourceState",
                                       "OpenEphemeralResource",
                                       "PlanAction",
                                       "PlanResourceChange",
                                       "PrepareProviderConfig",
                                       "ReadDataSource",
                                       "ReadResource",
                                       "RenewEphemeralResource",
                                       "Stop",
                                       "UpgradeResourceIdentity",
                                       "UpgradeResourceState",
                                       "ValidateActionConfig",
                                       "ValidateDataSourceConfig",
                                       "ValidateEphemeralResourceConfig",
                                       "ValidateListResourceConfig",
                                       "ValidateResourceTypeConfig",
                                       NULL};
static const char *const unary_v6[] = {"ApplyResourceChange",
                                       "CallFunction",
                                       "CloseEphemeralResource",
                                       "ConfigureProvider",
                                       "ConfigureStateStore",
                                       "DeleteState",
                                       "GetFunctions",
                                       "GetMetadata",
                                       "GetProviderSchema",
                                       "GetResourceIdentitySchemas",
                                       "GetStates",
                                       "ImportResourceState",
                                       "LockState",
                                       "MoveResourceState",
                                       "OpenEphemeralResource",
                                       "PlanAction",
                                       "PlanResourceChange",
                                       "ReadDataSource",
                                       "ReadResource",
                                       "RenewEphemeralResource",
                                       "StopProvider",
                                       "UnlockState",
                                       "UpgradeResourceIdentity",
                                       "UpgradeResourceState",
                                       "ValidateActionConfig",
                                       "ValidateDataResourceConfig",
                                       "ValidateEphemeralResourceConfig",
                                       "ValidateListResourceConfig",
                                       "ValidateProviderConfig",
                                       "ValidateResourceConfig",
                                       "ValidateStateStoreConfig",
                                       NULL};
static const char *const unary_provisioner[] = {"GetSchema", "ValidateProvisionerConfig", "Stop",
                                                NULL};
static const char *const unary_controller[] = {"Shutdown", NULL};
static const struct {
    const char *service; /* "/package.Service/" */
    const char *const *methods;
} unary_services[] = {
    {"/tfplugin5.Provider/", unary_v5},
    {"/tfplugin6.Provider/", unary_v6},
    {"/tfplugin5.Provisioner/", unary_provisioner},
    {"/plugin.GRPCController/", unary_controller},
};

static int method_is_unary(grpc_slice method)
{
    const char *m = (const char *)GRPC_SLICE_START_PTR(method);
    size_t n = GRPC_SLICE_LENGTH(method);
    for (size_t i = 0; i < sizeof unary_services / sizeof unary_services[0]; i++) {
        size_t sn = strlen(unary_services[i].service);
        if (n <= sn || memcmp(m, unary_services[i].service, sn) != 0)
            continue;
        for (const char *const *name = unary_services[i].methods; *name != NULL; name++)
            if (strlen(*name) == n - sn && memcmp(*name, m + sn, n - sn) == 0)
                return 1;
        return 0;
    }
    return 0;
}

/* The short path of a unary call: the request message arrived (or the
 * client ended without one): the provider gets headers, message and
 * half-close, and is asked for headers, answer and status, in one batch. */
static void unary_send_up(struct relay_call *c)
{
    grpc_op ops[6];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].data.send_initial_metadata.count = c->fwd_req.count;
    ops[n].data.send_initial_metadata.metadata = c->fwd_req.md;
    n++;
    if (c->req.sending != NULL) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->req.sending;
        n++;
    }
    ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[n].data.recv_initial_metadata.recv_initial_metadata = &c->resp_md;
    n++;
    ops[n].op = GRPC_OP_RECV_MESSAGE;
    ops[n].data.recv_message.recv_message = &c->resp.in;
    n++;
    ops[n].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[n].data.recv_status_on_client.trailing_metadata = &c->trailers;
    ops[n].data.recv_status_on_client.status = &c->status;
    ops[n].data.recv_status_on_client.status_details = &c->status_details;
    ops[n].data.recv_status_on_client.error_string = &c->error_string;
    n++;
    start(c, c->up, ops, n, T_UP_UNARY);
}

/* ... and its answer goes to the client the same way: headers, message and
 * status in one batch. */
static void unary_send_down(struct relay_call *c)
{
    grpc_op ops[3];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].data.send_initial_metadata.count = c->fwd_resp.count;
    ops[n].data.send_initial_metadata.metadata = c->fwd_resp.md;
    n++;
    if (c->resp.sending != NULL) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->resp.sending;
        n++;
    }
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = c->status;
    ops[n].data.send_status_from_server.status_details = &c->status_details;
    ops[n].data.send_status_from_server.trailing_metadata_count = c->fwd_trailers.count;
    ops[n].data.send_status_from_server.trailing_metadata = c->fwd_trailers.md;
    n++;
    start(c, c->down, ops, n, T_DOWN_SEND);
}

static void on_unary_event(struct relay_call *c, enum tag_kind kind, int ok)
{
    grpc_op op;
    switch (kind) {
    case T_DOWN_RECV:
        c->req.reading = 0;
        c->req.sending = c->req.in;
        c->req.in = NULL;
        if (!ok)
            drop(&c->req.sending);
        if (c->req.sending != NULL)
            proxy_tee_message(c->relay->tee, c->id, STORE_REQUEST, proxy_now_us(), c->req.sending);
        unary_send_up(c);
        memset(&op, 0, sizeof op);
        op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        op.data.recv_close_on_server.cancelled = &c->cancelled;
        start(c, c->down, &op, 1, T_DOWN_CLOSE);
        break;

    case T_UP_UNARY:
        /* The provider's status is in, whatever became of the rest. */
        drop(&c->req.sending);
        c->status_received = 1;
        c->up_done = 1;
        c->resp.sending = c->resp.in;
        c->resp.in = NULL;
        if (c->resp.sending != NULL)
            proxy_tee_message(c->relay->tee, c->id, STORE_RESPONSE, proxy_now_us(),
                              c->resp.sending);
        if (md_filter(&c->resp_md, &c->fwd_resp) != 0)
            c->fwd_resp.count = 0;
        if (md_filter(&c->trailers, &c->fwd_trailers) != 0)
            c->fwd_trailers.count = 0;
        unary_send_down(c);
        break;

    case T_DOWN_SEND:
        drop(&c->resp.sending);
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

/* A client call arrived: open its twin to the provider and start both legs.
 * The upstream headers wait for the flush, which will most often carry the
 * request message and its half-close along. */
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
        if (c->up != NULL) {
            grpc_call_unref(c->up);
            c->up = NULL;
        }
        call_free(c);
        return;
    }

    grpc_op op;
    if (method_is_unary(c->details.method)) {
        /* The request is what the provider waits for: read it first, and
         * watch for cancellation once it is on its way (a client that
         * cancels before ends this read too). */
        c->unary = 1;
        read_msg(c, c->down, &c->req, T_DOWN_RECV);
        if (c->pending == 0)
            call_free(c);
        return;
    }

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

    read_on(c);
    mark_dirty(c);
}

/* A message (or the end) read on one leg. */
static void on_read(struct relay_call *c, struct relay_dir *d, enum store_direction dir, int ok)
{
    grpc_byte_buffer *msg = d->in;
    d->in = NULL;
    d->reading = 0;
    if (!ok || msg == NULL) {
        /* Half-close, the provider's end, or a failed call (its status or
         * close event says how). */
        drop(&msg);
        d->eof = 1;
        return;
    }
    proxy_tee_message(c->relay->tee, c->id, dir, proxy_now_us(), msg);
    if (d->failed) {
        /* The other leg is gone; the rest is moot. */
        grpc_byte_buffer_destroy(msg);
        return;
    }
    d->held[d->nheld++] = msg;
}

static void on_call_event(struct relay_call *c, enum tag_kind kind, int ok)
{
    c->pending--;
    if (c->unary) {
        on_unary_event(c, kind, ok);
        return;
    }

    switch (kind) {
    case T_DOWN_RECV:
        on_read(c, &c->req, STORE_REQUEST, ok);
        break;

    case T_UP_SEND:
        c->req.busy = 0;
        drop(&c->req.sending);
        if (!ok) {
            /* The provider's status is on its way; the rest is moot. */
            c->req.failed = 1;
            dir_drop_all(&c->req);
        }
        break;

    case T_UP_RECV_MD:
        if (md_filter(&c->resp_md, &c->fwd_resp) != 0) {
            grpc_call_cancel(c->up, NULL);
            c->resp.eof = 1;
            break;
        }
        c->resp_md_received = 1;
        break;

    case T_UP_RECV:
        on_read(c, &c->resp, STORE_RESPONSE, ok);
        break;

    case T_DOWN_SEND:
        c->resp.busy = 0;
        drop(&c->resp.sending);
        if (!ok) {
            /* The client is gone; the provider's side is of no more use. */
            c->resp.failed = 1;
            dir_drop_all(&c->resp);
            if (!c->up_done)
                grpc_call_cancel(c->up, NULL);
        }
        break;

    case T_UP_STATUS:
        c->status_received = 1;
        c->up_done = 1;
        if (md_filter(&c->trailers, &c->fwd_trailers) != 0)
            c->fwd_trailers.count = 0;
        break;

    case T_DOWN_CLOSE:
        if (c->cancelled && !c->up_done)
            grpc_call_cancel(c->up, NULL);
        break;

    default:
        break;
    }

    /* Read ahead at once (a half-close already received then completes
     * before the flush); sends wait for the flush. */
    read_on(c);
    mark_dirty(c);
}

static void *relay_main(void *arg)
{
    proxy_relay *r = arg;
    int since_flush = 0;
    for (;;) {
        /* With sends deferred, only look at what is ready now; the flush
         * runs when nothing is. */
        gpr_timespec deadline = r->dirty != NULL ? gpr_time_0(GPR_CLOCK_MONOTONIC)
                                                 : gpr_inf_future(GPR_CLOCK_MONOTONIC);
        grpc_event ev = grpc_completion_queue_next(r->cq, deadline, NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_QUEUE_TIMEOUT) {
            flush_all(r);
            since_flush = 0;
        } else if (ev.type == GRPC_OP_COMPLETE) {
            struct relay_tag *tag = ev.tag;
            if (tag->kind == T_NEW_CALL)
                on_new_call(r, ev.success);
            else if (tag->kind == T_SHUTDOWN)
                r->server_down = 1;
            else
                on_call_event(tag->call, tag->kind, ev.success);
            if (++since_flush >= RELAY_FLUSH_EVERY) {
                flush_all(r);
                since_flush = 0;
            }
        }
        /* Once the server has stopped and the last call is freed nothing can
         * complete on the queue any more except its own shutdown. */
        if (r->server_down && r->dirty == NULL && atomic_load(&r->active) == 0) {
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
    grpc_arg args[4];
    memset(args, 0, sizeof args);
    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[0].value.integer = -1;
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    args[1].value.integer = -1;
    /* A relay must not retry on its own (the client decides that), and
     * without retries core leaves out the filter that keeps every sent
     * message for a replay. */
    args[2].type = GRPC_ARG_INTEGER;
    args[2].key = (char *)GRPC_ARG_ENABLE_RETRIES;
    args[2].value.integer = 0;
    args[3].type = GRPC_ARG_STRING;
    args[3].key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
    args[3].value.string = (char *)"localhost";
    grpc_channel_args server_args = {2, args};
    grpc_channel_args channel_args = {o->tls_upstream ? 4 : 3, args};

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
