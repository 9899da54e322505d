/* store internals shared by the store module's .c files; not for other modules. */
#ifndef TFTAP_STORE_INT_H
#define TFTAP_STORE_INT_H

#include "store/sdb.h"

#include "store/store.h"

/* How long one statement waits for another writer's lock before SDB_BUSY
 * comes back to us (we then retry: a lock never loses data). */
#define STORE_BUSY_TIMEOUT_MS 5000

struct store {
    sdb *db;
    unsigned char key[STORE_KEY_LEN]; /* HMAC key for redacted values */
    int snapshot;                     /* read only and immutable (see store_is_snapshot) */
    char *path;                       /* what store_open was given */
};

/* The schema (migrate.c). */
/* The schema version this tftap writes and reads: one more than the last
 * migration step's index. */
extern const int store_schema_version;
/* Bring db's schema to store_schema_version, in one transaction that
 * several processes opening a fresh database at once serialize on; a
 * database of a newer version is left untouched (SDB_ERROR for SQLite,
 * SDB_NOTADB for PostgreSQL). Returns an SQLite result code. */
int store_migrate(sdb *db);
/* An SQLite database's schema version (PRAGMA user_version). Returns an
 * SQLite result code. */
int store_user_version(sdb *db, int *v);
/* A PostgreSQL database's schema version (the tftap_meta table); one
 * without that record is version 0 when missing_ok, else SDB_NOTFOUND. A
 * record that is not a number is SDB_NOTADB. Returns an SQLite result code. */
int store_pg_version(sdb *db, int *v, int missing_ok);

/* Create path's missing parent directories (0700). 0 or TFTAP_EIO (errno). */
int store_make_parent_dirs(const char *path);

int store_exec(sdb *db, const char *sql);
/* A PRAGMA's integer answer, or -1 (txn.c). */
int64_t store_pragma_int(sdb *db, const char *sql);
/* The integer the one-row query sql (one parameter: id) answers: 0,
 * TFTAP_ENOTFOUND (no row), or a store error (txn.c). */
int store_query_int(sdb *db, const char *sql, int64_t id, int64_t *out);
/* Sleep ms milliseconds, whatever signals come (txn.c). */
void store_sleep_ms(unsigned ms);

/* One statement in both dialects, where no portable spelling exists. */
#define SDB_SQL(db, sqlite, pg) (sdb_is_pg(db) ? (pg) : (sqlite))

/* Map an SQLite result code to a tftap error. */
int store_err(int sqlite_rc);

/* A text column (NULL when NULL). */
static inline const char *store_col_text(sdb_stmt *st, int i)
{
    return (const char *)sdb_column_text(st, i);
}

/* Finalize a query stepped to rc: a callback's non-zero return (cb) wins,
 * then SDB_DONE is 0, anything else an error. */
static inline int store_finish(sdb_stmt *st, int rc, int cb)
{
    sdb_finalize(st);
    if (cb)
        return cb;
    return rc == SDB_DONE ? 0 : store_err(rc);
}

/* The columns of v_calls (aliased v) a store_call_row is read from, in
 * store_call_rows' order; the request and response JSON go between
 * STORE_CALL_COLUMNS and STORE_CALL_TAIL (NULL, NULL to leave them out). */
#define STORE_CALL_COLUMNS                                                                         \
    "v.call_id, v.run_id, v.process_id, v.call_seq, v.provider, v.method, v.rpc, v.stream, "       \
    "v.started_us, v.ended_us, v.status_code, v.status_message, v.request_bytes, "                 \
    "v.response_bytes, v.request_count, v.response_count, v.type_name, v.address, "
#define STORE_CALL_TAIL                                                                            \
    ", v.decode_error, v.status_name, v.error_count, v.warning_count, v.is_teardown, v.failed, "   \
    "v.in_flight, v.provider_version, v.protocol, v.expected_close, v.not_recorded "
/* Hand each row of st (selected as above) to fn, then finalize st; *found
 * (may be NULL) is set when there was a row. */
int store_call_rows(sdb_stmt *st, int (*fn)(void *ctx, const store_call_row *row), void *ctx,
                    int *found);

/* A UUID made from bytes (SHA-256 of them, shaped as version 4): the same
 * bytes give the same one. */
void store_uuid_of(const void *data, size_t len, char out[STORE_UUID_LEN + 1]);

/* A database file's lock file (PATH-runs.lock), malloc'd; opened
 * read-write (made 0600 with create), -1 and errno on failure. */
char *store_hold_file_path(const char *path);
int store_hold_file_open(const char *path, int create);
/* Lock run's byte of the lock file fd, shared or exclusive, without
 * waiting: 0, 1 when another holds a conflicting lock, -1 (errno). */
int store_hold_file_lock(int fd, int64_t run, int exclusive);
void store_hold_file_unlock(int fd, int64_t run);
/* 1 when an open file description other than fd's holds a lock in the
 * file, 0 when none does, -1 (errno). */
int store_hold_file_others(int fd);
/* PostgreSQL: take run's lock exclusively without waiting (*got 0 when
 * another session holds it), release it, and whether another session
 * holds any run's. SQLite result codes. */
int store_hold_pg_try(sdb *db, int64_t run, int *got);
void store_hold_pg_unlock(sdb *db, int64_t run);
int store_hold_pg_others(sdb *db, int *any);

#endif
