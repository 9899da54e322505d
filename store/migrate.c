/* store: the schema and its migrations, for both backends, and the schema
 * version a database records. */
#include "store/store_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* Each step brings user_version from its index to index + 1. Never edit a
 * released step: append a new one (docs/database.md describes the result). */
/* A random (version 4) UUID in SQL, per row. */
#define SQLITE_UUID                                                                                \
    "(lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||"                    \
    " substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (random() & 3), 1) ||"     \
    " substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))))"

/* The methods a provider may lack, whose UNIMPLEMENTED is no failure
 * (tftap_call_expected_close, common/common.h, says why each). */
#define OPTIONAL_RPCS                                                                              \
    "('/tfplugin5.Provider/GetMetadata', '/tfplugin6.Provider/GetMetadata',"                       \
    " '/tfplugin5.Provider/GetResourceIdentitySchemas',"                                           \
    " '/tfplugin6.Provider/GetResourceIdentitySchemas',"                                           \
    " '/tfplugin5.Provider/GetFunctions', '/tfplugin6.Provider/GetFunctions',"                     \
    " '/plugin.GRPCStdio/StreamStdio')"

/* v_calls as migrations 5, 8 and 9 make it, and their PostgreSQL twins: the
 * pieces they share, spelled once. What a migration writes must stay what
 * it was to the byte (SQLite keeps a view's text, and an older database
 * went through it): a change to the view is a new migration, never an edit
 * of these. */
#define V_CALLS_COLUMNS                                                                            \
    "CREATE VIEW v_calls AS SELECT call_id, run_id, process_id, provider, provider_version,"       \
    "  protocol, call_seq, method, rpc, stream, type_name, address, started_us, ended_us,"         \
    "  duration_us, in_flight, status_code, status_message, request_bytes, response_bytes,"        \
    "  request_count, response_count, request_json, response_json, decode_error,"                  \
    "  status_name, error_count, warning_count, is_teardown,"
#define V_CALLS_FAILED_5                                                                           \
    "  NOT is_teardown AND (error_count > 0 OR coalesce(status_code, 0) != 0"                      \
    "    OR (in_flight AND ended_elsewhere)) AS failed"
#define V_CALLS_FAILED_9                                                                           \
    "  NOT (is_teardown OR optional_absent) AND (error_count > 0"                                  \
    "    OR coalesce(status_code, 0) != 0"                                                         \
    "    OR (in_flight AND ended_elsewhere AND NOT process_lost)) AS failed,"                      \
    "  (is_teardown OR optional_absent) AS expected_close,"                                        \
    "  NOT (is_teardown OR optional_absent) AND in_flight AND ended_elsewhere AND process_lost"    \
    "    AS not_recorded"
/* The inner SELECT's columns up to status_name; address is c.address
 * (before call_addresses) or a.address. */
#define V_CALLS_INNER(address)                                                                     \
    "  FROM (SELECT"                                                                               \
    "  c.id AS call_id, c.run_id, c.process_id, p.provider, p.version AS provider_version,"        \
    "  p.protocol, c.call_seq, c.method, c.rpc, c.stream, c.type_name, " address ","               \
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
    "    'UNAUTHENTICATED' END AS status_name,"
/* How many diagnostics of a severity a response carries, as column name. */
#define V_CALLS_COUNT_SQLITE(severity, name)                                                       \
    "  CASE WHEN instr(c.response_json, '\"severity\"') > 0"                                       \
    "    AND json_valid(c.response_json) THEN CASE json_type(c.response_json)"                     \
    "    WHEN 'object' THEN (SELECT count(*) FROM json_each(c.response_json,"                      \
    "    '$.diagnostics') d WHERE d.value ->> '$.severity' = '" severity "') ELSE 0 END"           \
    "    ELSE 0 END AS " name ","
#define V_CALLS_COUNT_PG(severity, name)                                                           \
    "  CASE WHEN strpos(c.response_json, '\"severity\"') > 0 THEN (SELECT count(*)"                \
    "    FROM " PG_DIAGS("c.response_json") " d WHERE d ->> 'severity' = '" severity "')"          \
                                            "    ELSE 0 END AS " name ","
#define V_CALLS_IS_TEARDOWN                                                                        \
    "  c.method IN ('/plugin.GRPCBroker/StartStream', '/plugin.GRPCStdio/StreamStdio',"            \
    "    '/plugin.GRPCController/Shutdown')"                                                       \
    "    AND (c.status_code IS NULL OR c.status_code IN (0, 1, 14)) AS is_teardown,"
#define V_CALLS_ENDED_ELSEWHERE                                                                    \
    "  (p.ended_us IS NOT NULL OR (SELECT r.ended_us FROM runs r WHERE r.id = c.run_id)"           \
    "    IS NOT NULL) AS ended_elsewhere"
/* Migration 9's columns after is_teardown. */
#define V_CALLS_TAIL_9                                                                             \
    "  coalesce(c.status_code, -1) = 12 AND c.method IN " OPTIONAL_RPCS                            \
    " AS optional_absent," V_CALLS_ENDED_ELSEWHERE ","                                             \
    "  coalesce(p.dropped, 0) > 0 AS process_lost"
#define V_CALLS_FROM "  FROM calls c LEFT JOIN processes p ON p.id = c.process_id"
#define V_CALLS_FROM_ADDRESSES V_CALLS_FROM "  LEFT JOIN call_addresses a ON a.call_id = c.id"

