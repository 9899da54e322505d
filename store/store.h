/* store: the SQLite record of runs, provider processes, schemas and calls,
 * what a writer such as the recorder (recorder/) drives it with, and the
 * queries the CLI,
 * analysis and web UI read it with. Layer: may use common and decoder only.
 *
 * Ownership: handles returned through **out are released with their
 * _close/_free function (NULL accepted); byte arguments are copied unless a
 * function says it takes them. */
#ifndef TFTAP_STORE_H
#define TFTAP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "store/sdb.h"

/* Default database path, relative to the working directory. */
#define STORE_DEFAULT_PATH ".tftap/tftap.db"

/* ---- the connection underneath, for a writer that drives it itself -------
 * The recorder's SQL thread (recorder/sql.c) writes calls through the
 * driver (store/sdb.h) in transactions of its own. */

/* The size of a record's key for redacted values (HMAC-SHA256). */
#define STORE_KEY_LEN 32

/* Open and migrate; the helper behind store_open and the recorder's own
 * connection (store_open itself opens STORE_OPEN_READONLY databases). */
int store_db_open(const char *path, int create, sdb **out, unsigned char key[STORE_KEY_LEN]);

/* BEGIN IMMEDIATE, retrying SDB_BUSY until deadline_ms of total waiting
 * (0 = forever). Returns an SQLite result code. */
int store_begin(sdb *db, unsigned deadline_ms);
/* COMMIT with the same retry rule. */
int store_commit(sdb *db, unsigned deadline_ms);
void store_rollback(sdb *db);

/* A run's stable identity (runs.uuid): 36 characters, 8-4-4-4-12 hex. */
#define STORE_UUID_LEN 36
/* A random version 4 UUID; TFTAP_EIO when the OS gives no randomness. */
int store_new_uuid(char out[STORE_UUID_LEN + 1]);

typedef struct store_hold store_hold;
/* Holds of runs being recorded (hold.c). store_hold_on: as
 * store_hold_run, on db's own session for a PostgreSQL record (db NULL:
 * a session of its own), where it lasts as long as that session. */
int store_hold_on(sdb *db, const char *path, int64_t run_id, store_hold **out);

/* The short rpc name of a gRPC method path ("/a.B/C" -> "C"). */
const char *store_rpc_name(const char *method);

/* ---- a provider process's record, told by its shim ------------------------ */

/* What a shim's relay saw of each call, for store_record_recorder_loss. */
enum store_relayed { STORE_RELAYED_NONE = 0, STORE_RELAYED_BEGUN = 1, STORE_RELAYED_ANSWERED = 2 };

/* A provider process whose recorder ended before its record was complete
 * (killed, crashed), told by its shim, which outlived it: calls[i] is what
 * the relay saw of call_seq i + 1. The calls the record lacks (never
 * written, or written without the answer the relay saw) are one gap row of
 * pid's process in run_id (made if the recorder never wrote it), with
 * reason; *lost says how many. Opens db_path itself (never creates it).
 * Returns 0 or a tftap error. */
int store_record_recorder_loss(const char *db_path, int64_t run_id, int pid, const char *provider,
                               const unsigned char *calls, size_t ncalls, const char *reason,
                               int64_t *lost);

/* ---- the database: runs, queries --------------------------------------- */

typedef struct store store; /* one connection; use from one thread at a time */

enum store_open_flags {
    STORE_OPEN_CREATE = 1, /* create the file (0600) and its directory (0700) if missing */
    /* Read only (SQLITE_OPEN_READONLY, query_only): nothing is written, not
     * even a migration; a database of another schema version is refused
     * (TFTAP_ESTORE), but for a bundle of an older one, migrated in memory
     * (then store_is_snapshot). Works on a WAL database a recorder is
     * writing. A bundle is always opened read only. */
    STORE_OPEN_READONLY = 2,
};

/* Open the database at path and bring its schema up to date (migrations).
 * Returns 0, TFTAP_ENOTFOUND (no file and no STORE_OPEN_CREATE), TFTAP_EIO
 * (errno set: directory or file could not be made), TFTAP_ESTORE (SQLite
 * failure or a database written by a newer tftap), TFTAP_ENOMEM,
 * TFTAP_ENOLIB (a PostgreSQL URI, and libpq.so.5 could not be loaded:
 * store_open_error says why). */
int store_open(const char *path, int flags, store **out);

/* 1 when path is not a file but a PostgreSQL server's libpq URI
 * (postgresql://... or postgres://...): store_open connects to it. */
int store_path_is_url(const char *path);
/* Why this thread's last store_open of a PostgreSQL URI could not connect
 * (the server's or libpq's words, or why libpq could not be loaded; one
 * line), or "". */
const char *store_open_error(void);
/* path as it may be shown: a URI's password (user:PASSWORD@ or
 * password=...) replaced by ***. Returns path itself when there is none,
 * else buf (or a fixed text when size is too small). */
const char *store_display_name(const char *path, char *buf, size_t size);
/* store_display_name for a message argument (the buffer lives until the end
 * of the enclosing full expression's block). */
