/* store: migrations, permissions, runs, on real SQLite files in a temp dir. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "tests/check.h"

static char tmpdir[256];

/* Back from version 6 (runs.uuid, runs.key_id) to 5. */
/* Version 8 undone: addresses back into calls (whose last columns they
 * were), call_addresses gone, the views as version 7 made them. */
/* Version 10 added run_files (a step run's working directory). */
#define UNDO_9 "DROP TABLE run_files;"
/* Version 9 added processes.start_error, runs.values_kept, runs.redactions
 * and run_secrets (its views are undone with 8's), and the runs of
 * acceptance test steps. */
#define UNDO_8                                                                                     \
    "ALTER TABLE processes DROP COLUMN start_error;"                                               \
    "ALTER TABLE runs DROP COLUMN values_kept; ALTER TABLE runs DROP COLUMN redactions;"           \
    "DROP TABLE run_secrets;"                                                                      \
    "DROP INDEX runs_parent; ALTER TABLE runs DROP COLUMN parent_id;"                              \
    "ALTER TABLE runs DROP COLUMN test_name; ALTER TABLE runs DROP COLUMN test_step;"              \
    "DROP VIEW v_calls; DROP VIEW v_resource_changes; DROP VIEW v_diagnostics;"                    \
    "ALTER TABLE calls ADD COLUMN address TEXT; ALTER TABLE calls ADD COLUMN address_note TEXT;"   \
    "UPDATE calls SET address = (SELECT address FROM call_addresses a WHERE a.call_id = "          \
    "calls.id),"                                                                                   \
    "  address_note = (SELECT address_note FROM call_addresses a WHERE a.call_id = calls.id);"     \
    "DROP TABLE call_addresses;"                                                                   \
    "CREATE VIEW v_calls AS SELECT call_id, run_id, process_id, provider, provider_version,"       \
    "  protocol, call_seq, method, rpc, stream, type_name, address, started_us, ended_us,"         \
    "  duration_us, in_flight, status_code, status_message, request_bytes, response_bytes,"        \
    "  request_count, response_count, request_json, response_json, decode_error,"                  \
    "  status_name, error_count, warning_count, is_teardown,"                                      \
    "  NOT is_teardown AND (error_count > 0 OR coalesce(status_code, 0) != 0"                      \
    "    OR (in_flight AND ended_elsewhere)) AS failed"                                            \
    "  FROM (SELECT"                                                                               \
    "  c.id AS call_id, c.run_id, c.process_id, p.provider, p.version AS provider_version,"        \
    "  p.protocol, c.call_seq, c.method, c.rpc, c.stream, c.type_name, c.address,"                 \
    "  c.started_us, c.ended_us, c.ended_us - c.started_us AS duration_us,"                        \
    "  c.ended_us IS NULL AS in_flight, c.status_code, c.status_message,"                          \
    "  c.request_bytes, c.response_bytes, c.request_count, c.response_count,"                      \
    "  c.request_json, c.response_json, c.decode_error,"                                           \
    "  CASE c.status_code WHEN 0 THEN 'OK' WHEN 1 THEN 'CANCELLED' WHEN 2 THEN 'UNKNOWN'"          \
    "    WHEN 3 THEN 'INVALID_ARGUMENT' WHEN 4 THEN 'DEADLINE_EXCEEDED' WHEN 5 THEN 'NOT_FOUND'"   \
    "    WHEN 6 THEN 'ALREADY_EXISTS' WHEN 7 THEN 'PERMISSION_DENIED'"                             \
    "    WHEN 8 THEN 'RESOURCE_EXHAUSTED' WHEN 9 THEN 'FAILED_PRECONDITION' WHEN 10 THEN"          \
    "    'ABORTED' WHEN 11 THEN 'OUT_OF_RANGE' WHEN 12 THEN 'UNIMPLEMENTED' WHEN 13 THEN"          \
    "    'INTERNAL' WHEN 14 THEN 'UNAVAILABLE' WHEN 15 THEN 'DATA_LOSS' WHEN 16 THEN"              \
    "    'UNAUTHENTICATED' END AS status_name,"                                                    \
    "  CASE WHEN instr(c.response_json, '\"severity\"') > 0"                                       \
    "    AND json_valid(c.response_json) THEN CASE json_type(c.response_json)"                     \
    "    WHEN 'object' THEN (SELECT count(*) FROM json_each(c.response_json,"                      \
    "    '$.diagnostics') d WHERE d.value ->> '$.severity' = 'ERROR') ELSE 0 END"                  \
    "    ELSE 0 END AS error_count,"                                                               \
    "  CASE WHEN instr(c.response_json, '\"severity\"') > 0"                                       \
    "    AND json_valid(c.response_json) THEN CASE json_type(c.response_json)"                     \
    "    WHEN 'object' THEN (SELECT count(*) FROM json_each(c.response_json,"                      \
    "    '$.diagnostics') d WHERE d.value ->> '$.severity' = 'WARNING') ELSE 0 END"                \
    "    ELSE 0 END AS warning_count,"                                                             \
    "  c.method IN ('/plugin.GRPCBroker/StartStream', '/plugin.GRPCStdio/StreamStdio',"            \
    "    '/plugin.GRPCController/Shutdown')"                                                       \
    "    AND (c.status_code IS NULL OR c.status_code IN (0, 1, 14)) AS is_teardown,"               \
    "  (p.ended_us IS NOT NULL OR (SELECT r.ended_us FROM runs r WHERE r.id = c.run_id)"           \
    "    IS NOT NULL) AS ended_elsewhere"                                                          \
    "  FROM calls c LEFT JOIN processes p ON p.id = c.process_id);"                                \
    "CREATE VIEW v_resource_changes AS SELECT"                                                     \
    "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, c.address, c.address_note,"        \
    "  CASE c.rpc WHEN 'ReadResource' THEN c.request_json -> '$.current_state'"                    \
    "    WHEN 'ReadDataSource' THEN NULL"                                                          \
    "    ELSE c.request_json -> '$.prior_state' END AS prior,"                                     \
    "  c.request_json -> '$.proposed_new_state' AS proposed,"                                      \
    "  c.request_json -> '$.config' AS config,"                                                    \
    "  CASE c.rpc WHEN 'PlanResourceChange' THEN c.response_json -> '$.planned_state'"             \
    "    WHEN 'ApplyResourceChange' THEN c.request_json -> '$.planned_state' END AS planned,"      \
    "  CASE c.rpc WHEN 'PlanResourceChange' THEN NULL"                                             \
    "    WHEN 'ReadDataSource' THEN c.response_json -> '$.state'"                                  \
    "    ELSE c.response_json -> '$.new_state' END AS new,"                                        \
    "  c.response_json -> '$.requires_replace' AS requires_replace,"                               \
    "  c.response_json -> '$.diagnostics' AS diagnostics,"                                         \
    "  c.status_code, c.started_us, c.ended_us"                                                    \
    "  FROM calls c"                                                                               \
    "  WHERE c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', 'ReadResource',"               \
    "    'ReadDataSource')"                                                                        \
    "    AND json_valid(coalesce(c.request_json, '{}'))"                                           \
    "    AND json_valid(coalesce(c.response_json, '{}'));"                                         \
    "CREATE VIEW v_diagnostics AS SELECT"                                                          \
    "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, c.address,"                        \
    "  d.value ->> '$.severity' AS severity, d.value ->> '$.summary' AS summary,"                  \
    "  d.value ->> '$.detail' AS detail, d.value ->> '$.attribute.path' AS attribute"              \
    "  FROM calls c, json_each(CASE WHEN json_valid(c.response_json)"                              \
    "    AND json_type(c.response_json) = 'object' THEN c.response_json END,"                      \
    "    '$.diagnostics') d;"
