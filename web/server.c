/* web: the HTTP side of `tftap serve`. libmicrohttpd parses HTTP and runs
 * in its epoll mode without threads of its own; its epoll descriptor is
 * watched by one uv_poll_t and its timeouts by a uv_timer_t, so that the
 * whole server, the store queries and the live updates share one thread
 * and one libuv loop. */
#include "web/web.h"
#include "web/web_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <uv.h>
#include <zlib.h>

/* libmicrohttpd is opened by web_server_new, not linked: every tftap
 * process (each shim OpenTofu starts) would otherwise map it and the
 * libraries it pulls in (GnuTLS, whose constructor runs in each). */
#define MHD_FUNCTIONS(X)                                                                           \
    X(add_response_header)                                                                         \
    X(create_response_from_buffer)                                                                 \
    X(create_response_from_buffer_with_free_callback)                                              \
    X(create_response_from_callback)                                                               \
    X(destroy_response)                                                                            \
    X(get_connection_info)                                                                         \
    X(get_connection_values)                                                                       \
    X(get_daemon_info)                                                                             \
    X(get_timeout)                                                                                 \
    X(lookup_connection_value)                                                                     \
    X(queue_response)                                                                              \
    X(resume_connection)                                                                           \
    X(run)                                                                                         \
    X(start_daemon)                                                                                \
    X(stop_daemon)                                                                                 \
    X(suspend_connection)
/* Each pointer has its function's type as microhttpd.h declares it. */
#define MHD_FIELD(f) __typeof__(MHD_##f) *f;
static struct {
    MHD_FUNCTIONS(MHD_FIELD)
} mhd;
#define MHD_SYM(f) {"MHD_" #f, (void **)&mhd.f},
static const struct tftap_dlsym mhd_syms[] = {MHD_FUNCTIONS(MHD_SYM)};
/* libmicrohttpd12's soname (what libmicrohttpd-dev's .so points to). */
static tftap_lib mhd_lib = {
    .soname = "libmicrohttpd.so.12", .syms = mhd_syms, .nsyms = sizeof mhd_syms / sizeof *mhd_syms};

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define TOKEN_BYTES 16
/* The header the pages send the token in. */
#define TOKEN_HEADER "X-Tftap-Token"
/* Bounds on what clients can hold: connections, live-update listeners,
 * bytes of one connection's request (headers included: more is answered
 * 431 by libmicrohttpd) and of one listener's unsent events. */
#define MAX_CONNECTIONS 256
/* Connections whose request is not in yet (headers still coming): at most
 * this many; a new connection past it closes the oldest (a trickling
 * client loses its place; a browser sends its headers at once). */
#define MAX_PENDING 32
/* Seconds a connection has for a request's headers, from its accept or
 * the end of its last response: an absolute deadline, which trickling a
 * byte now and then does not move. */
#define HEADER_DEADLINE_S 10
/* Analyses (a check, a diff, a run's changes, verdicts) take seconds and
 * hundreds of megabytes on a large run: at most HEAVY_MAX run at once, on
 * libuv's pool of 4 threads, so that the others are always there for the
 * cheap requests (a page of calls, the runs list); up to HEAVY_QUEUE more
 * wait their turn (parked, holding no thread), beyond that 503. */
#define HEAVY_MAX 2
#define HEAVY_QUEUE 64
/* Query arguments one request may carry (more: 414). */
#define MAX_QUERY_ARGS 32
#define MAX_LISTENERS 32
#define CONNECTION_MEMORY (128 * 1024)
#define LISTENER_BACKLOG 4096
#define PING_MS 15000
/* Open PostgreSQL sessions kept between API requests (libuv's pool runs 4
 * threads unless UV_THREADPOOL_SIZE says otherwise; a request finding none
 * free opens one and closes it after). */
#define POOL_MAX 4
/* How often the live-update check tries to reconnect a lost session. */
#define RECONNECT_MS 1000

static const char csp[] = "default-src 'self'; script-src 'self'; style-src 'self'; "
                          "img-src 'self'; connect-src 'self'; object-src 'none'; "
                          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/* One accepted connection (MHD's socket context): when its request's
 * headers are due, 0 once they are in. */
struct conn {
    struct conn *next, *prev;
    int fd;
    int64_t due_ms;
};

/* One open /api/events stream. */
struct listener {
    struct listener *next, *prev;
    web_server *w;
    struct MHD_Connection *conn;
    tftap_buf pending; /* events not yet handed to libmicrohttpd */
    int suspended;
};

