/* store: opening the database, its schema and migrations, runs. */
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

/* Each step brings user_version from its index to index + 1. Never edit a
 * released step: append a new one (docs/database.md describes the result). */
/* A random (version 4) UUID in SQL, per row. */
#define SQLITE_UUID                                                                                \
    "(lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||"                    \
    " substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (random() & 3), 1) ||"     \
    " substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))))"

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
    ("DROP VIEW v_calls;"
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
     "  CASE WHEN instr(c.response_json, '\"severity\"') > 0"
     "    AND json_valid(c.response_json) THEN CASE json_type(c.response_json)"
     "    WHEN 'object' THEN (SELECT count(*) FROM json_each(c.response_json,"
     "    '$.diagnostics') d WHERE d.value ->> '$.severity' = 'ERROR') ELSE 0 END"
     "    ELSE 0 END AS error_count,"
     "  CASE WHEN instr(c.response_json, '\"severity\"') > 0"
     "    AND json_valid(c.response_json) THEN CASE json_type(c.response_json)"
     "    WHEN 'object' THEN (SELECT count(*) FROM json_each(c.response_json,"
     "    '$.diagnostics') d WHERE d.value ->> '$.severity' = 'WARNING') ELSE 0 END"
     "    ELSE 0 END AS warning_count,"
     "  c.method IN ('/plugin.GRPCBroker/StartStream', '/plugin.GRPCStdio/StreamStdio',"
     "    '/plugin.GRPCController/Shutdown')"
     "    AND (c.status_code IS NULL OR c.status_code IN (0, 1, 14)) AS is_teardown,"
     "  (p.ended_us IS NOT NULL OR (SELECT r.ended_us FROM runs r WHERE r.id = c.run_id)"
     "    IS NOT NULL) AS ended_elsewhere"
     "  FROM calls c LEFT JOIN processes p ON p.id = c.process_id);"),
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
    NULL};
#define N_PG_MIGRATIONS (sizeof pg_migrations / sizeof pg_migrations[0] - 1)
_Static_assert(PG_BASELINE + N_PG_MIGRATIONS == N_MIGRATIONS,
               "every SQLite migration has its PostgreSQL twin");

const char *store_rpc_name(const char *method)
{
    const char *slash = method ? strrchr(method, '/') : NULL;
    return slash ? slash + 1 : (method ? method : "");
}

static void uuid_format(unsigned char b[16], char out[STORE_UUID_LEN + 1])
{
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

int store_new_uuid(char out[STORE_UUID_LEN + 1])
{
    /* From the kernel, not OpenSSL's generator: a name needs no DRBG, and
     * `tftap run` would load OpenSSL's configuration for it (3 ms) before
     * it starts the command. */
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return TFTAP_EIO;
        got += (size_t)n;
    }
    uuid_format(b, out);
    return 0;
}

void store_uuid_of(const void *data, size_t len, char out[STORE_UUID_LEN + 1])
{
    char hex[65];
    unsigned char b[16];
    tftap_sha256_hex(data, len, hex);
    for (int i = 0; i < 16; i++)
        b[i] = (unsigned char)(tftap_hex_digit((unsigned char)hex[2 * i]) << 4 |
                               tftap_hex_digit((unsigned char)hex[2 * i + 1]));
    uuid_format(b, out);
}

int store_err(int rc)
{
    switch (rc & 0xff) {
    case SDB_OK:
    case SDB_DONE:
    case SDB_ROW:
        return 0;
    case SDB_NOMEM:
        return TFTAP_ENOMEM;
    case SDB_CANTOPEN:
        return TFTAP_EIO;
    case SDB_NOLIB:
        return TFTAP_ENOLIB;
    default:
        return TFTAP_ESTORE;
    }
}