static const char *const migrations[] = {
    /* 0 -> 1: the initial schema. */
    "CREATE TABLE secret_key ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  key BLOB NOT NULL);"
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  command TEXT NOT NULL DEFAULT '',"
    "  args TEXT NOT NULL DEFAULT '[]',"
    "  cwd TEXT,"
    "  cli_name TEXT,"
    "  cli_version TEXT,"
    "  started_us INTEGER NOT NULL,"
    "  ended_us INTEGER,"
    "  exit_code INTEGER);"
    "CREATE TABLE schemas ("
    "  sha256 TEXT PRIMARY KEY,"
    "  kind TEXT NOT NULL DEFAULT 'provider',"
    "  provider TEXT,"
    "  protocol INTEGER NOT NULL,"
    "  encoding TEXT NOT NULL DEFAULT 'identity',"
    "  size INTEGER NOT NULL,"
    "  raw BLOB NOT NULL,"
    "  first_seen_us INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE processes ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  provider TEXT,"
    "  version TEXT,"
    "  protocol INTEGER,"
    "  pid INTEGER,"
    "  binary_path TEXT,"
    "  binary_sha256 TEXT,"
    "  schema_sha256 TEXT REFERENCES schemas(sha256),"
    "  schema_source TEXT,"
    "  identity_sha256 TEXT REFERENCES schemas(sha256),"
    "  started_us INTEGER NOT NULL,"
    "  ended_us INTEGER,"
    "  dropped INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX processes_run ON processes(run_id);"
    "CREATE INDEX processes_binary ON processes(binary_sha256);"
    "CREATE TABLE calls ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  process_id INTEGER NOT NULL REFERENCES processes(id),"
    "  call_seq INTEGER NOT NULL,"
    "  method TEXT NOT NULL,"
    "  rpc TEXT NOT NULL,"
    "  stream INTEGER NOT NULL DEFAULT 0,"
    "  started_us INTEGER NOT NULL,"
    "  ended_us INTEGER,"
    "  status_code INTEGER,"
    "  status_message TEXT,"
    "  request_bytes INTEGER NOT NULL DEFAULT 0,"
    "  response_bytes INTEGER NOT NULL DEFAULT 0,"
    "  request_count INTEGER NOT NULL DEFAULT 0,"
    "  response_count INTEGER NOT NULL DEFAULT 0,"
    "  type_name TEXT,"
    "  request_json TEXT,"
    "  response_json TEXT,"
    "  decode_error TEXT,"
    "  schema_sha256 TEXT,"
    "  address TEXT,"
    "  address_note TEXT,"
    "  UNIQUE (process_id, call_seq));"
    "CREATE INDEX calls_run ON calls(run_id, rpc);"
    "CREATE TABLE messages ("
    "  call_id INTEGER NOT NULL REFERENCES calls(id),"
    "  seq INTEGER NOT NULL,"
    "  direction TEXT NOT NULL,"
    "  t_us INTEGER NOT NULL,"
    "  raw BLOB NOT NULL,"
    "  PRIMARY KEY (call_id, seq)) WITHOUT ROWID;"
    "CREATE TABLE gaps ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER,"
    "  process_id INTEGER REFERENCES processes(id),"
    "  lost INTEGER NOT NULL,"
    "  recorded_us INTEGER NOT NULL,"
    "  reason TEXT);"
    "CREATE VIEW v_calls AS SELECT"
    "  c.id AS call_id, c.run_id, c.process_id, p.provider, p.version AS provider_version,"
    "  p.protocol, c.call_seq, c.method, c.rpc, c.stream, c.type_name, c.address,"
    "  c.started_us, c.ended_us, c.ended_us - c.started_us AS duration_us,"
    "  c.ended_us IS NULL AS in_flight, c.status_code, c.status_message,"
    "  c.request_bytes, c.response_bytes, c.request_count, c.response_count,"
    "  c.request_json, c.response_json, c.decode_error"
    "  FROM calls c LEFT JOIN processes p ON p.id = c.process_id;"
    "CREATE VIEW v_resource_changes AS SELECT"
    "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, c.address, c.address_note,"
    "  CASE c.rpc WHEN 'ReadResource' THEN c.request_json -> '$.current_state'"
    "    ELSE c.request_json -> '$.prior_state' END AS prior,"
    "  c.request_json -> '$.proposed_new_state' AS proposed,"
    "  c.request_json -> '$.config' AS config,"
    "  CASE c.rpc WHEN 'PlanResourceChange' THEN c.response_json -> '$.planned_state'"
    "    WHEN 'ApplyResourceChange' THEN c.request_json -> '$.planned_state' END AS planned,"
    "  CASE c.rpc WHEN 'PlanResourceChange' THEN NULL"
    "    ELSE c.response_json -> '$.new_state' END AS new,"
    "  c.response_json -> '$.requires_replace' AS requires_replace,"
    "  c.response_json -> '$.diagnostics' AS diagnostics,"
    "  c.status_code, c.started_us, c.ended_us"
    "  FROM calls c"
    "  WHERE c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', 'ReadResource')"
    "    AND json_valid(coalesce(c.request_json, '{}'))"
    "    AND json_valid(coalesce(c.response_json, '{}'));"
    "CREATE VIEW v_diagnostics AS SELECT"
    "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, c.address,"
    "  d.value ->> '$.severity' AS severity, d.value ->> '$.summary' AS summary,"
    "  d.value ->> '$.detail' AS detail, d.value ->> '$.attribute.path' AS attribute"
    "  FROM calls c, json_each(CASE WHEN json_valid(c.response_json)"
    "    AND json_type(c.response_json) = 'object' THEN c.response_json END,"
    "    '$.diagnostics') d;",
    /* 1 -> 2: data source reads are resource changes too (config in, state
     * out), so that they can be tied to data.* addresses and shown. */
    "DROP VIEW v_resource_changes;"
    "CREATE VIEW v_resource_changes AS SELECT"
    "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, c.address, c.address_note,"
    "  CASE c.rpc WHEN 'ReadResource' THEN c.request_json -> '$.current_state'"
    "    WHEN 'ReadDataSource' THEN NULL"
    "    ELSE c.request_json -> '$.prior_state' END AS prior,"
    "  c.request_json -> '$.proposed_new_state' AS proposed,"
    "  c.request_json -> '$.config' AS config,"
    "  CASE c.rpc WHEN 'PlanResourceChange' THEN c.response_json -> '$.planned_state'"
    "    WHEN 'ApplyResourceChange' THEN c.request_json -> '$.planned_state' END AS planned,"
    "  CASE c.rpc WHEN 'PlanResourceChange' THEN NULL"
    "    WHEN 'ReadDataSource' THEN c.response_json -> '$.state'"
    "    ELSE c.response_json -> '$.new_state' END AS new,"
    "  c.response_json -> '$.requires_replace' AS requires_replace,"
    "  c.response_json -> '$.diagnostics' AS diagnostics,"
    "  c.status_code, c.started_us, c.ended_us"
    "  FROM calls c"
    "  WHERE c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', 'ReadResource',"
    "    'ReadDataSource')"
    "    AND json_valid(coalesce(c.request_json, '{}'))"
    "    AND json_valid(coalesce(c.response_json, '{}'));",
    /* 3: what the provider executable was when its digest was taken, so
     * that the next process of the same unchanged file reuses the digest
     * instead of reading tens of MB again. */
    ("ALTER TABLE processes ADD COLUMN binary_stat TEXT;"
     "CREATE INDEX processes_binary_stat ON processes(binary_stat);"),
    /* 4: runs made by `tftap wrap`'s shims, one per CLI command: which
     * command's process (store_run_join) and how many recorders are still
     * writing into it. */
    ("ALTER TABLE runs ADD COLUMN cli_key TEXT;"
     "ALTER TABLE runs ADD COLUMN recorders INTEGER NOT NULL DEFAULT 0;"
     "CREATE UNIQUE INDEX runs_cli_key ON runs(cli_key);"),
    /* 5: what a post-mortem asks first, as columns of v_calls (its other
     * columns unchanged): the status by name, the diagnostics a response
     * carries, whether the call is go-plugin's housekeeping ending as the
     * provider exits (an expected close, not an error), and whether it
     * failed. Diagnostics are counted only in responses that name a
     * severity, so most rows never have their JSON parsed. */
    ("DROP VIEW v_calls;" V_CALLS_COLUMNS V_CALLS_FAILED_5 V_CALLS_INNER("c.address")
         V_CALLS_COUNT_SQLITE("ERROR", "error_count")
             V_CALLS_COUNT_SQLITE("WARNING", "warning_count")
                 V_CALLS_IS_TEARDOWN V_CALLS_ENDED_ELSEWHERE V_CALLS_FROM ");"),
    /* 6: a run's identity beyond this file (tftap push): a random UUID
     * made by whoever creates the row (store_new_uuid), the trigger
     * filling it for a row inserted without one (an older bundle's rows,
     * your own SQL); and which key hashed the run's $sensitive values
     * when it is not this database's own (a pushed or bundled run). */
    ("ALTER TABLE runs ADD COLUMN uuid TEXT;"
     "ALTER TABLE runs ADD COLUMN key_id TEXT;"
     "UPDATE runs SET uuid = " SQLITE_UUID ";"
     "CREATE UNIQUE INDEX runs_uuid ON runs(uuid);"
     "CREATE TRIGGER runs_uuid AFTER INSERT ON runs WHEN NEW.uuid IS NULL BEGIN"
     "  UPDATE runs SET uuid = " SQLITE_UUID " WHERE id = NEW.id; END;"),
    /* 7: a connection lost after COMMIT was sent leaves the recorder in
     * doubt whether it committed; it writes again what it wrote, so every
     * row it makes has a key of its own making: processes.uuid (made by the
     * recorder), gaps.seq (its count of gap rows). processes.dropped is then
     * recomputed from the gaps rather than incremented. */
    ("ALTER TABLE processes ADD COLUMN uuid TEXT;"
     "CREATE UNIQUE INDEX processes_uuid ON processes(uuid);"
     "ALTER TABLE gaps ADD COLUMN seq INTEGER;"
     "CREATE UNIQUE INDEX gaps_seq ON gaps(process_id, seq);"),
    /* 8: a call's address and note in a narrow table of their own, so
     * that matching after the run writes a few pages instead of rewriting
     * every call row with its kilobytes of JSON (which the WAL then holds
     * again, for the last close to checkpoint). The views read them
     * through a LEFT JOIN, their columns unchanged. DROP COLUMN rewrites
     * calls once per column: a one-time cost of this step. */
    ("CREATE TABLE call_addresses ("
     "  call_id INTEGER PRIMARY KEY REFERENCES calls(id),"
     "  address TEXT,"
     "  address_note TEXT);"
     "INSERT INTO call_addresses (call_id, address, address_note)"
     "  SELECT id, address, address_note FROM calls"
     "  WHERE address IS NOT NULL OR address_note IS NOT NULL;"
     "DROP VIEW v_calls;"
     "DROP VIEW v_resource_changes;"
     "DROP VIEW v_diagnostics;"
     "ALTER TABLE calls DROP COLUMN address;"
     "ALTER TABLE calls DROP COLUMN address_note;" V_CALLS_COLUMNS V_CALLS_FAILED_5 V_CALLS_INNER(
         "a.address") V_CALLS_COUNT_SQLITE("ERROR", "error_count")
         V_CALLS_COUNT_SQLITE("WARNING", "warning_count")
             V_CALLS_IS_TEARDOWN V_CALLS_ENDED_ELSEWHERE V_CALLS_FROM_ADDRESSES
     ");"
     "CREATE VIEW v_resource_changes AS SELECT"
     "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, a.address, a.address_note,"
     "  CASE c.rpc WHEN 'ReadResource' THEN c.request_json -> '$.current_state'"
     "    WHEN 'ReadDataSource' THEN NULL"
     "    ELSE c.request_json -> '$.prior_state' END AS prior,"
     "  c.request_json -> '$.proposed_new_state' AS proposed,"
     "  c.request_json -> '$.config' AS config,"
     "  CASE c.rpc WHEN 'PlanResourceChange' THEN c.response_json -> '$.planned_state'"
     "    WHEN 'ApplyResourceChange' THEN c.request_json -> '$.planned_state' END AS planned,"
     "  CASE c.rpc WHEN 'PlanResourceChange' THEN NULL"
     "    WHEN 'ReadDataSource' THEN c.response_json -> '$.state'"
     "    ELSE c.response_json -> '$.new_state' END AS new,"
     "  c.response_json -> '$.requires_replace' AS requires_replace,"
     "  c.response_json -> '$.diagnostics' AS diagnostics,"
     "  c.status_code, c.started_us, c.ended_us"
     "  FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id"
     "  WHERE c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', 'ReadResource',"
     "    'ReadDataSource')"
     "    AND json_valid(coalesce(c.request_json, '{}'))"
     "    AND json_valid(coalesce(c.response_json, '{}'));"
     "CREATE VIEW v_diagnostics AS SELECT"
     "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, a.address,"
     "  d.value ->> '$.severity' AS severity, d.value ->> '$.summary' AS summary,"
     "  d.value ->> '$.detail' AS detail, d.value ->> '$.attribute.path' AS attribute"
     "  FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id,"
     "    json_each(CASE WHEN json_valid(c.response_json)"
     "    AND json_type(c.response_json) = 'object' THEN c.response_json END,"
     "    '$.diagnostics') d;"),
    /* 9: calls that end the way core expects although not OK are no
     * failure: v_calls.expected_close (appended, the other columns
     * unchanged) is go-plugin's teardown (is_teardown) or UNIMPLEMENTED from
     * a method a provider may lack (OPTIONAL_RPCS; tftap_call_expected_close
     * in common/ is the same rule in C), and failed leaves both out. A call
     * without its end in a process whose record has a gap was not recorded
     * to its end (v_calls.not_recorded, appended), which is no failure of
     * the provider's either. processes.start_error: why a provider
     * process did not start, in its shim's words. runs.parent_id,
     * test_name, test_step: a step run of an acceptance test (one CLI
     * command the harness ran for that test and step) under the run of
     * the test command (go test) that ran it. */
    ("ALTER TABLE processes ADD COLUMN start_error TEXT;"
     /* What core marks secret is known only from the plan and the state:
      * redacted after the run (analysis/secrets.c), the hashes of the
      * run's known secrets kept for bundles of a run recorded with
      * values_kept (--record-sensitive), redactions counting each rule. */
     "ALTER TABLE runs ADD COLUMN values_kept INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE runs ADD COLUMN redactions TEXT;"
     "CREATE TABLE run_secrets ("
     "  run_id INTEGER NOT NULL REFERENCES runs(id),"
     "  hmac TEXT NOT NULL,"
     "  PRIMARY KEY (run_id, hmac)) WITHOUT ROWID;"
     "ALTER TABLE runs ADD COLUMN parent_id INTEGER REFERENCES runs(id);"
     "ALTER TABLE runs ADD COLUMN test_name TEXT;"
     "ALTER TABLE runs ADD COLUMN test_step INTEGER;"
     "CREATE INDEX runs_parent ON runs(parent_id);"
     "DROP VIEW v_calls;" V_CALLS_COLUMNS V_CALLS_FAILED_9 V_CALLS_INNER("a.address")
         V_CALLS_COUNT_SQLITE("ERROR", "error_count")
             V_CALLS_COUNT_SQLITE("WARNING", "warning_count")
                 V_CALLS_IS_TEARDOWN V_CALLS_TAIL_9 V_CALLS_FROM_ADDRESSES ");"),
    /* 10: the working directory of an acceptance test's step run, as the
     * command found it (its configuration, its state before, the lock
     * file and a saved plan), so that `tftap replay` can run the command
     * again after the harness removed the directory: one row per file,
     * named relative to runs.cwd; content NULL when it was not kept, and
     * note says why (over the size limit, or it may hold secrets). */
    ("CREATE TABLE run_files ("
     "  run_id INTEGER NOT NULL REFERENCES runs(id),"
     "  name TEXT NOT NULL,"
     "  size INTEGER NOT NULL,"
     "  sha256 TEXT NOT NULL,"
     "  content BLOB,"
     "  note TEXT,"
     "  PRIMARY KEY (run_id, name));"),
};