struct web_server {
    uv_loop_t loop;
    uv_poll_t poll;
    uv_timer_t mhd_timer, live_timer;
    uv_signal_t sigint, sigterm;
    int running;
    struct MHD_Daemon *mhd;
    store *s;
    unsigned poll_ms;
    char token[2 * TOKEN_BYTES + 1];
    char host[80]; /* "127.0.0.1:PORT", "[::1]:PORT" */
    char port[8];  /* "PORT" */
    char url[160];
    int loopback, wildcard;
    int64_t data_version;
    uint64_t seq;
    int64_t last_ping_ms;
    struct listener *listeners;
    int nlisteners;
    int nheavy;                      /* analyses running */
    struct job *queue, **queue_tail; /* analyses waiting, oldest first */
    int nqueued;
    struct conn *conns; /* newest first */
    int npending;
    unsigned header_deadline_ms;
    struct web_schema_cache schema;
    struct web_verdict_cache verdicts;
    struct web_budget budget;
    char *db_path;
    int jobs; /* API requests (and reconnects) running on the thread pool */
    /* A PostgreSQL record: sessions kept open between requests (a session
     * is a backend process and a login on the server; an SQLite file is
     * opened per request, as cheap as an open(2)). */
    int pooled;
    pthread_mutex_t pool_lock;
    store *pool[POOL_MAX];
    int npool;
    /* The live-update check's own session once w->s's was lost, or once
     * the SQLite file at db_path was another than the one it watched. */
    store *live;
    int reconnecting;
    int64_t next_reconnect_ms;
    /* The SQLite file watched (file_known: its device and inode are known). */
    dev_t file_dev;
    ino_t file_ino;
    int file_known;
};

/* ---- the listening address --------------------------------------------- */

static int parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *sl, int *v6)
{
    char addr[64];
    const char *colon;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof addr)
            return TFTAP_EINVAL;
        memcpy(addr, spec + 1, (size_t)(close - spec - 1));
        addr[close - spec - 1] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon || (size_t)(colon - spec) >= sizeof addr)
            return TFTAP_EINVAL;
        memcpy(addr, spec, (size_t)(colon - spec));
        addr[colon - spec] = '\0';
    }
    const char *p = colon + 1;
    long port = 0;
    if (!*p || strlen(p) > 5)
        return TFTAP_EINVAL;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return TFTAP_EINVAL;
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        return TFTAP_EINVAL;
    if (strcmp(addr, "localhost") == 0)
        snprintf(addr, sizeof addr, "127.0.0.1");
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *sl = sizeof *in4;
        *v6 = 0;
    } else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *sl = sizeof *in6;
        *v6 = 1;
    } else {
        return TFTAP_EINVAL;
    }
    return 0;
}

/* A literal IP address (what DNS rebinding can never put in a Host). */
static int is_ip_literal(const char *h, size_t n)
{
    char tmp[64];
    unsigned char bin[16];
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        if (n - 2 >= sizeof tmp)
            return 0;
        memcpy(tmp, h + 1, n - 2);
        tmp[n - 2] = '\0';
        return inet_pton(AF_INET6, tmp, bin) == 1;
    }
    if (n >= sizeof tmp)
        return 0;
    memcpy(tmp, h, n);
    tmp[n] = '\0';
    return inet_pton(AF_INET, tmp, bin) == 1;
}

/* The Host header names this server: its own address and port, or on a
 * loopback address "localhost:PORT"; on a wildcard address any literal IP
 * with our port. Anything else is a name some DNS resolved to us: 403. */
static int host_ok(const web_server *w, const char *host)
{
    if (strcmp(host, w->host) == 0)
        return 1;
    const char *colon = strrchr(host, ':');
    if (!colon || strcmp(colon + 1, w->port) != 0)
        return 0;
    size_t n = (size_t)(colon - host);
    if (w->loopback && n == 9 && strncasecmp(host, "localhost", 9) == 0)
        return 1;
    return w->wildcard && is_ip_literal(host, n);
}

static int token_ok(const web_server *w, const char *t)
{
    return t && strlen(t) == sizeof w->token - 1 &&
           CRYPTO_memcmp(t, w->token, sizeof w->token - 1) == 0;
}

static void schedule(web_server *w, uint64_t ms);

/* ---- responses ------------------------------------------------------------- */

static enum MHD_Result queue(web_server *w, struct MHD_Connection *c, unsigned status,
                             struct MHD_Response *r, const char *type)
{
    if (!r)
        return MHD_NO;
    mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    mhd.add_response_header(r, "Content-Security-Policy", csp);
    mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
    mhd.add_response_header(r, "X-Frame-Options", "DENY");
    mhd.add_response_header(r, "Referrer-Policy", "no-referrer");
    mhd.add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
    mhd.add_response_header(r, "Cache-Control", "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        mhd.add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ret = mhd.queue_response(c, status, r);
    mhd.destroy_response(r);
    return ret;
}

static enum MHD_Result reply_text(web_server *w, struct MHD_Connection *c, unsigned status,
                                  const char *text)
{
    struct MHD_Response *r =
        mhd.create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    return queue(w, c, status, r, "text/plain; charset=utf-8");
}

static const struct web_asset *asset(const char *path)
{
    for (size_t i = 0; i < web_nassets; i++)
        if (strcmp(web_assets[i].path, path) == 0)
            return &web_assets[i];
    return NULL;
}

/* The client takes gzip: "gzip" among Accept-Encoding's codings, not
 * refused with q=0. */
static int takes_gzip(struct MHD_Connection *c)
{
    const char *ae =
        mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    for (const char *p = ae; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",;");
        const char *q = p + n;
        int is_gzip = n == 4 && strncasecmp(p, "gzip", 4) == 0;
        size_t param = *q == ';' ? strcspn(q, ",") : 0;
        int refused = 0;
        if (param) {
            const char *v = strstr(q, "q=");
            refused = v && v < q + param && strtod(v + 2, NULL) == 0;
        }
        if (is_gzip && !refused)
            return 1;
        p = q + param;
    }
    return 0;
}