int store_exec(sdb *db, const char *sql)
{
    return sdb_exec(db, sql);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The busy handler already waited up to STORE_BUSY_TIMEOUT_MS inside each
 * attempt; retrying on top of it means a long-held lock (another process's
 * huge schema insert, a user's open write transaction) delays us but never
 * makes us give up within deadline_ms. */
static int exec_retry(sdb *db, const char *sql, unsigned deadline_ms)
{
    unsigned waited = 0;
    for (;;) {
        int rc = store_exec(db, sql);
        if ((rc & 0xff) != SDB_BUSY && (rc & 0xff) != SDB_LOCKED)
            return rc;
        if (deadline_ms && waited >= deadline_ms)
            return rc;
        sleep_ms(10);
        waited += 10 + STORE_BUSY_TIMEOUT_MS;
    }
}

int store_begin(sdb *db, unsigned deadline_ms)
{
    return exec_retry(db, "BEGIN IMMEDIATE", deadline_ms);
}

int store_commit(sdb *db, unsigned deadline_ms)
{
    return exec_retry(db, "COMMIT", deadline_ms);
}

void store_rollback(sdb *db)
{
    if (!sdb_get_autocommit(db))
        store_exec(db, "ROLLBACK");
}

int store_make_parent_dirs(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p)
        return TFTAP_ENOMEM;
    memcpy(p, path, n + 1);
    int rc = 0;
    /* Walk each prefix ending before a '/', skipping the root. */
    for (size_t i = 1; i < n; i++) {
        if (p[i] != '/')
            continue;
        p[i] = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            rc = TFTAP_EIO;
            p[i] = '/';
            break;
        }
        p[i] = '/';
    }
    if (!rc) {
        /* The last component must be a directory we can reach. */
        char *slash = strrchr(p, '/');
        if (slash && slash != p) {
            *slash = '\0';
            struct stat st;
            if (stat(p, &st) != 0)
                rc = TFTAP_EIO;
            else if (!S_ISDIR(st.st_mode)) {
                errno = ENOTDIR;
                rc = TFTAP_EIO;
            }
        }
    }
    free(p);
    return rc;
}

static int get_user_version(sdb *db, int *v)
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
static int pg_version(sdb *db, int *v, int missing_ok)
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
    if (pg_version(db, &v, 1) == SDB_OK && v >= (int)N_MIGRATIONS)
        return v == (int)N_MIGRATIONS ? SDB_OK : SDB_NOTADB; /* newer: do not touch */
    int rc = store_begin(db, 60000);
    if (rc != SDB_OK)
        return rc;
    rc = store_exec(db, "SELECT pg_advisory_xact_lock(7419627396);"
                        "CREATE TABLE IF NOT EXISTS tftap_meta ("
                        "  key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL)");
    if (rc == SDB_OK)
        rc = pg_version(db, &v, 1);
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
static int migrate(sdb *db)
{
    if (sdb_is_pg(db))
        return migrate_pg(db);
    int v = 0;
    int rc = get_user_version(db, &v);
    if (rc != SDB_OK)
        return rc;
    if (v == (int)N_MIGRATIONS)
        return SDB_OK;
    if (v > (int)N_MIGRATIONS)
        return SDB_ERROR; /* written by a newer tftap: do not touch */
    rc = store_begin(db, 60000);
    if (rc != SDB_OK)
        return rc;
    rc = get_user_version(db, &v);
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

/* The per-database HMAC key: made once from the OS's random source by
 * whichever process gets there first. */
static int load_key(sdb *db, unsigned char key[STORE_KEY_LEN])
{
    sdb_stmt *st = NULL;
    int rc = SDB_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = sdb_prepare(db, "SELECT key FROM secret_key WHERE id = 1", &st);
        if (rc != SDB_OK)
            return rc;
        rc = sdb_step(st);
        if (rc == SDB_ROW && sdb_column_bytes(st, 0) == STORE_KEY_LEN) {
            memcpy(key, sdb_column_blob(st, 0), STORE_KEY_LEN);
            sdb_finalize(st);
            return SDB_OK;
        }
        sdb_finalize(st);
        st = NULL;
        if (rc != SDB_DONE && rc != SDB_ROW)
            return rc;
        unsigned char fresh[STORE_KEY_LEN];
        if (RAND_bytes(fresh, sizeof fresh) != 1)
            return SDB_ERROR;
        rc = store_begin(db, 60000);
        if (rc != SDB_OK)
            return rc;
        rc = sdb_prepare(
            db, "INSERT INTO secret_key (id, key) VALUES (1, ?) ON CONFLICT (id) DO NOTHING", &st);
        if (rc == SDB_OK) {
            sdb_bind_blob(st, 1, fresh, sizeof fresh, SDB_TRANSIENT);
            rc = sdb_step(st);
            rc = rc == SDB_DONE ? SDB_OK : rc;
        }
        sdb_finalize(st);
        st = NULL;
        if (rc != SDB_OK) {
            store_rollback(db);
            return rc;
        }
        rc = store_commit(db, 60000);
        if (rc != SDB_OK) {
            store_rollback(db);
            return rc;
        }
    }
    return SDB_ERROR;
}

