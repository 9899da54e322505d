/* replay: the book over a real SQLite file written by the recorder from
 * real serialized protocol-5 messages: which recorded call answers a
 * replayed request, and what a mismatch says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "replay/replay.h"
#include "replay/replay_int.h"
#include "recorder/recorder.h"
#include "store/store.h"
#include "tests/check.h"
#include "tests/store/fixtures.h"

#define M_SCHEMA "/tfplugin5.Provider/GetSchema"
#define M_PLAN "/tfplugin5.Provider/PlanResourceChange"
#define M_APPLY "/tfplugin5.Provider/ApplyResourceChange"
#define P_A "registry.opentofu.org/test/thing"
#define P_B "registry.opentofu.org/test/other"

static char tmpdir[256];
static char db_path[400];
static char bin_path[400];
static int64_t run_id, run_twins, run_together;
static struct fx_bytes schema;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void call(recorder *r, uint64_t id, const char *method, const struct fx_bytes *req,
                 const struct fx_bytes *resp, int status, const char *message)
{
    recorder_call_begin(r, id, method, now_us());
    recorder_message(r, id, RECORDER_REQUEST, now_us(), req ? (const void *)req->p : "",
                     req ? req->n : 0);
    if (resp)
        recorder_message(r, id, RECORDER_RESPONSE, now_us(), resp->p, resp->n);
    recorder_call_end(r, id, now_us(), status, message);
}

static const struct fx_thing alpha = {"thing-1", "alpha", FX_SECRET, 3, 2, NULL, NULL};
static const struct fx_thing beta = {"thing-2", "beta", NULL, 7, 0, NULL, NULL};
static const struct fx_thing fresh = {NULL, "fresh", NULL, 1, 1, NULL, NULL}; /* id unknown */
static const struct fx_thing bravo = {"thing-9", "bravo", NULL, 5, 0, NULL, NULL};

/* A plan of an existing object (prior alpha) whose request carries
 * provider-private bytes. */
static struct fx_bytes plan_with_private(const char *private_bytes)
{
    struct fx_bytes pm = fx_thing_msgpack(&alpha), cm = fx_thing_msgpack(&beta);
    Tfplugin5__DynamicValue dp, dc, dprop;
    Tfplugin5__PlanResourceChange__Request r = TFPLUGIN5__PLAN_RESOURCE_CHANGE__REQUEST__INIT;
    r.type_name = "test_thing";
    r.prior_state = fx_dv(&dp, &pm);
    r.config = fx_dv(&dc, &cm);
    r.proposed_new_state = fx_dv(&dprop, &cm);
    r.prior_private.data = (uint8_t *)private_bytes;
    r.prior_private.len = strlen(private_bytes);
    struct fx_bytes b = fx_pack_msg(&r.base);
    fx_free(&pm);
    fx_free(&cm);
    return b;
}

/* Provider A: schema; plan alpha twice (answers told apart by a warning);
 * plan beta; plan fresh (unknown id); a plan with private bytes; an apply
 * that failed with a status. Provider B, same run: plan bravo. */
