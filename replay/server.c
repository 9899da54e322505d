/* replay: the provider process tofu starts when a recording stands in for a
 * provider. go-plugin's side of the handshake (certificate, unix socket,
 * handshake line), then gRPC core as a generic server: every call arrives
 * through grpc_server_request_call whatever its method, and one completion
 * queue loop drives every call's batches on this thread, the only one that
 * touches the store and the book. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>
#include <openssl/pem.h>

#include "decoder/decoder.h"
#include "plugin/plugin.h"
#include "replay/replay.h"

/* gRPC status codes used here (grpc/status.h names them too). */
enum {
    ST_OK = 0,
    ST_INVALID_ARGUMENT = 3,
    ST_RESOURCE_EXHAUSTED = 8,
    ST_UNAVAILABLE = 14,
    ST_UNIMPLEMENTED = 12,
    ST_INTERNAL = 13,
};

/* After Shutdown, go-plugin's client closes its connection, which ends the
 * held streams; a client that does not gets them ended with OK after this
 * long, and cancelled after twice this long (go-plugin kills the process
 * 2 s after asking). */
#define SHUTDOWN_GRACE_MS 600
/* What we sent last may still sit in gRPC's transport when the calls are
 * done: unless the client showed it read everything (it closed the
 * connection), wait this long before shutting the server down. */
#define FLUSH_MS 100

/* What a method is to the server. */
enum kind {
    K_PROVIDER, /* answered from the book */
    K_SCHEMA,   /* GetProviderSchema / GetSchema: the stored bytes */
    K_STOP,     /* StopProvider / Stop: an empty answer */
    K_METADATA,
    K_IDENTITY,
    K_SHUTDOWN, /* go-plugin's GRPCController/Shutdown */
    K_HELD,     /* go-plugin's stdio and broker streams: open until shutdown */
    K_HEALTH,   /* grpc.health.v1 Check */
    K_UNKNOWN,
};

struct server;
struct rcall;

enum tag_what { T_NEW, T_RECV, T_SEND, T_CLOSE };
struct tag {
    struct rcall *c;
    enum tag_what what;
};

struct rcall {
    struct server *srv;
    struct rcall *next, *prev; /* live calls, for shutdown */
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    struct tag t_new, t_recv, t_send, t_close;
    char *method;
    enum kind kind;
    int pending;     /* batches started and not yet completed */
    int started;     /* the call exists (request_call completed) */
    int answered;    /* the request was taken and an answer chosen */
    int status_sent; /* the final batch was started */
    int closed;      /* RECV_CLOSE_ON_SERVER completed */
    int cancelled;   /* ... and said the client cancelled */
    grpc_byte_buffer *recv;
    tftap_buf req;
    /* The answer: messages sent one batch each, the last with the status. */
    tftap_buf *msgs;
    size_t n_msgs, next_msg;
    int status;
    grpc_slice status_details;
    int has_details;
    grpc_byte_buffer *sending;
};

struct server {
    const replay_server_opts *o;
    int protocol;
    tftap_buf schema_raw;
    dec_schema *schema;
    tftap_buf metadata; /* recorded GetMetadata response, when has_metadata */
    int has_metadata;
    tftap_buf identity; /* recorded GetResourceIdentitySchemas response */
    int has_identity;
    /* The provider answered these UNIMPLEMENTED (it was built before them)
     * and never OK: a replay answers as it did. */
    int metadata_unimplemented, identity_unimplemented;
    replay_book *book;
    unsigned char redact_key[32];

    grpc_completion_queue *cq;
    grpc_server *gs;
    struct rcall *live; /* every rcall, the waiting one included */
    int stopping;       /* Shutdown answered: waiting for the client to go */
    int64_t stop_started_ms;
    int64_t flush_until_ms; /* see stop_step */
    int shutting_down;      /* the gRPC server is shutting down: no new calls */
    int server_done;        /* shutdown_and_notify completed */
    int ended_held;         /* we ended the held streams ourselves */
    int cancelled_all;
    int client_closed; /* a call was cancelled by the client after Shutdown */
    struct tag t_shutdown;
};

static void slog(struct server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void slog(struct server *srv, const char *fmt, ...)
{
    if (srv->o->log == NULL)
        return;
    char *line = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0) {
        srv->o->log(srv->o->log_ctx, "out of memory");
        return;
    }
    /* One line each (a mismatch text has one line per differing path):
     * a newline and the indentation after it become one space. */
    char *d = line;
    for (const char *p = line; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\r') {
            while (p[1] == ' ' || p[1] == '\t' || p[1] == '\n' || p[1] == '\r')
                p++;
            *d++ = ' ';
        } else {
            *d++ = *p;
        }
    }
    *d = '\0';
    srv->o->log(srv->o->log_ctx, line);
    free(line);
}

/* ---- what the recording holds ------------------------------------------- */

struct schema_pick {
    const char *provider;
    tftap_buf *raw;
    int protocol;
    int found;
};

static int pick_schema(void *ctx, const store_schema_row *row)
{
    struct schema_pick *p = ctx;
    if (p->found || row->provider == NULL || strcmp(row->provider, p->provider) != 0)
        return 0;
    tftap_buf_append(p->raw, row->raw, row->size);
    p->protocol = row->protocol;
    p->found = 1;
    return 0;
}

