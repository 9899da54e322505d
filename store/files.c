/* store: a step run's working directory (run_files, schema 10): the files
 * its command found, kept so that the command can be run again after the
 * acceptance-test harness removed the directory (docs/acceptance-tests.md). */
#include "store/store_int.h"

#include <string.h>

int store_run_files_add(store *s, int64_t run_id, const store_run_file *files, size_t n)
{
    sdb_stmt *q = NULL;
    int rc = store_begin(s->db, 0);
    if (rc == SDB_OK)
        rc = sdb_prepare(s->db,
                         "INSERT INTO run_files (run_id, name, size, sha256, content, note) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         &q);
    for (size_t i = 0; rc == SDB_OK && i < n; i++) {
        const store_run_file *f = &files[i];
        sdb_reset(q);
        sdb_clear_bindings(q);
        sdb_bind_int64(q, 1, run_id);
        sdb_bind_text(q, 2, f->name, -1, SDB_STATIC);
        sdb_bind_int64(q, 3, f->size);
        sdb_bind_text(q, 4, f->sha256, -1, SDB_STATIC);
        if (f->content != NULL)
            sdb_bind_blob(q, 5, f->content, f->content_len, SDB_STATIC);
        else
            sdb_bind_null(q, 5);
        if (f->note != NULL)
            sdb_bind_text(q, 6, f->note, -1, SDB_STATIC);
        else
            sdb_bind_null(q, 6);
        rc = sdb_step(q);
        rc = rc == SDB_DONE ? SDB_OK : rc;
    }
    sdb_finalize(q);
    if (rc == SDB_OK)
        rc = store_commit(s->db, 0);
    if (rc != SDB_OK)
        store_rollback(s->db);
    return rc == SDB_OK ? 0 : store_err(rc);
}

int store_run_files_each(store *s, int64_t run_id, int (*fn)(void *ctx, const store_run_file *f),
                         void *ctx)
{
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT name, size, sha256, content, note FROM run_files "
                         "WHERE run_id = ? ORDER BY name",
                         &q);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(q, 1, run_id);
    int cb = 0;
    while (!cb && (rc = sdb_step(q)) == SDB_ROW) {
        store_run_file f = {
            .name = store_col_text(q, 0),
            .size = sdb_column_int64(q, 1),
            .sha256 = store_col_text(q, 2),
            .note = store_col_text(q, 4),
        };
        if (sdb_column_type(q, 3) != SDB_NULL) {
            f.content = sdb_column_blob(q, 3);
            f.content_len = (size_t)sdb_column_bytes(q, 3);
            if (f.content == NULL)
                f.content = ""; /* an empty file kept */
        }
        if (f.name == NULL || f.sha256 == NULL)
            continue;
        cb = fn(ctx, &f);
    }
    return store_finish(q, rc == SDB_ROW ? SDB_DONE : rc, cb);
}

int store_run_holds_redacted(store *s, int64_t run_id, int *holds)
{
    int64_t v = 0;
    /* The run, and a step run's siblings of the same test: the command
     * that read a configuration's secret is often another step run than
     * the one whose files are asked about (`show` reads no configuration).
     * The marker's key as the decoder writes it (docs/decoded-values.md). */
    int rc = store_query_int(s->db,
                             "SELECT EXISTS (SELECT 1 FROM calls c WHERE c.run_id IN "
                             "(SELECT r2.id FROM runs r, runs r2 WHERE r.id = ? AND "
                             "(r2.id = r.id OR (r.test_name IS NOT NULL AND "
                             "r2.parent_id = r.parent_id AND r2.test_name = r.test_name))) AND "
                             "(c.request_json LIKE '%\"$sensitive\"%' OR "
                             "c.response_json LIKE '%\"$sensitive\"%'))",
                             run_id, &v);
    *holds = v != 0;
    return rc;
}
