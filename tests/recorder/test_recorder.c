/* store: the recorder and the read side on real SQLite files in a temp
 * dir, fed real serialized protocol messages. */
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "recorder/recorder.h"
#include "store/store.h"
#include "tests/check.h"
#include "tests/store/fixtures.h"

#define M_SCHEMA "/tfplugin5.Provider/GetSchema"
#define M_PLAN "/tfplugin5.Provider/PlanResourceChange"

static char tmpdir[256];
static char db_path[400];
static char bin_a[400], bin_b[400];
static struct fx_bytes schema_a, schema_b;

/* The matching as the end of tftap run does it: addresses found, then
 * stored. */
static int match_addresses(store *s, int64_t run, const analysis_match_doc *docs, size_t n,
                           const char *missing, int *ok, int *bad)
{
    analysis_addresses a;
    int rc = analysis_match_addresses(s, run, docs, n, missing, &a);
    if (rc == 0)
        rc = store_set_addresses(s, a.v, a.n);
    *ok = rc == 0 ? a.matched : 0;
    *bad = rc == 0 ? a.unmatched : 0;
    analysis_addresses_done(&a);
    return rc;
}
static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- reading the database back ------------------------------------------ */

static int64_t scalar_at(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 10000);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        else
            fprintf(stderr, "scalar(%s): %s\n", sql, sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int64_t scalar(const char *sql)
{
    return scalar_at(db_path, sql);
}

/* The first column of the first row as a malloc'd string (NULL if none). */
static char *text_at(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 10000);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            v = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static char *text(const char *sql)
{
    return text_at(db_path, sql);
}

static int contains(const char *hay, const char *needle)
{
    return hay && strstr(hay, needle) != NULL;
}

/* Whether a file's bytes contain needle (0 if the file is missing). */
static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    int hit = memmem(buf, len, needle, strlen(needle)) != NULL;
    free(buf);
    return hit;
}

/* ---- feeding the recorder ----------------------------------------------- */

static void call(recorder *r, uint64_t id, const char *method, const struct fx_bytes *req,
                 const struct fx_bytes *resp)
{
    recorder_call_begin(r, id, method, now_us());
    recorder_message(r, id, RECORDER_REQUEST, now_us(), req ? (const void *)req->p : "",
                     req ? req->n : 0);
    if (resp)
        recorder_message(r, id, RECORDER_RESPONSE, now_us(), resp->p, resp->n);
    recorder_call_end(r, id, now_us(), 0, NULL);
}

static recorder *open_rec(int64_t run_id, const char *bin)
{
    recorder_opts o = {0};
    o.run_id = run_id;
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(db_path, &o, &r), 0);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin, 5, 4242);
    return r;
}

/* A recorder of its own database at path, its process told and its
 * schema recorded. */
static recorder *open_at(const char *path)
{
    recorder_opts o = {0};
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, 4242);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    return r;
}

static const struct fx_thing thing_alpha = {NULL, "alpha", FX_SECRET, 3, 2, NULL, NULL};

static void plan_create(recorder *r, uint64_t id, const struct fx_thing *t)
{
    struct fx_bytes req = fx_plan_request(NULL, t);
    struct fx_bytes resp = fx_plan_response(t, 0, NULL);
    call(r, id, M_PLAN, &req, &resp);
    fx_free(&req);
    fx_free(&resp);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_record_decode_redact(void)
{
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    plan_create(r, 2, &thing_alpha);

    /* A hung call shows as in flight: its row exists before it ends. */
    struct fx_bytes req = fx_plan_request(NULL, &thing_alpha);
    recorder_call_begin(r, 3, M_PLAN, now_us());
    recorder_message(r, 3, RECORDER_REQUEST, now_us(), req.p, req.n);
    int64_t in_flight = 0;
    for (int i = 0; i < 600 && in_flight < 1; i++) {
        sleep_ms(50);
        in_flight = scalar("SELECT count(*) FROM calls WHERE call_seq = 3 AND ended_us IS NULL "
                           "AND request_json IS NOT NULL");
    }
    CHECK_INT_EQ(in_flight, 1);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM v_calls WHERE in_flight"), 1);

    /* The secret is nowhere in the files while the database is live. */
    char wal[420], shm[420];
    snprintf(wal, sizeof wal, "%s-wal", db_path);
    snprintf(shm, sizeof shm, "%s-shm", db_path);
    CHECK(file_contains(wal, "alpha")); /* the scan does see recorded values */
    CHECK(!file_contains(db_path, FX_SECRET));
    CHECK(!file_contains(wal, FX_SECRET));
    CHECK(!file_contains(shm, FX_SECRET));

    recorder_call_end(r, 3, now_us(), 0, NULL);
    fx_free(&req);
    recorder_stats st;
    recorder_close(r);

    CHECK_INT_EQ(scalar("SELECT count(*) FROM runs"), 1);
    /* The run the recorder made has its identity (runs.uuid, version 4). */
    CHECK_INT_EQ(scalar("SELECT count(*) FROM runs WHERE length(uuid) = 36 AND "
                        "substr(uuid, 15, 1) = '4' AND substr(uuid, 20, 1) IN ('8', '9', 'a', "
                        "'b') AND key_id IS NULL"),
                 1);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM calls"), 3);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM calls WHERE ended_us IS NULL"), 0);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM processes WHERE schema_source = 'response' AND "
                        "provider = 'registry.opentofu.org/test/thing' AND pid = 4242 AND "
                        "protocol = 5 AND length(binary_sha256) = 64 AND ended_us IS NOT NULL"),
                 1);
    char *resp = text("SELECT response_json FROM calls WHERE call_seq = 1");
    CHECK(contains(resp, "\"$schema\""));
    free(resp);
    char *j = text("SELECT request_json FROM calls WHERE call_seq = 2");
    CHECK(contains(j, "\"name\":\"alpha\""));
    CHECK(contains(j, "{\"$sensitive\":\"hmac-sha256:"));
    CHECK(!contains(j, FX_SECRET));
    CHECK(!contains(j, "$undecoded"));
    free(j);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM calls WHERE type_name = 'test_thing'"), 2);
    /* Equal secrets compare equal through the keyed hash. */
    CHECK_INT_EQ(scalar("SELECT count(DISTINCT json_extract(request_json, "
                        "'$.config.password.\"$sensitive\"')) FROM calls WHERE call_seq IN (2, 3)"),
                 1);
    j = text("SELECT planned FROM v_resource_changes WHERE call_id = 2");
    CHECK(contains(j, "\"$unknown\""));
    CHECK(contains(j, "\"prefix\":\"thing-\""));
    free(j);
    CHECK(!file_contains(db_path, FX_SECRET));
    (void)st;
}

/* A provider quoting the schema-sensitive value of the call in its words
 * (a diagnostic, the status message): at the run's end only its hash is
 * known, so the recorder cuts it out as it decodes the call. */
static void test_quoted_secret_cut(void)
{
    char saved[sizeof db_path];
    memcpy(saved, db_path, sizeof saved);
    snprintf(db_path, sizeof db_path, "%s/quoted.db", tmpdir); /* a file of its own */
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    struct fx_bytes req = fx_plan_request(NULL, &thing_alpha);
    struct fx_bytes resp = fx_plan_response(&thing_alpha, 0, "the password " FX_SECRET " is weak");
    recorder_call_begin(r, 2, M_PLAN, now_us());
    recorder_message(r, 2, RECORDER_REQUEST, now_us(), req.p, req.n);
    recorder_message(r, 2, RECORDER_RESPONSE, now_us(), resp.p, resp.n);
    recorder_call_end(r, 2, now_us(), 3, "rejected: " FX_SECRET);
    /* Another call quotes it without carrying it: nothing to cut there. */
    struct fx_bytes plain = fx_plan_response(&thing_alpha, 0, "no secret here");
    call(r, 3, M_PLAN, &req, &plain);
    fx_free(&req);
    fx_free(&resp);
    fx_free(&plain);
    recorder_close(r);
    char *j = text("SELECT response_json FROM calls WHERE call_seq = 2 AND run_id = "
                   "(SELECT max(id) FROM runs)");
    CHECK(contains(j, "\"summary\":\"the password (sensitive value) is weak\""));
    CHECK(contains(j, "\"severity\":\"WARNING\""));
    CHECK(contains(j, "{\"$sensitive\":\"hmac-sha256:")); /* the value itself, as before */
    CHECK(!contains(j, FX_SECRET));
    free(j);
    j = text("SELECT status_message FROM calls WHERE call_seq = 2 AND run_id = "
             "(SELECT max(id) FROM runs)");
    CHECK_STR_EQ(j, "rejected: (sensitive value)");
    free(j);
    j = text("SELECT response_json FROM calls WHERE call_seq = 3 AND run_id = "
             "(SELECT max(id) FROM runs)");
    CHECK(contains(j, "\"summary\":\"no secret here\""));
    free(j);
    CHECK(!file_contains(db_path, FX_SECRET));
    memcpy(db_path, saved, sizeof saved);
}

