/* store: the recorder's on_call hook (recorder_opts), which the
 * proxy makes OTLP spans from: once per ended call, with its final decoded
 * image; values redacted even when the record keeps them in clear; a call
 * waiting for a schema reported once it is re-decoded, or at close. Real
 * SQLite files in a temp dir, real serialized protocol messages. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recorder/recorder.h"
#include "store/store.h"
#include "tests/check.h"
#include "tests/store/fixtures.h"

#define M_SCHEMA "/tfplugin5.Provider/GetSchema"
#define M_PLAN "/tfplugin5.Provider/PlanResourceChange"

static char tmpdir[256];

/* What the hook saw, copied (it runs in the decoding caller's thread or the SQL thread). */
struct seen {
    int64_t call_seq;
    char *method, *type_name, *request_value, *response_value, *response_json;
    int64_t request_bytes, response_bytes;
    int request_withheld;
};
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static struct seen seen[16];
static int nseen;

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void on_call(void *ctx, const recorder_call_summary *c)
{
    (void)ctx;
    pthread_mutex_lock(&seen_mu);
    if (nseen < 16) {
        struct seen *s = &seen[nseen];
        s->call_seq = c->call_seq;
        s->method = dup_or_null(c->method);
        s->type_name = dup_or_null(c->type_name);
        s->request_value = dup_or_null(c->request_value);
        s->response_value = dup_or_null(c->response_value);
        s->response_json = dup_or_null(c->response_json);
        s->request_bytes = c->request_bytes;
        s->response_bytes = c->response_bytes;
        s->request_withheld = c->request_withheld;
    }
    nseen++;
    pthread_mutex_unlock(&seen_mu);
}

static void seen_reset(void)
{
    pthread_mutex_lock(&seen_mu);
    for (int i = 0; i < nseen && i < 16; i++) {
        free(seen[i].method);
        free(seen[i].type_name);
        free(seen[i].request_value);
        free(seen[i].response_value);
        free(seen[i].response_json);
    }
    memset(seen, 0, sizeof seen);
    nseen = 0;
    pthread_mutex_unlock(&seen_mu);
}

static int seen_count(int64_t call_seq)
{
    int n = 0;
    pthread_mutex_lock(&seen_mu);
    for (int i = 0; i < nseen && i < 16; i++)
        n += seen[i].call_seq == call_seq;
    pthread_mutex_unlock(&seen_mu);
    return n;
}

static const struct seen *seen_of(int64_t call_seq)
{
    for (int i = 0; i < nseen && i < 16; i++)
        if (seen[i].call_seq == call_seq)
            return &seen[i];
    return NULL;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t scalar(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

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

static recorder *open_rec(const char *path, const char *bin, int sensitive)
{
    recorder_opts o = {0};
    o.record_sensitive = sensitive;
    o.on_call = on_call;
    o.on_call_values = 1;
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(path, &o, &r), 0);
    recorder_process(r, "registry.opentofu.org/test/thing", "1.0.0", bin, 5, 4242);
    return r;
}

static const struct fx_thing thing = {"thing-1", "alpha", FX_SECRET, 3, 2, "eu-1", "zone"};

/* --record-sensitive: the record holds the secret, the hook's values never. */
static void test_values_redacted(const char *bin)
{
    char path[400];
    snprintf(path, sizeof path, "%s/sens/tftap.db", tmpdir);
    seen_reset();
    recorder *r = open_rec(path, bin, 1);
    struct fx_bytes schema = fx_schema_response("zone");
    struct fx_bytes req = fx_plan_request(NULL, &thing);
    struct fx_bytes resp = fx_plan_response(&thing, 0, NULL);
    call(r, 1, M_SCHEMA, NULL, &schema);
    call(r, 2, M_PLAN, &req, &resp);
    recorder_close(r);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM calls WHERE request_json LIKE "
                              "'%\"password\":\"" FX_SECRET "\"%'"),
                 1);
    CHECK_INT_EQ(nseen, 2);
    CHECK_INT_EQ(seen_count(1), 1);
    CHECK_INT_EQ(seen_count(2), 1);
    const struct seen *s = seen_of(2);
    CHECK(s != NULL);
    if (s != NULL) {
        CHECK_STR_EQ(s->method, M_PLAN);
        CHECK_STR_EQ(s->type_name, "test_thing");
        CHECK_INT_EQ(s->request_bytes, (int64_t)req.n);
        CHECK_INT_EQ(s->response_bytes, (int64_t)resp.n);
        CHECK(s->request_value != NULL && strstr(s->request_value, FX_SECRET) == NULL);
        CHECK(s->request_value != NULL &&
              strstr(s->request_value, "\"password\":{\"$sensitive\":\"hmac-sha256:") != NULL);
        CHECK(s->request_value != NULL && strstr(s->request_value, "\"zone\":\"eu-1\"") != NULL);
        CHECK(s->response_value != NULL && strstr(s->response_value, FX_SECRET) == NULL);
        /* The stored text, for judging the call, is the record's. */
        CHECK(s->response_json != NULL && strstr(s->response_json, FX_SECRET) != NULL);
        CHECK_INT_EQ(s->request_withheld, 0);
    }
    fx_free(&schema);
    fx_free(&req);
    fx_free(&resp);
}

