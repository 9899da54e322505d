/* recorder: the recorder's face to its callers: open, the caller's side,
 * stats, drain and close. Two stages work as a pipeline, so that decoding
 * and SQLite use two cores:
 *
 *   decoding (decode.c), in the caller's thread (the recorder process's
 *     pipe reader: the pipe is the queue in front of it): keeps each live
 *     call's state in memory, decodes its messages against the schema, and
 *     hands "ops" (call row images, schema rows, gap counts, ...) to the SQL
 *     thread within one byte bound, making its caller wait (opts.block_ms)
 *     or dropping, counted, when the bound is full;
 *   SQL thread (sql.c): owns the database connection and applies
 *     ops in batched IMMEDIATE transactions. Every op is idempotent (call
 *     rows are upserts of the call's state) and stays queued until its
 *     transaction commits, so a failed transaction loses nothing: it is
 *     applied again once the database is back.
 *
 * While the database cannot be opened or written, decoding drops events
 * and counts them; the count becomes a gap row once it can. */
#include "recorder/recorder_int.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the caller's side -------------------------------------------------- */

void recorder_call_begin(recorder *r, uint64_t call_id, const char *method, int64_t t_us)
{
    if (!r)
        return;
    struct event ev = {
        .kind = EV_BEGIN, .call_id = call_id, .t_us = t_us, .text = method ? method : ""};
    rec_decode(r, &ev, sizeof(struct call) + strlen(ev.text));
}

void recorder_message(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                      const void *bytes, size_t len)
{
    if (!r)
        return;
    struct event ev = {.kind = EV_MESSAGE,
                       .dir = dir,
                       .call_id = call_id,
                       .t_us = t_us,
                       .bytes = bytes,
                       .len = len};
    rec_decode(r, &ev, len);
}

void recorder_message_take(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                           void *bytes, size_t len)
{
    if (!r) {
        free(bytes);
        return;
    }
    struct event ev = {.kind = EV_MESSAGE,
                       .dir = dir,
                       .call_id = call_id,
                       .t_us = t_us,
                       .bytes = bytes,
                       .len = len,
                       .owned = bytes};
    rec_decode(r, &ev, len);
}

void recorder_message_file(recorder *r, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                           char *path)
{
    if (!r) {
        (void)unlink(path);
        free(path);
        return;
    }
    struct event ev = {
        .kind = EV_MESSAGE, .dir = dir, .call_id = call_id, .t_us = t_us, .spill_path = path};
    /* Its JSON is outside the bound: one big message at a time (decode.c). */
    rec_decode(r, &ev, strlen(path) + 1);
}

void recorder_lost(recorder *r, uint64_t n, enum recorder_lost why)
{
    if (!r || (n == 0 && why != RECORDER_LOST_SHIM_DIED))
        return;
    pthread_mutex_lock(&r->mu);
    r->stats.dropped += n;
    if ((unsigned)why > RECORDER_LOST_SPILL_FAILED)
        why = RECORDER_LOST_MALFORMED; /* not one we know: told as what it is */
    r->told_lost[why] += n;
    if (why == RECORDER_LOST_SHIM_DIED)
        r->told_shim_died = 1;
    pthread_mutex_unlock(&r->mu);
    rec_decoder_sync(r); /* a gap is owed, whether or not more events come */
}

void recorder_call_end(recorder *r, uint64_t call_id, int64_t t_us, int status_code,
                       const char *status_message)
{
    if (!r)
        return;
    struct event ev = {.kind = EV_END,
                       .call_id = call_id,
                       .t_us = t_us,
                       .status = status_code,
                       .text = status_message ? status_message : ""};
    rec_decode(r, &ev, strlen(ev.text) + 64);
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
    pthread_mutex_unlock(&r->mu);
    rec_decoder_sync(r);
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
    pthread_mutex_unlock(&r->mu);
    rec_decoder_sync(r);
}

void recorder_get_stats(recorder *r, recorder_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    *out = r->stats;
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
    pthread_cond_signal(&r->scv);
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
    r->commit_ms = r->stage_commit_ms = DEFAULT_COMMIT_MS;
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
    pthread_mutex_init(&r->dec_mu, NULL);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &ca);
    pthread_cond_init(&r->scv, &ca);
    pthread_cond_init(&r->room, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&r->sql_thread, NULL, rec_sql_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_cond_destroy(&r->scv);
        pthread_cond_destroy(&r->room);
        pthread_mutex_destroy(&r->mu);
        pthread_mutex_destroy(&r->dec_mu);
        free(r->path);
        free(r);
        return TFTAP_ENOMEM;
    }
    r->sql_started = 1;
    *out = r;
    return 0;
}

int recorder_drain(recorder *r)
{
    if (!r)
        return 0;
    /* A caller waiting for room gives up first (its event is dropped,
     * counted): close's last words need the decoding stage. */
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->room);
    pthread_mutex_unlock(&r->mu);
    rec_decoder_close(r);
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
    pthread_mutex_destroy(&r->dec_mu);
    memset(r->key, 0, sizeof r->key);
    memset(r->shared_key, 0, sizeof r->shared_key);
    free(r->path);
    free(r);
}