/* journal_mode=WAL needs a moment of exclusive access the first time. */
static int set_wal(sdb *db)
{
    for (int i = 0; i < 100; i++) {
        int rc = store_exec(db, "PRAGMA journal_mode=WAL");
        if ((rc & 0xff) != SDB_BUSY && (rc & 0xff) != SDB_LOCKED)
            return rc;
        sleep_ms(50);
    }
    return SDB_BUSY;
}

/* The largest older bundle brought up to date in memory. */
#define STORE_BUNDLE_MAX_BYTES ((int64_t)1 << 30)

static int application_id(sdb *db, int64_t *id)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(db, "PRAGMA application_id", &st);
    if (rc == SDB_OK) {
        rc = sdb_step(st);
        if (rc == SDB_ROW) {
            *id = (uint32_t)sdb_column_int64(st, 0);
            rc = SDB_OK;
        }
    }
    sdb_finalize(st);
    return rc;
}

/* The runs of a bundle from before version 6 get their uuid from the
 * file's bytes instead of at random: opened again (it is migrated in memory
 * on every open), it is still the same run, and pushing it twice adds it
 * once. */
static int stable_uuids(sdb *db, const char *digest)
{
    sdb_stmt *q = NULL, *upd = NULL;
    int rc = sdb_prepare(db, "SELECT id FROM runs ORDER BY id", &q);
    if (rc == SDB_OK)
        rc = sdb_prepare(db, "UPDATE runs SET uuid = ? WHERE id = ?", &upd);
    while (rc == SDB_OK && (rc = sdb_step(q)) == SDB_ROW) {
        char seed[96], uuid[STORE_UUID_LEN + 1];
        int64_t id = sdb_column_int64(q, 0);
        int n = snprintf(seed, sizeof seed, "%s:%lld", digest, (long long)id);
        store_uuid_of(seed, (size_t)n, uuid);
        sdb_reset(upd);
        sdb_bind_text(upd, 1, uuid, -1, SDB_TRANSIENT);
        sdb_bind_int64(upd, 2, id);
        rc = sdb_step(upd);
        rc = rc == SDB_DONE ? SDB_OK : rc;
    }
    rc = rc == SDB_DONE ? SDB_OK : rc;
    sdb_finalize(q);
    sdb_finalize(upd);
    return rc;
}

/* A bundle an older tftap wrote: read whole into memory and migrated
 * there, so that it reads as a current one while its file is left as it
 * is (it is someone's evidence). */
static int open_old_bundle(const char *path, sdb **out)
{
    tftap_buf file = TFTAP_BUF_INIT;
    sdb *db = NULL;
    int v = 0;
    char digest[65];
    int rc = tftap_read_file(path, (size_t)STORE_BUNDLE_MAX_BYTES, &file);
    if (rc)
        return rc == TFTAP_ENOMEM ? SDB_NOMEM : SDB_ERROR;
    tftap_sha256_hex(file.data, file.len, digest);
    rc = sdb_open_sqlite_image(file.data, file.len, &db);
    tftap_buf_done(&file);
    if (rc == SDB_OK)
        rc = get_user_version(db, &v);
    if (rc == SDB_OK)
        rc = migrate(db);
    if (rc == SDB_OK && v < 6)
        rc = stable_uuids(db, digest);
    if (rc == SDB_OK)
        rc = store_exec(db, "PRAGMA query_only=1");
    if (rc != SDB_OK) {
        sdb_close(db);
        return rc;
    }
    *out = db;
    return SDB_OK;
}

/* A reader that must never write: no WAL switch, no migration, no key.
 * The schema must already be this version's; query_only guards against
 * a statement that would write anyway. */