#define N_MIGRATIONS (sizeof migrations / sizeof migrations[0])

/* PostgreSQL: the same tables and views from one baseline script, which
 * brings an empty database straight to version PG_BASELINE; later steps go
 * into pg_migrations with the same numbers as their SQLite twins above.
 * Types: bigint for ids, times, sizes and counts; bytea for blobs; text in
 * the "C" collation so that sorting compares bytes as SQLite does; JSON is
 * kept as text (json, unlike jsonb, returns members verbatim) and parsed by
 * tftap_json, NULL where SQLite's json_valid says 0. View flags (in_flight,
 * is_teardown, failed) are booleans. Commits to the tables a reader shows
 * live notify tftap_changes (sdb_data_version). */
#define PGT "text COLLATE \"C\""
#define PGID "bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
#define PG_DIAGS(j)                                                                                \
    "json_array_elements(CASE WHEN json_typeof(tftap_json(" j ") -> 'diagnostics') = 'array'"      \
    " THEN tftap_json(" j ") -> 'diagnostics' END)"
#define PG_BASELINE 5
static const char pg_baseline[] =
    "CREATE FUNCTION tftap_json(t text) RETURNS json LANGUAGE plpgsql IMMUTABLE AS"
    "  $$BEGIN RETURN t::json; EXCEPTION WHEN others THEN RETURN NULL; END$$;"
    "CREATE FUNCTION tftap_notify() RETURNS trigger LANGUAGE plpgsql AS"
    "  $$BEGIN PERFORM pg_notify('tftap_changes', ''); RETURN NULL; END$$;"
    "CREATE TABLE secret_key ("
    "  id integer PRIMARY KEY CHECK (id = 1),"
    "  key bytea NOT NULL);"
    "CREATE TABLE runs ("
    "  id " PGID ","
    "  command " PGT " NOT NULL DEFAULT '',"
    "  args " PGT " NOT NULL DEFAULT '[]',"
    "  cwd " PGT ","
    "  cli_name " PGT ","
    "  cli_version " PGT ","
    "  started_us bigint NOT NULL,"
    "  ended_us bigint,"
    "  exit_code integer,"
    "  cli_key " PGT ","
    "  recorders integer NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX runs_cli_key ON runs(cli_key);"
    "CREATE TABLE schemas ("
    "  sha256 " PGT " PRIMARY KEY,"
    "  kind " PGT " NOT NULL DEFAULT 'provider',"
    "  provider " PGT ","
    "  protocol integer NOT NULL,"
    "  encoding " PGT " NOT NULL DEFAULT 'identity',"
    "  size bigint NOT NULL,"
    "  raw bytea NOT NULL,"
    "  first_seen_us bigint NOT NULL);"
    "CREATE TABLE processes ("
    "  id " PGID ","
    "  run_id bigint NOT NULL REFERENCES runs(id),"
    "  provider " PGT ","
    "  version " PGT ","
    "  protocol integer,"
    "  pid integer,"
    "  binary_path " PGT ","
    "  binary_sha256 " PGT ","
    "  schema_sha256 " PGT " REFERENCES schemas(sha256),"
    "  schema_source " PGT ","
    "  identity_sha256 " PGT " REFERENCES schemas(sha256),"
    "  started_us bigint NOT NULL,"
    "  ended_us bigint,"
    "  dropped bigint NOT NULL DEFAULT 0,"
    "  binary_stat " PGT ");"
    "CREATE INDEX processes_run ON processes(run_id);"
    "CREATE INDEX processes_binary ON processes(binary_sha256);"
    "CREATE INDEX processes_binary_stat ON processes(binary_stat);"
    "CREATE TABLE calls ("
    "  id " PGID ","
    "  run_id bigint NOT NULL REFERENCES runs(id),"
    "  process_id bigint NOT NULL REFERENCES processes(id),"
    "  call_seq bigint NOT NULL,"
    "  method " PGT " NOT NULL,"
    "  rpc " PGT " NOT NULL,"
    "  stream integer NOT NULL DEFAULT 0,"
    "  started_us bigint NOT NULL,"
    "  ended_us bigint,"
    "  status_code integer,"
    "  status_message " PGT ","
    "  request_bytes bigint NOT NULL DEFAULT 0,"
    "  response_bytes bigint NOT NULL DEFAULT 0,"
    "  request_count bigint NOT NULL DEFAULT 0,"
    "  response_count bigint NOT NULL DEFAULT 0,"
    "  type_name " PGT ","
    "  request_json " PGT ","
    "  response_json " PGT ","
    "  decode_error " PGT ","
    "  schema_sha256 " PGT ","
    "  address " PGT ","
    "  address_note " PGT ","
    "  UNIQUE (process_id, call_seq));"
    "CREATE INDEX calls_run ON calls(run_id, rpc);"
    /* Paging a run's calls in id order (page.c) without sorting it whole. */
    "CREATE INDEX calls_run_id ON calls(run_id, id);"
    "CREATE TABLE messages ("
    "  call_id bigint NOT NULL REFERENCES calls(id),"
    "  seq bigint NOT NULL,"
    "  direction " PGT " NOT NULL,"
    "  t_us bigint NOT NULL,"
    "  raw bytea NOT NULL,"
    "  PRIMARY KEY (call_id, seq));"
    "CREATE TABLE gaps ("
    "  id " PGID ","
    "  run_id bigint,"
    "  process_id bigint REFERENCES processes(id),"
    "  lost bigint NOT NULL,"
    "  recorded_us bigint NOT NULL,"
    "  reason " PGT ");"
    "CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE OR DELETE ON runs"
    "  FOR EACH STATEMENT EXECUTE FUNCTION tftap_notify();"
    "CREATE TRIGGER processes_notify AFTER INSERT OR UPDATE OR DELETE ON processes"
    "  FOR EACH STATEMENT EXECUTE FUNCTION tftap_notify();"
    "CREATE TRIGGER calls_notify AFTER INSERT OR UPDATE OR DELETE ON calls"
    "  FOR EACH STATEMENT EXECUTE FUNCTION tftap_notify();"
    "CREATE TRIGGER gaps_notify AFTER INSERT OR UPDATE OR DELETE ON gaps"
    "  FOR EACH STATEMENT EXECUTE FUNCTION tftap_notify();"
    "CREATE VIEW v_calls AS SELECT call_id, run_id, process_id, provider, provider_version,"
    "  protocol, call_seq, method, rpc, stream, type_name, address, started_us, ended_us,"
    "  duration_us, in_flight, status_code, status_message, request_bytes, response_bytes,"
    "  request_count, response_count, request_json, response_json, decode_error,"
    "  status_name, error_count, warning_count, is_teardown,"
    "  NOT is_teardown AND (error_count > 0 OR coalesce(status_code, 0) != 0"
    "    OR (in_flight AND ended_elsewhere)) AS failed"
    "  FROM (SELECT"
    "  c.id AS call_id, c.run_id, c.process_id, p.provider, p.version AS provider_version,"
    "  p.protocol, c.call_seq, c.method, c.rpc, c.stream, c.type_name, c.address,"
    "  c.started_us, c.ended_us, c.ended_us - c.started_us AS duration_us,"
    "  c.ended_us IS NULL AS in_flight, c.status_code, c.status_message,"
    "  c.request_bytes, c.response_bytes, c.request_count, c.response_count,"
    "  c.request_json, c.response_json, c.decode_error,"
    "  CASE c.status_code WHEN 0 THEN 'OK' WHEN 1 THEN 'CANCELLED' WHEN 2 THEN 'UNKNOWN'"
    "    WHEN 3 THEN 'INVALID_ARGUMENT' WHEN 4 THEN 'DEADLINE_EXCEEDED' WHEN 5 THEN 'NOT_FOUND'"
    "    WHEN 6 THEN 'ALREADY_EXISTS' WHEN 7 THEN 'PERMISSION_DENIED'"
    "    WHEN 8 THEN 'RESOURCE_EXHAUSTED' WHEN 9 THEN 'FAILED_PRECONDITION' WHEN 10 THEN"
    "    'ABORTED' WHEN 11 THEN 'OUT_OF_RANGE' WHEN 12 THEN 'UNIMPLEMENTED' WHEN 13 THEN"
    "    'INTERNAL' WHEN 14 THEN 'UNAVAILABLE' WHEN 15 THEN 'DATA_LOSS' WHEN 16 THEN"
    "    'UNAUTHENTICATED' END AS status_name,"
    "  CASE WHEN strpos(c.response_json, '\"severity\"') > 0 THEN (SELECT count(*) FROM " PG_DIAGS(
        "c.response_json") " d WHERE d ->> 'severity' = 'ERROR') ELSE 0 END AS error_count,"
                           "  CASE WHEN strpos(c.response_json, '\"severity\"') > 0 THEN (SELECT "
                           "count(*) FROM " PG_DIAGS(
                               "c.response_json") " d WHERE d ->> 'severity' = 'WARNING') ELSE 0 "
                                                  "END"
                                                  "    AS warning_count,"
                                                  "  c.method IN "
                                                  "('/plugin.GRPCBroker/StartStream', "
                                                  "'/plugin.GRPCStdio/StreamStdio',"
                                                  "    '/plugin.GRPCController/Shutdown')"
                                                  "    AND (c.status_code IS NULL OR c.status_code "
                                                  "IN (0, 1, 14)) AS is_teardown,"
                                                  "  (p.ended_us IS NOT NULL OR (SELECT r.ended_us "
                                                  "FROM runs r WHERE r.id = c.run_id)"
                                                  "    IS NOT NULL) AS ended_elsewhere"
                                                  "  FROM calls c LEFT JOIN processes p ON p.id = "
                                                  "c.process_id) AS x;"
                                                  "CREATE VIEW v_resource_changes AS SELECT"
                                                  "  c.run_id, c.id AS call_id, c.rpc AS method, "
                                                  "c.type_name, c.address, c.address_note,"
                                                  "  CASE c.rpc WHEN 'ReadResource' THEN "
                                                  "tftap_json(c.request_json) -> 'current_state'"
                                                  "    WHEN 'ReadDataSource' THEN NULL"
                                                  "    ELSE tftap_json(c.request_json) -> "
                                                  "'prior_state' END AS prior,"
                                                  "  tftap_json(c.request_json) -> "
                                                  "'proposed_new_state' AS proposed,"
                                                  "  tftap_json(c.request_json) -> 'config' AS "
                                                  "config,"
                                                  "  CASE c.rpc WHEN 'PlanResourceChange' THEN "
                                                  "tftap_json(c.response_json) -> 'planned_state'"
                                                  "    WHEN 'ApplyResourceChange' THEN "
                                                  "tftap_json(c.request_json) -> 'planned_state'"
                                                  "    END AS planned,"
                                                  "  CASE c.rpc WHEN 'PlanResourceChange' THEN NULL"
                                                  "    WHEN 'ReadDataSource' THEN "
                                                  "tftap_json(c.response_json) -> 'state'"
                                                  "    ELSE tftap_json(c.response_json) -> "
                                                  "'new_state' END AS new,"
                                                  "  tftap_json(c.response_json) -> "
                                                  "'requires_replace' AS requires_replace,"
                                                  "  tftap_json(c.response_json) -> 'diagnostics' "
                                                  "AS diagnostics,"
                                                  "  c.status_code, c.started_us, c.ended_us"
                                                  "  FROM calls c"
                                                  "  WHERE c.rpc IN ('PlanResourceChange', "
                                                  "'ApplyResourceChange', 'ReadResource',"
                                                  "    'ReadDataSource')"
                                                  "    AND tftap_json(coalesce(c.request_json, "
                                                  "'{}')) IS NOT NULL"
                                                  "    AND tftap_json(coalesce(c.response_json, "
                                                  "'{}')) IS NOT NULL;"
                                                  "CREATE VIEW v_diagnostics AS SELECT"
                                                  "  c.run_id, c.id AS call_id, c.rpc AS method, "
                                                  "c.type_name, c.address,"
                                                  "  d ->> 'severity' AS severity, d ->> 'summary' "
                                                  "AS summary,"
                                                  "  d ->> 'detail' AS detail, d #>> "
                                                  "'{attribute,path}' AS attribute"
                                                  "  FROM calls c, " PG_DIAGS(
                                                      "c.response_json") " d;";

