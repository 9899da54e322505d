#!/usr/bin/env bash
# tofu stopped in the middle of an apply that hangs in a provider:
#  - killed (SIGKILL): `tftap run` exits 137 and records it; no shim or
#    provider process outlives it, nothing of tftap's is left in TMPDIR;
#  - interrupted (SIGINT sent to tftap): forwarded once, tofu stops the
#    provider gracefully and fails the apply exactly as it does when
#    interrupted directly; the record shows the Stop call.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
db=$WORK/tftap.db log=$WORK/rpc.log marker=$WORK/hanging
export TFTEST_HANG_MARKER=$marker

# start_apply DIR WRAPPED: apply in the background; sets $pid (tftap or tofu).
start_apply() {
    rm -f "$marker"
    : >"$log"
    if [ "$2" = 1 ]; then
        (cd "$1" && TFTEST_RPC_LOG=$log exec "$TFTAP" run --db "$db" -- tofu apply -auto-approve \
            -input=false -no-color >"$WORK/out" 2>"$WORK/err") &
    else
        (cd "$1" && TFTEST_RPC_LOG=$log exec tofu apply -auto-approve -input=false -no-color \
            >"$WORK/out" 2>"$WORK/err") &
    fi
    pid=$!
}
shims() { pgrep -f "tftap shim $TMPDIR/" | tr '\n' ' ' | sed 's/ $//'; }
nothing_alive() { [ -z "$(alive $(awk -F '\t' '{ print $2 }' "$log" | sort -u))" ] && [ -z "$(shims)" ]; }
# wait_exit PID: its exit code, or 255 if it is still running after ~60 s.
wait_exit() {
    local n=300
    while kill -0 "$1" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.2; n=$((n - 1)); done
    if kill -0 "$1" 2>/dev/null; then
        kill -KILL "$1"
        wait "$1"
        return 255
    fi
    wait "$1"
}

# ---- SIGKILL to tofu under tftap -------------------------------------------
w=$WORK/killed
new_dir "$top_srcdir/tests/e2e/configs/hang" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
start_apply "$w" 1
if wait_for 300 test -e "$marker"; then
    ok "killed: the apply reached the hanging provider call"
    tofu_pid=$(pgrep -P "$pid" -x tofu)
    check "killed: tofu runs as tftap's child" test -n "$tofu_pid"
    check "killed: a shim is running" test -n "$(shims)"
    kill -KILL $tofu_pid
    wait_exit "$pid"
    check_eq "killed: tftap run exits 128+SIGKILL" "$?" 137
    run=$(last_run "$db")
    check_eq "killed: run row has the exit code" \
        "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" 137
    check "killed: no shim or provider process outlives tofu" wait_for 150 nothing_alive
    nothing_alive || ps -o pid,ppid,stat,args -p "$(shims) $(awk -F '\t' '{ print $2 }' "$log" | sort -u | tr '\n' ' ')"
    check_eq "killed: the hanging call is recorded" "$(sqlite3 "$db" "SELECT count(*) FROM calls
        WHERE run_id = $run AND rpc = 'ApplyResourceChange' AND type_name = 'tftest6_thing'")" 1
    check_eq "killed: every provider process recorded as ended" "$(sqlite3 "$db" \
        "SELECT count(*) FROM processes WHERE run_id = $run AND ended_us IS NULL")" 0
    check_eq "killed: nothing of tftap's left in TMPDIR" \
        "$(find "$TMPDIR" -mindepth 1 -name 'tftap-*' | head -3)" ""
    # The shim stops its provider with go-plugin's Shutdown call (a Go
    # provider then removes its socket) and, should a signal be needed,
    # removes the socket the provider announced once it is gone.
    check_eq "killed: no provider socket left in TMPDIR" \
        "$(find "$TMPDIR" -mindepth 1 -type s | head -3)" ""
else
    not_ok "killed: the apply never reached the hanging call"
    cat "$WORK/err"
    kill -KILL "$pid" 2>/dev/null
fi

# ---- SIGINT to tftap, and to tofu directly --------------------------------
interrupted() { # DIR WRAPPED -> prints the exit code; stderr in $WORK/err
    start_apply "$1" "$2"
    if ! wait_for 300 test -e "$marker"; then
        kill -KILL "$pid" 2>/dev/null
        echo "never-hung"
        return
    fi
    kill -INT "$pid"
    wait_exit "$pid"
    echo $?
}
wi=$WORK/int-wrapped di=$WORK/int-direct
new_dir "$top_srcdir/tests/e2e/configs/hang" "$wi"
new_dir "$top_srcdir/tests/e2e/configs/hang" "$di"
(cd "$wi" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
(cd "$di" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
gw=$(interrupted "$wi" 1)
cp "$WORK/err" "$WORK/err.w"
cp "$log" "$WORK/rpc.w"
run=$(last_run "$db")
gd=$(interrupted "$di" 0)
cp "$WORK/err" "$WORK/err.d"
cp "$log" "$WORK/rpc.d"
check_eq "interrupted: exit code through tftap = direct" "$gw" "$gd"
check "interrupted: tofu failed the apply" test "$gw" = 1
check "interrupted: stderr through tftap = direct" cmp -s "$WORK/err.w" "$WORK/err.d"
cmp -s "$WORK/err.w" "$WORK/err.d" || diff "$WORK/err.w" "$WORK/err.d" | head
check_eq "interrupted: run row has the exit code" \
    "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" "$gw"
# The interrupt reaches the provider as tofu's Stop call: the provider's own
# log says it got it (through tftap, and directly from tofu).
stop_from() { grep -qE "^begin[[:blank:]][0-9]+[[:blank:]]/tfplugin[56]\.Provider/Stop(Provider)?[[:blank:]][0-9]+[[:blank:]]$2\$" "$1"; }
check "interrupted: the provider got tofu's Stop through tftap" stop_from "$WORK/rpc.w" tftap
check "interrupted: the provider got tofu's Stop directly" stop_from "$WORK/rpc.d" tofu
check "interrupted: the Stop call is recorded" test "$(sqlite3 "$db" "SELECT count(*) FROM calls
    WHERE run_id = $run AND rpc IN ('Stop', 'StopProvider') AND status_code = 0")" -ge 1
check_eq "interrupted: the state holds what was applied, like direct" \
    "$(cd "$wi" && tofu state list | sort | tr '\n' ' ')" "$(cd "$di" && tofu state list | sort | tr '\n' ' ')"
check_eq "interrupted: nothing of tftap's left in TMPDIR" \
    "$(find "$TMPDIR" -mindepth 1 -name 'tftap-*' | head -3)" ""
finish