struct schemas_seen {
    int n, protocol, has_resources;
    size_t size;
};

static int each_schema_seen(void *ctx, const store_schema_row *r)
{
    struct schemas_seen *x = ctx;
    x->n++;
    x->protocol = r->protocol;
    x->size = r->size;
    CHECK(r->sha256 && strlen(r->sha256) == 64);
    tftap_buf cli = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_schema_from_response(r->protocol, r->raw, r->size, &cli, NULL), 0);
    x->has_resources = strstr(tftap_buf_cstr(&cli), "\"resource_schemas\":{") != NULL;
    tftap_buf_done(&cli);
    return 0;
}

static void test_schema_dedup_and_borrow(void)
{
    /* A second run of the same provider asks for the same schema. */
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    plan_create(r, 2, &thing_alpha);
    recorder_close(r);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM runs"), 2);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM schemas"), 1);
    CHECK_INT_EQ(scalar("SELECT count(DISTINCT schema_sha256) FROM processes"), 1);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM processes WHERE schema_sha256 IS NULL"), 0);

    /* A third never asks (the client had it cached): same binary, so the
     * earlier recording's schema decodes its values. */
    r = open_rec(0, bin_a);
    plan_create(r, 1, &thing_alpha);
    recorder_close(r);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM processes WHERE schema_source = 'earlier'"), 1);
    char *j = text("SELECT c.request_json FROM calls c JOIN processes p ON p.id = c.process_id "
                   "WHERE p.schema_source = 'earlier'");
    CHECK(contains(j, "\"size\":3"));
    CHECK(!contains(j, "$undecoded"));
    free(j);

    /* The schema a run's process used, for tftap schema and diff: once per
     * provider and schema, whether the process asked for it or not. */
    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    struct schemas_seen seen = {0};
    int64_t last = scalar("SELECT max(id) FROM runs");
    CHECK_INT_EQ(store_schemas_each(s, last, each_schema_seen, &seen), 0);
    CHECK_INT_EQ(seen.n, 1);
    CHECK_INT_EQ(seen.protocol, 5);
    CHECK_INT_EQ((int64_t)seen.size, scalar("SELECT size FROM schemas"));
    CHECK(seen.has_resources);
    store_close(s);
}

static void test_schema_arrives_later(void)
{
    /* A different binary whose schema arrives only after a call. */
    struct fx_thing t = {"thing-7", "late", NULL, 5, 1, "eu-1", "zone"};
    recorder *r = open_rec(0, bin_b);
    plan_create(r, 1, &t);
    /* The state this tests: the call is committed first, undecoded (no
     * schema yet), and only then does the schema arrive. */
    int64_t undecoded = 0;
    for (int i = 0; i < 600 && undecoded < 1; i++) {
        sleep_ms(50);
        undecoded = scalar("SELECT count(*) FROM calls c JOIN processes p ON p.id = c.process_id "
                           "WHERE p.binary_path LIKE '%bin-b' AND c.rpc = 'PlanResourceChange' "
                           "AND c.ended_us IS NOT NULL AND c.schema_sha256 IS NULL");
    }
    CHECK_INT_EQ(undecoded, 1);
    call(r, 2, M_SCHEMA, NULL, &schema_b);
    recorder_close(r);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM schemas"), 2);
    char *j = text("SELECT c.request_json FROM calls c JOIN processes p ON p.id = c.process_id "
                   "WHERE p.binary_path LIKE '%bin-b' AND c.rpc = 'PlanResourceChange'");
    CHECK(contains(j, "\"zone\":\"eu-1\""));
    CHECK(!contains(j, "$undecoded"));
    free(j);
}

static void *close_recorder(void *r)
{
    recorder_close(r);
    return NULL;
}

static void test_schema_committed_while_closing(void)
{
    /* A short-lived process of a command that never asked for the schema
     * (the client asked another process of the same command), closing
     * before that process's recorder committed it: closing waits for it. */
    char bin_c[440];
    snprintf(bin_c, sizeof bin_c, "%s/bin-c", tmpdir);
    FILE *f = fopen(bin_c, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("provider binary C", f);
    fclose(f);
    recorder_opts o = {0};
    o.close_schema_wait_ms = 600000; /* the wait ends when the schema is there */
    recorder *late = NULL;
    CHECK_INT_EQ(recorder_open(db_path, &o, &late), 0);
    recorder_process(late, "registry.opentofu.org/test/thing", "1.0.0", bin_c, 5, 4243);
    struct fx_thing t = {"thing-9", "closing", NULL, 5, 1, "eu-2", "zone"};
    plan_create(late, 1, &t);
    int64_t undecoded = 0;
    for (int i = 0; i < 600 && undecoded < 1; i++) {
        sleep_ms(50);
        undecoded = scalar("SELECT count(*) FROM calls c JOIN processes p ON p.id = c.process_id "
                           "WHERE p.binary_path LIKE '%bin-c' AND c.rpc = 'PlanResourceChange' "
                           "AND c.ended_us IS NOT NULL AND c.schema_sha256 IS NULL");
    }
    CHECK_INT_EQ(undecoded, 1);
    pthread_t closing;
    CHECK_INT_EQ(pthread_create(&closing, NULL, close_recorder, late), 0);
    recorder *asked = open_rec(0, bin_c);
    call(asked, 1, M_SCHEMA, NULL, &schema_b);
    recorder_close(asked);
    pthread_join(closing, NULL);
    char *j = text("SELECT c.request_json FROM calls c JOIN processes p ON p.id = c.process_id "
                   "WHERE p.binary_path LIKE '%bin-c' AND c.rpc = 'PlanResourceChange'");
    CHECK(contains(j, "\"zone\":\"eu-2\""));
    CHECK(!contains(j, "$undecoded"));
    free(j);
}

/* A binary's digest is taken once per unchanged file: a later process
 * reuses what an earlier one recorded for the same device, inode, size and
 * times (hashing a provider reads tens of MB), and a file written again is
 * read again. */
static void test_binary_digest_reused(void)
{
    /* In run 1: the runs later tests and tests/store/cli.sh count stay as
     * they are. */
    recorder *r = open_rec(1, bin_b);
    recorder_close(r);
    char *real = text("SELECT binary_sha256 FROM processes ORDER BY id DESC LIMIT 1");
    CHECK(real != NULL && strlen(real) == 64);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM processes WHERE binary_path LIKE '%bin-b' AND "
                        "binary_stat IS NULL"),
                 0);
    /* Mark what is recorded: a process that reuses it shows the mark. */
    CHECK_INT_EQ(scalar("UPDATE processes SET binary_sha256 = printf('%064d', 7) "
                        "WHERE binary_path LIKE '%bin-b' RETURNING 1"),
                 1);
    r = open_rec(1, bin_b);
    recorder_close(r);
    CHECK_INT_EQ(scalar("SELECT binary_sha256 = printf('%064d', 7) FROM processes "
                        "ORDER BY id DESC LIMIT 1"),
                 1);
    /* The same bytes written again: new times, so hashed again. */
    sleep_ms(20);
    FILE *f = fopen(bin_b, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("provider binary B", f);
        fclose(f);
    }
    r = open_rec(1, bin_b);
    recorder_close(r);
    /* The state this tests: the file's identity did change. */
    CHECK_INT_EQ(scalar("SELECT count(DISTINCT binary_stat) FROM (SELECT binary_stat FROM "
                        "processes WHERE binary_path LIKE '%bin-b' ORDER BY id DESC LIMIT 2)"),
                 2);
    char *again = text("SELECT binary_sha256 FROM processes ORDER BY id DESC LIMIT 1");
    CHECK(again != NULL && real != NULL && strcmp(again, real) == 0);
    free(real);
    free(again);
}