/* A call made before the schema is known is reported once, decoded, after
 * the schema arrives; one whose schema never comes, once at close. */
static void test_retained(const char *bin)
{
    char path[400];
    snprintf(path, sizeof path, "%s/late/tftap.db", tmpdir);
    seen_reset();
    recorder *r = open_rec(path, bin, 0);
    struct fx_bytes req = fx_plan_request(NULL, &thing);
    struct fx_bytes resp = fx_plan_response(&thing, 0, NULL);
    call(r, 1, M_PLAN, &req, &resp);
    /* Committed, undecoded, and not reported: its image is not final. */
    int64_t undecoded = 0;
    for (int i = 0; i < 600 && undecoded < 1; i++) {
        usleep(50000);
        undecoded = scalar(path, "SELECT count(*) FROM calls WHERE rpc = 'PlanResourceChange' "
                                 "AND ended_us IS NOT NULL AND schema_sha256 IS NULL");
    }
    CHECK_INT_EQ(undecoded, 1);
    CHECK_INT_EQ(seen_count(1), 0);
    struct fx_bytes schema = fx_schema_response("zone");
    call(r, 2, M_SCHEMA, NULL, &schema);
    recorder_close(r);
    CHECK_INT_EQ(seen_count(1), 1);
    CHECK_INT_EQ(seen_count(2), 1);
    const struct seen *s = seen_of(1);
    CHECK(s != NULL && s->request_value != NULL &&
          strstr(s->request_value, "\"zone\":\"eu-1\"") != NULL &&
          strstr(s->request_value, "$undecoded") == NULL);

    /* No schema ever: reported at close, as stored (undecoded). */
    snprintf(path, sizeof path, "%s/never/tftap.db", tmpdir);
    seen_reset();
    r = open_rec(path, bin, 0);
    call(r, 1, M_PLAN, &req, &resp);
    recorder_close(r);
    CHECK_INT_EQ(nseen, 1);
    s = seen_of(1);
    CHECK(s != NULL && s->request_value != NULL && strstr(s->request_value, "$undecoded") != NULL);
    fx_free(&schema);
    fx_free(&req);
    fx_free(&resp);
}

int main(void)
{
    (void)fx_apply; /* the shared fixtures' apply messages are not needed here */
    snprintf(tmpdir, sizeof tmpdir, "%s/tftap-test-hook-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    char bin_a[400], bin_b[400];
    snprintf(bin_a, sizeof bin_a, "%s/bin-a", tmpdir);
    snprintf(bin_b, sizeof bin_b, "%s/bin-b", tmpdir);
    FILE *f = fopen(bin_a, "w");
    fputs("provider binary A", f);
    fclose(f);
    f = fopen(bin_b, "w");
    fputs("provider binary B", f);
    fclose(f);
    test_values_redacted(bin_a);
    test_retained(bin_b);
    seen_reset();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    return check_report("test_recorder_hook");
}