struct response_pick {
    const char *provider;
    char *json;        /* the first successful recorded response */
    int unimplemented; /* an answer UNIMPLEMENTED was recorded */
};

static int pick_response(void *ctx, const store_call_row *row)
{
    struct response_pick *p = ctx;
    if (row->provider != NULL && strcmp(row->provider, p->provider) == 0 && row->has_status &&
        row->status_code == 12)
        p->unimplemented = 1;
    if (p->json != NULL || row->provider == NULL || strcmp(row->provider, p->provider) != 0 ||
        row->response_json == NULL || !row->has_status || row->status_code != 0)
        return 0;
    p->json = strdup(row->response_json);
    return p->json == NULL ? TFTAP_ENOMEM : 0;
}

/* A recorded answer of a method asked without arguments (GetMetadata,
 * GetResourceIdentitySchemas), encoded back to bytes; *have 0 when the
 * run never asked it or never got an OK answer, *unimplemented 1 when it
 * got UNIMPLEMENTED and never OK. */
static int recorded_answer(struct server *srv, const char *rpc, tftap_buf *out, int *have,
                           int *unimplemented, tftap_buf *err)
{
    struct response_pick p = {srv->o->provider, NULL, 0};
    *have = 0;
    *unimplemented = 0;
    int rc = store_calls_each(srv->o->s, srv->o->run_id, rpc, NULL, pick_response, &p);
    if (rc != 0) {
        free(p.json);
        tftap_buf_printf(err, "cannot read the recorded %s calls: %s", rpc, tftap_strerror(rc));
        return rc;
    }
    if (p.json == NULL) {
        *unimplemented = p.unimplemented;
        return 0;
    }
    char method[96];
    snprintf(method, sizeof method, "/tfplugin%d.Provider/%s", srv->protocol, rpc);
    dec_error de = DEC_ERROR_INIT;
    rc =
        dec_message_from_json(method, 1, NULL, p.json, strlen(p.json), srv->schema, NULL, out, &de);
    if (rc != 0) {
        tftap_buf_printf(err, "the recorded %s answer cannot be encoded: ", rpc);
        dec_error_format(&de, err);
    } else {
        *have = 1;
    }
    dec_error_done(&de);
    free(p.json);
    return rc;
}

static int load_recording(struct server *srv, tftap_buf *err)
{
    const replay_server_opts *o = srv->o;
    struct schema_pick sp = {o->provider, &srv->schema_raw, 0, 0};
    int rc = store_schemas_each(o->s, o->run_id, pick_schema, &sp);
    if (rc != 0) {
        tftap_buf_printf(err, "cannot read the schemas of run %lld: %s", (long long)o->run_id,
                         tftap_strerror(rc));
        return rc;
    }
    if (!sp.found) {
        tftap_buf_printf(err, "run %lld recorded no schema for provider %s", (long long)o->run_id,
                         o->provider);
        return TFTAP_ENOTFOUND;
    }
    if (tftap_buf_failed(&srv->schema_raw))
        return TFTAP_ENOMEM;
    if (sp.protocol != 5 && sp.protocol != 6) {
        tftap_buf_printf(err, "the recorded schema of %s has protocol %d", o->provider,
                         sp.protocol);
        return TFTAP_EDECODE;
    }
    srv->protocol = sp.protocol;
    dec_error de = DEC_ERROR_INIT;
    rc = dec_schema_from_provider_schema(srv->protocol, srv->schema_raw.data, srv->schema_raw.len,
                                         NULL, &srv->schema, &de);
    if (rc != 0) {
        tftap_buf_printf(err, "the recorded schema of %s cannot be read: ", o->provider);
        dec_error_format(&de, err);
        dec_error_done(&de);
        return rc;
    }
    dec_error_done(&de);
    /* A recorded answer that cannot be sent back is said and replaced by
     * the minimal one: the rest of the replay may still work. */
    static const char *const asked[] = {"GetMetadata", "GetResourceIdentitySchemas"};
    tftap_buf *bufs[] = {&srv->metadata, &srv->identity};
    int *have[] = {&srv->has_metadata, &srv->has_identity};
    int *unimpl[] = {&srv->metadata_unimplemented, &srv->identity_unimplemented};
    for (size_t i = 0; i < 2; i++) {
        tftap_buf why = TFTAP_BUF_INIT;
        rc = recorded_answer(srv, asked[i], bufs[i], have[i], unimpl[i], &why);
        if (rc == TFTAP_ENOMEM || rc == TFTAP_ESTORE) {
            tftap_buf_append(err, why.data, why.len);
            tftap_buf_done(&why);
            return rc;
        }
        if (rc != 0) {
            slog(srv, "%s; answering %s with an empty message", tftap_buf_cstr(&why), asked[i]);
            tftap_buf_reset(bufs[i]);
            *have[i] = 0;
        }
        tftap_buf_done(&why);
    }
    if (srv->has_identity) {
        /* Requests carrying identities decode with them, as recorded. */
        rc = dec_schema_add_identities(srv->schema, srv->protocol, srv->identity.data,
                                       srv->identity.len, &de);
        if (rc == TFTAP_ENOMEM) {
            dec_error_done(&de);
            return rc;
        }
        if (rc != 0) {
            tftap_buf why = TFTAP_BUF_INIT;
            dec_error_format(&de, &why);
            slog(srv,
                 "the recorded identity schemas cannot be read (%s): identities stay undecoded",
                 tftap_buf_cstr(&why));
            tftap_buf_done(&why);
        }
        dec_error_done(&de);
    }
    rc = replay_book_load(o->s, o->run_id, o->provider, &o->book, &srv->book);
    if (rc != 0) {
        tftap_buf_printf(err, "cannot load the recorded calls of %s: %s", o->provider,
                         tftap_strerror(rc));
        return rc;
    }
    if (getrandom(srv->redact_key, sizeof srv->redact_key, 0) != (ssize_t)sizeof srv->redact_key) {
        tftap_buf_printf(err, "getrandom: %s", strerror(errno));
        return TFTAP_EIO;
    }
    return 0;
}

