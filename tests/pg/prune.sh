#!/usr/bin/env bash
# Finding and pruning runs (issue 25 item 5) in a PostgreSQL record this test
# starts itself: `runs` filters read it as they read a file; `prune` removes
# runs with every row hanging off them, runs VACUUM, and never touches a run
# still being recorded (a `tofu apply` hanging in a provider call under
# `tftap run`, one under `tftap wrap`'s shims: session advisory locks),
# while a killed run (never ended, nobody recording it) goes. The hanging
# runs are recorded with --record-sensitive, the one way a run is recorded
# into the server live (any other is held back in a spool until its end).
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
pg_e2e_start
# Each hanging apply has a marker of its own: the provider makes it when
# it hangs, and goes on (the apply succeeds) once the test removes it.
mk=$WORK/hanging-killed mh=$WORK/hanging-live mw=$WORK/hanging-wrapped

a=$WORK/a h=$WORK/h k=$WORK/k wr=$WORK/wr
new_dir "$top_srcdir/examples/basic" "$a"
(cd "$a" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
new_dir "$top_srcdir/tests/e2e/configs/hang" "$h"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "init hang"
cp -a "$h" "$k"
cp -a "$h" "$wr"

record() { # ARGS...: tftap run -- tofu ARGS in a; its exit code
    (cd "$a" && "$TFTAP" run --db "$URI" -- tofu "$@" >"$WORK/run.out" 2>"$WORK/run.err")
}
record plan -input=false -no-color
check_eq "run 1: a plan" "$?" 0
record apply -auto-approve -input=false -no-color
check_eq "run 2: an apply" "$?" 0
record apply -no-such-option
check_eq "run 3: an apply tofu refuses" "$?" 1

ids() { "$TFTAP" runs --db "$URI" --json "$@" | jq -r '[.[].id] | join(" ")'; }
check_eq "runs --command apply" "$(ids --command apply)" "2 3"
check_eq "runs --failed" "$(ids --failed)" "3"
check_eq "runs --provider tftest6" "$(ids --provider tftest6)" "1 2"
check_eq "runs --cwd" "$(ids --cwd "$a" --since 1h)" "1 2 3"
"$TFTAP" runs --db "$URI" --command pln >/dev/null 2>"$WORK/nm.err"
check_eq "runs --command pln: exit 2" "$?" 2
check "runs --command pln: names plan" grep -qF "(nearest: plan)" "$WORK/nm.err"

(cd "$k" && TFTEST_HANG_MARKER=$mk exec setsid "$TFTAP" run --db "$URI" --record-sensitive -- tofu apply \
    -auto-approve -input=false -no-color >"$k/out" 2>"$k/err") &
kpid=$!
wait_for 600 test -e "$mk" || not_ok "killed run: the apply never hung"
disown "$kpid" # its death is the test's doing: no word of it from bash
kill -KILL -- -"$kpid"
killed=$(pg_psql "SELECT max(id) FROM runs")
status_of() { # RUN: its status in a dry run of prune --keep 0
    "$TFTAP" prune --db "$URI" --keep 0 --dry-run --json | jq -r --argjson id "$1" '.runs[] | select(.id == $id) | .status'
}
check "killed run: once its recorders are done, nobody holds it" \
    wait_until 600 '[ "$(status_of "$killed")" = would_remove ]'

(cd "$h" && TFTEST_HANG_MARKER=$mh exec setsid "$TFTAP" run --db "$URI" --record-sensitive -- tofu apply \
    -auto-approve -input=false -no-color >"$h/out" 2>"$h/err") &
hpid=$!
wait_for 600 test -e "$mh" || not_ok "live run: the apply never hung"
live=$(pg_psql "SELECT max(id) FROM runs")
mkdir -p "$WORK/shims"
(cd "$wr" && "$TFTAP" wrap --db "$URI" --record-sensitive --out "$WORK/shims" >/dev/null 2>"$WORK/wrap.err") ||
    { not_ok "wrap"; cat "$WORK/wrap.err"; }
(cd "$wr" && TFTEST_HANG_MARKER=$mw TF_CLI_CONFIG_FILE=$WORK/shims/tftap.tfrc exec setsid tofu \
    apply -auto-approve -input=false -no-color >"$wr/out" 2>"$wr/err") &
wpid=$!
wait_for 600 test -e "$mw" || not_ok "wrapped run: the apply never hung"
wrapped=$(pg_psql "SELECT max(id) FROM runs")
check "the wrapped run is another run" test "$wrapped" -gt "$live"
# A run still being recorded gains calls while the test looks (a provider
# process ending, a commit in flight): what it had before must all be there.
calls_of() { # RUN [MAX_ID]: its calls (up to MAX_ID), and their highest id
    pg_psql "SELECT count(*) || ' ' || coalesce(max(id), 0) FROM calls WHERE run_id = $1 AND id <= ${2:-9223372036854775807}"
}
live_calls=$(calls_of "$live") wrapped_calls=$(calls_of "$wrapped")
check "the live run has calls" test "${live_calls%% *}" -gt 0
check "the wrapped run has calls" test "${wrapped_calls%% *}" -gt 0

# Run 2 a step of run 1 (an acceptance test's command under its suite's
# run, runs.parent_id REFERENCES runs(id)): removed with it, before it.
pg_psql "UPDATE runs SET parent_id = 1, test_name = 'TestX', test_step = 1 WHERE id = 2" ||
    not_ok "run 2 made a step run"
"$TFTAP" prune --db "$URI" --keep 0 >"$WORK/prune.out" 2>&1
check_eq "prune --keep 0: exit 0" "$?" 0
check "prune: the live run left" grep -q "^left run $live (.*): still being recorded$" "$WORK/prune.out"
check "prune: the wrapped run left" grep -q "^left run $wrapped (.*): still being recorded$" "$WORK/prune.out"
check "prune: the killed run removed" grep -qE "^removed run $killed .*; never ended\)$" "$WORK/prune.out"
check "prune: the step run removed before its suite's run" \
    test "$(grep -n '^removed run 2 ' "$WORK/prune.out" | cut -d: -f1)" -lt \
    "$(grep -n '^removed run 1 ' "$WORK/prune.out" | cut -d: -f1)"
check "prune: what it removed" grep -qE "^removed 4 runs: .*; left 2 still being recorded$" "$WORK/prune.out"
check "prune: VACUUM ran" grep -q "(VACUUM ran: PostgreSQL reuses the space" "$WORK/prune.out"
check_eq "prune: the runs left" "$(pg_psql "SELECT string_agg(id::text, ' ' ORDER BY id) FROM runs")" \
    "$live $wrapped"
check_eq "prune: the live run's calls untouched" "$(calls_of "$live" "${live_calls#* }")" "$live_calls"
check_eq "prune: the wrapped run's calls untouched" "$(calls_of "$wrapped" "${wrapped_calls#* }")" "$wrapped_calls"
check_eq "prune: no row of a removed run left" "$(pg_psql "SELECT
    (SELECT count(*) FROM processes WHERE run_id NOT IN (SELECT id FROM runs))
    + (SELECT count(*) FROM calls WHERE run_id NOT IN (SELECT id FROM runs))
    + (SELECT count(*) FROM call_addresses WHERE call_id NOT IN (SELECT id FROM calls))
    + (SELECT count(*) FROM messages WHERE call_id NOT IN (SELECT id FROM calls))
    + (SELECT count(*) FROM gaps WHERE run_id NOT IN (SELECT id FROM runs))
    + (SELECT count(*) FROM run_secrets WHERE run_id NOT IN (SELECT id FROM runs))")" 0

rm -f "$mh" "$mw"
wait "$hpid"
check_eq "live run: the apply succeeded" "$?" 0
wait "$wpid"
check_eq "wrapped run: the apply succeeded" "$?" 0
check "wrapped run: its recorders let go" wait_until 600 '[ "$(status_of "$wrapped")" = would_remove ]'
"$TFTAP" prune --db "$URI" --older-than 1w --json >"$WORK/old.json"
check_eq "prune --older-than 1w: nothing that old" "$(jq -c '[.removed, .recording]' "$WORK/old.json")" "[0,0]"
"$TFTAP" prune --db "$URI" --keep 0 --json >"$WORK/all.json"
check_eq "prune --keep 0 --json: both removed" \
    "$(jq -c '[.removed, .recording, .reclaim]' "$WORK/all.json")" '[2,0,"postgresql_vacuum"]'
check_eq "the record empty" "$(pg_psql "SELECT count(*) FROM runs")" 0
check_eq "no schema left that no process names" "$(pg_psql "SELECT count(*) FROM schemas")" 0
check_eq "no advisory lock left" "$(pg_psql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1952871538")" 0

finish
