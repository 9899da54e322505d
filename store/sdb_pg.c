/* sdb: the PostgreSQL backend (libpq). One connection per sdb; statements
 * are prepared on the server once per SQL text and parameter types, and each
 * step of a query reads its whole result (one libpq connection cannot run a
 * statement while another's rows are still being read, which SQLite allows
 * and the store does). Values travel as text, bytea as binary.
 *
 * With sdb_pipeline on (the recorder's connection), a transaction runs in
 * libpq's pipeline mode: statements without rows are queued, and the
 * answers are read when rows are wanted or at COMMIT. On a remote server a
 * round trip costs more than the statement, and the recorder writes
 * thousands of rows per transaction. */
#include "common/common.h"
#include "store/sdb_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libpq-fe.h>

/* libpq is opened by the first PostgreSQL open, not linked: every tftap
 * process (each shim OpenTofu starts) would otherwise map it and the two
 * dozen libraries it pulls in (Kerberos, LDAP, SASL, GnuTLS). */
#define PQ_FUNCTIONS(X)                                                                            \
    X(clear)                                                                                       \
    X(cmdStatus)                                                                                   \
    X(cmdTuples)                                                                                   \
    X(connectdbParams)                                                                             \
    X(consumeInput)                                                                                \
    X(enterPipelineMode)                                                                           \
    X(errorMessage)                                                                                \
    X(exec)                                                                                        \
    X(execParams)                                                                                  \
    X(execPrepared)                                                                                \
    X(exitPipelineMode)                                                                            \
    X(finish)                                                                                      \
    X(freemem)                                                                                     \
    X(ftype)                                                                                       \
    X(getResult)                                                                                   \
    X(getisnull)                                                                                   \
    X(getlength)                                                                                   \
    X(getvalue)                                                                                    \
    X(nfields)                                                                                     \
    X(notifies)                                                                                    \
    X(ntuples)                                                                                     \
    X(pipelineSync)                                                                                \
    X(prepare)                                                                                     \
    X(resultErrorField)                                                                            \
    X(resultErrorMessage)                                                                          \
    X(resultStatus)                                                                                \
    X(sendPrepare)                                                                                 \
    X(sendQueryParams)                                                                             \
    X(sendQueryPrepared)                                                                           \
    X(status)                                                                                      \
    X(transactionStatus)                                                                           \
    X(unescapeBytea)
/* Each pointer has its function's type as libpq-fe.h declares it. */
#define PQ_FIELD(f) __typeof__(PQ##f) *f;
static struct {
    PQ_FUNCTIONS(PQ_FIELD)
} pq;
#define PQ_SYM(f) {"PQ" #f, (void **)&pq.f},
static const struct tftap_dlsym pq_syms[] = {PQ_FUNCTIONS(PQ_SYM)};
/* libpq5's soname (what libpq-dev's libpq.so points to). */
static tftap_lib pq_lib = {
    .soname = "libpq.so.5", .syms = pq_syms, .nsyms = sizeof pq_syms / sizeof *pq_syms};

/* Type OIDs (pg_type.oid, fixed for built-in types). */
#define PG_BOOL_OID 16
#define PG_BYTEA_OID 17
#define PG_INT8_OID 20
#define PG_INT2_OID 21
#define PG_INT4_OID 23
#define PG_FLOAT4_OID 700
#define PG_FLOAT8_OID 701

/* A statement prepared on the server: SQL text plus parameter types. */
struct pg_prepared {
    struct pg_prepared *next;
    char *key; /* types, '\n', SQL ($N form) */
    char name[24];
    int unconfirmed; /* its Parse is queued in a pipeline, not yet answered */
};

struct sdb_pg {
    PGconn *conn;
    char *err;
    int changes;
    int64_t notified; /* notifications seen (data version) */
    int gone;         /* a call found the session ended: only a reconnect helps */
    unsigned next_name, next_cursor;
    struct pg_prepared *prepared;
    int pipeline;    /* sdb_pipeline: transactions run in pipeline mode */
    int in_pipeline; /* in pipeline mode now (a transaction is open) */
};