static enum MHD_Result reply_asset(web_server *w, struct MHD_Connection *c, const char *path)
{
    const struct web_asset *a = asset(path);
    if (!a)
        return reply_text(w, c, MHD_HTTP_NOT_FOUND, "not found\n");
    int gz = a->gz_len && a->gz_len < a->len && takes_gzip(c);
    struct MHD_Response *r = mhd.create_response_from_buffer(
        gz ? a->gz_len : a->len, (void *)(gz ? a->gz : a->data), MHD_RESPMEM_PERSISTENT);
    if (r && gz)
        mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (r)
        mhd.add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    return queue(w, c, MHD_HTTP_OK, r, a->type);
}

/* ---- the JSON API, answered off the loop ------------------------------------
 * A query over a large run can take seconds; the loop must keep serving
 * meanwhile. Each API request parks its connection, runs on libuv's thread
 * pool with a read-only connection of its own, and is answered back on the
 * loop. */

#define MAX_ARGS 16

struct job {
    uv_work_t req;
    web_server *w;
    struct MHD_Connection *conn;
    char *path;
    struct {
        char *key, *value;
    } args[MAX_ARGS];
    int nargs;
    uint64_t seq;     /* w->seq when it came */
    int heavy;        /* an analysis (see is_heavy) */
    int gzip;         /* the client takes gzip (see takes_gzip) */
    struct job *next; /* in the queue of analyses waiting for their turn */
    int status;
    tftap_buf body;
};

static const char *job_arg(void *ctx, const char *name)
{
    struct job *j = ctx;
    for (int i = 0; i < j->nargs; i++)
        if (strcmp(j->args[i].key, name) == 0)
            return j->args[i].value;
    return NULL;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct job *j = cls;
    if (j->nargs == MAX_ARGS || strcmp(key, "token") == 0 || job_arg(j, key))
        return MHD_YES; /* the first of a repeated argument counts */
    char *k = strdup(key), *v = strdup(value ? value : "");
    if (!k || !v) {
        free(k);
        free(v);
        return MHD_YES;
    }
    j->args[j->nargs].key = k;
    j->args[j->nargs++].value = v;
    return MHD_YES;
}

static void job_free(struct job *j)
{
    for (int i = 0; i < j->nargs; i++) {
        free(j->args[i].key);
        free(j->args[i].value);
    }
    free(j->path);
    tftap_buf_done(&j->body);
    free(j);
}

/* A pooled session, checked without a round trip (a session the server
 * ended is found closed), or NULL. */
static store *pool_take(web_server *w)
{
    store *s = NULL;
    pthread_mutex_lock(&w->pool_lock);
    if (w->npool > 0)
        s = w->pool[--w->npool];
    pthread_mutex_unlock(&w->pool_lock);
    int64_t v = 0;
    if (s && (store_data_version(s, &v) != 0 || store_connection_lost(s))) {
        store_close(s);
        s = NULL;
    }
    return s;
}

static void pool_give(web_server *w, store *s)
{
    if (s && w->pooled && !store_connection_lost(s)) {
        pthread_mutex_lock(&w->pool_lock);
        if (w->npool < POOL_MAX) {
            w->pool[w->npool++] = s;
            s = NULL;
        }
        pthread_mutex_unlock(&w->pool_lock);
    }
    store_close(s);
}

/* Every session LISTENs to the record's change notifications, and the
 * server pushes them to idle sessions too: read them off the kept sessions
 * (no round trip, libpq never blocks here), or a full socket would stall
 * their backends and with them the server's notification queue. */
static void pool_drain(web_server *w)
{
    int64_t v = 0;
    pthread_mutex_lock(&w->pool_lock);
    for (int i = 0; i < w->npool; i++)
        store_data_version(w->pool[i], &v);
    pthread_mutex_unlock(&w->pool_lock);
}

/* Bodies shorter than this go as they are: gzip's header and trailer (18
 * bytes) and a thread's deflate state cost more than they would save. */
#define GZIP_MIN 1024
/* zlib's default level: a run page's first view (the verdict, 200 calls,
 * 20 changes) shrinks from 1.3 MB to 48 KB (bench/web). */
#define GZIP_LEVEL 6

/* Replace body with its gzip compression (RFC 1952, deflate's windowBits
 * 15 + 16), on the worker thread. Returns 1 when it did, 0 when the body
 * goes as it is (short, no memory, or no smaller). */
static int gzip_body(tftap_buf *body)
{
    if (body->len < GZIP_MIN || body->len > UINT32_MAX / 2 || tftap_buf_failed(body))
        return 0;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    /* Room for the body's own length: an answer that does not fit is not
     * smaller compressed, and goes as it is. */
    tftap_buf out = TFTAP_BUF_INIT;
    int done = 0;
    if (tftap_buf_reserve(&out, body->len + 1) == 0) {
        z.next_in = (Bytef *)body->data;
        z.avail_in = (uInt)body->len;
        z.next_out = (Bytef *)out.data;
        z.avail_out = (uInt)body->len;
        if (deflate(&z, Z_FINISH) == Z_STREAM_END) {
            out.len = z.total_out;
            out.data[out.len] = '\0';                   /* as every tftap_buf is */
            char *fit = realloc(out.data, out.len + 1); /* held until sent */
            if (fit) {
                out.data = fit;
                out.cap = out.len + 1;
            }
            done = 1;
        }
    }
    deflateEnd(&z);
    if (done) {
        tftap_buf_done(body);
        *body = out;
    } else {
        tftap_buf_done(&out);
    }
    return done;
}

