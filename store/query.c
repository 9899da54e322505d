/* store: the read side used by the CLI, analysis and the web UI: runs,
 * calls, schemas and providers, and a run exported as JSON lines. A run's
 * resource changes and their addresses: changes.c. */
#include "store/store_int.h"
#include "store/copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_SELECT                                                                                 \
    "SELECT r.id, r.command, r.args, r.cwd, r.cli_name, r.cli_version, r.started_us, "             \
    "r.ended_us, r.exit_code, "                                                                    \
    "(SELECT count(*) FROM processes p WHERE p.run_id = r.id), "                                   \
    "(SELECT count(*) FROM calls c WHERE c.run_id = r.id), "                                       \
    "(SELECT coalesce(sum(p.dropped), 0) FROM processes p WHERE p.run_id = r.id), r.uuid, "        \
    "r.parent_id, r.test_name, r.test_step "                                                       \
    "FROM runs r "

/* param is bound as ?1 when non-zero; single: it is a run id, and no row
 * is TFTAP_ENOTFOUND. */
static int runs_query(store *s, const char *sql, int64_t param, int single,
                      int (*fn)(void *ctx, const store_run_row *row), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db, sql, &st);
    if (rc != SDB_OK)
        return store_err(rc);
    if (param)
        sdb_bind_int64(st, 1, param);
    int cb = 0, found = 0;
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
            .uuid = store_col_text(st, 12),
            .parent_id = sdb_column_int64(st, 13),
            .test_name = store_col_text(st, 14),
            .test_step = sdb_column_int(st, 15),
        };
        found = 1;
        cb = fn(ctx, &r);
        if (cb)
            break;
    }
    if (single && !found && rc == SDB_DONE) {
        sdb_finalize(st);
        return TFTAP_ENOTFOUND;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_runs_each(store *s, int (*fn)(void *ctx, const store_run_row *row), void *ctx)
{
    return runs_query(s, RUN_SELECT "ORDER BY r.id", 0, 0, fn, ctx);
}

int store_runs_last(store *s, int64_t limit, int (*fn)(void *ctx, const store_run_row *row),
                    void *ctx)
{
    if (limit <= 0)
        return store_runs_each(s, fn, ctx);
    return runs_query(s,
                      RUN_SELECT "WHERE r.id IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?1) "
                                 "ORDER BY r.id",
                      limit, 0, fn, ctx);
}

int store_run_children_each(store *s, int64_t parent_id,
                            int (*fn)(void *ctx, const store_run_row *row), void *ctx)
{
    return runs_query(s, RUN_SELECT "WHERE r.parent_id = ?1 ORDER BY r.id", parent_id, 0, fn, ctx);
}

int store_run_get(store *s, int64_t run_id, int (*fn)(void *ctx, const store_run_row *row),
                  void *ctx)
{
    return runs_query(s, RUN_SELECT "WHERE r.id = ?1", run_id, 1, fn, ctx);
}

/* One text column of run_id's row (sql selects it WHERE id = ?) into out
 * (size bytes, cut; "" for NULL, which *is_null tells). 0,
 * TFTAP_ENOTFOUND without such a run, or a store error. */
static int run_text(store *s, const char *sql, int64_t run_id, char *out, size_t size, int *is_null)
{
    sdb_stmt *st = NULL;
    out[0] = '\0';
    *is_null = 1;
    int rc = sdb_prepare(s->db, sql, &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        const char *t = store_col_text(st, 0);
        if (t != NULL) {
            snprintf(out, size, "%s", t);
            *is_null = 0;
        }
        rc = SDB_OK;
    } else if (rc == SDB_DONE) {
        rc = SDB_NOTFOUND;
    }
    sdb_finalize(st);
    return rc == SDB_OK ? 0 : rc == SDB_NOTFOUND ? TFTAP_ENOTFOUND : store_err(rc);
}

int store_run_uuid(store *s, int64_t run_id, char out[STORE_UUID_LEN + 1])
{
    int is_null;
    return run_text(s, "SELECT uuid FROM runs WHERE id = ?", run_id, out, STORE_UUID_LEN + 1,
                    &is_null);
}

static int ended_row(void *ctx, const store_run_row *row)
{
    *(int *)ctx = row->ended_us != 0;
    return 0;
}

int store_run_has_ended(store *s, int64_t run_id, int *ended)
{
    *ended = 0;
    return store_run_get(s, run_id, ended_row, ended);
}

int store_run_key_id(store *s, int64_t run_id, char out[STORE_RUN_KEY_ID_SIZE])
{
    int is_null;
    int rc = run_text(s, "SELECT key_id FROM runs WHERE id = ?", run_id, out, STORE_RUN_KEY_ID_SIZE,
                      &is_null);
    if (rc == 0 && is_null) {
        /* Recorded here: this database's own key hashed it. Opened read
         * only, the key is not loaded: read it here. */
        unsigned char key[STORE_KEY_LEN];
        if (store_source_key(s, key) == 1)
            store_key_id(key, out);
        memset(key, 0, sizeof key);
    }
    return rc;
}

int store_call_rows(sdb_stmt *st, int (*fn)(void *ctx, const store_call_row *row), void *ctx,
                    int *found)
{
    int rc, cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_call_row c = {
            .id = sdb_column_int64(st, 0),
            .run_id = sdb_column_int64(st, 1),
            .process_id = sdb_column_int64(st, 2),
            .call_seq = sdb_column_int64(st, 3),
            .provider = store_col_text(st, 4),
            .method = store_col_text(st, 5),
            .rpc = store_col_text(st, 6),
            .stream = sdb_column_int(st, 7),
            .started_us = sdb_column_int64(st, 8),
            .ended_us = sdb_column_int64(st, 9),
            .has_status = sdb_column_type(st, 10) != SDB_NULL,
            .status_code = sdb_column_int(st, 10),
            .status_message = store_col_text(st, 11),
            .request_bytes = sdb_column_int64(st, 12),
            .response_bytes = sdb_column_int64(st, 13),
            .request_count = sdb_column_int64(st, 14),
            .response_count = sdb_column_int64(st, 15),
            .type_name = store_col_text(st, 16),
            .address = store_col_text(st, 17),
            .request_json = store_col_text(st, 18),
            .response_json = store_col_text(st, 19),
            .decode_error = store_col_text(st, 20),
            .status_name = store_col_text(st, 21),
            .error_count = sdb_column_int64(st, 22),
            .warning_count = sdb_column_int64(st, 23),
            .is_teardown = sdb_column_int(st, 24),
            .failed = sdb_column_int(st, 25),
            .in_flight = sdb_column_int(st, 26),
            .provider_version = store_col_text(st, 27),
            .has_protocol = sdb_column_type(st, 28) != SDB_NULL,
            .protocol = sdb_column_int(st, 28),
            .expected_close = sdb_column_int(st, 29),
            .not_recorded = sdb_column_int(st, 30),
        };
        if (found)
            *found = 1;
        cb = fn(ctx, &c);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_calls_query(store *s, int64_t run_id, const store_calls_filter *f,
                      int (*fn)(void *ctx, const store_call_row *row), void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare_large(
        s->db,
        "SELECT " STORE_CALL_COLUMNS "v.request_json, v.response_json" STORE_CALL_TAIL
        "FROM v_calls v WHERE v.run_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR "
        "lower(v.rpc) = lower(CAST(?2 AS TEXT)) OR lower(v.method) = lower(CAST(?2 AS TEXT))) "
        "AND (CAST(?3 AS TEXT) IS NULL OR v.type_name = ?3) "
        "AND (CAST(?4 AS INTEGER) = 0 OR v.failed OR v.not_recorded) "
        "ORDER BY v.started_us, v.call_id",
        &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    if (f && f->method)
        sdb_bind_text(st, 2, f->method, -1, SDB_STATIC);
    if (f && f->type)
        sdb_bind_text(st, 3, f->type, -1, SDB_STATIC);
    sdb_bind_int(st, 4, f && f->failed_only);
    return store_call_rows(st, fn, ctx, NULL);
}

int store_schemas_each(store *s, int64_t run_id, int (*fn)(void *ctx, const store_schema_row *row),
                       void *ctx)
{
    sdb_stmt *st = NULL;
    /* One row per distinct (provider, version, schema) among the run's
     * processes, the first process's order. */
    int rc = sdb_prepare(
        s->db,
        "SELECT p.provider, p.version, sc.protocol, sc.sha256, sc.raw FROM processes p "
        "JOIN schemas sc ON sc.sha256 = p.schema_sha256 AND sc.kind = 'provider' "
        "WHERE p.run_id = ?1 GROUP BY p.provider, p.version, sc.sha256 ORDER BY min(p.id)",
        &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_schema_row r = {
            .provider = store_col_text(st, 0),
            .version = store_col_text(st, 1),
            .protocol = sdb_column_int(st, 2),
            .sha256 = store_col_text(st, 3),
            .raw = sdb_column_blob(st, 4),
            .size = (size_t)sdb_column_bytes(st, 4),
        };
        cb = fn(ctx, &r);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_run_providers_each(store *s, int64_t run_id,
                             int (*fn)(void *ctx, const store_run_provider_row *row), void *ctx)
{
    sdb_stmt *st = NULL;
    /* The first process of each provider names its version, protocol and
     * binary (processes.id is their start order). */
    int rc =
        sdb_prepare(s->db,
                    "SELECT p.provider, f.version, f.protocol, f.binary_path, count(*), "
                    "(SELECT count(*) FROM calls c JOIN processes q ON q.id = c.process_id "
                    "WHERE q.run_id = ?1 AND q.provider = p.provider) "
                    "FROM processes p JOIN processes f ON f.id = (SELECT min(id) FROM processes "
                    "WHERE run_id = ?1 AND provider = p.provider) "
                    "WHERE p.run_id = ?1 AND p.provider IS NOT NULL GROUP BY p.provider, f.id "
                    "ORDER BY min(p.id)",
                    &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        store_run_provider_row r = {
            .provider = store_col_text(st, 0),
            .version = store_col_text(st, 1),
            .protocol = sdb_column_int(st, 2),
            .binary_path = store_col_text(st, 3),
            .processes = sdb_column_int64(st, 4),
            .calls = sdb_column_int64(st, 5),
        };
        cb = fn(ctx, &r);
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

int store_run_provider_schema(store *s, int64_t run_id, const char *provider, int *protocol,
                              tftap_buf *raw, tftap_buf *identity)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(
        s->db,
        "SELECT sc.protocol, sc.raw, (SELECT i.raw FROM schemas i WHERE i.sha256 = "
        "p.identity_sha256) FROM processes p JOIN schemas sc ON sc.sha256 = p.schema_sha256 "
        "AND sc.kind = 'provider' WHERE p.run_id = ?1 AND p.provider = ?2 ORDER BY p.id LIMIT 1",
        &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    sdb_bind_text(st, 2, provider, -1, SDB_STATIC);
    rc = sdb_step(st);
    int err = 0;
    if (rc == SDB_ROW) {
        *protocol = sdb_column_int(st, 0);
        /* (A blob of no bytes reads as NULL: nothing to append.) */
        if (sdb_column_bytes(st, 1) > 0)
            tftap_buf_append(raw, sdb_column_blob(st, 1), (size_t)sdb_column_bytes(st, 1));
        if (identity && sdb_column_bytes(st, 2) > 0)
            tftap_buf_append(identity, sdb_column_blob(st, 2), (size_t)sdb_column_bytes(st, 2));
        if (tftap_buf_failed(raw) || (identity && tftap_buf_failed(identity)))
            err = TFTAP_ENOMEM;
        rc = SDB_DONE;
    } else if (rc == SDB_DONE) {
        err = TFTAP_ENOTFOUND;
    }
    return store_finish(st, rc, err);
}

int store_calls_each(store *s, int64_t run_id, const char *method, const char *type,
                     int (*fn)(void *ctx, const store_call_row *row), void *ctx)
{
    store_calls_filter f = {method, type, 0};
    return store_calls_query(s, run_id, &f, fn, ctx);
}

int store_schemas_verify(store *s, char bad[65])
{
    sdb_stmt *st = NULL;
    bad[0] = '\0';
    int rc = sdb_prepare(s->db, "SELECT sha256, encoding, size, raw FROM schemas", &st);
    if (rc != SDB_OK)
        return store_err(rc);
    int err = 0;
    while (!err && (rc = sdb_step(st)) == SDB_ROW) {
        const char *sha = store_col_text(st, 0), *enc = store_col_text(st, 1);
        const void *raw = sdb_column_blob(st, 3);
        size_t n = (size_t)sdb_column_bytes(st, 3);
        char got[65];
        if (enc && strcmp(enc, "identity") != 0)
            continue; /* no other encoding is written; nothing to hash against */
        tftap_sha256_hex(raw, n, got);
        if (!sha || strcmp(sha, got) != 0 || sdb_column_int64(st, 2) != (int64_t)n) {
            snprintf(bad, 65, "%s", sha ? sha : "");
            err = TFTAP_EDECODE;
        }
    }
    return store_finish(st, err ? SDB_DONE : rc, err);
}

int store_run_names_each(store *s, int64_t run_id,
                         int (*fn)(void *ctx, const char *rpc, const char *type_name,
                                   const char *address),
                         void *ctx)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT DISTINCT c.rpc, c.type_name, a.address FROM calls c "
                         "LEFT JOIN call_addresses a ON a.call_id = c.id WHERE c.run_id = ?1",
                         &st);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(st, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        cb = fn(ctx, store_col_text(st, 0), store_col_text(st, 1), store_col_text(st, 2));
        if (cb)
            break;
    }
    return store_finish(st, cb ? SDB_DONE : rc, cb);
}

/* Each query yields one JSON object per row, built by SQLite's json_object
 * so that stored JSON columns are embedded as JSON (json(x)), not strings. */
static const char *const export_sql[] = {
    "SELECT json_object('kind', 'run', 'id', id, 'command', command, 'args', json(args), "
    "'cwd', cwd, 'cli_name', cli_name, 'cli_version', cli_version, 'started_us', started_us, "
    "'ended_us', ended_us, 'exit_code', exit_code, 'uuid', uuid, 'key_id', key_id, "
    "'parent_id', parent_id, 'test_name', test_name, 'test_step', test_step) "
    "FROM runs WHERE id = ?1",
    "SELECT json_object('kind', 'process', 'id', id, 'run_id', run_id, 'provider', provider, "
    "'version', version, 'protocol', protocol, 'pid', pid, 'binary_path', binary_path, "
    "'binary_sha256', binary_sha256, 'schema_sha256', schema_sha256, 'schema_source', "
    "schema_source, 'started_us', started_us, 'ended_us', ended_us, 'dropped', dropped) "
    "FROM processes WHERE run_id = ?1 ORDER BY id",
    /* A call's keys are tftap calls --json's: v_calls' columns, in order. */
    "SELECT json_object('kind', 'call', 'call_id', call_id, 'run_id', run_id, 'process_id', "
    "process_id, 'provider', provider, 'provider_version', provider_version, 'protocol', "
    "protocol, 'call_seq', call_seq, 'method', method, 'rpc', rpc, 'stream', json(CASE WHEN "
    "stream THEN 'true' ELSE 'false' END), 'type_name', type_name, 'address', address, "
    "'started_us', started_us, 'ended_us', ended_us, 'duration_us', duration_us, 'in_flight', "
    "json(CASE WHEN in_flight THEN 'true' ELSE 'false' END), 'status_code', status_code, "
    "'status_message', status_message, 'request_bytes', request_bytes, 'response_bytes', "
    "response_bytes, 'request_count', request_count, 'response_count', response_count, "
    "'request_json', CASE WHEN json_valid(request_json) THEN json(request_json) END, "
    "'response_json', CASE WHEN json_valid(response_json) THEN json(response_json) END, "
    "'decode_error', decode_error, 'status_name', status_name, 'error_count', error_count, "
    "'warning_count', warning_count, 'is_teardown', json(CASE WHEN is_teardown THEN 'true' "
    "ELSE 'false' END), 'failed', json(CASE WHEN failed THEN 'true' ELSE 'false' END), "
    "'expected_close', json(CASE WHEN expected_close THEN 'true' ELSE 'false' END), "
    "'not_recorded', json(CASE WHEN not_recorded THEN 'true' ELSE 'false' END)) "
    "FROM v_calls WHERE run_id = ?1 ORDER BY started_us, call_id",
    "SELECT json_object('kind', 'gap', 'id', id, 'run_id', run_id, 'process_id', process_id, "
    "'lost', lost, 'recorded_us', recorded_us, 'reason', reason) FROM gaps WHERE run_id = ?1 "
    "ORDER BY id",
};

/* The same lines from PostgreSQL: row_to_json prints members compact and in
 * column order, as json_object does; json columns are embedded as they are. */
static const char *const export_sql_pg[] = {
    "SELECT row_to_json(x) FROM (SELECT 'run'::text AS kind, id, command, tftap_json(args) AS "
    "args, cwd, cli_name, cli_version, started_us, ended_us, exit_code, uuid, key_id, parent_id, "
    "test_name, test_step FROM runs WHERE id = ?1) AS x",
    "SELECT row_to_json(x) FROM (SELECT 'process'::text AS kind, id, run_id, provider, version, "
    "protocol, pid, binary_path, binary_sha256, schema_sha256, schema_source, started_us, "
    "ended_us, dropped FROM processes WHERE run_id = ?1 ORDER BY id) AS x",
    "SELECT row_to_json(x) FROM (SELECT 'call'::text AS kind, call_id, run_id, process_id, "
    "provider, provider_version, protocol, call_seq, method, rpc, stream <> 0 AS stream, "
    "type_name, address, started_us, ended_us, duration_us, in_flight, status_code, "
    "status_message, request_bytes, response_bytes, request_count, response_count, "
    "tftap_json(request_json) AS request_json, tftap_json(response_json) AS response_json, "
    "decode_error, status_name, error_count, warning_count, is_teardown, failed, expected_close, "
    "not_recorded "
    "FROM v_calls WHERE run_id = ?1 ORDER BY started_us, call_id) AS x",
    "SELECT row_to_json(x) FROM (SELECT 'gap'::text AS kind, id, run_id, process_id, lost, "
    "recorded_us, reason FROM gaps WHERE run_id = ?1 ORDER BY id) AS x",
};

int store_export_jsonl(store *s, int64_t run_id, int (*fn)(void *ctx, const char *p, size_t n),
                       void *ctx)
{
    tftap_buf out = TFTAP_BUF_INIT;
    int err = 0;
    for (size_t q = 0; q < sizeof export_sql / sizeof export_sql[0] && !err; q++) {
        sdb_stmt *st = NULL;
        int rc = sdb_prepare_large(s->db, SDB_SQL(s->db, export_sql[q], export_sql_pg[q]), &st);
        if (rc != SDB_OK) {
            err = store_err(rc);
            break;
        }
        sdb_bind_int64(st, 1, run_id);
        while ((rc = sdb_step(st)) == SDB_ROW) {
            tftap_buf_append(&out, sdb_column_text(st, 0), (size_t)sdb_column_bytes(st, 0));
            tftap_buf_putc(&out, '\n');
            if (tftap_buf_failed(&out)) {
                err = TFTAP_ENOMEM;
                break;
            }
            if (out.len >= 65536) {
                err = fn(ctx, out.data, out.len);
                tftap_buf_reset(&out);
                if (err)
                    break;
            }
        }
        if (!err && rc != SDB_DONE)
            err = store_err(rc);
        sdb_finalize(st);
    }
    if (!err && out.len)
        err = fn(ctx, out.data, out.len);
    tftap_buf_done(&out);
    return err;
}