/* ---- answers --------------------------------------------------------------- */

static const char *rpc_of(const char *method)
{
    const char *slash = strrchr(method, '/');
    return slash != NULL ? slash + 1 : method;
}

static enum kind classify(const struct server *srv, const char *method)
{
    if (strcmp(method, "/plugin.GRPCController/Shutdown") == 0)
        return K_SHUTDOWN;
    if (strcmp(method, "/plugin.GRPCStdio/StreamStdio") == 0 ||
        strcmp(method, "/plugin.GRPCBroker/StartStream") == 0)
        return K_HELD;
    if (strcmp(method, "/grpc.health.v1.Health/Check") == 0)
        return K_HEALTH;
    if (dec_method_protocol(method) != srv->protocol)
        return K_UNKNOWN;
    char prefix[32];
    int pn = snprintf(prefix, sizeof prefix, "/tfplugin%d.Provider/", srv->protocol);
    if (strncmp(method, prefix, (size_t)pn) != 0)
        return K_UNKNOWN;
    const char *rpc = method + pn;
    if (strcmp(rpc, srv->protocol == 5 ? "GetSchema" : "GetProviderSchema") == 0)
        return K_SCHEMA;
    if (strcmp(rpc, srv->protocol == 5 ? "Stop" : "StopProvider") == 0)
        return K_STOP;
    if (strcmp(rpc, "GetMetadata") == 0)
        return K_METADATA;
    if (strcmp(rpc, "GetResourceIdentitySchemas") == 0)
        return K_IDENTITY;
    return K_PROVIDER;
}

static void redact(void *ctx, const char *json, size_t len, char out[65])
{
    struct server *srv = ctx;
    tftap_hmac_sha256_hex(srv->redact_key, sizeof srv->redact_key, json, len, out);
}

static int add_msg(struct rcall *c, const void *p, size_t n)
{
    tftap_buf *m = realloc(c->msgs, (c->n_msgs + 1) * sizeof *m);
    if (m == NULL)
        return TFTAP_ENOMEM;
    c->msgs = m;
    tftap_buf nb = TFTAP_BUF_INIT;
    tftap_buf_append(&nb, p, n);
    if (tftap_buf_failed(&nb))
        return TFTAP_ENOMEM;
    c->msgs[c->n_msgs++] = nb;
    return 0;
}

static void set_status(struct rcall *c, int code, const char *details)
{
    /* A recording from someone else may hold any integer: gRPC defines
     * 0..16 and says a code it does not know is UNKNOWN. */
    c->status =
        code >= GRPC_STATUS_OK && code <= GRPC_STATUS_UNAUTHENTICATED ? code : GRPC_STATUS_UNKNOWN;
    if (c->has_details)
        grpc_slice_unref(c->status_details);
    c->has_details = 0;
    if (details != NULL && details[0] != '\0') {
        c->status_details = grpc_slice_from_copied_string(details);
        c->has_details = 1;
    }
}

/* A failure the client sees as the call's status, said on stderr too. */
static void fail(struct rcall *c, int code, const char *msg)
{
    slog(c->srv, "%s: %s", c->method, msg);
    for (size_t i = 0; i < c->n_msgs; i++)
        tftap_buf_done(&c->msgs[i]);
    c->n_msgs = 0;
    set_status(c, code, msg);
}

/* The method's normal response carrying one ERROR diagnostic; CallFunction
 * has no diagnostics, only a function error, which gets the same text. */
static int diagnostic_answer(struct rcall *c, const char *type_name, const char *summary,
                             const char *detail)
{
    tftap_buf j = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT;
    if (strcmp(rpc_of(c->method), "CallFunction") == 0) {
        tftap_buf text = TFTAP_BUF_INIT;
        tftap_buf_printf(&text, "%s: %s", summary, detail);
        tftap_buf_puts(&j, "{\"error\":{\"text\":");
        tftap_buf_json_string(&j, text.data != NULL ? text.data : "", text.len);
        tftap_buf_puts(&j, "}}");
        if (tftap_buf_failed(&text))
            j.failed = 1;
        tftap_buf_done(&text);
    } else {
        tftap_buf_puts(&j, "{\"diagnostics\":[{\"severity\":\"ERROR\",\"summary\":");
        tftap_buf_json_string(&j, summary, strlen(summary));
        tftap_buf_puts(&j, ",\"detail\":");
        tftap_buf_json_string(&j, detail, strlen(detail));
        tftap_buf_puts(&j, "}]}");
    }
    if (tftap_buf_failed(&j)) {
        tftap_buf_done(&j);
        return TFTAP_ENOMEM;
    }
    dec_error de = DEC_ERROR_INIT;
    int rc = dec_message_from_json(c->method, 1, type_name, j.data, j.len, c->srv->schema, NULL,
                                   &out, &de);
    if (rc == 0)
        rc = add_msg(c, out.data, out.len);
    dec_error_done(&de);
    tftap_buf_done(&j);
    tftap_buf_done(&out);
    if (rc == 0)
        set_status(c, ST_OK, NULL);
    return rc;
}

