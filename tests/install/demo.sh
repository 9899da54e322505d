#!/usr/bin/env bash
# The README's quick start, first command: scripts/demo in a build
# directory of its own, as on a fresh machine (a single `make tftap`, which
# BUILT_SOURCES alone does not serve), with the peers scripts/test built.
# What it recorded is held against tofu's own state of the same apply.
# Run by scripts/test: tests/install/demo.sh
demo_build=$(mktemp -d "${TMPDIR:-/tmp}/tftap-demo-build.XXXXXX")
top_builddir=$demo_build
. "$(dirname "$0")/../e2e/lib.sh"
trap 'st=$?; rm -rf "$demo_build"; cleanup_work; exit $st' EXIT

out=$WORK/demo.out
(cd "$top_srcdir" && TFTAP_BUILD_DIR=$demo_build scripts/demo >"$out" 2>&1)
st=$?
check_eq "scripts/demo: exit status" "$st" 0
[[ $st -eq 0 ]] || { tail -30 "$out"; finish; }
check "scripts/demo built tftap in its own directory" test -x "$demo_build/tftap"

dir=$(sed -n 's/^The example and its database (.tftap\/tftap.db) are in \(.*\)\. Try:$/\1/p' "$out")
check "scripts/demo says where its example is" test -d "$dir"
db=$dir/.tftap/tftap.db
check_eq "two runs recorded (init, apply), both exit 0" \
    "$(sqlite3 "$db" "SELECT count(*) || ' ' || sum(exit_code = 0) FROM runs WHERE ended_us IS NOT NULL")" "2 2"
# Every resource tofu's state holds was applied through tftap, by its name.
managed=$(cd "$dir" && tofu state list | grep -v '^data\.' | sort)
applied=$(sqlite3 "$db" "SELECT address FROM v_calls WHERE run_id = (SELECT max(id) FROM runs)
    AND method LIKE '%/ApplyResourceChange' AND status_code = 0 ORDER BY address")
check "tofu's state has managed resources" test -n "$managed"
check_eq "each resource in tofu's state: an applied call by its address" "$applied" "$managed"
check "scripts/demo shows the recorded plan" grep -q "to create" "$out"
finish