static void job_work(uv_work_t *req)
{
    struct job *j = container_of(req, struct job, req);
    web_server *w = j->w;
    int want_gzip = j->gzip;
    j->gzip = 0;
    /* A pooled session the server ended while it waited fails the request
     * the moment it is used: once more on a new session. */
    for (int attempt = 0; attempt < 2; attempt++) {
        store *s = w->pooled ? pool_take(w) : NULL;
        int rc = s ? 0 : store_open(w->db_path, STORE_OPEN_READONLY, &s);
        tftap_buf_reset(&j->body);
        if (rc) {
            tftap_buf_printf(&j->body, "{\"error\":\"cannot open the database: %s\"}\n",
                             tftap_strerror(rc));
            j->status = 500;
            return;
        }
        struct web_request r = {j->path, job_arg, j, &w->verdicts, j->seq, &w->budget};
        j->status = web_api(s, &w->schema, &r, &j->body);
        int lost = store_connection_lost(s);
        pool_give(w, s);
        if (!lost)
            break;
    }
    j->gzip = want_gzip && gzip_body(&j->body);
}

static void finish_stop(web_server *w);
static void queue_run(web_server *w);

static void job_done(uv_work_t *req, int status)
{
    struct job *j = container_of(req, struct job, req);
    web_server *w = j->w;
    w->jobs--;
    if (j->heavy)
        w->nheavy--;
    if (w->running) {
        struct MHD_Response *r = NULL;
        unsigned code = (unsigned)j->status;
        const char *type = "application/json; charset=utf-8";
        if (tftap_buf_failed(&j->body)) {
            static const char oom[] = "out of memory\n";
            r = mhd.create_response_from_buffer(sizeof oom - 1, (void *)oom,
                                                MHD_RESPMEM_PERSISTENT);
            code = MHD_HTTP_INTERNAL_SERVER_ERROR;
            type = "text/plain; charset=utf-8";
        } else {
            size_t len = 0;
            if (!j->gzip)
                tftap_buf_cstr(&j->body);
            char *data = tftap_buf_take(&j->body, &len);
            r = mhd.create_response_from_buffer_with_free_callback(len, data, free);
            if (!r)
                free(data);
            if (r && j->gzip)
                mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
            if (r)
                mhd.add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
        }
        /* Queued while parked: sent once resumed. */
        queue(w, j->conn, code, r, type);
    }
    mhd.resume_connection(j->conn);
    job_free(j);
    if (w->running) {
        queue_run(w);
        schedule(w, 0);
    } else if (w->jobs == 0)
        finish_stop(w);
}

/* An analysis: its cost grows with the run (or two), not with a page. */
static int is_heavy(const struct job *j)
{
    const char *p = j->path;
    if (strncmp(p, "/diff/", 6) == 0 || strcmp(p, "/history") == 0)
        return 1;
    if (strcmp(p, "/runs") == 0) {
        const char *v = job_arg((void *)j, "verdict");
        return v && *v && strcmp(v, "0") != 0;
    }
    size_t n = strlen(p);
    static const char *const tails[] = {"/check", "/changes", "/verdict"};
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        size_t t = strlen(tails[i]);
        if (strncmp(p, "/runs/", 6) == 0 && n > t && strcmp(p + n - t, tails[i]) == 0)
            return 1;
    }
    return 0;
}

static int job_start(web_server *w, struct job *j)
{
    if (j->heavy)
        w->nheavy++;
    if (uv_queue_work(&w->loop, &j->req, job_work, job_done) != 0) {
        if (j->heavy)
            w->nheavy--;
        return -1;
    }
    return 0;
}

/* A job that never ran: its connection goes on (answered with text, or
 * without an answer when the server is stopping). */
static void job_drop(web_server *w, struct job *j, unsigned status, const char *text)
{
    if (text && w->running) {
        struct MHD_Response *r =
            mhd.create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
        queue(w, j->conn, status, r, "text/plain; charset=utf-8");
    }
    mhd.resume_connection(j->conn);
    w->jobs--;
    job_free(j);
}

