/* recorder: the recorder's SQL stage. One thread owns the database
 * connection and applies the ops the decoding stage (decode.c)
 * hands over, in batched IMMEDIATE transactions of at most commit_ms. An op
 * leaves the pending list only once its transaction committed; a failed
 * transaction closes the connection, which is re-opened every retry_ms,
 * and the same ops are applied again (they are idempotent). A transaction
 * the database refused (a value or row it will never take, not a lost
 * connection) is applied again one op per transaction: what is taken is
 * kept, what is refused is logged and counted in a gap (apply_singly). */
#include "recorder/recorder_int.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned tuning(recorder *r, int which)
{
    pthread_mutex_lock(&r->mu);
    unsigned v = which ? r->commit_ms : r->retry_ms;
    pthread_mutex_unlock(&r->mu);
    return v;
}

void rec_sql_finalize(recorder *r)
{
    sdb_finalize(r->st_upsert);
    sdb_finalize(r->st_msg);
    r->st_upsert = r->st_msg = NULL;
}

static void set_sql_ok(recorder *r, int ok)
{
    pthread_mutex_lock(&r->mu);
    r->sql_ok = ok;
    r->stats.db_ok = ok;
    pthread_mutex_unlock(&r->mu);
}

static void db_down(recorder *r)
{
    /* The decoder is told first (it drops from then on), so that the line
     * is never seen before what it announces; and the line goes out before
     * the connection closes (closing an SQLite file may free the disk
     * space the line then takes, where before it did not fit). */
    set_sql_ok(r, 0);
    if (!r->logged_down) {
        r->logged_down = 1;
        rec_log(r,
                "cannot write the recording database %s: %s (dropping records, will "
                "retry)",
                STORE_SHOWN(r->path), r->db ? sdb_errmsg(r->db) : strerror(errno ? errno : EIO));
    }
    rec_sql_finalize(r);
    if (r->db) {
        store_rollback(r->db);
        if (sdb_is_pg(r->db)) { /* its hold goes with the session */
            store_hold_free(r->hold);
            r->hold = NULL;
            r->hold_run = 0;
        }
        sdb_close(r->db);
        r->db = NULL;
    }
    r->txn_gen++;
    r->next_retry_ms = tftap_mono_ms() + tuning(r, 0);
}

static int db_up(recorder *r)
{
    if (r->db)
        return 1;
    if (tftap_mono_ms() < r->next_retry_ms)
        return 0;
    errno = 0;
    unsigned char key[STORE_KEY_LEN];
    int rc = store_db_open(r->path, 1, &r->db, key);
    if (rc) {
        r->db = NULL;
        if (!r->logged_down) {
            r->logged_down = 1;
            rec_log(r,
                    "cannot open the recording database %s: %s%s%s (dropping records, "
                    "will retry)",
                    STORE_SHOWN(r->path), tftap_strerror(rc), errno ? ": " : "",
                    errno ? strerror(errno) : "");
        }
        r->next_retry_ms = tftap_mono_ms() + tuning(r, 0);
        pthread_mutex_lock(&r->mu);
        r->sql_tried = 1;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        return 0;
    }
    /* PostgreSQL: one round trip per transaction, not one per row. */
    sdb_pipeline(r->db, 1);
    /* Recovery is not announced: the gap row records what was lost, and
     * the one line already printed is all a user's terminal should get.
     * Opening is not recovery (a full disk opens fine and fails the next
     * write): only a commit re-arms the warning. */
    pthread_mutex_lock(&r->mu);
    memcpy(r->shared_key, key, sizeof key);
    r->key_ready = 1;
    r->sql_ok = 1;
    r->sql_tried = 1;
    r->stats.db_ok = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    memset(key, 0, sizeof key);
    return 1;
}

static int step_ok(sdb_stmt *st)
{
    int rc = sdb_step(st);
    sdb_reset(st);
    return rc == SDB_DONE || rc == SDB_ROW ? SDB_OK : rc;
}

static void bind_text_or_null(sdb_stmt *st, int i, const char *s)
{
    if (s)
        sdb_bind_text(st, i, s, -1, SDB_STATIC);
    else
        sdb_bind_null(st, i);
}

static int run_sql(sdb *db, const char *sql, sdb_stmt **out)
{
    return sdb_prepare(db, sql, out);
}

/* One statement with bound values: int64 (i), text (t); *id (may be NULL)
 * gets the first column of its row (INSERT ... RETURNING id). */