static void test_unwritable_then_recovers(void)
{
    char blocker[400], path[500];
    snprintf(blocker, sizeof blocker, "%s/blocked", tmpdir);
    snprintf(path, sizeof path, "%s/db/tftap.db", blocker);
    FILE *f = fopen(blocker, "w"); /* a file where the directory should be */
    CHECK(f != NULL);
    if (f)
        fclose(f);
    /* The state this tests: the database cannot be made there. */
    sqlite3 *probe = NULL;
    CHECK(sqlite3_open_v2(path, &probe, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
          SQLITE_OK);
    sqlite3_close(probe);
    recorder_opts o = {0};
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_tuning tune = {50, 0};
    recorder_tune(r, &tune);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, 1);
    /* The caller is never blocked: every one of these returns. */
    for (uint64_t i = 1; i <= 200; i++)
        plan_create(r, i, &thing_alpha);
    recorder_stats st;
    for (int i = 0; i < 200; i++) {
        recorder_get_stats(r, &st);
        if (st.dropped == 800)
            break;
        sleep_ms(20);
    }
    CHECK_INT_EQ(st.dropped, 800);
    CHECK_INT_EQ(st.written, 0);
    CHECK_INT_EQ(st.db_ok, 0);

    /* Make the path usable; the recorder finds out by itself (its next
     * attempt may make the directory first: it makes a database's
     * missing parent directories). */
    CHECK_INT_EQ(unlink(blocker), 0);
    struct stat made;
    CHECK(mkdir(blocker, 0700) == 0 ||
          (errno == EEXIST && stat(blocker, &made) == 0 && S_ISDIR(made.st_mode)));
    for (int i = 0; i < 500; i++) {
        recorder_get_stats(r, &st);
        if (st.db_ok && st.gaps == 1)
            break;
        sleep_ms(20);
    }
    CHECK_INT_EQ(st.db_ok, 1);
    CHECK_INT_EQ(st.gaps, 1);
    plan_create(r, 1000, &thing_alpha);
    recorder_close(r);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM gaps"), 1);
    CHECK_INT_EQ(scalar_at(path, "SELECT lost FROM gaps"), 800);
    CHECK_INT_EQ(scalar_at(path, "SELECT dropped FROM processes"), 800);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL"), 1);
}

/* Closed while the database is unavailable (a server restarting): with
 * linger_ms the recorder keeps what it could not write, drain says so at
 * once, and close writes it, with the gap, once the database is back. */
static void test_closed_while_unavailable_lingers(void)
{
    char blocker[400], path[500];
    snprintf(blocker, sizeof blocker, "%s/blocked-linger", tmpdir);
    snprintf(path, sizeof path, "%s/db/tftap.db", blocker);
    FILE *f = fopen(blocker, "w"); /* a file where the directory should be */
    CHECK(f != NULL);
    if (f)
        fclose(f);
    /* Longer than any machine needs for one attempt: drain returning well
     * inside it shows it did not wait for it (no assertion on speed). */
    recorder_opts o = {.linger_ms = 600000};
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_tuning tune = {50, 0};
    recorder_tune(r, &tune);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, 1);
    for (uint64_t i = 1; i <= 100; i++)
        plan_create(r, i, &thing_alpha);
    /* Returns after one last attempt, not after linger_ms. */
    int64_t t0 = tftap_mono_ms();
    CHECK_INT_EQ(recorder_drain(r), TFTAP_ESTORE);
    CHECK(tftap_mono_ms() - t0 < 300000);
    recorder_stats st;
    recorder_get_stats(r, &st);
    CHECK_INT_EQ(st.dropped, 400);
    CHECK_INT_EQ(st.written, 0);
    /* The database becomes usable; close waits for the lingering writes. */
    CHECK_INT_EQ(unlink(blocker), 0);
    struct stat made; /* or made by the recorder's next attempt, as above */
    CHECK(mkdir(blocker, 0700) == 0 ||
          (errno == EEXIST && stat(blocker, &made) == 0 && S_ISDIR(made.st_mode)));
    recorder_close(r);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM gaps"), 1);
    CHECK_INT_EQ(scalar_at(path, "SELECT lost FROM gaps WHERE reason = 'database unavailable' "
                                 "AND seq = 1"),
                 400);
    CHECK_INT_EQ(scalar_at(path, "SELECT dropped FROM processes"), 400);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM processes WHERE ended_us IS NOT NULL "
                                 "AND length(uuid) = 36"),
                 1);
}

static void test_queue_full_drops_and_counts(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/small/tftap.db", tmpdir);
    recorder_opts o = {0};
    o.max_queue_bytes = 4096; /* smaller than one plan message pair */
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    struct fx_bytes big = {calloc(1, 8192), 8192};
    CHECK(big.p != NULL && big.n > o.max_queue_bytes);
    recorder_call_begin(r, 1, M_PLAN, now_us());
    recorder_message(r, 1, RECORDER_REQUEST, now_us(), big.p, big.n);
    recorder_call_end(r, 1, now_us(), 0, NULL);
    recorder_stats st;
    recorder_get_stats(r, &st);
    CHECK_INT_EQ(st.dropped, 1);
    recorder_close(r);
    fx_free(&big);
    CHECK_INT_EQ(scalar_at(path, "SELECT sum(lost) FROM gaps"), 1);
    CHECK_INT_EQ(scalar_at(path, "SELECT reason = 'queue full' FROM gaps"), 1);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL"), 1);
}

/* Blocking mode (the proxy's recorder process): a caller faster than the
 * recorder waits instead of losing anything, and what is queued (events,
 * decoded rows) stays within the one bound, give or take the rows of the
 * few events being decoded when it is checked. */
static void test_block_mode_holds_the_bound(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/block/tftap.db", tmpdir);
    /* slack: the rows of the 16 events decoded between two looks at the
     * bound, and the estimate of the ops they become. */
    const size_t bound = (size_t)64 << 10, slack = (size_t)16 << 10;
    recorder_opts o = {0};
    o.max_queue_bytes = bound;
    o.block_ms = 60000; /* longer than the recorder could need: never drops */
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, 7);
    /* The schema handed over as the proxy's recorder process does: held
     * once, by its row, not copied. */
    recorder_call_begin(r, 1, M_SCHEMA, now_us());
    recorder_message(r, 1, RECORDER_REQUEST, now_us(), "", 0);
    void *copy = malloc(schema_a.n);
    memcpy(copy, schema_a.p, schema_a.n);
    recorder_message_take(r, 1, RECORDER_RESPONSE, now_us(), copy, schema_a.n);
    recorder_call_end(r, 1, now_us(), 0, NULL);
    const uint64_t calls = 3000;
    for (uint64_t i = 2; i <= calls; i++)
        plan_create(r, i, &thing_alpha);
    recorder_stats st;
    recorder_get_stats(r, &st);
    CHECK_INT_EQ(st.dropped, 0);
    /* It was full (else this tested nothing) and never much past full. */
    CHECK(st.peak_bytes > bound / 2);
    if (st.peak_bytes > bound + slack)
        fprintf(stderr, "peak %zu\n", st.peak_bytes);
    CHECK(st.peak_bytes <= bound + slack);
    recorder_close(r);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL"),
                 (int64_t)calls);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM gaps"), 0);
}

/* Frames the proxy's pipe reader refused, and events its tee dropped, are
 * counted and become a gap that says so. */
static void test_lost_input_is_a_gap(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/lost/tftap.db", tmpdir);
    recorder_opts o = {0};
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_lost(r, 3, RECORDER_LOST_MALFORMED);
    recorder_lost(r, 2, RECORDER_LOST_QUEUE_FULL);
    plan_create(r, 1, &thing_alpha);
    recorder_close(r);
    CHECK_INT_EQ(scalar_at(path, "SELECT sum(lost) FROM gaps"), 5);
    /* The writer may take the two counts in one flush or in two: one gap
     * naming both reasons, or two gaps naming one each. */
    char *reasons = text_at(path, "SELECT group_concat(reason, '; ') FROM gaps");
    CHECK(reasons && strstr(reasons, "queue full"));
    CHECK(reasons && strstr(reasons, "malformed recorder input"));
    free(reasons);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL"), 1);
}

/* Big messages arrive as files (the relay spilled them): each is decoded
 * as any message, written once, its file removed; a file that cannot be
 * read is a gap that says so. */