/* Version 7 undone: processes.uuid, gaps.seq. */
#define UNDO_7                                                                                     \
    "DROP INDEX processes_uuid; ALTER TABLE processes DROP COLUMN uuid;"                           \
    "DROP INDEX gaps_seq; ALTER TABLE gaps DROP COLUMN seq;"
#define UNDO_6                                                                                     \
    "DROP TRIGGER runs_uuid; DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid;"             \
    "ALTER TABLE runs DROP COLUMN key_id;"

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

/* A database of an older version, named name in the test's directory: made
 * at the current version, then taken back by undo (SQL: the UNDO_ steps and
 * the rows the test needs). */
static void older_db(char *path, size_t n, const char *name, const char *undo)
{
    path_in(path, n, name);
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), 0);
    store_close(s);
    sqlite3 *db = NULL;
    sqlite3_open(path, &db);
    CHECK_INT_EQ(sqlite3_exec(db, undo, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static int64_t scalar(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, "scalar(%s): %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void test_migrate_from_empty(void)
{
    char dir[300], path[400];
    path_in(dir, sizeof dir, "fresh/nested");
    snprintf(path, sizeof path, "%s/tftap.db", dir);
    store *s = NULL;
    /* Without CREATE a missing database is reported, not made. */
    CHECK_INT_EQ(store_open(path, 0, &s), TFTAP_ENOTFOUND);
    CHECK(s == NULL);
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), 0);
    CHECK(s != NULL);

    struct stat st;
    CHECK_INT_EQ(stat(dir, &st), 0);
    CHECK_INT_EQ(st.st_mode & 0777, 0700);
    CHECK_INT_EQ(stat(path, &st), 0);
    CHECK_INT_EQ(st.st_mode & 0777, 0600);

    int64_t run = 0;
    const char *args[] = {"plan", "-out=x \"q\""};
    CHECK_INT_EQ(store_run_begin(s, "tofu", 2, args, "/tmp", "tofu", "1.9.0", &run), 0);
    CHECK(run > 0);
    /* -wal exists now (a write happened) and inherits 0600. */
    char wal[420];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK_INT_EQ(stat(wal, &st), 0);
    CHECK_INT_EQ(st.st_mode & 0777, 0600);
    snprintf(wal, sizeof wal, "%s-shm", path);
    CHECK_INT_EQ(stat(wal, &st), 0);
    CHECK_INT_EQ(st.st_mode & 0777, 0600);

    CHECK_INT_EQ(store_run_end(s, run, 3), 0);
    CHECK_INT_EQ(store_run_end(s, run + 100, 3), TFTAP_ENOTFOUND);
    int64_t r2 = 0;
    CHECK_INT_EQ(store_resolve_run(s, "last", &r2), 0);
    CHECK_INT_EQ(r2, run);
    CHECK_INT_EQ(store_resolve_run(s, "999", &r2), TFTAP_ENOTFOUND);
    CHECK_INT_EQ(store_resolve_run(s, "x1", &r2), TFTAP_EINVAL);
    store_close(s);

    CHECK_INT_EQ(scalar(path, "PRAGMA user_version"), 10);
    CHECK_INT_EQ(scalar(path, "SELECT exit_code FROM runs"), 3);
    CHECK_INT_EQ(scalar(path, "SELECT json_array_length(args) FROM runs"), 2);
    CHECK_INT_EQ(scalar(path, "SELECT args = '[\"plan\",\"-out=x \\\"q\\\"\"]' FROM runs"), 1);
    CHECK_INT_EQ(scalar(path, "SELECT length(key) FROM secret_key"), 32);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM sqlite_master WHERE type = 'view'"), 3);
    /* The views compile against the tables (a broken view fails here). */
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM v_calls"), 0);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM v_resource_changes"), 0);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM v_diagnostics"), 0);

    /* Re-opening keeps the key and does not migrate again. */
    sqlite3 *db = NULL;
    sqlite3_open(path, &db);
    sqlite3_exec(db, "CREATE TABLE marker (x); INSERT INTO marker VALUES (42)", NULL, NULL, NULL);
    sqlite3_close(db);
    int64_t k1 = scalar(path, "SELECT unicode(hex(key)) + length(hex(key)) FROM secret_key");
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    store_close(s);
    CHECK_INT_EQ(scalar(path, "SELECT x FROM marker"), 42);
    CHECK_INT_EQ(scalar(path, "SELECT unicode(hex(key)) + length(hex(key)) FROM secret_key"), k1);
}