static void record(void)
{
    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, STORE_OPEN_CREATE, &s), 0);
    CHECK_INT_EQ(store_run_begin(s, "tofu", 0, NULL, "/", "tofu", NULL, &run_id), 0);
    store_close(s);

    recorder_opts o = {0};
    o.run_id = run_id;
    recorder *r = NULL;
    CHECK_INT_EQ(recorder_open(db_path, &o, &r), 0);
    recorder_process(r, P_A, "1.0.0", bin_path, 5, 4242);
    call(r, 1, M_SCHEMA, NULL, &schema, 0, NULL);
    struct fx_bytes q = fx_plan_request(NULL, &alpha);
    struct fx_bytes a1 = fx_plan_response(&alpha, 0, "first answer");
    struct fx_bytes a2 = fx_plan_response(&alpha, 0, "second answer");
    call(r, 2, M_PLAN, &q, &a1, 0, NULL);
    call(r, 3, M_PLAN, &q, &a2, 0, NULL);
    fx_free(&q);
    fx_free(&a1);
    fx_free(&a2);
    q = fx_plan_request(NULL, &beta);
    a1 = fx_plan_response(&beta, 1, NULL);
    call(r, 4, M_PLAN, &q, &a1, 0, NULL);
    fx_free(&q);
    fx_free(&a1);
    q = fx_plan_request(NULL, &fresh);
    a1 = fx_plan_response(&fresh, 0, NULL);
    call(r, 5, M_PLAN, &q, &a1, 0, NULL);
    fx_free(&q);
    fx_free(&a1);
    q = plan_with_private("recorded-private-bytes");
    a1 = fx_plan_response(&beta, 0, "private answer");
    call(r, 6, M_PLAN, &q, &a1, 0, NULL);
    fx_free(&q);
    fx_free(&a1);
    fx_apply(&alpha, &alpha, &q, &a1);
    call(r, 7, M_APPLY, &q, NULL, 14, "provider went away");
    fx_free(&q);
    fx_free(&a1);
    recorder_close(r);

    r = NULL;
    CHECK_INT_EQ(recorder_open(db_path, &o, &r), 0);
    recorder_process(r, P_B, "2.0.0", bin_path, 5, 4343);
    call(r, 1, M_SCHEMA, NULL, &schema, 0, NULL);
    q = fx_plan_request(NULL, &bravo);
    a1 = fx_plan_response(&bravo, 0, NULL);
    call(r, 2, M_PLAN, &q, &a1, 0, NULL);
    fx_free(&q);
    fx_free(&a1);
    recorder_close(r);
}

/* Another run: provider A's two processes one after the other (two test
 * files), each planning alpha (answered otherwise by each) and beta
 * (answered alike). */
static void record_twins(void)
{
    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    CHECK_INT_EQ(store_run_begin(s, "tofu", 0, NULL, "/", "tofu", NULL, &run_twins), 0);
    store_close(s);
    recorder_opts o = {0};
    o.run_id = run_twins;
    static const char *const said[2] = {"file one", "file two"};
    for (int i = 0; i < 2; i++) {
        recorder *r = NULL;
        CHECK_INT_EQ(recorder_open(db_path, &o, &r), 0);
        recorder_process(r, P_A, "1.0.0", bin_path, 5, 5000 + i);
        call(r, 1, M_SCHEMA, NULL, &schema, 0, NULL);
        struct fx_bytes q = fx_plan_request(NULL, &alpha), a = fx_plan_response(&alpha, 0, said[i]);
        call(r, 2, M_PLAN, &q, &a, 0, NULL);
        fx_free(&q);
        fx_free(&a);
        q = fx_plan_request(NULL, &beta);
        a = fx_plan_response(&beta, 0, NULL);
        call(r, 3, M_PLAN, &q, &a, 0, NULL);
        fx_free(&q);
        fx_free(&a);
        recorder_close(r);
    }
}

/* A third run: provider A's two processes at the same time (two
 * configurations of it), each planning alpha, answered otherwise. */
static void record_together(void)
{
    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, 0, &s), 0);
    CHECK_INT_EQ(store_run_begin(s, "tofu", 0, NULL, "/", "tofu", NULL, &run_together), 0);
    store_close(s);
    recorder_opts o = {0};
    o.run_id = run_together;
    recorder *r[2] = {NULL, NULL};
    static const char *const said[2] = {"alias one", "alias two"};
    for (int i = 0; i < 2; i++) {
        CHECK_INT_EQ(recorder_open(db_path, &o, &r[i]), 0);
        recorder_process(r[i], P_A, "1.0.0", bin_path, 5, 6000 + i);
        call(r[i], 1, M_SCHEMA, NULL, &schema, 0, NULL);
    }
    for (int i = 0; i < 2; i++) {
        struct fx_bytes q = fx_plan_request(NULL, &alpha), a = fx_plan_response(&alpha, 0, said[i]);
        call(r[i], 2, M_PLAN, &q, &a, 0, NULL);
        fx_free(&q);
        fx_free(&a);
    }
    recorder_close(r[0]);
    recorder_close(r[1]);
}

