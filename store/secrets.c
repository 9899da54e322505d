/* store: a run's values redacted after the fact, where core's marks say
 * (analysis/secrets.c decides what; this writes it), and what a run
 * remembers of its secrets: the hashes of the values core marked
 * (run_secrets), for bundles of a run whose values were kept in clear,
 * and how many values each rule redacted (runs.redactions). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "store/copy.h"
#include "store/store.h"
#include "store/store_int.h"

int store_value_hmac(store *s, const char *json, size_t len, char out[65])
{
    unsigned char key[STORE_KEY_LEN];
    int have = store_source_key(s, key);
    if (have <= 0) {
        out[0] = '\0';
        return have < 0 ? store_err(-have) : TFTAP_ENOTFOUND;
    }
    tftap_hmac_sha256_hex(key, sizeof key, json, len, out);
    return 0;
}

tftap_hmac *store_value_hmac_new(store *s)
{
    unsigned char key[STORE_KEY_LEN];
    if (store_source_key(s, key) <= 0)
        return NULL;
    tftap_hmac *h = tftap_hmac_new(key, sizeof key);
    OPENSSL_cleanse(key, sizeof key);
    return h;
}

int store_run_values_each(store *s, int64_t run_id, int (*fn)(void *ctx, const store_value_call *c),
                          void *ctx)
{
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT c.id, c.rpc, a.address, c.request_json, c.response_json, "
                         "c.status_message, c.type_name, c.decode_error "
                         "FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id "
                         "WHERE c.run_id = ? ORDER BY c.id",
                         &q);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(q, 1, run_id);
    int cb = 0;
    while (!cb && (rc = sdb_step(q)) == SDB_ROW) {
        store_value_call c = {.call_id = sdb_column_int64(q, 0),
                              .rpc = store_col_text(q, 1),
                              .address = store_col_text(q, 2),
                              .request_json = store_col_text(q, 3),
                              .response_json = store_col_text(q, 4),
                              .status_message = store_col_text(q, 5),
                              .type_name = store_col_text(q, 6),
                              .decode_error = store_col_text(q, 7)};
        cb = fn(ctx, &c);
    }
    return store_finish(q, rc == SDB_ROW ? SDB_DONE : rc, cb);
}

int store_run_values_kept(store *s, int64_t run_id, int *kept)
{
    int64_t v = 0;
    int rc = store_query_int(s->db, "SELECT values_kept FROM runs WHERE id = ?", run_id, &v);
    *kept = (int)v;
    return rc;
}

int store_run_secrets_each(store *s, int64_t run_id, int (*fn)(void *ctx, const char *hmac),
                           void *ctx)
{
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(s->db, "SELECT hmac FROM run_secrets WHERE run_id = ?", &q);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(q, 1, run_id);
    int cb = 0;
    while ((rc = sdb_step(q)) == SDB_ROW && !cb)
        cb = fn(ctx, store_col_text(q, 0));
    return store_finish(q, rc == SDB_ROW ? SDB_DONE : rc, cb);
}

int store_run_redactions(store *s, int64_t run_id, tftap_buf *out)
{
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(s->db, "SELECT redactions FROM runs WHERE id = ?", &q);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_bind_int64(q, 1, run_id);
    rc = sdb_step(q);
    if (rc == SDB_ROW) {
        const char *t = store_col_text(q, 0);
        if (t)
            tftap_buf_puts(out, t);
        rc = SDB_DONE;
    }
    return store_finish(q, rc, 0);
}

/* The calls are read a page at a time and written back before the next
 * page: no statement reads the table while another writes it, and the
 * memory held is a page's. */
#define REDACT_PAGE 256

struct rewritten {
    int64_t call_id;
    /* A column's new text, or as it was (written back alike); NULL stays. */
    int null_req, null_resp, null_status, null_decode_error;
    store_value_rewrite text;
};

static void bind_buf_or_null(sdb_stmt *st, int i, int null, tftap_buf *b)
{
    if (null)
        sdb_bind_null(st, i);
    else
        sdb_bind_text(st, i, tftap_buf_cstr(b), (int)b->len, SDB_STATIC);
}