#define STORE_SHOWN(path) store_display_name((path), (char[1024]){0}, 1024)
/* path without its password: a URI's user:PASSWORD@ becomes user@ and its
 * password=... (sslpassword=...) parameters are left out. Allocated (NULL
 * on ENOMEM); a copy of path when it has none. */
char *store_without_password(const char *path);
/* The directory files that would go beside the database go into: path's
 * own for a file (NULL when it has none: the current one); for a URL
 * ${TMPDIR:-/tmp}/tftap-UID, made 0700 if missing (NULL when it is not this
 * user's own, private directory). Not allocated (for a URL, this thread's
 * until the next call); *len is the length of the result to use. */
const char *store_side_dir(const char *path, size_t *len);
void store_close(store *s);
/* The schema version this tftap writes and reads (its migrations' count;
 * a database of a newer one is refused). */
int store_schema_current(void);
/* The SQLite library in use (sqlite3_libversion). */
const char *store_sqlite_version(void);
/* 1 when a STORE_OPEN_READONLY database is read as an immutable snapshot:
 * a WAL database without its -shm file in a directory this process cannot
 * write (SQLite cannot set up the shared memory readers need); later
 * commits by others are not seen. */
int store_is_snapshot(const store *s);
/* The last SQLite error message of this connection ("" if none). */
const char *store_errmsg(store *s);
/* Copy what the write-ahead log holds into the database file now, beside
 * readers and writers (SQLite's PASSIVE checkpoint), so that the last
 * connection's close has little left to copy. A no-op on PostgreSQL. */
int store_checkpoint(store *s);

/* Start a run row: command and args (argc strings, recorded as a JSON array),
 * working directory, the CLI's name ("tofu"/"terraform") and version (NULL
 * when unknown). */
int store_run_begin(store *s, const char *command, int argc, const char *const *args,
                    const char *cwd, const char *cli_name, const char *cli_version,
                    int64_t *run_id);
/* ---- runs being recorded (hold.c) ---------------------------------------
 * Whoever records into a run holds it, so that `tftap prune` leaves it
 * alone: tftap run for the whole command, each recorder for its life, a
 * wrapped command's shims for theirs. A hold is a shared lock on the run
 * (a database file: an open file description lock on PATH-runs.lock, made
 * 0600 beside it; PostgreSQL: a session advisory lock), gone when its
 * holder ends however it ends. */
typedef struct store_hold store_hold;
/* Hold run_id of the record at path until store_hold_free (PostgreSQL: on
 * a connection of its own). 0, TFTAP_EINVAL, TFTAP_EIO (errno; the file
 * could not be made or locked), TFTAP_ESTORE (prune is removing the run),
 * TFTAP_ENOMEM. */
int store_hold_run(const char *path, int64_t run_id, store_hold **out);
/* Let go (NULL accepted). */
void store_hold_free(store_hold *h);
/* store_run_begin, and the run held (*hold) before its row is seen by
 * anyone: no prune can take it for a killed run in between. A hold that
 * could not be taken leaves *hold NULL; the run is begun all the same. */
int store_run_begin_held(store *s, const char *command, int argc, const char *const *args,
                         const char *cwd, const char *cli_name, const char *cli_version,
                         int64_t *run_id, store_hold **hold);

/* Record the run's end time (now) and exit code. */
int store_run_end(store *s, int64_t run_id, int exit_code);
/* The same with the time the command ended (ended_us, 0: now): written
 * later (a finisher in the background), the run still ends when it did. */
int store_run_end_at(store *s, int64_t run_id, int exit_code, int64_t ended_us);
/* Record the CLI's version (NULL: unknown) once it is known, which may be
 * after the run began. */
int store_run_set_cli_version(store *s, int64_t run_id, const char *cli_version);

/* Name run_id a step run of an acceptance test: parent_id (the run of the
 * test command), test (may be NULL: the harness did not say) and step (0:
 * not told). 0, TFTAP_ENOTFOUND or a store error. */
int store_run_set_test(store *s, int64_t run_id, int64_t parent_id, const char *test, int step);

/* The run of one CLI command whose providers are started through `tftap
 * wrap`'s shims: key names the command's process (it must differ for every
 * process ever: boot id, pid and start time); the first shim of the command
 * makes the row (command, args, cwd, cli_name as store_run_begin), the
 * others find it, race-free. Each join counts one recorder more on the run
 * and marks it running again (ended_us NULL); store_run_leave() counts one
 * less and, at none, records the end (now; the exit code stays unknown).
 * A join waits at most about 10 s for a database another connection keeps
 * locked. Returns 0, TFTAP_EINVAL (empty key), TFTAP_ENOTFOUND (leave: no
 * such run of a CLI command), or a store error. */
int store_run_join(store *s, const char *key, const char *command, int argc,
                   const char *const *args, const char *cwd, const char *cli_name, int64_t *run_id);
