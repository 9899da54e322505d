#!/usr/bin/env bash
# The PostgreSQL driver's pipeline mode (sdb_pipeline, the recorder's write
# transactions) against a server this test starts itself: tests/pg/test_pipeline.
. "$(dirname "$0")/lib.sh"
pg_need
trap pg_cleanup EXIT
pg_start >/dev/null || {
    echo "pipeline.sh: the PostgreSQL server did not start"
    exit 1
}
# TFTAP_TEST_WRAPPER: a command to run the test under (scripts/test's valgrind stage).
${TFTAP_TEST_WRAPPER:-} "${top_builddir:-$(dirname "$0")/../../build}/tests/pg/test_pipeline" "$(pg_uri)"
