/* store: opening and closing the database (its schema: migrate.c), runs. */
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

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

int store_file_is_bundle(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? TFTAP_ENOTFOUND : TFTAP_EIO;
    /* Through SQLite, never open()/close() of our own: closing any
     * descriptor of a file drops every POSIX lock this process holds on it,
     * those of a connection already open included; SQLite's own VFS shares
     * one per file and keeps them. */
    sdb *db = NULL;
    sdb_stmt *q = NULL;
    int is = 0;
    if (sdb_open(path, SDB_OPEN_READONLY, &db) == SDB_OK &&
        sdb_prepare(db, "PRAGMA application_id", &q) == SDB_OK && sdb_step(q) == SDB_ROW)
        is = (uint32_t)sdb_column_int64(q, 0) == STORE_BUNDLE_APPLICATION_ID;
    sdb_finalize(q);
    sdb_close(db);
    return is;
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
        store_sleep_ms(50);
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

/* The size of path's -wal file: -1 when there is none, else its size (1
 * when its name cannot be made: as if it held something). */
static off_t wal_file_size(const char *path)
{
    tftap_buf side = TFTAP_BUF_INIT;
    tftap_buf_printf(&side, "%s-wal", path);
    struct stat st;
    off_t size = tftap_buf_failed(&side) ? 1 : stat(side.data, &st) == 0 ? st.st_size : -1;
    tftap_buf_done(&side);
    return size;
}

/* The bytes of the SQLite file at path, read through SQLite (never an
 * open()/close() of ours: sdb_file_read says why), at most
 * STORE_BUNDLE_MAX_BYTES. */
static int read_whole(const char *path, tftap_buf *out)
{
    sdb *db = NULL;
    int64_t size = 0;
    int rc = sdb_open(path, SDB_OPEN_READONLY, &db);
    if (rc == SDB_OK)
        rc = sdb_file_size(db, &size);
    if (rc == SDB_OK && (size < 0 || size > (int64_t)STORE_BUNDLE_MAX_BYTES))
        rc = SDB_TOOBIG;
    if (rc == SDB_OK && tftap_buf_reserve(out, (size_t)size + 1) != 0)
        rc = SDB_NOMEM;
    if (rc == SDB_OK && size > 0)
        rc = sdb_file_read(db, 0, out->data, (size_t)size);
    if (rc == SDB_OK)
        out->len = (size_t)size;
    sdb_close(db);
    if (rc != SDB_OK)
        tftap_buf_done(out);
    return rc == SDB_NOMEM ? SDB_NOMEM : rc == SDB_OK ? SDB_OK : SDB_ERROR;
}

/* A bundle or database an older tftap wrote: read whole into memory and
 * migrated there, so that it reads as a current one while its file is left
 * as it is (it is someone's evidence, and reading never writes). */
static int open_old_bundle(const char *path, sdb **out)
{
    tftap_buf file = TFTAP_BUF_INIT;
    sdb *db = NULL;
    int v = 0;
    char digest[65];
    int rc = read_whole(path, &file);
    if (rc != SDB_OK)
        return rc;
    tftap_sha256_hex(file.data, file.len, digest);
    if (file.len >= 100 && file.data[18] == 2 && file.data[19] == 2) {
        /* A WAL database: its image reads in rollback mode, unless a -wal
         * file still holds what the main file lacks. */
        if (wal_file_size(path) > 0) {
            tftap_buf_done(&file);
            return SDB_BUSY;
        }
        file.data[18] = file.data[19] = 1;
    }
    rc = sdb_open_sqlite_image(file.data, file.len, &db);
    tftap_buf_done(&file);
    if (rc == SDB_OK)
        rc = store_user_version(db, &v);
    if (rc == SDB_OK)
        rc = store_migrate(db);
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

/* 1 when db holds the tables every tftap record has had since its first
 * version (another program's database may set user_version too). */
static int looks_like_record(sdb *db)
{
    sdb_stmt *st = NULL;
    int n = 0;
    if (sdb_prepare(db,
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('runs', 'processes', 'calls')",
                    &st) == SDB_OK &&
        sdb_step(st) == SDB_ROW)
        n = (int)sdb_column_int64(st, 0);
    sdb_finalize(st);
    return n == 3;
}

/* path opened read only as immutable: SQLite neither locks it nor makes
 * any file beside it, and reads only what the main file holds. */
static int open_immutable(const char *path, sdb **db)
{
    tftap_buf uri = TFTAP_BUF_INIT;
    tftap_buf_puts(&uri, "file:");
    for (const char *p = path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            tftap_buf_printf(&uri, "%%%02X", (unsigned char)*p);
        else
            tftap_buf_putc(&uri, *p);
    }
    tftap_buf_puts(&uri, "?immutable=1");
    int rc = tftap_buf_failed(&uri) ? SDB_NOMEM
                                    : sdb_open(uri.data, SDB_OPEN_READONLY | SDB_OPEN_URI, db);
    tftap_buf_done(&uri);
    return rc;
}

/* Whether path may be opened to be read without changing anything beside
 * it: 0, or TFTAP_ESTORE (errno 0) for a file that is no SQLite database
 * (an empty one included) or a WAL database of another program. SQLite
 * makes -wal and -shm files to read a WAL database whose writer has gone
 * (all checkpointed): such a file is looked at as immutable first, and
 * refused unless it is a tftap record. */
static int readable_as_record(const char *path)
{
    unsigned char head[100];
    /* Read through SQLite (sdb_file_read says why): a server that serves
     * this file holds a connection on it, and an open()/close() here would
     * drop that connection's locks, after which it no longer sees commits. */
    sdb *db = NULL;
    int rc = sdb_open(path, SDB_OPEN_READONLY, &db);
    if (rc == SDB_OK)
        rc = sdb_file_read(db, 0, head, sizeof head);
    sdb_close(db);
    db = NULL;
    if (rc == SDB_CANTOPEN) {
        if (access(path, R_OK) == 0)
            errno = EIO; /* readable, yet SQLite could not open it */
        return TFTAP_EIO;
    }
    errno = 0;
    if (rc == SDB_NOMEM)
        return TFTAP_ENOMEM;
    if (rc != SDB_OK || memcmp(head, "SQLite format 3", 16) != 0)
        return TFTAP_ESTORE;
    int wal = head[18] == 2 && head[19] == 2;
    if (!wal || wal_file_size(path) >= 0)
        return 0; /* a rollback journal reader writes nothing; a live WAL has its files */
    int64_t app = 0;
    rc = open_immutable(path, &db);
    int ok = rc == SDB_OK && (looks_like_record(db) || (application_id(db, &app) == SDB_OK &&
                                                        app == STORE_BUNDLE_APPLICATION_ID));
    sdb_close(db);
    errno = 0;
    return ok ? 0 : rc == SDB_NOMEM ? TFTAP_ENOMEM : TFTAP_ESTORE;
}

/* A reader that must never write: no WAL switch, no migration, no key.
 * The schema must already be this version's; query_only guards against
 * a statement that would write anyway. */
static int open_readonly(const char *path, sdb **out, int *snapshot)
{
    sdb *db = NULL;
    int v = 0;
    *snapshot = 0;
    int rc = readable_as_record(path);
    if (rc)
        return rc;
    rc = sdb_open(path, SDB_OPEN_READONLY, &db);
    if (rc != SDB_OK)
        goto fail;
    sdb_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    rc = store_exec(db, "PRAGMA query_only=1");
    if (rc != SDB_OK)
        goto fail;
    rc = store_user_version(db, &v);
    if ((rc & 0xff) == SDB_READONLY || (rc & 0xff) == SDB_CANTOPEN) {
        /* A WAL database whose -shm is missing and whose directory we
         * cannot write (someone else's, or a read-only copy): no reader can
         * make the shared memory file. Nobody can be writing it then unless
         * they own it, so read it as it is: immutable, a snapshot. */
        sdb_close(db);
        db = NULL;
        rc = open_immutable(path, &db);
        if (rc != SDB_OK)
            goto fail;
        rc = store_exec(db, "PRAGMA query_only=1");
        if (rc == SDB_OK)
            rc = store_user_version(db, &v);
        *snapshot = 1;
    }
    if (rc != SDB_OK)
        goto fail;
    int64_t app = 0;
    /* An older tftap's bundle or database: brought up to date in memory,
     * its file left as it is (reading never writes). */
    if (v > 0 && v < store_schema_version &&
        ((application_id(db, &app) == SDB_OK && app == STORE_BUNDLE_APPLICATION_ID) ||
         looks_like_record(db))) {
        sdb_close(db);
        db = NULL;
        rc = open_old_bundle(path, &db);
        if (rc != SDB_OK)
            goto fail;
        *snapshot = 1;
        *out = db;
        return 0;
    }
    if (v != store_schema_version) {
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
        rc = store_migrate(db);
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
        rc = store_pg_version(db, &v, 0);
    int mismatch = rc == SDB_OK && v != store_schema_version;
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
    int made = 0;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return TFTAP_EIO;
        if (!create)
            return TFTAP_ENOTFOUND;
        made = 1;
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
    /* Pages freed by tftap prune go back to the file system page by page
     * (PRAGMA incremental_vacuum), never by rewriting the whole file.
     * Also only on a new one (an older file gets it from prune's VACUUM). */
    if (made)
        store_exec(db, "PRAGMA auto_vacuum=INCREMENTAL");
    rc = set_wal(db);
    if (rc != SDB_OK)
        goto fail;
    rc = store_exec(db, "PRAGMA synchronous=NORMAL");
    if (rc != SDB_OK)
        goto fail;
    /* What a row held before it was rewritten (a call's JSON written again
     * each batch, then redacted at the run's end: store_run_redact) is
     * zeroed in the file, not left in free space. */
    rc = store_exec(db, "PRAGMA secure_delete=ON");
    if (rc != SDB_OK)
        goto fail;
    rc = store_migrate(db);
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

char *store_without_password(const char *path)
{
    if (!path)
        return NULL;
    size_t n = strlen(path);
    char *out = malloc(n + 1);
    if (!out || !sdb_target_is_pg(path)) {
        if (out)
            memcpy(out, path, n + 1);
        return out;
    }
    const char *auth = strstr(path, "://") + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    const char *query = strchr(path, '?');
    size_t o = 0;
    int first = 1; /* no parameter written yet: the next one follows '?' */
    for (const char *p = path; *p;) {
        if (colon && p == colon) {
            p = at; /* user@ */
            continue;
        }
        if (query && p == query) {
            out[o++] = '?';
            p++;
            continue;
        }
        if (query && p > query && *p != '#' && (p[-1] == '?' || p[-1] == '&')) {
            size_t kl = strcspn(p, "=&#");
            size_t pl = strcspn(p, "&#");
            if (!(p[kl] == '=' && key_is_secret(p, kl))) {
                if (!first)
                    out[o++] = '&';
                memcpy(out + o, p, pl);
                o += pl;
                first = 0;
            }
            p += pl;
            if (*p == '&')
                p++;
            continue;
        }
        if (*p == '#' && o && out[o - 1] == '?')
            o--; /* every parameter was a password */
        out[o++] = *p++;
    }
    if (o && out[o - 1] == '?')
        o--; /* every parameter was a password */
    out[o] = '\0';
    return out;
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
    if (rc == 0 && path && !(s->path = strdup(path))) {
        sdb_close(s->db);
        rc = TFTAP_ENOMEM;
    }
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
    free(s->path);
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
    return store_run_begin_held(s, command, argc, args, cwd, cli_name, cli_version, run_id, NULL);
}

/* Hold run of s's record (a hold that cannot be taken is no error: the
 * run is recorded, only not safe from a prune). */
static void hold_new_run(store *s, int64_t run, store_hold **hold)
{
    if (hold && s->path && store_hold_run(s->path, run, hold) != 0)
        *hold = NULL;
}

int store_run_begin_held(store *s, const char *command, int argc, const char *const *args,
                         const char *cwd, const char *cli_name, const char *cli_version,
                         int64_t *run_id, store_hold **hold)
{
    if (hold)
        *hold = NULL;
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
    hold_new_run(s, *run_id, hold);
    rc = store_commit(s->db, 0);
    if (rc != SDB_OK)
        goto rollback;
    goto done;
rollback:
    store_rollback(s->db);
    if (hold) {
        store_hold_free(*hold);
        *hold = NULL;
    }
done:
    sdb_finalize(st);
    tftap_buf_done(&a);
    return store_err(rc);
}

int store_run_join(store *s, const char *key, const char *command, int argc,
                   const char *const *args, const char *cwd, const char *cli_name, int64_t *run_id)
{
    return store_run_join_held(s, key, command, argc, args, cwd, cli_name, run_id, NULL);
}

int store_run_join_held(store *s, const char *key, const char *command, int argc,
                        const char *const *args, const char *cwd, const char *cli_name,
                        int64_t *run_id, store_hold **hold)
{
    if (hold)
        *hold = NULL;
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
    hold_new_run(s, *run_id, hold);
    rc = store_commit(s->db, 0);
    if (rc != SDB_OK)
        goto rollback;
    goto done;
rollback:
    store_rollback(s->db);
    if (hold) {
        store_hold_free(*hold);
        *hold = NULL;
    }
done:
    sdb_finalize(ins);
    sdb_finalize(upd);
    sdb_finalize(sel);
    tftap_buf_done(&a);
    return store_err(rc);
}

int store_run_message_bytes(store *s, int64_t run_id, int64_t *n)
{
    return store_query_int(s->db,
                           "SELECT coalesce(sum(request_bytes + response_bytes), 0) FROM calls "
                           "WHERE run_id = ?",
                           run_id, n);
}

int store_run_recorders(store *s, int64_t run_id, int64_t *n)
{
    return store_query_int(s->db, "SELECT recorders FROM runs WHERE id = ?", run_id, n);
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

int store_checkpoint(store *s)
{
    if (sdb_is_pg(s->db))
        return 0;
    return store_err(sdb_exec(s->db, "PRAGMA wal_checkpoint(PASSIVE)"));
}

int store_run_end(store *s, int64_t run_id, int exit_code)
{
    return store_run_end_at(s, run_id, exit_code, 0);
}

int store_run_end_at(store *s, int64_t run_id, int exit_code, int64_t ended_us)
{
    sdb_stmt *st = NULL;
    int rc = store_begin(s->db, 0);
    if (rc != SDB_OK)
        return store_err(rc);
    rc = sdb_prepare(s->db, "UPDATE runs SET ended_us = ?, exit_code = ? WHERE id = ?", &st);
    if (rc == SDB_OK) {
        sdb_bind_int64(st, 1, ended_us > 0 ? ended_us : tftap_now_us());
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

int store_run_set_test(store *s, int64_t run_id, int64_t parent_id, const char *test, int step)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(
        s->db, "UPDATE runs SET parent_id = ?, test_name = ?, test_step = ? WHERE id = ?", &st);
    if (rc == SDB_OK) {
        if (parent_id > 0)
            sdb_bind_int64(st, 1, parent_id);
        else
            sdb_bind_null(st, 1);
        if (test != NULL)
            sdb_bind_text(st, 2, test, -1, SDB_STATIC);
        else
            sdb_bind_null(st, 2);
        if (step > 0)
            sdb_bind_int64(st, 3, step);
        else
            sdb_bind_null(st, 3);
        sdb_bind_int64(st, 4, run_id);
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