int store_run_leave(store *s, int64_t run_id);
/* How many recorders are writing into such a run now (runs.recorders). */
int store_run_recorders(store *s, int64_t run_id, int64_t *n);
/* The bytes of the messages a run's calls carried, both ways (what reading
 * its values costs). */
int store_run_message_bytes(store *s, int64_t run_id, int64_t *n);
/* store_run_join, and the run held (*hold, as store_run_begin_held) before
 * the join commits. */
int store_run_join_held(store *s, const char *key, const char *command, int argc,
                        const char *const *args, const char *cwd, const char *cli_name,
                        int64_t *run_id, store_hold **hold);

/* "last" (the newest run) or a decimal run id -> run id. TFTAP_ENOTFOUND if
 * there is no such run, TFTAP_EINVAL if spec is neither. */
int store_resolve_run(store *s, const char *spec, int64_t *run_id);

/* Query callbacks get rows whose strings live until the callback returns;
 * a non-zero return from the callback stops the iteration and is returned. */
typedef struct store_run_row {
    int64_t id;
    const char *command;
    const char *args_json; /* JSON array of strings */
    const char *cwd;
    const char *cli_name;
    const char *cli_version;
    int64_t started_us;
    int64_t ended_us; /* 0 while running (or killed) */
    int has_exit_code;
    int exit_code;
    int64_t processes;
    int64_t calls;
    int64_t dropped;  /* recorder events lost in this run */
    const char *uuid; /* runs.uuid (NULL from store_runs_page) */
    /* A step run of an acceptance test: the run of the test command it
     * belongs to, the Go test's name and the step (0, NULL, 0 otherwise;
     * test_step 0 also when the step could not be told). */
    int64_t parent_id;
    const char *test_name;
    int test_step;
} store_run_row;
int store_runs_each(store *s, int (*fn)(void *ctx, const store_run_row *row), void *ctx);
/* The newest limit runs, oldest first (limit <= 0: all of them). */
int store_runs_last(store *s, int64_t limit, int (*fn)(void *ctx, const store_run_row *row),
                    void *ctx);
/* The step runs of an acceptance test suite's run, in id order. */
int store_run_children_each(store *s, int64_t parent_id,
                            int (*fn)(void *ctx, const store_run_row *row), void *ctx);
int store_run_get(store *s, int64_t run_id, int (*fn)(void *ctx, const store_run_row *row),
                  void *ctx);
/* The run's uuid into out ("" for a run made before uuids were kept):
 * which run an id names in this database now. 0, TFTAP_ENOTFOUND without
 * such a run, or a store error. */
int store_run_uuid(store *s, int64_t run_id, char out[STORE_UUID_LEN + 1]);
/* *ended: 1 when the run's end is in the record, 0 while it is still being
 * recorded (or was cut short). 0, TFTAP_ENOTFOUND or TFTAP_ESTORE. */
int store_run_has_ended(store *s, int64_t run_id, int *ended);
/* Which key hashed run_id's $sensitive values: its runs.key_id when it was
 * recorded elsewhere (pushed, a bundle's), else the id of this database's
 * own key. Hashes of two runs compare only when these are equal.
 * TFTAP_ENOTFOUND without such a run. */
#define STORE_RUN_KEY_ID_SIZE 32
int store_run_key_id(store *s, int64_t run_id, char out[STORE_RUN_KEY_ID_SIZE]);

/* A run's gaps summed by provider and reason (provider NULL when the
 * process row has none), in that order. fn's non-zero return stops and is
 * returned; else 0 or a tftap error. */
int store_run_gaps_each(store *s, int64_t run_id,
                        int (*fn)(void *ctx, const char *provider, const char *reason,
                                  int64_t lost),
                        void *ctx);

/* One row of v_calls (docs/database.md names the columns). */
typedef struct store_call_row {
    int64_t id; /* call_id */
    int64_t run_id;
    int64_t process_id;
    const char *provider;
    const char *provider_version;
    int has_protocol;
    int protocol;
    int64_t call_seq;
    const char *method; /* full gRPC path */
    const char *rpc;    /* last path element, e.g. "PlanResourceChange" */
    int stream;
    const char *type_name;
    const char *address;
    int64_t started_us;
    int64_t ended_us; /* 0 while in flight */
    int in_flight;
    int has_status;
    int status_code;
    const char *status_message;
    int64_t request_bytes, response_bytes;
    int64_t request_count, response_count;
    const char *request_json;  /* NULL if not decoded/recorded */
    const char *response_json; /* for streams a JSON array of messages */
    const char *decode_error;
    const char *status_name;            /* "OK", "UNAVAILABLE", ...; NULL without a status */
    int64_t error_count, warning_count; /* diagnostics in the response */
    int is_teardown; /* go-plugin's streams or Shutdown, ended as the provider exits */
    int failed;      /* error diagnostics, a failing status, or no answer */
    /* Ended as its client expects though not OK: teardown, or UNIMPLEMENTED
     * from a method a provider may lack (tftap_call_expected_close). */
    int expected_close;
    /* No end in the record, and its process's record has a gap: the answer
     * was not recorded (lost with what the gap counts), which says nothing
     * of how the call went; never failed. */
    int not_recorded;
} store_call_row;

