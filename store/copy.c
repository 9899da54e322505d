/* store: one run copied from one record into another, with its provider
 * processes, calls with their addresses, raw messages, gaps and the schemas
 * they name. Used by bundles (a new file, ids kept, host details and raw
 * messages left out, values redacted on the way) and by push (a shared
 * record, ids renumbered, everything kept, the run's uuid saying whether it
 * is there already). */
#include "store/copy.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* A process of the source run and its id in the destination. */
struct copy_proc {
    int64_t src_id, dst_id;
};

static int64_t map_process(const struct copy_proc *procs, size_t n, int64_t src_id, int *found)
{
    for (size_t i = 0; i < n; i++)
        if (procs[i].src_id == src_id) {
            *found = 1;
            return procs[i].dst_id;
        }
    *found = 0;
    return 0;
}

static int step_row_id(sdb_stmt *ins, int64_t *id)
{
    int rc = sdb_step(ins);
    if (rc == SDB_ROW) {
        *id = sdb_column_int64(ins, 0);
        return SDB_OK;
    }
    return rc == SDB_DONE ? SDB_DONE : rc;
}

/* 8-4-4-4-12 hex digits: what identifies a run in every record. */
static int uuid_ok(const char *u)
{
    if (!u || strlen(u) != STORE_UUID_LEN)
        return 0;
    for (int i = 0; i < STORE_UUID_LEN; i++)
        if ((i == 8 || i == 13 || i == 18 || i == 23) ? u[i] != '-'
                                                      : tftap_hex_digit((unsigned char)u[i]) < 0)
            return 0;
    return 1;
}

/* The run row. SDB_DONE: the destination has a run of that uuid already
 * (c->dst_run_id is then that run). */
