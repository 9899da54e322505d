/* store: runs being recorded, told by locks their recorders hold, so that
 * prune never removes a run still being written. A database file's holds
 * are open file description locks on a file beside it (PATH-runs.lock), one
 * byte per run: shared for each holder, exclusive for prune. They go with
 * the process however it ends. A PostgreSQL record's are session advisory
 * locks (class STORE_HOLD_CLASS, the run id), shared likewise, gone with the
 * session. */
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "tftr": the first key of the advisory locks; the second is the run id
 * (modulo 2^31: two runs that share it hold each other, which only keeps
 * prune from removing one while the other records). */
#define STORE_HOLD_CLASS 1952871538
#define HOLD_KEY_SQL "1952871538, (?1 %% 2147483647)::integer" /* in a format */

struct store_hold {
    int fd;      /* a file's lock file; -1 for PostgreSQL */
    sdb *own;    /* PostgreSQL: the session holding the lock, when ours */
    int64_t run; /* the run held */
};

char *store_hold_file_path(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + sizeof "-runs.lock");
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, "-runs.lock", sizeof "-runs.lock");
    }
    return p;
}

int store_hold_file_open(const char *path, int create)
{
    char *lp = store_hold_file_path(path);
    if (!lp) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(lp, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
    free(lp);
    return fd;
}

int store_hold_file_lock(int fd, int64_t run, int exclusive)
{
    struct flock fl = {
        .l_type = exclusive ? F_WRLCK : F_RDLCK,
        .l_whence = SEEK_SET,
        .l_start = (off_t)run,
        .l_len = 1,
    };
    while (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EACCES ? 1 : -1;
    }
    return 0;
}

void store_hold_file_unlock(int fd, int64_t run)
{
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = (off_t)run, .l_len = 1};
    (void)fcntl(fd, F_OFD_SETLK, &fl);
}

int store_hold_file_others(int fd)
{
    /* Any lock of another open file description on any byte: a lock of
     * ours never conflicts with ours. */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return -1;
    return fl.l_type != F_UNLCK;
}

static int pg_lock(sdb *db, const char *fn, int64_t run, int *got)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT %s(" HOLD_KEY_SQL ")", fn);
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(db, sql, &st);
    if (rc != SDB_OK)
        return rc;
    sdb_bind_int64(st, 1, run);
    rc = sdb_step(st);
    if (rc == SDB_ROW && got)
        *got = sdb_column_type(st, 0) == SDB_NULL || sdb_column_int(st, 0) != 0;
    sdb_finalize(st);
    return rc == SDB_ROW || rc == SDB_DONE ? SDB_OK : rc;
}

int store_hold_pg_try(sdb *db, int64_t run, int *got)
{
    return pg_lock(db, "pg_try_advisory_lock", run, got);
}

void store_hold_pg_unlock(sdb *db, int64_t run)
{
    (void)pg_lock(db, "pg_advisory_unlock", run, NULL);
}

int store_hold_pg_others(sdb *db, int *any)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(db,
                         "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                         "AND classid = 1952871538 AND pid <> pg_backend_pid()",
                         &st);
    if (rc != SDB_OK)
        return rc;
    rc = sdb_step(st);
    if (rc == SDB_ROW)
        *any = sdb_column_int64(st, 0) > 0;
    sdb_finalize(st);
    return rc == SDB_ROW ? SDB_OK : rc;
}

int store_hold_on(sdb *db, const char *path, int64_t run_id, store_hold **out)
{
    *out = NULL;
    if (run_id <= 0 || !path)
        return TFTAP_EINVAL;
    store_hold *h = calloc(1, sizeof *h);
    if (!h)
        return TFTAP_ENOMEM;
    h->fd = -1;
    h->run = run_id;
    int rc = 0;
    if (sdb_target_is_pg(path)) {
        if (!db) {
            if (sdb_open(path, SDB_OPEN_READWRITE, &h->own) != SDB_OK) {
                rc = TFTAP_EIO;
                goto fail;
            }
            db = h->own;
        }
        /* Never waits: only prune's exclusive lock, on a run it removes,
         * can be in the way. */
        int got = 0;
        if (pg_lock(db, "pg_try_advisory_lock_shared", run_id, &got) != SDB_OK || !got) {
            rc = TFTAP_ESTORE;
            goto fail;
        }
    } else {
        h->fd = store_hold_file_open(path, 1);
        if (h->fd < 0 || store_hold_file_lock(h->fd, run_id, 0) != 0) {
            rc = TFTAP_EIO;
            goto fail;
        }
    }
    *out = h;
    return 0;
fail:
    store_hold_free(h);
    return rc;
}

int store_hold_run(const char *path, int64_t run_id, store_hold **out)
{
    return store_hold_on(NULL, path, run_id, out);
}

void store_hold_free(store_hold *h)
{
    if (!h)
        return;
    if (h->fd >= 0)
        close(h->fd);  /* the lock goes with its open file description */
    sdb_close(h->own); /* and a session's with the session */
    free(h);
}
