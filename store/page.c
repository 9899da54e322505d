/* store: paged reads for the web UI. Every query here is bounded by a limit
 * and a cursor so that a run of any size costs the same per request. */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"

int store_runs_page(store *s, int64_t before_id, int limit,
                    int (*fn)(void *ctx, const store_run_row *row), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(
        s->db,
        "SELECT r.id, r.command, r.args, r.cwd, r.cli_name, r.cli_version, r.started_us, "
        "r.ended_us, r.exit_code, "
        "(SELECT count(*) FROM processes p WHERE p.run_id = r.id), "
        "(SELECT count(*) FROM calls c WHERE c.run_id = r.id), "
        "(SELECT coalesce(sum(p.dropped), 0) FROM processes p WHERE p.run_id = r.id), "
        "r.parent_id, r.test_name, r.test_step "
        "FROM runs r WHERE (?1 = 0 OR r.id < ?1) ORDER BY r.id DESC LIMIT ?2",
        &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, before_id > 0 ? before_id : 0);
    sdb_bind_int(st, 2, limit);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_run_row r = {
            .id = sdb_column_int64(st, 0),
            .command = store_col_text(st, 1),
            .args_json = store_col_text(st, 2),
            .cwd = store_col_text(st, 3),
            .cli_name = store_col_text(st, 4),
            .cli_version = store_col_text(st, 5),
            .started_us = sdb_column_int64(st, 6),
            .ended_us = sdb_column_int64(st, 7),
            .has_exit_code = sdb_column_type(st, 8) != SDB_NULL,
            .exit_code = sdb_column_int(st, 8),
            .processes = sdb_column_int64(st, 9),
            .calls = sdb_column_int64(st, 10),
            .dropped = sdb_column_int64(st, 11),
            .parent_id = sdb_column_int64(st, 12),
            .test_name = store_col_text(st, 13),
            .test_step = sdb_column_int(st, 14),
        };
        cb = fn(ctx, &r);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

/* The status filter as SQL parameters: mode 0 any, 1 ok, 2 failed, 3 in
 * flight, 4 equal to code. */
static int status_mode(const char *status, int *mode, int *code)
{
    *mode = 0;
    *code = 0;
    if (!status || !*status)
        return 0;
    if (strcmp(status, "ok") == 0)
        *mode = 1;
    else if (strcmp(status, "error") == 0)
        *mode = 2;
    else if (strcmp(status, "inflight") == 0)
        *mode = 3;
    else {
        long v = 0;
        for (const char *p = status; *p; p++) {
            if (*p < '0' || *p > '9' || v > 100000)
                return TFTAP_EINVAL;
            v = v * 10 + (*p - '0');
        }
        *mode = 4;
        *code = (int)v;
    }
    return 0;
}

/* A page of calls, read from v_calls, so that a call's status name,
 * diagnostics counts and whether it failed or is go-plugin's teardown mean
 * what they mean everywhere. */
int store_calls_page(store *s, int64_t run_id, const store_call_filter *f, int64_t after_id,
                     int limit, int with_json, int (*fn)(void *ctx, const store_call_row *row),
                     void *ctx)
{
    static const store_call_filter none = {NULL, NULL, NULL, NULL};
    if (!f)
        f = &none;
    int mode, code;
    if (status_mode(f->status, &mode, &code))
        return TFTAP_EINVAL;
        /* "+v.run_id": walk the rowid from the cursor instead of the (run_id,
         * rpc) index, whose rows are not in id order and would be sorted on
         * every page of a large run. */
#define PAGE_WHERE(instr)                                                                          \
    "FROM v_calls v WHERE v.call_id > ?2 AND +v.run_id = ?1 "                                      \
    "AND (CAST(?3 AS TEXT) IS NULL OR " instr "(lower(v.rpc), lower(CAST(?3 AS TEXT))) > 0) "      \
    "AND (CAST(?4 AS TEXT) IS NULL OR v.type_name = ?4) "                                          \
    "AND (CAST(?5 AS TEXT) IS NULL OR v.address = ?5 OR "                                          \
    "substr(v.address, 1, length(CAST(?5 AS TEXT)) + 1) = ?5 || '[') "                             \
    "AND (?6 = 0 OR (?6 = 1 AND v.status_code = 0 AND NOT v.failed) OR (?6 = 2 AND v.failed) "     \
    "OR (?6 = 3 AND v.in_flight) OR (?6 = 4 AND v.status_code = ?7)) "                             \
    "ORDER BY v.call_id LIMIT ?8"
    const char *sql_json =
        SDB_SQL(s->db,
                "SELECT " STORE_CALL_COLUMNS
                "v.request_json, v.response_json" STORE_CALL_TAIL PAGE_WHERE("instr"),
                "SELECT " STORE_CALL_COLUMNS
                "v.request_json, v.response_json" STORE_CALL_TAIL PAGE_WHERE("strpos"));
    const char *sql_plain = SDB_SQL(
        s->db, "SELECT " STORE_CALL_COLUMNS "NULL, NULL" STORE_CALL_TAIL PAGE_WHERE("instr"),
        "SELECT " STORE_CALL_COLUMNS "NULL, NULL" STORE_CALL_TAIL PAGE_WHERE("strpos"));
#undef PAGE_WHERE
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db, with_json ? sql_json : sql_plain, &st);
    if (rc != SDB_OK)
        return store_err(rc);
    /* The first page starts at the run's first call, not at the first
     * call of the database. */
    if (after_id <= 0) {
        sdb_stmt *first = NULL;
        rc = sdb_prepare(s->db, "SELECT min(id) FROM calls WHERE run_id = ?", &first);
        if (rc != SDB_OK) {
            sdb_finalize(st);
            return store_err(rc);
        }
        sdb_bind_int64(first, 1, run_id);
        if (sdb_step(first) == SDB_ROW && sdb_column_type(first, 0) != SDB_NULL)
            after_id = sdb_column_int64(first, 0) - 1;
        sdb_finalize(first);
    }
    sdb_bind_int64(st, 1, run_id);
    sdb_bind_int64(st, 2, after_id);
    if (f->method && *f->method)
        sdb_bind_text(st, 3, f->method, -1, SDB_STATIC);
    if (f->type && *f->type)
        sdb_bind_text(st, 4, f->type, -1, SDB_STATIC);
    if (f->address && *f->address)
        sdb_bind_text(st, 5, f->address, -1, SDB_STATIC);
    sdb_bind_int(st, 6, mode);
    sdb_bind_int(st, 7, code);
    sdb_bind_int(st, 8, limit);
    return store_call_rows(st, fn, ctx, NULL);
}