/* ---- reading recorded requests back ------------------------------------------ */

struct grab {
    int64_t seq;
    const char *provider;
    char *request;
    int64_t id;
};

static int grab_row(void *ctx, const store_call_row *row)
{
    struct grab *g = ctx;
    /* The first: several processes number their calls alike. */
    if (row->call_seq == g->seq && strcmp(row->provider, g->provider) == 0 && row->request_json &&
        !g->request) {
        g->request = strdup(row->request_json);
        g->id = row->id;
    }
    return 0;
}

/* The recorded request JSON of a provider's call_seq (malloc'd). */
static char *request_of(store *s, const char *provider, int64_t seq, int64_t *id)
{
    struct grab g = {seq, provider, NULL, 0};
    CHECK_INT_EQ(store_calls_each(s, run_id, NULL, NULL, grab_row, &g), 0);
    CHECK(g.request != NULL);
    if (id)
        *id = g.id;
    return g.request ? g.request : strdup("{}");
}

/* text with every from replaced by to (malloc'd); counts the replacements. */
static char *replace_all(const char *text, const char *from, const char *to, int *n)
{
    size_t fl = strlen(from), tl = strlen(to), cap = strlen(text) * (tl > fl ? tl / fl + 2 : 1) + 1;
    char *out = malloc(cap), *w = out;
    *n = 0;
    for (const char *p = text; *p;) {
        if (strncmp(p, from, fl) == 0) {
            memcpy(w, to, tl);
            w += tl;
            p += fl;
            (*n)++;
        } else {
            *w++ = *p++;
        }
    }
    *w = 0;
    return out;
}

static int contains(const char *hay, const char *needle)
{
    return hay && strstr(hay, needle) != NULL;
}

/* 1 when s is well-formed UTF-8 (a diagnostic's detail must be: proto3). */
static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80             ? 1
                   : (*p & 0xE0) == 0xC0 ? 2
                   : (*p & 0xF0) == 0xE0 ? 3
                   : (*p & 0xF8) == 0xF0 ? 4
                                         : 0;
        if (n == 0)
            return 0;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

