/* store: bundles, one run copied into a file of its own to hand to someone
 * else (tftap bundle): the same schema as any database, so every reader
 * works on it, with secrets keyed afresh and nothing of the recording host. */
#include "store/copy.h"

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

/* One provider process of the run and the schema its values decode with. */
struct bproc {
    int64_t id;
    dec_schema *schema;
};

struct bundle {
    store *src;
    store_bundle_info *info;
    tftap_buf args;                       /* the run's args as the bundle stores them */
    unsigned char fresh[32];              /* the bundle's key: made here, never stored */
    unsigned char src_key[STORE_KEY_LEN]; /* the source's: keys values it holds in clear */
    struct bproc *procs;
    size_t nprocs;
    /* A run whose values were kept in clear: the hashes (source key) of
     * the strings core marked secret in it, sorted, found by value. */
    char (*secrets)[65];
    size_t nsecrets;
    tftap_buf text; /* scratch */
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

static int secret_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static int add_secret(void *ctx, const char *hmac)
{
    struct bundle *b = ctx;
    if (!hmac || strlen(hmac) != 64)
        return 0;
    char(*v)[65] = realloc(b->secrets, (b->nsecrets + 1) * sizeof *v);
    if (!v)
        return TFTAP_ENOMEM;
    b->secrets = v;
    memcpy(b->secrets[b->nsecrets++], hmac, 65);
    return 0;
}

/* A string equal to one of the run's secrets (the same hash). */
static int is_secret(void *ctx, const char *str, size_t n)
{
    struct bundle *b = ctx;
    char hex[65];
    tftap_buf_reset(&b->text);
    tftap_buf_json_string(&b->text, str, n);
    if (tftap_buf_failed(&b->text))
        return 1; /* cannot tell: hidden */
    tftap_hmac_sha256_hex(b->src_key, sizeof b->src_key, b->text.data, b->text.len, hex);
    return bsearch(hex, b->secrets, b->nsecrets, sizeof *b->secrets, secret_cmp) != NULL;
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

/* The command's name without its path, plain argument words only. */
static const char *run_args(void *ctx, const char *value, int which)
{
    struct bundle *b = ctx;
    if (which == 0)
        return base_name(value);
    tftap_buf_reset(&b->args);
    strip_args(value, &b->args);
    return tftap_buf_failed(&b->args) ? "[]" : tftap_buf_cstr(&b->args);
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

static int on_process(void *ctx, int64_t src_id, const char *sha, const char *idsha, int protocol)
{
    struct bundle *b = ctx;
    struct bproc *np = realloc(b->procs, (b->nprocs + 1) * sizeof *np);
    if (!np)
        return SDB_NOMEM;
    b->procs = np;
    b->procs[b->nprocs].id = src_id;
    b->procs[b->nprocs].schema = load_schema(b, sha, idsha, protocol);
    b->nprocs++;
    return SDB_OK;
}

static const dec_schema *proc_schema(struct bundle *b, int64_t process_id)
{
    for (size_t i = 0; i < b->nprocs; i++)
        if (b->procs[i].id == process_id)
            return b->procs[i].schema;
    return NULL;
}

/* One call's request or response JSON as the bundle stores it. */
static int redact_json(void *ctx, int64_t call_id, int64_t process_id, const char *method,
                       int is_response, const char *json, const char *type_name, tftap_buf *out,
                       int *is_null)
{
    struct bundle *b = ctx;
    const dec_schema *schema = proc_schema(b, process_id);
    *is_null = 0;
    if (!json) {
        *is_null = 1;
        return SDB_OK;
    }
    dec_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.redact = rekey;
    opts.redact_ctx = b;
    dec_error e = DEC_ERROR_INIT;
    int rc = dec_message_json_redact(method, is_response, json, strlen(json), schema, type_name,
                                     &opts, out, &e);
    if (rc == 0 && b->nsecrets > 0) {
        /* What core marked in a run that kept its values: by value, the
         * paths are not kept. */
        sj_doc *doc = NULL;
        tftap_buf again = TFTAP_BUF_INIT;
        int64_t counts[2] = {0, 0};
        sj_redactor r = {.secret = is_secret, .mac = rekey, .ctx = b};
        rc = sj_parse(out->data ? out->data : "", out->len, 0, &doc);
        if (rc == 0)
            rc = sj_redact(sj_root(doc), &r, &again, counts);
        sj_free(doc);
        if (rc == 0) {
            tftap_buf_reset(out);
            tftap_buf_append(out, again.data ? again.data : "", again.len);
            b->info->known_secret += counts[SJ_REDACT_EQUAL];
        }
        tftap_buf_done(&again);
    }
    int src = SDB_OK;
    if (rc == TFTAP_EDECODE || rc == TFTAP_ELIMIT) {
        /* Not JSON we can read: nothing tells what is secret in it. */
        *is_null = 1;
        b->info->dropped_json++;
    } else if (rc == TFTAP_ENOMEM) {
        src = SDB_NOMEM;
    } else if (rc != 0) {
        info_why(b->info, "call %lld (%s %s): %s", (long long)call_id, store_rpc_name(method),
                 is_response ? "response" : "request", e.reason ? e.reason : "cannot redact");
        src = SDB_CONSTRAINT;
    }
    dec_error_done(&e);
    return src;
}

int store_bundle_write(store *s, int64_t run_id, const char *path, store_bundle_info *info)
{
    memset(info, 0, sizeof *info);
    if (!s || !path || !*path)
        return TFTAP_EINVAL;
    struct bundle b = {.src = s, .info = info, .args = TFTAP_BUF_INIT, .text = TFTAP_BUF_INIT};
    if (RAND_bytes(b.fresh, sizeof b.fresh) != 1)
        return TFTAP_EIO;
    /* Without a key of its own (a bundle as the source, which holds
     * nothing in clear): zeros. */
    if (store_source_key(s, b.src_key) < 0) {
        info_why(info, "%s", sdb_errmsg(s->db));
        OPENSSL_cleanse(b.fresh, sizeof b.fresh);
        return TFTAP_ESTORE;
    }
    int kept = 0;
    tftap_buf counts = TFTAP_BUF_INIT;
    int qrc = store_run_values_kept(s, run_id, &kept);
    if (qrc == 0 && kept)
        qrc = store_run_secrets_each(s, run_id, add_secret, &b);
    if (qrc == 0)
        qrc = store_run_redactions(s, run_id, &counts);
    if (qrc == TFTAP_ENOTFOUND) {
        OPENSSL_cleanse(b.fresh, sizeof b.fresh);
        free(b.secrets);
        return TFTAP_ENOTFOUND;
    }
    if (qrc != 0) {
        info_why(info, "%s", sdb_errmsg(s->db));
        OPENSSL_cleanse(b.fresh, sizeof b.fresh);
        free(b.secrets);
        tftap_buf_done(&counts);
        return TFTAP_ESTORE;
    }
    if (b.nsecrets > 1)
        qsort(b.secrets, b.nsecrets, sizeof *b.secrets, secret_cmp);
    /* Redacted in the record at the run's end: counted there, by rule. */
    sj_doc *cd = NULL;
    if (counts.len > 0 && sj_parse(counts.data, counts.len, 4, &cd) == 0) {
        const sj_node *m = sj_get(sj_root(cd), "core_mark"),
                      *k = sj_get(sj_root(cd), "known_secret");
        info->core_mark = m && m->kind == SJ_NUMBER ? strtoll(m->str, NULL, 10) : 0;
        info->known_secret = k && k->kind == SJ_NUMBER ? strtoll(k->str, NULL, 10) : 0;
    }
    sj_free(cd);
    tftap_buf_done(&counts);
    /* The bundle's values are hashed with the fresh key: its id says so
     * (the key itself is never kept). */
    char key_id[STORE_KEY_ID_LEN + 1];
    store_key_id(b.fresh, key_id);
    store_copy c = {.src = s,
                    .run_id = run_id,
                    .keep_ids = 1,
                    .strip_host = 1,
                    .skip_messages = 1,
                    .key_id = key_id,
                    .ctx = &b,
                    .run_args = run_args,
                    .on_process = on_process,
                    .call_json = redact_json};
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
    int err = store_db_open(tmp, 0, &c.dst, key);
    OPENSSL_cleanse(key, sizeof key);
    int rc = SDB_OK;
    if (err)
        goto out;
    /* Nothing deleted may linger in free pages. */
    store_exec(c.dst, "PRAGMA secure_delete=ON");
    rc = store_begin(c.dst, 0);
    if (rc == SDB_OK)
        rc = store_exec(c.dst, "DELETE FROM secret_key");
    if (rc == SDB_OK)
        rc = store_copy_run(&c);
    info->processes = c.processes;
    info->calls = c.calls;
    info->gaps = c.gaps;
    info->schemas = c.schemas;
    info->raw_messages = c.skipped_messages;
    if (rc == SDB_DONE)
        rc = SDB_ERROR; /* a fresh file holds no run */
    if (rc == SDB_OK) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA application_id = %ld", (long)STORE_BUNDLE_APPLICATION_ID);
        rc = store_exec(c.dst, sql);
    }
    if (rc != SDB_OK && !info->why[0] && c.why)
        info_why(info, "%s", c.why);
    if (rc == SDB_OK)
        rc = store_commit(c.dst, 0);
    else
        store_rollback(c.dst);
    /* One file, no -wal beside it, its pages rewritten. */
    if (rc == SDB_OK)
        rc = store_exec(c.dst, "PRAGMA journal_mode=DELETE");
    if (rc == SDB_OK)
        rc = store_exec(c.dst, "VACUUM");
    if (rc == SDB_NOTFOUND)
        err = TFTAP_ENOTFOUND;
    else if (rc == SDB_CONSTRAINT && info->why[0])
        err = TFTAP_EDECODE;
    else if (rc != SDB_OK) {
        if (!info->why[0])
            info_why(info, "%s", sdb_errmsg(c.dst));
        err = store_err(rc);
        if (!err)
            err = TFTAP_ESTORE;
    }
out:
    sdb_close(c.dst);
    tftap_buf_done(&b.args);
    tftap_buf_done(&b.text);
    free(b.secrets);
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