static void test_spilled_messages(void)
{
    char path[400], file[450], gone[450];
    snprintf(path, sizeof path, "%s/spill/tftap.db", tmpdir);
    snprintf(file, sizeof file, "%s/spilled-request", tmpdir);
    snprintf(gone, sizeof gone, "%s/never-written", tmpdir);
    recorder *r = open_at(path);
    struct fx_bytes req = fx_plan_request(NULL, &thing_alpha);
    struct fx_bytes resp = fx_plan_response(&thing_alpha, 0, NULL);
    FILE *f = fopen(file, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK_INT_EQ(fwrite(req.p, 1, req.n, f), req.n);
        fclose(f);
    }
    recorder_call_begin(r, 2, M_PLAN, now_us());
    recorder_message_file(r, 2, RECORDER_REQUEST, now_us(), strdup(file));
    /* Its request is written alone, before the answer comes. */
    int64_t alone = 0;
    for (int i = 0; i < 600 && alone < 1; i++) {
        sleep_ms(50);
        alone = scalar_at(path, "SELECT count(*) FROM calls WHERE call_seq = 2 AND ended_us IS "
                                "NULL AND request_json LIKE '%\"name\":\"alpha\"%'");
    }
    CHECK_INT_EQ(alone, 1);
    recorder_message(r, 2, RECORDER_RESPONSE, now_us(), resp.p, resp.n);
    recorder_call_end(r, 2, now_us(), 0, NULL);
    recorder_call_begin(r, 3, M_PLAN, now_us());
    recorder_message_file(r, 3, RECORDER_REQUEST, now_us(), strdup(gone));
    recorder_call_end(r, 3, now_us(), 0, NULL);
    recorder_close(r);
    CHECK(access(file, F_OK) != 0); /* the recorder's, and removed */
    char *j = text_at(path, "SELECT request_json FROM calls WHERE call_seq = 2");
    CHECK(contains(j, "\"name\":\"alpha\"")); /* kept when the final image came */
    CHECK(contains(j, "{\"$sensitive\":\"hmac-sha256:"));
    CHECK(!contains(j, FX_SECRET));
    free(j);
    j = text_at(path, "SELECT response_json FROM calls WHERE call_seq = 2");
    CHECK(contains(j, "\"planned_state\""));
    free(j);
    CHECK_INT_EQ(scalar_at(path, "SELECT request_bytes FROM calls WHERE call_seq = 2"),
                 (int64_t)req.n);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE call_seq = 3 AND "
                                 "ended_us IS NOT NULL AND request_json IS NULL"),
                 1);
    char *reasons = text_at(path, "SELECT group_concat(reason, '; ') FROM gaps");
    CHECK(reasons && strstr(reasons, "spill file"));
    free(reasons);
    CHECK_INT_EQ(scalar_at(path, "SELECT sum(lost) FROM gaps"), 1);
    fx_free(&req);
    fx_free(&resp);
}

/* Another writer holds the lock longer than the busy timeout: the recorder
 * keeps retrying, and nothing is lost. */
static void test_locked_database_loses_nothing(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/locked/tftap.db", tmpdir);
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), 0);
    store_close(s);
    sqlite3 *holder = NULL;
    CHECK_INT_EQ(sqlite3_open(path, &holder), SQLITE_OK);
    CHECK_INT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);

    recorder_opts o = {0};
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, 7);
    for (uint64_t i = 1; i <= 300; i++)
        plan_create(r, i, &thing_alpha);
    sleep_ms(6500); /* past the 5 s busy timeout of each attempt */
    recorder_stats st;
    recorder_get_stats(r, &st);
    CHECK_INT_EQ(st.written, 0);
    CHECK_INT_EQ(st.dropped, 0);
    CHECK_INT_EQ(sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(holder);
    recorder_close(r);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL AND "
                                 "response_json IS NOT NULL"),
                 300);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM gaps"), 0);
}

/* keep_raw stores each message's bytes; record_sensitive keeps secrets. */
static void test_keep_raw_and_record_sensitive(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/raw/tftap.db", tmpdir);
    recorder_opts o = {0};
    o.keep_raw = 1;
    o.record_sensitive = 1;
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, 9);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    struct fx_bytes req = fx_plan_request(NULL, &thing_alpha);
    struct fx_bytes resp = fx_plan_response(&thing_alpha, 0, NULL);
    call(r, 2, M_PLAN, &req, &resp);
    recorder_close(r);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM messages"), 4);
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT length(m.raw) FROM messages m JOIN calls c ON c.id = m.call_id "
             "WHERE c.call_seq = 2 AND m.direction = 'request'");
    CHECK_INT_EQ(scalar_at(path, sql), (int64_t)req.n);
    snprintf(sql, sizeof sql,
             "SELECT length(m.raw) FROM messages m JOIN calls c ON c.id = m.call_id "
             "WHERE c.call_seq = 2 AND m.direction = 'response'");
    CHECK_INT_EQ(scalar_at(path, sql), (int64_t)resp.n);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE request_json LIKE "
                                 "'%\"password\":\"" FX_SECRET "\"%'"),
                 1);
    fx_free(&req);
    fx_free(&resp);
}

#define CHILDREN 4
#define CALLS_PER_CHILD 1500

static void test_concurrent_writers(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/conc/tftap.db", tmpdir);
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_run_begin(s, "tofu", 0, NULL, "/", "tofu", NULL, &run), 0);
    store_close(s);
    pid_t pids[CHILDREN];
    for (int c = 0; c < CHILDREN; c++) {
        pids[c] = fork();
        if (pids[c] == 0) {
            recorder_opts o = {0};
            o.run_id = run;
            recorder *r = NULL;
            if (recorder_open(path, &o, &r))
                _exit(3);
            recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, getpid());
            call(r, 1, M_SCHEMA, NULL, &schema_a);
            for (uint64_t i = 2; i <= CALLS_PER_CHILD; i++)
                plan_create(r, i, &thing_alpha);
            recorder_close(r);
            _exit(0);
        }
    }
    for (int c = 0; c < CHILDREN; c++) {
        int status = 0;
        waitpid(pids[c], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL AND "
                                 "request_json IS NOT NULL AND response_json IS NOT NULL"),
                 CHILDREN * CALLS_PER_CHILD);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM processes"), CHILDREN);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM gaps"), 0);
    CHECK_INT_EQ(scalar_at(path, "SELECT sum(dropped) FROM processes"), 0);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM schemas"), 1);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM runs"), 1);
}

static void test_kill_9_mid_run(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/kill/tftap.db", tmpdir);
    pid_t pid = fork();
    if (pid == 0) {
        recorder_opts o = {0};
        recorder *r = NULL;
        if (recorder_open(path, &o, &r))
            _exit(3);
        recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin_a, 5, getpid());
        call(r, 1, M_SCHEMA, NULL, &schema_a);
        for (uint64_t i = 2;; i++) {
            plan_create(r, i, &thing_alpha);
            usleep(200);
        }
    }
    int64_t committed = 0;
    for (int i = 0; i < 600 && committed < 300; i++) {
        sleep_ms(50);
        if (access(path, F_OK) == 0)
            committed = scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL");
    }
    CHECK(committed >= 300);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status));
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    CHECK_INT_EQ(sqlite3_step(st), SQLITE_ROW);
    CHECK_STR_EQ((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
    int64_t after = scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL");
    CHECK(after >= committed);
    /* Calls were committed in order: no holes below the last one kept. */
    CHECK_INT_EQ(scalar_at(path, "SELECT max(call_seq) - count(*) FROM calls"), 0);
    /* The killed process never got an end time; the run shows it. */
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM processes WHERE ended_us IS NULL"), 1);
}

/* Calls trickling in one at a time (a CLI asking one resource at a time)
 * land while the recorder stays open, each soon after the last: the
 * decoder and the SQL thread let work gather for a while after their last
 * batch, and that wait must end at its deadline however late the thread
 * gets to compute it (a wait computed as "deadline minus a second reading
 * of the clock" went negative, made unsigned, and slept for 49 days). */
static void test_trickle_committed_while_open(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/trickle/tftap.db", tmpdir);
    recorder *r = open_at(path);
    for (uint64_t i = 2; i <= 40; i++) {
        plan_create(r, i, &thing_alpha);
        int64_t committed = 0;
        /* A generous bound: the record is due within 100 ms. */
        for (int k = 0; k < 3000 && committed < (int64_t)i; k++) {
            sleep_ms(10);
            if (access(path, F_OK) == 0)
                committed =
                    scalar_at(path, "SELECT count(*) FROM calls WHERE ended_us IS NOT NULL");
        }
        CHECK_INT_EQ(committed, (int64_t)i);
        if (committed != (int64_t)i)
            break;
    }
    recorder_close(r);
}

/* A slow call is written while it lasts (its request, without an answer)
 * and again when it ends, but its request only once: the last image keeps
 * the column. Seen by changing the committed column behind the recorder's
 * back: a request written again would put the decoded one back. Also: the
 * recorder is fed from two threads at once, one caller decoding at a time. */
struct feeder {
    recorder *r;
    uint64_t first;
};

static void *feed_plans(void *arg)
{
    struct feeder *f = arg;
    for (uint64_t i = 0; i < 200; i++)
        plan_create(f->r, f->first + i, &thing_alpha);
    return NULL;
}

static void test_request_written_once(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/once/tftap.db", tmpdir);
    recorder *r = open_at(path);
    struct fx_bytes req = fx_plan_request(NULL, &thing_alpha);
    struct fx_bytes resp = fx_plan_response(&thing_alpha, 0, NULL);
    recorder_call_begin(r, 2, M_PLAN, now_us());
    recorder_message(r, 2, RECORDER_REQUEST, now_us(), req.p, req.n);
    int64_t written = 0;
    for (int k = 0; k < 3000 && written != 1; k++) {
        sleep_ms(10);
        if (access(path, F_OK) == 0)
            written = scalar_at(path, "SELECT count(*) FROM calls WHERE call_seq = 2 AND "
                                      "request_json IS NOT NULL AND ended_us IS NULL");
    }
    CHECK_INT_EQ(written, 1);
    sqlite3 *db = NULL;
    CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    CHECK_INT_EQ(sqlite3_exec(db,
                              "UPDATE calls SET request_json = '{\"kept\":1}' WHERE call_seq = 2",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    recorder_message(r, 2, RECORDER_RESPONSE, now_us(), resp.p, resp.n);
    recorder_call_end(r, 2, now_us(), 0, NULL);
    fx_free(&req);
    fx_free(&resp);
    pthread_t t1, t2;
    struct feeder f1 = {r, 1000}, f2 = {r, 2000};
    CHECK_INT_EQ(pthread_create(&t1, NULL, feed_plans, &f1), 0);
    CHECK_INT_EQ(pthread_create(&t2, NULL, feed_plans, &f2), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    recorder_stats st;
    recorder_get_stats(r, &st);
    CHECK_INT_EQ(st.dropped, 0);
    recorder_close(r);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE call_seq = 2 AND "
                                 "request_json = '{\"kept\":1}' AND response_json IS NOT NULL "
                                 "AND ended_us IS NOT NULL"),
                 1);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM calls WHERE call_seq >= 1000 AND "
                                 "ended_us IS NOT NULL AND request_json LIKE '{%' AND "
                                 "response_json LIKE '{%'"),
                 400);
}