typedef struct store_calls_filter {
    const char *method; /* full path or rpc name, either case; NULL: any */
    const char *type;   /* type_name; NULL: any */
    int failed_only;    /* only calls a post-mortem reads: v_calls.failed or not_recorded */
} store_calls_filter;
/* Calls of a run in start order, those the filter (NULL: all) keeps. */
int store_calls_query(store *s, int64_t run_id, const store_calls_filter *f,
                      int (*fn)(void *ctx, const store_call_row *row), void *ctx);
/* The same with method and type filters only (either may be NULL). */
int store_calls_each(store *s, int64_t run_id, const char *method, const char *type,
                     int (*fn)(void *ctx, const store_call_row *row), void *ctx);

/* Every stored schema against its digest (schemas.sha256, of the raw
 * response) and size: 0, TFTAP_EDECODE with the first damaged one's digest
 * in bad, or a store error. A bundle is someone's evidence: a reader checks
 * it before believing it. */
int store_schemas_verify(store *s, char bad[65]);

/* The distinct (rpc, type_name, address) of a run's calls, either of the
 * last two NULL when the call has none: what filters may name. */
int store_run_names_each(store *s, int64_t run_id,
                         int (*fn)(void *ctx, const char *rpc, const char *type_name,
                                   const char *address),
                         void *ctx);

/* A provider schema a run's processes decoded their values with: the raw
 * serialized GetProviderSchema response (protocol 5 or 6), once per distinct
 * provider, version and schema, in the order the processes started. */
typedef struct store_schema_row {
    const char *provider;
    const char *version; /* NULL when unknown */
    int protocol;
    const char *sha256;
    const void *raw;
    size_t size;
} store_schema_row;
int store_schemas_each(store *s, int64_t run_id, int (*fn)(void *ctx, const store_schema_row *row),
                       void *ctx);

/* The providers of a run: one row per provider address among its
 * processes (those that have one), in the order the first process of each
 * started, with that process's version (NULL when unknown), protocol (0
 * when unknown) and binary path (NULL when unknown), and the provider's
 * process and call counts over the run. */
typedef struct store_run_provider_row {
    const char *provider;
    const char *version;
    int protocol;
    const char *binary_path;
    int64_t processes;
    int64_t calls;
} store_run_provider_row;
int store_run_providers_each(store *s, int64_t run_id,
                             int (*fn)(void *ctx, const store_run_provider_row *row), void *ctx);

/* The schema a run's first process of provider that had one decoded with:
 * its protocol, the raw serialized GetProviderSchema response (protocol 5's
 * GetSchema or 6's) appended to raw, and the raw GetResourceIdentitySchemas
 * response (none recorded: nothing) to identity (may be NULL). Returns 0,
 * TFTAP_ENOTFOUND (no process of provider in the run has a schema),
 * TFTAP_ESTORE, TFTAP_ENOMEM. */
int store_run_provider_schema(store *s, int64_t run_id, const char *provider, int *protocol,
                              tftap_buf *raw, tftap_buf *identity);

/* One resource instance change (see v_resource_changes in docs/database.md). */
typedef struct store_change_row {
    int64_t call_id;
    const char *rpc; /* PlanResourceChange, ApplyResourceChange, ReadResource, ReadDataSource */
    const char *type_name;
    const char *address;      /* NULL when not matched */
    const char *address_note; /* why it was not matched, or NULL */
    const char *prior;        /* JSON texts, NULL when absent */
    const char *proposed;
    const char *config;
    const char *planned;
    const char *new_state;
    const char *requires_replace; /* JSON array of attribute paths; for the apply of a
                                     replacement carried out, the replacing plan's */
    const char *diagnostics;      /* JSON array */
    int has_status;
    int status_code;
    int64_t started_us;
    /* A plan told again by another call: one whose planned state a later
     * ApplyResourceChange carries, or the create half of a replacement; an
     * apply destroying an object that another apply replaced. */
    int superseded;
    /* A replacing plan (requires_replace set): the planned state of the call
     * that planned the new object, and that call's id (0 if none found). */
    const char *replace_planned;
    int64_t replace_call_id;
    /* An apply that created the new object of a replacement carried out
     * (an apply destroying the old object at the same address in the same
     * run, replace_call_id): that object's prior state; NULL otherwise. */
    const char *destroyed_prior;
    /* The call failed (v_calls.failed): error diagnostics, a failing
     * status, or no answer. Its status by name, message, and whether it
     * was never answered. */
    int failed;
    const char *status_name;
    const char *status_message;
    int in_flight;
    /* The resource type's (or data source's) schema block as the decoder
     * renders a GetProviderSchema response ({"attributes": [...],
     * "block_types": [...]}), when the call was decoded with a schema;
     * NULL otherwise. Rendering uses it to tell nested blocks and maps
     * apart from object attributes. */
    const char *block_schema;
    /* The provider process that answered, and the whole response as the
     * calls table holds it (JSON text, NULL when absent). */
    int64_t process_id;
    const char *response_json;
} store_change_row;
/* Changes of a run in call order, optionally only those whose address or
 * type_name equals filter (an address also matches its instances, "a.b"
 * matches "a.b[0]"). */
