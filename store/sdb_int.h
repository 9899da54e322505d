/* sdb's backends: the handles both see and each backend's entry points
 * (sdb_sqlite.c, sdb_pg.c), which sdb.c's dispatch calls. */
#ifndef TFTAP_STORE_SDB_INT_H
#define TFTAP_STORE_SDB_INT_H

#include <sqlite3.h>

#include "store/sdb.h"

struct sdb_pg;
struct sdb_pg_stmt;

struct sdb {
    sqlite3 *lite;     /* the SQLite backend, or */
    struct sdb_pg *pg; /* the PostgreSQL one */
};

struct sdb_stmt {
    sdb *db;
    sqlite3_stmt *lite;
    struct sdb_pg_stmt *pg;
};

/* SQLite (sdb_sqlite.c): SQLite's calls, result codes as sdb's. */
const char *sdb_lite_version(void);
int sdb_lite_open(const char *path, int flags, sdb *db);
int sdb_lite_open_image(const void *data, size_t len, sdb *db);
void sdb_lite_close(sdb *db);
const char *sdb_lite_errmsg(sdb *db);
int sdb_lite_changes(sdb *db);
int sdb_lite_exec(sdb *db, const char *sql);
int sdb_lite_get_autocommit(sdb *db);
void sdb_lite_busy_timeout(sdb *db, int ms);
int sdb_lite_data_version(sdb *db, int64_t *v);
int sdb_lite_file_size(sdb *db, int64_t *size);
int sdb_lite_file_read(sdb *db, int64_t off, void *buf, size_t n);
int sdb_lite_prepare(sdb *db, const char *sql, sdb_stmt *st);
int sdb_lite_step(sdb_stmt *st);
int sdb_lite_reset(sdb_stmt *st);
int sdb_lite_clear_bindings(sdb_stmt *st);
void sdb_lite_finalize(sdb_stmt *st);
int sdb_lite_bind_int64(sdb_stmt *st, int i, int64_t v);
int sdb_lite_bind_text(sdb_stmt *st, int i, const char *s, int len, int how);
int sdb_lite_bind_blob(sdb_stmt *st, int i, const void *p, size_t len, int how);
int sdb_lite_bind_null(sdb_stmt *st, int i);
/* dst's parameter i set to src's column j, both SQLite's. */
int sdb_lite_bind_value(sdb_stmt *dst, int i, sdb_stmt *src, int j);
int64_t sdb_lite_column_int64(sdb_stmt *st, int i);
const unsigned char *sdb_lite_column_text(sdb_stmt *st, int i);
const void *sdb_lite_column_blob(sdb_stmt *st, int i);
int sdb_lite_column_bytes(sdb_stmt *st, int i);
int sdb_lite_column_type(sdb_stmt *st, int i);

/* PostgreSQL (sdb_pg.c). A failed open leaves its reason in
 * sdb_pg_errmsg (the dispatch makes it sdb_open_error's). */
int sdb_pg_open(const char *uri, int flags, sdb *db);
void sdb_pg_close(sdb *db);
const char *sdb_pg_errmsg(sdb *db);
int sdb_pg_changes(sdb *db);
int sdb_pg_exec(sdb *db, const char *sql);
int sdb_pg_get_autocommit(sdb *db);
void sdb_pg_pipeline(sdb *db, int on);
int sdb_pg_data_version(sdb *db, int64_t *v);
int sdb_pg_gone(sdb *db);
int sdb_pg_prepare(sdb *db, const char *sql, int large, sdb_stmt *st);
int sdb_pg_step(sdb_stmt *st);
int sdb_pg_reset(sdb_stmt *st);
int sdb_pg_clear_bindings(sdb_stmt *st);
void sdb_pg_finalize(sdb_stmt *st);
/* Parameter i (1-based), copied: kind 'i' an integer in decimal, 't' text,
 * 'b' bytea; data NULL is NULL. */
int sdb_pg_bind(sdb_stmt *st, int i, const void *data, size_t len, char kind);
/* SDB_NULL, SDB_INTEGER (integers, booleans), SDB_FLOAT, SDB_BLOB or SDB_TEXT. */
int sdb_pg_column_type(sdb_stmt *st, int i);
const char *sdb_pg_column(sdb_stmt *st, int i, int *len, int *is_null, int *is_blob);

#endif
