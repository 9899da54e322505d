#!/usr/bin/env bash
# `tftap run --reattach`: tftap starts one process per provider behind its
# proxy and the CLI attaches to them (TF_REATTACH_PROVIDERS). Same exit
# codes and states as direct runs; every call recorded; the providers end
# with the run.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
db=$WORK/tftap.db log=$WORK/rpc.log
w=$WORK/wrapped d=$WORK/direct
new_dir "$top_srcdir/examples/basic" "$w"
new_dir "$top_srcdir/examples/basic" "$d"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init (wrapped dir)"
(cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "init (direct dir)"

for cmd in "apply -auto-approve" "plan -detailed-exitcode" "destroy -auto-approve"; do
    name=${cmd%% *}
    : >"$log"
    (cd "$w" && TFTEST_RPC_LOG=$log "$TFTAP" run --reattach --db "$db" -- tofu $cmd \
        -input=false -no-color >"$WORK/out.w" 2>"$WORK/err.w")
    gw=$?
    (cd "$d" && tofu $cmd -input=false -no-color >"$WORK/out.d" 2>"$WORK/err.d")
    gd=$?
    check_eq "$name: exit code through tftap = direct" "$gw" "$gd"
    check_eq "$name: exit code" "$gw" 0
    [ "$gw" = 0 ] || cat "$WORK/err.w"
    run=$(last_run "$db")
    check_eq "$name: run row has the exit code" \
        "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" "$gw"
    check_eq "$name: one process per provider for the whole run" \
        "$(sqlite3 "$db" "SELECT count(*) || ' ' || count(DISTINCT provider) FROM processes WHERE run_id = $run")" "2 2"
    check_eq "$name: the providers tftap started did all the work" \
        "$(awk -F '\t' '$NF == "tftap" { print $2 }' "$log" | sort -u | wc -l)" 2
    # Address matching after apply and destroy runs `show -json`, which starts its own.
    [ "$name" = apply ] || [ "$name" = destroy ] ||
        check_eq "$name: the CLI started no provider itself" "$(log_unwrapped "$log")" ""
    compare_calls "$name" "$db" "$run" "$log"
    check_eq "$name: the providers ended with the run" \
        "$(alive $(awk -F '\t' '{ print $2 }' "$log" | sort -u))" ""
    check_eq "$name: every provider process recorded as ended" "$(sqlite3 "$db" \
        "SELECT count(*) FROM processes WHERE run_id = $run AND ended_us IS NULL")" 0
    normalized_show "$w" >"$WORK/state.w"
    normalized_show "$d" >"$WORK/state.d"
    check "$name: show -json of the states equal" cmp -s "$WORK/state.w" "$WORK/state.d"
    check_eq "$name: nothing of tftap's left in TMPDIR" \
        "$(find "$TMPDIR" -mindepth 1 -name 'tftap-*' | head -3)" ""
done
check_eq "apply: every resource applied" "$(sqlite3 "$db" "SELECT count(*) FROM calls
    WHERE run_id = 1 AND rpc = 'ApplyResourceChange' AND status_code = 0")" 4
# The providers are stopped with go-plugin's Shutdown call: no socket stays.
check_eq "no provider socket left in TMPDIR" "$(find "$TMPDIR" -mindepth 1 -type s | head -3)" ""
finish
