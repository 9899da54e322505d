/* sdb_pipeline against a real PostgreSQL server (URI in argv[1], started by
 * tests/pg/pipeline.sh): rowless statements are queued and answered at
 * COMMIT, a statement with rows is answered in place, and an error in a
 * queued statement fails the COMMIT and leaves nothing behind, after which
 * the connection (and its prepared statements) still work. */
#include <stdio.h>
#include <string.h>

#include "store/sdb.h"
#include "tests/check.h"

static int step_sql(sdb *db, const char *sql, int64_t a)
{
    sdb_stmt *st = NULL;
    int rc = sdb_prepare(db, sql, &st);
    if (rc == SDB_OK) {
        sdb_bind_int64(st, 1, a);
        rc = sdb_step(st);
    }
    sdb_finalize(st);
    return rc;
}

static int64_t count(sdb *db, const char *where)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM t WHERE %s", where);
    sdb_stmt *st = NULL;
    int64_t n = -1;
    if (sdb_prepare(db, sql, &st) == SDB_OK && sdb_step(st) == SDB_ROW)
        n = sdb_column_int64(st, 0);
    sdb_finalize(st);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_pipeline URI\n");
        return 2;
    }
    sdb *db = NULL;
    CHECK_INT_EQ(sdb_open(argv[1], SDB_OPEN_READWRITE, &db), SDB_OK);
    CHECK_INT_EQ(sdb_exec(db, "CREATE TABLE t (id bigint PRIMARY KEY, v text)"), SDB_OK);
    sdb_pipeline(db, 1);

    /* Queued: DONE at once; a RETURNING statement answers in place. */
    CHECK_INT_EQ(sdb_exec(db, "BEGIN IMMEDIATE"), SDB_OK);
    CHECK_INT_EQ(sdb_get_autocommit(db), 0);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a')", 1), SDB_DONE);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a')", 2), SDB_DONE);
    sdb_stmt *st = NULL;
    CHECK_INT_EQ(sdb_prepare(db, "INSERT INTO t (id, v) VALUES (?, 'r') RETURNING id * 10", &st),
                 SDB_OK);
    sdb_bind_int64(st, 1, 3);
    CHECK_INT_EQ(sdb_step(st), SDB_ROW);
    CHECK_INT_EQ(sdb_column_int64(st, 0), 30);
    CHECK_INT_EQ(sdb_step(st), SDB_DONE);
    sdb_finalize(st);
    CHECK_INT_EQ(step_sql(db, "UPDATE t SET v = 'u' WHERE id = ?", 1), SDB_DONE);
    CHECK_INT_EQ(sdb_exec(db, "COMMIT"), SDB_OK);
    CHECK_INT_EQ(sdb_get_autocommit(db), 1);
    CHECK_INT_EQ(count(db, "id <= 3"), 3);
    CHECK_INT_EQ(count(db, "v = 'u'"), 1);

    /* An error in a queued statement: its step still says DONE, COMMIT
     * reports it, and none of the transaction's rows remain. The statement
     * after the error is new: its Parse is skipped with it. */
    CHECK_INT_EQ(sdb_exec(db, "BEGIN"), SDB_OK);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a')", 10), SDB_DONE);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a')", 1), SDB_DONE);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'new')", 11), SDB_DONE);
    CHECK_INT_EQ(sdb_exec(db, "COMMIT"), SDB_CONSTRAINT);
    CHECK(strstr(sdb_errmsg(db), "duplicate key") != NULL);
    /* A second COMMIT (db.c retries a busy one) must not report success. */
    CHECK(sdb_exec(db, "COMMIT") != SDB_OK);
    if (!sdb_get_autocommit(db))
        sdb_exec(db, "ROLLBACK");
    CHECK_INT_EQ(sdb_get_autocommit(db), 1);
    CHECK_INT_EQ(count(db, "id >= 10"), 0);

    /* The connection goes on, the skipped statement prepared anew. */
    CHECK_INT_EQ(sdb_exec(db, "BEGIN"), SDB_OK);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'new')", 11), SDB_DONE);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a')", 12), SDB_DONE);
    CHECK_INT_EQ(sdb_exec(db, "COMMIT"), SDB_OK);
    CHECK_INT_EQ(count(db, "id >= 10"), 2);

    /* An error answered in place, by a statement with rows. */
    CHECK_INT_EQ(sdb_exec(db, "BEGIN"), SDB_OK);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a')", 20), SDB_DONE);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a') RETURNING id", 2),
                 SDB_CONSTRAINT);
    sdb_exec(db, "ROLLBACK");
    CHECK_INT_EQ(count(db, "id >= 20"), 0);

    /* Without pipelining the error is the step's own. */
    sdb_pipeline(db, 0);
    CHECK_INT_EQ(sdb_exec(db, "BEGIN"), SDB_OK);
    CHECK_INT_EQ(step_sql(db, "INSERT INTO t (id, v) VALUES (?, 'a')", 1), SDB_CONSTRAINT);
    sdb_exec(db, "ROLLBACK");

    /* Text a peer wrote need not be UTF-8 (a provider's error message, a
     * path): the server would refuse it on every retry; it is stored with
     * U+FFFD for each invalid byte and NUL instead. */
    sdb_pipeline(db, 1);
    CHECK_INT_EQ(sdb_exec(db, "BEGIN"), SDB_OK);
    st = NULL;
    CHECK_INT_EQ(sdb_prepare(db, "INSERT INTO t (id, v) VALUES (40, ?)", &st), SDB_OK);
    static const char bad[] = "a\xff\xc3(\0b\xe2\x82\xac";
    sdb_bind_text(st, 1, bad, (int)sizeof bad - 1, SDB_STATIC);
    CHECK_INT_EQ(sdb_step(st), SDB_DONE);
    sdb_finalize(st);
    CHECK_INT_EQ(sdb_exec(db, "COMMIT"), SDB_OK);
    st = NULL;
    CHECK_INT_EQ(sdb_prepare(db, "SELECT v FROM t WHERE id = 40", &st), SDB_OK);
    CHECK_INT_EQ(sdb_step(st), SDB_ROW);
    const char *got = (const char *)sdb_column_text(st, 0);
    CHECK(got && strcmp(got, "a\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd"
                             "b\xe2\x82\xac") == 0);
    sdb_finalize(st);
    sdb_close(db);
    return check_report("test_pipeline");
}