static int open_readonly(const char *path, sdb **out, int *snapshot)
{
    sdb *db = NULL;
    int v = 0;
    *snapshot = 0;
    int rc = sdb_open(path, SDB_OPEN_READONLY, &db);
    if (rc != SDB_OK)
        goto fail;
    sdb_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    rc = store_exec(db, "PRAGMA query_only=1");
    if (rc != SDB_OK)
        goto fail;
    rc = get_user_version(db, &v);
    if ((rc & 0xff) == SDB_READONLY || (rc & 0xff) == SDB_CANTOPEN) {
        /* A WAL database whose -shm is missing and whose directory we
         * cannot write (someone else's, or a read-only copy): no reader can
         * make the shared memory file. Nobody can be writing it then unless
         * they own it, so read it as it is: immutable, a snapshot. */
        sdb_close(db);
        db = NULL;
        tftap_buf uri = TFTAP_BUF_INIT;
        tftap_buf_puts(&uri, "file:");
        for (const char *p = path; *p; p++) {
            if (*p == '%' || *p == '?' || *p == '#')
                tftap_buf_printf(&uri, "%%%02X", (unsigned char)*p);
            else
                tftap_buf_putc(&uri, *p);
        }
        tftap_buf_puts(&uri, "?immutable=1");
        rc = tftap_buf_failed(&uri) ? SDB_NOMEM
                                    : sdb_open(uri.data, SDB_OPEN_READONLY | SDB_OPEN_URI, &db);
        tftap_buf_done(&uri);
        if (rc != SDB_OK)
            goto fail;
        rc = store_exec(db, "PRAGMA query_only=1");
        if (rc == SDB_OK)
            rc = get_user_version(db, &v);
        *snapshot = 1;
    }
    if (rc != SDB_OK)
        goto fail;
    int64_t app = 0;
    if (v > 0 && v < (int)N_MIGRATIONS && application_id(db, &app) == SDB_OK &&
        app == STORE_BUNDLE_APPLICATION_ID) {
        sdb_close(db);
        db = NULL;
        rc = open_old_bundle(path, &db);
        if (rc != SDB_OK)
            goto fail;
        *snapshot = 1;
        *out = db;
        return 0;
    }
    if (v != (int)N_MIGRATIONS) {
        rc = SDB_ERROR; /* not migrated yet, or from a newer tftap */
        goto fail;
    }
    *out = db;
    return 0;
fail:;
    int err = store_err(rc);
    if ((rc & 0xff) == SDB_CANTOPEN && errno == 0)
        errno = EACCES;
    sdb_close(db);
    return err ? err : TFTAP_ESTORE;
}

/* A PostgreSQL database: no file to create, so any writer migrates it
 * (an empty database becomes a tftap record). */
static int pg_open(const char *uri, sdb **out, unsigned char key[STORE_KEY_LEN])
{
    sdb *db = NULL;
    int rc = sdb_open(uri, SDB_OPEN_READWRITE, &db);
    if (rc == SDB_OK)
        rc = migrate(db);
    if (rc == SDB_OK)
        rc = load_key(db, key);
    if (rc != SDB_OK) {
        /* Connected, then refused (permissions, a failed migration): the
         * server's reason is what the user needs. */
        if (db && rc != SDB_GONE)
            sdb_set_open_error(rc == SDB_NOTADB ? NULL : sdb_errmsg(db));
        sdb_close(db);
        return rc == SDB_GONE || rc == SDB_CANTOPEN ? TFTAP_EIO : store_err(rc);
    }
    *out = db;
    return 0;
}

/* A reader: a read-only session on a database already at this version. */
static int pg_open_readonly(const char *uri, sdb **out)
{
    sdb *db = NULL;
    int v = 0;
    int rc = sdb_open(uri, SDB_OPEN_READONLY, &db);
    if (rc == SDB_OK)
        rc = pg_version(db, &v, 0);
    int mismatch = rc == SDB_OK && v != (int)N_MIGRATIONS;
    if (mismatch)
        rc = SDB_ERROR; /* not migrated yet, or from a newer tftap */
    if (rc != SDB_OK) {
        if (db && rc != SDB_GONE)
            sdb_set_open_error(mismatch || rc == SDB_NOTFOUND ? NULL : sdb_errmsg(db));
        sdb_close(db);
        return rc == SDB_NOTFOUND                     ? TFTAP_ENOTFOUND
               : rc == SDB_GONE || rc == SDB_CANTOPEN ? TFTAP_EIO
                                                      : store_err(rc);
    }
    *out = db;
    return 0;
}

