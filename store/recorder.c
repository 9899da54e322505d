/* store: the recorder. Relay threads hand it copies of what they relay
 * through a byte-bounded queue that never blocks them; one writer thread per
 * recorder decodes the messages and writes them in batched transactions.
 *
 * The writer keeps each live call's state in memory and writes the call row
 * from it (an upsert), so a failed transaction loses nothing that memory
 * still holds: the rows are simply written again by the next one. Events
 * that arrive while the database cannot be opened at all are dropped and
 * counted, and the count becomes a gap row once it can. */
#include "store/store_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include "decoder/decoder.h"

#define DEFAULT_QUEUE_BYTES ((size_t)256 << 20)
#define DEFAULT_RETRY_MS 1000u
#define DEFAULT_COMMIT_MS 100u
/* Raw bytes kept in memory to re-decode calls that arrived before any
 * schema was known. Past this they stay undecoded. */
#define RETAIN_MAX_BYTES ((size_t)64 << 20)
/* How long the final flush keeps retrying a locked database. */
#define CLOSE_BUSY_DEADLINE_MS 30000u
#define SCHEMA_POLL_MS 500
#define CALL_BUCKETS 1024

enum ev_kind { EV_BEGIN, EV_MESSAGE, EV_END };

struct event {
    struct event *next;
    enum ev_kind kind;
    enum store_direction dir;
    uint64_t call_id;
    int64_t t_us;
    int status;
    size_t size; /* counted against the queue bound */
    size_t len;  /* message bytes */
    char *text;  /* method or status message, NUL-terminated, in data */
    unsigned char *bytes;
    unsigned char data[];
};

struct rawmsg {
    struct rawmsg *next;
    enum store_direction dir;
    size_t len;
    unsigned char bytes[];
};

/* One direction of a call as rendered so far: the JSON of each message
 * joined by commas; written as the object itself for one message of a
 * unary call, else as an array. */
struct side {
    tftap_buf json;
    int64_t bytes;
    int64_t count;
};

struct call {
    struct call *hnext;
    struct call *lnext; /* all calls, in begin order */
    uint64_t call_id;
    int64_t row;     /* calls.id, 0 until written */
    int row_gen;     /* transaction generation that wrote row */
    char *method;
    int stream;
    int64_t started_us, ended_us;
    int ended;
    int status;
    char *status_message;
    char *type_name;
    struct side req, resp;
    char *decode_error;
    int decoded_with_schema;
    int dirty;
    int64_t msg_seq;
    struct rawmsg *raws, **raws_tail; /* kept for re-decoding */
    size_t raw_bytes;
    int retain; /* 1 while raws are being kept */
};

struct procinfo {
    char *provider, *version, *binary_path;
    int protocol, pid;
    int changed;
};

struct store_recorder {
    char *path;
    store_recorder_opts opts;
    unsigned retry_ms, commit_ms;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int thread_started;
    int stop;
    struct event *head, **tail;
    size_t queued_bytes;
    struct procinfo pinfo; /* under mu */
    store_recorder_stats stats; /* under mu */
    uint64_t queue_lost;        /* under mu: refused by enqueue, not yet in lost */
    int logged_full;

    /* ---- writer thread only ---- */
    sqlite3 *db;
    unsigned char key[STORE_KEY_LEN];
    EVP_MAC_CTX *mac; /* HMAC-SHA256 keyed with key, copied per value */
    int txn_gen;
    int64_t next_retry_ms;
    int logged_down;
    uint64_t lost;       /* events lost, not yet in a gap row */
    int lost_queue, lost_db; /* reasons */
    int64_t process_row, process_row_gen;
    int64_t run_id, run_row_gen;
    int process_written; /* process details written (not just the row) */
    struct procinfo proc; /* writer's copy */
    char binary_sha256[65];
    int have_binary_sha;
    dec_schema *schema;
    char schema_sha[65];
    const char *schema_source;
    int schema_saved;              /* schema row + process link written */
    unsigned char *schema_raw;     /* own response, kept until saved */
    size_t schema_raw_len;
    unsigned char *identity_raw;   /* GetResourceIdentitySchemas response */
    size_t identity_raw_len;
    char identity_sha[65];
    int identity_saved, identity_applied;
    int64_t last_schema_poll_ms;
    struct call *buckets[CALL_BUCKETS];
    struct call *calls, **calls_tail;
    size_t retained_bytes;
    int retain_disabled;
    int any_dirty; /* calls changed outside a batch (re-decoded) */
    uint64_t batch_events; /* events applied in the open transaction */
    sqlite3_stmt *st_upsert, *st_msg;
};

/* ---- time ---------------------------------------------------------------- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *dupstr(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* ---- the caller's side: enqueue ----------------------------------------- */

