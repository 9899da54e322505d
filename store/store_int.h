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
};

/* Open and migrate; the helper behind store_open and the recorder's own
 * connection. */
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

int64_t store_now_us(void);

/* The short rpc name of a gRPC method path ("/a.B/C" -> "C"). */
const char *store_rpc_name(const char *method);

/* A small JSON reader that keeps numbers' source text (decoded values carry
 * exact numbers; doubles would round them). Nodes live in one arena. */
enum sj_kind { SJ_NULL, SJ_BOOL, SJ_NUMBER, SJ_STRING, SJ_ARRAY, SJ_OBJECT };
typedef struct sj_node sj_node;
struct sj_node {
    enum sj_kind kind;
    int boolean;
    const char *str; /* number text or unescaped string (NUL-terminated) */
    size_t len;
    const char *key; /* member name when inside an object */
    size_t key_len;
    sj_node *child; /* first element / member */
    sj_node *next;  /* next sibling */
    size_t n;       /* number of children */
};
typedef struct sj_doc sj_doc;
/* How deep the store reads the JSON it wrote or the CLI printed. */
#define STORE_JSON_MAX_DEPTH 512
/* Parse text (len bytes) into *out; nesting limited to max_depth. */
int sj_parse(const char *text, size_t len, unsigned max_depth, sj_doc **out);
void sj_free(sj_doc *d);
sj_node *sj_root(sj_doc *d);
sj_node *sj_get(const sj_node *obj, const char *key); /* NULL if absent or not an object */
/* Append the node as compact JSON. */
void sj_write(const sj_node *n, tftap_buf *out);
/* 1 if equal values (numbers compared by text, then numerically). */
/* As sj_write, with every object's members in byte order of their keys: one
 * text for values that differ only in member order (a provider may encode
 * a map in any order). 0 or TFTAP_ENOMEM. */
int sj_write_sorted(const sj_node *n, tftap_buf *out);
int sj_equal(const sj_node *a, const sj_node *b);
/* {"$unknown": ...}, {"$sensitive": ...} markers of the decoded-value contract. */
int sj_is_unknown(const sj_node *n);
int sj_is_sensitive(const sj_node *n);

#endif
