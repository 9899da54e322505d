/* sdb: one database driver over two backends, SQLite's (sdb_sqlite.c) and
 * PostgreSQL's (sdb_pg.c): every call goes to the backend its handle was
 * opened with. The backends know nothing of each other or of this file. */
#include "store/sdb_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "store/store.h"

int sdb_target_is_pg(const char *target)
{
    return target &&
           (strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0);
}

static _Thread_local char open_error[256];

const char *store_sqlite_version(void)
{
    return sdb_lite_version();
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
    if (!sdb_target_is_pg(target))
        return sdb_lite_open(target, flags, db);
    int rc = sdb_pg_open(target, flags, db);
    /* Why a server was not reached, for the messages that name it. */
    sdb_set_open_error(rc == SDB_OK || !db->pg ? NULL : sdb_pg_errmsg(db));
    return rc;
}

int sdb_open_sqlite_image(const void *data, size_t len, sdb **out)
{
    *out = NULL;
    sdb *db = calloc(1, sizeof *db);
    if (!db)
        return SDB_NOMEM;
    *out = db;
    return sdb_lite_open_image(data, len, db);
}

void sdb_close(sdb *db)
{
    if (!db)
        return;
    if (db->pg)
        sdb_pg_close(db);
    else
        sdb_lite_close(db);
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
    return db->pg ? sdb_pg_errmsg(db) : sdb_lite_errmsg(db);
}

int sdb_changes(sdb *db)
{
    return db->pg ? sdb_pg_changes(db) : sdb_lite_changes(db);
}

int sdb_exec(sdb *db, const char *sql)
{
    return db->pg ? sdb_pg_exec(db, sql) : sdb_lite_exec(db, sql);
}

int sdb_get_autocommit(sdb *db)
{
    return db->pg ? sdb_pg_get_autocommit(db) : sdb_lite_get_autocommit(db);
}

void sdb_pipeline(sdb *db, int on)
{
    if (db->pg)
        sdb_pg_pipeline(db, on);
}

void sdb_busy_timeout(sdb *db, int ms)
{
    if (!db->pg)
        sdb_lite_busy_timeout(db, ms);
}

int sdb_gone(sdb *db)
{
    return db && db->pg ? sdb_pg_gone(db) : 0;
}

int sdb_data_version(sdb *db, int64_t *v)
{
    return db->pg ? sdb_pg_data_version(db, v) : sdb_lite_data_version(db, v);
}

int sdb_file_size(sdb *db, int64_t *size)
{
    return db->pg ? SDB_ERROR : sdb_lite_file_size(db, size);
}

int sdb_file_read(sdb *db, int64_t off, void *buf, size_t n)
{
    return db->pg ? SDB_ERROR : sdb_lite_file_read(db, off, buf, n);
}

static int prepare(sdb *db, const char *sql, int large, sdb_stmt **out)
{
    *out = NULL;
    sdb_stmt *st = calloc(1, sizeof *st);
    if (!st)
        return SDB_NOMEM;
    st->db = db;
    int rc = db->pg ? sdb_pg_prepare(db, sql, large, st) : sdb_lite_prepare(db, sql, st);
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
    return st->pg ? sdb_pg_step(st) : sdb_lite_step(st);
}

int sdb_reset(sdb_stmt *st)
{
    return st->pg ? sdb_pg_reset(st) : sdb_lite_reset(st);
}

int sdb_clear_bindings(sdb_stmt *st)
{
    return st->pg ? sdb_pg_clear_bindings(st) : sdb_lite_clear_bindings(st);
}

void sdb_finalize(sdb_stmt *st)
{
    if (!st)
        return;
    if (st->pg)
        sdb_pg_finalize(st);
    else
        sdb_lite_finalize(st);
    free(st);
}

int sdb_bind_int64(sdb_stmt *st, int i, int64_t v)
{
    if (!st->pg)
        return sdb_lite_bind_int64(st, i, v);
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
        return sdb_lite_bind_text(st, i, s, len, how);
    if (!s)
        return sdb_pg_bind(st, i, NULL, 0, 'n');
    return sdb_pg_bind(st, i, s, len < 0 ? strlen(s) : (size_t)len, 't');
}

int sdb_bind_blob(sdb_stmt *st, int i, const void *p, size_t len, int how)
{
    if (!st->pg)
        return sdb_lite_bind_blob(st, i, p, len, how);
    return sdb_pg_bind(st, i, p ? p : "", len, 'b');
}

int sdb_bind_null(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sdb_lite_bind_null(st, i);
    return sdb_pg_bind(st, i, NULL, 0, 'n');
}

/* A column of one statement as a parameter of another, whichever backends
 * the two are on (a push copies rows from SQLite into PostgreSQL). */
int sdb_bind_column(sdb_stmt *dst, int i, sdb_stmt *src, int j)
{
    if (!dst->pg && !src->pg)
        return sdb_lite_bind_value(dst, i, src, j);
    switch (sdb_column_type(src, j)) {
    case SDB_NULL:
        return sdb_bind_null(dst, i);
    case SDB_INTEGER:
        return sdb_bind_int64(dst, i, sdb_column_int64(src, j));
    case SDB_BLOB:
        return sdb_bind_blob(dst, i, sdb_column_blob(src, j), (size_t)sdb_column_bytes(src, j),
                             SDB_TRANSIENT);
    default:
        return sdb_bind_text(dst, i, (const char *)sdb_column_text(src, j),
                             sdb_column_bytes(src, j), SDB_TRANSIENT);
    }
}

int64_t sdb_column_int64(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sdb_lite_column_int64(st, i);
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
        return sdb_lite_column_text(st, i);
    int len = 0, is_null = 0, is_blob = 0;
    const char *v = sdb_pg_column(st, i, &len, &is_null, &is_blob);
    return is_null ? NULL : (const unsigned char *)v;
}

const void *sdb_column_blob(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sdb_lite_column_blob(st, i);
    int len = 0, is_null = 0, is_blob = 0;
    const char *v = sdb_pg_column(st, i, &len, &is_null, &is_blob);
    return is_null ? NULL : v;
}

int sdb_column_bytes(sdb_stmt *st, int i)
{
    if (!st->pg)
        return sdb_lite_column_bytes(st, i);
    int len = 0, is_null = 0, is_blob = 0;
    sdb_pg_column(st, i, &len, &is_null, &is_blob);
    return is_null ? 0 : len;
}

int sdb_column_type(sdb_stmt *st, int i)
{
    return st->pg ? sdb_pg_column_type(st, i) : sdb_lite_column_type(st, i);
}