/* A version-1 database (its v_resource_changes knew no data source reads,
 * its processes no binary_stat) is brought to the current version in place,
 * its rows kept. */
static void test_migrate_from_1(void)
{
    char path[400];
    older_db(path, sizeof path, "v1.db",
             UNDO_9 UNDO_8 UNDO_7 UNDO_6
             "DROP VIEW v_resource_changes;"
             "DROP INDEX runs_cli_key;"
             "ALTER TABLE runs DROP COLUMN cli_key;"
             "ALTER TABLE runs DROP COLUMN recorders;"
             "DROP INDEX processes_binary_stat;"
             "ALTER TABLE processes DROP COLUMN binary_stat;"
             "CREATE VIEW v_resource_changes AS SELECT c.run_id, c.id AS call_id, c.rpc AS method "
             "FROM calls c WHERE c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', "
             "'ReadResource');"
             "INSERT INTO runs (id, started_us) VALUES (1, 1);"
             "INSERT INTO processes (id, run_id, started_us) VALUES (1, 1, 1);"
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "type_name, request_json, response_json) VALUES (7, 1, 1, 1, "
             "'/tfplugin6.Provider/ReadDataSource', 'ReadDataSource', 1, 'x_echo', "
             "'{\"config\":{\"in\":1}}', '{\"state\":{\"in\":1,\"out\":2}}');"
             "PRAGMA user_version = 1;");
    store *s = NULL;
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM v_resource_changes"), 0);
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    store_close(s);
    CHECK_INT_EQ(scalar(path, "PRAGMA user_version"), 10);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs"), 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM processes WHERE binary_stat IS NULL"), 1);
    CHECK_INT_EQ(scalar(path, "SELECT call_id FROM v_resource_changes WHERE method = "
                              "'ReadDataSource' AND prior IS NULL AND config = '{\"in\":1}' AND "
                              "new ->> '$.out' = 2"),
                 7);
}

/* A version-3 database (no runs.cli_key, runs.recorders) gets both, its
 * runs kept, and runs made through tftap run have neither set. */
static void test_migrate_from_3(void)
{
    char path[400];
    older_db(path, sizeof path, "v3.db",
             UNDO_9 UNDO_8 UNDO_7 UNDO_6
             "DROP INDEX runs_cli_key;"
             "ALTER TABLE runs DROP COLUMN cli_key;"
             "ALTER TABLE runs DROP COLUMN recorders;"
             "INSERT INTO runs (id, command, started_us, ended_us, exit_code) "
             "VALUES (1, 'tofu', 1, 2, 0);"
             "PRAGMA user_version = 3;");
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    store_close(s);
    CHECK_INT_EQ(scalar(path, "PRAGMA user_version"), 10);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs WHERE id = 1 AND cli_key IS NULL AND "
                              "recorders = 0 AND ended_us = 2 AND exit_code = 0"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM sqlite_master WHERE name = 'runs_cli_key'"), 1);
}

/* A version-3 database gains v_calls' post-mortem columns (status_name,
 * error_count, warning_count, is_teardown, failed) after the columns it had,
 * which keep their names and order. */
