/* store: gaps written by whoever outlived a recorder, and a run's gaps
 * read back by reason. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

/* The gap row a shim writes for its dead recorder: one per process. */
#define RECORDER_LOSS_SEQ (-1)

/* The process row of pid in run_id, made when the recorder died before
 * writing one. */
static int process_row(sdb *db, int64_t run_id, int pid, const char *provider, int64_t *id)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(db,
                         "SELECT id FROM processes WHERE run_id = ? AND pid = ? ORDER BY id DESC "
                         "LIMIT 1",
                         &st);
    if (rc != SDB_OK)
        return rc;
    sdb_bind_int64(st, 1, run_id);
    sdb_bind_int64(st, 2, pid);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        *id = sdb_column_int64(st, 0);
        sdb_finalize(st);
        return SDB_OK;
    }
    sdb_finalize(st);
    if (rc != SDB_DONE)
        return rc;
    char uuid[STORE_UUID_LEN + 1];
    if (store_new_uuid(uuid) != 0)
        return SDB_ERROR;
    rc = sdb_prepare(db,
                     "INSERT INTO processes (run_id, provider, pid, started_us, uuid) "
                     "VALUES (?, ?, ?, ?, ?) RETURNING id",
                     &st);
    if (rc != SDB_OK)
        return rc;
    sdb_bind_int64(st, 1, run_id);
    if (provider != NULL)
        sdb_bind_text(st, 2, provider, -1, SDB_TRANSIENT);
    else
        sdb_bind_null(st, 2);
    sdb_bind_int64(st, 3, pid);
    sdb_bind_int64(st, 4, tftap_now_us());
    sdb_bind_text(st, 5, uuid, -1, SDB_TRANSIENT);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        *id = sdb_column_int64(st, 0);
        rc = SDB_OK;
    }
    sdb_finalize(st);
    return rc;
}

/* How many of the calls the relay saw the record lacks: never written, or
 * written without the answer the relay saw. */
static int count_missing(sdb *db, int64_t process_id, const unsigned char *calls, size_t ncalls,
                         int64_t *lost)
{
    unsigned char *have = calloc(ncalls ? ncalls : 1, 1); /* 1 begun, 2 answered */
    if (have == NULL)
        return SDB_NOMEM;
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(db,
                         "SELECT call_seq, CASE WHEN ended_us IS NULL THEN 0 ELSE 1 END FROM calls "
                         "WHERE process_id = ?",
                         &st);
    if (rc == SDB_OK) {
        sdb_bind_int64(st, 1, process_id);
        while ((rc = sdb_step(st)) == SDB_ROW) {
            int64_t seq = sdb_column_int64(st, 0);
            if (seq >= 1 && (uint64_t)seq <= ncalls)
                have[seq - 1] = sdb_column_int(st, 1) ? 2 : 1;
        }
        rc = rc == SDB_DONE ? SDB_OK : rc;
    }
    sdb_finalize(st);
    *lost = 0;
    for (size_t i = 0; rc == SDB_OK && i < ncalls; i++)
        if (calls[i] != STORE_RELAYED_NONE && have[i] < calls[i])
            (*lost)++;
    free(have);
    return rc;
}

int store_record_recorder_loss(const char *db_path, int64_t run_id, int pid, const char *provider,
                               const unsigned char *calls, size_t ncalls, const char *reason,
                               int64_t *lost)
{
    store *s = NULL;
    int64_t process_id = 0;
    *lost = 0;
    int rc = store_open(db_path, 0, &s);
    if (rc != 0)
        return rc;
    sdb *db = s->db;
    int src = store_begin(db, 60000);
    if (src == SDB_OK)
        src = process_row(db, run_id, pid, provider, &process_id);
    if (src == SDB_OK)
        src = count_missing(db, process_id, calls, ncalls, lost);
    if (src == SDB_OK && *lost > 0) {
        sdb_stmt *st = NULL;
        src = sdb_prepare(db,
                          "INSERT INTO gaps (run_id, process_id, lost, recorded_us, reason, seq) "
                          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (process_id, seq) DO UPDATE SET "
                          "lost = excluded.lost",
                          &st);
        if (src == SDB_OK) {
            sdb_bind_int64(st, 1, run_id);
            sdb_bind_int64(st, 2, process_id);
            sdb_bind_int64(st, 3, *lost);
            sdb_bind_int64(st, 4, tftap_now_us());
            sdb_bind_text(st, 5, reason, -1, SDB_TRANSIENT);
            sdb_bind_int64(st, 6, RECORDER_LOSS_SEQ);
            src = sdb_step(st);
            src = src == SDB_DONE ? SDB_OK : src;
        }
        sdb_finalize(st);
        if (src == SDB_OK)
            src = sdb_prepare(db,
                              "UPDATE processes SET dropped = (SELECT coalesce(sum(lost), 0) FROM "
                              "gaps WHERE process_id = ?1), ended_us = coalesce(ended_us, ?2) "
                              "WHERE id = ?1",
                              &st);
        if (src == SDB_OK) {
            sdb_bind_int64(st, 1, process_id);
            sdb_bind_int64(st, 2, tftap_now_us());
            src = sdb_step(st);
            src = src == SDB_DONE ? SDB_OK : src;
            sdb_finalize(st);
        }
    }
    if (src == SDB_OK)
        src = store_commit(db, 60000);
    else
        store_rollback(db);
    rc = src == SDB_OK ? 0 : store_err(src);
    store_close(s);
    return rc;
}

int store_run_gaps_each(store *s, int64_t run_id,
                        int (*fn)(void *ctx, const char *provider, const char *reason,
                                  int64_t lost),
                        void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT p.provider, g.reason, sum(g.lost) FROM gaps g "
                         "LEFT JOIN processes p ON p.id = g.process_id WHERE g.run_id = ? "
                         "GROUP BY p.provider, g.reason ORDER BY p.provider, g.reason",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        cb = fn(ctx, store_col_text(st, 0), store_col_text(st, 1), sdb_column_int64(st, 2));
        if (cb != 0)
            break;
    }
    return store_finish(st, rc, cb);
}