int store_changes_each(store *s, int64_t run_id, const char *filter,
                       int (*fn)(void *ctx, const store_change_row *row), void *ctx);
/* The same, only the failed changes when failed_only. */
int store_changes_query(store *s, int64_t run_id, const char *filter, int failed_only,
                        int (*fn)(void *ctx, const store_change_row *row), void *ctx);
/* As store_changes_each, for judging the calls, at less cost: failed,
 * status_name, status_message and in_flight are not read (0 and NULL),
 * and the replacement pairing (superseded, replace_*, destroyed_prior) is
 * worked out only when the run applied something; requires_replace is
 * completed from the plan that forced a replacement as it is there. */
int store_changes_each_judged(store *s, int64_t run_id, const char *filter,
                              int (*fn)(void *ctx, const store_change_row *row), void *ctx);
/* The address (NULL: none) of each resource change of a run (a call
 * v_resource_changes would list, and others of the same methods) and of
 * each UpgradeResourceState, in call id order. */
int store_call_addresses_each(store *s, int64_t run_id,
                              int (*fn)(void *ctx, int64_t call_id, const char *address),
                              void *ctx);

typedef struct store_diag_row {
    int64_t call_id;
    const char *rpc;
    const char *type_name;
    const char *address;
    const char *severity;
    const char *summary;
    const char *detail;
    const char *attribute; /* JSON, or NULL */
} store_diag_row;
int store_diagnostics_each(store *s, int64_t run_id, const char *filter,
                           int (*fn)(void *ctx, const store_diag_row *row), void *ctx);

/* Export a run as JSON lines: one {"kind":"run"|"process"|"call"|"gap",...}
 * object per line, appended to out and handed to fn in chunks of lines. */
int store_export_jsonl(store *s, int64_t run_id, int (*fn)(void *ctx, const char *p, size_t n),
                       void *ctx);

/* Address matching's view of a run: each PlanResourceChange,
 * ApplyResourceChange, ReadResource and ReadDataSource call with its
 * decoded values (as v_resource_changes has them; NULL where a call has no
 * such value): prior, proposed, config, planned, new, in call order, and
 * each UpgradeResourceState with the state it upgraded to as prior; its
 * process, a plan's requires_replace, whether the response carries an
 * error diagnostic and its legacy_type_system flag. The nodes live until fn returns. */
typedef struct store_match_call {
    int64_t call_id;
    int64_t process_id;
    const char *rpc;
    const char *type_name;
    const sj_node *values[5];
    const sj_node *requires_replace; /* a plan's response's, or NULL */
    int failed;                      /* an error diagnostic in the response */
    int legacy;                      /* the response's legacy_type_system */
} store_match_call;
int store_match_calls_each(store *s, int64_t run_id,
                           int (*fn)(void *ctx, const store_match_call *call), void *ctx);

/* The ImportResourceState calls of a run, in call order: the import id
 * asked for, and the one object imported (state: NULL when the response
 * is not JSON or imported none or several). The nodes live until fn
 * returns. 0, TFTAP_ESTORE, TFTAP_ENOMEM, or fn's non-zero. */
typedef struct store_import_call {
    int64_t call_id;
    const char *type_name;
    const char *id;
    const sj_node *state;
} store_import_call;
int store_import_calls_each(store *s, int64_t run_id,
                            int (*fn)(void *ctx, const store_import_call *call), void *ctx);

/* Set the address and address note (either may be NULL) of n calls of a
 * run (call_addresses, read by the views as address and address_note) in
 * one transaction, replacing what an earlier matching set; both NULL: the
 * call has neither. 0, TFTAP_ESTORE. */
typedef struct store_address_set {
    int64_t call_id;
    const char *address;
    const char *note;
} store_address_set;
int store_set_addresses(store *s, const store_address_set *sets, size_t n);

/* ---- paged reads (the web UI): bounded work and memory per request ------- */

/* Runs newest first with id < before_id (0: from the newest), at most limit. */
int store_runs_page(store *s, int64_t before_id, int limit,
                    int (*fn)(void *ctx, const store_run_row *row), void *ctx);

/* Which calls of a run a page holds; NULL members match everything. */
typedef struct store_call_filter {
    const char *method;  /* part of the rpc name, any case ("plan" finds PlanResourceChange) */
    const char *type;    /* type_name equals */
    const char *address; /* address equals, or is an instance of it ("a.b" finds "a.b[0]") */
    const char *status;  /* "ok", "error" (v_calls.failed), "inflight", or a decimal code */
} store_call_filter;
/* At most limit calls of a run with id > after_id, in id order (the order
 * they began in, per process). with_json 0 leaves request_json and
 * response_json NULL. TFTAP_EINVAL for a status that is none of the above. */
