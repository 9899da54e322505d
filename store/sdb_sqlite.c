/* sdb: the SQLite backend, and the dispatch to the PostgreSQL one. */
#include "store/sdb_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "store/store.h"

static int lite_rc(int rc)
{
    return rc & 0xff;
}

int sdb_target_is_pg(const char *target)
{
    return target &&
           (strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0);
}

static _Thread_local char open_error[256];

const char *store_sqlite_version(void)
{
    return sqlite3_libversion();
}

const char *sdb_open_error(void)
{
    return open_error;
}

void sdb_set_open_error(const char *msg)
{
    size_t n = msg ? strcspn(msg, "\n") : 0;
    if (n >= sizeof open_error)
        n = sizeof open_error - 1;
    memcpy(open_error, msg ? msg : "", n);
    open_error[n] = '\0';
}

int sdb_open(const char *target, int flags, sdb **out)
{
    *out = NULL;
    sdb *db = calloc(1, sizeof *db);
    if (!db)
        return SDB_NOMEM;
    *out = db;
    if (sdb_target_is_pg(target))
        return sdb_pg_open(target, flags, db);
    int lf = SQLITE_OPEN_NOMUTEX;
    lf |= (flags & SDB_OPEN_READONLY) ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
    if (flags & SDB_OPEN_URI)
        lf |= SQLITE_OPEN_URI;
    int rc = sqlite3_open_v2(target, &db->lite, lf, NULL);
    if (db->lite)
        sqlite3_extended_result_codes(db->lite, 1);
    return lite_rc(rc);
}

int sdb_open_sqlite_image(const void *data, size_t len, sdb **out)
{
    *out = NULL;
    sdb *db = calloc(1, sizeof *db);
    if (!db)
        return SDB_NOMEM;
    *out = db;
    unsigned char *mem = sqlite3_malloc64(len ? len : 1);
    if (!mem)
        return SDB_NOMEM;
    memcpy(mem, data, len);
    int rc =
        sqlite3_open_v2(":memory:", &db->lite, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_free(mem);
        return lite_rc(rc);
    }
    sqlite3_extended_result_codes(db->lite, 1);
    return lite_rc(
        sqlite3_deserialize(db->lite, "main", mem, (sqlite3_int64)len, (sqlite3_int64)len,
                            SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE));
}

void sdb_close(sdb *db)
{
    if (!db)
        return;
    if (db->pg)
        sdb_pg_close(db);
    else
        sqlite3_close(db->lite);
    free(db);
}

int sdb_is_pg(const sdb *db)
{
    return db && db->pg;
}

const char *sdb_errmsg(sdb *db)
{
    if (!db)
        return "out of memory";
    return db->pg ? sdb_pg_errmsg(db) : sqlite3_errmsg(db->lite);
}

int sdb_changes(sdb *db)
{
    return db->pg ? sdb_pg_changes(db) : sqlite3_changes(db->lite);
}

int sdb_exec(sdb *db, const char *sql)
{
    return db->pg ? sdb_pg_exec(db, sql) : lite_rc(sqlite3_exec(db->lite, sql, NULL, NULL, NULL));
}

int sdb_get_autocommit(sdb *db)
{
    return db->pg ? sdb_pg_get_autocommit(db) : sqlite3_get_autocommit(db->lite);
}

void sdb_pipeline(sdb *db, int on)
{
    if (db->pg)
        sdb_pg_pipeline(db, on);
}

void sdb_busy_timeout(sdb *db, int ms)
{
    if (!db->pg)
        sqlite3_busy_timeout(db->lite, ms);
}

int sdb_gone(sdb *db)
{
    return db && db->pg ? sdb_pg_gone(db) : 0;
}

int sdb_data_version(sdb *db, int64_t *v)
{
    if (db->pg)
        return sdb_pg_data_version(db, v);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->lite, "PRAGMA data_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return lite_rc(rc);
}

static int prepare(sdb *db, const char *sql, int large, sdb_stmt **out)
{
    *out = NULL;
    sdb_stmt *st = calloc(1, sizeof *st);
    if (!st)
        return SDB_NOMEM;
    st->db = db;
    int rc = db->pg ? sdb_pg_prepare(db, sql, large, st)
                    : lite_rc(sqlite3_prepare_v2(db->lite, sql, -1, &st->lite, NULL));
    if (rc != SDB_OK) {
        sdb_finalize(st);
        return rc;
    }
    *out = st;
    return SDB_OK;
}

int sdb_prepare(sdb *db, const char *sql, sdb_stmt **out)
{
    return prepare(db, sql, 0, out);
}

int sdb_prepare_large(sdb *db, const char *sql, sdb_stmt **out)
{
    return prepare(db, sql, 1, out);
}

int sdb_step(sdb_stmt *st)
{
    return st->pg ? sdb_pg_step(st) : lite_rc(sqlite3_step(st->lite));
}

int sdb_reset(sdb_stmt *st)
{
    return st->pg ? sdb_pg_reset(st) : lite_rc(sqlite3_reset(st->lite));
}

