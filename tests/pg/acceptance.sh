#!/usr/bin/env bash
# Acceptance tests recorded into a PostgreSQL server the test starts: the
# suite of tests/peers/tftest (tests/e2e/acceptance.sh does the same into a
# SQLite file) through `tftap run --db URI -- go test`: every step run named
# under its suite as in the file, runs/show/export --test and the suite diff
# read the server alike.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
ACC=$PEERS/bin/tftest6-acc-v1.test
if ! [ -x "$ACC" ]; then
    not_ok "$ACC built (scripts/build-peers)"
    finish
fi
pg_e2e_start
export TMPDIR=$WORK/tmp TF_ACC=1 TF_ACC_TERRAFORM_PATH=$TOFU
unset TF_LOG_PATH_MASK TF_ACC_LOG_PATH TF_ACC_LOG TF_ACC_TERRAFORM_VERSION
db=$WORK/rec.db
for target in "$URI" "$db"; do
    "$TFTAP" run --db "$target" -- "$ACC" -test.count=1 >"$WORK/out" 2>&1
    check_eq "the suite passes recorded into ${target%%\?*}" "$?" 0
done
q() { "$TFTAP" runs --db "$1" --json | jq -r '[.[] | select(.parent_id != null)
    | "\(.test) \(.step) \(.args[0])"] | sort | join(";")'; }
check "the server has step runs" test -n "$(q "$URI")"
check_eq "the same step runs, named alike, in the server and the file" "$(q "$URI")" "$(q "$db")"
n() { "$TFTAP" runs --db "$1" --test 'TestAccPet_*' | tail -n +2 | wc -l; }
check_eq "runs --test reads the server as the file" "$(n "$URI")" "$(n "$db")"
e() { "$TFTAP" export --db "$1" 1 --test TestAccServer_lifecycle |
    jq -r 'select(.kind == "run") | "\(.parent_id) \(.test_name) \(.test_step)"' | sort | uniq -c; }
check_eq "export --test: the same lines" "$(e "$URI")" "$(e "$db")"
check "export --test: the server's lines name the test" grep -q ' 1 TestAccServer_lifecycle 3$' <<<"$(e "$URI")"
# Each step run kept its working directory in the server as in the file
# (bytea; the suites' random names make sizes differ), and a step replays
# from the server.
check_eq "the server kept the step runs' files as the file did" \
    "$(pg_psql "SELECT count(*) || ' ' || count(content) FROM run_files")" \
    "$(sqlite3 "$db" "SELECT count(*) || ' ' || count(content) FROM run_files")"
apply=$("$TFTAP" runs --db "$URI" --json | jq -r '[.[] | select(.test == "TestAccServer_lifecycle"
    and .step == 1 and .args[0] == "apply")][0].id')
: >"$WORK/empty.tfrc"
TF_CLI_CONFIG_FILE=$WORK/empty.tfrc "$TFTAP" replay --db "$WORK/replay.db" "$URI:$apply" \
    >"$WORK/replay.out" 2>"$WORK/replay.err"
check_eq "a step replayed from the server: exit 0, as recorded" "$?" 0
check "  the CLI's output" grep -q '^Apply complete! Resources: 1 added' "$WORK/replay.out"
pg_psql "CREATE DATABASE pushed" >/dev/null
"$TFTAP" push all --db "$db" --to "$(pg_uri pushed)" >/dev/null 2>&1
check_eq "the file's suite pushed into a server: its step runs under it, named alike" \
    "$(q "$(pg_uri pushed)")" "$(q "$db")"
check_eq "  each under the suite's id there" "$("$TFTAP" runs --db "$(pg_uri pushed)" --json |
    jq '[.[] | select(.parent_id != null) | .parent_id] | unique | length')" 1
"$TFTAP" run --db "$URI" -- "$ACC" -test.count=1 >/dev/null 2>&1
suite2=$("$TFTAP" runs --db "$URI" --json | jq '[.[] | select(.parent_id == null)] | last | .id')
"$TFTAP" diff --db "$URI" 1 "$suite2" --ignore .id --ignore .hex --ignore .dec --ignore .b64_std \
    >"$WORK/diff.txt"
check_eq "two suites of one build in the server: diff exit 0" "$?" 0
check "  every step run paired" grep -q 'step runs compared, 0 differ; 0 only in one suite' "$WORK/diff.txt"
finish
