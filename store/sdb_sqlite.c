/* sdb: the SQLite backend (sdb.c dispatches to it by the handle). */
#include "store/sdb_int.h"

#include <stdlib.h>
#include <string.h>

static int lite_rc(int rc)
{
    return rc & 0xff;
}

const char *sdb_lite_version(void)
{
    return sqlite3_libversion();
}

int sdb_lite_open(const char *path, int flags, sdb *db)
{
    int lf = SQLITE_OPEN_NOMUTEX;
    lf |= (flags & SDB_OPEN_READONLY) ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
    if (flags & SDB_OPEN_URI)
        lf |= SQLITE_OPEN_URI;
    int rc = sqlite3_open_v2(path, &db->lite, lf, NULL);
    if (db->lite)
        sqlite3_extended_result_codes(db->lite, 1);
    return lite_rc(rc);
}

int sdb_lite_open_image(const void *data, size_t len, sdb *db)
{
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

void sdb_lite_close(sdb *db)
{
    sqlite3_close(db->lite);
}

const char *sdb_lite_errmsg(sdb *db)
{
    return sqlite3_errmsg(db->lite);
}

int sdb_lite_changes(sdb *db)
{
    return sqlite3_changes(db->lite);
}

int sdb_lite_exec(sdb *db, const char *sql)
{
    return lite_rc(sqlite3_exec(db->lite, sql, NULL, NULL, NULL));
}

int sdb_lite_get_autocommit(sdb *db)
{
    return sqlite3_get_autocommit(db->lite);
}

void sdb_lite_busy_timeout(sdb *db, int ms)
{
    sqlite3_busy_timeout(db->lite, ms);
}

int sdb_lite_data_version(sdb *db, int64_t *v)
{
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

/* The main database's file, as SQLite's VFS opened it. */
static sqlite3_file *main_file(sdb *db)
{
    sqlite3_file *f = NULL;
    if (sqlite3_file_control(db->lite, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
        !f->pMethods)
        return NULL;
    return f;
}

int sdb_lite_file_size(sdb *db, int64_t *size)
{
    sqlite3_file *f = main_file(db);
    sqlite3_int64 n = 0;
    if (!f)
        return SDB_CANTOPEN;
    int rc = f->pMethods->xFileSize(f, &n);
    *size = n;
    return lite_rc(rc);
}

int sdb_lite_file_read(sdb *db, int64_t off, void *buf, size_t n)
{
    sqlite3_file *f = main_file(db);
    if (!f)
        return SDB_CANTOPEN;
    if (n > INT32_MAX || off < 0)
        return SDB_TOOBIG;
    return lite_rc(f->pMethods->xRead(f, buf, (int)n, off));
}

int sdb_lite_prepare(sdb *db, const char *sql, sdb_stmt *st)
{
    return lite_rc(sqlite3_prepare_v2(db->lite, sql, -1, &st->lite, NULL));
}

int sdb_lite_step(sdb_stmt *st)
{
    return lite_rc(sqlite3_step(st->lite));
}

int sdb_lite_reset(sdb_stmt *st)
{
    return lite_rc(sqlite3_reset(st->lite));
}

int sdb_lite_clear_bindings(sdb_stmt *st)
{
    return lite_rc(sqlite3_clear_bindings(st->lite));
}

void sdb_lite_finalize(sdb_stmt *st)
{
    sqlite3_finalize(st->lite);
}

int sdb_lite_bind_int64(sdb_stmt *st, int i, int64_t v)
{
    return lite_rc(sqlite3_bind_int64(st->lite, i, v));
}

int sdb_lite_bind_text(sdb_stmt *st, int i, const char *s, int len, int how)
{
    return lite_rc(sqlite3_bind_text(st->lite, i, s, len,
                                     how == SDB_STATIC ? SQLITE_STATIC : SQLITE_TRANSIENT));
}

int sdb_lite_bind_blob(sdb_stmt *st, int i, const void *p, size_t len, int how)
{
    return lite_rc(sqlite3_bind_blob64(st->lite, i, p, len,
                                       how == SDB_STATIC ? SQLITE_STATIC : SQLITE_TRANSIENT));
}

int sdb_lite_bind_null(sdb_stmt *st, int i)
{
    return lite_rc(sqlite3_bind_null(st->lite, i));
}

int sdb_lite_bind_value(sdb_stmt *dst, int i, sdb_stmt *src, int j)
{
    return lite_rc(sqlite3_bind_value(dst->lite, i, sqlite3_column_value(src->lite, j)));
}

int64_t sdb_lite_column_int64(sdb_stmt *st, int i)
{
    return sqlite3_column_int64(st->lite, i);
}

const unsigned char *sdb_lite_column_text(sdb_stmt *st, int i)
{
    return sqlite3_column_text(st->lite, i);
}

const void *sdb_lite_column_blob(sdb_stmt *st, int i)
{
    return sqlite3_column_blob(st->lite, i);
}

int sdb_lite_column_bytes(sdb_stmt *st, int i)
{
    return sqlite3_column_bytes(st->lite, i);
}

int sdb_lite_column_type(sdb_stmt *st, int i)
{
    return sqlite3_column_type(st->lite, i);
}