/* Matching a run writes its addresses, not the calls again: a call row
 * holds kilobytes of JSON, and rewriting every one of them put nearly the
 * whole run into the WAL once more at the end of `tftap run`. Measured as
 * the WAL frames the matching adds, against the pages the calls fill. */
static int64_t wal_frames(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    /* PASSIVE says how many frames the WAL holds; TRUNCATE empties it for
     * the next count (and says 0). */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(PASSIVE)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0)
        v = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    if (sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK)
        v = -1;
    sqlite3_close(db);
    return v;
}

static void test_matching_writes_little(void)
{
    char path[420];
    snprintf(path, sizeof path, "%s/match/tftap.db", tmpdir);
    recorder *r = open_at(path);
    struct fx_thing big = thing_alpha;
    char name[3000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    big.name = name; /* a call row of kilobytes, as real ones are */
    for (uint64_t id = 2; id < 302; id++)
        plan_create(r, id, &big);
    recorder_close(r);

    store *s = NULL;
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);
    /* At least this many pages (dbstat, which counts them, is optional). */
    int64_t pages = scalar_at(path, "SELECT sum(length(request_json) + length(response_json)) / "
                                    "(SELECT page_size FROM pragma_page_size) FROM calls");
    CHECK(pages >= 30);
    wal_frames(path); /* the WAL starts empty */
    int ok = 0, bad = 0;
    CHECK_INT_EQ(match_addresses(s, run, NULL, 0, "nothing read", &ok, &bad), 0);
    CHECK_INT_EQ(bad, 300);
    int64_t frames = wal_frames(path);
    printf("matching 300 calls (%lld pages or more): %lld WAL frames\n", (long long)pages,
           (long long)frames);
    CHECK(frames >= 1 && frames <= 4);
    /* Matched again (the plan's addresses now): what it said before is
     * replaced, and still only the narrow table is written. */
    /* 300 equal instances (count = 300): one call each, one process. */
    tftap_buf show = TFTAP_BUF_INIT;
    tftap_buf_puts(&show, "{\"format_version\":\"1.2\",\"resource_changes\":[");
    for (int i = 0; i < 300; i++)
        tftap_buf_printf(&show,
                         "%s{\"address\":\"test_thing.one[%d]\",\"mode\":\"managed\","
                         "\"type\":\"test_thing\",\"name\":\"one\",\"change\":{\"actions\":"
                         "[\"create\"],\"before\":null,\"after\":{\"name\":\"%s\",\"size\":3}}}",
                         i ? "," : "", i, name);
    tftap_buf_puts(&show, "]}");
    analysis_match_doc doc = {show.data, show.len, 1, 0, NULL, 0};
    CHECK_INT_EQ(match_addresses(s, run, &doc, 1, NULL, &ok, &bad), 0);
    frames = wal_frames(path);
    printf("matching them again to 300 addresses: %lld WAL frames\n", (long long)frames);
    CHECK(frames >= 1 && frames <= 8); /* 300 addresses and notes: a few pages */
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM v_resource_changes WHERE address_note = "
                                 "'nothing read'"),
                 0);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(DISTINCT address) FROM v_resource_changes WHERE "
                                 "address LIKE 'test_thing.one[%'"),
                 ok);
    CHECK_INT_EQ(ok, 300);
    /* Neither address nor note: the call's row goes, the views say NULL. */
    int64_t first = scalar_at(path, "SELECT min(call_id) FROM call_addresses");
    store_address_set none = {first, NULL, NULL};
    CHECK_INT_EQ(store_set_addresses(s, &none, 1), 0);
    char q[200];
    snprintf(q, sizeof q,
             "SELECT (SELECT count(*) FROM call_addresses WHERE call_id = %lld) * 10 + "
             "(address IS NULL AND address_note IS NULL) FROM v_resource_changes "
             "WHERE call_id = %lld",
             (long long)first, (long long)first);
    CHECK_INT_EQ(scalar_at(path, q), 1);
    CHECK_INT_EQ(scalar_at(path, "SELECT count(*) FROM call_addresses"), 299);
    tftap_buf_done(&show);
    store_close(s);
}

/* ---- the read side -------------------------------------------------------- */

struct collect {
    tftap_buf out;
    int n;
};

static int render_cb(void *ctx, const store_change_row *c)
{
    struct collect *k = ctx;
    k->n++;
    return analysis_render_change(c, 0, &k->out);
}

