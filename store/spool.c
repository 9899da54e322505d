/* store: a spool, the local SQLite file in which a run meant for a
 * PostgreSQL record is held until its end has redacted what core marks
 * sensitive (docs/database.md, "Runs recorded into it"): the file takes
 * the record's redaction key, so that its hashes are the record's, and
 * its runs are marked held back (runs.values_kept = 2) until then, so that
 * `tftap push` never copies one in clear without a word. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "store/store.h"
#include "store/store_int.h"

int store_key_adopt(store *s, const store *from)
{
    if (!s || !from || sdb_is_pg(s->db))
        return TFTAP_EINVAL;
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db, "UPDATE secret_key SET key = ? WHERE id = 1", &st);
    if (rc == SDB_OK) {
        sdb_bind_blob(st, 1, from->key, STORE_KEY_LEN, SDB_TRANSIENT);
        rc = sdb_step(st);
        rc = rc == SDB_DONE ? SDB_OK : rc;
    }
    sdb_finalize(st);
    if (rc != SDB_OK)
        return store_err(rc) ? store_err(rc) : TFTAP_ESTORE;
    memcpy(s->key, from->key, STORE_KEY_LEN);
    return 0;
}

int store_run_hold_back(store *s, int64_t run_id, int held)
{
    /* 1 (--record-sensitive) is the user's choice and stays. */
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db,
                         held ? "UPDATE runs SET values_kept = 2 WHERE id = ? AND values_kept = 0"
                              : "UPDATE runs SET values_kept = 0 WHERE id = ? AND values_kept = 2",
                         &st);
    if (rc == SDB_OK) {
        sdb_bind_int64(st, 1, run_id);
        rc = sdb_step(st);
        rc = rc == SDB_DONE ? SDB_OK : rc;
    }
    sdb_finalize(st);
    return rc == SDB_OK ? 0 : store_err(rc) ? store_err(rc) : TFTAP_ESTORE;
}

int store_file_in_use(const char *path)
{
    int fd = store_hold_file_open(path, 0);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int others = store_hold_file_others(fd);
    close(fd);
    return others;
}

int store_file_remove(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal", "-runs.lock"};
    int rc = 0;
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        size_t n = strlen(path) + strlen(suffix[i]) + 1;
        char *p = malloc(n);
        if (!p)
            return TFTAP_ENOMEM;
        snprintf(p, n, "%s%s", path, suffix[i]);
        if (unlink(p) != 0 && errno != ENOENT && rc == 0)
            rc = TFTAP_EIO;
        free(p);
    }
    return rc;
}
