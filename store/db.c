/* store: opening the database, its schema and migrations, runs. */
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

/* Each step brings user_version from its index to index + 1. Never edit a
 * released step: append a new one (docs/database.md describes the result). */
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
};

#define N_MIGRATIONS (sizeof migrations / sizeof migrations[0])

const char *store_rpc_name(const char *method)
{
    const char *slash = method ? strrchr(method, '/') : NULL;
    return slash ? slash + 1 : (method ? method : "");
}

int store_err(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return 0;
    case SQLITE_NOMEM:
        return TFTAP_ENOMEM;
    case SQLITE_CANTOPEN:
        return TFTAP_EIO;
    default:
        return TFTAP_ESTORE;
    }
}

int store_exec(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
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
static int exec_retry(sqlite3 *db, const char *sql, unsigned deadline_ms)
{
    unsigned waited = 0;
    for (;;) {
        int rc = store_exec(db, sql);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
            return rc;
        if (deadline_ms && waited >= deadline_ms)
            return rc;
        sleep_ms(10);
        waited += 10 + STORE_BUSY_TIMEOUT_MS;
    }
}

int store_begin(sqlite3 *db, unsigned deadline_ms)
{
    return exec_retry(db, "BEGIN IMMEDIATE", deadline_ms);
}

int store_commit(sqlite3 *db, unsigned deadline_ms)
{
    return exec_retry(db, "COMMIT", deadline_ms);
}

void store_rollback(sqlite3 *db)
{
    if (!sqlite3_get_autocommit(db))
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

static int get_user_version(sqlite3 *db, int *v)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* Bring the schema to N_MIGRATIONS. Runs in one IMMEDIATE transaction so
 * that several processes opening a fresh database at once migrate it once. */
static int migrate(sqlite3 *db)
{
    int v = 0;
    int rc = get_user_version(db, &v);
    if (rc != SQLITE_OK)
        return rc;
    if (v == (int)N_MIGRATIONS)
        return SQLITE_OK;
    if (v > (int)N_MIGRATIONS)
        return SQLITE_ERROR; /* written by a newer tftap: do not touch */
    rc = store_begin(db, 60000);
    if (rc != SQLITE_OK)
        return rc;
    rc = get_user_version(db, &v);
    if (rc != SQLITE_OK)
        goto rollback;
    if (v > (int)N_MIGRATIONS) {
        rc = SQLITE_ERROR;
        goto rollback;
    }
    for (; v < (int)N_MIGRATIONS; v++) {
        rc = store_exec(db, migrations[v]);
        if (rc != SQLITE_OK)
            goto rollback;
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", (int)N_MIGRATIONS);
    rc = store_exec(db, sql);
    if (rc != SQLITE_OK)
        goto rollback;
    return store_commit(db, 60000);
rollback:
    store_rollback(db);
    return rc;
}

/* The per-database HMAC key: made once from the OS's random source by
 * whichever process gets there first. */
static int load_key(sqlite3 *db, unsigned char key[STORE_KEY_LEN])
{
    sqlite3_stmt *st = NULL;
    int rc = SQLITE_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = sqlite3_prepare_v2(db, "SELECT key FROM secret_key WHERE id = 1", -1, &st, NULL);
        if (rc != SQLITE_OK)
            return rc;
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == STORE_KEY_LEN) {
            memcpy(key, sqlite3_column_blob(st, 0), STORE_KEY_LEN);
            sqlite3_finalize(st);
            return SQLITE_OK;
        }
        sqlite3_finalize(st);
        st = NULL;
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
            return rc;
        unsigned char fresh[STORE_KEY_LEN];
        if (RAND_bytes(fresh, sizeof fresh) != 1)
            return SQLITE_ERROR;
        rc = store_begin(db, 60000);
        if (rc != SQLITE_OK)
            return rc;
        rc = sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO secret_key (id, key) VALUES (1, ?)", -1,
                                &st, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_blob(st, 1, fresh, sizeof fresh, SQLITE_TRANSIENT);
            rc = sqlite3_step(st);
            rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        sqlite3_finalize(st);
        st = NULL;
        if (rc != SQLITE_OK) {
            store_rollback(db);
            return rc;
        }
        rc = store_commit(db, 60000);
        if (rc != SQLITE_OK) {
            store_rollback(db);
            return rc;
        }
    }
    return SQLITE_ERROR;
}

/* journal_mode=WAL needs a moment of exclusive access the first time. */
static int set_wal(sqlite3 *db)
{
    for (int i = 0; i < 100; i++) {
        int rc = store_exec(db, "PRAGMA journal_mode=WAL");
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
            return rc;
        sleep_ms(50);
    }
    return SQLITE_BUSY;
}

/* The largest older bundle brought up to date in memory. */
#define STORE_BUNDLE_MAX_BYTES ((int64_t)1 << 30)

static int application_id(sqlite3 *db, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *id = (uint32_t)sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* A bundle an older tftap wrote: read whole into memory and migrated
 * there, so that it reads as a current one while its file is left as it
 * is (it is someone's evidence). */
static int open_old_bundle(const char *path, sqlite3 **out)
{
    tftap_buf file = TFTAP_BUF_INIT;
    sqlite3 *db = NULL;
    int rc = tftap_read_file(path, (size_t)STORE_BUNDLE_MAX_BYTES, &file);
    if (rc)
        return rc == TFTAP_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    unsigned char *mem = sqlite3_malloc64(file.len ? file.len : 1);
    if (!mem) {
        tftap_buf_done(&file);
        return SQLITE_NOMEM;
    }
    memcpy(mem, file.data, file.len);
    sqlite3_int64 n = (sqlite3_int64)file.len;
    tftap_buf_done(&file);
    rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_free(mem);
        sqlite3_close(db);
        return rc;
    }
    sqlite3_extended_result_codes(db, 1);
    rc = sqlite3_deserialize(db, "main", mem, n, n,
                             SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE);
    if (rc == SQLITE_OK)
        rc = migrate(db);
    if (rc == SQLITE_OK)
        rc = store_exec(db, "PRAGMA query_only=1");
    if (rc != SQLITE_OK) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return SQLITE_OK;
}

/* A reader that must never write: no WAL switch, no migration, no key.
 * The schema must already be this version's; query_only guards against
 * a statement that would write anyway. */
static int open_readonly(const char *path, sqlite3 **out, int *snapshot)
{
    sqlite3 *db = NULL;
    int v = 0;
    *snapshot = 0;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        goto fail;
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    rc = store_exec(db, "PRAGMA query_only=1");
    if (rc != SQLITE_OK)
        goto fail;
    rc = get_user_version(db, &v);
    if ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN) {
        /* A WAL database whose -shm is missing and whose directory we
         * cannot write (someone else's, or a read-only copy): no reader can
         * make the shared memory file. Nobody can be writing it then unless
         * they own it, so read it as it is: immutable, a snapshot. */
        sqlite3_close(db);
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
        rc = tftap_buf_failed(&uri)
                 ? SQLITE_NOMEM
                 : sqlite3_open_v2(uri.data, &db,
                                   SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                                   NULL);
        tftap_buf_done(&uri);
        if (rc != SQLITE_OK)
            goto fail;
        sqlite3_extended_result_codes(db, 1);
        rc = store_exec(db, "PRAGMA query_only=1");
        if (rc == SQLITE_OK)
            rc = get_user_version(db, &v);
        *snapshot = 1;
    }
    if (rc != SQLITE_OK)
        goto fail;
    int64_t app = 0;
    if (v > 0 && v < (int)N_MIGRATIONS && application_id(db, &app) == SQLITE_OK &&
        app == STORE_BUNDLE_APPLICATION_ID) {
        sqlite3_close(db);
        db = NULL;
        rc = open_old_bundle(path, &db);
        if (rc != SQLITE_OK)
            goto fail;
        *snapshot = 1;
        *out = db;
        return 0;
    }
    if (v != (int)N_MIGRATIONS) {
        rc = SQLITE_ERROR; /* not migrated yet, or from a newer tftap */
        goto fail;
    }
    *out = db;
    return 0;
fail:;
    int err = store_err(rc);
    if ((rc & 0xff) == SQLITE_CANTOPEN && errno == 0)
        errno = EACCES;
    sqlite3_close(db);
    return err ? err : TFTAP_ESTORE;
}

int store_db_open(const char *path, int create, sqlite3 **out, unsigned char key[STORE_KEY_LEN])
{
    *out = NULL;
    if (!path || !*path)
        return TFTAP_EINVAL;
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
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        goto fail;
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    /* Rows hold kilobytes of JSON: bigger pages mean fewer overflow pages.
     * Only takes effect on a new, empty database. */
    store_exec(db, "PRAGMA page_size=16384");
    rc = set_wal(db);
    if (rc != SQLITE_OK)
        goto fail;
    rc = store_exec(db, "PRAGMA synchronous=NORMAL");
    if (rc != SQLITE_OK)
        goto fail;
    rc = migrate(db);
    if (rc != SQLITE_OK)
        goto fail;
    rc = load_key(db, key);
    if (rc != SQLITE_OK)
        goto fail;
    *out = db;
    return 0;
fail:;
    int err = store_err(rc);
    if ((rc & 0xff) == SQLITE_CANTOPEN && errno == 0)
        errno = EACCES;
    sqlite3_close(db);
    return err ? err : TFTAP_ESTORE;
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
    sqlite3_close(s->db);
    memset(s->key, 0, sizeof s->key);
    free(s);
}

int store_is_snapshot(const store *s)
{
    return s && s->snapshot;
}

const char *store_errmsg(store *s)
{
    return s && s->db ? sqlite3_errmsg(s->db) : "";
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
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
    sqlite3_stmt *st = NULL;
    int rc;
    args_json(&a, argc, args);
    if (tftap_buf_failed(&a)) {
        rc = SQLITE_NOMEM;
        goto done;
    }
    rc = store_begin(s->db, 0);
    if (rc != SQLITE_OK)
        goto done;
    rc = sqlite3_prepare_v2(s->db,
                            "INSERT INTO runs (command, args, cwd, cli_name, cli_version, "
                            "started_us) VALUES (?, ?, ?, ?, ?, ?)",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        goto rollback;
    sqlite3_bind_text(st, 1, command ? command : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, a.data, (int)a.len, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, cwd, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, cli_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, cli_version, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, tftap_now_us());
    rc = step_done(st);
    if (rc != SQLITE_OK)
        goto rollback;
    *run_id = sqlite3_last_insert_rowid(s->db);
    rc = store_commit(s->db, 0);
    if (rc != SQLITE_OK)
        goto rollback;
    goto done;
rollback:
    store_rollback(s->db);
done:
    sqlite3_finalize(st);
    tftap_buf_done(&a);
    return store_err(rc);
}

int store_run_join(store *s, const char *key, const char *command, int argc,
                   const char *const *args, const char *cwd, const char *cli_name, int64_t *run_id)
{
    tftap_buf a = TFTAP_BUF_INIT;
    sqlite3_stmt *ins = NULL, *upd = NULL, *sel = NULL;
    int rc;
    if (key == NULL || key[0] == '\0')
        return TFTAP_EINVAL;
    args_json(&a, argc, args);
    if (tftap_buf_failed(&a)) {
        rc = SQLITE_NOMEM;
        goto done;
    }
    /* One IMMEDIATE transaction: the unique index makes the first shim's
     * INSERT the only one, and the count cannot interleave with a leave.
     * Bounded: a shim waits for this before its provider's handshake,
     * which the CLI does not wait for forever. */
    rc = store_begin(s->db, STORE_JOIN_DEADLINE_MS);
    if (rc != SQLITE_OK)
        goto done;
    rc = sqlite3_prepare_v2(s->db,
                            "INSERT OR IGNORE INTO runs (command, args, cwd, cli_name, "
                            "started_us, cli_key) VALUES (?, ?, ?, ?, ?, ?)",
                            -1, &ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db,
                                "UPDATE runs SET recorders = recorders + 1, ended_us = NULL "
                                "WHERE cli_key = ?",
                                -1, &upd, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db, "SELECT id FROM runs WHERE cli_key = ?", -1, &sel, NULL);
    if (rc != SQLITE_OK)
        goto rollback;
    sqlite3_bind_text(ins, 1, command ? command : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 2, a.data, (int)a.len, SQLITE_STATIC);
    sqlite3_bind_text(ins, 3, cwd, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 4, cli_name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 5, tftap_now_us());
    sqlite3_bind_text(ins, 6, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(upd, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(sel, 1, key, -1, SQLITE_STATIC);
    if ((rc = step_done(ins)) != SQLITE_OK || (rc = step_done(upd)) != SQLITE_OK)
        goto rollback;
    rc = sqlite3_step(sel);
    if (rc != SQLITE_ROW) {
        rc = rc == SQLITE_DONE ? SQLITE_ERROR : rc;
        goto rollback;
    }
    *run_id = sqlite3_column_int64(sel, 0);
    rc = store_commit(s->db, 0);
    if (rc != SQLITE_OK)
        goto rollback;
    goto done;
rollback:
    store_rollback(s->db);
done:
    sqlite3_finalize(ins);
    sqlite3_finalize(upd);
    sqlite3_finalize(sel);
    tftap_buf_done(&a);
    return store_err(rc);
}

int store_run_leave(store *s, int64_t run_id)
{
    sqlite3_stmt *st = NULL;
    int rc = store_begin(s->db, 0);
    if (rc != SQLITE_OK)
        return store_err(rc);
    rc = sqlite3_prepare_v2(s->db,
                            "UPDATE runs SET recorders = max(recorders - 1, 0),"
                            " ended_us = CASE WHEN recorders <= 1 THEN ? ELSE NULL END"
                            " WHERE id = ? AND cli_key IS NOT NULL",
                            -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, tftap_now_us());
        sqlite3_bind_int64(st, 2, run_id);
        rc = step_done(st);
    }
    if (rc == SQLITE_OK && sqlite3_changes(s->db) == 0)
        rc = SQLITE_NOTFOUND;
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        store_rollback(s->db);
        return rc == SQLITE_NOTFOUND ? TFTAP_ENOTFOUND : store_err(rc);
    }
    return store_err(store_commit(s->db, 0));
}

int store_run_end(store *s, int64_t run_id, int exit_code)
{
    sqlite3_stmt *st = NULL;
    int rc = store_begin(s->db, 0);
    if (rc != SQLITE_OK)
        return store_err(rc);
    rc = sqlite3_prepare_v2(s->db, "UPDATE runs SET ended_us = ?, exit_code = ? WHERE id = ?", -1,
                            &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, tftap_now_us());
        sqlite3_bind_int(st, 2, exit_code);
        sqlite3_bind_int64(st, 3, run_id);
        rc = step_done(st);
    }
    if (rc == SQLITE_OK && sqlite3_changes(s->db) == 0)
        rc = SQLITE_NOTFOUND;
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        store_rollback(s->db);
        return rc == SQLITE_NOTFOUND ? TFTAP_ENOTFOUND : store_err(rc);
    }
    return store_err(store_commit(s->db, 0));
}

