/* store: removing old runs (tftap prune) with everything hanging off them,
 * never one still being recorded (hold.c), and giving the space back. */
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cand {
    int64_t id, started_us, ended_us, processes, calls;
    char *command, *args, *cwd;
};

static void cands_free(struct cand *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].command);
        free(v[i].args);
        free(v[i].cwd);
    }
    free(v);
}

static char *dup_col(sdb_stmt *st, int i, int *oom)
{
    const char *t = store_col_text(st, i);
    char *c = t ? strdup(t) : NULL;
    if (t && !c)
        *oom = 1;
    return c;
}

/* The runs the rules select, oldest first. */
static int candidates(store *s, const store_prune_opts *o, struct cand **out, size_t *n)
{
    /* The runs the rules select, and the step runs of those (an acceptance
     * test's commands hang off its suite's run: runs.parent_id), the
     * steps first, so that a suite goes after them. */
    char sel[300], sql[1400];
    snprintf(sel, sizeof sel, "SELECT id FROM runs WHERE 1 = 1%s%s",
             o->before_us > 0 ? " AND started_us < ?" : "",
             o->keep >= 0 ? " AND id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?)" : "");
    snprintf(sql, sizeof sql,
             "SELECT r.id, r.command, r.args, r.cwd, r.started_us, r.ended_us, "
             "(SELECT count(*) FROM processes p WHERE p.run_id = r.id), "
             "(SELECT count(*) FROM calls c WHERE c.run_id = r.id) FROM runs r "
             "WHERE r.id IN (%s) OR r.parent_id IN (%s) "
             "ORDER BY CASE WHEN r.parent_id IS NULL THEN 1 ELSE 0 END, r.id",
             sel, sel);
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db, sql, &st);
    if (rc != SDB_OK)
        return store_err(rc);
    int k_param = 1;
    for (int twice = 0; twice < 2; twice++) {
        if (o->before_us > 0)
            sdb_bind_int64(st, k_param++, o->before_us);
        if (o->keep >= 0)
            sdb_bind_int64(st, k_param++, o->keep);
    }
    struct cand *v = NULL;
    size_t cap = 0, k = 0;
    int oom = 0;
    while (!oom && (rc = sdb_step(st)) == SDB_ROW) {
        if (k == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct cand *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                oom = 1;
                break;
            }
            v = nv;
            cap = nc;
        }
        struct cand *c = &v[k++];
        c->id = sdb_column_int64(st, 0);
        c->command = dup_col(st, 1, &oom);
        c->args = dup_col(st, 2, &oom);
        c->cwd = dup_col(st, 3, &oom);
        c->started_us = sdb_column_int64(st, 4);
        c->ended_us = sdb_column_int64(st, 5);
        c->processes = sdb_column_int64(st, 6);
        c->calls = sdb_column_int64(st, 7);
    }
    sdb_finalize(st);
    if (oom || (rc != SDB_DONE && rc != SDB_ROW)) {
        cands_free(v, k);
        return oom ? TFTAP_ENOMEM : store_err(rc);
    }
    *out = v;
    *n = k;
    return 0;
}

static int64_t count_of(sdb *db, const char *sql, int64_t run)
{
    sdb_stmt *st = NULL;
    int64_t v = 0;
    if (sdb_prepare(db, sql, &st) != SDB_OK)
        return 0;
    sdb_bind_int64(st, 1, run);
    if (sdb_step(st) == SDB_ROW)
        v = sdb_column_int64(st, 0);
    sdb_finalize(st);
    return v;
}

/* Children first: every table that names a run, a process or a call. */
static const char *const delete_sql[] = {
    "DELETE FROM call_addresses WHERE call_id IN (SELECT id FROM calls WHERE run_id = ?1)",
    "DELETE FROM messages WHERE call_id IN (SELECT id FROM calls WHERE run_id = ?1)",
    "DELETE FROM calls WHERE run_id = ?1",
    "DELETE FROM gaps WHERE run_id = ?1 OR process_id IN "
    "(SELECT id FROM processes WHERE run_id = ?1)",
    "DELETE FROM processes WHERE run_id = ?1",
    "DELETE FROM run_secrets WHERE run_id = ?1",
    "DELETE FROM run_files WHERE run_id = ?1",
    "DELETE FROM runs WHERE id = ?1",
};