/* The next analyses waiting, while there is room. */
static void queue_run(web_server *w)
{
    while (w->queue && w->nheavy < HEAVY_MAX) {
        struct job *j = w->queue;
        w->queue = j->next;
        if (!w->queue)
            w->queue_tail = &w->queue;
        w->nqueued--;
        if (job_start(w, j) != 0)
            job_drop(w, j, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot queue the request\n");
    }
}

static void queue_drop_all(web_server *w)
{
    while (w->queue) {
        struct job *j = w->queue;
        w->queue = j->next;
        w->nqueued--;
        job_drop(w, j, 0, NULL);
    }
    w->queue_tail = &w->queue;
}

static enum MHD_Result reply_api(web_server *w, struct MHD_Connection *c, const char *path)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        return reply_text(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    j->w = w;
    j->conn = c;
    j->seq = w->seq;
    mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, j);
    j->heavy = is_heavy(j);
    j->gzip = takes_gzip(c);
    if (j->heavy && w->nheavy >= HEAVY_MAX && w->nqueued >= HEAVY_QUEUE) {
        job_free(j);
        return reply_text(w, c, MHD_HTTP_SERVICE_UNAVAILABLE,
                          "too many analyses waiting: try again when they are done\n");
    }
    mhd.suspend_connection(c);
    w->jobs++;
    if (j->heavy && w->nheavy >= HEAVY_MAX) {
        *w->queue_tail = j;
        w->queue_tail = &j->next;
        w->nqueued++;
        return MHD_YES;
    }
    if (job_start(w, j) != 0) {
        w->jobs--;
        mhd.resume_connection(c);
        job_free(j);
        return reply_text(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot queue the request\n");
    }
    return MHD_YES;
}

/* ---- live updates: server-sent events --------------------------------------- */

static ssize_t listener_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct listener *l = cls;
    if (l->pending.len) {
        size_t n = l->pending.len < max ? l->pending.len : max;
        memcpy(buf, l->pending.data, n);
        memmove(l->pending.data, l->pending.data + n, l->pending.len - n);
        l->pending.len -= n;
        return (ssize_t)n;
    }
    if (!l->w->running)
        return MHD_CONTENT_READER_END_OF_STREAM;
    /* Nothing to send: park the connection until there is (no busy loop). */
    mhd.suspend_connection(l->conn);
    l->suspended = 1;
    return 0;
}

static void listener_free(void *cls)
{
    struct listener *l = cls;
    web_server *w = l->w;
    if (l->prev)
        l->prev->next = l->next;
    else
        w->listeners = l->next;
    if (l->next)
        l->next->prev = l->prev;
    w->nlisteners--;
    tftap_buf_done(&l->pending);
    free(l);
}

static void listener_wake(struct listener *l)
{
    if (l->suspended) {
        l->suspended = 0;
        mhd.resume_connection(l->conn);
    }
}

/* Queue text for every listener; one that has not read its backlog only
 * misses events (each says "something changed": the next one says it too). */
static void broadcast(web_server *w, const char *text)
{
    size_t n = strlen(text);
    for (struct listener *l = w->listeners; l; l = l->next) {
        if (l->pending.len + n <= LISTENER_BACKLOG)
            tftap_buf_append(&l->pending, text, n);
        listener_wake(l);
    }
    if (w->listeners)
        schedule(w, 0);
}

static enum MHD_Result reply_events(web_server *w, struct MHD_Connection *c)
{
    if (w->nlisteners >= MAX_LISTENERS)
        return reply_text(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "too many live listeners\n");
    struct listener *l = calloc(1, sizeof *l);
    if (!l)
        return reply_text(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    l->w = w;
    l->conn = c;
    tftap_buf_printf(&l->pending, "retry: 2000\nevent: hello\ndata: {\"seq\":%llu}\n\n",
                     (unsigned long long)w->seq);
    struct MHD_Response *r =
        mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, listener_read, l, listener_free);
    if (!r) {
        tftap_buf_done(&l->pending);
        free(l);
        return MHD_NO;
    }
    l->next = w->listeners;
    if (w->listeners)
        w->listeners->prev = l;
    w->listeners = l;
    w->nlisteners++;
    return queue(w, c, MHD_HTTP_OK, r, "text/event-stream");
}

/* The live-update check's session was lost (the server restarted, or ended
 * it): a new one is opened on the thread pool, never on the loop (a server
 * that does not answer holds a connect for seconds). */
struct reconnect {
    uv_work_t req;
    web_server *w;
    store *s;
    struct stat st; /* the SQLite file, taken before it was opened */
    int st_ok;
};

static void reconnect_work(uv_work_t *req)
{
    struct reconnect *r = container_of(req, struct reconnect, req);
    /* Before the open: a file replaced in between is found on the next
     * look, never taken for the one opened. */
    r->st_ok = !r->w->pooled && stat(r->w->db_path, &r->st) == 0;
    if (store_open(r->w->db_path, STORE_OPEN_READONLY, &r->s) != 0)
        r->s = NULL;
}

static void reconnect_done(uv_work_t *req, int status)
{
    struct reconnect *r = container_of(req, struct reconnect, req);
    web_server *w = r->w;
    w->jobs--;
    w->reconnecting = 0;
    if (r->s && w->running) {
        store_close(w->live);
        w->live = r->s;
        w->file_known = r->st_ok;
        w->file_dev = r->st.st_dev;
        w->file_ino = r->st.st_ino;
        /* The new session counts from zero, and commits made while none
         * was open went unannounced: say that something changed. */
        w->data_version = 0;
        store_data_version(w->live, &w->data_version);
        w->seq++;
        char ev[96];
        snprintf(ev, sizeof ev, "event: change\ndata: {\"seq\":%llu}\n\n",
                 (unsigned long long)w->seq);
        broadcast(w, ev);
    } else {
        store_close(r->s);
        w->next_reconnect_ms = tftap_mono_ms() + RECONNECT_MS;
    }
    free(r);
    if (!w->running && w->jobs == 0)
        finish_stop(w);
}

static void reconnect(web_server *w)
{
    if (w->reconnecting || tftap_mono_ms() < w->next_reconnect_ms)
        return;
    struct reconnect *r = calloc(1, sizeof *r);
    if (!r)
        return;
    r->w = w;
    w->jobs++;
    w->reconnecting = 1;
    if (uv_queue_work(&w->loop, &r->req, reconnect_work, reconnect_done) != 0) {
        w->jobs--;
        w->reconnecting = 0;
        free(r);
    }
}