/* The recorded response JSON back to messages: an object is one message, an
 * array (a recorded stream) one message per element. */
static int encode_recorded(struct rcall *c, const char *type_name, const char *json, tftap_buf *why)
{
    const dec_limits lim = {0, REPLAY_MAX_MESSAGE};
    tftap_buf out = TFTAP_BUF_INIT;
    dec_error de = DEC_ERROR_INIT;
    int rc = 0;
    size_t n = strlen(json);
    size_t i = 0;
    while (i < n && (json[i] == ' ' || json[i] == '\n' || json[i] == '\t' || json[i] == '\r'))
        i++;
    if (i < n && json[i] == '[') {
        sj_doc *doc = NULL;
        rc = sj_parse(json, n, 0, &doc);
        if (rc != 0) {
            tftap_buf_printf(why, "the recorded response is not JSON: %s", tftap_strerror(rc));
            return rc;
        }
        tftap_buf el = TFTAP_BUF_INIT;
        for (const sj_node *e = sj_root(doc)->child; e != NULL && rc == 0; e = e->next) {
            tftap_buf_reset(&el);
            tftap_buf_reset(&out);
            sj_write(e, &el);
            if (tftap_buf_failed(&el)) {
                rc = TFTAP_ENOMEM;
                break;
            }
            rc = dec_message_from_json(c->method, 1, type_name, el.data, el.len, c->srv->schema,
                                       &lim, &out, &de);
            if (rc == 0)
                rc = add_msg(c, out.data, out.len);
        }
        tftap_buf_done(&el);
        sj_free(doc);
    } else {
        rc = dec_message_from_json(c->method, 1, type_name, json, n, c->srv->schema, &lim, &out,
                                   &de);
        if (rc == 0)
            rc = add_msg(c, out.data, out.len);
    }
    if (rc != 0 && rc != TFTAP_ENOMEM && de.reason != NULL) {
        tftap_buf_puts(why, "the recorded response cannot be encoded: ");
        dec_error_format(&de, why);
    } else if (rc != 0) {
        tftap_buf_printf(why, "the recorded response cannot be encoded: %s", tftap_strerror(rc));
    }
    dec_error_done(&de);
    tftap_buf_done(&out);
    return rc;
}

static void answer_provider(struct rcall *c)
{
    struct server *srv = c->srv;
    const char *rpc = rpc_of(c->method);
    char *type_name = NULL;
    tftap_buf json = TFTAP_BUF_INIT, why = TFTAP_BUF_INIT;
    dec_error de = DEC_ERROR_INIT;
    replay_answer ans;
    memset(&ans, 0, sizeof ans);

    int rc = dec_request_type_name(c->method, c->req.data, c->req.len, &type_name);
    if (rc == TFTAP_ENOMEM)
        goto nomem;
    dec_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.limits.max_bytes = REPLAY_MAX_MESSAGE;
    opts.redact = redact;
    opts.redact_ctx = srv;
    rc = dec_message_to_json(c->method, 0, c->req.data, c->req.len, srv->schema, type_name, &opts,
                             &json, &de);
    if (rc == TFTAP_ENOMEM)
        goto nomem;
    if (rc != 0) {
        tftap_buf_puts(&why, "cannot decode the request: ");
        dec_error_format(&de, &why);
        fail(c, ST_INVALID_ARGUMENT, tftap_buf_cstr(&why));
        goto done;
    }
    rc = replay_book_answer(srv->book, rpc, type_name, json.data, json.len, &ans);
    if (rc != 0) {
        tftap_buf_printf(&why, "cannot look the call up: %s", tftap_strerror(rc));
        fail(c, ST_INTERNAL, tftap_buf_cstr(&why));
        goto done;
    }
    if (!ans.found) {
        const char *detail = ans.mismatch != NULL ? ans.mismatch : "no recorded call of this kind";
        if (ans.mismatch != NULL)
            slog(srv, "%s", ans.mismatch); /* it names the call */
        else
            slog(srv, "%s%s%s: no recorded call matches", rpc, type_name ? " " : "",
                 type_name ? type_name : "");
        rc = diagnostic_answer(c, type_name, "tftap replay: no recorded call matches", detail);
        if (rc == TFTAP_ENOMEM)
            goto nomem;
        if (rc != 0)
            fail(c, ST_INTERNAL, "no recorded call matches, and the diagnostic cannot be encoded");
        goto done;
    }
    if (ans.response_json == NULL && !ans.has_status) {
        /* Sent as it is, no message and status OK, the client would read
         * an empty answer as a valid one. */
        tftap_buf_printf(&why, "recorded call %lld never got an answer (the recording ends first)",
                         (long long)ans.call_id);
        fail(c, ST_UNAVAILABLE, tftap_buf_cstr(&why));
        goto done;
    }
    if (ans.response_json != NULL && strstr(ans.response_json, "\"$sensitive\"") != NULL) {
        /* Secrets the configuration gave go back as given: the recorded
         * answer holds only their hashes (docs/replay.md). */
        tftap_buf plain = TFTAP_BUF_INIT;
        dec_error pe = DEC_ERROR_INIT;
        opts.redact = NULL;
        rc = dec_message_to_json(c->method, 0, c->req.data, c->req.len, srv->schema, type_name,
                                 &opts, &plain, &pe);
        if (rc == 0)
            rc = replay_book_fill_sensitive(srv->book, rpc, plain.data, plain.len, &ans);
        if (plain.data != NULL)
            OPENSSL_cleanse(plain.data, plain.len);
        tftap_buf_done(&plain);
        dec_error_done(&pe);
        if (rc == TFTAP_ENOMEM)
            goto nomem;
    }
    if (ans.response_json != NULL) {
        rc = encode_recorded(c, type_name, ans.response_json, &why);
        if (rc == TFTAP_ENOMEM)
            goto nomem;
        if (rc != 0) {
            tftap_buf_printf(&why, " (recorded call %lld)", (long long)ans.call_id);
            fail(c, ST_INTERNAL, tftap_buf_cstr(&why));
            goto done;
        }
    }
    set_status(c, ans.status_code, ans.status_message);
    goto done;
nomem:
    fail(c, ST_RESOURCE_EXHAUSTED, "out of memory");
done:
    free(ans.mismatch);
    free(type_name);
    dec_error_done(&de);
    tftap_buf_done(&json);
    tftap_buf_done(&why);
}