struct sdb_pg_stmt {
    char *sql; /* with $N placeholders */
    int nparams;
    char **values;
    int *lengths;
    char *types; /* per parameter: 'i' int8, 't' text/unknown, 'b' bytea, 'n' NULL */
    PGresult *res;
    int executed;
    int row, nrows;
    unsigned char **blobs; /* current row's unescaped bytea columns */
    size_t *blob_lens;
    int ncols;
    int large;          /* read through a cursor */
    int rowless;        /* INSERT/UPDATE/DELETE without RETURNING: may be queued */
    int queued;         /* executed in a pipeline, its answer not read here */
    char cursor[32];    /* its name while open */
    int cursor_drained; /* the last FETCH returned fewer rows than asked */
};

/* Rows per FETCH of a large query. */
#define PG_FETCH_ROWS 256

static void set_err(struct sdb_pg *pg, const char *msg)
{
    free(pg->err);
    pg->err = strdup(msg && *msg ? msg : "unknown PostgreSQL error");
    if (pg->err) {
        size_t n = strlen(pg->err);
        while (n && (pg->err[n - 1] == '\n' || pg->err[n - 1] == ' '))
            pg->err[--n] = '\0';
    }
}

/* An error result (or none) to a result code; records the message. */
static int result_rc(struct sdb_pg *pg, PGresult *res)
{
    if (pq.status(pg->conn) != CONNECTION_OK) {
        set_err(pg, pq.errorMessage(pg->conn));
        pg->gone = 1;
        return SDB_GONE;
    }
    if (!res) {
        set_err(pg, pq.errorMessage(pg->conn));
        return SDB_NOMEM;
    }
    set_err(pg, pq.resultErrorMessage(res));
    const char *state = pq.resultErrorField(res, PG_DIAG_SQLSTATE);
    if (!state)
        return SDB_ERROR;
    if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03"))
        return SDB_BUSY;
    if (!strncmp(state, "23", 2))
        return SDB_CONSTRAINT;
    if (!strcmp(state, "25006"))
        return SDB_READONLY;
    if (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3)) {
        pg->gone = 1;
        return SDB_GONE;
    }
    if (!strcmp(state, "53200"))
        return SDB_NOMEM;
    /* The server out of room or failing (disk full, too many connections,
     * an I/O error): not a refusal of what was written, worth a retry. */
    if (!strncmp(state, "53", 2) || !strncmp(state, "58", 2))
        return SDB_FULL;
    return SDB_ERROR;
}

static int64_t count_notifies(struct sdb_pg *pg)
{
    PGnotify *n;
    while ((n = pq.notifies(pg->conn)) != NULL) {
        pg->notified++;
        pq.freemem(n);
    }
    return pg->notified;
}

/* Forget statements whose Parse went unanswered (a pipeline failed before
 * reaching it), or mark them prepared (ok). */
static void settle_prepared(struct sdb_pg *pg, int ok)
{
    struct pg_prepared **pp = &pg->prepared;
    while (*pp) {
        struct pg_prepared *e = *pp;
        if (e->unconfirmed && !ok) {
            *pp = e->next;
            free(e->key);
            free(e);
            continue;
        }
        e->unconfirmed = 0;
        pp = &e->next;
    }
}

/* Send a Sync and read every answer queued before it. The first error is
 * returned (and its message kept); *last (may be NULL) gets the result of
 * the last statement sent, which the caller owns. */
static int pipeline_sync(struct sdb_pg *pg, PGresult **last)
{
    if (last)
        *last = NULL;
    if (!pq.pipelineSync(pg->conn)) {
        set_err(pg, pq.errorMessage(pg->conn));
        settle_prepared(pg, 0);
        return pq.status(pg->conn) == CONNECTION_OK ? SDB_ERROR : SDB_GONE;
    }
    int rc = SDB_OK, nulls = 0;
    for (;;) {
        PGresult *res = pq.getResult(pg->conn);
        if (!res) {
            /* Between statements' answers; a lost connection never gets
             * to the Sync. */
            if (pq.status(pg->conn) != CONNECTION_OK || ++nulls > 2) {
                if (rc == SDB_OK) {
                    set_err(pg, pq.errorMessage(pg->conn));
                    rc = SDB_GONE;
                }
                break;
            }
            continue;
        }
        nulls = 0;
        ExecStatusType st = pq.resultStatus(res);
        if (st == PGRES_PIPELINE_SYNC) {
            pq.clear(res);
            break;
        }
        if (st == PGRES_FATAL_ERROR || st == PGRES_NONFATAL_ERROR || st == PGRES_BAD_RESPONSE) {
            if (rc == SDB_OK)
                rc = result_rc(pg, res);
        } else if (st == PGRES_PIPELINE_ABORTED) {
            if (rc == SDB_OK) {
                set_err(pg, "statement skipped after an earlier error in the pipeline");
                rc = SDB_ERROR;
            }
        } else if (last) {
            pq.clear(*last);
            *last = res;
            continue;
        }
        pq.clear(res);
    }
    settle_prepared(pg, rc == SDB_OK);
    count_notifies(pg);
    if (rc != SDB_OK && last) {
        pq.clear(*last);
        *last = NULL;
    }
    return rc;
}