static int exec_bound_v(sdb *db, int64_t *id, const char *sql, const char *types, va_list ap)
{
    sdb_stmt *st = NULL;
    int rc = run_sql(db, sql, &st);
    if (rc)
        return rc;
    for (int i = 0; types[i]; i++) {
        if (types[i] == 'i')
            sdb_bind_int64(st, i + 1, va_arg(ap, int64_t));
        else
            bind_text_or_null(st, i + 1, va_arg(ap, const char *));
    }
    rc = sdb_step(st);
    if (id && rc == SDB_ROW)
        *id = sdb_column_int64(st, 0);
    else if (id && rc == SDB_DONE)
        rc = SDB_ERROR; /* RETURNING gave no row */
    rc = rc == SDB_DONE || rc == SDB_ROW ? SDB_OK : rc;
    sdb_finalize(st);
    return rc;
}

static int exec_bound(sdb *db, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int rc = exec_bound_v(db, NULL, sql, types, ap);
    va_end(ap);
    return rc;
}

static int exec_bound_id(sdb *db, int64_t *id, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int rc = exec_bound_v(db, id, sql, types, ap);
    va_end(ap);
    return rc;
}

/* The run is held while this recorder writes it (store_hold_run): on a
 * PostgreSQL record by the recorder's own session, taken again after a
 * reconnection. Not holding it costs only prune's respect. */
static void hold_run(recorder *r)
{
    if (r->hold != NULL && r->hold_run != r->run_id) {
        store_hold_free(r->hold); /* a run row of ours rolled back, made again */
        r->hold = NULL;
    }
    if (r->hold == NULL && r->run_id > 0 && r->hold_run != r->run_id) { /* tried once */
        if (store_hold_on(r->db, r->path, r->run_id, &r->hold) != 0)
            r->hold = NULL;
        r->hold_run = r->run_id;
    }
}

static int ensure_run_and_process(recorder *r)
{
    int rc;
    hold_run(r);
    if (r->run_id == 0) {
        if (r->opts.run_id) {
            r->run_id = r->opts.run_id;
        } else {
            /* One uuid for the recorder's life: after a commit in doubt the
             * row is found again instead of made twice. */
            rc = exec_bound_id(r->db, &r->run_id,
                               "INSERT INTO runs (command, started_us, uuid) VALUES (?, ?, ?) "
                               "ON CONFLICT (uuid) DO UPDATE SET uuid = excluded.uuid RETURNING id",
                               "tit", r->sproc.binary_path ? r->sproc.binary_path : "",
                               tftap_now_us(), r->run_uuid);
            if (rc)
                return rc;
            r->run_row_gen = r->txn_gen;
        }
        hold_run(r);
    }
    if (r->process_row == 0) {
        /* The same row again if an earlier commit of it was in doubt (the
         * connection lost after COMMIT was sent) and in fact happened. */
        rc = exec_bound_id(r->db, &r->process_row,
                           "INSERT INTO processes (run_id, started_us, uuid) VALUES (?, ?, ?) "
                           "ON CONFLICT (uuid) DO UPDATE SET uuid = excluded.uuid RETURNING id",
                           "iit", r->run_id, tftap_now_us(), r->process_uuid);
        if (rc)
            return rc;
        r->process_row_gen = r->txn_gen;
        /* A run with one recorder keeping values in clear keeps them: push
         * and bundles treat it so (runs.values_kept). */
        if (r->opts.record_sensitive &&
            (rc = exec_bound(r->db, "UPDATE runs SET values_kept = 1 WHERE id = ?", "i",
                             r->run_id)) != 0)
            return rc;
        pthread_mutex_lock(&r->mu);
        r->shared_process_row = r->process_row;
        r->stats.process_row = r->process_row;
        r->stats.run_id = r->run_id;
        pthread_mutex_unlock(&r->mu);
        /* A new row gets the details known so far. */
        if (r->sproc.provider || r->sproc.binary_path) {
            sdb_stmt *st = NULL;
            rc = run_sql(r->db,
                         "UPDATE processes SET provider = ?, version = ?, protocol = ?, pid = ?, "
                         "binary_path = ?, binary_sha256 = ?, binary_stat = ?, start_error = ? "
                         "WHERE id = ?",
                         &st);
            if (rc)
                return rc;
            bind_text_or_null(st, 1, r->sproc.provider);
            bind_text_or_null(st, 2, r->sproc.version);
            if (r->sproc.protocol)
                sdb_bind_int(st, 3, r->sproc.protocol);
            if (r->sproc.pid)
                sdb_bind_int(st, 4, r->sproc.pid);
            bind_text_or_null(st, 5, r->sproc.binary_path);
            bind_text_or_null(st, 6, r->sbinary_sha[0] ? r->sbinary_sha : NULL);
            bind_text_or_null(st, 7, r->sbinary_stat[0] ? r->sbinary_stat : NULL);
            bind_text_or_null(st, 8, r->sproc.start_error);
            sdb_bind_int64(st, 9, r->process_row);
            rc = step_ok(st);
            sdb_finalize(st);
            if (rc)
                return rc;
        }
    }
    return SDB_OK;
}