int store_db_open(const char *path, int create, sdb **out, unsigned char key[STORE_KEY_LEN])
{
    *out = NULL;
    if (!path || !*path)
        return TFTAP_EINVAL;
    if (sdb_target_is_pg(path))
        return pg_open(path, out, key);
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return TFTAP_EIO;
        if (!create)
            return TFTAP_ENOTFOUND;
        int rc = store_make_parent_dirs(path);
        if (rc)
            return rc;
        /* Create the file ourselves so it is 0600 whatever the umask; SQLite
         * gives -wal and -shm the database file's permissions. */
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return TFTAP_EIO;
        close(fd);
    } else if (store_file_is_bundle(path) == 1) {
        /* A bundle is someone's evidence (and holds no key): never
         * recorded into, migrated or switched to WAL. */
        return TFTAP_ESTORE;
    }
    sdb *db = NULL;
    int rc = sdb_open(path, SDB_OPEN_READWRITE, &db);
    if (rc != SDB_OK)
        goto fail;
    sdb_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    /* Rows hold kilobytes of JSON: bigger pages mean fewer overflow pages.
     * Only takes effect on a new, empty database. */
    store_exec(db, "PRAGMA page_size=16384");
    rc = set_wal(db);
    if (rc != SDB_OK)
        goto fail;
    rc = store_exec(db, "PRAGMA synchronous=NORMAL");
    if (rc != SDB_OK)
        goto fail;
    rc = migrate(db);
    if (rc != SDB_OK)
        goto fail;
    rc = load_key(db, key);
    if (rc != SDB_OK)
        goto fail;
    *out = db;
    return 0;
fail:;
    int err = store_err(rc);
    if ((rc & 0xff) == SDB_CANTOPEN && errno == 0)
        errno = EACCES;
    sdb_close(db);
    return err ? err : TFTAP_ESTORE;
}

int store_path_is_url(const char *path)
{
    return sdb_target_is_pg(path);
}

const char *store_open_error(void)
{
    return sdb_open_error();
}

/* Whether a URI query key (n bytes, percent-encoded, as libpq decodes it)
 * names a password: password, sslpassword. */
static int key_is_secret(const char *k, size_t n)
{
    char d[32];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)k[i];
        if (c == '%' && i + 2 < n && isxdigit((unsigned char)k[i + 1]) &&
            isxdigit((unsigned char)k[i + 2])) {
            char hex[3] = {k[i + 1], k[i + 2], 0};
            c = (int)strtol(hex, NULL, 16);
            i += 2;
        }
        if (o == sizeof d - 1)
            return 0; /* longer than any keyword libpq knows */
        d[o++] = (char)tolower(c);
    }
    d[o] = '\0';
    return strstr(d, "password") != NULL;
}

const char *store_display_name(const char *path, char *buf, size_t size)
{
    if (!path || !sdb_target_is_pg(path))
        return path;
    const char *auth = strstr(path, "://") + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    const char *query = strchr(path, '?');
    size_t o = 0;
#define PUT(ch)                                                                                    \
    do {                                                                                           \
        if (o + 1 >= size)                                                                         \
            return "(a PostgreSQL URI)";                                                           \
        buf[o++] = (ch);                                                                           \
    } while (0)
#define PUT_STARS()                                                                                \
    PUT('*');                                                                                      \
    PUT('*');                                                                                      \
    PUT('*')
    for (const char *p = path; *p;) {
        if (colon && p == colon + 1) {
            /* user:***@ */
            PUT_STARS();
            p = at;
            continue;
        }
        if (query && p > query && (p[-1] == '?' || p[-1] == '&')) {
            /* One parameter: key=value, the value hidden when the key
             * names a password (every one of them: libpq takes the last). */
            size_t kl = strcspn(p, "=&#");
            int secret = p[kl] == '=' && key_is_secret(p, kl);
            for (size_t i = 0; i < kl + (p[kl] == '='); i++)
                PUT(p[i]);
            p += kl + (p[kl] == '=');
            if (secret) {
                PUT_STARS();
                p += strcspn(p, "&#");
            }
            continue;
        }
        PUT(*p);
        p++;
    }
#undef PUT_STARS
#undef PUT
    buf[o] = '\0';
    return buf;
}