/* Leave pipeline mode (the transaction stays open): everything queued is
 * answered first. */
static int pipeline_leave(struct sdb_pg *pg)
{
    if (!pg->in_pipeline)
        return SDB_OK;
    int rc = pipeline_sync(pg, NULL);
    pg->in_pipeline = 0;
    if (!pq.exitPipelineMode(pg->conn) && rc == SDB_OK) {
        set_err(pg, pq.errorMessage(pg->conn));
        rc = pq.status(pg->conn) == CONNECTION_OK ? SDB_ERROR : SDB_GONE;
    }
    return rc;
}

/* Queue one statement without parameters in the pipeline. */
static int pipeline_send(struct sdb_pg *pg, const char *sql)
{
    if (pq.sendQueryParams(pg->conn, sql, 0, NULL, NULL, NULL, NULL, 0))
        return SDB_OK;
    set_err(pg, pq.errorMessage(pg->conn));
    return pq.status(pg->conn) == CONNECTION_OK ? SDB_ERROR : SDB_GONE;
}

void sdb_pg_pipeline(sdb *db, int on)
{
    db->pg->pipeline = on;
    if (!on)
        pipeline_leave(db->pg);
}

int sdb_pg_open(const char *uri, int flags, sdb *db)
{
    struct sdb_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return SDB_NOMEM;
    db->pg = pg;
    if (tftap_lib_load(&pq_lib) != 0) {
        char why[sizeof pq_lib.why + 64];
        snprintf(why, sizeof why, "PostgreSQL needs libpq.so.5 (Debian: libpq5): %s", pq_lib.why);
        set_err(pg, why);
        return SDB_NOLIB;
    }
    /* Defaults first: the URI (dbname, expanded) overrides any of them. */
    const char *const keys[] = {"connect_timeout",  "keepalives",
                                "keepalives_idle",  "keepalives_interval",
                                "keepalives_count", "tcp_user_timeout",
                                "application_name", "options",
                                "dbname",           NULL};
    const char *const vals[] = {"5",
                                "1",
                                "10",
                                "5",
                                "3",
                                "15000",
                                "tftap",
                                "-c statement_timeout=60000 -c lock_timeout=10000 "
                                "-c idle_in_transaction_session_timeout=120000",
                                uri,
                                NULL};
    pg->conn = pq.connectdbParams(keys, vals, 1);
    if (!pg->conn)
        return SDB_NOMEM;
    if (pq.status(pg->conn) != CONNECTION_OK) {
        set_err(pg, pq.errorMessage(pg->conn));
        return SDB_CANTOPEN;
    }
    /* Quiet: notices (e.g. "relation already exists, skipping") are not ours to print. */
    PGresult *r =
        pq.exec(pg->conn, (flags & SDB_OPEN_READONLY) ? "SET client_min_messages = warning;"
                                                        "SET default_transaction_read_only = on;"
                                                        "LISTEN tftap_changes"
                                                      : "SET client_min_messages = warning;"
                                                        "LISTEN tftap_changes");
    int rc = pq.resultStatus(r) == PGRES_COMMAND_OK ? SDB_OK : result_rc(pg, r);
    pq.clear(r);
    return rc;
}

void sdb_pg_close(sdb *db)
{
    struct sdb_pg *pg = db->pg;
    if (pg->conn)
        pq.finish(pg->conn);
    while (pg->prepared) {
        struct pg_prepared *p = pg->prepared;
        pg->prepared = p->next;
        free(p->key);
        free(p);
    }
    free(pg->err);
    free(pg);
    db->pg = NULL;
}

const char *sdb_pg_errmsg(sdb *db)
{
    return db->pg->err ? db->pg->err : "not an error";
}

int sdb_pg_changes(sdb *db)
{
    return db->pg->changes;
}