static void test_show_plan(void)
{
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    struct fx_thing prior = {"thing-1", "alpha", FX_SECRET, 3, 1, NULL, NULL};
    struct fx_thing config = {"thing-1", "beta", FX_SECRET, 4, 2, NULL, NULL};
    struct fx_thing planned = config;
    planned.id = NULL; /* replaced: a new id */
    struct fx_bytes req = fx_plan_request(&prior, &config);
    struct fx_bytes resp = fx_plan_response(&planned, 1, "be careful");
    call(r, 2, M_PLAN, &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    plan_create(r, 3, &thing_alpha);
    recorder_close(r);

    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);

    /* Addresses come from `tofu show -json` of the plan. */
    const char *show =
        "{\"format_version\":\"1.2\",\"resource_changes\":["
        "{\"address\":\"test_thing.web[0]\",\"mode\":\"managed\",\"type\":\"test_thing\","
        "\"name\":\"web\",\"change\":{\"actions\":[\"delete\",\"create\"],"
        "\"before\":{\"id\":\"thing-1\",\"name\":\"alpha\",\"password\":\"" FX_SECRET "\","
        "\"size\":3,\"rule\":[{\"port\":80,\"proto\":\"tcp\"}],\"tags\":{\"env\":\"test\"}},"
        "\"after\":{\"name\":\"beta\",\"size\":4}}},"
        "{\"address\":\"test_thing.other\",\"mode\":\"managed\",\"type\":\"test_thing\","
        "\"change\":{\"actions\":[\"create\"],\"before\":null,"
        "\"after\":{\"name\":\"gamma\",\"size\":9}}}]}";
    int ok = 0, bad = 0;
    analysis_match_doc doc = {show, strlen(show), 1, 0, NULL, 0};
    CHECK_INT_EQ(match_addresses(s, run, &doc, 1, NULL, &ok, &bad), 0);
    CHECK_INT_EQ(ok, 1);
    CHECK_INT_EQ(bad, 1);

    struct collect k = {TFTAP_BUF_INIT, 0};
    CHECK_INT_EQ(store_changes_each(s, run, NULL, render_cb, &k), 0);
    CHECK_INT_EQ(k.n, 2);
    const char *o = tftap_buf_cstr(&k.out);
    printf("---- rendered ----\n%s------------------\n", o);
    /* The block schema of a protocol-5 provider is found (its GetSchema
     * response): rule is a nested block, tags a map with quoted keys. */
    const char *expected_replace =
        "  # test_thing.web[0] must be replaced  [PlanResourceChange]\n"
        "-/+ resource \"test_thing\" \"web\" {\n"
        "      ~ id       = \"thing-1\" -> (known after apply; not null, prefix \"thing-\")\n"
        "      ~ name     = \"alpha\" -> \"beta\" # forces replacement\n"
        "      ~ size     = 3 -> 4\n"
        "        tags     = {\n"
        "            \"env\" = \"test\"\n"
        "        }\n"
        "        # (1 unchanged attribute hidden)\n"
        "\n"
        "      + rule {\n"
        "          + port  = 81\n"
        "          + proto = \"tcp\"\n"
        "        }\n"
        "\n"
        "        # (1 unchanged block hidden)\n"
        "    }\n"
        "  Warning: be careful\n"
        "    detail text\n";
    CHECK(contains(o, expected_replace));
    if (!contains(o, expected_replace))
        fprintf(stderr, "expected:\n%s", expected_replace);
    CHECK(contains(o, "  # test_thing (call "));
    CHECK(contains(o, "address unknown) will be created  [PlanResourceChange]\n"
                      "  # (not matched to an address: values match none of the 2 test_thing "
                      "instances)\n"
                      "  + resource \"test_thing\" \"?\" {\n"
                      "      + id       = (known after apply; not null, prefix \"thing-\")\n"
                      "      + name     = \"alpha\"\n"
                      "      + password = (sensitive value)\n"
                      "      + size     = 3\n"
                      "      + tags     = {\n"
                      "          + \"env\" = \"test\"\n"
                      "        }\n"
                      "\n"
                      "      + rule {\n"
                      "          + port  = 80\n"));
    CHECK(!contains(o, FX_SECRET));

    /* Filters: by address (and its instances) and by type. */
    k.n = 0;
    tftap_buf_reset(&k.out);
    CHECK_INT_EQ(store_changes_each(s, run, "test_thing.web", render_cb, &k), 0);
    CHECK_INT_EQ(k.n, 1);
    k.n = 0;
    CHECK_INT_EQ(store_changes_each(s, run, "test_thing", render_cb, &k), 0);
    CHECK_INT_EQ(k.n, 2);
    tftap_buf_done(&k.out);

    /* Only the state before a plan not saved to a file (`state pull`): the
     * existing object is known by its prior state, among instances of
     * modules and keys; the new one cannot be named, and says so. */
    const char *raw =
        "{\"version\":4,\"resources\":["
        "{\"mode\":\"managed\",\"type\":\"test_thing\",\"name\":\"web\",\"instances\":["
        "{\"index_key\":0,\"attributes\":{\"id\":\"thing-1\",\"name\":\"alpha\",\"size\":3}}]},"
        "{\"module\":\"module.m[1]\",\"mode\":\"managed\",\"type\":\"test_thing\","
        "\"name\":\"web\",\"instances\":[{\"index_key\":\"k\",\"attributes\":{\"id\":"
        "\"thing-1\",\"name\":\"alpha\",\"size\":4}}]},"
        "{\"mode\":\"data\",\"type\":\"test_thing\",\"name\":\"d\",\"instances\":["
        "{\"attributes\":{\"id\":\"thing-1\",\"name\":\"alpha\",\"size\":3}}]}]}";
    analysis_match_doc before = {raw, strlen(raw), 0, 0, NULL, 0};
    CHECK_INT_EQ(match_addresses(s, run, &before, 1, NULL, &ok, &bad), 0);
    CHECK_INT_EQ(ok, 1);
    CHECK_INT_EQ(bad, 1);
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT address FROM v_resource_changes WHERE run_id = %lld AND method = "
             "'PlanResourceChange' AND prior ->> '$.id' = 'thing-1'",
             (long long)run);
    char *a = text(sql);
    CHECK_STR_EQ(a, "test_thing.web[0]");
    free(a);
    char sql_new[300];
    snprintf(sql_new, sizeof sql_new,
             "SELECT address_note FROM v_resource_changes WHERE run_id = %lld AND method = "
             "'PlanResourceChange' AND coalesce(prior, 'null') = 'null'",
             (long long)run);
    a = text(sql_new);
    CHECK_STR_EQ(a, "a new test_thing object: only a saved plan (plan -out=FILE) or the state "
                    "after an apply names new instances");
    free(a);
    /* The same object in a module instance, under a string key. */
    const char *raw2 =
        "{\"version\":4,\"resources\":["
        "{\"module\":\"module.m[1]\",\"mode\":\"managed\",\"type\":\"test_thing\","
        "\"name\":\"web\",\"instances\":[{\"index_key\":\"k\",\"attributes\":{\"id\":"
        "\"thing-1\",\"name\":\"alpha\",\"size\":3}}]}]}";
    analysis_match_doc before2 = {raw2, strlen(raw2), 0, 0, NULL, 0};
    CHECK_INT_EQ(match_addresses(s, run, &before2, 1, NULL, &ok, &bad), 0);
    a = text(sql);
    CHECK_STR_EQ(a, "module.m[1].test_thing.web[\"k\"]");
    free(a);
    /* Nothing could be read: every call says why. */
    CHECK_INT_EQ(match_addresses(s, run, NULL, 0, "nothing read", &ok, &bad), 0);
    CHECK_INT_EQ(ok, 0);
    CHECK_INT_EQ(bad, 2);
    CHECK_INT_EQ(
        scalar("SELECT count(*) FROM v_resource_changes WHERE address IS NULL AND address_note = "
               "'nothing read'"),
        2);
    /* Back to the plan's addresses, which tests/store/cli.sh reads. */
    CHECK_INT_EQ(match_addresses(s, run, &doc, 1, NULL, &ok, &bad), 0);
    CHECK_INT_EQ(ok, 1);
    store_close(s);
    CHECK_INT_EQ(scalar("SELECT count(*) FROM v_diagnostics WHERE severity = 'WARNING' AND "
                        "summary = 'be careful'"),
                 1);
}

struct seen {
    int n, superseded;
    enum analysis_action last;
    tftap_buf out;
};

static int seen_cb(void *ctx, const store_change_row *c)
{
    struct seen *k = ctx;
    k->n++;
    k->superseded += c->superseded;
    if (analysis_change_action(c, &k->last))
        return -1;
    if (!c->superseded)
        return analysis_render_change(c, 0, &k->out);
    return 0;
}

/* An apply run: the plan the apply carried out is marked superseded, and
 * the apply reads as a creation with the provider's values. */
static void test_apply_supersedes_plan(void)
{
    recorder *r = open_rec(0, bin_a);
    struct fx_thing created = thing_alpha;
    created.id = "thing-42";
    plan_create(r, 1, &thing_alpha);
    struct fx_bytes req, resp;
    fx_apply(&thing_alpha, &created, &req, &resp);
    call(r, 2, "/tfplugin5.Provider/ApplyResourceChange", &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    recorder_close(r);

    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);
    struct seen k = {0, 0, ANALYSIS_ACTION_NOOP, TFTAP_BUF_INIT};
    CHECK_INT_EQ(store_changes_each(s, run, NULL, seen_cb, &k), 0);
    CHECK_INT_EQ(k.n, 2);
    CHECK_INT_EQ(k.superseded, 1);
    CHECK_INT_EQ(k.last, ANALYSIS_ACTION_CREATE);
    CHECK_STR_EQ(analysis_action_name(k.last), "create");
    const char *o = tftap_buf_cstr(&k.out);
    CHECK(contains(o, "address unknown) has been created  [ApplyResourceChange]\n"));
    CHECK(contains(o, "      + id       = \"thing-42\"\n"));
    CHECK(!contains(o, "PlanResourceChange"));
    tftap_buf_done(&k.out);
    store_close(s);

    /* Rows are numbered in the order recorders wrote them, and each
     * provider process has a recorder of its own: which call came first is
     * told by when each started. A plan that started after the apply is
     * not the plan the apply carried out, whatever its row's number. */
    CHECK_INT_EQ(scalar("UPDATE calls SET started_us = (SELECT max(started_us) + 1000 FROM calls) "
                        "WHERE rpc = 'PlanResourceChange' AND run_id = (SELECT max(id) FROM runs) "
                        "RETURNING 1"),
                 1);
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    k = (struct seen){0, 0, ANALYSIS_ACTION_NOOP, TFTAP_BUF_INIT};
    CHECK_INT_EQ(store_changes_each(s, run, NULL, seen_cb, &k), 0);
    CHECK_INT_EQ(k.n, 2);
    CHECK_INT_EQ(k.superseded, 0);
    tftap_buf_done(&k.out);
    store_close(s);
}

