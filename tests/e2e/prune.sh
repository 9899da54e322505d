#!/usr/bin/env bash
# Finding and pruning runs (issue 25 item 5) on a database file, with real
# tofu runs: `runs --cwd/--command/--provider/--since/--failed` against
# what each run was, a filter that matches nothing exits 2 with the nearest
# recorded value; `prune` removes runs and every row hanging off them
# (none left behind), gives the space back, and never touches a run still
# being recorded: a `tofu apply` hanging in a provider call under
# `tftap run`, and one under `tftap wrap`'s shims. A run that was killed
# (never ended, nobody recording it) is removed like any other.
. "$(dirname "$0")/lib.sh"
need_peers
db=$WORK/t.db
# Each hanging apply has a marker of its own: the provider makes it when
# it hangs, and goes on (the apply succeeds) once the test removes it.
mk=$WORK/hanging-killed mh=$WORK/hanging-live mw=$WORK/hanging-wrapped

a=$WORK/a b=$WORK/b h=$WORK/h k=$WORK/k wr=$WORK/wr
new_dir "$top_srcdir/examples/basic" "$a"
new_dir "$top_srcdir/examples/basic" "$b"
for d in "$a" "$b"; do
    (cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "init $d"
done
new_dir "$top_srcdir/tests/e2e/configs/hang" "$h"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "init hang"
cp -a "$h" "$k"
cp -a "$h" "$wr"

record() { # DIR ARGS...: tftap run -- tofu ARGS in DIR; its exit code
    local dir=$1
    shift
    (cd "$dir" && "$TFTAP" run --db "$db" -- tofu "$@" >"$WORK/run.out" 2>"$WORK/run.err")
}
record "$a" plan -input=false -no-color
check_eq "run 1: a plan in a" "$?" 0
record "$a" -chdir=. apply -auto-approve -input=false -no-color
check_eq "run 2: an apply in a (-chdir before the subcommand)" "$?" 0
record "$b" apply -no-such-option
check_eq "run 3: an apply in b that tofu refuses" "$?" 1

ids() { "$TFTAP" runs --db "$db" --json "$@" | jq -r '[.[].id] | join(" ")'; }
check_eq "runs --command plan" "$(ids --command plan)" "1"
check_eq "runs --command apply" "$(ids --command apply)" "2 3"
check_eq "runs --cwd b" "$(ids --cwd "$b")" "3"
check_eq "runs --cwd a's parent: below it too" "$(ids --cwd "$WORK")" "1 2 3"
check_eq "runs --cwd a/ (relative, a trailing slash)" "$(cd "$WORK" && ids --cwd a/)" "1 2"
check_eq "runs --provider by its type" "$(ids --provider tftest5)" "1 2"
check_eq "runs --provider by namespace/type" "$(ids --provider tftap/tftest6)" "1 2"
check_eq "runs --provider by its address" \
    "$(ids --provider "$(sqlite3 "$db" "SELECT provider FROM processes WHERE provider LIKE '%tftest5' LIMIT 1")")" "1 2"
check_eq "runs --failed: what the verdict says" "$(ids --failed)" "3"
check_eq "runs --failed, the verdict itself" \
    "$("$TFTAP" runs --db "$db" --json --failed | jq -c '[.[].verdict | [.failed, .exit_code]]')" '[[true,1]]'
check_eq "runs --since 1h" "$(ids --since 1h)" "1 2 3"
check_eq "runs: filters combine" "$(ids --command apply --failed)" "3"
check_eq "runs --limit with a filter: the newest that match" "$(ids --command apply --limit 1)" "3"
"$TFTAP" runs --db "$db" >"$WORK/runs.txt"
check "runs shows the working directory" grep -qE "^1 +ok .*  $a  tofu plan" "$WORK/runs.txt"
check "runs: the header names it" grep -qE "^RUN +VERDICT .* DIRECTORY +COMMAND$" "$WORK/runs.txt"

nomatch() { # NAME NEAREST ARGS...: exit 2, one line, the nearest named
    local name=$1 near=$2
    shift 2
    "$TFTAP" runs --db "$db" "$@" >"$WORK/nm.out" 2>"$WORK/nm.err"
    check_eq "$name: exit 2" "$?" 2
    check_eq "$name: nothing on stdout" "$(wc -c <"$WORK/nm.out")" 0
    check_eq "$name: one line" "$(wc -l <"$WORK/nm.err")" 1
    [ -z "$near" ] || check "$name: names $near" grep -qF "(nearest: $near)" "$WORK/nm.err"
}
nomatch "runs --command aply" apply --command aply
nomatch "runs --provider tftest7" tftest5 --provider tftest7
nomatch "runs --cwd elsewhere" "" --cwd /nonexistent/dir
nomatch "runs --since tomorrow" "" --since "$(date -d tomorrow +%Y-%m-%d)"
nomatch "runs --failed --command plan (each matches, not both)" "" --failed --command plan
"$TFTAP" runs --db "$db" --since yesterday-ish >/dev/null 2>&1
check_eq "runs --since that is no time: usage, exit 2" "$?" 2

# A run killed (tftap run, tofu and the providers, at once): the recorders,
# sessions of their own, write what they had and exit; nobody records it
# any more, and it never ended.
(cd "$k" && TFTEST_HANG_MARKER=$mk exec setsid "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false \
    -no-color >"$k/out" 2>"$k/err") &
kpid=$!
wait_for 600 test -e "$mk" || not_ok "killed run: the apply never hung"
disown "$kpid" # its death is the test's doing: no word of it from bash
kill -KILL -- -"$kpid"
killed=$(last_run "$db")
status_of() { # RUN: its status in a dry run of prune --keep 0
    "$TFTAP" prune --db "$db" --keep 0 --dry-run --json | jq -r --argjson id "$1" '.runs[] | select(.id == $id) | .status'
}
if wait_until 600 '[ "$(status_of "$killed")" = would_remove ]'; then
    ok "killed run: once its recorders are done, nobody holds it"
else
    not_ok "killed run: once its recorders are done, nobody holds it (status $(status_of "$killed"))"
    echo "# the lock file is open in:"
    open_by "$db-runs.lock" | sed 's/^/#   /'
    echo "# the recorders' log:"
    tail -n 20 "$WORK/tftap.log" 2>/dev/null | sed 's/^/#   /'
fi
check_eq "killed run: it never ended" "$(sqlite3 "$db" "SELECT ended_us IS NULL FROM runs WHERE id = $killed")" 1

# A run being recorded: tofu apply hanging in a provider call.
(cd "$h" && TFTEST_HANG_MARKER=$mh exec setsid "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false \
    -no-color >"$h/out" 2>"$h/err") &
hpid=$!
wait_for 600 test -e "$mh" || not_ok "live run: the apply never hung"
live=$(last_run "$db")
# And one under tftap wrap: a wrapped tofu apply hanging likewise.
mkdir -p "$WORK/shims"
(cd "$wr" && "$TFTAP" wrap --db "$db" --out "$WORK/shims" >/dev/null 2>"$WORK/wrap.err") ||
    { not_ok "wrap"; cat "$WORK/wrap.err"; }
(cd "$wr" && TFTEST_HANG_MARKER=$mw TF_CLI_CONFIG_FILE=$WORK/shims/tftap.tfrc exec setsid tofu apply -auto-approve \
    -input=false -no-color >"$wr/out" 2>"$wr/err") &
wpid=$!
wait_for 600 test -e "$mw" || not_ok "wrapped run: the apply never hung"
wrapped=$(last_run "$db")
check "the wrapped run is another run" test "$wrapped" -gt "$live"
run_ids() { sqlite3 "$db" "SELECT group_concat(id, ' ') FROM (SELECT id FROM runs ORDER BY id)"; }
# A run still being recorded gains calls while the test looks (a provider
# process ending, a commit in flight): what it had before must all be there.
calls_of() { # RUN [MAX_ID]: its calls (up to MAX_ID), and their highest id
    sqlite3 "$db" "SELECT count(*) || ' ' || coalesce(max(id), 0) FROM calls WHERE run_id = $1 AND id <= ${2:-9223372036854775807}"
}
live_calls=$(calls_of "$live") wrapped_calls=$(calls_of "$wrapped")
check "the live run has calls" test "${live_calls%% *}" -gt 0
check "the wrapped run has calls" test "${wrapped_calls%% *}" -gt 0

"$TFTAP" prune --db "$db" --keep 0 --dry-run >"$WORK/dry.out" 2>&1
check_eq "prune --dry-run: exit 0" "$?" 0
check_eq "prune --dry-run: removes nothing" "$(sqlite3 "$db" "SELECT count(*) FROM runs")" "$wrapped"
check "prune --dry-run: would remove run 1" grep -q "^would remove run 1 " "$WORK/dry.out"
check "prune --dry-run: the killed run, never ended" \
    grep -qE "^would remove run $killed .*; never ended\)$" "$WORK/dry.out"
"$TFTAP" prune --db "$db" --older-than 1w >"$WORK/old.out" 2>&1
check_eq "prune --older-than 1w: exit 0" "$?" 0
check "prune --older-than 1w: nothing that old" grep -q "^nothing to prune in " "$WORK/old.out"

# Run 1 made ten days old, and run 2 one of its steps (as an acceptance
# test's commands are runs under their suite's, runs.parent_id): --older-than
# takes run 1 and its step with it, nothing else.
sqlite3 "$db" "UPDATE runs SET started_us = started_us - 864000000000 WHERE id = 1;
    UPDATE runs SET parent_id = 1, test_name = 'TestX', test_step = 1 WHERE id = 2"
"$TFTAP" prune --db "$db" --older-than 7d >"$WORK/7d.out" 2>&1
check_eq "prune --older-than 7d: exit 0" "$?" 0
check "prune --older-than 7d: removed run 1" grep -q "^removed run 1 " "$WORK/7d.out"
check "prune --older-than 7d: and its step run" grep -q "^removed run 2 " "$WORK/7d.out"
check_eq "prune --older-than 7d: only those" "$(run_ids)" "$(seq -s ' ' 3 "$wrapped")"

before=$(stat -c %s "$db")
"$TFTAP" prune --db "$db" --keep 0 >"$WORK/prune.out" 2>&1
check_eq "prune --keep 0: exit 0" "$?" 0
check "prune: the live run left, said so" grep -q "^left run $live (.*): still being recorded$" "$WORK/prune.out"
check "prune: the wrapped run left, said so" grep -q "^left run $wrapped (.*): still being recorded$" "$WORK/prune.out"
check "prune: what it removed" grep -qE "^removed 2 runs: [0-9]+ provider processes, [0-9]+ calls, .*; left 2 still being recorded$" "$WORK/prune.out"
check_eq "prune: the runs left" "$(run_ids)" "$live $wrapped"
check_eq "prune: the live run's calls untouched" "$(calls_of "$live" "${live_calls#* }")" "$live_calls"
check_eq "prune: the wrapped run's calls untouched" "$(calls_of "$wrapped" "${wrapped_calls#* }")" "$wrapped_calls"
orphans() {
    sqlite3 "$db" "SELECT (SELECT count(*) FROM processes WHERE run_id NOT IN (SELECT id FROM runs))
        + (SELECT count(*) FROM calls WHERE run_id NOT IN (SELECT id FROM runs))
        + (SELECT count(*) FROM call_addresses WHERE call_id NOT IN (SELECT id FROM calls))
        + (SELECT count(*) FROM messages WHERE call_id NOT IN (SELECT id FROM calls))
        + (SELECT count(*) FROM gaps WHERE run_id NOT IN (SELECT id FROM runs))
        + (SELECT count(*) FROM run_secrets WHERE run_id NOT IN (SELECT id FROM runs))"
}
check_eq "prune: no row of a removed run left" "$(orphans)" 0
check "prune: says the space" grep -qE "^space: .* -> .* \(.* freed; incremental vacuum\)$" "$WORK/prune.out"
# The file's size is not held here: the runs still being recorded write on,
# and may take the pages prune freed at once. It is below, with none.
check_eq "prune: the record reads as before" "$(ids)" "$live $wrapped"
"$TFTAP" show "$live" --db "$db" >/dev/null 2>&1
check_eq "prune: the live run still shows" "$?" 0

# The commands end (the hanging calls let go: the applies succeed): their
# runs end in the record, then go like any other.
rm -f "$mh" "$mw"
wait "$hpid"
check_eq "live run: the apply succeeded" "$?" 0
wait "$wpid"
check_eq "wrapped run: the apply succeeded" "$?" 0
check "wrapped run: its recorders let go" wait_until 600 '[ "$(status_of "$wrapped")" = would_remove ]'
check_eq "the live run ended in the record" "$(sqlite3 "$db" "SELECT ended_us IS NOT NULL AND exit_code = 0 FROM runs WHERE id = $live")" 1
"$TFTAP" prune --db "$db" --keep 1 --json >"$WORK/prune.json" 2>&1
check_eq "prune --keep 1 --json: removed the older" \
    "$(jq -c '[.removed, .recording, [.runs[] | [.id, .status]]]' "$WORK/prune.json")" "[1,0,[[$live,\"removed\"]]]"
"$TFTAP" prune --db "$db" --keep 0 >"$WORK/prune2.out" 2>&1
check_eq "prune --keep 0: the record empty" "$(sqlite3 "$db" "SELECT count(*) FROM runs")" 0
# Empty, the file is as small as the schema makes it: a page per table and
# index (and the pointer map of an incrementally vacuumed file), none free.
check_eq "prune, nothing recording: no page beyond the schema's ($(stat -c %s "$db") bytes)" \
    "$(sqlite3 "$db" "SELECT (SELECT freelist_count FROM pragma_freelist_count) = 0 AND
        (SELECT page_count FROM pragma_page_count) <= (SELECT count(DISTINCT name) FROM dbstat) + 2")" 1
check_eq "prune: no schema left that no process names" "$(sqlite3 "$db" "SELECT count(*) FROM schemas")" 0
"$TFTAP" runs --db "$db" >"$WORK/empty.out" 2>&1
check_eq "runs of an empty record: exit 0" "$?" 0

# Usage and refusals.
"$TFTAP" prune --db "$db" >/dev/null 2>"$WORK/u.err"
check_eq "prune without a rule: exit 2" "$?" 2
"$TFTAP" prune --db "$db" --older-than 7 >/dev/null 2>&1
check_eq "prune --older-than without a unit: exit 2" "$?" 2
"$TFTAP" prune --db "$db" --keep -1 >/dev/null 2>&1
check_eq "prune --keep -1: exit 2" "$?" 2
record "$a" plan -input=false -no-color
"$TFTAP" bundle last --db "$db" -o "$WORK/b.tftap" >/dev/null 2>&1 || not_ok "bundle"
sum=$(sha256sum <"$WORK/b.tftap")
"$TFTAP" prune --db "$WORK/b.tftap" --keep 0 >/dev/null 2>"$WORK/bundle.err"
check_eq "prune of a bundle: exit 1" "$?" 1
check "prune of a bundle: says it is read only" grep -q "is a bundle, which is read only" "$WORK/bundle.err"
check_eq "prune of a bundle: untouched" "$(sha256sum <"$WORK/b.tftap")" "$sum"
"$TFTAP" prune --db "$WORK/none.db" --keep 0 >/dev/null 2>&1
check_eq "prune of no database: exit 1" "$?" 1
check "prune of no database: makes none" test ! -e "$WORK/none.db"

finish