const char *store_side_dir(const char *path, size_t *len)
{
    if (sdb_target_is_pg(path)) {
        /* A directory of this user's own, not a fixed name in a shared
         * one: someone else could have made that file first and read
         * every provider's stderr. Made here, checked each time. */
        static _Thread_local char dir[4096];
        const char *t = getenv("TMPDIR");
        t = t && *t ? t : "/tmp";
        int n = snprintf(dir, sizeof dir, "%s/tftap-%ju", t, (uintmax_t)getuid());
        struct stat st;
        if (n <= 0 || (size_t)n >= sizeof dir || (mkdir(dir, 0700) != 0 && errno != EEXIST) ||
            lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
            (st.st_mode & 077) != 0) {
            *len = 0;
            return NULL; /* the current directory, as for a file without one */
        }
        *len = (size_t)n;
        return dir;
    }
    const char *slash = strrchr(path, '/');
    *len = slash ? (size_t)(slash - path) : 0;
    return slash ? path : NULL;
}

int store_open(const char *path, int flags, store **out)
{
    *out = NULL;
    store *s = calloc(1, sizeof *s);
    if (!s)
        return TFTAP_ENOMEM;
    int rc;
    struct stat st;
    /* A bundle is someone's evidence: read it as it is, never migrate or
     * switch it to WAL. */
    if (!(flags & (STORE_OPEN_CREATE | STORE_OPEN_READONLY)) && path && *path &&
        store_file_is_bundle(path) == 1)
        flags |= STORE_OPEN_READONLY;
    if (!(flags & STORE_OPEN_READONLY))
        rc = store_db_open(path, flags & STORE_OPEN_CREATE, &s->db, s->key);
    else if (!path || !*path)
        rc = TFTAP_EINVAL;
    else if (sdb_target_is_pg(path))
        rc = pg_open_readonly(path, &s->db);
    else if (stat(path, &st) != 0)
        rc = errno == ENOENT ? TFTAP_ENOTFOUND : TFTAP_EIO;
    else
        rc = open_readonly(path, &s->db, &s->snapshot);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void store_close(store *s)
{
    if (!s)
        return;
    sdb_close(s->db);
    memset(s->key, 0, sizeof s->key);
    free(s);
}

int store_is_snapshot(const store *s)
{
    return s && s->snapshot;
}

const char *store_errmsg(store *s)
{
    return s && s->db ? sdb_errmsg(s->db) : "";
}

static int step_done(sdb_stmt *st)
{
    int rc = sdb_step(st);
    return rc == SDB_DONE || rc == SDB_ROW ? SDB_OK : rc;
}

/* How long a shim may wait for the database to join its command's run. */
#define STORE_JOIN_DEADLINE_MS 10000

static void args_json(tftap_buf *a, int argc, const char *const *args)
{
    tftap_buf_putc(a, '[');
    for (int i = 0; i < argc; i++) {
        if (i)
            tftap_buf_putc(a, ',');
        tftap_buf_json_string(a, args[i], strlen(args[i]));
    }
    tftap_buf_putc(a, ']');
}

int store_run_begin(store *s, const char *command, int argc, const char *const *args,
                    const char *cwd, const char *cli_name, const char *cli_version, int64_t *run_id)
{
    tftap_buf a = TFTAP_BUF_INIT;
    sdb_stmt *st = NULL;
    int rc;
    args_json(&a, argc, args);
    if (tftap_buf_failed(&a)) {
        rc = SDB_NOMEM;
        goto done;
    }
    char uuid[STORE_UUID_LEN + 1];
    if (store_new_uuid(uuid)) {
        rc = SDB_ERROR;
        goto done;
    }
    rc = store_begin(s->db, 0);
    if (rc != SDB_OK)
        goto done;
    rc = sdb_prepare(s->db,
                     "INSERT INTO runs (command, args, cwd, cli_name, cli_version, "
                     "started_us, uuid) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                     &st);
    if (rc != SDB_OK)
        goto rollback;
    sdb_bind_text(st, 1, command ? command : "", -1, SDB_STATIC);
    sdb_bind_text(st, 2, a.data, (int)a.len, SDB_STATIC);
    sdb_bind_text(st, 3, cwd, -1, SDB_STATIC);
    sdb_bind_text(st, 4, cli_name, -1, SDB_STATIC);
    sdb_bind_text(st, 5, cli_version, -1, SDB_STATIC);
    sdb_bind_int64(st, 6, tftap_now_us());
    sdb_bind_text(st, 7, uuid, -1, SDB_STATIC);
    rc = sdb_step(st);
    if (rc != SDB_ROW) {
        rc = rc == SDB_DONE ? SDB_ERROR : rc;
        goto rollback;
    }
    *run_id = sdb_column_int64(st, 0);
    sdb_finalize(st);
    st = NULL;
    rc = store_commit(s->db, 0);
    if (rc != SDB_OK)
        goto rollback;
    goto done;
rollback:
    store_rollback(s->db);
done:
    sdb_finalize(st);
    tftap_buf_done(&a);
    return store_err(rc);
}

int store_run_join(store *s, const char *key, const char *command, int argc,
                   const char *const *args, const char *cwd, const char *cli_name, int64_t *run_id)
{
    tftap_buf a = TFTAP_BUF_INIT;
    sdb_stmt *ins = NULL, *upd = NULL, *sel = NULL;
    int rc;
    if (key == NULL || key[0] == '\0')
        return TFTAP_EINVAL;
    args_json(&a, argc, args);
    if (tftap_buf_failed(&a)) {
        rc = SDB_NOMEM;
        goto done;
    }
    /* One IMMEDIATE transaction: the unique index makes the first shim's
     * INSERT the only one, and the count cannot interleave with a leave.
     * Bounded: a shim waits for this before its provider's handshake,
     * which the CLI does not wait for forever. */
    char uuid[STORE_UUID_LEN + 1];
    if (store_new_uuid(uuid)) {
        rc = SDB_ERROR;
        goto done;
    }
    rc = store_begin(s->db, STORE_JOIN_DEADLINE_MS);
    if (rc != SDB_OK)
        goto done;
    rc = sdb_prepare(s->db,
                     "INSERT INTO runs (command, args, cwd, cli_name, started_us, cli_key, uuid) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cli_key) DO NOTHING",
                     &ins);
    if (rc == SDB_OK)
        rc = sdb_prepare(s->db,
                         "UPDATE runs SET recorders = recorders + 1, ended_us = NULL "
                         "WHERE cli_key = ?",
                         &upd);
    if (rc == SDB_OK)
        rc = sdb_prepare(s->db, "SELECT id FROM runs WHERE cli_key = ?", &sel);
    if (rc != SDB_OK)
        goto rollback;
    sdb_bind_text(ins, 1, command ? command : "", -1, SDB_STATIC);
    sdb_bind_text(ins, 2, a.data, (int)a.len, SDB_STATIC);
    sdb_bind_text(ins, 3, cwd, -1, SDB_STATIC);
    sdb_bind_text(ins, 4, cli_name, -1, SDB_STATIC);
    sdb_bind_int64(ins, 5, tftap_now_us());
    sdb_bind_text(ins, 6, key, -1, SDB_STATIC);
    sdb_bind_text(ins, 7, uuid, -1, SDB_STATIC);
    sdb_bind_text(upd, 1, key, -1, SDB_STATIC);
    sdb_bind_text(sel, 1, key, -1, SDB_STATIC);
    /* Join first, insert only when there is nothing to join: on PostgreSQL
     * an INSERT that conflicts still uses up an id, and every shim of the
     * command would leave a hole in the run ids. */
    if ((rc = step_done(upd)) != SDB_OK)
        goto rollback;
    if (sdb_changes(s->db) == 0) {
        sdb_reset(upd);
        if ((rc = step_done(ins)) != SDB_OK || (rc = step_done(upd)) != SDB_OK)
            goto rollback;
    }
    rc = sdb_step(sel);
    if (rc != SDB_ROW) {
        rc = rc == SDB_DONE ? SDB_ERROR : rc;
        goto rollback;
    }
    *run_id = sdb_column_int64(sel, 0);
    rc = store_commit(s->db, 0);
    if (rc != SDB_OK)
        goto rollback;
    goto done;
rollback:
    store_rollback(s->db);
done:
    sdb_finalize(ins);
    sdb_finalize(upd);
    sdb_finalize(sel);
    tftap_buf_done(&a);
    return store_err(rc);
}

int store_run_leave(store *s, int64_t run_id)
{
    sdb_stmt *st = NULL;
    int rc = store_begin(s->db, 0);
    if (rc != SDB_OK)
        return store_err(rc);
    rc = sdb_prepare(
        s->db,
        "UPDATE runs SET recorders = CASE WHEN recorders > 1 THEN recorders - 1 ELSE 0 END,"
        " ended_us = CASE WHEN recorders <= 1 THEN ? ELSE NULL END"
        " WHERE id = ? AND cli_key IS NOT NULL",
        &st);
    if (rc == SDB_OK) {
        sdb_bind_int64(st, 1, tftap_now_us());
        sdb_bind_int64(st, 2, run_id);
        rc = step_done(st);
    }
    if (rc == SDB_OK && sdb_changes(s->db) == 0)
        rc = SDB_NOTFOUND;
    sdb_finalize(st);
    if (rc != SDB_OK) {
        store_rollback(s->db);
        return rc == SDB_NOTFOUND ? TFTAP_ENOTFOUND : store_err(rc);
    }
    return store_err(store_commit(s->db, 0));
}

int store_run_end(store *s, int64_t run_id, int exit_code)
{
    sdb_stmt *st = NULL;
    int rc = store_begin(s->db, 0);
    if (rc != SDB_OK)
        return store_err(rc);
    rc = sdb_prepare(s->db, "UPDATE runs SET ended_us = ?, exit_code = ? WHERE id = ?", &st);
    if (rc == SDB_OK) {
        sdb_bind_int64(st, 1, tftap_now_us());
        sdb_bind_int(st, 2, exit_code);
        sdb_bind_int64(st, 3, run_id);
        rc = step_done(st);
    }
    if (rc == SDB_OK && sdb_changes(s->db) == 0)
        rc = SDB_NOTFOUND;
    sdb_finalize(st);
    if (rc != SDB_OK) {
        store_rollback(s->db);
        return rc == SDB_NOTFOUND ? TFTAP_ENOTFOUND : store_err(rc);
    }
    return store_err(store_commit(s->db, 0));
}

int store_run_set_cli_version(store *s, int64_t run_id, const char *cli_version)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(s->db, "UPDATE runs SET cli_version = ? WHERE id = ?", &st);
    if (rc == SDB_OK) {
        sdb_bind_text(st, 1, cli_version, -1, SDB_STATIC);
        sdb_bind_int64(st, 2, run_id);
        rc = step_done(st);
    }
    if (rc == SDB_OK && sdb_changes(s->db) == 0)
        rc = SDB_NOTFOUND;
    sdb_finalize(st);
    return rc == SDB_NOTFOUND ? TFTAP_ENOTFOUND : store_err(rc);
}

int store_resolve_run(store *s, const char *spec, int64_t *run_id)
{
    sdb_stmt *st = NULL;
    int rc;
    if (!spec || !*spec)
        return TFTAP_EINVAL;
    if (strcmp(spec, "last") == 0) {
        rc = sdb_prepare(s->db, "SELECT max(id) FROM runs", &st);
    } else {
        int64_t v = 0;
        for (const char *p = spec; *p; p++) {
            if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
                return TFTAP_EINVAL;
            v = v * 10 + (*p - '0');
        }
        rc = sdb_prepare(s->db, "SELECT id FROM runs WHERE id = ?", &st);
        if (rc == SDB_OK)
            sdb_bind_int64(st, 1, v);
    }
    if (rc != SDB_OK)
        return store_err(rc);
    rc = sdb_step(st);
    int err = 0;
    if (rc == SDB_ROW && sdb_column_type(st, 0) != SDB_NULL)
        *run_id = sdb_column_int64(st, 0);
    else if (rc == SDB_ROW || rc == SDB_DONE)
        err = TFTAP_ENOTFOUND;
    else
        err = store_err(rc);
    sdb_finalize(st);
    return err;
}