static int copy_run_row(store_copy *c)
{
    sdb_stmt *q = NULL, *ins = NULL, *sel = NULL;
    int rc = sdb_prepare(c->src->db,
                         "SELECT id, uuid, command, args, cwd, cli_name, cli_version, started_us, "
                         "ended_us, exit_code, key_id, values_kept, redactions, test_name, "
                         "test_step, (SELECT p.uuid FROM runs p WHERE p.id = runs.parent_id) "
                         "FROM runs WHERE id = ?",
                         &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(
            c->dst,
            c->keep_ids ? "INSERT INTO runs (id, uuid, command, args, cwd, cli_name, "
                          "cli_version, started_us, ended_us, exit_code, key_id, values_kept, "
                          "redactions, test_name, test_step, parent_id) VALUES (?, ?, ?, ?, "
                          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                          "(SELECT id FROM runs WHERE uuid = ?)) RETURNING id"
                        : "INSERT INTO runs (uuid, command, args, cwd, cli_name, "
                          "cli_version, started_us, ended_us, exit_code, key_id, values_kept, "
                          "redactions, test_name, test_step, parent_id) VALUES (?, ?, ?, ?, "
                          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT id FROM runs WHERE uuid = ?)) "
                          "ON CONFLICT (uuid) DO NOTHING RETURNING id",
            &ins);
    if (rc == SDB_OK)
        rc = sdb_prepare(c->dst, "SELECT id FROM runs WHERE uuid = ?", &sel);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, c->run_id);
    rc = sdb_step(q);
    if (rc != SDB_ROW) {
        rc = rc == SDB_DONE ? SDB_NOTFOUND : rc;
        goto done;
    }
    const char *uuid = store_col_text(q, 1);
    if (!uuid_ok(uuid)) {
        rc = SDB_CONSTRAINT;
        c->why = uuid ? "the run's uuid is not a UUID" : "the run has no uuid";
        goto done;
    }
    strcpy(c->uuid, uuid);
    /* Looked up first: on PostgreSQL an INSERT that conflicts still uses
     * up an id, and the run would be numbered after a gap. Two copies of
     * one run at once (two recorders of a wrapped command, each the last
     * out) take turns on PostgreSQL: the second waits for the first's
     * commit, then finds its run. The conflict clause covers the rest. */
    if (sdb_is_pg(c->dst)) {
        sdb_stmt *turn = NULL;
        rc = sdb_prepare(c->dst, "SELECT pg_advisory_xact_lock(hashtext(?))", &turn);
        if (rc == SDB_OK) {
            sdb_bind_text(turn, 1, c->uuid, -1, SDB_STATIC);
            rc = sdb_step(turn);
            rc = rc == SDB_ROW ? SDB_OK : rc;
        }
        sdb_finalize(turn);
        if (rc != SDB_OK)
            goto done;
    }
    sdb_bind_text(sel, 1, c->uuid, -1, SDB_STATIC);
    rc = sdb_step(sel);
    if (rc == SDB_ROW) {
        c->dst_run_id = sdb_column_int64(sel, 0);
        rc = SDB_DONE;
        goto done;
    }
    if (rc != SDB_DONE)
        goto done;
    int i = 1;
    if (c->keep_ids)
        sdb_bind_int64(ins, i++, c->run_id);
    sdb_bind_text(ins, i++, c->uuid, -1, SDB_STATIC);
    if (c->run_args) {
        sdb_bind_text(ins, i++, c->run_args(c->ctx, store_col_text(q, 2), 0), -1, SDB_TRANSIENT);
        sdb_bind_text(ins, i++, c->run_args(c->ctx, store_col_text(q, 3), 1), -1, SDB_TRANSIENT);
        sdb_bind_null(ins, i++); /* cwd */
    } else {
        for (int j = 2; j < 5; j++)
            sdb_bind_column(ins, i++, q, j);
    }
    for (int j = 5; j < 10; j++)
        sdb_bind_column(ins, i++, q, j);
    const char *key_id = c->key_id ? c->key_id : store_col_text(q, 10);
    if (key_id && c->dst_key_id[0] && strcmp(key_id, c->dst_key_id) == 0)
        key_id = NULL; /* hashed with the destination's own key */
    if (key_id)
        sdb_bind_text(ins, i++, key_id, -1, SDB_TRANSIENT);
    else
        sdb_bind_null(ins, i++);
    /* Values redacted on the way (a bundle) are no longer in clear. */
    sdb_bind_int(ins, i++, c->call_json ? 0 : sdb_column_int(q, 11));
    sdb_bind_column(ins, i++, q, 12);
    /* An acceptance test's step run keeps its name, and its suite when the
     * destination has that run (found by uuid: pushed before it). */
    sdb_bind_column(ins, i++, q, 13);
    sdb_bind_column(ins, i++, q, 14);
    sdb_bind_column(ins, i++, q, 15);
    rc = step_row_id(ins, &c->dst_run_id);
    if (rc == SDB_DONE) {
        sdb_reset(sel);
        rc = sdb_step(sel);
        if (rc == SDB_ROW)
            c->dst_run_id = sdb_column_int64(sel, 0);
        rc = rc == SDB_ROW ? SDB_DONE : (rc == SDB_DONE ? SDB_ERROR : rc);
    }
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    sdb_finalize(sel);
    return rc;
}

