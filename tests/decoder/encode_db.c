/* encode_db DB: the decoder's inverse over every raw message a real run
 * recorded (tftap run --keep-raw --record-sensitive; tests/e2e/encode.sh).
 * Each message is decoded with its process's schema, encoded back
 * (dec_message_from_json) and decoded again: the JSON must be the same but
 * for the reduced forms docs/replay.md lists, and a message without reduced
 * forms must come back byte for byte. Prints one line per failure and a
 * summary; exit 0 only when every message passed and there were some. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"

#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static int is_private(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    return n && (strcmp(key, "private") == 0 || (n > 8 && strcmp(key + n - 8, "_private") == 0));
}

/* As test_encode.c: the JSON replay gives back for a rendered message. */
static void write_reduced(const sj_node *n, const char *key, tftap_buf *o, int *reduced)
{
    if (n->kind == SJ_OBJECT && (sj_get(n, "$undecoded") || sj_get(n, "$error"))) {
        tftap_buf_puts(o, "null");
        *reduced = 1;
    } else if (sj_is_sensitive(n)) {
        tftap_buf_puts(o, "{\"$sensitive\":\"\"}"); /* equal whatever the hash */
    } else if (n->kind == SJ_OBJECT && is_private(key) && sj_get(n, "size")) {
        const sj_node *size = sj_get(n, "size");
        if (size->kind != SJ_NUMBER || strcmp(size->str, "0") != 0)
            *reduced = 1;
        tftap_buf_puts(o, "{\"size\":0,\"sha256\":\"" SHA256_EMPTY "\"}");
    } else if (n->kind == SJ_OBJECT || n->kind == SJ_ARRAY) {
        int first = 1;
        tftap_buf_putc(o, n->kind == SJ_OBJECT ? '{' : '[');
        for (const sj_node *c = n->child; c; c = c->next) {
            if (n->kind == SJ_OBJECT && strcmp(c->key, "$unknown_fields") == 0) {
                *reduced = 1;
                continue;
            }
            if (!first)
                tftap_buf_putc(o, ',');
            first = 0;
            if (n->kind == SJ_OBJECT) {
                tftap_buf_json_string(o, c->key, c->key_len);
                tftap_buf_putc(o, ':');
            }
            write_reduced(c, n->kind == SJ_OBJECT ? c->key : NULL, o, reduced);
        }
        tftap_buf_putc(o, n->kind == SJ_OBJECT ? '}' : ']');
    } else {
        sj_write(n, o);
    }
}