/* 1 when the SQLite file at db_path is another than the one watched (the
 * record removed and made again by a later run, a copy moved in): its
 * commits would never show on the watched one. A path with no file yet
 * is not another file. */
static int file_replaced(web_server *w)
{
    struct stat st;
    return w->file_known && stat(w->db_path, &st) == 0 &&
           (st.st_dev != w->file_dev || st.st_ino != w->file_ino);
}

static void on_live(uv_timer_t *t)
{
    web_server *w = container_of(t, web_server, live_timer);
    int64_t v = 0;
    store *s = w->live ? w->live : w->s;
    int rc = store_data_version(s, &v);
    if ((rc != 0 && store_connection_lost(s)) || file_replaced(w))
        reconnect(w);
    else if (rc == 0 && v != w->data_version) {
        w->data_version = v;
        w->seq++;
        char ev[96];
        snprintf(ev, sizeof ev, "event: change\ndata: {\"seq\":%llu}\n\n",
                 (unsigned long long)w->seq);
        broadcast(w, ev);
    }
    if (w->pooled)
        pool_drain(w);
    int64_t now = tftap_mono_ms();
    if (now - w->last_ping_ms >= PING_MS) {
        /* A comment line: finds listeners that went away while parked. */
        w->last_ping_ms = now;
        broadcast(w, ": ping\n\n");
    }
}

/* ---- requests ------------------------------------------------------------ */

static int is_page(const char *url)
{
    static const char *const prefixes[] = {"/runs/", "/diff/", "/check/", "/schemas/", "/history/"};
    if (strcmp(url, "/") == 0 || strcmp(url, "/schemas") == 0)
        return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(url, prefixes[i], strlen(prefixes[i])) == 0 && url[strlen(prefixes[i])])
            return 1;
    return 0;
}

/* ---- connections: a deadline for each request's headers --------------------- */

static void conn_close(web_server *w, struct conn *k)
{
    /* libmicrohttpd reads the end of the stream and closes it itself. */
    shutdown(k->fd, SHUT_RDWR);
    k->due_ms = -1;
    w->npending--;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    web_server *w = cls;
    struct conn *k = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci || !(k = calloc(1, sizeof *k)))
            return; /* untracked: libmicrohttpd's idle timeout still holds */
        k->fd = ci->connect_fd;
        k->due_ms = tftap_mono_ms() + w->header_deadline_ms;
        k->next = w->conns;
        if (w->conns)
            w->conns->prev = k;
        w->conns = k;
        *socket_context = k;
        if (++w->npending > MAX_PENDING) {
            struct conn *old = NULL;
            for (struct conn *o = k->next; o; o = o->next)
                if (o->due_ms > 0)
                    old = o; /* the list is newest first: the last is the oldest */
            if (old)
                conn_close(w, old);
        }
        return;
    }
    if (!k)
        return;
    if (k->due_ms > 0)
        w->npending--;
    if (k->prev)
        k->prev->next = k->next;
    else
        w->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    free(k);
    *socket_context = NULL;
}

/* The request's headers are in: no deadline until it is answered. */
static void conn_ready(web_server *w, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn *k = ci ? ci->socket_context : NULL;
    if (k && k->due_ms > 0) {
        k->due_ms = 0;
        w->npending--;
    }
}

/* A response went out: the next request on the connection has its own deadline. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    web_server *w = cls;
    const union MHD_ConnectionInfo *ci =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn *k = ci ? ci->socket_context : NULL;
    if (k && k->due_ms == 0) {
        k->due_ms = tftap_mono_ms() + w->header_deadline_ms;
        w->npending++;
    }
}

static void sweep_connections(web_server *w)
{
    int64_t now = tftap_mono_ms();
    for (struct conn *k = w->conns; k; k = k->next)
        if (k->due_ms > 0 && now >= k->due_ms)
            conn_close(w, k);
}

/* ---- requests ------------------------------------------------------------ */

/* What the request line says of itself, before libmicrohttpd decodes it
 * (where %00 would end the path): the access handler's *con_cls. */
static const char uri_ok[] = "ok", uri_control[] = "control", uri_args[] = "args";

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    int args = 0;
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return (void *)uri_control;
        if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
            int v = hexval(p[1]) * 16 + hexval(p[2]);
            if (v < 0x20 || v == 0x7f)
                return (void *)uri_control;
        }
        if (*p == '?' || *p == '&')
            args++;
    }
    if (args <= MAX_QUERY_ARGS)
        return (void *)uri_ok;
    /* Too many: the request is answered 414 whatever they say, but
     * libmicrohttpd parses them next, a record each from the connection's
     * 128 KiB, and a few thousand exhaust it before our handler runs (the
     * client then got no answer at all). uri is the connection's own read
     * buffer, which libmicrohttpd itself cuts up next: the query becomes one
     * argument of 'x's, which costs one record whatever its length. */
    char *q = strchr((char *)uri, '?');
    if (q)
        memset(q + 1, 'x', strlen(q + 1));
    return (void *)uri_args;
}

/* Headers that must come once: a second Host or Content-Length is how a
 * request smuggles past a proxy, a second token a way to confuse us. */