int sdb_pg_exec(sdb *db, const char *sql)
{
    struct sdb_pg *pg = db->pg;
    /* SQLite's transaction flavours: PostgreSQL's writers never need them. */
    if (!strcmp(sql, "BEGIN IMMEDIATE") || !strcmp(sql, "BEGIN EXCLUSIVE"))
        sql = "BEGIN";
    int end = !strcmp(sql, "COMMIT") || !strcmp(sql, "ROLLBACK");
    if (pg->in_pipeline && end) {
        /* Everything queued, then the end: the transaction's one round trip. */
        int rc = pipeline_send(pg, sql);
        PGresult *r = NULL;
        int rc2 = pipeline_sync(pg, rc == SDB_OK ? &r : NULL);
        pg->in_pipeline = 0;
        pq.exitPipelineMode(pg->conn);
        if (rc == SDB_OK)
            rc = rc2;
        /* COMMIT of a transaction that had failed reports success with ROLLBACK. */
        if (rc == SDB_OK && !strcmp(sql, "COMMIT") && r && !strcmp(pq.cmdStatus(r), "ROLLBACK")) {
            set_err(pg, "transaction rolled back");
            rc = SDB_ERROR;
        }
        pq.clear(r);
        return rc;
    }
    int rc = pipeline_leave(pg);
    if (rc != SDB_OK)
        return rc;
    if (pg->pipeline && !strcmp(sql, "BEGIN") && pq.transactionStatus(pg->conn) == PQTRANS_IDLE) {
        if (!pq.enterPipelineMode(pg->conn)) {
            set_err(pg, pq.errorMessage(pg->conn));
            return pq.status(pg->conn) == CONNECTION_OK ? SDB_ERROR : SDB_GONE;
        }
        pg->in_pipeline = 1;
        return pipeline_send(pg, sql);
    }
    PGresult *r = pq.exec(pg->conn, sql);
    ExecStatusType s = pq.resultStatus(r);
    rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK || s == PGRES_EMPTY_QUERY ? SDB_OK
                                                                                 : result_rc(pg, r);
    /* COMMIT of a transaction that had failed reports success with ROLLBACK. */
    if (rc == SDB_OK && !strcmp(sql, "COMMIT") && !strcmp(pq.cmdStatus(r), "ROLLBACK")) {
        set_err(pg, "transaction rolled back");
        rc = SDB_ERROR;
    }
    pq.clear(r);
    count_notifies(pg);
    return rc;
}

int sdb_pg_get_autocommit(sdb *db)
{
    return pq.transactionStatus(db->pg->conn) == PQTRANS_IDLE;
}

int sdb_pg_gone(sdb *db)
{
    return db->pg->gone || pq.status(db->pg->conn) != CONNECTION_OK;
}

int sdb_pg_data_version(sdb *db, int64_t *v)
{
    struct sdb_pg *pg = db->pg;
    if (pg->in_pipeline) {
        *v = pg->notified;
        return SDB_OK;
    }
    if (!pq.consumeInput(pg->conn)) {
        set_err(pg, pq.errorMessage(pg->conn));
        pg->gone = 1;
        return SDB_GONE;
    }
    *v = count_notifies(pg);
    return SDB_OK;
}

/* SQLite's ? and ?N as $N, outside quotes and comments. */
static char *rewrite_params(const char *sql, int *nparams)
{
    size_t n = strlen(sql);
    /* "?" becomes at most "$10000" (numbers stop there). */
    char *out = malloc(n * 6 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    int max = 0;
    for (size_t i = 0; i < n;) {
        char c = sql[i];
        if (c == '\'' || c == '"') {
            out[o++] = sql[i++];
            while (i < n && sql[i] != c)
                out[o++] = sql[i++];
            if (i < n)
                out[o++] = sql[i++];
        } else if (c == '-' && sql[i + 1] == '-') {
            while (i < n && sql[i] != '\n')
                out[o++] = sql[i++];
        } else if (c == '?') {
            i++;
            int num = 0;
            if (sql[i] >= '0' && sql[i] <= '9') {
                while (sql[i] >= '0' && sql[i] <= '9' && num < 10000)
                    num = num * 10 + (sql[i++] - '0');
            } else {
                num = max + 1;
            }
            if (num > max)
                max = num;
            o += (size_t)snprintf(out + o, 7, "$%d", num);
        } else {
            out[o++] = sql[i++];
        }
    }
    out[o] = '\0';
    *nparams = max;
    return out;
}

/* Case-insensitive: does s contain word w? */
static int has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; *s; s++)
        if (strncasecmp(s, w, n) == 0)
            return 1;
    return 0;
}