static char *reduce(const char *json, int *reduced)
{
    sj_doc *d = NULL;
    tftap_buf out = TFTAP_BUF_INIT;
    if (json && sj_parse(json, strlen(json), 0, &d) == 0)
        write_reduced(sj_root(d), NULL, &out, reduced);
    sj_free(d);
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

static void fake_redact(void *ctx, const char *json, size_t len, char out[65])
{
    (void)ctx;
    tftap_sha256_hex(json, len, out);
}

static char *render_opts(const char *method, int is_response, const void *p, size_t n,
                         const dec_schema *s, const char *type_name, int redact)
{
    tftap_buf out = TFTAP_BUF_INIT;
    dec_error err = DEC_ERROR_INIT;
    dec_opts opts = {.redact = redact ? fake_redact : NULL};
    int rc = dec_message_to_json(method, is_response, p, n, s, type_name, &opts, &out, &err);
    dec_error_done(&err);
    if (rc) {
        tftap_buf_done(&out);
        return NULL;
    }
    tftap_buf_cstr(&out);
    return tftap_buf_take(&out, NULL);
}

static char *render(const char *method, int is_response, const void *p, size_t n,
                    const dec_schema *s, const char *type_name)
{
    return render_opts(method, is_response, p, n, s, type_name, 0);
}

static dec_schema *load_schema(sqlite3_stmt *st, int col)
{
    int protocol = sqlite3_column_int(st, col);
    const void *sraw = sqlite3_column_blob(st, col + 1);
    size_t sn = (size_t)sqlite3_column_bytes(st, col + 1);
    const void *iraw = sqlite3_column_blob(st, col + 2);
    size_t in = (size_t)sqlite3_column_bytes(st, col + 2);
    dec_schema *s = NULL;
    dec_error err = DEC_ERROR_INIT;
    if (sraw && dec_schema_from_provider_schema(protocol, sraw, sn, NULL, &s, &err) == 0 && iraw)
        dec_schema_add_identities(s, protocol, iraw, in, &err);
    dec_error_done(&err);
    return s;
}

/* The stored JSON of unary calls (what replay answers from, redacted unless
 * the run kept sensitive values) must encode, and decode again to the same
 * JSON but for the reduced forms. */
static size_t stored_json(sqlite3 *db, size_t *failed)
{
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT c.id, c.method, c.type_name, sc.protocol, sc.raw, idn.raw, "
                      "c.request_json, c.response_json FROM calls c "
                      "JOIN processes p ON p.id = c.process_id "
                      "LEFT JOIN schemas sc ON sc.sha256 = p.schema_sha256 "
                      "LEFT JOIN schemas idn ON idn.sha256 = p.identity_sha256 "
                      "WHERE c.stream = 0 ORDER BY c.id";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        printf("FAIL stored json: %s\n", sqlite3_errmsg(db));
        (*failed)++;
        return 0;
    }
    size_t total = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long call = sqlite3_column_int64(st, 0);
        const char *method = (const char *)sqlite3_column_text(st, 1);
        const char *type_name = (const char *)sqlite3_column_text(st, 2);
        dec_schema *s = load_schema(st, 3);
        for (int dir = 0; dir < 2; dir++) {
            const char *json = (const char *)sqlite3_column_text(st, 6 + dir);
            /* Not a rendered message: schemas by hash, unknown methods. */
            if (!json || strncmp(json, "{\"$", 3) == 0)
                continue;
            total++;
            tftap_buf pb = TFTAP_BUF_INIT;
            dec_error err = DEC_ERROR_INIT;
            int rc = dec_message_from_json(method, dir, type_name, json, strlen(json), s, NULL, &pb,
                                           &err);
            /* A run that kept sensitive values stored them as they were. */
            int redacted = strstr(json, "{\"$sensitive\":") != NULL;
            char *j2 = rc ? NULL
                          : render_opts(method, dir, pb.data ? pb.data : "", pb.len, s, type_name,
                                        redacted);
            int reduced = 0;
            char *r1 = reduce(json, &reduced), *r2 = j2 ? reduce(j2, &reduced) : NULL;
            if (rc) {
                printf("FAIL call %lld %s %s: encode: %s: %s\n", call, method,
                       dir ? "response" : "request", err.path ? err.path : "",
                       err.reason ? err.reason : "?");
                (*failed)++;
            } else if (!r2 || strcmp(r1, r2) != 0) {
                printf("FAIL call %lld %s %s (stored): round trip differs\n  first:  %s\n  "
                       "second: %s\n",
                       call, method, dir ? "response" : "request", r1,
                       r2 ? r2 : "(does not decode)");
                (*failed)++;
            }
            dec_error_done(&err);
            tftap_buf_done(&pb);
            free(j2);
            free(r1);
            free(r2);
        }
        dec_schema_free(s);
    }
    sqlite3_finalize(st);
    return total;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: encode_db DB\n");
        return 2;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "encode_db: cannot open %s\n", argv[1]);
        return 2;
    }
    sqlite3_busy_timeout(db, 10000);
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT c.id, m.seq, c.method, m.direction, c.type_name, sc.protocol, "
                      "sc.raw, idn.raw, m.raw FROM messages m JOIN calls c ON c.id = m.call_id "
                      "JOIN processes p ON p.id = c.process_id "
                      "LEFT JOIN schemas sc ON sc.sha256 = p.schema_sha256 "
                      "LEFT JOIN schemas idn ON idn.sha256 = p.identity_sha256 "
                      "ORDER BY c.id, m.seq";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "encode_db: %s\n", sqlite3_errmsg(db));
        sqlite3_close(db);
        return 2;
    }
    size_t total = 0, failed = 0, byte_equal = 0, reduced_n = 0, no_decode = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long call = sqlite3_column_int64(st, 0), seq = sqlite3_column_int64(st, 1);
        const char *method = (const char *)sqlite3_column_text(st, 2);
        int is_response = strcmp((const char *)sqlite3_column_text(st, 3), "response") == 0;
        const char *type_name = (const char *)sqlite3_column_text(st, 4);
        const void *raw = sqlite3_column_blob(st, 8);
        size_t n = (size_t)sqlite3_column_bytes(st, 8);
        dec_schema *s = load_schema(st, 5);
        dec_error err = DEC_ERROR_INIT;
        char *j1 = render(method, is_response, raw ? raw : "", n, s, type_name);
        if (!j1) {
            no_decode++; /* a method the decoder does not know: not ours to invert */
            dec_schema_free(s);
            continue;
        }
        total++;
        tftap_buf pb = TFTAP_BUF_INIT;
        int rc = dec_message_from_json(method, is_response, type_name, j1, strlen(j1), s, NULL, &pb,
                                       &err);
        char *j2 =
            rc ? NULL : render(method, is_response, pb.data ? pb.data : "", pb.len, s, type_name);
        int reduced = 0, reduced2 = 0;
        char *r1 = reduce(j1, &reduced), *r2 = j2 ? reduce(j2, &reduced2) : NULL;
        int same_bytes = !rc && pb.len == n && (n == 0 || memcmp(pb.data, raw, n) == 0);
        if (rc) {
            printf("FAIL call %lld msg %lld %s: encode: %s: %s\n", call, seq, method,
                   err.path ? err.path : "", err.reason ? err.reason : "?");
            failed++;
        } else if (!r2 || strcmp(r1, r2) != 0) {
            printf("FAIL call %lld msg %lld %s: round trip differs\n  first:  %s\n  second: %s\n",
                   call, seq, method, r1, r2 ? r2 : "(does not decode)");
            failed++;
        } else if (!reduced && !same_bytes) {
            printf("FAIL call %lld msg %lld %s: bytes differ (%zu recorded, %zu encoded)\n", call,
                   seq, method, n, pb.len);
            failed++;
        }
        byte_equal += (size_t)same_bytes;
        reduced_n += (size_t)reduced;
        dec_error_done(&err);
        tftap_buf_done(&pb);
        free(j1);
        free(j2);
        free(r1);
        free(r2);
        dec_schema_free(s);
    }
    sqlite3_finalize(st);
    size_t stored = stored_json(db, &failed);
    sqlite3_close(db);
    printf("encode_db: %zu raw messages, %zu byte-equal, %zu with reduced forms (%zu not "
           "decodable); %zu stored JSON messages; %zu failed\n",
           total, byte_equal, reduced_n, no_decode, stored, failed);
    return failed == 0 && total + stored > 0 ? 0 : 1;
}