static void test_migrate_from_3_calls(void)
{
    char path[400];
    older_db(path, sizeof path, "v3calls.db",
             UNDO_9 UNDO_8 UNDO_7 UNDO_6
             "DROP INDEX runs_cli_key;"
             "ALTER TABLE runs DROP COLUMN cli_key;"
             "ALTER TABLE runs DROP COLUMN recorders;"
             "DROP VIEW v_calls;"
             "CREATE VIEW v_calls AS SELECT"
             "  c.id AS call_id, c.run_id, c.process_id, p.provider, p.version AS provider_version,"
             "  p.protocol, c.call_seq, c.method, c.rpc, c.stream, c.type_name, c.address,"
             "  c.started_us, c.ended_us, c.ended_us - c.started_us AS duration_us,"
             "  c.ended_us IS NULL AS in_flight, c.status_code, c.status_message,"
             "  c.request_bytes, c.response_bytes, c.request_count, c.response_count,"
             "  c.request_json, c.response_json, c.decode_error"
             "  FROM calls c LEFT JOIN processes p ON p.id = c.process_id;"
             "INSERT INTO runs (id, started_us, ended_us) VALUES (1, 1, 100);"
             "INSERT INTO runs (id, started_us) VALUES (2, 1);"
             "INSERT INTO processes (id, run_id, started_us) VALUES (1, 1, 1), (2, 2, 1);"
             /* 1: go-plugin's stdio stream cut as the provider exits. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, stream, "
             "started_us, ended_us, status_code) VALUES (1, 1, 1, 1, "
             "'/plugin.GRPCStdio/StreamStdio', 'StreamStdio', 1, 1, 90, 14);"
             /* 2: Shutdown never answered. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us) "
             "VALUES (2, 1, 1, 2, '/plugin.GRPCController/Shutdown', 'Shutdown', 80);"
             /* 3: an apply answered OK with an error and a warning. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "ended_us, status_code, response_json) VALUES (3, 1, 1, 3, "
             "'/tfplugin6.Provider/ApplyResourceChange', 'ApplyResourceChange', 10, 20, 0, "
             "'{\"diagnostics\":[{\"severity\":\"ERROR\",\"summary\":\"x\"},"
             "{\"severity\":\"WARNING\",\"summary\":\"y\"}]}');"
             /* 4: a warning only. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "ended_us, status_code, response_json) VALUES (4, 1, 1, 4, "
             "'/tfplugin6.Provider/PlanResourceChange', 'PlanResourceChange', 5, 6, 0, "
             "'{\"diagnostics\":[{\"severity\":\"WARNING\",\"summary\":\"y\"}]}');"
             /* 5: a provider call never answered in a run that ended. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us) "
             "VALUES (5, 1, 1, 5, '/tfplugin6.Provider/ReadResource', 'ReadResource', 30);"
             /* 6: INTERNAL, with text that is not JSON but names a severity. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "ended_us, status_code, response_json) VALUES (6, 1, 1, 6, "
             "'/tfplugin6.Provider/ValidateResourceConfig', 'ValidateResourceConfig', 40, 41, 13, "
             "'{\"severity\": oops');"
             /* 7: in flight while its run is still going: not (yet) failed. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us) "
             "VALUES (7, 2, 2, 1, '/tfplugin6.Provider/ReadResource', 'ReadResource', 30);"
             /* 8: StartStream ending with INTERNAL is no teardown. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, stream, "
             "started_us, ended_us, status_code) VALUES (8, 1, 1, 8, "
             "'/plugin.GRPCBroker/StartStream', 'StartStream', 1, 1, 90, 13);"
             /* 9: UNIMPLEMENTED from a provider built before identities. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "ended_us, status_code) VALUES (9, 1, 1, 9, "
             "'/tfplugin5.Provider/GetResourceIdentitySchemas', 'GetResourceIdentitySchemas', "
             "2, 3, 12);"
             /* 10: UNIMPLEMENTED from a method no provider may lack. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "ended_us, status_code) VALUES (10, 1, 1, 10, "
             "'/tfplugin6.Provider/PlanResourceChange', 'PlanResourceChange', 4, 5, 12);"
             /* 11: GetMetadata failing otherwise still fails. */
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "ended_us, status_code) VALUES (11, 1, 1, 11, "
             "'/tfplugin6.Provider/GetMetadata', 'GetMetadata', 4, 5, 13);"
             /* 12: no end in a process whose record has a gap: not recorded,
              * no failure. */
             "INSERT INTO processes (id, run_id, started_us, ended_us, dropped) "
             "VALUES (3, 1, 1, 50, 2);"
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us) "
             "VALUES (12, 1, 3, 1, '/tfplugin6.Provider/ApplyResourceChange', "
             "'ApplyResourceChange', 10);"
             "PRAGMA user_version = 3;");
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    store_close(s);
    CHECK_INT_EQ(scalar(path, "PRAGMA user_version"), 10);
    CHECK_INT_EQ(scalar(path, "SELECT group_concat(name, ',') = 'call_id,run_id,process_id,"
                              "provider,provider_version,protocol,call_seq,method,rpc,stream,"
                              "type_name,address,started_us,ended_us,duration_us,in_flight,"
                              "status_code,status_message,request_bytes,response_bytes,"
                              "request_count,response_count,request_json,response_json,"
                              "decode_error,status_name,error_count,warning_count,is_teardown,"
                              "failed,expected_close,not_recorded' FROM (SELECT name FROM "
                              "pragma_table_info('v_calls') "
                              "ORDER BY cid)"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT status_name = 'UNAVAILABLE' AND is_teardown AND NOT failed "
                              "FROM v_calls WHERE call_id = 1"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT status_name IS NULL AND is_teardown AND NOT failed "
                              "FROM v_calls WHERE call_id = 2"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT error_count * 10 + warning_count + 100 * failed "
                              "FROM v_calls WHERE call_id = 3"),
                 111);
    CHECK_INT_EQ(scalar(path, "SELECT error_count * 10 + warning_count + 100 * failed "
                              "FROM v_calls WHERE call_id = 4"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT failed AND in_flight FROM v_calls WHERE call_id = 5"), 1);
    CHECK_INT_EQ(scalar(path, "SELECT failed AND status_name = 'INTERNAL' AND error_count = 0 "
                              "FROM v_calls WHERE call_id = 6"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT failed FROM v_calls WHERE call_id = 7"), 0);
    CHECK_INT_EQ(scalar(path, "SELECT failed AND NOT is_teardown FROM v_calls WHERE call_id = 8"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT expected_close AND NOT failed AND NOT is_teardown "
                              "AND status_name = 'UNIMPLEMENTED' FROM v_calls WHERE call_id = 9"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT failed AND NOT expected_close FROM v_calls "
                              "WHERE call_id = 10"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT failed AND NOT expected_close FROM v_calls "
                              "WHERE call_id = 11"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT expected_close FROM v_calls WHERE call_id IN (1, 2)"), 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM v_calls WHERE failed"), 6);
    CHECK_INT_EQ(scalar(path, "SELECT not_recorded AND NOT failed AND in_flight FROM v_calls "
                              "WHERE call_id = 12"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM v_calls WHERE not_recorded"), 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM pragma_table_info('processes') WHERE name = "
                              "'start_error'"),
                 1);
    /* The runs of acceptance test steps: named, under their suite. */
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN "
                              "('parent_id', 'test_name', 'test_step')"),
                 3);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs WHERE parent_id IS NOT NULL OR "
                              "test_name IS NOT NULL OR test_step IS NOT NULL"),
                 0);
    /* The same rule in C. */
    CHECK_INT_EQ(tftap_call_expected_close("/tfplugin5.Provider/GetResourceIdentitySchemas", 12),
                 TFTAP_CLOSE_OPTIONAL);
    CHECK_INT_EQ(tftap_call_expected_close("/tfplugin6.Provider/PlanResourceChange", 12), 0);
    CHECK_INT_EQ(tftap_call_expected_close("/tfplugin6.Provider/GetMetadata", 13), 0);
    CHECK_INT_EQ(tftap_call_expected_close("/plugin.GRPCStdio/StreamStdio", 14),
                 TFTAP_CLOSE_TEARDOWN);
    CHECK_INT_EQ(tftap_call_expected_close("/plugin.GRPCStdio/StreamStdio", 12),
                 TFTAP_CLOSE_OPTIONAL);
    CHECK_INT_EQ(tftap_call_expected_close("/plugin.GRPCBroker/StartStream", 13), 0);
}

