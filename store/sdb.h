/* store's database driver: one small API, shaped like the parts of SQLite's
 * the store uses, over two backends: an SQLite file (sdb_sqlite.c) and a
 * PostgreSQL server named by a libpq URI (sdb_pg.c). store.h includes it:
 * a writer that drives its own connection (the recorder's SQL thread) uses it.
 *
 * Result codes have SQLite's primary values, so that SQLite's pass through
 * unchanged; PostgreSQL's are mapped onto them (SDB_GONE is its own: the
 * connection is lost or could not be made). Statements take SQLite's
 * placeholders (? and ?N); the PostgreSQL backend rewrites them to $N.
 * store.h includes it: a writer that drives its own connection (the
 * recorder's SQL thread) uses it through the store's API. */
#ifndef TFTAP_STORE_SDB_H
#define TFTAP_STORE_SDB_H

#include <stddef.h>
#include <stdint.h>

typedef struct sdb sdb;
typedef struct sdb_stmt sdb_stmt;

enum {
    SDB_OK = 0,
    SDB_ERROR = 1,
    SDB_BUSY = 5, /* a lock or a serialisation conflict: retry */
    SDB_LOCKED = 6,
    SDB_NOMEM = 7,
    SDB_READONLY = 8,
    SDB_NOTFOUND = 12,
    SDB_FULL = 13, /* no room (disk, server resources, an I/O error): retry later */
    SDB_CANTOPEN = 14,
    SDB_TOOBIG = 18, /* a value larger than the database takes */
    SDB_CONSTRAINT = 19,
    SDB_MISMATCH = 20, /* a value of the wrong type */
    SDB_NOTADB = 26,   /* a record tftap must not touch (one of a newer tftap) */
    SDB_ROW = 100,
    SDB_DONE = 101,
    SDB_GONE = 250,  /* PostgreSQL: connection lost or refused */
    SDB_NOLIB = 251, /* PostgreSQL: libpq could not be loaded (sdb_open_error says why) */
};

/* Column types (sdb_column_type); PostgreSQL's booleans are SDB_INTEGER. */
enum { SDB_INTEGER = 1, SDB_FLOAT = 2, SDB_TEXT = 3, SDB_BLOB = 4, SDB_NULL = 5 };

/* Open flags. */
enum { SDB_OPEN_READONLY = 1, SDB_OPEN_READWRITE = 2, SDB_OPEN_URI = 4 };

/* How a bound value lives: SDB_STATIC until the next step/reset, or copied. */
enum { SDB_STATIC = 0, SDB_TRANSIENT = 1 };

/* 1 when target names a PostgreSQL server (postgresql:// or postgres://). */
int sdb_target_is_pg(const char *target);

/* Open an SQLite file (flags as above) or connect to the PostgreSQL server a
 * URI names (SDB_OPEN_READONLY makes the session read only). Like SQLite, *out
 * is set whenever memory allowed, also on failure (for sdb_errmsg): close it. */
int sdb_open(const char *target, int flags, sdb **out);
/* Why this thread's last sdb_open of a PostgreSQL URI failed (libpq's
 * words, or why libpq itself could not be loaded; one line), or "". */
const char *sdb_open_error(void);
/* Records msg (its first line) as sdb_open_error's answer (NULL clears it):
 * also the store's, when a connection is refused after it was made. */
void sdb_set_open_error(const char *msg);
/* An SQLite database image (a file's bytes) opened in memory, writable. */
int sdb_open_sqlite_image(const void *data, size_t len, sdb **out);
/* The size, and n bytes at off, of the file an SQLite connection opened,
 * read through SQLite's own file (never an open()/close() of the caller's:
 * closing any descriptor of a file drops every POSIX lock this process
 * holds on it, those of its other connections included). Opening a
 * connection reads no page and makes no -wal or -shm file, so a file may be
 * looked at this way before it is queried. A read past the end fills with
 * zeros and fails; one read takes at most INT32_MAX bytes (else SDB_TOOBIG).
 * PostgreSQL: SDB_ERROR. */
int sdb_file_size(sdb *db, int64_t *size);
int sdb_file_read(sdb *db, int64_t off, void *buf, size_t n);
void sdb_close(sdb *db);
int sdb_is_pg(const sdb *db);
const char *sdb_errmsg(sdb *db);
/* Rows the last INSERT/UPDATE/DELETE changed. */
int sdb_changes(sdb *db);
/* Run one or more statements without results. */
int sdb_exec(sdb *db, const char *sql);
/* 1 outside an explicit transaction. */
int sdb_get_autocommit(sdb *db);
/* PostgreSQL only (a no-op for SQLite): with on, each transaction begun
 * with sdb_exec("BEGIN") runs in libpq's pipeline mode: a statement that
 * returns no rows (INSERT, UPDATE or DELETE without RETURNING) is sent
 * without waiting for its answer, and its sdb_step returns SDB_DONE at once
 * (sdb_changes is then 0). Its error, if any, is returned by the next step
 * that reads rows or by COMMIT, which sends everything queued and reads all
 * the answers: one round trip per transaction instead of one per
 * statement. */
void sdb_pipeline(sdb *db, int on);
/* SQLite only (a no-op elsewhere): how long a statement waits for a lock. */
void sdb_busy_timeout(sdb *db, int ms);
/* A counter that changes when another connection commits (SQLite's PRAGMA
 * data_version; PostgreSQL: notifications from triggers). */
int sdb_data_version(sdb *db, int64_t *v);
/* 1 once a PostgreSQL connection is known broken (a call returned SDB_GONE,
 * or sdb_data_version found it closed): only a new sdb_open helps. Never for
 * SQLite. */
int sdb_gone(sdb *db);

int sdb_prepare(sdb *db, const char *sql, sdb_stmt **out);
/* A query whose rows may be many (a run's calls): PostgreSQL reads them
 * through a cursor a batch at a time instead of whole (SQLite always steps
 * row by row). Other statements may run between its steps. */
int sdb_prepare_large(sdb *db, const char *sql, sdb_stmt **out);
int sdb_step(sdb_stmt *st);
int sdb_reset(sdb_stmt *st);
int sdb_clear_bindings(sdb_stmt *st);
/* Accepts NULL. */
void sdb_finalize(sdb_stmt *st);

int sdb_bind_int64(sdb_stmt *st, int i, int64_t v);
int sdb_bind_int(sdb_stmt *st, int i, int v);
int sdb_bind_text(sdb_stmt *st, int i, const char *s, int len, int how);
int sdb_bind_blob(sdb_stmt *st, int i, const void *p, size_t len, int how);
int sdb_bind_null(sdb_stmt *st, int i);
/* Bind column j of src's current row, with its type, as dst's parameter i. */
int sdb_bind_column(sdb_stmt *dst, int i, sdb_stmt *src, int j);

int64_t sdb_column_int64(sdb_stmt *st, int i);
int sdb_column_int(sdb_stmt *st, int i);
/* NUL-terminated; NULL for NULL. Valid until the next step/reset/finalize. */
const unsigned char *sdb_column_text(sdb_stmt *st, int i);
const void *sdb_column_blob(sdb_stmt *st, int i);
int sdb_column_bytes(sdb_stmt *st, int i);
int sdb_column_type(sdb_stmt *st, int i);

#endif