/* Choose the answer once the request message is in. */
static void answer(struct rcall *c)
{
    struct server *srv = c->srv;
    int rc = 0;
    set_status(c, ST_OK, NULL);
    switch (c->kind) {
    case K_SCHEMA:
        rc = add_msg(c, srv->schema_raw.data, srv->schema_raw.len);
        break;
    case K_STOP:
    case K_SHUTDOWN:
        rc = add_msg(c, "", 0); /* Stop.Response with no error; Empty */
        break;
    case K_METADATA:
        /* Never recorded: the empty response lists nothing and says no
         * error, which is valid; the client asks GetProviderSchema then. */
        if (srv->metadata_unimplemented)
            fail(c, ST_UNIMPLEMENTED, "unknown method GetMetadata (as recorded)");
        else
            rc = add_msg(c, srv->metadata.data, srv->has_metadata ? srv->metadata.len : 0);
        break;
    case K_IDENTITY:
        if (srv->identity_unimplemented)
            fail(c, ST_UNIMPLEMENTED, "unknown method GetResourceIdentitySchemas (as recorded)");
        else
            rc = add_msg(c, srv->identity.data, srv->has_identity ? srv->identity.len : 0);
        break;
    case K_HEALTH: {
        static const unsigned char serving[] = {0x08, 0x01}; /* status: SERVING */
        rc = add_msg(c, serving, sizeof serving);
        break;
    }
    case K_PROVIDER:
        answer_provider(c);
        break;
    case K_UNKNOWN: {
        tftap_buf m = TFTAP_BUF_INIT;
        tftap_buf_printf(&m, "method not served by a protocol %d replay", srv->protocol);
        fail(c, ST_UNIMPLEMENTED, tftap_buf_cstr(&m));
        tftap_buf_done(&m);
        break;
    }
    case K_HELD:
        break;
    }
    if (rc != 0)
        fail(c, ST_RESOURCE_EXHAUSTED, "out of memory");
}

/* ---- the completion queue loop ---------------------------------------------- */

static struct rcall *rcall_new(struct server *srv)
{
    struct rcall *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->srv = srv;
    c->t_new = (struct tag){c, T_NEW};
    c->t_recv = (struct tag){c, T_RECV};
    c->t_send = (struct tag){c, T_SEND};
    c->t_close = (struct tag){c, T_CLOSE};
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    c->next = srv->live;
    if (srv->live != NULL)
        srv->live->prev = c;
    srv->live = c;
    return c;
}

static void rcall_free(struct rcall *c)
{
    struct server *srv = c->srv;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        srv->live = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    if (c->call != NULL)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    if (c->recv != NULL)
        grpc_byte_buffer_destroy(c->recv);
    if (c->sending != NULL)
        grpc_byte_buffer_destroy(c->sending);
    if (c->has_details)
        grpc_slice_unref(c->status_details);
    for (size_t i = 0; i < c->n_msgs; i++)
        tftap_buf_done(&c->msgs[i]);
    free(c->msgs);
    tftap_buf_done(&c->req);
    free(c->method);
    free(c);
}

static int start(struct rcall *c, const grpc_op *ops, size_t n, struct tag *t)
{
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, t, NULL);
    if (e != GRPC_CALL_OK) {
        slog(c->srv, "%s: gRPC refused a batch (error %d)", c->method, (int)e);
        return -1;
    }
    c->pending++;
    return 0;
}