int store_calls_page(store *s, int64_t run_id, const store_call_filter *f, int64_t after_id,
                     int limit, int with_json, int (*fn)(void *ctx, const store_call_row *row),
                     void *ctx);
/* One call of a run, with its JSON. TFTAP_ENOTFOUND if the run has no such call. */
int store_call_get(store *s, int64_t run_id, int64_t call_id,
                   int (*fn)(void *ctx, const store_call_row *row), void *ctx);

typedef struct store_process_row {
    int64_t id;
    const char *provider;
    const char *version;
    int protocol;
    int pid;
    const char *schema_sha256;
    int64_t started_us, ended_us; /* ended 0 while running */
    int64_t calls;
    int64_t dropped;
} store_process_row;
/* A run's provider processes in id order. */
int store_processes_each(store *s, int64_t run_id,
                         int (*fn)(void *ctx, const store_process_row *row), void *ctx);

/* The first call start and the last call end (or start, while in flight) of
 * a run; both 0 when it has no calls. */
int store_run_span(store *s, int64_t run_id, int64_t *first_us, int64_t *last_us);

typedef struct store_schema_info {
    const char *sha256;
    const char *provider;
    const char *versions; /* the versions of the processes that used it, comma separated */
    int protocol;
    int64_t size;
    int64_t first_seen_us;
} store_schema_info;
/* Recorded provider schemas (kind 'provider'), newest first. */
int store_schemas_list(store *s, int (*fn)(void *ctx, const store_schema_info *row), void *ctx);
/* Append the schema's decoded GetProviderSchema response as JSON.
 * TFTAP_ENOTFOUND, TFTAP_EDECODE, TFTAP_ENOMEM, TFTAP_ESTORE. */
int store_schema_json(store *s, const char *sha256, tftap_buf *out);

/* SQLite's PRAGMA data_version: changes when another connection commits
 * (PostgreSQL: a count of the record's change notifications, per
 * connection). Also notices a PostgreSQL connection the server closed. */
int store_data_version(store *s, int64_t *out);
/* 1 when s is a PostgreSQL connection known to be lost (the server went
 * away or ended the session): close it and open a new one. Never for a
 * file. */
int store_connection_lost(store *s);

/* ---- a step run's working directory (store/files.c) --------------------- */

/* One file of the directory a run's command ran in, as the command found
 * it (run_files): kept for acceptance test steps, whose directories the
 * harness removes, so that `tftap replay` can run the command again. */
typedef struct store_run_file {
    const char *name;    /* relative to the run's cwd */
    int64_t size;        /* the file's size */
    const char *sha256;  /* of its content, 64 hex digits */
    const void *content; /* NULL: not kept (note says why) */
    size_t content_len;
    const char *note; /* why it was not kept, else NULL */
} store_run_file;
/* Add run_id's n files, all or none (one transaction); the strings and
 * content are copied. 0 or a store error (a name twice among them or
 * already stored: a constraint's). */
int store_run_files_add(store *s, int64_t run_id, const store_run_file *files, size_t n);
/* run_id's files in name order; the row lives until fn returns. */
int store_run_files_each(store *s, int64_t run_id, int (*fn)(void *ctx, const store_run_file *f),
                         void *ctx);
/* *holds: 1 when a stored value of run_id's calls, or of the calls of
 * any step run of the same acceptance test (runs.parent_id and
 * test_name), is redacted ({"$sensitive": ...}), else 0. 0 or a store
 * error. */
int store_run_holds_redacted(store *s, int64_t run_id, int *holds);

/* ---- secrets as core sees them (store/secrets.c) ------------------------ */

/* The HMAC-SHA256 (64 hex digits) of a value's JSON text under this
 * database's key, as its $sensitive values are made. 0, TFTAP_ENOTFOUND
 * (no key: a bundle), a store error. */
int store_value_hmac(store *s, const char *json, size_t len, char out[65]);
/* An HMAC context with this database's key, for many values at once
 * (tftap_hmac_hex); NULL without a key (a bundle) or memory. */
tftap_hmac *store_value_hmac_new(store *s);
/* runs.values_kept: 1 when the run was recorded with sensitive values in
 * clear (--record-sensitive), 2 when it is held back in a spool and its
 * end has not redacted it yet (store_run_hold_back), else 0. */
int store_run_values_kept(store *s, int64_t run_id, int *kept);
/* The hashes (under the key the run was recorded with) of the values core
 * marked secret in the run. */
int store_run_secrets_each(store *s, int64_t run_id, int (*fn)(void *ctx, const char *hmac),
                           void *ctx);
/* runs.redactions, the JSON object of counts per rule, appended to out
 * (nothing when there is none). */
int store_run_redactions(store *s, int64_t run_id, tftap_buf *out);

