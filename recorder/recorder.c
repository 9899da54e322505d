/* recorder: the recorder's face to its callers: open, the caller's side (the
 * events relay threads hand over through a byte-bounded queue), stats,
 * drain and close. Behind the queue two threads work as a pipeline, so
 * that decoding and SQLite use two cores:
 *
 *   decoder thread (decode.c): keeps each live call's state in
 *     memory, decodes its messages against the schema, and hands "ops"
 *     (call row images, schema rows, gap counts, ...) to the SQL thread;
 *   SQL thread (sql.c): owns the database connection and applies
 *     ops in batched IMMEDIATE transactions. Every op is idempotent (call
 *     rows are upserts of the call's whole state) and stays queued until its
 *     transaction commits, so a failed transaction loses nothing: it is
 *     applied again once the database is back.
 *
 * While the database cannot be opened or written, the decoder drops events
 * and counts them; the count becomes a gap row once it can. */
#include "recorder/recorder_int.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the caller's side: enqueue ----------------------------------------- */

/* Queue ev within the one bound: a full recorder drops it (counted, a gap
 * later) or, with opts.block_ms, makes the caller wait (a bounded time) for room. */
static void enqueue(recorder *r, struct event *ev)
{
    int drop = 0, log_full = 0;
    pthread_mutex_lock(&r->mu);
    if (r->overflowing && r->inflight_bytes <= r->opts.max_queue_bytes / 2)
        r->overflowing = 0; /* room again: wait, not drop */
    if (r->opts.block_ms && !r->overflowing && !r->stop && r->inflight_bytes > 0 &&
        r->inflight_bytes + ev->size > r->opts.max_queue_bytes) {
        /* Wait for room, a bounded time: a recorder stuck longer (a
         * database locked for seconds) drops, counted, until it is half
         * empty, rather than hold its caller (the proxy must be able to
         * flush and exit within go-plugin's two seconds). */
        struct timespec until;
        tftap_deadline_in(&until, r->opts.block_ms);
        while (!r->stop && r->inflight_bytes > 0 &&
               r->inflight_bytes + ev->size > r->opts.max_queue_bytes)
            if (pthread_cond_timedwait(&r->room, &r->mu, &until) == ETIMEDOUT) {
                r->overflowing = 1;
                break;
            }
    }
    if (r->stop || r->inflight_bytes + ev->size > r->opts.max_queue_bytes) {
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
        r->inflight_bytes += ev->size;
        if (r->inflight_bytes > r->peak_bytes)
            r->peak_bytes = r->inflight_bytes;
        r->stats.events++;
        /* A gathering decoder wakes at its deadline anyway. */
        if (!r->decoder_gathering || r->queued_bytes >= GATHER_LIMIT(r))
            pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    if (drop)
        rec_event_free(ev);
    if (log_full)
        rec_log(r, "recorder queue full (%zu bytes): dropping records, counted as a gap",
                r->opts.max_queue_bytes);
}

static void count_drop(recorder *r)
{
    pthread_mutex_lock(&r->mu);
    r->stats.dropped++;
    r->queue_lost++;
    pthread_mutex_unlock(&r->mu);
}

static struct event *event_new(enum ev_kind kind, uint64_t call_id, int64_t t_us, const char *text,
                               const void *bytes, size_t len)
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

void recorder_call_begin(recorder *r, uint64_t call_id, const char *method, int64_t t_us)
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

void recorder_message(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                      const void *bytes, size_t len)
{
    if (!r)
        return;
    /* Refuse before copying what could never fit. */
    if (len > r->opts.max_queue_bytes - sizeof(struct event)) {
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

void recorder_message_take(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                           void *bytes, size_t len)
{
    if (!r) {
        free(bytes);
        return;
    }
    if (len > r->opts.max_queue_bytes - sizeof(struct event)) {
        free(bytes);
        count_drop(r);
        return;
    }
    struct event *ev = event_new(EV_MESSAGE, call_id, t_us, NULL, NULL, 0);
    if (!ev) {
        free(bytes);
        count_drop(r);
        return;
    }
    ev->dir = dir;
    ev->owned = bytes;
    ev->bytes = bytes;
    ev->len = len;
    ev->size += len;
    enqueue(r, ev);
}

void recorder_message_file(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                           char *path)
{
    struct event *ev = r ? event_new(EV_MESSAGE, call_id, t_us, NULL, NULL, 0) : NULL;
    if (!ev) {
        (void)unlink(path);
        free(path);
        if (r)
            count_drop(r);
        return;
    }
    ev->dir = dir;
    ev->spill_path = path; /* the event's: removed with it */
    ev->size += strlen(path) + 1;
    enqueue(r, ev);
}

void recorder_lost(recorder *r, uint64_t n, enum recorder_lost why)
{
    if (!r || (n == 0 && why != RECORDER_LOST_SHIM_DIED))
        return;
    pthread_mutex_lock(&r->mu);
    r->stats.dropped += n;
    if (why == RECORDER_LOST_QUEUE_FULL)
        r->queue_lost += n;
    else if (why == RECORDER_LOST_TOO_LARGE)
        r->large_lost += n;
    else if (why == RECORDER_LOST_SPILL_FAILED)
        r->spill_lost += n;
    else if (why == RECORDER_LOST_SHIM_DIED)
        r->shim_lost += n;
    else
        r->input_lost += n;
    if (why == RECORDER_LOST_SHIM_DIED)
        r->shim_died = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void recorder_call_end(recorder *r, uint64_t call_id, int64_t t_us, int status_code,
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

void recorder_process(recorder *r, const char *provider_addr, const char *version,
                      const char *binary_path, int protocol_version, int pid)
{
    if (!r)
        return;
    char *a = rec_dupstr(provider_addr), *v = rec_dupstr(version), *b = rec_dupstr(binary_path);
    pthread_mutex_lock(&r->mu);
    char *why = r->pinfo.start_error; /* told apart: kept */
    r->pinfo.start_error = NULL;
    rec_procinfo_done(&r->pinfo);
    r->pinfo = (struct procinfo){a, v, b, why, protocol_version, pid, 1};
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void recorder_start_failed(recorder *r, const char *why)
{
    if (!r)
        return;
    char *w = rec_dupstr(why && *why ? why : "it did not start");
    pthread_mutex_lock(&r->mu);
    free(r->pinfo.start_error);
    r->pinfo.start_error = w;
    r->pinfo.changed = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void recorder_get_stats(recorder *r, recorder_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    *out = r->stats;
    out->queued_bytes = r->queued_bytes;
    out->inflight_bytes = r->inflight_bytes;
    out->peak_bytes = r->peak_bytes;
    pthread_mutex_unlock(&r->mu);
}

void recorder_tune(recorder *r, const recorder_tuning *t)
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

/* ---- open, drain, close ------------------------------------------------- */

int recorder_open(const char *db_path, const recorder_opts *opts, recorder **out)
{
    *out = NULL;
    if (!db_path || !*db_path)
        return TFTAP_EINVAL;
    recorder *r = calloc(1, sizeof *r);
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
    r->ops_tail = &r->ops;
    r->out_tail = &r->out;
    r->pending_tail = &r->pending;
    r->path = rec_dupstr(db_path);
    if (!r->path) {
        free(r);
        return TFTAP_ENOMEM;
    }
    if (store_new_uuid(r->run_uuid) != 0 || store_new_uuid(r->process_uuid) != 0) {
        free(r->path);
        free(r);
        return TFTAP_EIO;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &ca);
    pthread_cond_init(&r->scv, &ca);
    pthread_cond_init(&r->room, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&r->sql_thread, NULL, rec_sql_main, r) != 0)
        goto fail;
    r->sql_started = 1;
    if (pthread_create(&r->thread, NULL, rec_decoder_main, r) != 0) {
        pthread_mutex_lock(&r->mu);
        r->sql_stop = 1;
        pthread_cond_signal(&r->scv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->sql_thread, NULL);
        goto fail;
    }
    r->thread_started = 1;
    *out = r;
    return 0;
fail:
    pthread_cond_destroy(&r->cv);
    pthread_cond_destroy(&r->scv);
    pthread_cond_destroy(&r->room);
    pthread_mutex_destroy(&r->mu);
    free(r->path);
    free(r);
    return TFTAP_ENOMEM;
}

int recorder_drain(recorder *r)
{
    if (!r)
        return 0;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_cond_broadcast(&r->room);
    pthread_mutex_unlock(&r->mu);
    if (r->thread_started) {
        pthread_join(r->thread, NULL);
        r->thread_started = 0;
    }
    pthread_mutex_lock(&r->mu);
    while (r->sql_started && !r->sql_done && !r->sql_stuck)
        pthread_cond_wait(&r->cv, &r->mu);
    int rc = r->sql_stuck ? TFTAP_ESTORE : 0;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void recorder_close(recorder *r)
{
    if (!r)
        return;
    (void)recorder_drain(r);
    if (r->sql_started)
        pthread_join(r->sql_thread, NULL);
    rec_sql_finalize(r);
    if (r->db)
        sdb_close(r->db);
    store_hold_free(r->hold); /* everything is written */
    while (r->calls) {
        struct call *n = r->calls->lnext;
        rec_call_free(r, r->calls);
        r->calls = n;
    }
    assert(r->retained_bytes == 0); /* kept only by calls */
    while (r->head) {
        struct event *n = r->head->next;
        rec_event_free(r->head);
        r->head = n;
    }
    rec_op_list_free(r->ops);
    rec_op_list_free(r->out);
    rec_op_list_free(r->pending);
    free(r->borrow_raw);
    dec_schema_free(r->schema);
    tftap_hmac_free(r->mac);
    free(r->identity_raw);
    rec_procinfo_done(&r->proc);
    rec_procinfo_done(&r->pinfo);
    rec_procinfo_done(&r->sproc);
    pthread_cond_destroy(&r->cv);
    pthread_cond_destroy(&r->scv);
    pthread_cond_destroy(&r->room);
    pthread_mutex_destroy(&r->mu);
    memset(r->key, 0, sizeof r->key);
    memset(r->shared_key, 0, sizeof r->shared_key);
    free(r->path);
    free(r);
}