/* A statement that never returns rows: INSERT, UPDATE or DELETE without
 * RETURNING (anywhere in the text, to be safe). */
static int is_rowless(const char *sql)
{
    while (*sql == ' ' || *sql == '\n' || *sql == '\t')
        sql++;
    return (strncasecmp(sql, "INSERT", 6) == 0 || strncasecmp(sql, "UPDATE", 6) == 0 ||
            strncasecmp(sql, "DELETE", 6) == 0) &&
           !has_word(sql, "RETURNING");
}

int sdb_pg_prepare(sdb *db, const char *sql, int large, sdb_stmt *st)
{
    (void)db;
    struct sdb_pg_stmt *p = calloc(1, sizeof *p);
    if (!p)
        return SDB_NOMEM;
    st->pg = p;
    p->large = large;
    p->sql = rewrite_params(sql, &p->nparams);
    if (!p->sql)
        return SDB_NOMEM;
    p->rowless = is_rowless(sql);
    if (p->nparams) {
        p->values = calloc((size_t)p->nparams, sizeof *p->values);
        p->lengths = calloc((size_t)p->nparams, sizeof *p->lengths);
        p->types = malloc((size_t)p->nparams + 1);
        if (!p->values || !p->lengths || !p->types)
            return SDB_NOMEM;
        memset(p->types, 'n', (size_t)p->nparams);
        p->types[p->nparams] = '\0';
    }
    return SDB_OK;
}

static void clear_row(struct sdb_pg_stmt *p)
{
    for (int i = 0; p->blobs && i < p->ncols; i++) {
        free(p->blobs[i]);
        p->blobs[i] = NULL;
    }
}

static void clear_result(struct sdb_pg_stmt *p)
{
    clear_row(p);
    free(p->blobs);
    free(p->blob_lens);
    p->blobs = NULL;
    p->blob_lens = NULL;
    p->ncols = 0;
    pq.clear(p->res);
    p->res = NULL;
    p->executed = 0;
    p->queued = 0;
    p->row = p->nrows = 0;
}

static Oid param_oid(char type)
{
    return type == 'i' ? PG_INT8_OID : type == 'b' ? PG_BYTEA_OID : 0;
}

static void close_cursor(struct sdb_pg *pg, struct sdb_pg_stmt *p)
{
    if (!p->cursor[0])
        return;
    pipeline_leave(pg);
    char sql[48];
    snprintf(sql, sizeof sql, "CLOSE %s", p->cursor);
    pq.clear(pq.exec(pg->conn, sql));
    p->cursor[0] = '\0';
}

/* A large query: declared as a cursor that outlives the transaction (WITH
 * HOLD), so that it may be read across the caller's other statements. */
static int declare_cursor(struct sdb_pg *pg, struct sdb_pg_stmt *p)
{
    size_t n = strlen(p->sql) + 96;
    char *decl = malloc(n);
    Oid *oids = p->nparams ? calloc((size_t)p->nparams, sizeof *oids) : NULL;
    int *formats = p->nparams ? calloc((size_t)p->nparams, sizeof *formats) : NULL;
    if (!decl || (p->nparams && (!oids || !formats))) {
        free(decl);
        free(oids);
        free(formats);
        return SDB_NOMEM;
    }
    for (int i = 0; i < p->nparams; i++) {
        oids[i] = param_oid(p->types[i]);
        formats[i] = p->types[i] == 'b';
    }
    snprintf(p->cursor, sizeof p->cursor, "tftap_c%u", pg->next_cursor++);
    snprintf(decl, n, "DECLARE %s NO SCROLL CURSOR WITH HOLD FOR %s", p->cursor, p->sql);
    PGresult *r = pq.execParams(pg->conn, decl, p->nparams, oids, (const char *const *)p->values,
                                p->lengths, formats, 0);
    free(decl);
    free(oids);
    free(formats);
    int rc = pq.resultStatus(r) == PGRES_COMMAND_OK ? SDB_OK : result_rc(pg, r);
    pq.clear(r);
    if (rc != SDB_OK)
        p->cursor[0] = '\0';
    p->executed = 1;
    p->cursor_drained = 0;
    p->nrows = 0;
    p->row = -1;
    return rc;
}