/* count = 3 over equal values: three plans that only order tells apart get
 * web[0], web[1], web[2] in call order, each saying which it is identical
 * to; a fourth plan of other values still gets no address. */
static int addresses_cb(void *ctx, const store_change_row *c)
{
    tftap_buf *b = ctx;
    tftap_buf_printf(b, "%s (%s)\n", c->address ? c->address : "-",
                     c->address_note ? c->address_note : "-");
    return 0;
}

static void test_identical_instances_paired(void)
{
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    for (uint64_t id = 2; id <= 4; id++)
        plan_create(r, id, &thing_alpha);
    struct fx_thing other = thing_alpha;
    other.name = "zeta";
    plan_create(r, 5, &other);
    recorder_close(r);

    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);
    tftap_buf show = TFTAP_BUF_INIT;
    tftap_buf_puts(&show, "{\"format_version\":\"1.2\",\"resource_changes\":[");
    for (int i = 2; i >= 0; i--) { /* the document's order must not matter */
        tftap_buf_printf(&show,
                         "{\"address\":\"test_thing.web[%d]\",\"mode\":\"managed\","
                         "\"type\":\"test_thing\",\"name\":\"web\",\"change\":{\"actions\":"
                         "[\"create\"],\"before\":null,\"after\":{\"name\":\"alpha\","
                         "\"size\":3}}}",
                         i);
        tftap_buf_puts(&show, i ? "," : "]}");
    }
    int ok = 0, bad = 0;
    analysis_match_doc doc = {show.data, show.len, 1, 0, NULL, 0};
    CHECK_INT_EQ(match_addresses(s, run, &doc, 1, NULL, &ok, &bad), 0);
    CHECK_INT_EQ(ok, 3);
    CHECK_INT_EQ(bad, 1);
    tftap_buf got = TFTAP_BUF_INIT;
    CHECK_INT_EQ(store_changes_each(s, run, NULL, addresses_cb, &got), 0);
    CHECK_STR_EQ(tftap_buf_cstr(&got), "test_thing.web[0] (identical to web[1], web[2])\n"
                                       "test_thing.web[1] (identical to web[0], web[2])\n"
                                       "test_thing.web[2] (identical to web[0], web[1])\n"
                                       "- (values match none of the 3 test_thing instances)\n");
    struct collect k = {TFTAP_BUF_INIT, 0};
    CHECK_INT_EQ(store_changes_each(s, run, "test_thing.web[1]", render_cb, &k), 0);
    CHECK(contains(tftap_buf_cstr(&k.out),
                   "  # test_thing.web[1] (identical to web[0], web[2]) will be created"));
    /* A plan made again against this recording answers equal requests
     * equally: it may be made (analysis_replay_repeatable)... */
    int repeatable = -1;
    CHECK_INT_EQ(analysis_replay_repeatable(s, run, &repeatable), 0);
    CHECK_INT_EQ(repeatable, 1);
    store_close(s);
    /* ... but not once a provider answered the same request otherwise (a
     * replay could give one instance the other's answer). */
    r = open_rec(run, bin_a);
    struct fx_bytes req = fx_plan_request(NULL, &thing_alpha);
    struct fx_bytes resp = fx_plan_response(&other, 0, NULL);
    call(r, 6, M_PLAN, &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    recorder_close(r);
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    CHECK_INT_EQ(analysis_replay_repeatable(s, run, &repeatable), 0);
    CHECK_INT_EQ(repeatable, 0);
    tftap_buf_done(&k.out);
    tftap_buf_done(&got);
    tftap_buf_done(&show);
    store_close(s);
}

/* Issue 24: for_each where one instance sets an optional attribute and the
 * others leave it null. A call planning null is not that instance's (null
 * against a value disagrees); it is paired among the two equal ones only.
 * A call whose value is a secret cannot tell the three apart (they differ
 * in it): it stays unnamed rather than guessed. */
static void test_null_against_value(void)
{
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    struct fx_thing none = {"thing-1", "alpha", NULL, 3, 0, NULL, NULL};
    struct fx_thing set = none;
    set.password = "cc";
    plan_create(r, 2, &none);
    plan_create(r, 3, &set);
    plan_create(r, 4, &none);
    recorder_close(r);

    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);
    tftap_buf show = TFTAP_BUF_INIT;
    tftap_buf_puts(&show, "{\"format_version\":\"1.2\",\"resource_changes\":[");
    const char *keys[] = {"a b", "c", "d\\\\\\\"q"}; /* d\\\"q in JSON */
    for (int i = 0; i < 3; i++)
        tftap_buf_printf(&show,
                         "%s{\"address\":\"test_thing.fe[\\\"%s\\\"]\",\"mode\":\"managed\","
                         "\"type\":\"test_thing\",\"name\":\"fe\",\"change\":{\"actions\":"
                         "[\"create\"],\"before\":null,\"after\":{\"id\":\"thing-1\","
                         "\"name\":\"alpha\",\"password\":%s,\"rule\":[],\"size\":3,"
                         "\"tags\":{\"env\":\"test\"}}}}",
                         i ? "," : "", keys[i], i == 1 ? "\"cc\"" : "null");
    tftap_buf_puts(&show, "]}");
    int ok = 0, bad = 0;
    analysis_match_doc doc = {show.data, show.len, 1, 0, NULL, 0};
    CHECK_INT_EQ(match_addresses(s, run, &doc, 1, NULL, &ok, &bad), 0);
    tftap_buf got = TFTAP_BUF_INIT;
    CHECK_INT_EQ(store_changes_each(s, run, NULL, addresses_cb, &got), 0);
    CHECK_STR_EQ(tftap_buf_cstr(&got),
                 "test_thing.fe[\"a b\"] (identical to fe[\"d\\\"q\"])\n"
                 "- (values agree with 3 test_thing instances that differ elsewhere: "
                 "test_thing.fe[\"a b\"], test_thing.fe[\"c\"], test_thing.fe[\"d\\\"q\"])\n"
                 "test_thing.fe[\"d\\\"q\"] (identical to fe[\"a b\"])\n");
    CHECK_INT_EQ(ok, 2);
    CHECK_INT_EQ(bad, 1);
    tftap_buf_done(&got);
    tftap_buf_done(&show);
    store_close(s);
}

/* A test run again applies: two creates that asked the same and were
 * answered with two ids. Planning again is not hindered by them (a plan
 * applies nothing). A test is run again when each provider process asked
 * it once and the processes ran one after the other (two test files: the
 * replay's processes share their claims, each is given its own); not when
 * one process asked it twice, or two processes at once. */