static int apply_process(recorder *r, const struct op *o)
{
    /* Keep a copy: a process row re-made after a failed transaction needs it. */
    char *a = rec_dupstr(o->provider), *v = rec_dupstr(o->version), *b = rec_dupstr(o->binary_path),
         *e = rec_dupstr(o->start_error);
    rec_procinfo_done(&r->sproc);
    r->sproc = (struct procinfo){a, v, b, e, o->protocol, o->pid, 0};
    memcpy(r->sbinary_sha, o->binary_sha, sizeof r->sbinary_sha);
    memcpy(r->sbinary_stat, o->binary_stat, sizeof r->sbinary_stat);
    sdb_stmt *st = NULL;
    int rc = run_sql(r->db,
                     "UPDATE processes SET provider = ?, version = ?, protocol = ?, pid = ?, "
                     "binary_path = ?, binary_sha256 = ?, binary_stat = ?, start_error = ? "
                     "WHERE id = ?",
                     &st);
    if (rc)
        return rc;
    bind_text_or_null(st, 1, o->provider);
    bind_text_or_null(st, 2, o->version);
    if (o->protocol)
        sdb_bind_int(st, 3, o->protocol);
    if (o->pid)
        sdb_bind_int(st, 4, o->pid);
    bind_text_or_null(st, 5, o->binary_path);
    bind_text_or_null(st, 6, o->binary_sha[0] ? o->binary_sha : NULL);
    bind_text_or_null(st, 7, o->binary_stat[0] ? o->binary_stat : NULL);
    bind_text_or_null(st, 8, o->start_error);
    sdb_bind_int64(st, 9, r->process_row);
    rc = step_ok(st);
    sdb_finalize(st);
    if (rc == SDB_OK && r->opts.run_id == 0 && o->binary_path)
        /* Our own run was made before we knew what we run. */
        rc = exec_bound(r->db, "UPDATE runs SET command = ? WHERE id = ? AND command = ''", "ti",
                        o->binary_path, r->run_id);
    return rc;
}

static int apply_schema(recorder *r, const struct op *o)
{
    int rc;
    if (o->bytes) {
        sdb_stmt *st = NULL;
        rc = run_sql(r->db,
                     "INSERT INTO schemas (sha256, kind, provider, protocol, size, raw, "
                     "first_seen_us) VALUES (?, ?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT (sha256) DO NOTHING",
                     &st);
        if (rc)
            return rc;
        sdb_bind_text(st, 1, o->schema_sha, -1, SDB_STATIC);
        sdb_bind_text(st, 2, o->schema_kind, -1, SDB_STATIC);
        bind_text_or_null(st, 3, r->sproc.provider);
        sdb_bind_int(st, 4, o->protocol ? o->protocol : 5);
        sdb_bind_int64(st, 5, (int64_t)o->len);
        sdb_bind_blob(st, 6, o->bytes, o->len, SDB_STATIC);
        sdb_bind_int64(st, 7, tftap_now_us());
        rc = step_ok(st);
        sdb_finalize(st);
        if (rc)
            return rc;
    }
    if (strcmp(o->schema_kind, "identity") == 0)
        return exec_bound(r->db, "UPDATE processes SET identity_sha256 = ? WHERE id = ?", "ti",
                          o->schema_sha, r->process_row);
    return exec_bound(r->db,
                      "UPDATE processes SET schema_sha256 = ?, schema_source = ? WHERE id = ?",
                      "tti", o->schema_sha, o->schema_source, r->process_row);
}

