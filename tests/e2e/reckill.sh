#!/usr/bin/env bash
# A recorder process SIGKILLed in the middle of an apply (its provider hangs
# in ApplyResourceChange until the test lets it go): tofu's run goes on and
# succeeds as without tftap; the shim, which outlived its recorder, writes a
# gap row whose count is what the provider answered and the record lacks,
# with the true reason; `tftap run` ends with a line naming it.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
w=$WORK/w db=$WORK/tftap.db log=$WORK/rpc.log marker=$WORK/hanging
new_dir "$top_srcdir/tests/e2e/configs/signals" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

: >"$log"
(cd "$w" && TFTEST_RPC_LOG=$log TFTEST_HANG_MARKER=$marker exec "$TFTAP" run --db "$db" -- \
    tofu apply -auto-approve -input=false -no-color >"$WORK/out" 2>"$WORK/err") &
pid=$!
hang_recorded() {
    [ "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE rpc = 'ApplyResourceChange'
        AND type_name = 'tftest6_thing'" 2>/dev/null)" = 1 ]
}
if wait_for 600 test -e "$marker" && wait_for 300 hang_recorded; then
    ok "the apply reached the hanging call, and its row is committed"
    # The hanging call is tftest6's (protocol 6): tftest5's pets may still apply.
    provider=$(awk -F '\t' '$1 == "begin" && $3 == "/tfplugin6.Provider/ApplyResourceChange" && $5 == "tftap" { p = $2 } END { print p }' "$log")
    shim=$(ps -o ppid= -p "$provider" | tr -d ' ')
    # The shim's recorder: a process of its own (setsid), with the shim's
    # command line and the name tftap-rec.
    rec=$(pgrep -x tftap-rec | while read -r p; do
        tr '\0' ' ' </proc/"$p"/cmdline | grep -q "$(tr '\0' ' ' </proc/"$shim"/cmdline)" && echo "$p"
    done | head -1)
    check "the hanging provider's recorder is found" test -n "$rec"
    kill -KILL "$rec"
    wait_for 150 sh -c "! kill -0 $rec 2>/dev/null"
    rm -f "$marker" # the apply goes on
    wait "$pid"
    code=$?
    check_eq "tofu's apply succeeded, tftap run exits 0" "$code" 0
    run=$(last_run "$db")
    pid_row=$(sqlite3 "$db" "SELECT id FROM processes WHERE run_id = $run AND pid = $provider")
    gap=$(sqlite3 "$db" "SELECT coalesce(sum(lost), 0) FROM gaps WHERE process_id = '$pid_row'")
    reason=$(sqlite3 "$db" "SELECT group_concat(reason) FROM gaps WHERE process_id = '$pid_row'")
    # What the provider answered (its own log) and the record lacks.
    answered=$(awk -F '\t' -v p="$provider" '$1 == "end" && $2 == p && $6 == "tftap" { print $3 }' "$log" | sort)
    recorded=$(sqlite3 "$db" "SELECT method FROM calls WHERE process_id = '$pid_row'
        AND ended_us IS NOT NULL AND method LIKE '/tfplugin%'" | sort)
    lacks=$(comm -23 <(printf '%s\n' "$answered") <(printf '%s\n' "$recorded") | grep -c .)
    echo "recorder of pid $provider killed: provider answered $(printf '%s\n' "$answered" | grep -c .), record lacks $lacks, gap rows say $gap ($reason)"
    check "the record lacks what the provider answered after the kill" test "$lacks" -ge 1
    # The gap counts every call the relay saw and the record lacks: the
    # provider's answered ones, and go-plugin's own (Shutdown, streams),
    # which the provider's log does not show.
    check "a gap row counts at least what the provider answered and the record lacks" \
        test "$gap" -ge "$lacks"
    # ... and no more than the calls the record holds unfinished plus those
    # the provider saw begin that the record lacks.
    unfinished=$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE process_id = '$pid_row' AND ended_us IS NULL")
    begun=$(awk -F '\t' -v p="$provider" '$1 == "begin" && $2 == p && $5 == "tftap" { print $3 }' "$log" | sort)
    inrec=$(sqlite3 "$db" "SELECT method FROM calls WHERE process_id = '$pid_row'" | sort)
    unseen=$(comm -23 <(printf '%s\n' "$begun") <(printf '%s\n' "$inrec") | grep -c .)
    check "the gap counts no more than the record lacks ($unfinished unfinished, $unseen never written)" \
        test "$gap" -le $((unfinished + unseen))
    check "the gap's reason is the recorder's death" sh -c "echo '$reason' | grep -q 'recorder died'"
    check "tftap run named the gap" grep -q "has gaps: $gap lost from registry.opentofu.org/tftap/tftest6 (recorder died" "$WORK/err"
    check "tofu's output is whole" grep -q "Apply complete! Resources: 31 added" "$WORK/out"
    # The calls whose answers the record lost read "not recorded", never
    # failed: tofu created what they applied.
    "$TFTAP" --db "$db" show last >"$WORK/show.txt"
    check "show: the run succeeded, the gap and the unrecorded calls said first" \
        grep -qE "^Run $run succeeded: the command exited 0; $gap records? lost \(gaps: recorder died.*; [1-9][0-9]* calls? not recorded\)" \
        "$WORK/show.txt"
    check "show: no failure told" bash -c "! grep -qiE 'failed|no answer' '$WORK/show.txt'"
    check "show: the unanswered apply says its answer was not recorded" \
        grep -q '^  # its answer was not recorded (a gap in the record)' "$WORK/show.txt"
    "$TFTAP" --db "$db" calls last --failed >"$WORK/failed.txt" 2>/dev/null
    check_eq "calls --failed: nothing" "$(grep -c '^[0-9]' "$WORK/failed.txt")" 0
    check "calls: the hanging apply is 'not recorded'" \
        grep -qE '^[0-9]+ +[0-9]+ +ApplyResourceChange +tftest6_thing +not recorded ' \
        <("$TFTAP" --db "$db" calls last)
    check_eq "the database is intact" "$(sqlite3 "$db" "PRAGMA integrity_check")" ok
else
    not_ok "the apply never reached the hanging call"
    cat "$WORK/err"
    kill -KILL "$pid" 2>/dev/null
fi
finish