/* Shims of one CLI command join one run; the last recorder to leave ends
 * it; another command (another key) gets a run of its own. */
static void test_run_join(void)
{
    char path[400];
    path_in(path, sizeof path, "join.db");
    store *a = NULL, *b = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &a), 0);
    CHECK_INT_EQ(store_open(path, 0, &b), 0);
    const char *args[] = {"plan", "-input=false"};
    int64_t r1 = 0, r2 = 0, r3 = 0;
    CHECK_INT_EQ(store_run_join(a, "", "tofu", 2, args, "/w", "tofu", &r1), TFTAP_EINVAL);
    CHECK_INT_EQ(store_run_join(a, "boot/100/5", "tofu", 2, args, "/w", "tofu", &r1), 0);
    CHECK_INT_EQ(store_run_join(b, "boot/100/5", "tofu", 2, args, "/w", "tofu", &r2), 0);
    CHECK(r1 > 0);
    CHECK_INT_EQ(r2, r1);
    CHECK_INT_EQ(store_run_join(b, "boot/100/6", "tofu", 1, args, "/w", "tofu", &r3), 0);
    CHECK(r3 != r1);
    char q[200];
    snprintf(q, sizeof q, "SELECT recorders FROM runs WHERE id = %lld", (long long)r1);
    CHECK_INT_EQ(scalar(path, q), 2);
    snprintf(q, sizeof q,
             "SELECT count(*) FROM runs WHERE id = %lld AND command = 'tofu' AND args = "
             "'[\"plan\",\"-input=false\"]' AND cwd = '/w' AND cli_name = 'tofu'",
             (long long)r1);
    CHECK_INT_EQ(scalar(path, q), 1);
    snprintf(q, sizeof q, "SELECT ended_us IS NULL FROM runs WHERE id = %lld", (long long)r1);
    CHECK_INT_EQ(store_run_leave(a, r1), 0);
    CHECK_INT_EQ(scalar(path, q), 1); /* one recorder still writing */
    CHECK_INT_EQ(store_run_leave(b, r1), 0);
    CHECK_INT_EQ(scalar(path, q), 0);
    snprintf(q, sizeof q, "SELECT exit_code IS NULL AND recorders = 0 FROM runs WHERE id = %lld",
             (long long)r1);
    CHECK_INT_EQ(scalar(path, q), 1);
    /* A later provider process of the same command opens it again. */
    CHECK_INT_EQ(store_run_join(a, "boot/100/5", "tofu", 2, args, "/w", "tofu", &r2), 0);
    CHECK_INT_EQ(r2, r1);
    snprintf(q, sizeof q, "SELECT ended_us IS NULL FROM runs WHERE id = %lld", (long long)r1);
    CHECK_INT_EQ(scalar(path, q), 1);
    /* A run of tftap run is not the recorders' to end. */
    int64_t r4 = 0;
    CHECK_INT_EQ(store_run_begin(a, "tofu", 0, NULL, "/w", "tofu", NULL, &r4), 0);
    CHECK_INT_EQ(store_run_leave(a, r4), TFTAP_ENOTFOUND);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs"), 3);
    store_close(a);
    store_close(b);
}

static int uuid_ok(const char *path, const char *where)
{
    char q[400];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM runs WHERE %s AND length(uuid) = 36 AND uuid GLOB "
             "'[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-*-4*-*-*' AND "
             "substr(uuid, 20, 1) IN ('8', '9', 'a', 'b') AND lower(uuid) = uuid",
             where);
    return (int)scalar(path, q);
}

/* Version 5 -> 6: every run gets a uuid of its own, new runs one made by
 * whoever creates them, rows inserted without one get one anyway. */
