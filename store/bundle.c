/* store: bundles, one run copied into a file of its own to hand to someone
 * else (tftap bundle): the same schema as any database, so every reader
 * works on it, with secrets keyed afresh and nothing of the recording host. */
#include "store/store_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "decoder/decoder.h"

int store_file_is_bundle(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? TFTAP_ENOTFOUND : TFTAP_EIO;
    /* Through SQLite, never open()/close() of our own: closing any
     * descriptor of a file drops every POSIX lock this process holds on it,
     * those of a connection already open included; SQLite's own VFS shares
     * one per file and keeps them. */
    sdb *db = NULL;
    sdb_stmt *q = NULL;
    int is = 0;
    if (sdb_open(path, SDB_OPEN_READONLY, &db) == SDB_OK &&
        sdb_prepare(db, "PRAGMA application_id", &q) == SDB_OK && sdb_step(q) == SDB_ROW)
        is = (uint32_t)sdb_column_int64(q, 0) == STORE_BUNDLE_APPLICATION_ID;
    sdb_finalize(q);
    sdb_close(db);
    return is;
}

/* One provider process of the run and the schema its values decode with. */
struct bproc {
    int64_t id;
    dec_schema *schema;
};

struct bundle {
    store *src;
    sdb *dst;
    int64_t run_id;
    store_bundle_info *info;
    unsigned char fresh[32];              /* the bundle's key: made here, never stored */
    unsigned char src_key[STORE_KEY_LEN]; /* the source's: keys values it holds in clear */
    struct bproc *procs;
    size_t nprocs;
};

/* A sensitive value seen while copying: an already redacted one is
 * {"$sensitive":"hmac-sha256:X"} (X keyed by the source database), one
 * recorded in clear is keyed as the recorder would have keyed it; either
 * way the bundle holds HMAC(fresh, X), so equal secrets stay equal inside
 * the bundle and cannot be matched with anything outside it. */
static void rekey(void *ctx, const char *json, size_t len, char out[65])
{
    struct bundle *b = ctx;
    static const char pre[] = "{\"$sensitive\":\"hmac-sha256:";
    const size_t pl = sizeof pre - 1;
    char inner[65];
    int redacted =
        len == pl + 64 + 2 && memcmp(json, pre, pl) == 0 && memcmp(json + pl + 64, "\"}", 2) == 0;
    for (size_t i = 0; redacted && i < 64; i++)
        redacted = tftap_hex_digit((unsigned char)json[pl + i]) >= 0;
    if (redacted) {
        memcpy(inner, json + pl, 64);
        inner[64] = '\0';
    } else {
        tftap_hmac_sha256_hex(b->src_key, sizeof b->src_key, json, len, inner);
        b->info->rekeyed_clear++;
    }
    tftap_hmac_sha256_hex(b->fresh, sizeof b->fresh, inner, 64, out);
    b->info->redacted++;
}