/* The next batch of a cursor's rows into p->res. */
static int fetch_cursor(struct sdb_pg *pg, struct sdb_pg_stmt *p)
{
    char sql[64];
    snprintf(sql, sizeof sql, "FETCH %d FROM %s", PG_FETCH_ROWS, p->cursor);
    clear_row(p);
    pq.clear(p->res);
    p->res = pq.exec(pg->conn, sql);
    if (pq.resultStatus(p->res) != PGRES_TUPLES_OK) {
        int rc = result_rc(pg, p->res);
        pq.clear(p->res);
        p->res = NULL;
        return rc;
    }
    p->nrows = pq.ntuples(p->res);
    p->row = -1;
    p->cursor_drained = p->nrows < PG_FETCH_ROWS;
    if (!p->blobs && pq.nfields(p->res)) {
        p->ncols = pq.nfields(p->res);
        p->blobs = calloc((size_t)p->ncols, sizeof *p->blobs);
        p->blob_lens = calloc((size_t)p->ncols, sizeof *p->blob_lens);
        if (!p->blobs || !p->blob_lens)
            return SDB_NOMEM;
    }
    return SDB_OK;
}

/* The server-side name of this statement with these parameter types,
 * preparing it the first time. */
static int prepared_name(struct sdb_pg *pg, struct sdb_pg_stmt *p, const char **name)
{
    size_t tl = (size_t)p->nparams, sl = strlen(p->sql);
    char *key = malloc(tl + 1 + sl + 1);
    if (!key)
        return SDB_NOMEM;
    memcpy(key, p->types ? p->types : "", tl);
    /* A NULL and a text are both sent untyped: one server statement. */
    for (size_t i = 0; i < tl; i++)
        key[i] = key[i] == 'n' ? 't' : key[i];
    key[tl] = '\n';
    memcpy(key + tl + 1, p->sql, sl + 1);
    for (struct pg_prepared *e = pg->prepared; e; e = e->next)
        if (!strcmp(e->key, key)) {
            free(key);
            *name = e->name;
            return SDB_OK;
        }
    struct pg_prepared *e = calloc(1, sizeof *e);
    Oid *oids = p->nparams ? calloc((size_t)p->nparams, sizeof *oids) : NULL;
    if (!e || (p->nparams && !oids)) {
        free(e);
        free(oids);
        free(key);
        return SDB_NOMEM;
    }
    for (int i = 0; i < p->nparams; i++)
        oids[i] = param_oid(p->types[i]);
    snprintf(e->name, sizeof e->name, "tftap_%u", pg->next_name++);
    if (pg->in_pipeline) {
        /* Queued too: its answer comes with the others'. */
        int ok = pq.sendPrepare(pg->conn, e->name, p->sql, p->nparams, oids);
        free(oids);
        if (!ok) {
            set_err(pg, pq.errorMessage(pg->conn));
            free(e);
            free(key);
            return pq.status(pg->conn) == CONNECTION_OK ? SDB_ERROR : SDB_GONE;
        }
        e->unconfirmed = 1;
        e->key = key;
        e->next = pg->prepared;
        pg->prepared = e;
        *name = e->name;
        return SDB_OK;
    }
    PGresult *r = pq.prepare(pg->conn, e->name, p->sql, p->nparams, oids);
    free(oids);
    if (pq.resultStatus(r) != PGRES_COMMAND_OK) {
        int rc = result_rc(pg, r);
        pq.clear(r);
        free(e);
        free(key);
        return rc;
    }
    pq.clear(r);
    e->key = key;
    e->next = pg->prepared;
    pg->prepared = e;
    *name = e->name;
    return SDB_OK;
}