static void test_migrate_from_5(void)
{
    char path[400];
    older_db(path, sizeof path, "v5.db",
             UNDO_9 UNDO_8 UNDO_7 UNDO_6 "INSERT INTO runs (id, command, started_us) VALUES "
                                         "(1, 'tofu', 1), (2, 'tofu', 2), (3, 'tofu', 3);"
                                         "PRAGMA user_version = 5;");
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    CHECK_INT_EQ(scalar(path, "PRAGMA user_version"), 10);
    CHECK_INT_EQ(uuid_ok(path, "id <= 3"), 3);
    CHECK_INT_EQ(scalar(path, "SELECT count(DISTINCT uuid) FROM runs"), 3);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs WHERE key_id IS NOT NULL"), 0);
    const char *args[] = {"plan"};
    int64_t r = 0, j = 0;
    CHECK_INT_EQ(store_run_begin(s, "tofu", 1, args, "/w", "tofu", NULL, &r), 0);
    CHECK_INT_EQ(store_run_join(s, "boot/1/2", "tofu", 1, args, "/w", "tofu", &j), 0);
    store_close(s);
    char q[100];
    snprintf(q, sizeof q, "id IN (%lld, %lld)", (long long)r, (long long)j);
    CHECK_INT_EQ(uuid_ok(path, q), 2);
    sqlite3 *db = NULL;
    sqlite3_open(path, &db);
    CHECK_INT_EQ(
        sqlite3_exec(db, "INSERT INTO runs (id, started_us) VALUES (9, 9)", NULL, NULL, NULL),
        SQLITE_OK);
    /* A uuid is unique. */
    CHECK(sqlite3_exec(db,
                       "UPDATE runs SET uuid = (SELECT uuid FROM runs WHERE id = 1) "
                       "WHERE id = 2",
                       NULL, NULL, NULL) != SQLITE_OK);
    sqlite3_close(db);
    CHECK_INT_EQ(uuid_ok(path, "id = 9"), 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(DISTINCT uuid) FROM runs"), 6);
}

/* Version 7 -> 8: addresses move from calls into call_addresses; the views
 * show the same addresses and notes under the same column names, and
 * calls has no address columns left (matching never rewrites its rows). */
static void test_migrate_from_7(void)
{
    char path[400];
    older_db(path, sizeof path, "v7.db",
             UNDO_9 UNDO_8
             "INSERT INTO runs (id, started_us, ended_us) VALUES (1, 1, 100);"
             "INSERT INTO processes (id, run_id, started_us) VALUES (1, 1, 1);"
             "INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, "
             "ended_us, status_code, type_name, request_json, response_json, address, "
             "address_note) VALUES "
             "(1, 1, 1, 1, '/tfplugin6.Provider/PlanResourceChange', 'PlanResourceChange', "
             "1, 2, 0, 't_x', '{\"config\":{}}', '{\"diagnostics\":[{\"severity\":"
             "\"WARNING\",\"summary\":\"w\"}]}', 't_x.a[0]', 'identical to a[1]'),"
             "(2, 1, 1, 2, '/tfplugin6.Provider/PlanResourceChange', 'PlanResourceChange', "
             "3, 4, 0, 't_x', '{}', '{}', NULL, 'values match none'),"
             "(3, 1, 1, 3, '/tfplugin6.Provider/ReadDataSource', 'ReadDataSource', "
             "5, 6, 0, 't_d', '{}', '{}', 'data.t_d.d', NULL),"
             "(4, 1, 1, 4, '/tfplugin6.Provider/GetProviderSchema', 'GetProviderSchema', "
             "7, 8, 0, NULL, NULL, NULL, NULL, NULL);"
             "PRAGMA user_version = 7;");
    store *s = NULL;
    CHECK_INT_EQ(scalar(path, "SELECT count(address) FROM calls"), 2);
    /* A reader brings it up to date in memory and leaves the file alone. */
    int64_t last = 0;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_READONLY, &s), 0);
    CHECK_INT_EQ(store_is_snapshot(s), 1);
    CHECK_INT_EQ(store_resolve_run(s, "last", &last), 0);
    CHECK_INT_EQ(last, 1);
    store_close(s);
    s = NULL;
    CHECK_INT_EQ(scalar(path, "PRAGMA user_version"), 7);
    CHECK_INT_EQ(scalar(path, "SELECT count(address) FROM calls"), 2);
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    store_close(s);
    CHECK_INT_EQ(scalar(path, "PRAGMA user_version"), 10);
    CHECK_INT_EQ(scalar(path, "SELECT group_concat(call_id || '=' || coalesce(address, '-') || '/' "
                              "|| coalesce(address_note, '-'), ';') = '1=t_x.a[0]/identical to "
                              "a[1];2=-/values match none;3=data.t_d.d/-' FROM (SELECT * FROM "
                              "v_resource_changes ORDER BY call_id)"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT group_concat(call_id || '=' || coalesce(address, '-'), ';') "
                              "= '1=t_x.a[0];2=-;3=data.t_d.d;4=-' FROM (SELECT * FROM v_calls "
                              "ORDER BY call_id)"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM v_diagnostics WHERE address = 't_x.a[0]' AND "
                              "summary = 'w'"),
                 1);
    /* Only calls with something to say have a row. */
    CHECK_INT_EQ(scalar(path, "SELECT group_concat(call_id) = '1,2,3' FROM (SELECT call_id FROM "
                              "call_addresses ORDER BY call_id)"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM pragma_table_info('calls') WHERE name IN "
                              "('address', 'address_note')"),
                 0);
    /* The views' columns, names and order, are those of version 7. */
    CHECK_INT_EQ(scalar(path, "SELECT group_concat(name, ',') = 'run_id,call_id,method,type_name,"
                              "address,address_note,prior,proposed,config,planned,new,"
                              "requires_replace,diagnostics,status_code,started_us,ended_us' "
                              "FROM (SELECT name FROM pragma_table_info('v_resource_changes') "
                              "ORDER BY cid)"),
                 1);
    CHECK_INT_EQ(scalar(path, "SELECT group_concat(name, ',') = 'run_id,call_id,method,type_name,"
                              "address,severity,summary,detail,attribute' FROM (SELECT name FROM "
                              "pragma_table_info('v_diagnostics') ORDER BY cid)"),
                 1);
}

