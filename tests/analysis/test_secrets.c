/* analysis_redact_run over a real database: a provider's words (a gRPC
 * status message, a diagnostic) lose the secrets they quote and keep the
 * rest; what the configuration marks is redacted in calls no document
 * marks (by resource, by type), through references to what a provider's
 * schema marks; a provider function's result from a secret argument is a
 * secret of the run. Rows are written as the recorder writes them. */
#include "config.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "store/store.h"
#include "tests/check.h"

static char tmpdir[256];

#define SECRET "hunter2-topsecret"
#define REDACTED "{\"$sensitive\":\"hmac-sha256:"

/* One call: rpc, type, address (NULL: none), request, response, status,
 * its message and why it was not decoded. */
struct call {
    const char *rpc, *type, *address, *request, *response;
    int status;
    const char *message, *decode_error;
};

static void make_run(const char *path, const struct call *calls, size_t n)
{
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), 0);
    store_close(s);
    sqlite3 *db = NULL;
    CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT_EQ(sqlite3_exec(db,
                              "INSERT INTO runs (id, command, started_us) VALUES (1, 'plan', 1);"
                              "INSERT INTO processes (id, run_id, started_us) VALUES (1, 1, 1);",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_stmt *st = NULL, *ad = NULL;
    CHECK_INT_EQ(sqlite3_prepare_v2(db,
                                    "INSERT INTO calls (id, run_id, process_id, call_seq, method, "
                                    "rpc, started_us, ended_us, status_code, status_message, "
                                    "type_name, request_json, response_json, decode_error) "
                                    "VALUES (?1, 1, 1, ?1, '/tfplugin6.Provider/' || ?2, ?2, 1, 2, "
                                    "?3, ?4, ?5, ?6, ?7, ?8)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    CHECK_INT_EQ(sqlite3_prepare_v2(db,
                                    "INSERT INTO call_addresses (call_id, address) VALUES (?, ?)",
                                    -1, &ad, NULL),
                 SQLITE_OK);
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(st, 2, calls[i].rpc, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, calls[i].status);
        sqlite3_bind_text(st, 4, calls[i].message, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, calls[i].type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, calls[i].request, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, calls[i].response, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 8, calls[i].decode_error, -1, SQLITE_STATIC);
        CHECK_INT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
        if (calls[i].address) {
            sqlite3_bind_int64(ad, 1, (sqlite3_int64)i + 1);
            sqlite3_bind_text(ad, 2, calls[i].address, -1, SQLITE_STATIC);
            CHECK_INT_EQ(sqlite3_step(ad), SQLITE_DONE);
            sqlite3_reset(ad);
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(ad);
    sqlite3_close(db);
}

/* A column of call id, as text (malloc'd; NULL when NULL). */
static char *column(const char *path, const char *col, int id)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char sql[128], *v = NULL;
    snprintf(sql, sizeof sql, "SELECT %s FROM calls WHERE id = %d", col, id);
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0))
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int holds(const char *s, const char *t)
{
    return s && strstr(s, t) != NULL;
}

static void redact(const char *path, analysis_secrets *a, analysis_redaction *r)
{
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    CHECK_INT_EQ(analysis_redact_run(s, 1, a, r), 0);
    store_close(s);
}

static void test_words(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/words.db", tmpdir);
    const struct call calls[] = {
        {"ApplyResourceChange", "t_thing", NULL, "{\"config\":{\"a\":null}}", NULL, 2,
         "rpc error: token " SECRET " refused"},
        {"ValidateResourceConfig", "t_thing", NULL, "{\"config\":{\"a\":null}}",
         "{\"diagnostics\":[{\"severity\":\"ERROR\",\"summary\":\"" SECRET "\","
         "\"detail\":\"Value HUNTER2-TOPSECRET is bad\",\"attribute\":{\"path\":"
         "\".tags[\\\"" SECRET "\\\"]\"}}]}",
         0, NULL},
        {"ApplyResourceChange", "t_thing", NULL, "{\"config\":{\"a\":null}}", NULL, 2,
         "nothing to hide here"},
        /* A decode error quoting the bytes it could not read. */
        {"PlanResourceChange", "t_thing", NULL, NULL, NULL, 0, NULL,
         "response: .planned_state.s: invalid UTF-8 in \"" SECRET "\\xff\""},
        {"PlanResourceChange", "t_thing", NULL, NULL, NULL, 0, NULL,
         "response: .planned_state.s: trailing bytes"},
    };
    make_run(path, calls, 5);
    analysis_secrets *a = analysis_secrets_new();
    CHECK_INT_EQ(analysis_secrets_add_variable(a, SECRET, strlen(SECRET)), 0);
    analysis_redaction r;
    redact(path, a, &r);
    analysis_secrets_free(a);
    char *m = column(path, "status_message", 1);
    CHECK_STR_EQ(m, "rpc error: token (sensitive value) refused");
    free(m);
    m = column(path, "status_message", 3);
    CHECK_STR_EQ(m, "nothing to hide here");
    free(m);
    m = column(path, "response_json", 2);
    CHECK_STR_EQ(m, "{\"diagnostics\":[{\"severity\":\"ERROR\",\"summary\":\"(sensitive value)\","
                    "\"detail\":\"Value (sensitive value) is bad\",\"attribute\":{\"path\":"
                    "\".tags[\\\"(sensitive value)\\\"]\"}}]}");
    free(m);
    m = column(path, "decode_error", 4);
    CHECK_STR_EQ(m, "response: .planned_state.s: invalid UTF-8 in \"(sensitive value)\\xff\"");
    free(m);
    m = column(path, "decode_error", 5);
    CHECK_STR_EQ(m, "response: .planned_state.s: trailing bytes");
    free(m);
    m = column(path, "decode_error", 1);
    CHECK(m == NULL);
    free(m);
    CHECK_INT_EQ(r.known_secret, 5);
    CHECK_INT_EQ(r.calls, 3);
}