static int apply_gap(recorder *r, const struct op *o)
{
    /* The reasons, joined: "queue full, database unavailable"; or the
     * refusal's (apply_singly). */
    char reason[512] = "";
    if (o->reason == NULL) {
        /* In the order readers have always seen them. */
        static const struct {
            enum rec_lost_why why;
            const char *text;
        } reasons[REC_LOST_WHYS] = {
            {(enum rec_lost_why)RECORDER_LOST_QUEUE_FULL, "queue full"},
            {REC_LOST_DB, "database unavailable"},
            {(enum rec_lost_why)RECORDER_LOST_MALFORMED, "malformed recorder input"},
            {(enum rec_lost_why)RECORDER_LOST_TOO_LARGE,
             "message too large to record (relayed whole)"},
            {(enum rec_lost_why)RECORDER_LOST_SPILL_FAILED,
             "spill file not written or read (disk full?)"},
            {(enum rec_lost_why)RECORDER_LOST_SHIM_DIED,
             "shim died (its process ended mid-run: the calls counted were cut off; calls of "
             "its last moments may be missing entirely)"},
        };
        const char *parts[REC_LOST_WHYS];
        for (int i = 0; i < REC_LOST_WHYS; i++)
            parts[i] = o->lost_why[reasons[i].why] ? reasons[i].text : NULL;
        size_t at = 0;
        for (int i = 0; i < REC_LOST_WHYS; i++)
            if (parts[i] && at < sizeof reason)
                at += (size_t)snprintf(reason + at, sizeof reason - at, "%s%s", at ? ", " : "",
                                       parts[i]);
    }
    /* Written again after an in-doubt commit: seq keeps it one row, and
     * dropped is the sum of the rows, not an increment. */
    int rc = exec_bound(r->db,
                        "INSERT INTO gaps (run_id, process_id, lost, recorded_us, reason, seq) "
                        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (process_id, seq) DO NOTHING",
                        "iiiiti", r->run_id, r->process_row, (int64_t)o->lost, tftap_now_us(),
                        o->reason ? o->reason : reason, o->gap_seq);
    if (rc == SDB_OK)
        rc = exec_bound(r->db,
                        "UPDATE processes SET dropped = (SELECT coalesce(sum(lost), 0) FROM gaps "
                        "WHERE process_id = ?1) WHERE id = ?1",
                        "i", r->process_row);
    return rc;
}

static int apply_call(recorder *r, const struct op *o)
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
                     "response_count = ?14, type_name = ?15, "
                     /* A column an earlier image wrote, unchanged since: kept. */
                     "request_json = CASE WHEN ?20 = 1 THEN calls.request_json ELSE ?16 END, "
                     "response_json = CASE WHEN ?21 = 1 THEN calls.response_json ELSE ?17 END, "
                     "decode_error = ?18, schema_sha256 = ?19",
                     &r->st_upsert);
        if (rc)
            return rc;
    }
    sdb_stmt *st = r->st_upsert;
    const char *method = o->method ? o->method : "";
    sdb_bind_int64(st, 1, r->run_id);
    sdb_bind_int64(st, 2, r->process_row);
    sdb_bind_int64(st, 3, o->call_seq);
    sdb_bind_text(st, 4, method, -1, SDB_STATIC);
    sdb_bind_text(st, 5, store_rpc_name(method), -1, SDB_STATIC);
    sdb_bind_int(st, 6, o->stream);
    sdb_bind_int64(st, 7, o->started_us);
    if (o->ended) {
        sdb_bind_int64(st, 8, o->ended_us);
        sdb_bind_int(st, 9, o->status);
        bind_text_or_null(st, 10, o->status_message);
    } else {
        sdb_bind_null(st, 8);
        sdb_bind_null(st, 9);
        sdb_bind_null(st, 10);
    }
    sdb_bind_int64(st, 11, o->req_bytes);
    sdb_bind_int64(st, 12, o->resp_bytes);
    sdb_bind_int64(st, 13, o->req_count);
    sdb_bind_int64(st, 14, o->resp_count);
    bind_text_or_null(st, 15, o->type_name);
    bind_text_or_null(st, 16, o->req_json);
    bind_text_or_null(st, 17, o->resp_json);
    bind_text_or_null(st, 18, o->decode_error);
    bind_text_or_null(st, 19, o->schema_sha[0] ? o->schema_sha : NULL);
    sdb_bind_int(st, 20, o->req_keep);
    sdb_bind_int(st, 21, o->resp_keep);
    rc = step_ok(st);
    sdb_clear_bindings(st);
    return rc;
}

static int apply_raw(recorder *r, const struct op *o)
{
    int rc;
    if (!r->st_msg) {
        rc = run_sql(r->db,
                     "INSERT INTO messages (call_id, seq, direction, t_us, raw) "
                     "SELECT id, ?, ?, ?, ? FROM calls WHERE process_id = ? AND call_seq = ? "
                     "ON CONFLICT (call_id, seq) DO UPDATE SET direction = excluded.direction, "
                     "t_us = excluded.t_us, raw = excluded.raw",
                     &r->st_msg);
        if (rc)
            return rc;
    }
    sdb_bind_int64(r->st_msg, 1, o->msg_seq);
    sdb_bind_text(r->st_msg, 2, o->dir == RECORDER_REQUEST ? "request" : "response", -1,
                  SDB_STATIC);
    sdb_bind_int64(r->st_msg, 3, o->t_us);
    sdb_bind_blob(r->st_msg, 4, o->bytes ? (const void *)o->bytes : "", o->len, SDB_STATIC);
    sdb_bind_int64(r->st_msg, 5, r->process_row);
    sdb_bind_int64(r->st_msg, 6, o->call_seq);
    return step_ok(r->st_msg);
}