/* Steps after the baseline: pg_migrations[i] brings PG_BASELINE + i to + i + 1. */
static const char *const pg_migrations[] = {
    /* 6 (see SQLite's): a volatile default fills every existing row with
     * its own value and covers rows inserted without one. */
    ("ALTER TABLE runs ADD COLUMN uuid " PGT " DEFAULT gen_random_uuid()::text;"
     "ALTER TABLE runs ADD COLUMN key_id " PGT ";"
     "CREATE UNIQUE INDEX runs_uuid ON runs(uuid);"),
    /* 7: see migrations[7] (processes.uuid, gaps.seq). */
    ("ALTER TABLE processes ADD COLUMN uuid " PGT ";"
     "CREATE UNIQUE INDEX processes_uuid ON processes(uuid);"
     "ALTER TABLE gaps ADD COLUMN seq bigint;"
     "CREATE UNIQUE INDEX gaps_seq ON gaps(process_id, seq);"),
    /* 8: see migrations[8] (call_addresses). PostgreSQL drops a column
     * without rewriting the table. Left unformatted: clang-format breaks
     * the SQL lines apart around PG_DIAGS. */
    /* clang-format off */
    ("CREATE TABLE call_addresses ("
     "  call_id bigint PRIMARY KEY REFERENCES calls(id),"
     "  address " PGT ","
     "  address_note " PGT ");"
     "INSERT INTO call_addresses (call_id, address, address_note)"
     "  SELECT id, address, address_note FROM calls"
     "  WHERE address IS NOT NULL OR address_note IS NOT NULL;"
     "CREATE TRIGGER call_addresses_notify AFTER INSERT OR UPDATE OR DELETE ON call_addresses"
     "  FOR EACH STATEMENT EXECUTE FUNCTION tftap_notify();"
     "DROP VIEW v_calls;"
     "DROP VIEW v_resource_changes;"
     "DROP VIEW v_diagnostics;"
     "ALTER TABLE calls DROP COLUMN address, DROP COLUMN address_note;"
     V_CALLS_COLUMNS V_CALLS_FAILED_5 V_CALLS_INNER("a.address")
     V_CALLS_COUNT_PG("ERROR", "error_count") V_CALLS_COUNT_PG("WARNING", "warning_count")
     V_CALLS_IS_TEARDOWN V_CALLS_ENDED_ELSEWHERE V_CALLS_FROM_ADDRESSES ") AS x;"
     "CREATE VIEW v_resource_changes AS SELECT"
     "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, a.address, a.address_note,"
     "  CASE c.rpc WHEN 'ReadResource' THEN tftap_json(c.request_json) -> 'current_state'"
     "    WHEN 'ReadDataSource' THEN NULL"
     "    ELSE tftap_json(c.request_json) -> 'prior_state' END AS prior,"
     "  tftap_json(c.request_json) -> 'proposed_new_state' AS proposed,"
     "  tftap_json(c.request_json) -> 'config' AS config,"
     "  CASE c.rpc WHEN 'PlanResourceChange' THEN tftap_json(c.response_json) -> 'planned_state'"
     "    WHEN 'ApplyResourceChange' THEN tftap_json(c.request_json) -> 'planned_state'"
     "    END AS planned,"
     "  CASE c.rpc WHEN 'PlanResourceChange' THEN NULL"
     "    WHEN 'ReadDataSource' THEN tftap_json(c.response_json) -> 'state'"
     "    ELSE tftap_json(c.response_json) -> 'new_state' END AS new,"
     "  tftap_json(c.response_json) -> 'requires_replace' AS requires_replace,"
     "  tftap_json(c.response_json) -> 'diagnostics' AS diagnostics,"
     "  c.status_code, c.started_us, c.ended_us"
     "  FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id"
     "  WHERE c.rpc IN ('PlanResourceChange', 'ApplyResourceChange', 'ReadResource',"
     "    'ReadDataSource')"
     "    AND tftap_json(coalesce(c.request_json, '{}')) IS NOT NULL"
     "    AND tftap_json(coalesce(c.response_json, '{}')) IS NOT NULL;"
     "CREATE VIEW v_diagnostics AS SELECT"
     "  c.run_id, c.id AS call_id, c.rpc AS method, c.type_name, a.address,"
     "  d ->> 'severity' AS severity, d ->> 'summary' AS summary,"
     "  d ->> 'detail' AS detail, d #>> '{attribute,path}' AS attribute"
     "  FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id,"
     "    " PG_DIAGS("c.response_json") " d;"),
    /* 9: see migrations[9] (v_calls.expected_close and not_recorded,
     * processes.start_error, the runs of acceptance test steps). */
    /* clang-format off */
    ("ALTER TABLE processes ADD COLUMN start_error text;"
     "ALTER TABLE runs ADD COLUMN values_kept integer NOT NULL DEFAULT 0;"
     "ALTER TABLE runs ADD COLUMN redactions text;"
     "CREATE TABLE run_secrets ("
     "  run_id bigint NOT NULL REFERENCES runs(id),"
     "  hmac text NOT NULL,"
     "  PRIMARY KEY (run_id, hmac));"
     "ALTER TABLE runs ADD COLUMN parent_id bigint REFERENCES runs(id);"
     "ALTER TABLE runs ADD COLUMN test_name " PGT ";"
     "ALTER TABLE runs ADD COLUMN test_step bigint;"
     "CREATE INDEX runs_parent ON runs(parent_id);"
     "DROP VIEW v_calls;"
     V_CALLS_COLUMNS V_CALLS_FAILED_9 V_CALLS_INNER("a.address")
     V_CALLS_COUNT_PG("ERROR", "error_count") V_CALLS_COUNT_PG("WARNING", "warning_count")
     V_CALLS_IS_TEARDOWN V_CALLS_TAIL_9 V_CALLS_FROM_ADDRESSES ") AS x;"),
    /* 10: see migrations[10] (run_files). */
    ("CREATE TABLE run_files ("
     "  run_id bigint NOT NULL REFERENCES runs(id),"
     "  name " PGT " NOT NULL,"
     "  size bigint NOT NULL,"
     "  sha256 " PGT " NOT NULL,"
     "  content bytea,"
     "  note " PGT ","
     "  PRIMARY KEY (run_id, name));"),
    /* clang-format on */
    NULL};
