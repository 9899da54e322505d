/* store internals: one run copied from a store into another database
 * (store/copy.c), shared by bundles and push. Not for other modules. */
#ifndef TFTAP_STORE_COPY_H
#define TFTAP_STORE_COPY_H

#include "store/store_int.h"

/* The first 16 hex digits of SHA-256(key): names a key without giving it. */
#define STORE_KEY_ID_LEN 16

typedef struct store_copy {
    /* in */
    store *src;
    sdb *dst; /* inside the caller's transaction */
    int64_t run_id;
    int keep_ids;      /* 1: rows keep their ids (a new file); 0: the destination numbers them */
    int strip_host;    /* 1: no pid or provider path */
    int skip_messages; /* 1: raw messages are left out (counted in skipped_messages) */
    /* runs.key_id of the copy; NULL: the source row's. Equal to
     * dst_key_id: NULL (the destination's own key). */
    const char *key_id;
    const char *src_key_id; /* the source database's key, when it has one */
    char dst_key_id[STORE_KEY_ID_LEN + 1];
    char key_id_buf[STORE_KEY_ID_LEN + 16];
    void *ctx;
    /* The run's command (which = 0) or args JSON (1) as the copy stores
     * it; set: cwd is dropped too. NULL: copied as they are. */
    const char *(*run_args)(void *ctx, const char *value, int which);
    /* Told each process before its calls are copied. */
    int (*on_process)(void *ctx, int64_t src_id, const char *schema_sha, const char *identity_sha,
                      int protocol);
    /* A call's request (is_response 0) or response JSON as the copy
     * stores it, appended to out (*is_null: NULL instead); NULL: copied as
     * they are. */
    int (*call_json)(void *ctx, int64_t call_id, int64_t src_process, const char *method,
                     int is_response, const char *json, const char *type_name, tftap_buf *out,
                     int *is_null);
    void (*progress)(void *ctx, int64_t calls_done, int64_t calls_total);
    /* out */
    int64_t dst_run_id;
    char uuid[STORE_UUID_LEN + 1];
    int64_t processes, calls, messages, gaps, schemas;
    int64_t skipped_messages; /* raw messages left out (skip_messages) */
    int foreign_key;          /* the copy's values are hashed with a key not the destination's */
    const char *why;          /* what went wrong, when it was not the database's own error */
} store_copy;

/* Copy c->run_id with its processes, calls (and their call_addresses),
 * messages, gaps and schemas into c->dst. SDB_OK, SDB_DONE (the destination has a run of that uuid:
 * nothing copied, c->dst_run_id names it), SDB_NOTFOUND, or an error code
 * (roll back the caller's transaction). */
int store_copy_run(store_copy *c);
/* Set c->key_id from the source run's row, c->src_key_id and c->dst_key_id. */
int store_copy_resolve_key_id(store_copy *c);
/* Why the copy failed, for a message. */
const char *store_copy_why(store_copy *c);

void store_key_id(const unsigned char key[STORE_KEY_LEN], char out[STORE_KEY_ID_LEN + 1]);
/* The key of the source's database (a FILE operand is opened without one):
 * 1 (key set), 0 (it has none: a bundle), or minus an SDB code. */
int store_source_key(store *s, unsigned char key[STORE_KEY_LEN]);

#endif