/* One run in one transaction: a big run does not hold the writers up for
 * all of the others, and an interrupted prune leaves whole runs. */
static int delete_run(sdb *db, int64_t run)
{
    int rc = store_begin(db, 0);
    for (size_t i = 0; rc == SDB_OK && i < sizeof delete_sql / sizeof *delete_sql; i++) {
        sdb_stmt *st = NULL;
        rc = sdb_prepare(db, delete_sql[i], &st);
        if (rc == SDB_OK) {
            sdb_bind_int64(st, 1, run);
            rc = sdb_step(st);
            rc = rc == SDB_DONE || rc == SDB_ROW ? SDB_OK : rc;
        }
        sdb_finalize(st);
    }
    if (rc == SDB_OK)
        rc = store_commit(db, 0);
    if (rc != SDB_OK)
        store_rollback(db);
    return rc;
}

static int64_t file_size(const char *path, const char *suffix)
{
    char p[4096];
    struct stat st;
    if ((size_t)snprintf(p, sizeof p, "%s%s", path, suffix) >= sizeof p || stat(p, &st) != 0)
        return 0;
    return (int64_t)st.st_size;
}

static int64_t record_bytes(store *s)
{
    if (!sdb_is_pg(s->db))
        return file_size(s->path, "") + file_size(s->path, "-wal");
    sdb_stmt *st = NULL;
    int64_t v = 0;
    if (sdb_prepare(s->db,
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname IN "
                    "('runs', 'processes', 'calls', 'call_addresses', 'messages', 'gaps', "
                    "'schemas')",
                    &st) == SDB_OK &&
        sdb_step(st) == SDB_ROW)
        v = sdb_column_int64(st, 0);
    sdb_finalize(st);
    return v;
}

/* Give the space of what was removed back. A file: its freed pages to the
 * file system, incrementally where the file keeps the pointer map for it,
 * else by VACUUM (which also sets it up for next time: the file rewritten
 * once) when nothing records into it (a VACUUM holds writers up for as
 * long as it copies); then the WAL truncated. PostgreSQL: VACUUM, which
 * makes the space reusable (the files shrink only by VACUUM FULL, which
 * locks out every writer: left to the administrator). */
static void reclaim(store *s, int others, store_prune_info *info)
{
    sdb *db = s->db;
    if (sdb_is_pg(db)) {
        if (sdb_exec(db, "VACUUM (ANALYZE) runs, processes, calls, call_addresses, messages, "
                         "gaps, schemas") == SDB_OK) {
            info->reclaim = STORE_RECLAIM_PG_VACUUM;
        } else {
            info->reclaim = STORE_RECLAIM_FAILED;
            snprintf(info->why, sizeof info->why, "VACUUM: %s", sdb_errmsg(db));
        }
        return;
    }
    int rc;
    if (store_pragma_int(db, "PRAGMA auto_vacuum") == 2) {
        rc = sdb_exec(db, "PRAGMA incremental_vacuum");
        info->reclaim = STORE_RECLAIM_INCREMENTAL;
    } else if (others) {
        info->reclaim = STORE_RECLAIM_DEFERRED;
        return;
    } else {
        rc = sdb_exec(db, "PRAGMA auto_vacuum = INCREMENTAL");
        if (rc == SDB_OK)
            rc = sdb_exec(db, "VACUUM");
        info->reclaim = STORE_RECLAIM_VACUUM;
    }
    if (rc != SDB_OK) {
        info->reclaim = STORE_RECLAIM_FAILED;
        snprintf(info->why, sizeof info->why, "%s", sdb_errmsg(db));
        return;
    }
    (void)sdb_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
}