/* One call's values as stored, for a rewriter. */
typedef struct store_value_call {
    int64_t call_id;
    const char *rpc;                          /* "PlanResourceChange"... */
    const char *type_name;                    /* the resource type or data source; NULL */
    const char *address;                      /* NULL when not named */
    const char *request_json, *response_json; /* NULL when none */
    const char *status_message;               /* the gRPC status's text; NULL when none */
    const char *decode_error;                 /* why a message was not rendered; NULL */
} store_value_call;
/* Every call of the run as stored, in id order; fn's non-zero return
 * stops and is returned. */
int store_run_values_each(store *s, int64_t run_id, int (*fn)(void *ctx, const store_value_call *c),
                          void *ctx);
enum {
    STORE_REWRITE_REQUEST = 1,
    STORE_REWRITE_RESPONSE = 2,
    STORE_REWRITE_STATUS = 4,
    STORE_REWRITE_DECODE_ERROR = 8
};
/* The new text of what a rewriter changes. */
typedef struct store_value_rewrite {
    tftap_buf req, resp, status, decode_error;
} store_value_rewrite;
/* Fill out's req, resp, status and/or decode_error with the new text of a
 * side, of the status message or of the decode error and set its bit in
 * *changed (nothing: the call stays as it is). 0, or a tftap error that stops the redaction and
 * undoes it. */
typedef int (*store_value_rewriter)(void *ctx, const store_value_call *c, store_value_rewrite *out,
                                    int *changed);
typedef struct store_run_redaction {
    store_value_rewriter rewrite; /* NULL: the calls are left alone */
    void *ctx;
    const char *args_json;    /* NULL, or runs.args rewritten */
    const char *const *hmacs; /* into run_secrets */
    size_t nhmacs;
    const char *counts_json; /* NULL, or runs.redactions */
} store_run_redaction;
/* Apply a run's redaction in one transaction (all of it or nothing); in a
 * SQLite file the text replaced is overwritten (secure_delete), and
 * store_scrub then empties the write-ahead log that held it. 0, a store
 * error, or the rewriter's error. */
int store_run_redact(store *s, int64_t run_id, const store_run_redaction *how);
/* SQLite: the file rewritten (VACUUM: pages SQLite rebuilt keep old bytes
 * in their unused space) when it is at most STORE_SCRUB_VACUUM_MAX, every
 * page's last image into it and the write-ahead log truncated to nothing.
 * 0; 1 when a reader kept the log from being emptied (it is, by the last
 * connection's close); 2 when the file was not rewritten (too large, or
 * VACUUM failed: old bytes may remain in unused space); or a store error.
 * A no-op on PostgreSQL. */
#define STORE_SCRUB_VACUUM_MAX ((int64_t)256 << 20)
int store_scrub(store *s);

/* ---- spools: runs held back from a PostgreSQL record (spool.c) ---------
 * A run recorded for a PostgreSQL record is recorded into a local SQLite
 * file, its spool, and copied into the record (store_push_run) once its
 * end has redacted what core marks sensitive: nothing in clear reaches the
 * server (docs/database.md). */

/* The spool s (a SQLite file, opened to write) takes the redaction key of
 * from (the record): its $sensitive hashes are the record's own. 0,
 * TFTAP_EINVAL (s is not a file) or a store error. */
int store_key_adopt(store *s, const store *from);
/* held 1: run_id is held back (runs.values_kept 2: values core may mark
 * are in clear until its end redacts them; push refuses it without
 * --allow-secrets); 0: its end redacted it. A run recorded with
 * --record-sensitive (values_kept 1) stays as it is. 0 or a store error. */
int store_run_hold_back(store *s, int64_t run_id, int held);
/* 1 when a process holds a run of the database file at path
 * (store_hold_run), 0 when none does, -1 when it cannot be told. */
int store_file_in_use(const char *path);
/* Remove the database file at path with its -wal, -shm, -journal and
 * -runs.lock files. 0, TFTAP_EIO (one could not be removed), TFTAP_ENOMEM. */
int store_file_remove(const char *path);

/* ---- push: runs copied into a shared record (docs/database.md) ---------- */

typedef struct store_push_info {
    int64_t dst_run_id; /* the run's id in the destination */
    char uuid[37];      /* runs.uuid, the run's identity in both */
    int already;        /* 1: the destination had it (by uuid); nothing was copied */
    int64_t processes, calls, messages, gaps, schemas; /* rows added */
    int foreign_key; /* its $sensitive hashes are not keyed with the destination's key */
    char why[256];   /* what failed, when it did */
} store_push_info;

/* Told how many of the run's calls are copied, from 0 of total on. */
typedef void (*store_push_progress)(void *ctx, int64_t calls_done, int64_t calls_total);

/* Copy run_id of src (a database or a bundle) with its processes, calls,
 * raw messages, gaps and the schemas they name into dst (opened to write;
 * PostgreSQL or SQLite), in one transaction of dst: all of it or nothing.
 * Ids are the destination's; the run's uuid identifies it, so a run the
 * destination has already is left alone (info->already). Values are copied
 * as stored: $sensitive hashes keep the key they were made with, which
 * runs.key_id names when it is not the destination's (info->foreign_key).
 * 0, TFTAP_ENOTFOUND, TFTAP_EIO (connection lost), TFTAP_ESTORE (info->why),
 * TFTAP_ENOMEM. */