/* Wait for the next call, whatever its method. */
static int request_next(struct server *srv)
{
    if (srv->shutting_down)
        return 0;
    struct rcall *c = rcall_new(srv);
    if (c == NULL)
        return TFTAP_ENOMEM;
    grpc_call_error e = grpc_server_request_call(srv->gs, &c->call, &c->details, &c->md, srv->cq,
                                                 srv->cq, &c->t_new);
    if (e != GRPC_CALL_OK) {
        rcall_free(c);
        return TFTAP_EIO;
    }
    c->pending++;
    return 0;
}

static void recv_message(struct rcall *c)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->recv;
    start(c, &op, 1, &c->t_recv);
}

/* The next message of the answer, the last one with the status. */
static void send_next(struct rcall *c)
{
    grpc_op ops[2];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    if (c->next_msg < c->n_msgs) {
        tftap_buf *m = &c->msgs[c->next_msg++];
        grpc_slice sl =
            m->len > 0 ? grpc_slice_from_copied_buffer(m->data, m->len) : grpc_empty_slice();
        c->sending = grpc_raw_byte_buffer_create(&sl, 1);
        grpc_slice_unref(sl);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->sending;
        n++;
    }
    if (c->next_msg >= c->n_msgs) {
        ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[n].data.send_status_from_server.status = (grpc_status_code)c->status;
        ops[n].data.send_status_from_server.status_details =
            c->has_details ? &c->status_details : NULL;
        n++;
        c->status_sent = 1;
    }
    if (start(c, ops, n, &c->t_send) != 0)
        c->status_sent = 1; /* nothing more can go out on it */
}

static void begin_shutdown(struct server *srv)
{
    if (srv->shutting_down)
        return;
    srv->shutting_down = 1;
    srv->t_shutdown = (struct tag){NULL, T_NEW};
    grpc_server_shutdown_and_notify(srv->gs, srv->cq, &srv->t_shutdown);
}

/* Held streams end with OK, as a provider's do when it exits. */
static void end_held(struct server *srv)
{
    srv->ended_held = 1;
    for (struct rcall *c = srv->live; c != NULL; c = c->next)
        if (c->started && c->kind == K_HELD && !c->status_sent && !c->closed) {
            set_status(c, ST_OK, NULL);
            send_next(c);
        }
}

static void on_new(struct rcall *c, int ok)
{
    struct server *srv = c->srv;
    if (!ok) /* the server is shutting down: no call came */
        return;
    c->started = 1;
    if (request_next(srv) != 0)
        slog(srv, "cannot wait for more calls: out of memory");
    grpc_slice m = c->details.method;
    size_t mlen = GRPC_SLICE_LENGTH(m);
    c->method = malloc(mlen + 1);
    if (c->method == NULL) {
        grpc_call_cancel(c->call, NULL);
        return;
    }
    memcpy(c->method, GRPC_SLICE_START_PTR(m), mlen);
    c->method[mlen] = '\0';
    if (memchr(c->method, '\0', mlen) != NULL)
        c->method[0] = '\0'; /* a path with NUL in it names nothing we serve */
    c->kind = classify(srv, c->method);

    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->cancelled;
    start(c, &op, 1, &c->t_close);

    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->recv;
    start(c, ops, 2, &c->t_recv);
}

static void on_recv(struct rcall *c, int ok)
{
    grpc_byte_buffer *bb = c->recv;
    c->recv = NULL;
    if (!ok || c->closed) {
        if (bb != NULL)
            grpc_byte_buffer_destroy(bb);
        return;
    }
    if (bb != NULL) {
        if (!c->answered) {
            /* Only the first message is a request: the Provider services'
             * calls are unary or server streaming. */
            grpc_byte_buffer_reader r;
            if (grpc_byte_buffer_reader_init(&r, bb)) {
                grpc_slice s = grpc_byte_buffer_reader_readall(&r);
                tftap_buf_append(&c->req, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s));
                grpc_slice_unref(s);
                grpc_byte_buffer_reader_destroy(&r);
            } else {
                c->req.failed = 1;
            }
        }
        grpc_byte_buffer_destroy(bb);
        if (c->kind == K_HELD) {
            /* The broker's stream may carry more: read and drop them. */
            c->answered = 1;
            recv_message(c);
            return;
        }
        if (c->answered)
            return;
    } else if (c->kind == K_HELD || c->answered) {
        return; /* the client is done sending; the stream stays open */
    }
    c->answered = 1;
    if (bb == NULL) {
        fail(c, ST_INVALID_ARGUMENT, "the call carried no request message");
    } else if (tftap_buf_failed(&c->req)) {
        fail(c, ST_RESOURCE_EXHAUSTED, "cannot read the request message");
    } else {
        answer(c);
    }
    if (!c->status_sent)
        send_next(c);
}

static void on_send(struct rcall *c, int ok)
{
    if (c->sending != NULL) {
        grpc_byte_buffer_destroy(c->sending);
        c->sending = NULL;
    }
    if (ok && !c->status_sent && !c->closed)
        send_next(c);
    else if (c->kind == K_SHUTDOWN && (c->status_sent || !ok) && !c->srv->stopping) {
        c->srv->stopping = 1;
        c->srv->stop_started_ms = tftap_mono_ms();
    }
}

