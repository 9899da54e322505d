/* store: statements and transactions as every file of the store runs them,
 * and what their result codes mean to tftap's callers. */
#include "store/store_int.h"

#include <errno.h>
#include <time.h>

int store_err(int rc)
{
    switch (rc & 0xff) {
    case SDB_OK:
    case SDB_DONE:
    case SDB_ROW:
        return 0;
    case SDB_NOMEM:
        return TFTAP_ENOMEM;
    case SDB_CANTOPEN:
        return TFTAP_EIO;
    case SDB_NOLIB:
        return TFTAP_ENOLIB;
    default:
        return TFTAP_ESTORE;
    }
}

int store_exec(sdb *db, const char *sql)
{
    return sdb_exec(db, sql);
}

void store_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The busy handler already waited up to STORE_BUSY_TIMEOUT_MS inside each
 * attempt; retrying on top of it means a long-held lock (another process's
 * huge schema insert, a user's open write transaction) delays us but never
 * makes us give up within deadline_ms. */
static int exec_retry(sdb *db, const char *sql, unsigned deadline_ms)
{
    unsigned waited = 0;
    for (;;) {
        int rc = store_exec(db, sql);
        if ((rc & 0xff) != SDB_BUSY && (rc & 0xff) != SDB_LOCKED)
            return rc;
        if (deadline_ms && waited >= deadline_ms)
            return rc;
        store_sleep_ms(10);
        waited += 10 + STORE_BUSY_TIMEOUT_MS;
    }
}

int store_begin(sdb *db, unsigned deadline_ms)
{
    return exec_retry(db, "BEGIN IMMEDIATE", deadline_ms);
}

int store_commit(sdb *db, unsigned deadline_ms)
{
    return exec_retry(db, "COMMIT", deadline_ms);
}

void store_rollback(sdb *db)
{
    if (!sdb_get_autocommit(db))
        store_exec(db, "ROLLBACK");
}

int64_t store_pragma_int(sdb *db, const char *sql)
{
    sdb_stmt *q = NULL;
    int64_t v = -1;
    if (sdb_prepare(db, sql, &q) == SDB_OK && sdb_step(q) == SDB_ROW)
        v = sdb_column_int64(q, 0);
    sdb_finalize(q);
    return v;
}

int store_query_int(sdb *db, const char *sql, int64_t id, int64_t *out)
{
    sdb_stmt *q = NULL;
    *out = 0;
    int rc = sdb_prepare(db, sql, &q);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(q, 1, id);
    rc = sdb_step(q);
    if (rc == SDB_ROW)
        *out = sdb_column_int64(q, 0);
    sdb_finalize(q);
    return rc == SDB_ROW ? 0 : rc == SDB_DONE ? TFTAP_ENOTFOUND : store_err(rc);
}