static void test_newer_database_refused(void)
{
    char path[400];
    path_in(path, sizeof path, "newer.db");
    sqlite3 *db = NULL;
    sqlite3_open(path, &db);
    sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL);
    sqlite3_close(db);
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, 0, &s), TFTAP_ESTORE);
    CHECK(s == NULL);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM sqlite_master"), 0);
}

static void test_parent_not_a_directory(void)
{
    char file[300], path[400];
    path_in(file, sizeof file, "plainfile");
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(path, sizeof path, "%s/sub/tftap.db", file);
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), TFTAP_EIO);
    CHECK(s == NULL);
}

/* A URI's passwords never reach a message: userinfo, and every query
 * parameter libpq reads as a password (sslpassword too, percent-encoded
 * keys, repeated ones). */
static void test_display_name_hides_passwords(void)
{
    char b[256];
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"postgresql://u:secret@h/db?sslpassword=k&password=secret2&x=1",
         "postgresql://u:***@h/db?sslpassword=***&password=***&x=1"},
        {"postgres://h/db?pass%77ord=s3#frag", "postgres://h/db?pass%77ord=***#frag"},
        {"postgresql://h/db?password=a&password=b", "postgresql://h/db?password=***&password=***"},
        {"postgresql:///tftap?host=/tmp/x&user=tftap",
         "postgresql:///tftap?host=/tmp/x&user=tftap"},
        {"/a/file.db?password=x", "/a/file.db?password=x"}, /* a path is shown as it is */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_STR_EQ(store_display_name(cases[i].in, b, sizeof b), cases[i].out);
    CHECK_STR_EQ(store_display_name("postgresql://u:p@h/db", b, 8), "(a PostgreSQL URI)");
}

/* The URI tftap run exports (TFTAP_DB) to the CLI and its providers: no
 * password at all, everything else as it was. */
static void test_without_password(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"postgresql://u:secret@h/db?sslpassword=k&password=secret2&x=1",
         "postgresql://u@h/db?x=1"},
        {"postgres://h/db?pass%77ord=s3#frag", "postgres://h/db#frag"},
        {"postgresql://h/db?password=a&password=b", "postgresql://h/db"},
        {"postgresql://h/db?a=1&password=b&c=2", "postgresql://h/db?a=1&c=2"},
        {"postgresql:///tftap?host=/tmp/x&user=tftap",
         "postgresql:///tftap?host=/tmp/x&user=tftap"},
        {"postgresql://u:@h:5432/db", "postgresql://u@h:5432/db"},
        {"/a/file.db?password=x", "/a/file.db?password=x"}, /* a path is a path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = store_without_password(cases[i].in);
        CHECK_STR_EQ(got, cases[i].out);
        free(got);
    }
}

static int prune_seen(void *ctx, const store_prune_run *r)
{
    int64_t *left = ctx;
    if (r->recording)
        *left = r->id;
    return 0;
}

/* Holds and prune: a held run is left alone, by another process's holder
 * (a fork) as by this one's; a hold taken while prune removes a run fails;
 * what prune removes leaves no row behind; a new file gives pages back
 * incrementally. */
static void test_hold_and_prune(void)
{
    char path[400];
    path_in(path, sizeof path, "prune.db");
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), 0);
    const char *args[] = {"plan"};
    int64_t r[4] = {0};
    store_hold *held = NULL;
    for (int i = 0; i < 4; i++) {
        store_hold **h = i == 1 ? &held : NULL;
        CHECK_INT_EQ(store_run_begin_held(s, "tofu", 1, args, "/w", "tofu", NULL, &r[i], h), 0);
    }
    CHECK(held != NULL);
    CHECK_INT_EQ(store_run_end(s, r[0], 0), 0);
    char q[200];
    CHECK_INT_EQ(scalar(path, "PRAGMA auto_vacuum"), 2);
    /* Run 3 is held by a child until the parent says. */
    int go[2], ready[2];
    CHECK(pipe(go) == 0 && pipe(ready) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        store_hold *h = NULL;
        char c = store_hold_run(path, r[2], &h) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
            _exit(1);
        store_hold_free(h);
        _exit(0);
    }
    char c = 0;
    CHECK(read(ready[0], &c, 1) == 1 && c == 'y');
    store_prune_opts o = {0, 0, 1};
    store_prune_info info;
    int64_t left = 0;
    CHECK_INT_EQ(store_prune(s, &o, NULL, NULL, &info), 0);
    CHECK_INT_EQ(info.runs, 2); /* a dry run: runs 1 and 4 would go */
    CHECK_INT_EQ(info.recording, 2);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs"), 4);
    o.dry_run = 0;
    CHECK_INT_EQ(store_prune(s, &o, prune_seen, &left, &info), 0);
    CHECK_INT_EQ(info.runs, 2);
    CHECK_INT_EQ(info.recording, 2);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs"), 2);
    snprintf(q, sizeof q, "SELECT count(*) FROM runs WHERE id IN (%lld, %lld)", (long long)r[1],
             (long long)r[2]);
    CHECK_INT_EQ(scalar(path, q), 2);
    CHECK(info.reclaim == STORE_RECLAIM_INCREMENTAL);
    /* Let both go: the child exits, ours is freed; --keep 1 takes run 2. */
    CHECK(write(go[1], "x", 1) == 1);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    store_hold_free(held);
    o.keep = 1;
    CHECK_INT_EQ(store_prune(s, &o, NULL, NULL, &info), 0);
    CHECK_INT_EQ(info.runs, 1);
    CHECK_INT_EQ(info.recording, 0);
    snprintf(q, sizeof q, "SELECT id FROM runs");
    CHECK_INT_EQ(scalar(path, q), r[2]);
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
    store_close(s);
}