static void enqueue(store_recorder *r, struct event *ev)
{
    int drop = 0, log_full = 0;
    pthread_mutex_lock(&r->mu);
    if (r->stop || r->queued_bytes + ev->size > r->opts.max_queue_bytes) {
        drop = 1;
        r->stats.dropped++;
        r->queue_lost++;
        if (!r->logged_full && !r->stop) {
            r->logged_full = 1;
            log_full = 1;
        }
    } else {
        ev->next = NULL;
        *r->tail = ev;
        r->tail = &ev->next;
        r->queued_bytes += ev->size;
        r->stats.events++;
        pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    if (drop)
        free(ev);
    if (log_full)
        fprintf(stderr,
                "tftap: recorder queue full (%zu bytes): dropping records, counted as a gap\n",
                r->opts.max_queue_bytes);
}

static void count_drop(store_recorder *r)
{
    pthread_mutex_lock(&r->mu);
    r->stats.dropped++;
    r->queue_lost++;
    pthread_mutex_unlock(&r->mu);
}

static struct event *event_new(enum ev_kind kind, uint64_t call_id, int64_t t_us,
                               const char *text, const void *bytes, size_t len)
{
    size_t tl = text ? strlen(text) + 1 : 0;
    if (len > SIZE_MAX - sizeof(struct event) - tl)
        return NULL;
    struct event *ev = malloc(sizeof *ev + len + tl);
    if (!ev)
        return NULL;
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    ev->call_id = call_id;
    ev->t_us = t_us;
    ev->size = sizeof *ev + len + tl;
    ev->len = len;
    ev->bytes = ev->data;
    if (len)
        memcpy(ev->data, bytes, len);
    if (text) {
        ev->text = (char *)ev->data + len;
        memcpy(ev->text, text, tl);
    }
    return ev;
}

void store_recorder_call_begin(store_recorder *r, uint64_t call_id, const char *method,
                               int64_t t_us)
{
    if (!r)
        return;
    struct event *ev = event_new(EV_BEGIN, call_id, t_us, method ? method : "", NULL, 0);
    if (!ev) {
        count_drop(r);
        return;
    }
    enqueue(r, ev);
}

void store_recorder_message(store_recorder *r, uint64_t call_id, enum store_direction dir,
                            int64_t t_us, const void *bytes, size_t len)
{
    if (!r)
        return;
    /* Refuse before copying what could never fit. */
    if (len > r->opts.max_queue_bytes) {
        count_drop(r);
        return;
    }
    struct event *ev = event_new(EV_MESSAGE, call_id, t_us, NULL, bytes, len);
    if (!ev) {
        count_drop(r);
        return;
    }
    ev->dir = dir;
    enqueue(r, ev);
}

void store_recorder_call_end(store_recorder *r, uint64_t call_id, int64_t t_us, int status_code,
                             const char *status_message)
{
    if (!r)
        return;
    struct event *ev =
        event_new(EV_END, call_id, t_us, status_message ? status_message : "", NULL, 0);
    if (!ev) {
        count_drop(r);
        return;
    }
    ev->status = status_code;
    enqueue(r, ev);
}

void store_recorder_process(store_recorder *r, const char *provider_addr, const char *version,
                            const char *binary_path, int protocol_version, int pid)
{
    if (!r)
        return;
    char *a = dupstr(provider_addr), *v = dupstr(version), *b = dupstr(binary_path);
    pthread_mutex_lock(&r->mu);
    free(r->pinfo.provider);
    free(r->pinfo.version);
    free(r->pinfo.binary_path);
    r->pinfo.provider = a;
    r->pinfo.version = v;
    r->pinfo.binary_path = b;
    r->pinfo.protocol = protocol_version;
    r->pinfo.pid = pid;
    r->pinfo.changed = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void store_recorder_get_stats(store_recorder *r, store_recorder_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    *out = r->stats;
    out->queued_bytes = r->queued_bytes;
    pthread_mutex_unlock(&r->mu);
}

void store_recorder_tune(store_recorder *r, const store_recorder_tuning *t)
{
    if (!r || !t)
        return;
    pthread_mutex_lock(&r->mu);
    if (t->retry_ms)
        r->retry_ms = t->retry_ms;
    if (t->commit_ms)
        r->commit_ms = t->commit_ms;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* ---- writer: calls in memory -------------------------------------------- */

static struct call **bucket(store_recorder *r, uint64_t id)
{
    return &r->buckets[(id * 0x9E3779B97F4A7C15ull) >> 54 & (CALL_BUCKETS - 1)];
}

static struct call *call_find(store_recorder *r, uint64_t id)
{
    for (struct call *c = *bucket(r, id); c; c = c->hnext)
        if (c->call_id == id)
            return c;
    return NULL;
}

static void call_free_raws(store_recorder *r, struct call *c)
{
    for (struct rawmsg *m = c->raws, *n; m; m = n) {
        n = m->next;
        free(m);
    }
    r->retained_bytes -= c->raw_bytes;
    c->raws = NULL;
    c->raws_tail = &c->raws;
    c->raw_bytes = 0;
    c->retain = 0;
}

static void call_free(store_recorder *r, struct call *c)
{
    call_free_raws(r, c);
    free(c->method);
    free(c->status_message);
    free(c->type_name);
    free(c->decode_error);
    tftap_buf_done(&c->req.json);
    tftap_buf_done(&c->resp.json);
    free(c);
}

static int method_is_stream(const char *m)
{
    static const char *const streams[] = {
        "ListResource", "InvokeAction", "ReadStateBytes", "WriteStateBytes",
        "ProvisionResource", "StartStream", "StreamStdio",
    };
    const char *rpc = store_rpc_name(m);
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
        if (strcmp(rpc, streams[i]) == 0)
            return 1;
    return 0;
}

static struct call *call_get(store_recorder *r, uint64_t id, const char *method, int64_t t_us)
{
    struct call *c = call_find(r, id);
    if (c)
        return c;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->call_id = id;
    /* A call whose begin was dropped still gets a row, method unknown. */
    c->method = dupstr(method ? method : "");
    if (!c->method) {
        free(c);
        return NULL;
    }
    c->stream = method_is_stream(c->method);
    c->started_us = t_us;
    c->raws_tail = &c->raws;
    c->dirty = 1;
    struct call **b = bucket(r, id);
    c->hnext = *b;
    *b = c;
    c->lnext = NULL;
    *r->calls_tail = c;
    r->calls_tail = &c->lnext;
    return c;
}

/* ---- writer: decoding ----------------------------------------------------- */

/* A keyed context made once: fetching the algorithm for every value (as the
 * one-shot HMAC() does) costs more than the digest itself. */
static void mac_setup(store_recorder *r)
{
    EVP_MAC_CTX_free(r->mac);
    r->mac = NULL;
    EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (!m)
        return;
    EVP_MAC_CTX *c = EVP_MAC_CTX_new(m);
    EVP_MAC_free(m);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (c && EVP_MAC_init(c, r->key, sizeof r->key, params) == 1)
        r->mac = c;
    else
        EVP_MAC_CTX_free(c);
}

static void redact_hmac(void *ctx, const char *json, size_t len, char out[65])
{
    store_recorder *r = ctx;
    EVP_MAC_CTX *c = r->mac ? EVP_MAC_CTX_dup(r->mac) : NULL;
    unsigned char md[32];
    size_t mdlen = 0;
    if (c && EVP_MAC_update(c, (const unsigned char *)json, len) == 1 &&
        EVP_MAC_final(c, md, &mdlen, sizeof md) == 1 && mdlen == 32) {
        static const char hx[] = "0123456789abcdef";
        for (int i = 0; i < 32; i++) {
            out[2 * i] = hx[md[i] >> 4];
            out[2 * i + 1] = hx[md[i] & 15];
        }
        out[64] = '\0';
    } else {
        tftap_hmac_sha256_hex(r->key, sizeof r->key, json, len, out);
    }
    EVP_MAC_CTX_free(c);
}

static int is_provider_schema_method(const char *m)
{
    return strcmp(m, "/tfplugin5.Provider/GetSchema") == 0 ||
           strcmp(m, "/tfplugin6.Provider/GetProviderSchema") == 0;
}

static int is_identity_schema_method(const char *m)
{
    return strcmp(m, "/tfplugin5.Provider/GetResourceIdentitySchemas") == 0 ||
           strcmp(m, "/tfplugin6.Provider/GetResourceIdentitySchemas") == 0;
}

static void set_decode_error(struct call *c, const char *msg)
{
    if (c->decode_error)
        return;
    c->decode_error = dupstr(msg);
}

/* Append one message's JSON to out. */
static void render_message(store_recorder *r, struct call *c, enum store_direction dir,
                           const unsigned char *p, size_t n, tftap_buf *out)
{
    char sha[65];
    if (dir == STORE_RESPONSE && is_provider_schema_method(c->method)) {
        /* The schema itself is stored once, by hash, in schemas. */
        tftap_sha256_hex(p, n, sha);
        tftap_buf_printf(out, "{\"$schema\":\"%s\",\"size\":%zu}", sha, n);
        return;
    }
    dec_opts opts;
    memset(&opts, 0, sizeof opts);
    if (!r->opts.record_sensitive) {
        opts.redact = redact_hmac;
        opts.redact_ctx = r;
    }
    dec_error err = DEC_ERROR_INIT;
    size_t mark = out->len;
    int rc = dec_message_to_json(c->method, dir == STORE_RESPONSE, p, n, r->schema, c->type_name,
                                 &opts, out, &err);
    if (rc == 0) {
        dec_error_done(&err);
        return;
    }
    out->len = mark;
    if (out->data)
        out->data[mark] = '\0';
    tftap_sha256_hex(p, n, sha);
    if (rc == TFTAP_ENOTFOUND) {
        /* A method the decoder does not know: keep size and hash. */
        tftap_buf_printf(out, "{\"$raw\":{\"size\":%zu,\"sha256\":\"%s\"}}", n, sha);
    } else {
        tftap_buf e = TFTAP_BUF_INIT;
        dec_error_format(&err, &e);
        set_decode_error(c, tftap_buf_cstr(&e));
        tftap_buf_puts(out, "{\"$decode_error\":");
        tftap_buf_json_string(out, e.data ? e.data : "", e.len);
        tftap_buf_printf(out, ",\"size\":%zu,\"sha256\":\"%s\"}", n, sha);
        tftap_buf_done(&e);
    }
    dec_error_done(&err);
}

static void side_add(store_recorder *r, struct call *c, struct side *s, enum store_direction dir,
                     const unsigned char *p, size_t n)
{
    if (s->count > 0)
        tftap_buf_putc(&s->json, ',');
    render_message(r, c, dir, p, n, &s->json);
    s->count++;
    s->bytes += (int64_t)n;
}

/* Write a side as the JSON its column holds (NULL: no message). */
static const char *side_text(struct call *c, struct side *s, tftap_buf *tmp)
{
    if (s->count == 0)
        return NULL;
    if (tftap_buf_failed(&s->json))
        return "{\"$error\":\"out of memory rendering the message\"}";
    if (!c->stream && s->count == 1)
        return tftap_buf_cstr(&s->json);
    tftap_buf_reset(tmp);
    tftap_buf_putc(tmp, '[');
    tftap_buf_append(tmp, s->json.data, s->json.len);
    tftap_buf_putc(tmp, ']');
    return tftap_buf_failed(tmp) ? NULL : tftap_buf_cstr(tmp);
}

/* Re-render every retained call with the schema now known. */
static void redecode_retained(store_recorder *r)
{
    for (struct call *c = r->calls; c; c = c->lnext) {
        if (!c->retain)
            continue;
        tftap_buf_reset(&c->req.json);
        tftap_buf_reset(&c->resp.json);
        c->req.count = c->resp.count = 0;
        c->req.bytes = c->resp.bytes = 0;
        free(c->decode_error);
        c->decode_error = NULL;
        for (struct rawmsg *m = c->raws; m; m = m->next)
            side_add(r, c, m->dir == STORE_REQUEST ? &c->req : &c->resp, m->dir, m->bytes,
                     m->len);
        c->decoded_with_schema = 1;
        c->dirty = 1;
        r->any_dirty = 1;
        call_free_raws(r, c);
    }
}

/* ---- writer: schema ------------------------------------------------------ */

static void apply_identity(store_recorder *r)
{
    if (!r->schema || !r->identity_raw || r->identity_applied)
        return;
    dec_error err = DEC_ERROR_INIT;
    if (dec_schema_add_identities(r->schema, r->proc.protocol ? r->proc.protocol : 5,
                                  r->identity_raw, r->identity_raw_len, &err) == 0)
        r->identity_applied = 1;
    dec_error_done(&err);
}

static int schema_adopt(store_recorder *r, int protocol, const unsigned char *p, size_t n,
                        const char *sha, const char *source)
{
    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    int rc = dec_schema_from_provider_schema(protocol, p, n, NULL, &s, &err);
    dec_error_done(&err);
    if (rc)
        return rc;
    dec_schema_free(r->schema);
    r->schema = s;
    memcpy(r->schema_sha, sha, 65);
    r->schema_source = source;
    r->identity_applied = 0;
    apply_identity(r);
    redecode_retained(r);
    return 0;
}

/* ---- writer: the database ------------------------------------------------ */

static void finalize_stmts(store_recorder *r)
{
    sqlite3_finalize(r->st_upsert);
    sqlite3_finalize(r->st_msg);
    r->st_upsert = r->st_msg = NULL;
}

static void db_down(store_recorder *r, const char *what)
{
    if (!r->logged_down) {
        r->logged_down = 1;
        fprintf(stderr,
                "tftap: cannot %s the recording database %s: %s (dropping records, will retry)\n",
                what, r->path, r->db ? sqlite3_errmsg(r->db) : strerror(errno ? errno : EIO));
    }
    finalize_stmts(r);
    if (r->db) {
        store_rollback(r->db);
        sqlite3_close(r->db);
        r->db = NULL;
    }
    /* Rows this connection wrote stay; in-memory state is written again. */
    r->txn_gen++;
    r->next_retry_ms = mono_ms() + r->retry_ms;
    pthread_mutex_lock(&r->mu);
    r->stats.db_ok = 0;
    pthread_mutex_unlock(&r->mu);
}

static int db_up(store_recorder *r)
{
    if (r->db)
        return 1;
    if (mono_ms() < r->next_retry_ms)
        return 0;
    errno = 0;
    int rc = store_db_open(r->path, 1, &r->db, r->key);
    if (rc) {
        r->db = NULL;
        if (!r->logged_down) {
            r->logged_down = 1;
            fprintf(stderr,
                    "tftap: cannot open the recording database %s: %s%s%s (dropping records, "
                    "will retry)\n",
                    r->path, tftap_strerror(rc), errno ? ": " : "", errno ? strerror(errno) : "");
        }
        r->next_retry_ms = mono_ms() + r->retry_ms;
        return 0;
    }
    mac_setup(r);
    /* Recovery is not announced: the gap row records what was lost, and
     * the one line already printed is all a user's terminal should get. */
    r->logged_down = 0;
    pthread_mutex_lock(&r->mu);
    r->stats.db_ok = 1;
    pthread_mutex_unlock(&r->mu);
    return 1;
}

static int step_ok(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static int run_sql(sqlite3 *db, const char *sql, sqlite3_stmt **out)
{
    return sqlite3_prepare_v2(db, sql, -1, out, NULL);
}

static int ensure_run_and_process(store_recorder *r)
{
    sqlite3_stmt *st = NULL;
    int rc = SQLITE_OK;
    if (r->run_id == 0) {
        if (r->opts.run_id) {
            r->run_id = r->opts.run_id;
        } else {
            rc = run_sql(r->db, "INSERT INTO runs (command, started_us) VALUES (?, ?)", &st);
            if (rc)
                return rc;
            sqlite3_bind_text(st, 1, r->proc.binary_path ? r->proc.binary_path : "", -1,
                              SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, store_now_us());
            rc = step_ok(st);
            sqlite3_finalize(st);
            st = NULL;
            if (rc)
                return rc;
            r->run_id = sqlite3_last_insert_rowid(r->db);
            r->run_row_gen = r->txn_gen;
        }
    }
    if (r->process_row == 0) {
        rc = run_sql(r->db, "INSERT INTO processes (run_id, started_us) VALUES (?, ?)", &st);
        if (rc)
            return rc;
        sqlite3_bind_int64(st, 1, r->run_id);
        sqlite3_bind_int64(st, 2, store_now_us());
        rc = step_ok(st);
        sqlite3_finalize(st);
        st = NULL;
        if (rc)
            return rc;
        r->process_row = sqlite3_last_insert_rowid(r->db);
        r->process_row_gen = r->txn_gen;
        r->process_written = 0;
    }
    if (!r->process_written) {
        rc = run_sql(r->db,
                     "UPDATE processes SET provider = ?, version = ?, protocol = ?, pid = ?, "
                     "binary_path = ?, binary_sha256 = ? WHERE id = ?",
                     &st);
        if (rc)
            return rc;
        bind_text_or_null(st, 1, r->proc.provider);
        bind_text_or_null(st, 2, r->proc.version);
        if (r->proc.protocol)
            sqlite3_bind_int(st, 3, r->proc.protocol);
        if (r->proc.pid)
            sqlite3_bind_int(st, 4, r->proc.pid);
        bind_text_or_null(st, 5, r->proc.binary_path);
        bind_text_or_null(st, 6, r->have_binary_sha ? r->binary_sha256 : NULL);
        sqlite3_bind_int64(st, 7, r->process_row);
        rc = step_ok(st);
        sqlite3_finalize(st);
        if (rc)
            return rc;
        if (r->opts.run_id == 0 && r->proc.binary_path) {
            /* Our own run was made before we knew what we run. */
            rc = run_sql(r->db, "UPDATE runs SET command = ? WHERE id = ? AND command = ''", &st);
            if (rc)
                return rc;
            sqlite3_bind_text(st, 1, r->proc.binary_path, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, r->run_id);
            rc = step_ok(st);
            sqlite3_finalize(st);
            if (rc)
                return rc;
        }
        r->process_written = 1;
    }
    return SQLITE_OK;
}

static int save_schema_row(store_recorder *r, const char *kind, const unsigned char *raw,
                           size_t len, const char *sha)
{
    sqlite3_stmt *st = NULL;
    int rc = run_sql(r->db,
                     "INSERT OR IGNORE INTO schemas (sha256, kind, provider, protocol, size, raw, "
                     "first_seen_us) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     &st);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    bind_text_or_null(st, 3, r->proc.provider);
    sqlite3_bind_int(st, 4, r->proc.protocol ? r->proc.protocol : 5);
    sqlite3_bind_int64(st, 5, (int64_t)len);
    sqlite3_bind_blob64(st, 6, raw, len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, store_now_us());
    rc = step_ok(st);
    sqlite3_finalize(st);
    return rc;
}

static int save_schema_links(store_recorder *r)
{
    int rc;
    sqlite3_stmt *st = NULL;
    if (r->schema && !r->schema_saved) {
        if (r->schema_raw) {
            rc = save_schema_row(r, "provider", r->schema_raw, r->schema_raw_len, r->schema_sha);
            if (rc)
                return rc;
        }
        rc = run_sql(r->db, "UPDATE processes SET schema_sha256 = ?, schema_source = ? WHERE id = ?",
                     &st);
        if (rc)
            return rc;
        sqlite3_bind_text(st, 1, r->schema_sha, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->schema_source, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, r->process_row);
        rc = step_ok(st);
        sqlite3_finalize(st);
        st = NULL;
        if (rc)
            return rc;
        r->schema_saved = r->txn_gen;
    }
    if (r->identity_raw && !r->identity_saved) {
        rc = save_schema_row(r, "identity", r->identity_raw, r->identity_raw_len,
                             r->identity_sha);
        if (rc)
            return rc;
        rc = run_sql(r->db, "UPDATE processes SET identity_sha256 = ? WHERE id = ?", &st);
        if (rc)
            return rc;
        sqlite3_bind_text(st, 1, r->identity_sha, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, r->process_row);
        rc = step_ok(st);
        sqlite3_finalize(st);
        if (rc)
            return rc;
        r->identity_saved = r->txn_gen;
    }
    return SQLITE_OK;
}

static int write_gap(store_recorder *r)
{
    if (!r->lost)
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    const char *reason = r->lost_queue && r->lost_db ? "queue full, database unavailable"
                         : r->lost_queue           ? "queue full"
                                                   : "database unavailable";
    int rc = run_sql(r->db,
                     "INSERT INTO gaps (run_id, process_id, lost, recorded_us, reason) "
                     "VALUES (?, ?, ?, ?, ?)",
                     &st);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, r->process_row);
    sqlite3_bind_int64(st, 3, (int64_t)r->lost);
    sqlite3_bind_int64(st, 4, store_now_us());
    sqlite3_bind_text(st, 5, reason, -1, SQLITE_STATIC);
    rc = step_ok(st);
    sqlite3_finalize(st);
    if (rc)
        return rc;
    rc = run_sql(r->db, "UPDATE processes SET dropped = dropped + ? WHERE id = ?", &st);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, (int64_t)r->lost);
    sqlite3_bind_int64(st, 2, r->process_row);
    rc = step_ok(st);
    sqlite3_finalize(st);
    return rc;
}

static int write_call(store_recorder *r, struct call *c)
{
    int rc;
    if (!r->st_upsert) {
        rc = run_sql(r->db,
                     "INSERT INTO calls (run_id, process_id, call_seq, method, rpc, stream, "
                     "started_us, ended_us, status_code, status_message, request_bytes, "
                     "response_bytes, request_count, response_count, type_name, request_json, "
                     "response_json, decode_error, schema_sha256) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                     "?16, ?17, ?18, ?19) "
                     "ON CONFLICT (process_id, call_seq) DO UPDATE SET method = ?4, rpc = ?5, "
                     "stream = ?6, ended_us = ?8, status_code = ?9, status_message = ?10, "
                     "request_bytes = ?11, response_bytes = ?12, request_count = ?13, "
                     "response_count = ?14, type_name = ?15, request_json = ?16, "
                     "response_json = ?17, decode_error = ?18, schema_sha256 = ?19 "
                     "RETURNING id",
                     &r->st_upsert);
        if (rc)
            return rc;
    }
    sqlite3_stmt *st = r->st_upsert;
    tftap_buf t1 = TFTAP_BUF_INIT, t2 = TFTAP_BUF_INIT;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, r->process_row);
    sqlite3_bind_int64(st, 3, (int64_t)c->call_id);
    sqlite3_bind_text(st, 4, c->method, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, store_rpc_name(c->method), -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, c->stream);
    sqlite3_bind_int64(st, 7, c->started_us);
    if (c->ended) {
        sqlite3_bind_int64(st, 8, c->ended_us);
        sqlite3_bind_int(st, 9, c->status);
        bind_text_or_null(st, 10, c->status_message);
    } else {
        sqlite3_bind_null(st, 8);
        sqlite3_bind_null(st, 9);
        sqlite3_bind_null(st, 10);
    }
    sqlite3_bind_int64(st, 11, c->req.bytes);
    sqlite3_bind_int64(st, 12, c->resp.bytes);
    sqlite3_bind_int64(st, 13, c->req.count);
    sqlite3_bind_int64(st, 14, c->resp.count);
    bind_text_or_null(st, 15, c->type_name);
    bind_text_or_null(st, 16, side_text(c, &c->req, &t1));
    bind_text_or_null(st, 17, side_text(c, &c->resp, &t2));
    bind_text_or_null(st, 18, c->decode_error);
    bind_text_or_null(st, 19, c->decoded_with_schema && r->schema ? r->schema_sha : NULL);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        c->row = sqlite3_column_int64(st, 0);
        c->row_gen = r->txn_gen;
        rc = SQLITE_OK;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    tftap_buf_done(&t1);
    tftap_buf_done(&t2);
    if (rc == SQLITE_OK)
        c->dirty = 0;
    return rc;
}

static int write_raw(store_recorder *r, struct call *c, const struct event *ev)
{
    int rc;
    if (!c->row || c->dirty) {
        rc = write_call(r, c);
        if (rc)
            return rc;
    }
    if (!r->st_msg) {
        rc = run_sql(r->db,
                     "INSERT OR REPLACE INTO messages (call_id, seq, direction, t_us, raw) "
                     "VALUES (?, ?, ?, ?, ?)",
                     &r->st_msg);
        if (rc)
            return rc;
    }
    sqlite3_bind_int64(r->st_msg, 1, c->row);
    sqlite3_bind_int64(r->st_msg, 2, c->msg_seq);
    sqlite3_bind_text(r->st_msg, 3, ev->dir == STORE_REQUEST ? "request" : "response", -1,
                      SQLITE_STATIC);
    sqlite3_bind_int64(r->st_msg, 4, ev->t_us);
    sqlite3_bind_blob64(r->st_msg, 5, ev->bytes, ev->len, SQLITE_STATIC);
    return step_ok(r->st_msg);
}

/* Write every dirty call; forget finished ones that need nothing more. */
static int flush_calls(store_recorder *r)
{
    for (struct call *c = r->calls; c; c = c->lnext) {
        if (c->dirty) {
            int rc = write_call(r, c);
            if (rc)
                return rc;
        }
    }
    return SQLITE_OK;
}

/* After a commit: drop finished calls that are written and not retained. */
static void prune_calls(store_recorder *r)
{
    struct call **pp = &r->calls;
    r->calls_tail = &r->calls;
    while (*pp) {
        struct call *c = *pp;
        if (c->ended && !c->dirty && !c->retain) {
            *pp = c->lnext;
            struct call **b = bucket(r, c->call_id);
            while (*b != c)
                b = &(*b)->hnext;
            *b = c->hnext;
            call_free(r, c);
        } else {
            pp = &c->lnext;
            r->calls_tail = &c->lnext;
        }
    }
}

/* A transaction failed and was rolled back: whatever it wrote must be
 * written again from memory. */
static void forget_generation(store_recorder *r, int gen)
{
    if (r->run_row_gen == gen && r->opts.run_id == 0 && r->run_id) {
        r->run_id = 0;
    }
    if (r->process_row_gen == gen && r->process_row) {
        r->process_row = 0;
        r->process_written = 0;
    }
    if (r->schema_saved == gen)
        r->schema_saved = 0;
    if (r->identity_saved == gen)
        r->identity_saved = 0;
    r->process_written = r->process_row ? r->process_written : 0;
    for (struct call *c = r->calls; c; c = c->lnext) {
        if (c->row_gen == gen) {
            c->row = 0;
        }
        c->dirty = 1;
    }
}

static void retain_raw(store_recorder *r, struct call *c, const struct event *ev)
{
    if (r->schema || r->retain_disabled || !dec_method_protocol(c->method) ||
        is_provider_schema_method(c->method))
        return;
    if (r->retained_bytes + ev->len > RETAIN_MAX_BYTES) {
        r->retain_disabled = 1;
        return;
    }
    struct rawmsg *m = malloc(sizeof *m + ev->len);
    if (!m)
        return;
    m->next = NULL;
    m->dir = ev->dir;
    m->len = ev->len;
    memcpy(m->bytes, ev->bytes, ev->len);
    *c->raws_tail = m;
    c->raws_tail = &m->next;
    c->raw_bytes += ev->len;
    r->retained_bytes += ev->len;
    c->retain = 1;
}

/* Apply one event to memory (and to messages with keep_raw). Returns an
 * SQLite code only for database failures. */
static int apply_event(store_recorder *r, const struct event *ev)
{
    struct call *c = call_get(r, ev->call_id, ev->kind == EV_BEGIN ? ev->text : NULL, ev->t_us);
    if (!c)
        return SQLITE_OK; /* out of memory: this event is lost */
    switch (ev->kind) {
    case EV_BEGIN:
        if (!c->method[0] && ev->text[0]) {
            free(c->method);
            c->method = dupstr(ev->text);
            if (!c->method)
                c->method = dupstr("");
            c->stream = method_is_stream(c->method ? c->method : "");
        }
        c->started_us = ev->t_us;
        c->dirty = 1;
        break;
    case EV_MESSAGE: {
        struct side *s = ev->dir == STORE_REQUEST ? &c->req : &c->resp;
        if (ev->dir == STORE_REQUEST && c->req.count == 0 && !c->type_name) {
            char *tn = NULL;
            if (dec_request_type_name(c->method, ev->bytes, ev->len, &tn) == 0)
                c->type_name = tn;
            else
                free(tn);
        }
        if (s->count == 1 && !c->stream) {
            /* A second message on a method we took for unary. */
            c->stream = 1;
        }
        side_add(r, c, s, ev->dir, ev->bytes, ev->len);
        if (r->schema)
            c->decoded_with_schema = 1;
        retain_raw(r, c, ev);
        c->dirty = 1;
        if (ev->dir == STORE_RESPONSE && is_provider_schema_method(c->method)) {
            char sha[65];
            tftap_sha256_hex(ev->bytes, ev->len, sha);
            int proto = dec_method_protocol(c->method);
            if (!r->schema || strcmp(sha, r->schema_sha) != 0 ||
                strcmp(r->schema_source, "response") != 0) {
                unsigned char *copy = malloc(ev->len ? ev->len : 1);
                if (copy && schema_adopt(r, proto, ev->bytes, ev->len, sha, "response") == 0) {
                    memcpy(copy, ev->bytes, ev->len);
                    free(r->schema_raw);
                    r->schema_raw = copy;
                    r->schema_raw_len = ev->len;
                    r->schema_saved = 0;
                } else {
                    free(copy);
                }
            }
        }
        if (ev->dir == STORE_RESPONSE && is_identity_schema_method(c->method) && !r->identity_raw) {
            r->identity_raw = malloc(ev->len ? ev->len : 1);
            if (r->identity_raw) {
                memcpy(r->identity_raw, ev->bytes, ev->len);
                r->identity_raw_len = ev->len;
                tftap_sha256_hex(ev->bytes, ev->len, r->identity_sha);
                r->identity_saved = 0;
                apply_identity(r);
            }
        }
        c->msg_seq++;
        if (r->opts.keep_raw)
            return write_raw(r, c, ev);
        break;
    }
    case EV_END:
        c->ended = 1;
        c->ended_us = ev->t_us;
        c->status = ev->status;
        free(c->status_message);
        c->status_message = ev->text[0] ? dupstr(ev->text) : NULL;
        c->dirty = 1;
        break;
    }
    return SQLITE_OK;
}

/* The writer's copy of the process details, and the binary's digest. */
static void sync_procinfo(store_recorder *r)
{
    struct procinfo p = {0};
    pthread_mutex_lock(&r->mu);
    if (r->pinfo.changed) {
        p.provider = dupstr(r->pinfo.provider);
        p.version = dupstr(r->pinfo.version);
        p.binary_path = dupstr(r->pinfo.binary_path);
        p.protocol = r->pinfo.protocol;
        p.pid = r->pinfo.pid;
        p.changed = 1;
        r->pinfo.changed = 0;
    }
    pthread_mutex_unlock(&r->mu);
    if (!p.changed)
        return;
    free(r->proc.provider);
    free(r->proc.version);
    free(r->proc.binary_path);
    r->proc = p;
    r->process_written = 0;
    r->have_binary_sha = 0;
    if (!p.binary_path)
        return;
    FILE *f = fopen(p.binary_path, "rb");
    if (!f)
        return;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char chunk[65536], dig[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    size_t n;
    while (ok && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        ok = EVP_DigestUpdate(md, chunk, n) == 1;
    if (ok && !ferror(f) && EVP_DigestFinal_ex(md, dig, &dl) == 1 && dl == 32) {
        static const char hx[] = "0123456789abcdef";
        for (unsigned i = 0; i < 32; i++) {
            r->binary_sha256[2 * i] = hx[dig[i] >> 4];
            r->binary_sha256[2 * i + 1] = hx[dig[i] & 15];
        }
        r->binary_sha256[64] = '\0';
        r->have_binary_sha = 1;
        r->last_schema_poll_ms = 0; /* look for an earlier schema now */
    }
    EVP_MD_CTX_free(md);
    fclose(f);
}

/* Without a schema of its own, take the one an earlier recording of the
 * same provider binary saw (the client caches schemas and may never ask). */
static void poll_borrowed_schema(store_recorder *r)
{
    if (r->schema || !r->have_binary_sha || !r->db)
        return;
    int64_t now = mono_ms();
    if (r->last_schema_poll_ms && now - r->last_schema_poll_ms < SCHEMA_POLL_MS)
        return;
    r->last_schema_poll_ms = now;
    sqlite3_stmt *st = NULL;
    if (run_sql(r->db,
                "SELECT s.sha256, s.protocol, s.raw, p.identity_sha256 FROM processes p "
                "JOIN schemas s ON s.sha256 = p.schema_sha256 "
                "WHERE p.binary_sha256 = ? AND p.id != ? ORDER BY p.id DESC LIMIT 1",
                &st) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, r->binary_sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, r->process_row);
    if (sqlite3_step(st) == SQLITE_ROW) {
        char sha[65];
        const char *s = (const char *)sqlite3_column_text(st, 0);
        snprintf(sha, sizeof sha, "%s", s ? s : "");
        int proto = sqlite3_column_int(st, 1);
        const unsigned char *raw = sqlite3_column_blob(st, 2);
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        if (raw && schema_adopt(r, proto, raw, len, sha, "earlier") == 0)
            r->schema_saved = 0;
    }
    sqlite3_finalize(st);
}

/* One transaction over a batch of events; commits midway when it has been
 * open for commit_ms. */
static void write_batch(store_recorder *r, struct event *list, int closing)
{
    uint64_t n_events = 0;
    for (struct event *e = list; e; e = e->next)
        n_events++;
    if (closing)
        r->next_retry_ms = 0; /* last chance: do not wait for the retry timer */
    if (!db_up(r)) {
        r->lost += n_events;
        if (n_events)
            r->lost_db = 1;
        pthread_mutex_lock(&r->mu);
        r->stats.dropped += n_events;
        pthread_mutex_unlock(&r->mu);
        goto free_list;
    }
    struct event *e = list;
    for (;;) {
        unsigned deadline = closing ? CLOSE_BUSY_DEADLINE_MS : 0;
        int rc = store_begin(r->db, deadline);
        if (rc != SQLITE_OK) {
            db_down(r, "write");
            goto lose_rest;
        }
        int gen = ++r->txn_gen;
        int64_t t0 = mono_ms();
        uint64_t applied = 0;
        rc = ensure_run_and_process(r);
        if (rc == SQLITE_OK && !r->schema)
            poll_borrowed_schema(r);
        if (rc == SQLITE_OK)
            rc = save_schema_links(r);
        while (rc == SQLITE_OK && e) {
            rc = apply_event(r, e);
            if (rc)
                break;
            e = e->next;
            applied++;
            if ((applied & 255) == 0 && mono_ms() - t0 >= (int64_t)r->commit_ms)
                break;
        }
        if (rc == SQLITE_OK)
            rc = save_schema_links(r);
        if (rc == SQLITE_OK)
            rc = flush_calls(r);
        uint64_t lost_before = r->lost;
        if (rc == SQLITE_OK)
            rc = write_gap(r);
        if (rc == SQLITE_OK)
            rc = store_commit(r->db, deadline);
        if (rc != SQLITE_OK) {
            /* Memory still holds these events' effects (they were applied);
             * what fails is the database, which we now treat as down. */
            forget_generation(r, gen);
            db_down(r, "write");
            goto lose_rest;
        }
        if (lost_before) {
            pthread_mutex_lock(&r->mu);
            r->stats.gaps++;
            pthread_mutex_unlock(&r->mu);
            r->lost = 0;
            r->lost_db = r->lost_queue = 0;
        }
        pthread_mutex_lock(&r->mu);
        r->stats.written += applied;
        r->stats.process_row = r->process_row;
        r->stats.run_id = r->run_id;
        pthread_mutex_unlock(&r->mu);
        r->any_dirty = 0;
        prune_calls(r);
        if (!e)
            break;
    }
    goto free_list;
lose_rest:
    for (struct event *x = e; x; x = x->next) {
        r->lost++;
        r->lost_db = 1;
        pthread_mutex_lock(&r->mu);
        r->stats.dropped++;
        pthread_mutex_unlock(&r->mu);
    }
free_list:
    while (list) {
        struct event *n = list->next;
        free(list);
        list = n;
    }
}

static void write_process_end(store_recorder *r)
{
    if (!db_up(r) || store_begin(r->db, CLOSE_BUSY_DEADLINE_MS) != SQLITE_OK)
        return;
    int gen = ++r->txn_gen;
    int rc = ensure_run_and_process(r);
    if (rc == SQLITE_OK)
        rc = save_schema_links(r);
    if (rc == SQLITE_OK)
        rc = flush_calls(r);
    uint64_t lost_before = r->lost;
    if (rc == SQLITE_OK)
        rc = write_gap(r);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK)
        rc = run_sql(r->db, "UPDATE processes SET ended_us = ? WHERE id = ?", &st);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, store_now_us());
        sqlite3_bind_int64(st, 2, r->process_row);
        rc = step_ok(st);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_OK && r->opts.run_id == 0) {
        /* A run of our own (no `tftap run` around us) ends with us. */
        rc = run_sql(r->db, "UPDATE runs SET ended_us = ? WHERE id = ?", &st);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, store_now_us());
            sqlite3_bind_int64(st, 2, r->run_id);
            rc = step_ok(st);
        }
        sqlite3_finalize(st);
    }
    if (rc == SQLITE_OK)
        rc = store_commit(r->db, CLOSE_BUSY_DEADLINE_MS);
    if (rc != SQLITE_OK) {
        forget_generation(r, gen);
        db_down(r, "write");
        return;
    }
    if (lost_before) {
        r->lost = 0;
        pthread_mutex_lock(&r->mu);
        r->stats.gaps++;
        pthread_mutex_unlock(&r->mu);
    }
}