static void info_why(store_bundle_info *info, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void info_why(store_bundle_info *info, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(info->why, sizeof info->why, fmt, ap);
    va_end(ap);
}

/* A path shows where and whose a machine is: a bundle keeps the command
 * words ("apply", "-auto-approve", "-input=false", "tfplan") and replaces
 * any other argument (paths, -var values, anything unusual) by "<redacted>". */
static int plain_word(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return !(n >= 2 && s[0] == '.' && s[1] == '.');
}

static void strip_args(const char *args_json, tftap_buf *out)
{
    sj_doc *doc = NULL;
    tftap_buf_putc(out, '[');
    if (args_json && sj_parse(args_json, strlen(args_json), 8, &doc) == 0 &&
        sj_root(doc)->kind == SJ_ARRAY) {
        int first = 1;
        for (const sj_node *a = sj_root(doc)->child; a; a = a->next) {
            if (!first)
                tftap_buf_putc(out, ',');
            first = 0;
            const char *s = a->kind == SJ_STRING ? a->str : "";
            size_t n = a->kind == SJ_STRING ? a->len : 0;
            const char *eq = memchr(s, '=', n);
            if (plain_word(s, n)) {
                tftap_buf_json_string(out, s, n);
            } else if (n > 1 && s[0] == '-' && eq && plain_word(s, (size_t)(eq - s)) &&
                       plain_word(eq + 1, n - (size_t)(eq + 1 - s))) {
                tftap_buf_json_string(out, s, n); /* -input=false, -parallelism=4 */
            } else if (n > 1 && s[0] == '-' && eq && plain_word(s, (size_t)(eq - s))) {
                tftap_buf w = TFTAP_BUF_INIT;
                tftap_buf_printf(&w, "%.*s<redacted>", (int)(eq + 1 - s), s);
                if (tftap_buf_failed(&w))
                    out->failed = 1;
                else
                    tftap_buf_json_string(out, w.data, w.len);
                tftap_buf_done(&w);
            } else {
                tftap_buf_puts(out, "\"<redacted>\"");
            }
        }
    }
    tftap_buf_putc(out, ']');
    sj_free(doc);
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : (p ? p : "");
}

static int copy_run(struct bundle *b)
{
    sdb_stmt *q = NULL, *ins = NULL;
    tftap_buf args = TFTAP_BUF_INIT;
    int rc = sdb_prepare(b->src->db,
                         "SELECT id, command, args, cli_name, cli_version, started_us, "
                         "ended_us, exit_code FROM runs WHERE id = ?",
                         &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(b->dst,
                         "INSERT INTO runs (id, command, args, cwd, cli_name, cli_version, "
                         "started_us, ended_us, exit_code) VALUES (?, ?, ?, NULL, ?, ?, ?, "
                         "?, ?)",
                         &ins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, b->run_id);
    rc = sdb_step(q);
    if (rc != SDB_ROW) {
        rc = rc == SDB_DONE ? SDB_NOTFOUND : rc;
        goto done;
    }
    strip_args(store_col_text(q, 2), &args);
    if (tftap_buf_failed(&args)) {
        rc = SDB_NOMEM;
        goto done;
    }
    sdb_bind_int64(ins, 1, sdb_column_int64(q, 0));
    sdb_bind_text(ins, 2, base_name(store_col_text(q, 1)), -1, SDB_TRANSIENT);
    sdb_bind_text(ins, 3, args.data, (int)args.len, SDB_STATIC);
    for (int i = 3; i < 8; i++)
        sdb_bind_column(ins, i + 1, q, i);
    rc = sdb_step(ins);
    rc = rc == SDB_DONE ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    tftap_buf_done(&args);
    return rc;
}

static int copy_schema(struct bundle *b, const char *sha)
{
    sdb_stmt *ins = NULL;
    int rc = sdb_prepare(b->dst,
                         "INSERT OR IGNORE INTO schemas (sha256, kind, provider, protocol, "
                         "encoding, size, raw, first_seen_us) SELECT ?, ?, ?, ?, ?, ?, ?, ?",
                         &ins);
    sdb_stmt *q = NULL;
    if (rc == SDB_OK)
        rc = sdb_prepare(b->src->db,
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
        if (rc == SDB_DONE && sdb_changes(b->dst))
            b->info->schemas++;
    }
    rc = rc == SDB_DONE || rc == SDB_ROW ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

/* The schema a process decoded with, for finding its sensitive values;
 * NULL when none was recorded (then only already redacted values can be
 * copied safely). */
static dec_schema *load_schema(struct bundle *b, const char *sha, const char *identity_sha,
                               int protocol)
{
    dec_schema *s = NULL;
    sdb_stmt *q = NULL;
    if (!sha || sdb_prepare(b->src->db, "SELECT raw FROM schemas WHERE sha256 = ?", &q) != SDB_OK)
        return NULL;
    sdb_bind_text(q, 1, sha, -1, SDB_STATIC);
    if (sdb_step(q) == SDB_ROW) {
        dec_error e = DEC_ERROR_INIT;
        if (dec_schema_from_provider_schema(protocol, sdb_column_blob(q, 0),
                                            (size_t)sdb_column_bytes(q, 0), NULL, &s, &e))
            s = NULL;
        dec_error_done(&e);
    }
    if (s && identity_sha) {
        sdb_reset(q);
        sdb_bind_text(q, 1, identity_sha, -1, SDB_STATIC);
        if (sdb_step(q) == SDB_ROW) {
            dec_error e = DEC_ERROR_INIT;
            dec_schema_add_identities(s, protocol, sdb_column_blob(q, 0),
                                      (size_t)sdb_column_bytes(q, 0), &e);
            dec_error_done(&e);
        }
    }
    sdb_finalize(q);
    return s;
}

static int copy_processes(struct bundle *b)
{
    sdb_stmt *q = NULL, *ins = NULL;
    int rc = sdb_prepare(b->src->db,
                         "SELECT id, provider, version, protocol, binary_sha256, "
                         "schema_sha256, schema_source, identity_sha256, started_us, "
                         "ended_us, dropped FROM processes WHERE run_id = ? ORDER BY id",
                         &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(b->dst,
                         "INSERT INTO processes (id, run_id, provider, version, protocol, "
                         "binary_sha256, schema_sha256, schema_source, identity_sha256, "
                         "started_us, ended_us, dropped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                         "?, ?, ?)",
                         &ins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, b->run_id);
    while ((rc = sdb_step(q)) == SDB_ROW) {
        const char *sha = store_col_text(q, 5), *idsha = store_col_text(q, 7);
        if ((sha && (rc = copy_schema(b, sha)) != SDB_OK) ||
            (idsha && (rc = copy_schema(b, idsha)) != SDB_OK))
            goto done;
        struct bproc *np = realloc(b->procs, (b->nprocs + 1) * sizeof *np);
        if (!np) {
            rc = SDB_NOMEM;
            goto done;
        }
        b->procs = np;
        b->procs[b->nprocs].id = sdb_column_int64(q, 0);
        b->procs[b->nprocs].schema = load_schema(b, sha, idsha, sdb_column_int(q, 3));
        b->nprocs++;
        sdb_reset(ins);
        sdb_bind_int64(ins, 1, sdb_column_int64(q, 0));
        sdb_bind_int64(ins, 2, b->run_id);
        for (int i = 1; i < 11; i++)
            sdb_bind_column(ins, i + 2, q, i);
        rc = sdb_step(ins);
        if (rc != SDB_DONE)
            goto done;
        b->info->processes++;
    }
    rc = rc == SDB_DONE ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

static const dec_schema *proc_schema(struct bundle *b, int64_t process_id)
{
    for (size_t i = 0; i < b->nprocs; i++)
        if (b->procs[i].id == process_id)
            return b->procs[i].schema;
    return NULL;
}

/* One call's request or response JSON as the bundle stores it. */
static int redact_json(struct bundle *b, sdb_stmt *ins, int col, int64_t call_id,
                       const char *method, int is_response, const char *json,
                       const dec_schema *schema, const char *type_name)
{
    if (!json) {
        sdb_bind_null(ins, col);
        return SDB_OK;
    }
    dec_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.redact = rekey;
    opts.redact_ctx = b;
    tftap_buf out = TFTAP_BUF_INIT;
    dec_error e = DEC_ERROR_INIT;
    int rc = dec_message_json_redact(method, is_response, json, strlen(json), schema, type_name,
                                     &opts, &out, &e);
    int src = SDB_OK;
    if (rc == 0) {
        sdb_bind_text(ins, col, out.data ? out.data : "", (int)out.len, SDB_TRANSIENT);
    } else if (rc == TFTAP_EDECODE || rc == TFTAP_ELIMIT) {
        /* Not JSON we can read: nothing tells what is secret in it. */
        sdb_bind_null(ins, col);
        b->info->dropped_json++;
    } else if (rc == TFTAP_ENOMEM) {
        src = SDB_NOMEM;
    } else {
        info_why(b->info, "call %lld (%s %s): %s", (long long)call_id, store_rpc_name(method),
                 is_response ? "response" : "request", e.reason ? e.reason : "cannot redact");
        src = SDB_CONSTRAINT;
    }
    dec_error_done(&e);
    tftap_buf_done(&out);
    return src;
}

static int copy_calls(struct bundle *b)
{
    sdb_stmt *q = NULL, *ins = NULL;
    int rc = sdb_prepare(
        b->src->db,
        "SELECT id, process_id, call_seq, method, rpc, stream, started_us, ended_us, status_code, "
        "status_message, request_bytes, response_bytes, request_count, response_count, type_name, "
        "decode_error, schema_sha256, address, address_note, request_json, response_json, "
        "(SELECT count(*) FROM messages m WHERE m.call_id = calls.id) "
        "FROM calls WHERE run_id = ? ORDER BY id",
        &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(
            b->dst,
            "INSERT INTO calls (id, process_id, call_seq, method, rpc, stream, started_us, "
            "ended_us, status_code, status_message, request_bytes, response_bytes, request_count, "
            "response_count, type_name, decode_error, schema_sha256, address, address_note, "
            "request_json, response_json, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?)",
            &ins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, b->run_id);
    while ((rc = sdb_step(q)) == SDB_ROW) {
        sdb_reset(ins);
        for (int i = 0; i < 19; i++)
            sdb_bind_column(ins, i + 1, q, i);
        int64_t id = sdb_column_int64(q, 0);
        const char *method = store_col_text(q, 3), *type_name = store_col_text(q, 14);
        const dec_schema *schema = proc_schema(b, sdb_column_int64(q, 1));
        rc = redact_json(b, ins, 20, id, method, 0, store_col_text(q, 19), schema, type_name);
        if (rc == SDB_OK)
            rc = redact_json(b, ins, 21, id, method, 1, store_col_text(q, 20), schema, type_name);
        if (rc != SDB_OK)
            goto done;
        sdb_bind_int64(ins, 22, b->run_id);
        b->info->raw_messages += sdb_column_int64(q, 21);
        rc = sdb_step(ins);
        if (rc != SDB_DONE)
            goto done;
        b->info->calls++;
    }
    rc = rc == SDB_DONE ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

static int copy_gaps(struct bundle *b)
{
    sdb_stmt *q = NULL, *ins = NULL;
    int rc = sdb_prepare(b->src->db,
                         "SELECT id, run_id, process_id, lost, recorded_us, reason FROM "
                         "gaps WHERE run_id = ?1 OR process_id IN (SELECT id FROM "
                         "processes WHERE run_id = ?1) ORDER BY id",
                         &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(b->dst,
                         "INSERT INTO gaps (id, run_id, process_id, lost, recorded_us, "
                         "reason) VALUES (?, ?, ?, ?, ?, ?)",
                         &ins);
    if (rc != SDB_OK)
        goto done;
    sdb_bind_int64(q, 1, b->run_id);
    while ((rc = sdb_step(q)) == SDB_ROW) {
        sdb_reset(ins);
        for (int i = 0; i < 6; i++)
            sdb_bind_column(ins, i + 1, q, i);
        rc = sdb_step(ins);
        if (rc != SDB_DONE)
            goto done;
        b->info->gaps++;
    }
    rc = rc == SDB_DONE ? SDB_OK : rc;
done:
    sdb_finalize(q);
    sdb_finalize(ins);
    return rc;
}

/* The source database's own key, for keying a value it holds in clear as
 * its recorder keyed the redacted ones: a store opened read only (a FILE
 * operand) was given no key, and a zero key would make a secret recorded
 * in clear (stored state in an older database) and the same secret
 * redacted hash differently in the bundle. None (a bundle as the source,
 * which holds nothing in clear): zeros. */
static int source_key(store *s, unsigned char key[STORE_KEY_LEN])
{
    static const unsigned char zero[STORE_KEY_LEN];
    memcpy(key, s->key, STORE_KEY_LEN);
    if (memcmp(key, zero, sizeof zero) != 0)
        return SDB_OK;
    sdb_stmt *q = NULL;
    int rc = sdb_prepare(s->db, "SELECT key FROM secret_key WHERE id = 1", &q);
    if (rc == SDB_OK) {
        rc = sdb_step(q);
        if (rc == SDB_ROW && sdb_column_bytes(q, 0) == STORE_KEY_LEN)
            memcpy(key, sdb_column_blob(q, 0), STORE_KEY_LEN);
        rc = rc == SDB_ROW || rc == SDB_DONE ? SDB_OK : rc;
    }
    sdb_finalize(q);
    return rc;
}

int store_bundle_write(store *s, int64_t run_id, const char *path, store_bundle_info *info)
{
    memset(info, 0, sizeof *info);
    if (!s || !path || !*path)
        return TFTAP_EINVAL;
    struct bundle b = {.src = s, .run_id = run_id, .info = info};
    if (RAND_bytes(b.fresh, sizeof b.fresh) != 1)
        return TFTAP_EIO;
    if (source_key(s, b.src_key) != SDB_OK) {
        info_why(info, "%s", sdb_errmsg(s->db));
        OPENSSL_cleanse(b.fresh, sizeof b.fresh);
        return TFTAP_ESTORE;
    }
    /* Written beside its name and renamed at the end: a bundle that exists
     * is complete. */
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    if (!tmp)
        return TFTAP_ENOMEM;
    snprintf(tmp, pl + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return TFTAP_EIO;
    }
    fchmod(fd, 0600);
    close(fd);
    unsigned char key[STORE_KEY_LEN];
    int err = store_db_open(tmp, 0, &b.dst, key);
    OPENSSL_cleanse(key, sizeof key);
    int rc = SDB_OK;
    if (err)
        goto out;
    /* Nothing deleted may linger in free pages. */
    store_exec(b.dst, "PRAGMA secure_delete=ON");
    rc = store_begin(b.dst, 0);
    if (rc == SDB_OK)
        rc = store_exec(b.dst, "DELETE FROM secret_key");
    if (rc == SDB_OK)
        rc = copy_run(&b);
    if (rc == SDB_OK)
        rc = copy_processes(&b);
    if (rc == SDB_OK)
        rc = copy_calls(&b);
    if (rc == SDB_OK)
        rc = copy_gaps(&b);
    if (rc == SDB_OK) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA application_id = %ld", (long)STORE_BUNDLE_APPLICATION_ID);
        rc = store_exec(b.dst, sql);
    }
    if (rc == SDB_OK)
        rc = store_commit(b.dst, 0);
    else
        store_rollback(b.dst);
    /* One file, no -wal beside it, its pages rewritten. */
    if (rc == SDB_OK)
        rc = store_exec(b.dst, "PRAGMA journal_mode=DELETE");
    if (rc == SDB_OK)
        rc = store_exec(b.dst, "VACUUM");
    if (rc == SDB_NOTFOUND)
        err = TFTAP_ENOTFOUND;
    else if (rc == SDB_CONSTRAINT && info->why[0])
        err = TFTAP_EDECODE;
    else if (rc != SDB_OK) {
        if (!info->why[0])
            info_why(info, "%s", sdb_errmsg(b.dst));
        err = store_err(rc);
        if (!err)
            err = TFTAP_ESTORE;
    }
out:
    sdb_close(b.dst);
    for (size_t i = 0; i < b.nprocs; i++)
        dec_schema_free(b.procs[i].schema);
    free(b.procs);
    OPENSSL_cleanse(b.fresh, sizeof b.fresh);
    OPENSSL_cleanse(b.src_key, sizeof b.src_key);
    if (!err && rename(tmp, path) != 0)
        err = TFTAP_EIO;
    if (err) {
        int saved = errno;
        unlink(tmp);
        size_t tl = strlen(tmp);
        char *side = malloc(tl + 8);
        if (side) {
            snprintf(side, tl + 8, "%s-wal", tmp);
            unlink(side);
            snprintf(side, tl + 8, "%s-shm", tmp);
            unlink(side);
            free(side);
        }
        errno = saved;
    }
    free(tmp);
    return err;
}