struct header_count {
    int host, length, token;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    struct header_count *n = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
        n->host++;
    else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        n->length++;
    else if (strcasecmp(key, TOKEN_HEADER) == 0)
        n->token++;
    return MHD_YES;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    web_server *w = cls;
    conn_ready(w, c);
    if (*con_cls == uri_control)
        return reply_text(w, c, MHD_HTTP_BAD_REQUEST, "a control byte in the URL\n");
    if (*con_cls == uri_args)
        return reply_text(w, c, MHD_HTTP_URI_TOO_LONG, "too many query arguments\n");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply_text(w, c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served\n");
    struct header_count n = {0, 0, 0};
    mhd.get_connection_values(c, MHD_HEADER_KIND, count_header, &n);
    if (n.host > 1 || n.length > 1 || n.token > 1)
        return reply_text(w, c, MHD_HTTP_BAD_REQUEST, "a header that must come once came twice\n");
    /* The body is not read before the first call: its headers say. */
    const char *clen =
        mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (*upload_data_size || (clen && strcmp(clen, "0") != 0) ||
        mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        return reply_text(w, c, MHD_HTTP_BAD_REQUEST, "a GET request has no body\n");
    const char *host = mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host || !host_ok(w, host))
        return reply_text(w, c, MHD_HTTP_FORBIDDEN,
                          "forbidden: this server answers only to its own address\n");
    /* The pages and their assets hold no data: served to anyone who names
     * this server (the page takes the token from the URL it was opened
     * with). The API needs the token, in its header (what the pages send)
     * or ?token= (curl, and the event stream, which cannot send headers).
     * Cookies are never read: any service on this host is sent them and
     * can set them. */
    if (strncmp(url, "/assets/", 8) == 0)
        return reply_asset(w, c, url + 7);
    if (is_page(url))
        return reply_asset(w, c, "/index.html");
    if (strncmp(url, "/api/", 5) != 0)
        return reply_text(w, c, MHD_HTTP_NOT_FOUND, "not found\n");
    if (!token_ok(w, mhd.lookup_connection_value(c, MHD_HEADER_KIND, TOKEN_HEADER)) &&
        !token_ok(w, mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token")))
        return reply_text(w, c, MHD_HTTP_UNAUTHORIZED,
                          "unauthorized: open the URL `tftap serve` printed (it carries the "
                          "token)\n");
    if (strcmp(url, "/api/events") == 0)
        return reply_events(w, c);
    return reply_api(w, c, url + 4);
}

/* ---- the loop -------------------------------------------------------------- */

static void run_mhd(web_server *w)
{
    if (!w->mhd)
        return;
    mhd.run(w->mhd);
    sweep_connections(w);
    MHD_UNSIGNED_LONG_LONG t = 0;
    /* No timeout pending: still look again now and then, so a connection
     * timeout is never missed by more than a second. */
    if (mhd.get_timeout(w->mhd, &t) != MHD_YES || t > 1000)
        t = 1000;
    schedule(w, t);
}

static void on_mhd_timer(uv_timer_t *t)
{
    run_mhd(container_of(t, web_server, mhd_timer));
}

static void schedule(web_server *w, uint64_t ms)
{
    if (w->running)
        uv_timer_start(&w->mhd_timer, on_mhd_timer, ms, 0);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    run_mhd(container_of(p, web_server, poll));
}

static void server_stop(web_server *w);

static void on_signal(uv_signal_t *sig, int signum)
{
    server_stop(sig->data);
}

int web_server_new(store *s, const web_opts *opts, web_server **out)
{
    *out = NULL;
    const char *listen = opts && opts->listen ? opts->listen : "127.0.0.1:0";
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    int v6 = 0;
    if (parse_listen(listen, &ss, &sl, &v6))
        return TFTAP_EINVAL;
    if (tftap_lib_load(&mhd_lib) != 0)
        return TFTAP_ENOLIB;
    web_server *w = calloc(1, sizeof *w);
    if (!w)
        return TFTAP_ENOMEM;
    int err = TFTAP_ENOMEM;
    w->s = s;
    w->queue_tail = &w->queue;
    w->pool_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    w->db_path = strdup(opts && opts->db_path ? opts->db_path : "");
    if (!w->db_path)
        goto fail_free;
    if (!*w->db_path) {
        err = TFTAP_EINVAL;
        goto fail_free;
    }
    if (uv_mutex_init(&w->schema.lock) != 0)
        goto fail_free;
    if (uv_mutex_init(&w->verdicts.lock) != 0)
        goto fail_schema;
    if (uv_mutex_init(&w->budget.lock) != 0)
        goto fail_verdicts;
    if (uv_cond_init(&w->budget.freed) != 0)
        goto fail_budget_lock;
    w->poll_ms = opts && opts->poll_ms ? opts->poll_ms : 200;
    unsigned timeout = opts && opts->idle_timeout ? opts->idle_timeout : 30;
    w->header_deadline_ms = 1000u * (timeout < HEADER_DEADLINE_S ? timeout : HEADER_DEADLINE_S);
    unsigned char raw[TOKEN_BYTES];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        err = TFTAP_EIO;
        goto fail_budget;
    }
    tftap_hex_encode(raw, sizeof raw, w->token);
    if (uv_loop_init(&w->loop) != 0)
        goto fail_budget;
    errno = 0;
    w->mhd = mhd.start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, answer,
        w, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, w, MHD_OPTION_NOTIFY_COMPLETED, on_completed, w, MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, w, MHD_OPTION_END);
    if (!w->mhd) {
        if (!errno)
            errno = EADDRNOTAVAIL;
        err = TFTAP_EIO;
        goto fail_loop;
    }
    const union MHD_DaemonInfo *pi = mhd.get_daemon_info(w->mhd, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = pi ? pi->port : 0;
    char addr[INET6_ADDRSTRLEN];
    if (v6) {
        struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        inet_ntop(AF_INET6, a, addr, sizeof addr);
        w->loopback = IN6_IS_ADDR_LOOPBACK(a);
        w->wildcard = IN6_IS_ADDR_UNSPECIFIED(a);
        snprintf(w->host, sizeof w->host, "[%s]:%u", addr, port);
    } else {
        struct in_addr *a = &((struct sockaddr_in *)&ss)->sin_addr;
        inet_ntop(AF_INET, a, addr, sizeof addr);
        w->loopback = (ntohl(a->s_addr) >> 24) == 127;
        w->wildcard = a->s_addr == htonl(INADDR_ANY);
        snprintf(w->host, sizeof w->host, "%s:%u", addr, port);
    }
    snprintf(w->port, sizeof w->port, "%u", port);
    snprintf(w->url, sizeof w->url, "http://%s/?token=%s", w->host, w->token);
    store_data_version(s, &w->data_version);
    w->pooled = store_path_is_url(w->db_path);
    struct stat st;
    if (!w->pooled && stat(w->db_path, &st) == 0) {
        w->file_known = 1;
        w->file_dev = st.st_dev;
        w->file_ino = st.st_ino;
    }
    *out = w;
    return 0;

fail_loop:
    uv_loop_close(&w->loop);
fail_budget:
    uv_cond_destroy(&w->budget.freed);
fail_budget_lock:
    uv_mutex_destroy(&w->budget.lock);
fail_verdicts:
    uv_mutex_destroy(&w->verdicts.lock);
fail_schema:
    uv_mutex_destroy(&w->schema.lock);
fail_free:
    free(w->db_path);
    free(w);
    return err;
}

const char *web_server_load_error(void)
{
    return mhd_lib.why;
}

const char *web_server_url(const web_server *w)
{
    return w->url;
}

int web_server_is_loopback(const web_server *w)
{
    return w->loopback;
}

int web_server_run(web_server *w)
{
    const union MHD_DaemonInfo *ei = mhd.get_daemon_info(w->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!ei)
        return TFTAP_EIO;
    if (uv_poll_init(&w->loop, &w->poll, ei->epoll_fd) != 0)
        return TFTAP_EIO;
    uv_timer_init(&w->loop, &w->mhd_timer);
    uv_timer_init(&w->loop, &w->live_timer);
    uv_signal_init(&w->loop, &w->sigint);
    uv_signal_init(&w->loop, &w->sigterm);
    w->sigint.data = w->sigterm.data = w;
    w->running = 1;
    w->last_ping_ms = tftap_mono_ms();
    uv_poll_start(&w->poll, UV_READABLE, on_poll);
    uv_timer_start(&w->live_timer, on_live, w->poll_ms, w->poll_ms);
    uv_signal_start(&w->sigint, on_signal, SIGINT);
    uv_signal_start(&w->sigterm, on_signal, SIGTERM);
    schedule(w, 0);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    return 0;
}

/* libmicrohttpd is stopped once no connection is parked: listeners are
 * woken (their streams end), API requests on the pool come back first. */
static void finish_stop(web_server *w)
{
    if (!w->mhd)
        return;
    for (struct listener *l = w->listeners; l; l = l->next)
        listener_wake(l);
    mhd.stop_daemon(w->mhd);
    w->mhd = NULL;
}

static void server_stop(web_server *w)
{
    if (!w->running)
        return;
    w->running = 0;
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, NULL);
    uv_close((uv_handle_t *)&w->mhd_timer, NULL);
    uv_close((uv_handle_t *)&w->live_timer, NULL);
    uv_close((uv_handle_t *)&w->sigint, NULL);
    uv_close((uv_handle_t *)&w->sigterm, NULL);
    queue_drop_all(w);
    if (w->jobs == 0)
        finish_stop(w);
}

void web_server_free(web_server *w)
{
    if (!w)
        return;
    server_stop(w);
    if (w->mhd)
        mhd.stop_daemon(w->mhd);
    uv_run(&w->loop, UV_RUN_DEFAULT); /* let the closed handles' callbacks run */
    uv_loop_close(&w->loop);
    for (int i = 0; i < w->npool; i++)
        store_close(w->pool[i]);
    store_close(w->live);
    free(w->schema.json);
    uv_mutex_destroy(&w->schema.lock);
    for (int i = 0; i < WEB_VERDICTS; i++) {
        free(w->verdicts.e[i].json);
        free(w->verdicts.e[i].gaps);
        free(w->verdicts.e[i].ids);
    }
    uv_mutex_destroy(&w->verdicts.lock);
    uv_mutex_destroy(&w->budget.lock);
    uv_cond_destroy(&w->budget.freed);
    free(w->db_path);
    free(w);
}