static int answer(replay_book *b, const char *rpc, const char *type, const char *json,
                  replay_answer *a)
{
    return replay_book_answer(b, rpc, type, json, strlen(json), a);
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_store_queries(store *s)
{
    int protocol = 0;
    tftap_buf raw = TFTAP_BUF_INIT, ident = TFTAP_BUF_INIT;
    CHECK_INT_EQ(store_run_provider_schema(s, run_id, P_A, &protocol, &raw, &ident), 0);
    CHECK_INT_EQ(protocol, 5);
    CHECK_INT_EQ(raw.len, schema.n);
    CHECK(raw.len == schema.n && memcmp(raw.data, schema.p, schema.n) == 0);
    CHECK_INT_EQ(ident.len, 0);
    tftap_buf_reset(&raw);
    CHECK_INT_EQ(store_run_provider_schema(s, run_id, "registry.opentofu.org/test/none", &protocol,
                                           &raw, NULL),
                 TFTAP_ENOTFOUND);
    CHECK_INT_EQ(raw.len, 0);
    tftap_buf_done(&raw);
    tftap_buf_done(&ident);
}

struct plist {
    char names[4][64];
    int64_t calls[4];
    int n;
};

static int list_provider(void *ctx, const store_run_provider_row *row)
{
    struct plist *l = ctx;
    if (l->n < 4) {
        snprintf(l->names[l->n], sizeof l->names[0], "%s %s %d", row->provider,
                 row->version ? row->version : "-", row->protocol);
        l->calls[l->n] = row->calls;
    }
    l->n++;
    return 0;
}

static void test_providers(store *s)
{
    struct plist l = {0};
    CHECK_INT_EQ(store_run_providers_each(s, run_id, list_provider, &l), 0);
    CHECK_INT_EQ(l.n, 2);
    CHECK_STR_EQ(l.names[0], P_A " 1.0.0 5");
    CHECK_STR_EQ(l.names[1], P_B " 2.0.0 5");
    CHECK_INT_EQ(l.calls[0], 7);
    CHECK_INT_EQ(l.calls[1], 2);
}

static void test_order_and_reuse(store *s)
{
    replay_book *b = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, NULL, &b), 0);
    if (!b)
        return;
    CHECK_INT_EQ(replay_book_count(b), 7);
    int64_t id2 = 0, id3 = 0, id4 = 0;
    char *q2 = request_of(s, P_A, 2, &id2);
    char *q4 = request_of(s, P_A, 4, &id4);
    free(request_of(s, P_A, 3, &id3));
    replay_answer a;
    /* Beta first: order among different requests does not matter. */
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q4, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id4);
    CHECK(contains(a.response_json, "\"requires_replace\":[{"));
    CHECK(a.mismatch == NULL);
    /* The same request three times: the first, the second, then the last again. */
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q2, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id2);
    CHECK(contains(a.response_json, "first answer"));
    /* A near miss now: the nearest of the two equally near is the one not
     * answered yet. */
    int n = 0;
    char *near = replace_all(q2, "\"size\":3", "\"size\":4", &n);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", near, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK_INT_EQ(a.call_id, id3);
    free(a.mismatch);
    free(near);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q2, &a), 0);
    CHECK_INT_EQ(a.call_id, id3);
    CHECK(contains(a.response_json, "second answer"));
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q2, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id3);
    CHECK_INT_EQ(a.has_status, 1);
    CHECK_INT_EQ(a.status_code, 0);
    /* Same request, another method or type: nothing. */
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_other", q2, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK_INT_EQ(a.call_id, 0);
    CHECK(contains(a.mismatch, "the recording has no PlanResourceChange of test_other call"));
    free(a.mismatch);
    /* The schema call: no type, an empty request. */
    int64_t id1 = 0;
    char *q1 = request_of(s, P_A, 1, &id1);
    CHECK_INT_EQ(answer(b, "GetSchema", NULL, q1, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id1);
    CHECK(contains(a.response_json, "\"$schema\""));
    free(q1);
    /* A failed call answers its status. */
    int64_t id7 = 0;
    char *q7 = request_of(s, P_A, 7, &id7);
    CHECK_INT_EQ(answer(b, "ApplyResourceChange", "test_thing", q7, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id7);
    CHECK_INT_EQ(a.status_code, 14);
    CHECK_STR_EQ(a.status_message, "provider went away");
    CHECK(a.response_json == NULL);
    free(q7);
    /* Not JSON. */
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", "{\"config\":", &a), TFTAP_EDECODE);
    free(q2);
    free(q4);
    replay_book_free(b);
}