static void *writer_main(void *arg)
{
    store_recorder *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        if (!r->head && !r->stop) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            unsigned wait = r->commit_ms;
            ts.tv_sec += wait / 1000;
            ts.tv_nsec += (long)(wait % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        }
        /* The writer owns what it takes: the bound is on what still waits. */
        struct event *list = r->head;
        r->head = NULL;
        r->tail = &r->head;
        r->queued_bytes = 0;
        int stopping = r->stop;
        /* Events refused at the queue since we last looked are lost. */
        if (r->queue_lost) {
            r->lost += r->queue_lost;
            r->lost_queue = 1;
            r->queue_lost = 0;
        }
        pthread_mutex_unlock(&r->mu);

        sync_procinfo(r);
        if (list) {
            write_batch(r, list, stopping);
        } else if (!stopping) {
            if (r->db && !r->schema)
                poll_borrowed_schema(r);
            /* Nothing queued, but a row, a gap or a re-decoded call is owed. */
            if (r->process_row == 0 || !r->process_written || r->lost || r->any_dirty ||
                (r->schema && !r->schema_saved) || (r->identity_raw && !r->identity_saved))
                write_batch(r, NULL, 0);
        }
        if (stopping) {
            pthread_mutex_lock(&r->mu);
            int empty = r->head == NULL;
            pthread_mutex_unlock(&r->mu);
            if (empty)
                break;
        }
    }
    write_process_end(r);
    return NULL;
}

