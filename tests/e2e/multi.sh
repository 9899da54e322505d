#!/usr/bin/env bash
# Several provider instances at once: five aliases of two providers applying
# 28 resources in parallel, through `tftap run` and directly; then two
# wrapped applies at the same time into one database.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
db=$WORK/tftap.db log=$WORK/rpc.log
w=$WORK/wrapped d=$WORK/direct
new_dir "$top_srcdir/tests/e2e/configs/multi" "$w"
new_dir "$top_srcdir/tests/e2e/configs/multi" "$d"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init (wrapped dir)"
(cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "init (direct dir)"

for cmd in apply destroy; do
    : >"$log"
    (cd "$w" && TFTEST_RPC_LOG=$log "$TFTAP" run --db "$db" -- tofu $cmd -auto-approve \
        -input=false -no-color -parallelism=20 >"$WORK/out.w" 2>"$WORK/err.w")
    gw=$?
    (cd "$d" && tofu $cmd -auto-approve -input=false -no-color -parallelism=20 \
        >"$WORK/out.d" 2>"$WORK/err.d")
    gd=$?
    check_eq "$cmd: exit code through tftap = direct" "$gw" "$gd"
    check_eq "$cmd: exit code" "$gw" 0
    [ "$gw" = 0 ] || cat "$WORK/err.w"
    run=$(last_run "$db")
    check_eq "$cmd: one process recorded per provider process started" \
        "$(sqlite3 "$db" "SELECT count(*) FROM processes WHERE run_id = $run")" \
        "$(awk -F '\t' '$NF == "tftap" { print $2 }' "$log" | sort -u | wc -l)"
    check_eq "$cmd: the five configured instances each recorded their configuration" \
        "$(sqlite3 "$db" "SELECT group_concat(l, ' ') FROM (SELECT DISTINCT
            json_extract(request_json, '\$.config.label') AS l FROM calls
            WHERE run_id = $run AND rpc IN ('Configure', 'ConfigureProvider') ORDER BY l)")" \
        "a b default5 default6 x"
    compare_calls "$cmd" "$db" "$run" "$log"
    normalized_show "$w" >"$WORK/state.w"
    normalized_show "$d" >"$WORK/state.d"
    check "$cmd: show -json of the states equal" cmp -s "$WORK/state.w" "$WORK/state.d"
done
check_eq "apply: 28 resources applied" "$(sqlite3 "$db" "SELECT count(*) FROM calls
    WHERE run_id = $((run - 1)) AND rpc = 'ApplyResourceChange' AND status_code = 0")" 28
check_eq "the provider token is not stored" \
    "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE request_json LIKE '%secret-x%'")" 0

# Two runs at once, one database.
w2=$WORK/second
new_dir "$top_srcdir/tests/e2e/configs/multi" "$w2"
(cd "$w2" && tofu init -input=false -no-color >/dev/null) || not_ok "init (second dir)"
before=$(last_run "$db")
(cd "$w" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/out.1" 2>&1) &
p1=$!
(cd "$w2" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/out.2" 2>&1) &
p2=$!
wait $p1
s1=$?
wait $p2
s2=$?
check_eq "concurrent: both applies succeed" "$s1 $s2" "0 0"
check_eq "concurrent: two runs recorded, both ended with 0" "$(sqlite3 "$db" \
    "SELECT count(*) FROM runs WHERE id > $before AND exit_code = 0")" 2
check_eq "concurrent: each run applied its 28 resources" "$(sqlite3 "$db" \
    "SELECT group_concat(n, ' ') FROM (SELECT count(*) AS n FROM calls WHERE run_id > $before
       AND rpc = 'ApplyResourceChange' AND status_code = 0 GROUP BY run_id)")" "28 28"
check_eq "concurrent: no gaps in the record" "$(sqlite3 "$db" \
    "SELECT coalesce(sum(dropped), 0) FROM processes WHERE run_id > $before")" 0
check_eq "nothing of tftap's left in TMPDIR" "$(find "$TMPDIR" -mindepth 1 -name 'tftap-*' | head -3)" ""
finish