static void test_equal_after_decoding(store *s)
{
    replay_book *b = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, NULL, &b), 0);
    if (!b)
        return;
    int64_t id2 = 0, id5 = 0, id6 = 0;
    char *q2 = request_of(s, P_A, 2, &id2);
    replay_answer a;
    int n = 0;
    /* A secret redacted with another key: still the same request. */
    const char *h = strstr(q2, "\"$sensitive\":\"hmac-sha256:");
    CHECK(h != NULL);
    char *rehashed = strdup(q2);
    if (h) {
        char *hex = rehashed + (h - q2) + strlen("\"$sensitive\":\"hmac-sha256:");
        for (int i = 0; i < 64 && hex[i] != '"'; i++)
            hex[i] = hex[i] == 'a' ? 'b' : 'a';
        CHECK(strcmp(rehashed, q2) != 0);
    }
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", rehashed, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id2);
    free(rehashed);
    /* ... but a secret where there was a plain value is not. */
    char *bared = replace_all(q2, "{\"$sensitive\"", "{\"$sensitivX\"", &n);
    CHECK(n >= 1);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", bared, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK(contains(a.mismatch, ".config.password: recorded {\"$sensitive\":"));
    free(a.mismatch);
    free(bared);

    /* Private bytes: other bytes sent back by the replay do not matter. */
    char *q6 = request_of(s, P_A, 6, &id6);
    CHECK(contains(q6, "\"prior_private\":{\"size\":22,"));
    char *other =
        replace_all(q6, "\"prior_private\":{\"size\":22,", "\"prior_private\":{\"size\":0,", &n);
    CHECK_INT_EQ(n, 1);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", other, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id6);
    CHECK(contains(a.response_json, "private answer"));
    free(other);
    free(q6);

    /* Unknowns are equal by their refinements. */
    char *q5 = request_of(s, P_A, 5, &id5);
    CHECK(contains(q5, "\"prefix\":\"thing-\""));
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q5, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id5);
    char *refined = replace_all(q5, "\"prefix\":\"thing-\"", "\"prefix\":\"other-\"", &n);
    CHECK(n >= 1);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", refined, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK_INT_EQ(a.call_id, id5);
    CHECK(contains(a.mismatch, ".config.id: recorded {\"$unknown\":{\"null\":false,\"prefix\":"
                               "\"thing-\"}}, replayed {\"$unknown\":{\"null\":false,\"prefix\":"
                               "\"other-\"}}"));
    free(a.mismatch);
    free(refined);
    free(q5);
    free(q2);
    replay_book_free(b);
}

/* text with every {"$sensitive":"..."} replaced by plain (malloc'd). */
static char *unredact(const char *text, const char *plain, int *n)
{
    const char *mark = "{\"$sensitive\":\"";
    size_t cap = strlen(text) * 2 + 64;
    char *out = malloc(cap), *w = out;
    *n = 0;
    for (const char *p = text; *p;) {
        const char *end = strncmp(p, mark, strlen(mark)) == 0 ? strstr(p, "\"}") : NULL;
        if (end) {
            w += sprintf(w, "\"%s\"", plain);
            p = end + 2;
            (*n)++;
        } else {
            *w++ = *p++;
        }
    }
    *w = 0;
    return out;
}

static void test_fill_sensitive(store *s)
{
    replay_book *b = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, NULL, &b), 0);
    if (!b)
        return;
    int64_t id2 = 0;
    char *q2 = request_of(s, P_A, 2, &id2);
    int n = 0;
    char *plain = unredact(q2, "plain-secret", &n);
    CHECK_INT_EQ(n, 2); /* config and proposed_new_state */
    replay_answer a;
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q2, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    const char *recorded = a.response_json;
    CHECK(contains(recorded, "\"password\":{\"$sensitive\":"));
    CHECK_INT_EQ(replay_book_fill_sensitive(b, "PlanResourceChange", plain, strlen(plain), &a), 0);
    CHECK(a.response_json != recorded);
    CHECK(contains(a.response_json, "\"planned_state\":{\"id\":\"thing-1\","));
    CHECK(contains(a.response_json, "\"password\":\"plain-secret\""));
    CHECK(!contains(a.response_json, "$sensitive"));
    CHECK(contains(a.response_json, "first answer"));
    /* The request still redacted: nothing to fill from, the markers stay. */
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q2, &a), 0);
    recorded = a.response_json;
    CHECK_INT_EQ(replay_book_fill_sensitive(b, "PlanResourceChange", q2, strlen(q2), &a), 0);
    CHECK(a.response_json == recorded);
    /* No such method's value, and no answer at all. */
    CHECK_INT_EQ(replay_book_fill_sensitive(b, "GetSchema", plain, strlen(plain), &a), 0);
    CHECK(a.response_json == recorded);
    a.found = 0;
    CHECK_INT_EQ(replay_book_fill_sensitive(b, "PlanResourceChange", plain, strlen(plain), &a),
                 TFTAP_EINVAL);
    a.found = 1;
    CHECK_INT_EQ(replay_book_fill_sensitive(b, "PlanResourceChange", "{", 1, &a), TFTAP_EDECODE);
    free(plain);
    free(q2);
    replay_book_free(b);
}

