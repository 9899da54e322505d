/* sdb's backends: the handles both see and the PostgreSQL backend's entry
 * points (sdb_pg.c), which sdb_sqlite.c's dispatch calls. */
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