int store_run_set_cli_version(store *s, int64_t run_id, const char *cli_version)
{
    sqlite3_stmt *st = NULL;
    int rc =
        sqlite3_prepare_v2(s->db, "UPDATE runs SET cli_version = ? WHERE id = ?", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, cli_version, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, run_id);
        rc = step_done(st);
    }
    if (rc == SQLITE_OK && sqlite3_changes(s->db) == 0)
        rc = SQLITE_NOTFOUND;
    sqlite3_finalize(st);
    return rc == SQLITE_NOTFOUND ? TFTAP_ENOTFOUND : store_err(rc);
}

int store_resolve_run(store *s, const char *spec, int64_t *run_id)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!spec || !*spec)
        return TFTAP_EINVAL;
    if (strcmp(spec, "last") == 0) {
        rc = sqlite3_prepare_v2(s->db, "SELECT max(id) FROM runs", -1, &st, NULL);
    } else {
        int64_t v = 0;
        for (const char *p = spec; *p; p++) {
            if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
                return TFTAP_EINVAL;
            v = v * 10 + (*p - '0');
        }
        rc = sqlite3_prepare_v2(s->db, "SELECT id FROM runs WHERE id = ?", -1, &st, NULL);
        if (rc == SQLITE_OK)
            sqlite3_bind_int64(st, 1, v);
    }
    if (rc != SQLITE_OK)
        return store_err(rc);
    rc = sqlite3_step(st);
    int err = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *run_id = sqlite3_column_int64(st, 0);
    else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        err = TFTAP_ENOTFOUND;
    else
        err = store_err(rc);
    sqlite3_finalize(st);
    return err;
}