int store_prune(store *s, const store_prune_opts *o,
                int (*fn)(void *ctx, const store_prune_run *run), void *ctx, store_prune_info *info)
{
    memset(info, 0, sizeof *info);
    int pg = sdb_is_pg(s->db);
    if (!s->path)
        return TFTAP_EINVAL;
    /* Which runs are held is known only through the lock file: without
     * it nothing is removed (a run still recording must never be). */
    int fd = -1;
    if (!pg && (fd = store_hold_file_open(s->path, 1)) < 0)
        return TFTAP_EIO;
    struct cand *v = NULL;
    size_t n = 0;
    int rc = candidates(s, o, &v, &n);
    if (rc)
        goto done;
    info->bytes_before = info->bytes_after = record_bytes(s);
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct cand *c = &v[i];
        int got = 0;
        if (pg) {
            if (store_hold_pg_try(s->db, c->id, &got) != SDB_OK) {
                rc = store_err(SDB_ERROR);
                break;
            }
        } else {
            int l = store_hold_file_lock(fd, c->id, 1);
            if (l < 0) {
                rc = TFTAP_EIO;
                break;
            }
            got = l == 0;
        }
        store_prune_run row = {
            .id = c->id,
            .command = c->command,
            .args_json = c->args,
            .cwd = c->cwd,
            .started_us = c->started_us,
            .ended_us = c->ended_us,
            .processes = c->processes,
            .calls = c->calls,
            .recording = !got,
        };
        /* A suite whose step runs are not all gone (one still recorded)
         * stays with them. */
        if (got && !o->dry_run &&
            count_of(s->db, "SELECT count(*) FROM runs WHERE parent_id = ?1", c->id) > 0) {
            if (pg)
                store_hold_pg_unlock(s->db, c->id);
            else
                store_hold_file_unlock(fd, c->id);
            got = 0;
        }
        row.recording = !got;
        if (got) {
            int64_t messages = count_of(s->db,
                                        "SELECT count(*) FROM messages WHERE call_id IN "
                                        "(SELECT id FROM calls WHERE run_id = ?1)",
                                        c->id);
            int64_t gaps = count_of(s->db,
                                    "SELECT count(*) FROM gaps WHERE run_id = ?1 OR process_id "
                                    "IN (SELECT id FROM processes WHERE run_id = ?1)",
                                    c->id);
            int drc = o->dry_run ? SDB_OK : delete_run(s->db, c->id);
            if (pg)
                store_hold_pg_unlock(s->db, c->id);
            else
                store_hold_file_unlock(fd, c->id);
            if (drc != SDB_OK) {
                rc = store_err(drc);
                break;
            }
            info->runs++;
            info->processes += c->processes;
            info->calls += c->calls;
            info->messages += messages;
            info->gaps += gaps;
        } else {
            info->recording++;
        }
        int cb = fn ? fn(ctx, &row) : 0;
        if (cb) {
            rc = cb;
            break;
        }
    }
    if (rc || o->dry_run || info->runs == 0)
        goto done;
    /* Schemas no process names any more. Not while another records: its
     * recorder may be about to name one it found through a process of a
     * run just removed (a schema borrowed from an earlier recording). */
    int others = 0;
    if (pg) {
        if (store_hold_pg_others(s->db, &others) != SDB_OK)
            others = 1;
    } else {
        others = store_hold_file_others(fd) != 0;
    }
    info->schemas_kept = others;
    if (!others) {
        sdb_stmt *st = NULL;
        int drc = store_begin(s->db, 0);
        if (drc == SDB_OK)
            drc = sdb_prepare(s->db,
                              "DELETE FROM schemas WHERE NOT EXISTS (SELECT 1 FROM processes p "
                              "WHERE p.schema_sha256 = schemas.sha256 OR "
                              "p.identity_sha256 = schemas.sha256)",
                              &st);
        if (drc == SDB_OK && (drc = sdb_step(st)) == SDB_DONE) {
            drc = SDB_OK;
            info->schemas = sdb_changes(s->db);
        }
        sdb_finalize(st);
        if (drc == SDB_OK)
            drc = store_commit(s->db, 0);
        if (drc != SDB_OK) {
            store_rollback(s->db);
            info->schemas = 0;
            rc = store_err(drc);
            goto done;
        }
    }
    reclaim(s, others, info);
    info->bytes_after = record_bytes(s);
done:
    cands_free(v, n);
    if (fd >= 0)
        close(fd);
    return rc;
}