int store_push_run(store *src, int64_t run_id, store *dst, store_push_progress progress, void *ctx,
                   store_push_info *info);

/* ---- prune: old runs removed (prune.c) ----------------------------------- */

typedef struct store_prune_opts {
    int64_t before_us; /* only runs that started before this; 0: any */
    int64_t keep;      /* never the newest keep runs; < 0: no such rule */
    int dry_run;       /* say what would go, remove nothing */
} store_prune_opts;

/* A run the rules selected; strings live until the callback returns. */
typedef struct store_prune_run {
    int64_t id;
    const char *command, *args_json, *cwd;
    int64_t started_us, ended_us; /* ended 0: it never ended (killed) */
    int64_t processes, calls;
    int recording; /* someone records into it (it is held): left alone */
} store_prune_run;

enum store_reclaim {
    STORE_RECLAIM_NONE = 0,    /* nothing removed, or a dry run */
    STORE_RECLAIM_INCREMENTAL, /* a file's freed pages given back (incremental vacuum) */
    STORE_RECLAIM_VACUUM,      /* a file rewritten (VACUUM), incremental from then on */
    STORE_RECLAIM_DEFERRED,    /* a file that needs VACUUM, while runs are recorded into it:
                                  its free pages are reused, the file keeps its size */
    STORE_RECLAIM_PG_VACUUM,   /* PostgreSQL's VACUUM ran: the space is reusable */
    STORE_RECLAIM_FAILED,      /* why says why */
};

typedef struct store_prune_info {
    /* Rows removed (a dry run: that would be). */
    int64_t runs, processes, calls, messages, gaps;
    int64_t schemas;   /* schemas no process names any more, removed */
    int schemas_kept;  /* such schemas were left: something was being recorded */
    int64_t recording; /* runs selected but left alone: still being recorded */
    enum store_reclaim reclaim;
    /* A file: its size and its WAL's; PostgreSQL: the record's tables'
     * total size; before and after. */
    int64_t bytes_before, bytes_after;
    char why[256];
} store_prune_info;

/* Remove the runs o selects (each with its processes, calls, addresses,
 * raw messages and gaps, one transaction per run), oldest first, telling
 * fn (may be NULL; a non-zero return stops and is returned) of each; a run
 * someone still records into (store_hold_run) is told with recording set
 * and left alone. Then the schemas no process names (unless another run is
 * being recorded) and the space (enum store_reclaim). s must be open to
 * write. 0, TFTAP_EIO (the lock file cannot be opened: nothing removed),
 * TFTAP_ESTORE, TFTAP_ENOMEM. */
int store_prune(store *s, const store_prune_opts *o,
                int (*fn)(void *ctx, const store_prune_run *run), void *ctx,
                store_prune_info *info);

/* ---- bundles: one run in a file of its own (docs/replay.md) --------------- */

/* The SQLite application_id of a bundle ("tftb"): the same schema as any
 * database, marked so that readers open it read only. */
#define STORE_BUNDLE_APPLICATION_ID 0x74667462

/* 1 when the file at path is a bundle, 0 when it is not (any other file,
 * SQLite or not), TFTAP_ENOTFOUND, TFTAP_EIO. Safe on a file this process
 * has open (through SQLite, whose locks it keeps). */
int store_file_is_bundle(const char *path);

typedef struct store_bundle_info {
    int64_t processes, calls, gaps, schemas;
    int64_t redacted;      /* sensitive values keyed afresh */
    int64_t rekeyed_clear; /* of those, values the run recorded in clear */
    /* Of those, by the rule that made them secret: core marked them in the
     * plan or state (at that path), or equal to a value core marked
     * elsewhere in the run; the rest the provider's schema marks
     * (sensitive or write-only). */
    int64_t core_mark, known_secret;
    int64_t raw_messages; /* raw message rows (--keep-raw) left out */
    int64_t dropped_json; /* request/response JSON that did not parse, left out */
    char why[256];        /* what could not be copied, on TFTAP_EDECODE */
} store_bundle_info;

/* Write run_id of s to a new bundle at path (replaced if it exists): the
 * run, its processes, calls, gaps and the schemas they name, in the same
 * schema and migrations as any database, with call ids kept. Redacted on
 * the way: every sensitive value (redacted or, for a run recorded with
 * sensitive values kept, found by the schema's sensitive and write-only
 * marks, stored state included) becomes HMAC-SHA256 under a fresh random
 * key that is not kept; raw messages are left out; the working directory,
 * provider paths, pids and every argument but plain command words are
 * dropped. Returns 0, TFTAP_ENOTFOUND (no such run), TFTAP_EDECODE (a
 * call's values cannot be redacted safely: info->why says which; nothing
 * is written), TFTAP_EIO (errno), TFTAP_ESTORE, TFTAP_ENOMEM. */
int store_bundle_write(store *s, int64_t run_id, const char *path, store_bundle_info *info);

#endif