#define N_PG_MIGRATIONS (sizeof pg_migrations / sizeof pg_migrations[0] - 1)
_Static_assert(PG_BASELINE + N_PG_MIGRATIONS == N_MIGRATIONS,
               "every SQLite migration has its PostgreSQL twin");

const int store_schema_version = (int)N_MIGRATIONS;

int store_schema_current(void)
{
    return store_schema_version;
}

int store_user_version(sdb *db, int *v)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(db, "PRAGMA user_version", &st);
    if (rc == SDB_OK) {
        rc = sdb_step(st);
        if (rc == SDB_ROW) {
            *v = sdb_column_int(st, 0);
            rc = SDB_OK;
        }
    }
    sdb_finalize(st);
    return rc;
}

/* PostgreSQL keeps the schema version in a table of its own (SQLite's
 * user_version has no equivalent). A database without it has no record:
 * 0, or SDB_NOTFOUND when missing_ok is 0. */
int store_pg_version(sdb *db, int *v, int missing_ok)
{
    sdb_stmt *st = NULL;
    *v = 0;
    int rc = sdb_prepare(db, "SELECT to_regclass('tftap_meta') IS NOT NULL", &st);
    if (rc == SDB_OK && (rc = sdb_step(st)) == SDB_ROW && !sdb_column_int(st, 0))
        rc = missing_ok ? SDB_OK : SDB_NOTFOUND;
    else if (rc == SDB_ROW) {
        sdb_finalize(st);
        st = NULL;
        rc = sdb_prepare(db, "SELECT value FROM tftap_meta WHERE key = 'schema_version'", &st);
        if (rc == SDB_OK && (rc = sdb_step(st)) == SDB_ROW) {
            /* Someone else's table may hold anything there. */
            const char *t = (const char *)sdb_column_text(st, 0);
            char *end = NULL;
            long n = t ? strtol(t, &end, 10) : -1;
            if (t && end != t && *end == '\0' && n >= 0 && n <= INT_MAX) {
                *v = (int)n;
                rc = SDB_OK;
            } else {
                rc = SDB_NOTADB;
            }
        } else if (rc == SDB_DONE) {
            rc = missing_ok ? SDB_OK : SDB_NOTFOUND;
        }
    }
    sdb_finalize(st);
    return rc;
}