static int write_page(sdb *db, sdb_stmt **up, struct rewritten *rw, size_t n)
{
    int rc = SDB_OK;
    if (!*up)
        rc = sdb_prepare(db,
                         "UPDATE calls SET request_json = ?, response_json = ?, "
                         "status_message = ?, decode_error = ? WHERE id = ?",
                         up);
    for (size_t i = 0; rc == SDB_OK && i < n; i++) {
        bind_buf_or_null(*up, 1, rw[i].null_req, &rw[i].text.req);
        bind_buf_or_null(*up, 2, rw[i].null_resp, &rw[i].text.resp);
        bind_buf_or_null(*up, 3, rw[i].null_status, &rw[i].text.status);
        bind_buf_or_null(*up, 4, rw[i].null_decode_error, &rw[i].text.decode_error);
        sdb_bind_int64(*up, 5, rw[i].call_id);
        rc = sdb_step(*up);
        sdb_reset(*up);
        if (rc == SDB_DONE)
            rc = SDB_OK;
    }
    return rc;
}

/* What the rewriter left alone goes back as it was: *null when it was
 * NULL, its text in b otherwise. */
static void keep_unless(int changed, int bit, const char *was, tftap_buf *b, int *null)
{
    *null = !(changed & bit) && !was;
    if (changed & bit)
        return;
    tftap_buf_reset(b); /* whatever the rewriter left in it */
    if (was)
        tftap_buf_puts(b, was);
}

/* An SQLite result code; *err a tftap error from fn (0 if none). */
static int rewrite_calls(store *s, int64_t run_id, store_value_rewriter fn, void *ctx, int *err)
{
    struct rewritten *rw = calloc(REDACT_PAGE, sizeof *rw);
    if (!rw)
        return SDB_NOMEM;
    sdb_stmt *q = NULL, *up = NULL;
    int rc = sdb_prepare(s->db,
                         "SELECT c.id, c.rpc, a.address, c.request_json, c.response_json, "
                         "c.status_message, c.type_name, c.decode_error "
                         "FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id "
                         "WHERE c.run_id = ? AND c.id > ? ORDER BY c.id LIMIT ?",
                         &q);
    int64_t after = 0;
    *err = 0;
    while (rc == SDB_OK && !*err) {
        size_t n = 0, got = 0;
        sdb_bind_int64(q, 1, run_id);
        sdb_bind_int64(q, 2, after);
        sdb_bind_int(q, 3, REDACT_PAGE);
        while (!*err && (rc = sdb_step(q)) == SDB_ROW) {
            got++;
            after = sdb_column_int64(q, 0);
            struct rewritten *r = &rw[n];
            tftap_buf_reset(&r->text.req);
            tftap_buf_reset(&r->text.resp);
            tftap_buf_reset(&r->text.status);
            tftap_buf_reset(&r->text.decode_error);
            store_value_call c = {.call_id = after,
                                  .rpc = store_col_text(q, 1),
                                  .address = store_col_text(q, 2),
                                  .request_json = store_col_text(q, 3),
                                  .response_json = store_col_text(q, 4),
                                  .status_message = store_col_text(q, 5),
                                  .type_name = store_col_text(q, 6),
                                  .decode_error = store_col_text(q, 7)};
            int changed = 0;
            *err = fn(ctx, &c, &r->text, &changed);
            if (*err || !changed)
                continue;
            r->call_id = after;
            keep_unless(changed, STORE_REWRITE_REQUEST, c.request_json, &r->text.req, &r->null_req);
            keep_unless(changed, STORE_REWRITE_RESPONSE, c.response_json, &r->text.resp,
                        &r->null_resp);
            keep_unless(changed, STORE_REWRITE_STATUS, c.status_message, &r->text.status,
                        &r->null_status);
            keep_unless(changed, STORE_REWRITE_DECODE_ERROR, c.decode_error, &r->text.decode_error,
                        &r->null_decode_error);
            tftap_buf_cstr(&r->text.req);
            tftap_buf_cstr(&r->text.resp);
            tftap_buf_cstr(&r->text.status);
            tftap_buf_cstr(&r->text.decode_error);
            if (tftap_buf_failed(&r->text.req) || tftap_buf_failed(&r->text.resp) ||
                tftap_buf_failed(&r->text.status) || tftap_buf_failed(&r->text.decode_error))
                *err = TFTAP_ENOMEM;
            n++;
        }
        sdb_reset(q);
        if (rc == SDB_ROW || rc == SDB_DONE)
            rc = SDB_OK;
        if (rc == SDB_OK && !*err)
            rc = write_page(s->db, &up, rw, n);
        if (got < REDACT_PAGE)
            break;
    }
    sdb_finalize(q);
    sdb_finalize(up);
    for (size_t i = 0; i < REDACT_PAGE; i++) {
        tftap_buf_done(&rw[i].text.req);
        tftap_buf_done(&rw[i].text.resp);
        tftap_buf_done(&rw[i].text.status);
        tftap_buf_done(&rw[i].text.decode_error);
    }
    free(rw);
    return rc;
}