int store_call_get(store *s, int64_t run_id, int64_t call_id,
                   int (*fn)(void *ctx, const store_call_row *row), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc =
        sdb_prepare(s->db,
                    "SELECT " STORE_CALL_COLUMNS "v.request_json, v.response_json" STORE_CALL_TAIL
                    "FROM v_calls v WHERE v.call_id = ?2 AND v.run_id = ?1",
                    &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    sdb_bind_int64(st, 2, call_id);
    int found = 0;
    rc = store_call_rows(st, fn, ctx, &found);
    if (!rc && !found)
        return TFTAP_ENOTFOUND;
    return rc;
}

int store_processes_each(store *s, int64_t run_id,
                         int (*fn)(void *ctx, const store_process_row *row), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT p.id, p.provider, p.version, p.protocol, p.pid, "
                         "p.schema_sha256, p.started_us, p.ended_us, "
                         "(SELECT count(*) FROM calls c WHERE c.process_id = p.id), "
                         "p.dropped FROM processes p WHERE p.run_id = ? ORDER BY p.id",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_process_row p = {
            .id = sdb_column_int64(st, 0),
            .provider = store_col_text(st, 1),
            .version = store_col_text(st, 2),
            .protocol = sdb_column_int(st, 3),
            .pid = sdb_column_int(st, 4),
            .schema_sha256 = store_col_text(st, 5),
            .started_us = sdb_column_int64(st, 6),
            .ended_us = sdb_column_int64(st, 7),
            .calls = sdb_column_int64(st, 8),
            .dropped = sdb_column_int64(st, 9),
        };
        cb = fn(ctx, &p);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_run_span(store *s, int64_t run_id, int64_t *first_us, int64_t *last_us)
{
    sdb_stmt *st = NULL;
    *first_us = *last_us = 0;
    int rc = sdb_prepare(s->db,
                         "SELECT min(started_us), max(coalesce(ended_us, started_us)) "
                         "FROM calls WHERE run_id = ?",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        *first_us = sdb_column_int64(st, 0);
        *last_us = sdb_column_int64(st, 1);
        rc = SDB_DONE;
    }
    return store_finish(st, rc, 0);
}

int store_schemas_list(store *s, int (*fn)(void *ctx, const store_schema_info *row), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(
        s->db,
        SDB_SQL(s->db,
                "SELECT s.sha256, s.provider, (SELECT group_concat(v, ', ') FROM (SELECT "
                "DISTINCT p.version AS v FROM processes p WHERE p.schema_sha256 = s.sha256 AND "
                "p.version IS NOT NULL ORDER BY p.version)), s.protocol, s.size, s.first_seen_us "
                "FROM schemas s WHERE s.kind = 'provider' ORDER BY s.first_seen_us DESC, s.sha256",
                "SELECT s.sha256, s.provider, (SELECT string_agg(DISTINCT p.version, ', ' ORDER "
                "BY p.version) FROM processes p WHERE p.schema_sha256 = s.sha256), s.protocol, "
                "s.size, s.first_seen_us FROM schemas s WHERE s.kind = 'provider' "
                "ORDER BY s.first_seen_us DESC, s.sha256"),
        &st);
    if (rc != SDB_OK)
        return store_err(rc);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_schema_info r = {
            .sha256 = store_col_text(st, 0),
            .provider = store_col_text(st, 1),
            .versions = store_col_text(st, 2),
            .protocol = sdb_column_int(st, 3),
            .size = sdb_column_int64(st, 4),
            .first_seen_us = sdb_column_int64(st, 5),
        };
        cb = fn(ctx, &r);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_schema_json(store *s, const char *sha256, tftap_buf *out)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT protocol, raw FROM schemas WHERE sha256 = ? AND kind = "
                         "'provider'",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_text(st, 1, sha256, -1, SDB_STATIC);
    rc = sdb_step(st);
    int err;
    if (rc == SDB_ROW) {
        /* Protocol 5 calls it GetSchema. */
        const char *method = sdb_column_int(st, 0) == 6 ? "/tfplugin6.Provider/GetProviderSchema"
                                                        : "/tfplugin5.Provider/GetSchema";
        dec_error derr = DEC_ERROR_INIT;
        err = dec_message_to_json(method, 1, sdb_column_blob(st, 1),
                                  (size_t)sdb_column_bytes(st, 1), NULL, NULL, NULL, out, &derr);
        dec_error_done(&derr);
        if (!err && tftap_buf_failed(out))
            err = TFTAP_ENOMEM;
    } else {
        err = rc == SDB_DONE ? TFTAP_ENOTFOUND : store_err(rc);
    }
    sdb_finalize(st);
    return err;
}

int store_data_version(store *s, int64_t *out)
{
    return store_err(sdb_data_version(s->db, out));
}

int store_connection_lost(store *s)
{
    return s && sdb_gone(s->db);
}