/* Several recorders starting at once on an empty database: the advisory
 * lock (any constant of ours) makes one of them migrate, inside the same
 * transaction as the DDL, and the others find it done. */
static int migrate_pg(sdb *db)
{
    int v = 0;
    if (store_pg_version(db, &v, 1) == SDB_OK && v >= (int)N_MIGRATIONS)
        return v == (int)N_MIGRATIONS ? SDB_OK : SDB_NOTADB; /* newer: do not touch */
    int rc = store_begin(db, 60000);
    if (rc != SDB_OK)
        return rc;
    rc = store_exec(db, "SELECT pg_advisory_xact_lock(7419627396);"
                        "CREATE TABLE IF NOT EXISTS tftap_meta ("
                        "  key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL)");
    if (rc == SDB_OK)
        rc = store_pg_version(db, &v, 1);
    if (rc == SDB_OK && v > (int)N_MIGRATIONS)
        rc = SDB_NOTADB; /* written by a newer tftap: do not touch */
    if (rc == SDB_OK && v < PG_BASELINE) {
        rc = store_exec(db, pg_baseline);
        v = PG_BASELINE;
    }
    for (; rc == SDB_OK && v < (int)N_MIGRATIONS; v++)
        rc = store_exec(db, pg_migrations[v - PG_BASELINE]);
    if (rc == SDB_OK) {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO tftap_meta (key, value) VALUES ('schema_version', '%d')"
                 " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 (int)N_MIGRATIONS);
        rc = store_exec(db, sql);
    }
    if (rc != SDB_OK) {
        store_rollback(db);
        return rc;
    }
    return store_commit(db, 60000);
}

/* Bring the schema to N_MIGRATIONS. Runs in one IMMEDIATE transaction so
 * that several processes opening a fresh database at once migrate it once. */
int store_migrate(sdb *db)
{
    if (sdb_is_pg(db))
        return migrate_pg(db);
    int v = 0;
    int rc = store_user_version(db, &v);
    if (rc != SDB_OK)
        return rc;
    if (v == (int)N_MIGRATIONS)
        return SDB_OK;
    if (v > (int)N_MIGRATIONS)
        return SDB_ERROR; /* written by a newer tftap: do not touch */
    rc = store_begin(db, 60000);
    if (rc != SDB_OK)
        return rc;
    rc = store_user_version(db, &v);
    if (rc != SDB_OK)
        goto rollback;
    if (v > (int)N_MIGRATIONS) {
        rc = SDB_ERROR;
        goto rollback;
    }
    for (; v < (int)N_MIGRATIONS; v++) {
        rc = store_exec(db, migrations[v]);
        if (rc != SDB_OK)
            goto rollback;
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", (int)N_MIGRATIONS);
    rc = store_exec(db, sql);
    if (rc != SDB_OK)
        goto rollback;
    return store_commit(db, 60000);
rollback:
    store_rollback(db);
    return rc;
}