static void test_mismatch_and_ignore(store *s)
{
    replay_book *b = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, NULL, &b), 0);
    if (!b)
        return;
    int64_t id2 = 0;
    char *q2 = request_of(s, P_A, 2, &id2);
    int n = 0;
    char *changed = replace_all(q2, "\"size\":3", "\"size\":4", &n);
    CHECK_INT_EQ(n, 2); /* config and proposed_new_state */
    replay_answer a;
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", changed, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK_INT_EQ(a.call_id, id2); /* nearest: alpha, not beta, the earliest of equals */
    CHECK(contains(a.mismatch, "no recorded call matches PlanResourceChange of test_thing"));
    CHECK(contains(a.mismatch, "nearest recorded request (call "));
    CHECK(contains(a.mismatch, "differs at 2 paths:"));
    CHECK(contains(a.mismatch, "\n  .config.size: recorded 3, replayed 4"));
    CHECK(contains(a.mismatch, "\n  .proposed_new_state.size: recorded 3, replayed 4"));
    CHECK(!contains(a.mismatch, FX_SECRET));
    free(a.mismatch);
    replay_book_free(b);

    /* --ignore: the path inside the value, or the whole request path. */
    const char *const by_attr[] = {"size"};
    replay_book_opts o = {by_attr, 1, NULL};
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, &o, &b), 0);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", changed, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK_INT_EQ(a.call_id, id2);
    replay_book_free(b);
    const char *const by_path[] = {".config.size"};
    o.ignore = by_path;
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, &o, &b), 0);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", changed, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK(contains(a.mismatch, "differs at 1 path:\n  .proposed_new_state.size: recorded 3"));
    free(a.mismatch);
    replay_book_free(b);

    /* A long value is cut for the text, never inside a character: the
     * text becomes a diagnostic's detail, which must be UTF-8. */
    char long_name[301];
    for (int i = 0; i < 150; i++)
        memcpy(long_name + 2 * i, "\xc3\xa9", 2);
    long_name[300] = '\0';
    char *wide = replace_all(q2, "alpha", long_name, &n);
    CHECK_INT_EQ(n, 2);
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, NULL, &b), 0);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", wide, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK(contains(a.mismatch, "... (302 bytes)"));
    CHECK(a.mismatch && utf8_ok(a.mismatch));
    free(a.mismatch);
    free(wide);
    replay_book_free(b);

    /* Provider-private bytes are request fields: an attribute of that
     * name inside a value is compared like any other. */
    char *nested = replace_all(q2, "\"name\":\"alpha\"", "\"name\":\"alpha\",\"private\":true", &n);
    CHECK_INT_EQ(n, 2);
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, NULL, &b), 0);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", nested, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK(contains(a.mismatch, "\n  .config.private: recorded (absent), replayed true"));
    free(a.mismatch);
    free(nested);
    replay_book_free(b);

    /* A member only one side has. */
    char *extra = replace_all(q2, "\"type_name\":", "\"zzz\":1,\"type_name\":", &n);
    CHECK_INT_EQ(n, 1);
    CHECK_INT_EQ(replay_book_load(s, run_id, P_A, NULL, &b), 0);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", extra, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK(contains(a.mismatch, "\n  .zzz: recorded (absent), replayed 1"));
    free(a.mismatch);
    free(extra);
    free(changed);

    /* Provider B's call is not in A's book, and A's book is A's alone. */
    char *qb = request_of(s, P_B, 2, NULL);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", qb, &a), 0);
    CHECK_INT_EQ(a.found, 0);
    CHECK(contains(a.mismatch, ".config.name: recorded \"alpha\", replayed \"bravo\"") ||
          contains(a.mismatch, ".config.name: recorded \"beta\", replayed \"bravo\""));
    free(a.mismatch);
    replay_book_free(b);
    CHECK_INT_EQ(replay_book_load(s, run_id, P_B, NULL, &b), 0);
    CHECK_INT_EQ(replay_book_count(b), 2);
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", qb, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    replay_book_free(b);
    free(qb);
    free(q2);

    b = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_id, "registry.opentofu.org/test/none", NULL, &b),
                 TFTAP_ENOTFOUND);
    CHECK(b == NULL);
}

