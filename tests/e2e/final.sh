#!/usr/bin/env bash
# Final on return (issue 8): with every core kept busy by this test, each of
# 20 `tftap run -- tofu plan -out` is completely recorded the moment it
# returns: `tftap show last` right after it names every planned change, and
# the run holds every call the providers saw.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
db=$WORK/tftap.db
w=$WORK/final
ROUNDS=${FINAL_ROUNDS:-20}
new_dir "$top_srcdir/tests/e2e/configs/final" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# One busy loop per core, ended with the test however it ends.
busy=
for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    busy="$busy $!"
done
stop_busy() {
    [ -n "$busy" ] && kill $busy 2>/dev/null
    wait $busy 2>/dev/null
    busy=
}
trap 'stop_busy; cleanup_work' EXIT

complete=0 calls_ok=0 ended=0 quiet=0
for i in $(seq "$ROUNDS"); do
    rm -f "$WORK/rpc.log"
    (cd "$w" && TFTEST_RPC_LOG=$WORK/rpc.log "$TFTAP" run --db "$db" -- tofu plan -input=false \
        -no-color -out=plan >"$WORK/plan.out" 2>"$WORK/plan.err")
    st=$?
    # Read at once: no waiting for anything here, that is the point.
    n=$("$TFTAP" show --db "$db" --json last | jq '[.changes[] | select(.address != null)] | length')
    run=$(last_run "$db")
    if [ "$st" = 0 ] && [ "$n" = 3 ]; then
        complete=$((complete + 1))
    else
        echo "round $i: exit $st, $n of 3 changes shown"
        cat "$WORK/plan.err"
    fi
    if cmp -s <(db_begins "$db" "$run" | cut -d' ' -f2-) <(log_begins "$WORK/rpc.log" | cut -d' ' -f2-); then
        calls_ok=$((calls_ok + 1))
    else
        echo "round $i: recorded calls differ from the providers' log (< db, > provider)"
        diff <(db_begins "$db" "$run" | cut -d' ' -f2-) <(log_begins "$WORK/rpc.log" | cut -d' ' -f2-) | head -5
    fi
    [ "$(sqlite3 "$db" "SELECT ended_us IS NOT NULL AND exit_code = 0 FROM runs WHERE id = $run")" = 1 ] &&
        ended=$((ended + 1))
    # Waiting is normally quiet; a progress line is allowed, giving up is not.
    grep -q "gave up" "$WORK/plan.err" || quiet=$((quiet + 1))
done
stop_busy
check_eq "busy machine: every plan shown complete right after tftap run returned" "$complete" "$ROUNDS"
check_eq "busy machine: every run holds every call its providers saw" "$calls_ok" "$ROUNDS"
check_eq "busy machine: every run ended with its exit code" "$ended" "$ROUNDS"
check_eq "busy machine: no recorder given up on" "$quiet" "$ROUNDS"
check_eq "no lock or shim left in TMPDIR" "$(ls -A "$TMPDIR")" ""

# Giving up is bounded and says what is missing: recorders stopped (SIGSTOP)
# while an apply hangs in its provider, then the apply let go.
h=$WORK/hang
marker=$WORK/hanging
new_dir "$top_srcdir/tests/e2e/configs/hang" "$h"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "init (hang)"
(cd "$h" && TFTEST_HANG_MARKER=$marker TFTAP_RECORDER_WAIT=2 "$TFTAP" run --db "$db" -- tofu apply \
    -auto-approve -input=false -no-color >"$WORK/hang.out" 2>"$WORK/hang.err") &
runner=$!
stopped=
if wait_for 600 test -e "$marker"; then
    # (-d,: tftap run and its sentinel, a fork of it with the same command line)
    tofu_pid=$(pgrep -x tofu -P "$(pgrep -d, -f "$TFTAP run --db $db")")
    # The recorders: tftap shim processes whose parent is not tofu (they
    # are forked twice, away from the shim).
    # Without tofu's pid the shims could not be told apart: stop nothing
    # (a stopped shim would hang the apply).
    for p in $([ -n "$tofu_pid" ] && pgrep -f "$TFTAP shim $WORK/"); do
        [ "$(ps -o ppid= -p "$p" | tr -d ' ')" != "$tofu_pid" ] && kill -STOP "$p" && stopped="$stopped $p"
    done
    rm -f "$marker"
fi
check "give up: recorders found and stopped" test -n "$stopped"
wait "$runner"
check_eq "give up: tftap run returns the apply's exit code" "$?" 0
[ -n "$stopped" ] && kill -CONT $stopped
check_eq "give up: a progress line after a second" \
    "$(grep -c "^tftap: waiting for [0-9]* recorder(s) to finish\.\.\.$" "$WORK/hang.err")" 1
check_eq "give up: one line naming what is missing" \
    "$(grep -c "^tftap: gave up after 2 s waiting for [0-9]* recorder(s) to finish: .*registry.opentofu.org/tftap/tftest[56] (shim pid [0-9]*).*; their part of the record may still be missing" "$WORK/hang.err")" 1
wait_until 300 '[ "$(pgrep -f -c "$TFTAP shim $WORK/" || true)" = 0 ]'
check_eq "give up: the recorders finish once let go" "$(pgrep -f -c "$TFTAP shim $WORK/" || true)" 0
finish