static void test_configuration(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/config.db", tmpdir);
    const struct call calls[] = {
        /* 1: a new instance no address names: marked by its type. */
        {"PlanResourceChange", "t_thing", NULL, "{\"config\":{\"n\":918273.5,\"s\":\"plain\"}}",
         "{\"planned_state\":{\"n\":918273.5,\"s\":\"plain\"}}", 0, NULL},
        /* 2: the provider's schema marks t_gen's secret (redacted). */
        {"PlanResourceChange", "t_gen", "t_gen.g", "{\"config\":{\"secret\":" REDACTED "ab\"}}}",
         NULL, 0, NULL},
        /* 3: a reference to it, through a function: t_copy.c's s. */
        {"PlanResourceChange", "t_copy", "t_copy.c[0]",
         "{\"config\":{\"s\":\"c2NoZW1h\",\"keep\":\"visible\"}}", NULL, 0, NULL},
        /* 4: the same string in another provider's call: a secret now. */
        {"ReadDataSource", "t_data", NULL, "{\"config\":{\"x\":\"c2NoZW1h\"}}", NULL, 0, NULL},
        /* 5: a function of a secret argument: its result is one. */
        {"CallFunction", "rev", NULL, "{\"name\":\"rev\",\"arguments\":[\"" SECRET "\"]}",
         "{\"result\":\"terces-2retnuh\"}", 0, NULL},
        /* 6: that result elsewhere. */
        {"ValidateResourceConfig", "t_other", NULL, "{\"config\":{\"r\":\"terces-2retnuh\"}}", NULL,
         0, NULL},
        /* 7: a reference to an attribute nothing marks. */
        {"PlanResourceChange", "t_ref", "t_ref.r", "{\"config\":{\"s\":\"in-clear\"}}", NULL, 0,
         NULL},
    };
    make_run(path, calls, 7);
    analysis_secrets *a = analysis_secrets_new();
    CHECK_INT_EQ(analysis_secrets_add_value(a, SECRET, strlen(SECRET)), 0);
    CHECK_INT_EQ(analysis_secrets_add_config(a, "t_thing.a", "n", NULL, NULL), 0);
    CHECK_INT_EQ(analysis_secrets_add_config(a, "t_copy.c", "s", "t_gen.g", "secret"), 0);
    CHECK_INT_EQ(analysis_secrets_add_config(a, "t_ref.r", "s", "t_copy.c", "keep"), 0);
    analysis_redaction r;
    redact(path, a, &r);
    analysis_secrets_free(a);
    char *m = column(path, "request_json", 1);
    CHECK(holds(m, "\"n\":" REDACTED) && holds(m, "\"s\":\"plain\""));
    free(m);
    m = column(path, "response_json", 1);
    CHECK(holds(m, "\"n\":" REDACTED) && !holds(m, "918273.5"));
    free(m);
    m = column(path, "request_json", 3);
    CHECK(holds(m, "\"s\":" REDACTED) && holds(m, "\"keep\":\"visible\""));
    free(m);
    m = column(path, "request_json", 4);
    CHECK(holds(m, "\"x\":" REDACTED));
    free(m);
    m = column(path, "response_json", 5);
    CHECK(holds(m, "\"result\":" REDACTED));
    free(m);
    m = column(path, "request_json", 6);
    CHECK(holds(m, "\"r\":" REDACTED));
    free(m);
    m = column(path, "request_json", 7);
    CHECK_STR_EQ(m, "{\"config\":{\"s\":\"in-clear\"}}");
    free(m);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/tftap-test-secrets-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_words();
    test_configuration();
    if (!check_failures) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return check_report("test_secrets");
}
