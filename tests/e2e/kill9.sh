#!/usr/bin/env bash
# A tftap shim SIGKILLed in the middle of an apply (its provider hangs in
# ApplyResourceChange). The shim's recorder runs in a process of its own
# (docs/proxy.md), which outlives the shim: the database must stay intact
# (PRAGMA integrity_check), everything committed before the kill must still
# be there unchanged, and tofu must see a dead plugin as it would without
# tftap, with nothing left running.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
w=$WORK/w db=$WORK/tftap.db log=$WORK/rpc.log marker=$WORK/hanging
new_dir "$top_srcdir/tests/e2e/configs/hang" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

: >"$log"
(cd "$w" && TFTEST_RPC_LOG=$log TFTEST_HANG_MARKER=$marker exec "$TFTAP" run --db "$db" -- \
    tofu apply -auto-approve -input=false -no-color >"$WORK/out" 2>"$WORK/err") &
pid=$!
# Every tftap process of the run: shims and the recorder processes they forked.
tftaps() { pgrep -f "tftap shim $TMPDIR/" | tr '\n' ' ' | sed 's/ $//'; }
committed() { # the complete call rows, as they are
    sqlite3 -separator '|' "$db" "SELECT id, run_id, process_id, call_seq, method, started_us,
        ended_us, status_code, request_bytes, response_bytes, request_json, response_json
        FROM calls WHERE ended_us IS NOT NULL ORDER BY id"
}
hang_recorded() {
    [ "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE rpc = 'ApplyResourceChange'
        AND type_name = 'tftest6_thing'" 2>/dev/null)" = 1 ]
}

if wait_for 300 test -e "$marker" && wait_for 100 hang_recorded; then
    ok "the apply reached the hanging call, and its row is committed"
    # The provider logs its parent; the hanging call's provider is the
    # tftest6 one, and its parent is the shim to kill.
    provider=$(awk -F '\t' '$1 == "begin" && $3 ~ /ApplyResourceChange$/ && $5 == "tftap" { p = $2 } END { print p }' "$log")
    shim=$(ps -o ppid= -p "$provider" | tr -d ' ')
    check "the hanging provider runs under a tftap shim" \
        sh -c "ps -o args= -p '$shim' | grep -q 'tftap shim'"
    before=$(committed)
    check "calls were committed before the kill" test -n "$before"
    kill -KILL "$shim"
    n=300
    while kill -0 "$pid" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.2; n=$((n - 1)); done
    if kill -0 "$pid" 2>/dev/null; then
        not_ok "tftap run still running 60 s after the shim was killed"
        kill -KILL "$pid"
    fi
    wait "$pid"
    code=$?
    check_eq "tofu failed the apply (a plugin died), tftap run exits with its code" "$code" 1
    check "tofu says the plugin died" grep -q -i "plugin" "$WORK/err"
    all_gone() { [ -z "$(tftaps)" ] && [ -z "$(alive "$provider")" ]; }
    check "no shim, recorder or provider outlives the run" wait_for 150 all_gone
    check_eq "the database is intact" "$(sqlite3 "$db" "PRAGMA integrity_check")" ok
    after=$(committed)
    missing=$(comm -23 <(printf '%s\n' "$before" | sort) <(printf '%s\n' "$after" | sort))
    check_eq "every call committed before the kill is still there, unchanged" "$missing" ""
    run=$(last_run "$db")
    check_eq "the hanging call is in the record" "$(sqlite3 "$db" "SELECT count(*) FROM calls
        WHERE run_id = $run AND rpc = 'ApplyResourceChange' AND type_name = 'tftest6_thing'")" 1
    check_eq "the run row has the exit code" \
        "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" "$code"
    # The killed shim's recorder outlived it and closed its process row.
    check_eq "the killed shim's process row was ended by its recorder" \
        "$(sqlite3 "$db" "SELECT count(*) FROM processes WHERE run_id = $run AND pid = $provider
            AND ended_us IS NOT NULL")" 1
    # The recorder outlived its shim: its gap row says the shim died and
    # counts the calls cut off (the hanging apply at least).
    gap=$(sqlite3 "$db" "SELECT coalesce(sum(g.lost), -1) || ' ' || coalesce(group_concat(g.reason), '')
        FROM gaps g JOIN processes p ON p.id = g.process_id WHERE p.run_id = $run AND p.pid = $provider")
    echo "gap of the killed shim's process: $gap"
    check "the recorder wrote a gap row: the shim died" sh -c "echo '$gap' | grep -q 'shim died'"
    check "the gap counts the calls cut off" test "${gap%% *}" -ge 1
    check "tftap run named the gap" grep -q "has gaps: .*(shim died" "$WORK/err"
    check_eq "the database opens and reads after the kill" \
        "$("$TFTAP" calls --db "$db" "$run" >/dev/null && echo ok)" ok
else
    not_ok "the apply never reached the hanging call"
    cat "$WORK/err"
    kill -KILL "$pid" 2>/dev/null
fi
finish