/* A step run's working directory: its files kept, one not kept with its
 * note, read back in name order; a redacted value in a sibling step run of
 * the same test counts; prune takes the files with the run. */
static int count_file(void *ctx, const store_run_file *f)
{
    tftap_buf *b = ctx;
    tftap_buf_printf(b, "%s:%lld:%s:%s;", f->name, (long long)f->size,
                     f->content ? (const char *)f->content : "-", f->note ? f->note : "");
    return 0;
}

static void test_run_files(void)
{
    char path[400];
    path_in(path, sizeof path, "files.db");
    store *s = NULL;
    CHECK_INT_EQ(store_open(path, STORE_OPEN_CREATE, &s), 0);
    const char *args[] = {"apply"};
    int64_t suite = 0, a = 0, b = 0, other = 0;
    CHECK_INT_EQ(store_run_begin(s, "go", 0, args, "/w", NULL, NULL, &suite), 0);
    CHECK_INT_EQ(store_run_begin(s, "tofu", 1, args, "/w", "tofu", NULL, &a), 0);
    CHECK_INT_EQ(store_run_begin(s, "tofu", 1, args, "/w", "tofu", NULL, &b), 0);
    CHECK_INT_EQ(store_run_begin(s, "tofu", 1, args, "/w", "tofu", NULL, &other), 0);
    CHECK_INT_EQ(store_run_set_test(s, a, suite, "TestA", 1), 0);
    CHECK_INT_EQ(store_run_set_test(s, b, suite, "TestA", 2), 0);
    CHECK_INT_EQ(store_run_set_test(s, other, suite, "TestB", 1), 0);
    store_run_file f1 = {"main.tf", 5, "0123", "x = 1", 5, NULL};
    store_run_file f2 = {"big.tfstate", 1 << 30, "", NULL, 0, "over the limit"};
    store_run_file both[2] = {f1, f2};
    CHECK_INT_EQ(store_run_files_add(s, b, both, 2), 0);
    /* One row per name; all or none. */
    store_run_file f3 = {"other.tf", 1, "", "y", 1, NULL};
    store_run_file again[2] = {f3, f1};
    CHECK(store_run_files_add(s, b, again, 2) != 0);
    tftap_buf got = TFTAP_BUF_INIT;
    CHECK_INT_EQ(store_run_files_each(s, b, count_file, &got), 0);
    CHECK_STR_EQ(tftap_buf_cstr(&got), "big.tfstate:1073741824:-:over the limit;main.tf:5:x = 1:;");
    tftap_buf_done(&got);
    int holds = -1;
    CHECK_INT_EQ(store_run_holds_redacted(s, b, &holds), 0);
    CHECK_INT_EQ(holds, 0);
    store_close(s);
    char q[512];
    snprintf(q, sizeof q,
             "PRAGMA foreign_keys = OFF;"
             "INSERT INTO calls (run_id, process_id, call_seq, method, rpc, started_us, "
             "request_json) VALUES (%lld, 1, 1, '/tfplugin6.Provider/PlanResourceChange', "
             "'PlanResourceChange', 1, "
             "'{\"config\":{\"secret\":{\"$sensitive\":\"hmac-sha256:00\"}}}')",
             (long long)a);
    sqlite3 *db = NULL;
    CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT_EQ(sqlite3_exec(db, q, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    CHECK_INT_EQ(store_open(path, 0, &s), 0);
    CHECK_INT_EQ(store_run_holds_redacted(s, b, &holds), 0);
    CHECK_INT_EQ(holds, 1); /* step 1 of the same test redacts one */
    CHECK_INT_EQ(store_run_holds_redacted(s, other, &holds), 0);
    CHECK_INT_EQ(holds, 0); /* another test's does not count */
    store_prune_opts o = {0, 0, 0};
    store_prune_info info;
    CHECK_INT_EQ(store_prune(s, &o, NULL, NULL, &info), 0);
    store_close(s);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM runs"), 0);
    CHECK_INT_EQ(scalar(path, "SELECT count(*) FROM run_files"), 0);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/tftap-test-db-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_migrate_from_empty();
    test_migrate_from_1();
    test_migrate_from_3();
    test_migrate_from_3_calls();
    test_migrate_from_5();
    test_migrate_from_7();
    test_run_join();
    test_hold_and_prune();
    test_run_files();
    test_newer_database_refused();
    test_parent_not_a_directory();
    test_display_name_hides_passwords();
    test_without_password();
    if (!check_failures) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return check_report("test_db");
}
