/* store internals shared by the store module's .c files; not for other modules. */
#ifndef TFTAP_STORE_INT_H
#define TFTAP_STORE_INT_H

#include <sqlite3.h>

#include "store/store.h"

#define STORE_KEY_LEN 32
/* How long one statement waits for another writer's lock before SQLITE_BUSY
 * comes back to us (we then retry: a lock never loses data). */
#define STORE_BUSY_TIMEOUT_MS 5000

struct store {
    sqlite3 *db;
    unsigned char key[STORE_KEY_LEN]; /* HMAC key for redacted values */
    int snapshot;                     /* read only and immutable (see store_is_snapshot) */
};

/* Open and migrate; the helper behind store_open and the recorder's own
 * connection (store_open itself opens STORE_OPEN_READONLY databases). */
int store_db_open(const char *path, int create, sqlite3 **out, unsigned char key[STORE_KEY_LEN]);

/* Create path's missing parent directories (0700). 0 or TFTAP_EIO (errno). */
int store_make_parent_dirs(const char *path);

/* BEGIN IMMEDIATE, retrying SQLITE_BUSY until deadline_ms of total waiting
 * (0 = forever). Returns an SQLite result code. */
int store_begin(sqlite3 *db, unsigned deadline_ms);
/* COMMIT with the same retry rule. */
int store_commit(sqlite3 *db, unsigned deadline_ms);
void store_rollback(sqlite3 *db);
int store_exec(sqlite3 *db, const char *sql);

/* Map an SQLite result code to a tftap error. */
int store_err(int sqlite_rc);

/* The short rpc name of a gRPC method path ("/a.B/C" -> "C"). */
const char *store_rpc_name(const char *method);

#endif