static int apply_end(recorder *r)
{
    int rc = exec_bound(r->db, "UPDATE processes SET ended_us = ? WHERE id = ?", "ii",
                        tftap_now_us(), r->process_row);
    if (rc == SDB_OK && r->opts.run_id == 0)
        /* A run of our own (no `tftap run` around us) ends with us. */
        rc = exec_bound(r->db, "UPDATE runs SET ended_us = ? WHERE id = ?", "ii", tftap_now_us(),
                        r->run_id);
    return rc;
}

static int apply_op(recorder *r, const struct op *o)
{
    switch (o->kind) {
    case OP_CALL:
        return apply_call(r, o);
    case OP_RAW:
        return apply_raw(r, o);
    case OP_PROCESS:
        return apply_process(r, o);
    case OP_SCHEMA:
        return apply_schema(r, o);
    case OP_GAP:
        return apply_gap(r, o);
    case OP_END:
        return apply_end(r);
    }
    return SDB_OK;
}

/* A transaction failed and was rolled back: rows it made are made again. */
static void forget_generation(recorder *r, int gen)
{
    if (r->run_row_gen == gen && r->opts.run_id == 0)
        r->run_id = 0;
    if (r->process_row_gen == gen)
        r->process_row = 0;
}

/* Answer the decoder's question about an earlier schema. */
static void answer_borrow(recorder *r)
{
    char want[65];
    pthread_mutex_lock(&r->mu);
    int asked = r->borrow_asked && !r->borrow_ready;
    memcpy(want, r->borrow_want, sizeof want);
    pthread_mutex_unlock(&r->mu);
    if (!asked || !r->db)
        return;
    sdb_stmt *st = NULL;
    unsigned char *raw = NULL;
    size_t len = 0;
    int proto = 0;
    char sha[65] = "";
    if (run_sql(r->db,
                "SELECT s.sha256, s.protocol, s.raw FROM processes p "
                "JOIN schemas s ON s.sha256 = p.schema_sha256 "
                "WHERE p.binary_sha256 = ? AND p.id != ? ORDER BY p.id DESC LIMIT 1",
                &st) == SDB_OK) {
        sdb_bind_text(st, 1, want, -1, SDB_STATIC);
        sdb_bind_int64(st, 2, r->process_row);
        if (sdb_step(st) == SDB_ROW) {
            const char *s = (const char *)sdb_column_text(st, 0);
            snprintf(sha, sizeof sha, "%s", s ? s : "");
            proto = sdb_column_int(st, 1);
            len = (size_t)sdb_column_bytes(st, 2);
            const void *b = sdb_column_blob(st, 2);
            raw = b ? malloc(len ? len : 1) : NULL;
            if (raw)
                memcpy(raw, b, len);
        }
    }
    sdb_finalize(st);
    pthread_mutex_lock(&r->mu);
    r->borrow_asked = 0;
    if (raw) {
        r->borrow_raw = raw;
        r->borrow_len = len;
        r->borrow_protocol = proto;
        memcpy(r->borrow_sha, sha, sizeof sha);
        r->borrow_ready = 1;
        r->idle_due_ms = tftap_mono_ms(); /* taken by the next idle hand-over, if no caller */
    }
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Answer the decoder's question about its binary's digest: the one an
 * earlier process recorded for the same file, unchanged. */
static void answer_digest(recorder *r)
{
    char want[BINARY_STAT_LEN];
    pthread_mutex_lock(&r->mu);
    int asked = r->digest_asked && !r->digest_answered;
    memcpy(want, r->digest_stat, sizeof want);
    pthread_mutex_unlock(&r->mu);
    if (!asked || !r->db)
        return;
    char sha[65] = "";
    sdb_stmt *st = NULL;
    if (run_sql(r->db,
                "SELECT binary_sha256 FROM processes WHERE binary_stat = ? AND "
                "length(binary_sha256) = 64 LIMIT 1",
                &st) == SDB_OK) {
        sdb_bind_text(st, 1, want, -1, SDB_STATIC);
        if (sdb_step(st) == SDB_ROW) {
            /* A database is a file anyone may have written: hex or nothing. */
            const unsigned char *t = sdb_column_text(st, 0);
            size_t hex = 0;
            while (t && hex < 64 &&
                   ((t[hex] >= '0' && t[hex] <= '9') || (t[hex] >= 'a' && t[hex] <= 'f')))
                hex++;
            if (hex == 64 && t[64] == '\0') {
                memcpy(sha, t, 64);
                sha[64] = '\0';
            }
        }
    }
    sdb_finalize(st);
    pthread_mutex_lock(&r->mu);
    /* Only for the question still asked: one given up on (2 s) and asked
     * again about another binary must not get this file's digest. */
    if (r->digest_asked && !r->digest_answered && strcmp(r->digest_stat, want) == 0) {
        memcpy(r->digest_sha, sha, sizeof sha);
        r->digest_answered = 1;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

/* A write the database refused (a value it cannot store, a constraint, a
 * trigger's exception), not one it could not take (the connection, a lock,
 * no room): the same write again can never succeed. */
static int refused(recorder *r, int rc)
{
    rc &= 0xff; /* SQLite's extended codes */
    return r->db && !sdb_gone(r->db) &&
           (rc == SDB_ERROR || rc == SDB_CONSTRAINT || rc == SDB_TOOBIG || rc == SDB_MISMATCH);
}

static const char *op_table(const struct op *o)
{
    switch (o->kind) {
    case OP_CALL:
        return "calls";
    case OP_RAW:
        return "messages";
    case OP_SCHEMA:
        return "schemas";
    case OP_GAP:
        return "gaps";
    case OP_PROCESS:
    case OP_END:
        break;
    }
    return "processes";
}

/* Recorder events (call starts, messages, ends) an op refused loses; an op
 * that is none (process details, a schema) counts one. */
static uint64_t op_lost(const struct op *o)
{
    if (o->kind == OP_CALL)
        return 1 + (uint64_t)(o->req_count > 0 ? o->req_count : 0) +
               (uint64_t)(o->resp_count > 0 ? o->resp_count : 0) + (o->ended ? 1 : 0);
    if (o->kind == OP_GAP)
        return o->lost;
    return 1;
}

/* The committed (or refused) op at the head of pending leaves it. */
static void release_head(recorder *r, int committed)
{
    struct op *x = r->pending;
    r->pending = x->next;
    if (!r->pending)
        r->pending_tail = &r->pending;
    uint64_t events = x->events;
    int gap = committed && x->kind == OP_GAP;
    size_t bytes = x->size, big = x->big;
    rec_op_free(x);
    pthread_mutex_lock(&r->mu);
    assert(big <= r->big_inflight);
    r->big_inflight -= big;
    r->stats.written += events;
    r->stats.gaps += (uint64_t)gap;
    assert(bytes <= r->ops_bytes);
    r->ops_bytes -= bytes;
    rec_release(r, bytes);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* What the refused ops lost, as a gap op at the head of pending: written
 * with the next transaction, kept like any op while the database is away. */
static void refused_gap(recorder *r, uint64_t lost, const char *why)
{
    struct op *g = calloc(1, sizeof *g);
    char *reason = malloc(strlen(why) + 32);
    if (!g || !reason) {
        free(g);
        free(reason);
        return; /* the log has it */
    }
    sprintf(reason, "refused by the database: %s", why);
    g->kind = OP_GAP;
    g->lost = lost;
    g->reason = reason;
    g->gap_seq = --r->refused_seq; /* the decoder's are positive */
    g->next = r->pending;
    if (!r->pending)
        r->pending_tail = &g->next;
    r->pending = g;
    pthread_mutex_lock(&r->mu);
    r->stats.dropped += lost;
    pthread_mutex_unlock(&r->mu);
}

/* The transaction of the ops from pending up to end was refused: apply
 * them again one transaction each. The run and process rows first, in a
 * transaction of their own: refused, nothing can be written and the whole
 * batch is kept and retried like when the database is away. Returns 0 once
 * every op up to end was written or refused, -1 when the database went
 * away meanwhile (db_down done; the rest stays pending). */
static int apply_singly(recorder *r, struct op *end, int closing)
{
    unsigned deadline = closing ? CLOSE_BUSY_DEADLINE_MS : 0;
    uint64_t lost = 0;
    char why[200] = "";
    int rc = store_begin(r->db, deadline);
    int gen = ++r->txn_gen; /* of the transaction open, 0 once it committed */
    if (rc == SDB_OK)
        rc = ensure_run_and_process(r);
    if (rc == SDB_OK)
        rc = store_commit(r->db, deadline);
    if (rc == SDB_OK)
        gen = 0;
    while (rc == SDB_OK && r->pending != end) {
        struct op *x = r->pending;
        rc = store_begin(r->db, deadline);
        if (rc != SDB_OK)
            break;
        gen = ++r->txn_gen;
        rc = apply_op(r, x);
        if (rc == SDB_OK)
            rc = store_commit(r->db, deadline);
        if (rc == SDB_OK) {
            gen = 0;
            release_head(r, 1);
            continue;
        }
        if (!refused(r, rc))
            break;
        /* The server's words, their first line, before the rollback's. */
        char msg[160];
        const char *e = sdb_errmsg(r->db);
        size_t n = strcspn(e, "\n");
        snprintf(msg, sizeof msg, "%.*s", (int)(n < sizeof msg ? n : sizeof msg - 1), e);
        store_rollback(r->db);
        rec_sql_finalize(r); /* a failed pipeline forgets what it prepared */
        forget_generation(r, gen);
        gen = 0;
        rc = SDB_OK;
        if (r->refused_lines < 20) {
            r->refused_lines++;
            rec_log(r,
                    "the recording database %s refused a write to table %s: %s (not "
                    "recorded, counted in a gap)%s",
                    STORE_SHOWN(r->path), op_table(x), msg,
                    r->refused_lines == 20 ? "; further refusals are not logged" : "");
        }
        if (x->kind == OP_GAP && x->reason) {
            /* A refusal's own gap refused: written again, it would make
             * another. The log above is all that is left of it. */
            release_head(r, 0);
            continue;
        }
        if (!why[0])
            snprintf(why, sizeof why, "%s: %s", op_table(x), msg);
        lost += op_lost(x);
        release_head(r, 0);
    }
    if (lost)
        refused_gap(r, lost, why);
    if (rc != SDB_OK) {
        if (gen)
            forget_generation(r, gen);
        db_down(r);
        return -1;
    }
    r->logged_down = 0;
    return 0;
}

/* Apply everything pending in transactions of at most commit_ms; an op is
 * dropped from pending only once its transaction committed, or once the
 * database refused it alone (apply_singly). */
static void apply_pending(recorder *r, int closing)
{
    while (r->db) {
        unsigned deadline = closing ? CLOSE_BUSY_DEADLINE_MS : 0;
        if (store_begin(r->db, deadline) != SDB_OK) {
            db_down(r);
            return;
        }
        int gen = ++r->txn_gen;
        int64_t t0 = tftap_mono_ms();
        unsigned commit_ms = tuning(r, 1);
        int rc = ensure_run_and_process(r);
        struct op *o = r->pending;
        uint64_t events = 0;
        size_t n = 0;
        struct op *end = o; /* past the last op tried */
        while (rc == SDB_OK && o) {
            rc = apply_op(r, o);
            if (rc) {
                end = o->next;
                break;
            }
            events += o->events;
            o = o->next;
            if ((++n & 127) == 0 && tftap_mono_ms() - t0 >= (int64_t)commit_ms)
                break;
        }
        if (rc == SDB_OK) {
            end = o;
            rc = store_commit(r->db, deadline);
        }
        if (rc != SDB_OK) {
            forget_generation(r, gen);
            if (!refused(r, rc)) {
                db_down(r);
                return;
            }
            /* With a pipeline, the statement that failed is not known. */
            store_rollback(r->db);
            rec_sql_finalize(r);
            if (apply_singly(r, end, closing) || !r->pending)
                return;
            continue;
        }
        r->logged_down = 0;
        /* Committed: release the ops up to o. */
        uint64_t gaps = 0;
        size_t bytes = 0, big = 0;
        while (r->pending != o) {
            struct op *x = r->pending;
            r->pending = x->next;
            gaps += x->kind == OP_GAP;
            bytes += x->size;
            big += x->big;
            rec_op_free(x);
        }
        if (!r->pending)
            r->pending_tail = &r->pending;
        pthread_mutex_lock(&r->mu);
        r->stats.written += events;
        r->stats.gaps += gaps;
        assert(bytes <= r->ops_bytes);
        r->ops_bytes -= bytes;
        assert(big <= r->big_inflight);
        r->big_inflight -= big;
        rec_release(r, bytes);
        pthread_cond_broadcast(&r->cv); /* the decoder may wait for room */
        pthread_mutex_unlock(&r->mu);
        if (!r->pending)
            return;
    }
}

/* Nothing makes the SQL thread commit what it has at once: no close, no
 * schema question, and the bound far from full. Under mu. */
static int may_gather(const recorder *r)
{
    return r->db && !r->sql_stop && !r->ops_urgent && !(r->borrow_asked && !r->borrow_ready) &&
           !(r->digest_asked && !r->digest_answered) &&
           r->inflight_bytes < r->opts.max_queue_bytes / 4;
}

void *rec_sql_main(void *arg)
{
    recorder *r = arg;
    int64_t last_commit_ms = 0, idle_not_before = 0;
    pthread_setname_np(pthread_self(), "tftap-sql"); /* for top and perf */
    for (;;) {
        /* What callers decoded and left when they went quiet: handed over
         * here (a caller decoding meanwhile hands it over itself; then the
         * next try waits a gathering's time, not spinning). */
        pthread_mutex_lock(&r->mu);
        int64_t t = tftap_mono_ms();
        int idle = r->idle_due_ms && !r->sql_stop && t >= r->idle_due_ms && t >= idle_not_before;
        pthread_mutex_unlock(&r->mu);
        if (idle) {
            rec_decoder_idle(r);
            idle_not_before = tftap_mono_ms() + DECODE_GATHER_MS;
        }
        pthread_mutex_lock(&r->mu);
        if (r->sql_tried && !r->ops && !r->sql_stop && !(r->borrow_asked && !r->borrow_ready) &&
            !(r->digest_asked && !r->digest_answered)) {
            int64_t until = tftap_mono_ms() + (r->db ? r->commit_ms : r->retry_ms);
            if (r->idle_due_ms) {
                int64_t due = r->idle_due_ms > idle_not_before ? r->idle_due_ms : idle_not_before;
                if (due < until)
                    until = due;
            }
            struct timespec ts;
            tftap_deadline_at(&ts, until);
            pthread_cond_timedwait(&r->scv, &r->mu, &ts);
        }
        /* Calls trickling in (a CLI asking a provider one resource at a
         * time) would each make a transaction of their own, and a commit
         * costs far more than the rows in it (the WAL's pages written out
         * again each time). Let them gather for GATHER_MS after the last
         * commit; a close, a question or a filling bound ends the wait. */
        if (r->ops && may_gather(r)) {
            unsigned gather = r->commit_ms / 2 < GATHER_MS ? r->commit_ms / 2 : GATHER_MS;
            int64_t until = last_commit_ms + gather;
            r->sql_gathering = 1;
            while (r->ops && may_gather(r) && tftap_mono_ms() < until) {
                struct timespec ts;
                tftap_deadline_at(&ts, until);
                pthread_cond_timedwait(&r->scv, &r->mu, &ts);
            }
            r->sql_gathering = 0;
        }
        if (r->ops) {
            r->ops_urgent = 0; /* taken: committed without gathering */
            *r->pending_tail = r->ops;
            r->pending_tail = r->ops_tail;
            r->ops = NULL;
            r->ops_tail = &r->ops;
        }
        int stopping = r->sql_stop;
        pthread_mutex_unlock(&r->mu);

        if (stopping && r->linger_until_ms == 0) {
            r->next_retry_ms = 0; /* last chance: do not wait for the retry timer */
            r->linger_until_ms = tftap_mono_ms() + r->opts.linger_ms + 1;
        }
        if (db_up(r)) {
            if (r->pending || r->process_row == 0) {
                apply_pending(r, stopping);
                last_commit_ms = tftap_mono_ms();
            }
            answer_borrow(r);
            answer_digest(r);
        }
        if (stopping) {
            pthread_mutex_lock(&r->mu);
            int more = r->ops != NULL;
            pthread_mutex_unlock(&r->mu);
            if (more)
                continue;
            if (!r->pending)
                break;
            if (r->db)
                continue; /* a commit that stopped at commit_ms: go on */
            /* The database is unavailable and what it did not take is
             * ours alone now (the decoder is done): tell recorder_drain,
             * whose caller goes on without us, and keep trying until
             * linger_until. The gap op counting what was lost meanwhile is
             * among the pending ops, written with them. */
            int64_t now = tftap_mono_ms();
            pthread_mutex_lock(&r->mu);
            if (!r->sql_stuck) {
                r->sql_stuck = 1;
                pthread_cond_broadcast(&r->cv);
            }
            if (now >= r->linger_until_ms) {
                pthread_mutex_unlock(&r->mu);
                break;
            }
            int64_t until =
                r->next_retry_ms < r->linger_until_ms ? r->next_retry_ms : r->linger_until_ms;
            if (until > now) {
                struct timespec ts;
                tftap_deadline_at(&ts, until);
                pthread_cond_timedwait(&r->scv, &r->mu, &ts);
            }
            pthread_mutex_unlock(&r->mu);
        }
    }
    /* What never committed is lost: count it. */
    uint64_t lost = 0;
    for (struct op *o = r->pending; o; o = o->next)
        lost += o->events;
    rec_op_list_free(r->pending);
    r->pending = NULL;
    pthread_mutex_lock(&r->mu);
    r->stats.dropped += lost;
    if (lost)
        r->sql_stuck = 1;
    r->sql_done = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}