/* A database from someone else may hold text that is not UTF-8 (the
 * recorder never writes it): a mismatch text quoting it stays UTF-8, as a
 * diagnostic's detail must. */
static void test_mismatch_foreign_bytes(store *s)
{
    char copy[500], cmd[1100];
    snprintf(copy, sizeof copy, "%s/foreign.db", tmpdir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", db_path, copy);
    CHECK_INT_EQ(system(cmd), 0);
    sqlite3 *db = NULL;
    CHECK_INT_EQ(sqlite3_open(copy, &db), SQLITE_OK);
    CHECK_INT_EQ(sqlite3_exec(db,
                              "UPDATE calls SET request_json = replace(request_json, '\"alpha\"', "
                              "CAST(X'22616CE9686122' AS TEXT))",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    store *f = NULL;
    CHECK_INT_EQ(store_open(copy, STORE_OPEN_READONLY, &f), 0);
    replay_book *b = NULL;
    if (f)
        CHECK_INT_EQ(replay_book_load(f, run_id, P_A, NULL, &b), 0);
    char *q2 = request_of(s, P_A, 2, NULL);
    replay_answer a;
    if (b && q2) {
        CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", q2, &a), 0);
        CHECK_INT_EQ(a.found, 0);
        CHECK(contains(a.mismatch, ".config.name: recorded \"al?ha\", replayed \"alpha\""));
        CHECK(a.mismatch && utf8_ok(a.mismatch));
        free(a.mismatch);
    }
    free(q2);
    replay_book_free(b);
    store_close(f);
}

static int exists_in(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static int count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/* Two replayed processes sharing a claims directory answer alpha each as
 * its recorded twin was answered; without one, both the first answer. */
static void test_claims(store *s)
{
    char dir[500];
    snprintf(dir, sizeof dir, "%s/claims", tmpdir);
    CHECK_INT_EQ(mkdir(dir, 0700), 0);
    replay_book_opts o = {NULL, 0, dir};
    replay_book *one = NULL, *two = NULL, *alone = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_twins, P_A, &o, &one), 0);
    CHECK_INT_EQ(replay_book_load(s, run_twins, P_A, &o, &two), 0);
    CHECK_INT_EQ(replay_book_load(s, run_twins, P_A, NULL, &alone), 0);
    if (!one || !two || !alone)
        goto done;
    struct grab g = {2, P_A, NULL, 0};
    CHECK_INT_EQ(store_calls_each(s, run_twins, NULL, NULL, grab_row, &g), 0);
    char *qa = g.request ? g.request : strdup("{}");
    g = (struct grab){3, P_A, NULL, 0};
    CHECK_INT_EQ(store_calls_each(s, run_twins, NULL, NULL, grab_row, &g), 0);
    char *qb = g.request ? g.request : strdup("{}");
    replay_answer a;
    /* Beta is answered alike: each process takes its first, no claim. */
    CHECK_INT_EQ(answer(one, "PlanResourceChange", "test_thing", qb, &a), 0);
    CHECK_INT_EQ(a.found, 1);
    int64_t beta_one = a.call_id;
    CHECK_INT_EQ(answer(two, "PlanResourceChange", "test_thing", qb, &a), 0);
    CHECK_INT_EQ(a.call_id, beta_one);
    CHECK_INT_EQ(answer(one, "PlanResourceChange", "test_thing", qa, &a), 0);
    CHECK(contains(a.response_json, "file one"));
    char name[32];
    snprintf(name, sizeof name, "%lld", (long long)a.call_id);
    CHECK(exists_in(dir, name));
    CHECK_INT_EQ(answer(two, "PlanResourceChange", "test_thing", qa, &a), 0);
    CHECK(contains(a.response_json, "file two"));
    CHECK(!exists_in(dir, REPLAY_CLAIMS_OUT_OF_STEP));
    /* Without claims, a process of its own answers the first again. */
    CHECK_INT_EQ(answer(alone, "PlanResourceChange", "test_thing", qa, &a), 0);
    CHECK(contains(a.response_json, "file one"));
    /* The first process asks alpha again: its twin's answer again. */
    CHECK_INT_EQ(answer(one, "PlanResourceChange", "test_thing", qa, &a), 0);
    CHECK(contains(a.response_json, "file one"));
    CHECK_INT_EQ(count_prefixed(dir, "process-"), 2); /* each its twin */
    CHECK(!exists_in(dir, REPLAY_CLAIMS_OUT_OF_STEP));
    /* A third process asks it: both answers are the others', and giving
     * one leaves the recording's steps. */
    replay_book *three = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_twins, P_A, &o, &three), 0);
    if (three) {
        CHECK_INT_EQ(answer(three, "PlanResourceChange", "test_thing", qa, &a), 0);
        CHECK_INT_EQ(a.found, 1);
        CHECK(exists_in(dir, REPLAY_CLAIMS_OUT_OF_STEP));
        replay_book_free(three);
    }
    free(qb);
    free(qa);
done:
    replay_book_free(one);
    replay_book_free(two);
    replay_book_free(alone);
    /* A claims directory that is not there: the book is not loaded. */
    replay_book_opts gone = {NULL, 0, "/nonexistent/claims"};
    CHECK_INT_EQ(replay_book_load(s, run_twins, P_A, &gone, &one), TFTAP_EIO);
}