int sdb_pg_step(sdb_stmt *st)
{
    struct sdb_pg *pg = st->db->pg;
    struct sdb_pg_stmt *p = st->pg;
    if (p->large) {
        int rc = p->executed ? SDB_OK : pipeline_leave(pg);
        if (rc == SDB_OK && !p->executed)
            rc = declare_cursor(pg, p);
        if (rc == SDB_OK && p->cursor[0] && p->row + 1 >= p->nrows && !p->cursor_drained)
            rc = fetch_cursor(pg, p);
        if (rc != SDB_OK)
            return rc;
        clear_row(p);
        if (!p->res || p->row + 1 >= p->nrows) {
            p->row = p->nrows;
            close_cursor(pg, p);
            return SDB_DONE;
        }
        p->row++;
        return SDB_ROW;
    }
    if (p->queued)
        return SDB_DONE;
    if (!p->executed) {
        const char *name = NULL;
        int rc = prepared_name(pg, p, &name);
        if (rc != SDB_OK)
            return rc;
        int *formats = p->nparams ? calloc((size_t)p->nparams, sizeof *formats) : NULL;
        if (p->nparams && !formats)
            return SDB_NOMEM;
        for (int i = 0; i < p->nparams; i++)
            formats[i] = p->types[i] == 'b';
        if (pg->in_pipeline) {
            int ok = pq.sendQueryPrepared(pg->conn, name, p->nparams,
                                          (const char *const *)p->values, p->lengths, formats, 0);
            free(formats);
            if (!ok) {
                set_err(pg, pq.errorMessage(pg->conn));
                return pq.status(pg->conn) == CONNECTION_OK ? SDB_ERROR : SDB_GONE;
            }
            p->executed = 1;
            if (p->rowless) {
                /* Its answer is read at the next sync. */
                p->queued = 1;
                pg->changes = 0;
                return SDB_DONE;
            }
            rc = pipeline_sync(pg, &p->res);
            if (rc != SDB_OK)
                return rc;
        } else {
            p->res = pq.execPrepared(pg->conn, name, p->nparams, (const char *const *)p->values,
                                     p->lengths, formats, 0);
            free(formats);
            count_notifies(pg);
        }
        p->executed = 1;
        ExecStatusType s = pq.resultStatus(p->res);
        if (s == PGRES_TUPLES_OK) {
            p->nrows = pq.ntuples(p->res);
            p->ncols = pq.nfields(p->res);
            p->row = -1;
            /* RETURNING rows: changes as SQLite counts them (a SELECT does not). */
            const char *cmd = pq.cmdStatus(p->res);
            if (strncmp(cmd, "SELECT", 6) != 0 && *pq.cmdTuples(p->res))
                pg->changes = atoi(pq.cmdTuples(p->res));
            if (p->ncols) {
                p->blobs = calloc((size_t)p->ncols, sizeof *p->blobs);
                p->blob_lens = calloc((size_t)p->ncols, sizeof *p->blob_lens);
                if (!p->blobs || !p->blob_lens)
                    return SDB_NOMEM;
            }
        } else if (s == PGRES_COMMAND_OK) {
            const char *t = pq.cmdTuples(p->res);
            pg->changes = *t ? atoi(t) : 0;
            p->nrows = 0;
            p->row = -1;
        } else {
            rc = result_rc(pg, p->res);
            pq.clear(p->res);
            p->res = NULL;
            return rc;
        }
    }
    if (!p->res)
        return SDB_ERROR;
    clear_row(p);
    if (p->row + 1 >= p->nrows) {
        p->row = p->nrows;
        return SDB_DONE;
    }
    p->row++;
    return SDB_ROW;
}

int sdb_pg_reset(sdb_stmt *st)
{
    close_cursor(st->db->pg, st->pg);
    clear_result(st->pg);
    return SDB_OK;
}

int sdb_pg_clear_bindings(sdb_stmt *st)
{
    struct sdb_pg_stmt *p = st->pg;
    for (int i = 0; i < p->nparams; i++) {
        free(p->values[i]);
        p->values[i] = NULL;
        p->lengths[i] = 0;
        p->types[i] = 'n';
    }
    return SDB_OK;
}

void sdb_pg_finalize(sdb_stmt *st)
{
    struct sdb_pg_stmt *p = st->pg;
    if (!p)
        return;
    if (st->db && st->db->pg)
        close_cursor(st->db->pg, p);
    clear_result(p);
    if (p->values)
        sdb_pg_clear_bindings(st);
    free(p->values);
    free(p->lengths);
    free(p->types);
    free(p->sql);
    free(p);
    st->pg = NULL;
}

/* Text as PostgreSQL takes it: valid UTF-8 without NUL. SQLite stores any
 * bytes, and what reaches a column is a peer's (a provider's error message,
 * a path): each invalid byte or NUL becomes U+FFFD, so that one such value
 * is not a write the server refuses again on every retry. *len is updated. */