static void dispatch(struct server *srv, grpc_event ev)
{
    struct tag *t = ev.tag;
    if (t == &srv->t_shutdown) {
        srv->server_done = 1;
        return;
    }
    struct rcall *c = t->c;
    c->pending--;
    switch (t->what) {
    case T_NEW:
        on_new(c, ev.success);
        break;
    case T_RECV:
        on_recv(c, ev.success);
        break;
    case T_SEND:
        on_send(c, ev.success);
        break;
    case T_CLOSE:
        c->closed = 1;
        if (c->cancelled && srv->stopping)
            srv->client_closed = 1;
        break;
    }
    if (c->pending == 0 && (c->closed || !c->started))
        rcall_free(c);
}

/* After Shutdown: the gRPC server shuts down once the client has gone (its
 * held streams ended), or the grace time has passed. When we ended the last
 * calls ourselves, their last frames may still wait in the transport, and
 * shutting down queues a GOAWAY ahead of them (some clients then drop the
 * streams unfinished): the server gives them FLUSH_MS first. */
static void stop_step(struct server *srv)
{
    int open = 0;
    for (struct rcall *c = srv->live; c != NULL; c = c->next)
        open += c->started;
    int64_t now = tftap_mono_ms();
    int64_t waited = now - srv->stop_started_ms;
    if (open == 0 && srv->client_closed) {
        begin_shutdown(srv);
    } else if (open == 0) {
        if (srv->flush_until_ms == 0)
            srv->flush_until_ms = now + FLUSH_MS;
        else if (now >= srv->flush_until_ms)
            begin_shutdown(srv);
    } else if (waited >= 2 * SHUTDOWN_GRACE_MS && !srv->cancelled_all) {
        begin_shutdown(srv);
        grpc_server_cancel_all_calls(srv->gs);
        srv->cancelled_all = 1;
    } else if (waited >= SHUTDOWN_GRACE_MS && !srv->ended_held) {
        end_held(srv);
    }
}

/* ---- start-up: certificate, socket, handshake ---------------------------------- */

/* gRPC core's own errors (a client's failed TLS handshake, say) go where
 * ours go, as one line each; it calls this from its own threads, and the
 * log callback writes each line at once. */
static const replay_server_opts *_Atomic grpc_log_to; /* its threads read it as we clear it */