int store_recorder_open(const char *db_path, const store_recorder_opts *opts,
                        store_recorder **out)
{
    *out = NULL;
    if (!db_path || !*db_path)
        return TFTAP_EINVAL;
    store_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return TFTAP_ENOMEM;
    if (opts)
        r->opts = *opts;
    if (!r->opts.max_queue_bytes)
        r->opts.max_queue_bytes = DEFAULT_QUEUE_BYTES;
    r->retry_ms = DEFAULT_RETRY_MS;
    r->commit_ms = DEFAULT_COMMIT_MS;
    r->tail = &r->head;
    r->calls_tail = &r->calls;
    r->path = dupstr(db_path);
    if (!r->path) {
        free(r);
        return TFTAP_ENOMEM;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&r->thread, NULL, writer_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r->path);
        free(r);
        return TFTAP_ENOMEM;
    }
    r->thread_started = 1;
    *out = r;
    return 0;
}

void store_recorder_close(store_recorder *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->thread_started)
        pthread_join(r->thread, NULL);
    finalize_stmts(r);
    if (r->db)
        sqlite3_close(r->db);
    while (r->calls) {
        struct call *n = r->calls->lnext;
        call_free(r, r->calls);
        r->calls = n;
    }
    while (r->head) {
        struct event *n = r->head->next;
        free(r->head);
        r->head = n;
    }
    dec_schema_free(r->schema);
    EVP_MAC_CTX_free(r->mac);
    free(r->schema_raw);
    free(r->identity_raw);
    free(r->proc.provider);
    free(r->proc.version);
    free(r->proc.binary_path);
    free(r->pinfo.provider);
    free(r->pinfo.version);
    free(r->pinfo.binary_path);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    memset(r->key, 0, sizeof r->key);
    free(r->path);
    free(r);
}