/* Processes that ran at the same time: the claims' order does not hold,
 * and a contested answer given is out of step. */
static void test_claims_together(store *s)
{
    char dir[500];
    snprintf(dir, sizeof dir, "%s/claims-together", tmpdir);
    CHECK_INT_EQ(mkdir(dir, 0700), 0);
    replay_book_opts o = {NULL, 0, dir};
    replay_book *b = NULL;
    CHECK_INT_EQ(replay_book_load(s, run_together, P_A, &o, &b), 0);
    if (!b)
        return;
    struct grab g = {2, P_A, NULL, 0};
    CHECK_INT_EQ(store_calls_each(s, run_together, NULL, NULL, grab_row, &g), 0);
    replay_answer a;
    CHECK_INT_EQ(answer(b, "PlanResourceChange", "test_thing", g.request ? g.request : "{}", &a),
                 0);
    CHECK_INT_EQ(a.found, 1);
    CHECK(exists_in(dir, REPLAY_CLAIMS_OUT_OF_STEP));
    free(g.request);
    replay_book_free(b);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tftap-test-book-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(db_path, sizeof db_path, "%s/t.db", tmpdir);
    snprintf(bin_path, sizeof bin_path, "%s/terraform-provider-thing", tmpdir);
    FILE *f = fopen(bin_path, "w");
    if (f) {
        fputs("#!/bin/sh\n", f);
        fclose(f);
    }
    schema = fx_schema_response(NULL);
    record();
    record_twins();
    record_together();
    store *s = NULL;
    CHECK_INT_EQ(store_open(db_path, STORE_OPEN_READONLY, &s), 0);
    if (s) {
        test_store_queries(s);
        test_providers(s);
        test_order_and_reuse(s);
        test_equal_after_decoding(s);
        test_mismatch_and_ignore(s);
        test_fill_sensitive(s);
        test_mismatch_foreign_bytes(s);
        test_claims(s);
        test_claims_together(s);
        store_close(s);
    }
    fx_free(&schema);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_book");
}