static char *utf8_text(const unsigned char *s, size_t *len)
{
    size_t n = *len, bad = 0;
    for (size_t i = 0; i < n;) {
        size_t l = s[i] ? tftap_utf8_len(s + i, n - i) : 0;
        bad += l == 0;
        i += l ? l : 1;
    }
    char *v = malloc(n + bad * 2 + 1);
    if (!v)
        return NULL;
    if (bad == 0) { /* the usual case: checked once, copied whole */
        memcpy(v, s, n);
        v[n] = '\0';
        return v;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t l = s[i] ? tftap_utf8_len(s + i, n - i) : 0;
        if (l) {
            memcpy(v + o, s + i, l);
            o += l;
            i += l;
        } else {
            memcpy(v + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    v[o] = '\0';
    *len = o;
    return v;
}

int sdb_pg_bind(sdb_stmt *st, int i, const void *data, size_t len, char kind)
{
    struct sdb_pg_stmt *p = st->pg;
    if (i < 1 || i > p->nparams)
        return SDB_ERROR;
    if (p->executed) {
        close_cursor(st->db->pg, p);
        clear_result(p);
    }
    i--;
    free(p->values[i]);
    p->values[i] = NULL;
    p->lengths[i] = 0;
    if (!data) {
        p->types[i] = 'n';
        return SDB_OK;
    }
    if (len > (size_t)0x7fffffff)
        return SDB_ERROR;
    char *v = kind == 't' ? utf8_text(data, &len) : malloc(len + 1);
    if (!v)
        return SDB_NOMEM;
    if (kind != 't') {
        memcpy(v, data, len);
        v[len] = '\0';
    } else if (len > (size_t)0x7fffffff) { /* grown by the replacements */
        free(v);
        return SDB_ERROR;
    }
    p->values[i] = v;
    p->lengths[i] = (int)len;
    /* Integers typed int8, so that the server never infers a narrower type
     * for a parameter; text is left for the server to infer. */
    p->types[i] = kind;
    return SDB_OK;
}

int sdb_pg_column_type(sdb_stmt *st, int i)
{
    struct sdb_pg_stmt *p = st->pg;
    if (!p || !p->res || p->row < 0 || p->row >= p->nrows || i < 0 || i >= p->ncols ||
        pq.getisnull(p->res, p->row, i))
        return SDB_NULL;
    switch (pq.ftype(p->res, i)) {
    case PG_BOOL_OID:
    case PG_INT2_OID:
    case PG_INT4_OID:
    case PG_INT8_OID:
        return SDB_INTEGER;
    case PG_FLOAT4_OID:
    case PG_FLOAT8_OID:
        return SDB_FLOAT;
    case PG_BYTEA_OID:
        return SDB_BLOB;
    default:
        return SDB_TEXT;
    }
}

const char *sdb_pg_column(sdb_stmt *st, int i, int *len, int *is_null, int *is_blob)
{
    struct sdb_pg_stmt *p = st->pg;
    *len = 0;
    *is_blob = 0;
    *is_null = 1;
    if (!p || !p->res || p->row < 0 || p->row >= p->nrows || i < 0 || i >= p->ncols)
        return NULL;
    if (pq.getisnull(p->res, p->row, i))
        return NULL;
    *is_null = 0;
    if (pq.ftype(p->res, i) == PG_BYTEA_OID) {
        *is_blob = 1;
        if (!p->blobs[i]) {
            size_t n = 0;
            unsigned char *raw =
                pq.unescapeBytea((const unsigned char *)pq.getvalue(p->res, p->row, i), &n);
            /* Copied with a NUL after it (libpq's has none): a bytea column
             * read as text (a record someone altered) stays a C string. */
            p->blobs[i] = raw && n < (size_t)INT_MAX ? malloc(n + 1) : NULL;
            if (p->blobs[i]) {
                memcpy(p->blobs[i], raw, n);
                p->blobs[i][n] = '\0';
            }
            pq.freemem(raw);
            if (!p->blobs[i]) {
                *is_null = 1;
                return NULL;
            }
            p->blob_lens[i] = n;
        }
        *len = (int)p->blob_lens[i];
        return (const char *)p->blobs[i];
    }
    *len = pq.getlength(p->res, p->row, i);
    return pq.getvalue(p->res, p->row, i);
}