int store_run_redact(store *s, int64_t run_id, const store_run_redaction *how)
{
    int rc = store_begin(s->db, 0);
    if (rc != SDB_OK)
        return store_err(rc);
    sdb_stmt *st = NULL;
    int err = 0;
    if (how->rewrite)
        rc = rewrite_calls(s, run_id, how->rewrite, how->ctx, &err);
    if (rc == SDB_OK && !err && how->args_json) {
        rc = sdb_prepare(s->db, "UPDATE runs SET args = ? WHERE id = ?", &st);
        if (rc == SDB_OK) {
            sdb_bind_text(st, 1, how->args_json, -1, SDB_STATIC);
            sdb_bind_int64(st, 2, run_id);
            rc = sdb_step(st);
            rc = rc == SDB_DONE ? SDB_OK : rc;
        }
        sdb_finalize(st);
        st = NULL;
    }
    if (rc == SDB_OK && !err && how->nhmacs > 0) {
        rc = sdb_prepare(s->db,
                         "INSERT INTO run_secrets (run_id, hmac) VALUES (?, ?) "
                         "ON CONFLICT (run_id, hmac) DO NOTHING",
                         &st);
        for (size_t i = 0; rc == SDB_OK && i < how->nhmacs; i++) {
            sdb_bind_int64(st, 1, run_id);
            sdb_bind_text(st, 2, how->hmacs[i], -1, SDB_STATIC);
            rc = sdb_step(st);
            sdb_reset(st);
            rc = rc == SDB_DONE ? SDB_OK : rc;
        }
        sdb_finalize(st);
        st = NULL;
    }
    if (rc == SDB_OK && !err && how->counts_json) {
        rc = sdb_prepare(s->db, "UPDATE runs SET redactions = ? WHERE id = ?", &st);
        if (rc == SDB_OK) {
            sdb_bind_text(st, 1, how->counts_json, -1, SDB_STATIC);
            sdb_bind_int64(st, 2, run_id);
            rc = sdb_step(st);
            rc = rc == SDB_DONE ? SDB_OK : rc;
        }
        sdb_finalize(st);
    }
    if (rc == SDB_OK && !err)
        rc = store_commit(s->db, 0);
    if (rc != SDB_OK || err) {
        store_rollback(s->db);
        if (err)
            return err;
        int e = store_err(rc);
        return e ? e : TFTAP_ESTORE;
    }
    return 0;
}

int store_scrub(store *s)
{
    if (sdb_is_pg(s->db))
        return 0;
    /* secure_delete zeroes what a row held when it is rewritten, but a page
     * SQLite rebuilds (rows moved to make room) keeps its old bytes in its
     * unused space: only a rewrite of the whole file (VACUUM) drops them.
     * Past a size that would hold the user up too long, said instead. */
    int64_t pages = store_pragma_int(s->db, "PRAGMA page_count");
    int64_t page = store_pragma_int(s->db, "PRAGMA page_size");
    int vacuumed = pages >= 0 && page > 0 && pages * page <= STORE_SCRUB_VACUUM_MAX &&
                   sdb_exec(s->db, "VACUUM") == SDB_OK;
    /* Every page's last image into the file, then the log emptied: what
     * the recorders wrote before the redaction is in neither. */
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", &q);
    if (rc != SDB_OK)
        return store_err(rc);
    rc = sdb_step(q);
    int busy = rc == SDB_ROW && sdb_column_int(q, 0) != 0;
    sdb_finalize(q);
    if (rc != SDB_ROW)
        return store_err(rc);
    return busy ? 1 : vacuumed ? 0 : 2;
}