int sdb_clear_bindings(sdb_stmt *st)
{
    return st->pg ? sdb_pg_clear_bindings(st) : lite_rc(sqlite3_clear_bindings(st->lite));
}

void sdb_finalize(sdb_stmt *st)
{
    if (!st)
        return;
    if (st->pg)
        sdb_pg_finalize(st);
    else
        sqlite3_finalize(st->lite);
    free(st);
}

int sdb_bind_int64(sdb_stmt *st, int i, int64_t v)
{
    if (!st->pg)
        return lite_rc(sqlite3_bind_int64(st->lite, i, v));
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    return sdb_pg_bind(st, i, buf, (size_t)n, 'i');
}

int sdb_bind_int(sdb_stmt *st, int i, int v)
{
    return sdb_bind_int64(st, i, v);
}

int sdb_bind_text(sdb_stmt *st, int i, const char *s, int len, int how)
{
    if (!st->pg)
        return lite_rc(sqlite3_bind_text(st->lite, i, s, len,
                                         how == SDB_STATIC ? SQLITE_STATIC : SQLITE_TRANSIENT));
    if (!s)
        return sdb_pg_bind(st, i, NULL, 0, 'n');
    return sdb_pg_bind(st, i, s, len < 0 ? strlen(s) : (size_t)len, 't');
}

int sdb_bind_blob(sdb_stmt *st, int i, const void *p, size_t len, int how)
{
    if (!st->pg)
        return lite_rc(sqlite3_bind_blob64(st->lite, i, p, len,
                                           how == SDB_STATIC ? SQLITE_STATIC : SQLITE_TRANSIENT));
    return sdb_pg_bind(st, i, p ? p : "", len, 'b');
}

int sdb_bind_null(sdb_stmt *st, int i)
{
    if (!st->pg)
        return lite_rc(sqlite3_bind_null(st->lite, i));
    return sdb_pg_bind(st, i, NULL, 0, 'n');
}

int sdb_bind_column(sdb_stmt *dst, int i, sdb_stmt *src, int j)
{
    if (!dst->pg && !src->pg)
        return lite_rc(sqlite3_bind_value(dst->lite, i, sqlite3_column_value(src->lite, j)));
    if (src->pg) {
        int len = 0, is_null = 0, is_blob = 0;
        const char *v = sdb_pg_column(src, j, &len, &is_null, &is_blob);
        switch (sdb_pg_column_type(src, j)) {
        case SDB_NULL:
            return sdb_bind_null(dst, i);
        case SDB_INTEGER:
            return sdb_bind_int64(dst, i, sdb_column_int64(src, j));
        case SDB_BLOB:
            return sdb_bind_blob(dst, i, v, (size_t)len, SDB_TRANSIENT);
        default:
            return sdb_bind_text(dst, i, v, len, SDB_TRANSIENT);
        }
    }
    switch (sqlite3_column_type(src->lite, j)) {
    case SQLITE_NULL:
        return sdb_bind_null(dst, i);
    case SQLITE_INTEGER:
        return sdb_bind_int64(dst, i, sqlite3_column_int64(src->lite, j));
    case SQLITE_BLOB:
        return sdb_bind_blob(dst, i, sqlite3_column_blob(src->lite, j),
                             (size_t)sqlite3_column_bytes(src->lite, j), SDB_TRANSIENT);
    default:
        return sdb_bind_text(dst, i, (const char *)sqlite3_column_text(src->lite, j),
                             sqlite3_column_bytes(src->lite, j), SDB_TRANSIENT);
    }
}

int64_t sdb_column_int64(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sqlite3_column_int64(st->lite, i);
    int len = 0, is_null = 0, is_blob = 0;
    const char *v = sdb_pg_column(st, i, &len, &is_null, &is_blob);
    if (is_null || is_blob || !v)
        return 0;
    if (v[0] == 't' && len == 1)
        return 1;                /* boolean */
    return strtoll(v, NULL, 10); /* also numeric (sum()), "f" and junk as 0 */
}

int sdb_column_int(sdb_stmt *st, int i)
{
    return (int)sdb_column_int64(st, i);
}

const unsigned char *sdb_column_text(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sqlite3_column_text(st->lite, i);
    int len = 0, is_null = 0, is_blob = 0;
    const char *v = sdb_pg_column(st, i, &len, &is_null, &is_blob);
    return is_null ? NULL : (const unsigned char *)v;
}

const void *sdb_column_blob(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sqlite3_column_blob(st->lite, i);
    int len = 0, is_null = 0, is_blob = 0;
    const char *v = sdb_pg_column(st, i, &len, &is_null, &is_blob);
    return is_null ? NULL : v;
}

int sdb_column_bytes(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sqlite3_column_bytes(st->lite, i);
    int len = 0, is_null = 0, is_blob = 0;
    sdb_pg_column(st, i, &len, &is_null, &is_blob);
    return is_null ? 0 : len;
}

int sdb_column_type(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sqlite3_column_type(st->lite, i);
    return sdb_pg_column_type(st, i);
}