static void test_applies_answered_otherwise(void)
{
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    struct fx_thing one = thing_alpha, two = thing_alpha;
    one.id = "thing-1";
    two.id = "thing-2";
    plan_create(r, 2, &thing_alpha);
    struct fx_bytes req, resp;
    fx_apply(&thing_alpha, &one, &req, &resp);
    call(r, 3, "/tfplugin5.Provider/ApplyResourceChange", &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    recorder_close(r);
    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);
    int repeatable = -1;
    CHECK_INT_EQ(analysis_replay_repeatable_applies(s, run, &repeatable), 0);
    CHECK_INT_EQ(repeatable, 1);
    store_close(s);
    r = open_rec(run, bin_a);
    plan_create(r, 4, &thing_alpha);
    fx_apply(&thing_alpha, &two, &req, &resp);
    call(r, 5, "/tfplugin5.Provider/ApplyResourceChange", &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    recorder_close(r);
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    CHECK_INT_EQ(analysis_replay_repeatable(s, run, &repeatable), 0);
    CHECK_INT_EQ(repeatable, 1);
    CHECK_INT_EQ(analysis_replay_repeatable_applies(s, run, &repeatable), 0);
    CHECK_INT_EQ(repeatable, 1);
    store_close(s);
    /* A third process asks it twice, answered with two ids. */
    struct fx_thing three = thing_alpha;
    three.id = "thing-3";
    r = open_rec(run, bin_a);
    plan_create(r, 6, &thing_alpha);
    fx_apply(&thing_alpha, &three, &req, &resp);
    call(r, 7, "/tfplugin5.Provider/ApplyResourceChange", &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    fx_apply(&thing_alpha, &one, &req, &resp);
    call(r, 8, "/tfplugin5.Provider/ApplyResourceChange", &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    recorder_close(r);
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    CHECK_INT_EQ(analysis_replay_repeatable_applies(s, run, &repeatable), 0);
    CHECK_INT_EQ(repeatable, 0);
    /* Two processes at once, one create each. */
    CHECK_INT_EQ(store_run_begin(s, "tofu", 0, NULL, "/", "tofu", NULL, &run), 0);
    store_close(s);
    recorder *both[2] = {open_rec(run, bin_a), open_rec(run, bin_a)};
    for (int i = 0; i < 2; i++) {
        plan_create(both[i], 2, &thing_alpha);
        fx_apply(&thing_alpha, i ? &two : &one, &req, &resp);
        call(both[i], 3, "/tfplugin5.Provider/ApplyResourceChange", &req, &resp);
        fx_free(&req);
        fx_free(&resp);
    }
    recorder_close(both[0]);
    recorder_close(both[1]);
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    CHECK_INT_EQ(analysis_replay_repeatable_applies(s, run, &repeatable), 0);
    CHECK_INT_EQ(repeatable, 0);
    store_close(s);
}

/* `tofu test`: each run block's documents a group of their own
 * (analysis_match_doc.group). One address in two run blocks, with other
 * values in each, is one instance to a call; a call agreeing with two
 * addresses (each in another run block) stays unnamed, though the two
 * agree with it alike: they are not equal in every run block. */
static void test_run_blocks_grouped(void)
{
    recorder *r = open_rec(0, bin_a);
    call(r, 1, M_SCHEMA, NULL, &schema_a);
    struct fx_thing beta = thing_alpha;
    beta.name = "beta";
    plan_create(r, 2, &thing_alpha);
    plan_create(r, 3, &beta);
    recorder_close(r);

    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);
    static const char *const names[4][2] = {
        {"alpha", "beta"}, {"alpha", "gamma"}, {"beta", "alpha"}, {"alpha", "alpha"}};
    tftap_buf show[4] = {TFTAP_BUF_INIT, TFTAP_BUF_INIT, TFTAP_BUF_INIT, TFTAP_BUF_INIT};
    for (int d = 0; d < 4; d++) {
        tftap_buf_puts(&show[d], "{\"format_version\":\"1.2\",\"resource_changes\":[");
        for (int i = 0; i < 2; i++)
            tftap_buf_printf(&show[d],
                             "%s{\"address\":\"test_thing.web[%d]\",\"mode\":\"managed\","
                             "\"type\":\"test_thing\",\"name\":\"web\",\"change\":"
                             "{\"actions\":[\"create\"],\"before\":null,\"after\":"
                             "{\"name\":\"%s\",\"size\":3}}}",
                             i ? "," : "", i, names[d][i]);
        tftap_buf_puts(&show[d], "]}");
    }
    /* web[0] alpha in both run blocks; beta only web[1]'s, in the first. */
    analysis_match_doc docs[2] = {{show[0].data, show[0].len, 0, 0, NULL, 1},
                                  {show[1].data, show[1].len, 0, 0, NULL, 2}};
    int ok = 0, bad = 0;
    CHECK_INT_EQ(match_addresses(s, run, docs, 2, NULL, &ok, &bad), 0);
    tftap_buf got = TFTAP_BUF_INIT;
    CHECK_INT_EQ(store_changes_each(s, run, NULL, addresses_cb, &got), 0);
    CHECK_STR_EQ(tftap_buf_cstr(&got), "test_thing.web[0] (-)\n"
                                       "test_thing.web[1] (-)\n");
    CHECK_INT_EQ(ok, 2);
    /* alpha is web[0] in one run block and web[1] in the other: not
     * named, though both instances agree with it alike. */
    docs[1] = (analysis_match_doc){show[2].data, show[2].len, 0, 0, NULL, 2};
    CHECK_INT_EQ(match_addresses(s, run, docs, 2, NULL, &ok, &bad), 0);
    tftap_buf_reset(&got);
    CHECK_INT_EQ(store_changes_each(s, run, NULL, addresses_cb, &got), 0);
    CHECK_STR_EQ(tftap_buf_cstr(&got),
                 "- (values agree with 2 test_thing instances of the run blocks that differ "
                 "elsewhere: test_thing.web[0], test_thing.web[1])\n"
                 "- (values agree with 2 test_thing instances of the run blocks that differ "
                 "elsewhere: test_thing.web[0], test_thing.web[1])\n");
    CHECK_INT_EQ(ok, 0);
    CHECK_INT_EQ(bad, 2);
    /* web[0] and web[1] equal in every run block (count over equal
     * values): alpha is paired with one of them, beta with none. */
    docs[0] = (analysis_match_doc){show[3].data, show[3].len, 0, 0, NULL, 1};
    docs[1] = (analysis_match_doc){show[3].data, show[3].len, 0, 0, NULL, 2};
    CHECK_INT_EQ(match_addresses(s, run, docs, 2, NULL, &ok, &bad), 0);
    tftap_buf_reset(&got);
    CHECK_INT_EQ(store_changes_each(s, run, NULL, addresses_cb, &got), 0);
    CHECK_STR_EQ(tftap_buf_cstr(&got), "test_thing.web[0] (identical to web[1])\n"
                                       "- (values match none of the 4 test_thing instances of the "
                                       "run blocks)\n");
    tftap_buf_done(&got);
    for (int d = 0; d < 4; d++)
        tftap_buf_done(&show[d]);
    store_close(s);
}

/* OpenTofu plans a replacement as two calls: the replacing plan (which may
 * keep the old id) and the create half (null prior, same config). They read
 * as one "-/+" change with the create half's planned values. */
static void test_replacement_pairs_with_create_half(void)
{
    recorder *r = open_rec(0, bin_a);
    struct fx_thing prior = {"thing-1", "alpha", NULL, 3, 1, NULL, NULL};
    struct fx_thing config = {"thing-1", "beta", NULL, 3, 1, NULL, NULL};
    struct fx_thing fresh = config;
    fresh.id = NULL;
    struct fx_bytes req = fx_plan_request(&prior, &config);
    struct fx_bytes resp = fx_plan_response(&config, 1, NULL); /* id kept */
    call(r, 1, M_PLAN, &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    req = fx_plan_request(NULL, &config);
    resp = fx_plan_response(&fresh, 0, NULL);
    call(r, 2, M_PLAN, &req, &resp);
    fx_free(&req);
    fx_free(&resp);
    recorder_close(r);

    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    int64_t run = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &run), 0);
    struct seen k = {0, 0, ANALYSIS_ACTION_NOOP, TFTAP_BUF_INIT};
    CHECK_INT_EQ(store_changes_each(s, run, NULL, seen_cb, &k), 0);
    CHECK_INT_EQ(k.n, 2);
    CHECK_INT_EQ(k.superseded, 1);
    const char *o = tftap_buf_cstr(&k.out);
    CHECK(contains(o, "-/+ resource \"test_thing\" \"?\" {\n"
                      "      ~ id   = \"thing-1\" -> (known after apply; not null, prefix "
                      "\"thing-\")\n"
                      "      ~ name = \"alpha\" -> \"beta\" # forces replacement\n"));
    CHECK(!contains(o, "will be created"));
    tftap_buf_done(&k.out);
    store_close(s);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/tftap-test-rec-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(db_path, sizeof db_path, "%s/rec/tftap.db", tmpdir);
    snprintf(bin_a, sizeof bin_a, "%s/bin-a", tmpdir);
    snprintf(bin_b, sizeof bin_b, "%s/bin-b", tmpdir);
    FILE *f = fopen(bin_a, "w");
    fputs("provider binary A", f);
    fclose(f);
    f = fopen(bin_b, "w");
    fputs("provider binary B", f);
    fclose(f);
    schema_a = fx_schema_response(NULL);
    schema_b = fx_schema_response("zone");

    test_record_decode_redact();
    test_quoted_secret_cut();
    test_schema_dedup_and_borrow();
    test_schema_arrives_later();
    test_binary_digest_reused();
    test_show_plan();
    test_apply_supersedes_plan();
    test_replacement_pairs_with_create_half();
    test_unwritable_then_recovers();
    test_closed_while_unavailable_lingers();
    test_queue_full_drops_and_counts();
    test_block_mode_holds_the_bound();
    test_lost_input_is_a_gap();
    test_spilled_messages();
    test_locked_database_loses_nothing();
    test_keep_raw_and_record_sensitive();
    test_concurrent_writers();
    test_kill_9_mid_run();
    test_trickle_committed_while_open();
    test_request_written_once();
    test_schema_committed_while_closing();
    test_matching_writes_little();
    test_null_against_value();
    /* Last: tests/store/cli.sh reads the runs above by number, and this
     * one as the last. */
    test_identical_instances_paired();
    test_run_blocks_grouped();
    test_applies_answered_otherwise();

    fx_free(&schema_a);
    fx_free(&schema_b);
    if (!check_failures && !getenv("TFTAP_TEST_KEEP")) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    } else {
        printf("test files kept in %s\n", tmpdir);
    }
    return check_report("test_recorder");
}