static int copy_schema(store_copy *c, const char *sha)
{
    sdb_stmt *ins = NULL, *q = NULL;
    int rc = sdb_prepare(c->dst,
                         "INSERT INTO schemas (sha256, kind, provider, protocol, encoding, size, "
                         "raw, first_seen_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                         "ON CONFLICT (sha256) DO NOTHING",
                         &ins);
    if (rc == SDB_OK)
        rc = sdb_prepare(c->src->db,
                         "SELECT sha256, kind, provider, protocol, encoding, size, raw, "
                         "first_seen_us FROM schemas WHERE sha256 = ?",
                         &q);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_text(q, 1, sha, -1, SDB_STATIC);
    rc = sdb_step(q);
    if (rc == SDB_ROW) {
        for (int i = 0; i < 8; i++)
            sdb_bind_column(ins, i + 1, q, i);
        rc = sdb_step(ins);
        if (rc == SDB_DONE && sdb_changes(c->dst))
            c->schemas++;
    }
    rc = rc == SDB_DONE || rc == SDB_ROW ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

static int copy_processes(store_copy *c, struct copy_proc **procs, size_t *nprocs)
{
    sdb_stmt *q = NULL, *ins = NULL;
    int rc = sdb_prepare(c->src->db,
                         "SELECT id, provider, version, protocol, pid, binary_path, "
                         "binary_sha256, schema_sha256, schema_source, identity_sha256, "
                         "started_us, ended_us, dropped FROM processes WHERE run_id = ? "
                         "ORDER BY id",
                         &q);
    /* binary_stat is left out: it names a file of the recording host, and
     * a recorder of the destination would take a digest from it. */
    if (rc == SDB_OK)
        rc = sdb_prepare(c->dst,
                         c->keep_ids
                             ? "INSERT INTO processes (id, run_id, provider, version, protocol, "
                               "pid, binary_path, binary_sha256, schema_sha256, schema_source, "
                               "identity_sha256, started_us, ended_us, dropped) VALUES (?, ?, ?, "
                               "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
                             : "INSERT INTO processes (run_id, provider, version, protocol, pid, "
                               "binary_path, binary_sha256, schema_sha256, schema_source, "
                               "identity_sha256, started_us, ended_us, dropped) VALUES (?, ?, ?, "
                               "?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                         &ins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, c->run_id);
    while ((rc = sdb_step(q)) == SDB_ROW) {
        int64_t id = sdb_column_int64(q, 0);
        const char *sha = store_col_text(q, 7), *idsha = store_col_text(q, 9);
        if ((sha && (rc = copy_schema(c, sha)) != SDB_OK) ||
            (idsha && (rc = copy_schema(c, idsha)) != SDB_OK))
            goto done;
        if (c->on_process &&
            (rc = c->on_process(c->ctx, id, sha, idsha, sdb_column_int(q, 3))) != SDB_OK)
            goto done;
        struct copy_proc *np = realloc(*procs, (*nprocs + 1) * sizeof *np);
        if (!np) {
            rc = SDB_NOMEM;
            goto done;
        }
        *procs = np;
        sdb_reset(ins);
        int i = 1;
        if (c->keep_ids)
            sdb_bind_int64(ins, i++, id);
        sdb_bind_int64(ins, i++, c->dst_run_id);
        for (int j = 1; j < 13; j++) {
            if (c->strip_host && (j == 4 || j == 5))
                sdb_bind_null(ins, i++); /* pid, binary_path */
            else
                sdb_bind_column(ins, i++, q, j);
        }
        int64_t dst_id = 0;
        rc = step_row_id(ins, &dst_id);
        if (rc != SDB_OK)
            goto done;
        (*procs)[*nprocs].src_id = id;
        (*procs)[*nprocs].dst_id = dst_id;
        (*nprocs)++;
        c->processes++;
    }
    rc = rc == SDB_DONE ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

static int copy_messages(store_copy *c, sdb_stmt *mq, sdb_stmt *mins, int64_t src_call,
                         int64_t dst_call)
{
    int rc;
    sdb_reset(mq);
    sdb_bind_int64(mq, 1, src_call);
    while ((rc = sdb_step(mq)) == SDB_ROW) {
        sdb_reset(mins);
        sdb_bind_int64(mins, 1, dst_call);
        for (int j = 0; j < 4; j++)
            sdb_bind_column(mins, j + 2, mq, j);
        rc = sdb_step(mins);
        if (rc != SDB_DONE)
            return rc;
        c->messages++;
    }
    return rc == SDB_DONE ? SDB_OK : rc;
}

/* Calls are inserted many rows per statement: on a server each statement
 * is a round trip, and a run has thousands of calls. A call with raw
 * messages goes alone, for the id its messages need. */
#define COPY_BATCH 64

/* One column value of a buffered call row; bytes live in the batch's arena
 * (by offset: it grows). */
struct cval {
    int type;
    int64_t i;
    size_t off, len;
};

struct batch {
    struct cval *v; /* COPY_BATCH rows of ncols */
    int ncols, rows;
    tftap_buf bytes;
};

static struct cval *slot(struct batch *b, int col)
{
    return &b->v[b->rows * b->ncols + col];
}

static void put_int(struct batch *b, int col, int64_t v)
{
    *slot(b, col) = (struct cval){SDB_INTEGER, v, 0, 0};
}

static void put_bytes(struct batch *b, int col, int type, const void *p, size_t n)
{
    *slot(b, col) = (struct cval){type, 0, b->bytes.len, n};
    tftap_buf_append(&b->bytes, p, n);
}

static void put_column(struct batch *b, int col, sdb_stmt *q, int j)
{
    switch (sdb_column_type(q, j)) {
    case SDB_NULL:
        *slot(b, col) = (struct cval){SDB_NULL, 0, 0, 0};
        break;
    case SDB_INTEGER:
        put_int(b, col, sdb_column_int64(q, j));
        break;
    case SDB_BLOB:
        put_bytes(b, col, SDB_BLOB, sdb_column_blob(q, j), (size_t)sdb_column_bytes(q, j));
        break;
    default: {
        const unsigned char *t = sdb_column_text(q, j);
        put_bytes(b, col, SDB_TEXT, t ? (const char *)t : "", (size_t)sdb_column_bytes(q, j));
        break;
    }
    }
}

/* Bind rows [0, n) of the batch to st, whose rows have b->ncols values.
 * PostgreSQL gets integers as untyped text, as it gets NULLs, so that the
 * server prepares one statement however the rows' NULLs fall (the INSERT
 * gives each value its column's type). */
static void bind_rows(struct batch *b, sdb_stmt *st, int n, int untyped)
{
    int p = 1;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < b->ncols; k++, p++) {
            const struct cval *v = &b->v[r * b->ncols + k];
            const char *bytes = b->bytes.data ? b->bytes.data + v->off : "";
            if (v->type == SDB_NULL)
                sdb_bind_null(st, p);
            else if (v->type == SDB_INTEGER && untyped) {
                char num[24];
                int len = snprintf(num, sizeof num, "%lld", (long long)v->i);
                sdb_bind_text(st, p, num, len, SDB_TRANSIENT);
            } else if (v->type == SDB_INTEGER)
                sdb_bind_int64(st, p, v->i);
            else if (v->type == SDB_BLOB)
                sdb_bind_blob(st, p, bytes, v->len, SDB_STATIC);
            else
                sdb_bind_text(st, p, bytes, (int)v->len, SDB_STATIC);
        }
}

static const char CALL_COLUMNS[] =
    "process_id, call_seq, method, rpc, stream, started_us, ended_us, status_code, "
    "status_message, request_bytes, response_bytes, request_count, response_count, type_name, "
    "decode_error, schema_sha256, request_json, response_json, run_id";

static int insert_sql(const store_copy *c, int rows, int returning, tftap_buf *sql)
{
    int ncols = c->keep_ids ? 20 : 19;
    tftap_buf_reset(sql);
    tftap_buf_printf(sql, "INSERT INTO calls (%s%s) VALUES ", c->keep_ids ? "id, " : "",
                     CALL_COLUMNS);
    for (int r = 0; r < rows; r++) {
        tftap_buf_puts(sql, r ? ", (" : "(");
        for (int k = 0; k < ncols; k++)
            tftap_buf_puts(sql, k ? ", ?" : "?");
        tftap_buf_putc(sql, ')');
    }
    if (returning)
        tftap_buf_puts(sql, " RETURNING id");
    return tftap_buf_failed(sql) ? SDB_NOMEM : SDB_OK;
}

/* Addresses of calls copied already, rows of (process_id, call_seq,
 * address, address_note): the destination's ids of batched calls are not
 * known here, the calls' unique (process_id, call_seq) finds them. The
 * casts type the values PostgreSQL gets untyped (bind_rows). */
static int address_sql(int rows, tftap_buf *sql)
{
    tftap_buf_reset(sql);
    tftap_buf_puts(sql, "INSERT INTO call_addresses (call_id, address, address_note) "
                        "SELECT c.id, v.column3, v.column4 FROM (VALUES ");
    for (int r = 0; r < rows; r++)
        tftap_buf_puts(sql, r ? ", (CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), "
                                "CAST(? AS TEXT))"
                              : "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), "
                                "CAST(? AS TEXT))");
    tftap_buf_puts(sql, ") AS v JOIN calls c ON c.process_id = v.column1 AND "
                        "c.call_seq = v.column2");
    return tftap_buf_failed(sql) ? SDB_NOMEM : SDB_OK;
}

/* Insert the batch's rows (calls, or with addresses set their
 * call_addresses): a full batch through the statement kept for it, fewer
 * through one made for them. */
static int flush_batch(store_copy *c, struct batch *b, sdb_stmt **full, tftap_buf *sql,
                       int addresses)
{
    if (b->rows == 0)
        return SDB_OK;
    if (tftap_buf_failed(&b->bytes))
        return SDB_NOMEM;
    sdb_stmt *st = NULL;
    int rc = SDB_OK;
    if (b->rows == COPY_BATCH && *full) {
        st = *full;
        sdb_reset(st);
    } else if ((rc = addresses ? address_sql(b->rows, sql) : insert_sql(c, b->rows, 0, sql)) ==
               SDB_OK) {
        rc = sdb_prepare(c->dst, sql->data, &st);
    }
    if (rc == SDB_OK) {
        bind_rows(b, st, b->rows, sdb_is_pg(c->dst));
        rc = sdb_step(st);
        rc = rc == SDB_DONE ? SDB_OK : rc;
    }
    if (b->rows == COPY_BATCH && !*full)
        *full = st; /* kept for the next full batch */
    else if (st != *full)
        sdb_finalize(st);
    b->rows = 0;
    tftap_buf_reset(&b->bytes);
    return rc;
}

/* The calls batched so far, then the addresses of calls copied: flushed
 * in this order, a call is there before its address. */
static int flush_both(store_copy *c, struct batch *b, sdb_stmt **full, struct batch *ab,
                      sdb_stmt **afull, tftap_buf *sql)
{
    int rc = flush_batch(c, b, full, sql, 0);
    return rc == SDB_OK ? flush_batch(c, ab, afull, sql, 1) : rc;
}

static int copy_calls(store_copy *c, const struct copy_proc *procs, size_t nprocs)
{
    sdb_stmt *q = NULL, *one = NULL, *full = NULL, *afull = NULL, *mq = NULL, *mins = NULL,
             *n = NULL;
    int64_t total = 0, done_calls = 0;
    struct batch b = {NULL, c->keep_ids ? 20 : 19, 0, TFTAP_BUF_INIT};
    struct batch ab = {NULL, 4, 0, TFTAP_BUF_INIT};
    tftap_buf sql = TFTAP_BUF_INIT, json = TFTAP_BUF_INIT;
    int rc = SDB_OK;
    b.v = calloc((size_t)COPY_BATCH * (size_t)b.ncols, sizeof *b.v);
    ab.v = calloc((size_t)COPY_BATCH * (size_t)ab.ncols, sizeof *ab.v);
    if (!b.v || !ab.v) {
        rc = SDB_NOMEM;
        goto done;
    }
    if (c->progress) {
        rc = sdb_prepare(c->src->db, "SELECT count(*) FROM calls WHERE run_id = ?", &n);
        if (rc == SDB_OK) {
            sdb_bind_int64(n, 1, c->run_id);
            if ((rc = sdb_step(n)) == SDB_ROW)
                total = sdb_column_int64(n, 0);
            rc = rc == SDB_ROW || rc == SDB_DONE ? SDB_OK : rc;
        }
        if (rc != SDB_OK)
            goto done;
        c->progress(c->ctx, 0, total);
    }
    rc = sdb_prepare_large(
        c->src->db,
        "SELECT calls.id, process_id, call_seq, method, rpc, stream, started_us, ended_us, "
        "status_code, status_message, request_bytes, response_bytes, request_count, "
        "response_count, type_name, decode_error, schema_sha256, request_json, response_json, "
        "(SELECT count(*) FROM messages m WHERE m.call_id = calls.id), a.address, "
        "a.address_note FROM calls LEFT JOIN call_addresses a ON a.call_id = calls.id "
        "WHERE run_id = ? ORDER BY calls.id",
        &q);
    if (rc == SDB_OK)
        rc = insert_sql(c, 1, 1, &sql);
    if (rc == SDB_OK)
        rc = sdb_prepare(c->dst, sql.data, &one);
    if (rc == SDB_OK && !c->skip_messages)
        rc = sdb_prepare(c->src->db,
                         "SELECT seq, direction, t_us, raw FROM messages WHERE call_id = ? "
                         "ORDER BY seq",
                         &mq);
    if (rc == SDB_OK && !c->skip_messages)
        rc = sdb_prepare(c->dst,
                         "INSERT INTO messages (call_id, seq, direction, t_us, raw) VALUES "
                         "(?, ?, ?, ?, ?)",
                         &mins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, c->run_id);
    while ((rc = sdb_step(q)) == SDB_ROW) {
        int64_t id = sdb_column_int64(q, 0), src_proc = sdb_column_int64(q, 1);
        int64_t nmsg = sdb_column_int64(q, 19);
        int found = 0, k = 0;
        int64_t dst_proc = map_process(procs, nprocs, src_proc, &found);
        if (!found) {
            c->why = "a call of a process that is not the run's";
            rc = SDB_CONSTRAINT;
            goto done;
        }
        int alone = nmsg > 0 && !c->skip_messages;
        if (alone && (rc = flush_batch(c, &b, &full, &sql, 0)) != SDB_OK)
            goto done;
        if (c->keep_ids)
            put_int(&b, k++, id);
        put_int(&b, k++, dst_proc);
        for (int j = 2; j < 17; j++)
            put_column(&b, k++, q, j);
        for (int j = 17; j < 19; j++, k++) {
            if (!c->call_json) {
                put_column(&b, k, q, j);
                continue;
            }
            int is_null = 0;
            tftap_buf_reset(&json);
            rc = c->call_json(c->ctx, id, src_proc, store_col_text(q, 3), j == 18,
                              store_col_text(q, j), store_col_text(q, 14), &json, &is_null);
            if (rc == SDB_OK && tftap_buf_failed(&json))
                rc = SDB_NOMEM;
            if (rc != SDB_OK)
                goto done;
            if (is_null)
                *slot(&b, k) = (struct cval){SDB_NULL, 0, 0, 0};
            else
                put_bytes(&b, k, SDB_TEXT, json.data ? json.data : "", json.len);
        }
        put_int(&b, k, c->dst_run_id);
        if (alone) {
            int64_t dst_id = 0;
            if (tftap_buf_failed(&b.bytes)) {
                rc = SDB_NOMEM;
                goto done;
            }
            sdb_reset(one);
            bind_rows(&b, one, 1, sdb_is_pg(c->dst));
            rc = step_row_id(one, &dst_id);
            b.rows = 0;
            tftap_buf_reset(&b.bytes);
            if (rc == SDB_OK)
                rc = copy_messages(c, mq, mins, id, dst_id);
            if (rc != SDB_OK)
                goto done;
        } else {
            c->skipped_messages += nmsg;
            b.rows++;
        }
        if (sdb_column_type(q, 20) != SDB_NULL || sdb_column_type(q, 21) != SDB_NULL) {
            put_int(&ab, 0, dst_proc);
            put_column(&ab, 1, q, 2);
            put_column(&ab, 2, q, 20);
            put_column(&ab, 3, q, 21);
            if (++ab.rows == COPY_BATCH &&
                (rc = flush_both(c, &b, &full, &ab, &afull, &sql)) != SDB_OK)
                goto done;
        }
        if (b.rows == COPY_BATCH && (rc = flush_batch(c, &b, &full, &sql, 0)) != SDB_OK)
            goto done;
        c->calls++;
        if (c->progress && b.rows == 0)
            c->progress(c->ctx, (done_calls = c->calls), total);
    }
    rc = rc == SDB_DONE ? flush_both(c, &b, &full, &ab, &afull, &sql) : rc;
    if (rc == SDB_OK && c->progress && done_calls != c->calls)
        c->progress(c->ctx, c->calls, total);
done:
    sdb_finalize(n);
    sdb_finalize(q);
    sdb_finalize(one);
    sdb_finalize(full);
    sdb_finalize(afull);
    sdb_finalize(mq);
    sdb_finalize(mins);
    free(b.v);
    free(ab.v);
    tftap_buf_done(&b.bytes);
    tftap_buf_done(&ab.bytes);
    tftap_buf_done(&sql);
    tftap_buf_done(&json);
    return rc;
}

static int copy_gaps(store_copy *c, const struct copy_proc *procs, size_t nprocs)
{
    sdb_stmt *q = NULL, *ins = NULL;
    int rc = sdb_prepare(c->src->db,
                         "SELECT id, process_id, lost, recorded_us, reason FROM gaps "
                         "WHERE run_id = ?1 OR process_id IN (SELECT id FROM processes "
                         "WHERE run_id = ?1) ORDER BY id",
                         &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(c->dst,
                         c->keep_ids ? "INSERT INTO gaps (id, run_id, process_id, lost, "
                                       "recorded_us, reason) VALUES (?, ?, ?, ?, ?, ?)"
                                     : "INSERT INTO gaps (run_id, process_id, lost, "
                                       "recorded_us, reason) VALUES (?, ?, ?, ?, ?)",
                         &ins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, c->run_id);
    while ((rc = sdb_step(q)) == SDB_ROW) {
        sdb_reset(ins);
        int i = 1, found = 0;
        if (c->keep_ids)
            sdb_bind_int64(ins, i++, sdb_column_int64(q, 0));
        sdb_bind_int64(ins, i++, c->dst_run_id);
        int64_t p = sdb_column_type(q, 1) == SDB_NULL
                        ? 0
                        : map_process(procs, nprocs, sdb_column_int64(q, 1), &found);
        if (found)
            sdb_bind_int64(ins, i++, p);
        else
            sdb_bind_null(ins, i++);
        for (int j = 2; j < 5; j++)
            sdb_bind_column(ins, i++, q, j);
        rc = sdb_step(ins);
        if (rc != SDB_DONE)
            goto done;
        c->gaps++;
    }
    rc = rc == SDB_DONE ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

/* The hashes of the run's secrets, where they keep their key (a push;
 * a bundle's values are keyed afresh and redacted already). */
static int copy_secrets(store_copy *c)
{
    if (c->call_json)
        return SDB_OK;
    sdb_stmt *q = NULL, *ins = NULL;
    int rc = sdb_prepare(c->src->db, "SELECT hmac FROM run_secrets WHERE run_id = ?", &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(c->dst, "INSERT INTO run_secrets (run_id, hmac) VALUES (?, ?)", &ins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, c->run_id);
    while ((rc = sdb_step(q)) == SDB_ROW) {
        sdb_reset(ins);
        sdb_bind_int64(ins, 1, c->dst_run_id);
        sdb_bind_column(ins, 2, q, 0);
        if ((rc = sdb_step(ins)) != SDB_DONE)
            goto done;
    }
    rc = rc == SDB_DONE ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

int store_copy_run(store_copy *c)
{
    struct copy_proc *procs = NULL;
    size_t nprocs = 0;
    int rc = copy_run_row(c);
    if (rc == SDB_OK)
        rc = copy_processes(c, &procs, &nprocs);
    if (rc == SDB_OK)
        rc = copy_calls(c, procs, nprocs);
    if (rc == SDB_OK)
        rc = copy_gaps(c, procs, nprocs);
    if (rc == SDB_OK)
        rc = copy_secrets(c);
    free(procs);
    return rc;
}

void store_key_id(const unsigned char key[STORE_KEY_LEN], char out[STORE_KEY_ID_LEN + 1])
{
    char hex[65];
    tftap_sha256_hex(key, STORE_KEY_LEN, hex);
    memcpy(out, hex, STORE_KEY_ID_LEN);
    out[STORE_KEY_ID_LEN] = '\0';
}

int store_source_key(store *s, unsigned char key[STORE_KEY_LEN])
{
    static const unsigned char zero[STORE_KEY_LEN];
    memcpy(key, s->key, STORE_KEY_LEN);
    if (memcmp(key, zero, sizeof zero) != 0)
        return 1;
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(s->db, "SELECT key FROM secret_key WHERE id = 1", &q);
    int have = 0;
    if (rc == SDB_OK) {
        rc = sdb_step(q);
        if (rc == SDB_ROW && sdb_column_bytes(q, 0) == STORE_KEY_LEN) {
            memcpy(key, sdb_column_blob(q, 0), STORE_KEY_LEN);
            have = 1;
        }
        rc = rc == SDB_ROW || rc == SDB_DONE ? SDB_OK : rc;
    }
    sdb_finalize(q);
    return rc != SDB_OK ? -rc : have;
}

const char *store_copy_why(store_copy *c)
{
    if (c->why)
        return c->why;
    /* The failing statement ran on one side or the other; the side whose
     * last statement succeeded says "not an error". */
    const char *m = sdb_errmsg(c->dst);
    if (!m || !*m || strcmp(m, "not an error") == 0)
        m = sdb_errmsg(c->src->db);
    return m ? m : "";
}

/* ---- push ---------------------------------------------------------------- */

struct push_ctx {
    store_push_progress progress;
    void *ctx;
};

static void push_progress(void *ctx, int64_t done, int64_t total)
{
    struct push_ctx *p = ctx;
    p->progress(p->ctx, done, total);
}

int store_push_run(store *src, int64_t run_id, store *dst, store_push_progress progress, void *ctx,
                   store_push_info *info)
{
    memset(info, 0, sizeof *info);
    if (!src || !dst)
        return TFTAP_EINVAL;
    struct push_ctx pc = {progress, ctx};
    store_copy c = {.src = src, .dst = dst->db, .run_id = run_id};
    if (progress) {
        c.progress = push_progress;
        c.ctx = &pc;
    }
    unsigned char key[STORE_KEY_LEN];
    char src_key_id[STORE_KEY_ID_LEN + 1];
    int have = store_source_key(src, key);
    if (have < 0) {
        snprintf(info->why, sizeof info->why, "%s", sdb_errmsg(src->db));
        return TFTAP_ESTORE;
    }
    if (have) {
        store_key_id(key, src_key_id);
        c.src_key_id = src_key_id;
    }
    OPENSSL_cleanse(key, sizeof key);
    store_key_id(dst->key, c.dst_key_id);
    /* A run the source holds with its own key gets that key's id; one that
     * came from elsewhere keeps its key_id; a source without a key (an
     * older bundle) cannot say which key hashed its values. */
    int rc = store_begin(c.dst, 60000);
    if (rc == SDB_OK) {
        rc = store_copy_resolve_key_id(&c);
        if (rc == SDB_OK)
            rc = store_copy_run(&c);
        if (rc == SDB_OK)
            rc = store_commit(c.dst, 60000);
        if (rc != SDB_OK && rc != SDB_DONE && rc != SDB_NOTFOUND)
            snprintf(info->why, sizeof info->why, "%s", store_copy_why(&c));
        if (rc != SDB_OK)
            store_rollback(c.dst);
    } else {
        snprintf(info->why, sizeof info->why, "%s", sdb_errmsg(c.dst));
    }
    /* One line: PostgreSQL adds CONTEXT and DETAIL lines. */
    info->why[strcspn(info->why, "\n")] = '\0';
    if (strncmp(info->why, "ERROR:  ", 8) == 0)
        memmove(info->why, info->why + 8, strlen(info->why + 8) + 1);
    info->dst_run_id = c.dst_run_id;
    memcpy(info->uuid, c.uuid, sizeof info->uuid);
    info->processes = c.processes;
    info->calls = c.calls;
    info->messages = c.messages;
    info->gaps = c.gaps;
    info->schemas = c.schemas;
    info->foreign_key = c.foreign_key;
    if (rc == SDB_DONE) {
        info->already = 1;
        info->processes = info->calls = info->messages = info->gaps = info->schemas = 0;
        return 0;
    }
    if (rc == SDB_OK)
        return 0;
    if (rc == SDB_NOTFOUND)
        return TFTAP_ENOTFOUND;
    if (rc == SDB_GONE || rc == SDB_CANTOPEN)
        return TFTAP_EIO;
    int err = store_err(rc);
    return err ? err : TFTAP_ESTORE;
}

int store_copy_resolve_key_id(store_copy *c)
{
    /* Which key hashed the run's values: its row's key_id when it came
     * from elsewhere already, else its database's key (src_key_id), else
     * nobody knows ("unknown": an older bundle). */
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(c->src->db, "SELECT key_id FROM runs WHERE id = ?", &q);
    if (rc != SDB_OK)
        return rc;
    sdb_bind_int64(q, 1, c->run_id);
    rc = sdb_step(q);
    if (rc == SDB_ROW) {
        const char *k = store_col_text(q, 0);
        snprintf(c->key_id_buf, sizeof c->key_id_buf, "%s",
                 k ? k : (c->src_key_id ? c->src_key_id : "unknown"));
        c->key_id = c->key_id_buf;
        c->foreign_key = strcmp(c->key_id_buf, c->dst_key_id) != 0;
        rc = SDB_OK;
    } else if (rc == SDB_DONE) {
        rc = SDB_NOTFOUND;
    }
    sdb_finalize(q);
    return rc;
}