static void grpc_log(gpr_log_func_args *a)
{
    const replay_server_opts *o = grpc_log_to;
    if (o == NULL || o->log == NULL || a->severity < GPR_LOG_SEVERITY_ERROR)
        return;
    char *line = NULL;
    if (asprintf(&line, "grpc: %s", a->message) < 0)
        return;
    for (char *p = line; *p != '\0'; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    o->log(o->log_ctx, line);
    free(line);
}

/* 1 when pem holds a certificate OpenSSL reads. */
static int is_certificate(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    int ok = x != NULL;
    X509_free(x);
    BIO_free(b);
    return ok;
}

/* 1 when go-plugin's PLUGIN_PROTOCOL_VERSIONS (absent: anything) offers v. */
static int protocol_offered(char *const *envp, int v)
{
    const char *list = plugin_env_get(envp, "PLUGIN_PROTOCOL_VERSIONS");
    if (list == NULL || list[0] == '\0')
        return 1;
    const char *p = list;
    while (*p != '\0') {
        char *end = NULL;
        long x = strtol(p, &end, 10);
        if (end == p)
            return 0;
        if (x == v)
            return 1;
        p = end;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return 0;
    }
    return 0;
}

/* The socket's path, for the SIGTERM/SIGHUP handler: a provider killed
 * that way leaves nothing behind in the client's socket directory. */
static char term_sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void on_term(int sig)
{
    if (term_sock_path[0] != '\0')
        unlink(term_sock_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void drain(struct server *srv)
{
    grpc_completion_queue_shutdown(srv->cq);
    for (;;) {
        grpc_event ev =
            grpc_completion_queue_next(srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_OP_COMPLETE && ev.tag != &srv->t_shutdown) {
            struct tag *t = ev.tag;
            if (--t->c->pending == 0)
                rcall_free(t->c);
        }
    }
}

static int serve(struct server *srv, tftap_buf *err)
{
    const replay_server_opts *o = srv->o;
    plugin_cert cert;
    memset(&cert, 0, sizeof cert);
    tftap_buf sock = TFTAP_BUF_INIT, addr = TFTAP_BUF_INIT, line = TFTAP_BUF_INIT;
    grpc_server_credentials *creds = NULL;
    int rc = 0, listening = 0, started = 0;

    const char *client_cert = plugin_env_get(o->envp, "PLUGIN_CLIENT_CERT");
    if (client_cert != NULL && client_cert[0] == '\0')
        client_cert = NULL;
    if (client_cert != NULL && !is_certificate(client_cert)) {
        tftap_buf_puts(err, "PLUGIN_CLIENT_CERT holds no PEM certificate");
        rc = TFTAP_ETLS;
        goto out;
    }
    if (client_cert != NULL && plugin_cert_make(&cert) != 0) {
        tftap_buf_puts(err, "cannot make a TLS certificate");
        rc = TFTAP_ETLS;
        goto out;
    }
    rc = plugin_socket_path(o->envp, "tftap-replay", &sock, err);
    if (rc != 0)
        goto out;
    tftap_buf_printf(&addr, "unix:%s", tftap_buf_cstr(&sock));
    if (tftap_buf_failed(&addr)) {
        rc = TFTAP_ENOMEM;
        goto out;
    }
    memcpy(term_sock_path, sock.data, sock.len + 1); /* plugin_socket_path checked its length */
    signal(SIGTERM, on_term);
    signal(SIGHUP, on_term);
    /* A client gone before it read the handshake line: the write fails and
     * the socket is removed, instead of SIGPIPE leaving it behind. */
    signal(SIGPIPE, SIG_IGN);

    grpc_log_to = o;
    gpr_set_log_function(grpc_log);
    gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
    grpc_init();
    grpc_arg args[2];
    memset(args, 0, sizeof args);
    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[0].value.integer = (int)REPLAY_MAX_MESSAGE;
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    args[1].value.integer = -1;
    grpc_channel_args cargs = {2, args};
    srv->cq = grpc_completion_queue_create_for_next(NULL);
    srv->gs = grpc_server_create(&cargs, NULL);
    grpc_server_register_completion_queue(srv->gs, srv->cq, NULL);
    if (client_cert != NULL) {
        grpc_ssl_pem_key_cert_pair pair = {cert.key_pem, cert.cert_pem};
        creds = grpc_ssl_server_credentials_create_ex(
            client_cert, &pair, 1, GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY,
            NULL);
    } else {
        creds = grpc_insecure_server_credentials_create();
    }
    if (creds == NULL) {
        tftap_buf_puts(err, "cannot set up TLS with the client's certificate");
        rc = TFTAP_ETLS;
        goto stop;
    }
    listening = grpc_server_add_http2_port(srv->gs, tftap_buf_cstr(&addr), creds) != 0;
    grpc_server_credentials_release(creds);
    if (!listening) {
        tftap_buf_printf(err, "cannot listen on %s", tftap_buf_cstr(&sock));
        rc = TFTAP_EIO;
        goto stop;
    }
    grpc_server_start(srv->gs);
    started = 1;
    rc = request_next(srv);
    if (rc != 0) {
        tftap_buf_puts(err, "cannot wait for calls");
        goto stop;
    }
    tftap_buf_printf(&line, "1|%d|unix|%s|grpc|%s\n", srv->protocol, tftap_buf_cstr(&sock),
                     client_cert != NULL ? cert.der_b64 : "");
    if (tftap_buf_failed(&line) || tftap_write_all(o->out_fd, line.data, line.len) != 0) {
        tftap_buf_printf(err, "cannot write the handshake line: %s", strerror(errno));
        rc = TFTAP_EIO;
        goto stop;
    }

    while (!(srv->server_done && srv->live == NULL)) {
        gpr_timespec deadline = gpr_inf_future(GPR_CLOCK_REALTIME);
        if (srv->stopping && !srv->shutting_down)
            deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                    gpr_time_from_millis(FLUSH_MS / 4, GPR_TIMESPAN));
        grpc_event ev = grpc_completion_queue_next(srv->cq, deadline, NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            dispatch(srv, ev);
        else if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (srv->stopping)
            stop_step(srv);
    }

stop:
    if (!started) {
        srv->server_done = 1;
    } else if (!srv->shutting_down) {
        srv->shutting_down = 1;
        srv->t_shutdown = (struct tag){NULL, T_NEW};
        grpc_server_shutdown_and_notify(srv->gs, srv->cq, &srv->t_shutdown);
        grpc_server_cancel_all_calls(srv->gs);
    }
    while (!srv->server_done || srv->live != NULL) {
        grpc_event ev =
            grpc_completion_queue_next(srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE)
            break;
        dispatch(srv, ev);
    }
    grpc_server_destroy(srv->gs);
    drain(srv);
    grpc_completion_queue_destroy(srv->cq);
    while (srv->live != NULL)
        rcall_free(srv->live);
    grpc_shutdown();
    grpc_log_to = NULL;
out:
    if (sock.len > 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        unlink(tftap_buf_cstr(&sock));
        term_sock_path[0] = '\0';
    }
    plugin_cert_done(&cert);
    tftap_buf_done(&sock);
    tftap_buf_done(&addr);
    tftap_buf_done(&line);
    return rc;
}

int replay_serve(const replay_server_opts *o, tftap_buf *err)
{
    struct server srv;
    memset(&srv, 0, sizeof srv);
    srv.o = o;
    int rc = load_recording(&srv, err);
    if (rc == 0 && !protocol_offered(o->envp, srv.protocol)) {
        tftap_buf_printf(err,
                         "the recording speaks plugin protocol %d, which the client does not "
                         "offer (PLUGIN_PROTOCOL_VERSIONS=%s)",
                         srv.protocol, plugin_env_get(o->envp, "PLUGIN_PROTOCOL_VERSIONS"));
        rc = TFTAP_EPROTO;
    }
    if (rc == 0)
        rc = serve(&srv, err);
    replay_book_free(srv.book);
    dec_schema_free(srv.schema);
    tftap_buf_done(&srv.schema_raw);
    tftap_buf_done(&srv.metadata);
    tftap_buf_done(&srv.identity);
    OPENSSL_cleanse(srv.redact_key, sizeof srv.redact_key);
    return rc;
}
