#!/usr/bin/env bash
# The same `tofu plan` (twice) and `tofu apply` of the project's test
# providers recorded into a PostgreSQL server this test starts itself
# (tests/pg/lib.sh) and into an SQLite file: `tftap runs`, `calls`, `show`
# and `diff` must read the PostgreSQL record exactly as they read the file
# (ids, times and pids aside), and the PostgreSQL tables must hold every
# call the providers saw. Also: a bundle of a PostgreSQL run, tftap wrap's
# shims, a password kept out of messages, and the server stopping mid-run
# (the user's run goes on).
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
pg_e2e_start
CLI=tofu
db=$WORK/tftap.db
w=$WORK/w
mkdir -p "$w"
cp "$top_srcdir/tests/e2e/configs/show/v1.tf.txt" "$w/main.tf"
(cd "$w" && tofu init -input=false -no-color >/dev/null && tofu apply -auto-approve -input=false \
    -no-color >/dev/null) || not_ok "v1 applied"
cp "$top_srcdir/tests/e2e/configs/show/v2.tf.txt" "$w/main.tf"
cp -R "$w" "$WORK/w2" # the apply into PostgreSQL starts from the same state

# One plan into each backend, then a second of each (diff 1 2 compares them).
for i in 1 2; do
    for target in "$db" "$URI"; do
        (cd "$w" && "$TFTAP" run --db "$target" -- tofu plan -input=false -no-color \
            >"$WORK/plan.out" 2>&1) || {
            not_ok "plan $i into $target"
            cat "$WORK/plan.out"
        }
    done
done
(cd "$w" && TFTEST_RPC_LOG=$WORK/rpc_sqlite.log "$TFTAP" run --db "$db" -- tofu apply \
    -auto-approve -input=false -no-color >"$WORK/apply_sqlite.out" 2>&1) ||
    not_ok "apply into SQLite"
(cd "$WORK/w2" && TFTEST_RPC_LOG=$WORK/rpc_pg.log "$TFTAP" run --db "$URI" -- tofu apply \
    -auto-approve -input=false -no-color >"$WORK/apply_pg.out" 2>&1) ||
    not_ok "apply into PostgreSQL"
check "the apply recorded into PostgreSQL says what tofu said" \
    grep -q 'Apply complete!' "$WORK/apply_pg.out"

# The apply runs in two copies of one directory: the provider names what it
# creates at random (adjective-animal pairs), differently in each.
# Each database keys its redacted secrets with a key of its own.
pets() { sed -E 's/(new|thing)-[a-z]+-[a-z]+/\1-<random>/g; s/hmac-sha256:[0-9a-f]{64}/hmac-sha256:<key>/g'; }
# The changes of one show, one per paragraph, sorted: the apply's calls run
# in parallel, so their order differs from one apply to the next.
paragraphs() { awk 'BEGIN { RS = ""; ORS = "\n" } { gsub(/\n/, "\001"); print }' | sort | tr '\001' '\n'; }

# runs: everything but the start time and duration.
runs_norm() { "$TFTAP" runs --db "$1" | awk 'NR > 1 { print $1, $2, $6, $7, $8, $10, $11 }'; }
runs_norm "$db" >"$WORK/runs.sqlite"
runs_norm "$URI" >"$WORK/runs.pg"
check_eq "runs: three runs in PostgreSQL" "$(wc -l <"$WORK/runs.pg")" 3
check "runs: PostgreSQL lists what SQLite lists" cmp "$WORK/runs.sqlite" "$WORK/runs.pg"

# calls --json: every v_calls column but ids, times and call_seq (the order of
# a provider's calls: tofu makes them in parallel).
# A provider's schema is serialised afresh by each of its processes, its
# maps in random order: same size, different digest. In the apply the random
# names differ in length, and so do the messages' sizes.
calls_norm() { # DB RUN [apply]
    "$TFTAP" calls "$2" --db "$1" --json |
        jq -S -c --arg apply "${3:-}" '.[] | del(.call_id, .run_id, .process_id, .call_seq,
            .started_us, .ended_us, .duration_us)
          | if .response_json | type == "object" and has("$schema")
            then .response_json["$schema"] = "<digest>" else . end
          | if $apply == "" then . else del(.request_bytes, .response_bytes) end' |
        pets | sort
}
for r in 1 3; do
    kind=$([ $r = 3 ] && echo apply)
    calls_norm "$db" $r $kind >"$WORK/calls$r.sqlite"
    calls_norm "$URI" $r $kind >"$WORK/calls$r.pg"
    if [ -s "$WORK/calls$r.pg" ] && cmp -s "$WORK/calls$r.sqlite" "$WORK/calls$r.pg"; then
        ok "calls $r --json: PostgreSQL equals SQLite ($(wc -l <"$WORK/calls$r.pg") calls)"
    else
        not_ok "calls $r --json differ (< SQLite, > PostgreSQL)"
        diff "$WORK/calls$r.sqlite" "$WORK/calls$r.pg" | cut -c1-300 | head -20
    fi
done

# show: the text, byte for byte (call ids aside), plan and apply.
for r in 1 3; do
    "$TFTAP" show $r --db "$db" | sed -E 's/call [0-9]+/call N/g' | pets | paragraphs >"$WORK/show$r.sqlite"
    "$TFTAP" show $r --db "$URI" | sed -E 's/call [0-9]+/call N/g' | pets | paragraphs >"$WORK/show$r.pg"
    if [ -s "$WORK/show$r.pg" ] && cmp -s "$WORK/show$r.sqlite" "$WORK/show$r.pg"; then
        ok "show $r: PostgreSQL equals SQLite ($(wc -l <"$WORK/show$r.pg") lines)"
    else
        not_ok "show $r differs (< SQLite, > PostgreSQL)"
        diff "$WORK/show$r.sqlite" "$WORK/show$r.pg" | head -20
    fi
done

# diff of the two plans read from PostgreSQL equals the same diff read from
# an SQLite copy of those two runs (tftap push keeps values and hashes as
# they are; call ids are renumbered, so they are left out). Not the plans
# recorded into SQLite: tofu sometimes starts a provider twice in one plan,
# and that difference is tofu's, not the stores'. Sorted: the providers of a
# run are listed in the order they started, which is a race.
"$TFTAP" push 1 2 --db "$URI" --to "$WORK/copy.db" >"$WORK/push-copy.out" 2>&1 ||
    { not_ok "push runs 1 and 2 from PostgreSQL into an SQLite file"; cat "$WORK/push-copy.out"; }
"$TFTAP" diff 1 2 --db "$WORK/copy.db" >"$WORK/diff.sqlite" 2>&1
st_sqlite=$?
"$TFTAP" diff 1 2 --db "$URI" >"$WORK/diff.pg" 2>&1
st_pg=$?
check_eq "diff 1 2: PostgreSQL's exit status equals its SQLite copy's" "$st_pg" "$st_sqlite"
no_ids() { sed -E 's/ \(calls? [0-9]+(, [0-9]+)?\)//' "$1" | sort; }
if [ -s "$WORK/diff.pg" ] && cmp -s <(no_ids "$WORK/diff.sqlite") <(no_ids "$WORK/diff.pg"); then
    ok "diff 1 2: PostgreSQL's output equals its SQLite copy's"
else
    not_ok "diff 1 2 output differs (< SQLite copy, > PostgreSQL)"
    diff "$WORK/diff.sqlite" "$WORK/diff.pg" | head -20
fi

# export: the same lines (ids, times, pids and schema digests aside), JSON
# values embedded as they are.
export_norm() {
    "$TFTAP" export 1 --db "$1" |
        jq -S -c 'del(.id, .call_id, .run_id, .process_id, .call_seq, .started_us, .ended_us,
            .duration_us, .pid, .recorded_us, .schema_sha256, .uuid)
          | if (.response_json | type) == "object" and (.response_json | has("$schema"))
            then .response_json["$schema"] = "<digest>" else . end' | pets | sort
}
export_norm "$db" >"$WORK/export.sqlite"
export_norm "$URI" >"$WORK/export.pg"
if [ -s "$WORK/export.pg" ] && cmp -s "$WORK/export.sqlite" "$WORK/export.pg"; then
    ok "export 1: PostgreSQL equals SQLite ($(wc -l <"$WORK/export.pg") lines)"
else
    not_ok "export 1 differs (< SQLite, > PostgreSQL)"
    diff "$WORK/export.sqlite" "$WORK/export.pg" | cut -c1-300 | head -20
fi
# Byte for byte where nothing differs by nature: the run line's members.
run_line() { "$TFTAP" export 1 --db "$1" | head -1 | sed -E 's/"(id|started_us|ended_us)":[0-9]+/"\1":N/g; s/"uuid":"[0-9a-f-]{36}"/"uuid":U/'; }
check_eq "export 1: the run line is byte for byte SQLite's" "$(run_line "$URI")" "$(run_line "$db")"

# bundle: a run of the PostgreSQL record copied into an SQLite file reads
# as the run itself (column types carried over: integers stay integers).
if "$TFTAP" bundle 3 -o "$WORK/b.tftap" --db "$URI" >/dev/null 2>"$WORK/bundle.err"; then
    "$TFTAP" show "$WORK/b.tftap" | sed -E 's/call [0-9]+/call N/g' | pets | paragraphs \
        >"$WORK/show3.bundle"
    if [ -s "$WORK/show3.bundle" ] && cmp -s "$WORK/show3.pg" "$WORK/show3.bundle"; then
        ok "bundle of a PostgreSQL run: show reads it as the run"
    else
        not_ok "bundle of a PostgreSQL run: show differs (< PostgreSQL, > bundle)"
        diff "$WORK/show3.pg" "$WORK/show3.bundle" | head -20
    fi
    check_eq "bundle: integer columns are integers" \
        "$(sqlite3 "$WORK/b.tftap" "SELECT DISTINCT typeof(started_us) || typeof(status_code) FROM calls WHERE status_code IS NOT NULL")" \
        "integerinteger"
else
    not_ok "bundle 3 --db PostgreSQL: $(cat "$WORK/bundle.err")"
fi

# The tables themselves: every call the providers saw during the apply.
pg_begins() {
    pg_psql "SELECT p.pid || ' ' || c.method || ' ' || c.request_bytes FROM calls c
             JOIN processes p ON p.id = c.process_id WHERE c.run_id = 3 AND c.stream = 0" | sort
}
pg_begins >"$WORK/pg_begins"
log_begins "$WORK/rpc_pg.log" >"$WORK/log_begins_pg"
if [ -s "$WORK/log_begins_pg" ] && cmp -s "$WORK/pg_begins" "$WORK/log_begins_pg"; then
    ok "apply: PostgreSQL holds every call the providers saw ($(wc -l <"$WORK/pg_begins"))"
else
    not_ok "apply: PostgreSQL's calls differ from the providers' log (< db, > provider)"
    diff "$WORK/pg_begins" "$WORK/log_begins_pg" | head -20
fi
# tftap wrap's shims record each later command as one run of the shared
# record, joined by every provider process of the command.
(
    cd "$WORK/w2" && eval "$("$TFTAP" wrap --db "$URI" --out "$WORK/shims" 2>/dev/null)" &&
        TFTEST_RPC_LOG=$WORK/rpc_wrap.log tofu plan -input=false -no-color >"$WORK/wrap.out" 2>&1
) || not_ok "tofu plan through tftap wrap's shims"
for i in $(seq 300); do # the last shim ends the run once its provider exited
    [ "$(pg_psql "SELECT count(*) FROM runs WHERE id = 4 AND ended_us IS NOT NULL")" = 1 ] && break
    sleep 0.1
done
check_eq "wrap: one more run, numbered next (no id used up by the shims' joins)" \
    "$(pg_psql "SELECT string_agg(id::text, ' ' ORDER BY id) FROM runs")" "1 2 3 4"
pg_psql "SELECT p.pid || ' ' || c.method || ' ' || c.request_bytes FROM calls c
         JOIN processes p ON p.id = c.process_id WHERE c.run_id = 4 AND c.stream = 0" |
    sort >"$WORK/wrap_begins"
log_begins "$WORK/rpc_wrap.log" >"$WORK/log_begins_wrap"
if [ -s "$WORK/log_begins_wrap" ] && cmp -s "$WORK/wrap_begins" "$WORK/log_begins_wrap"; then
    ok "wrap: PostgreSQL holds every call the providers saw ($(wc -l <"$WORK/wrap_begins"))"
else
    not_ok "wrap: PostgreSQL's calls differ from the providers' log (< db, > provider)"
    diff "$WORK/wrap_begins" "$WORK/log_begins_wrap" | head -20
fi

# The server stops while an apply is running (a provider hangs in it until
# its marker goes): the user's run goes on and exits with tofu's status,
# its run held back in its spool, and the record reads again once the
# server is back, with the run copied into it (in the background).
h=$WORK/hang
mkdir -p "$h"
cp "$top_srcdir/tests/e2e/configs/hang/main.tf" "$h/main.tf"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "hang: init"
(cd "$h" && TFTEST_HANG_MARKER=$WORK/hang.marker "$TFTAP" run --db "$URI" -- tofu apply \
    -auto-approve -input=false -no-color >"$WORK/hang.out" 2>&1) &
hang_pid=$!
for i in $(seq 1200); do [ -e "$WORK/hang.marker" ] && break; sleep 0.1; done
check "hang: the apply reached the hanging resource" test -e "$WORK/hang.marker"
pg_stop || not_ok "server stopped"
rm -f "$WORK/hang.marker"
wait $hang_pid
check_eq "server gone mid-run: tftap run exits with tofu's status" "$?" 0
check "server gone mid-run: tofu's apply completed" grep -q 'Apply complete!' "$WORK/hang.out"
check "server gone at the run's end: tftap says the run is copied when it is back" \
    grep -q 'copied when the server is back' "$WORK/hang.out"
pg_start || not_ok "server started again"
five_runs() { [ "$("$TFTAP" runs --db "$URI" 2>/dev/null | awk 'NR > 1' | wc -l)" = 5 ]; }
check "server back: the record reads again, the held-back run copied into it (five runs)" \
    wait_for 600 five_runs
check_eq "server back: the copied run ended with tofu's status" \
    "$(pg_psql "SELECT exit_code FROM runs WHERE id = (SELECT max(id) FROM runs) AND ended_us IS NOT NULL")" 0

# A password in the URI is never printed.
"$TFTAP" runs --db "postgresql://tftap:hunter2@/nosuchdb?host=$pg_dir" >/dev/null 2>"$WORK/pw.err"
check "a connection error names the database and says the server's reason" \
    grep -q 'nosuchdb.*does not exist' "$WORK/pw.err"
check "a connection error hides the password" \
    sh -c "! grep -q hunter2 '$WORK/pw.err' && grep -q 'tftap:\*\*\*@' '$WORK/pw.err'"
check_eq "one schema version row" "$(pg_psql "SELECT value FROM tftap_meta WHERE key = 'schema_version'")" \
    "$(sqlite3 "$db" 'PRAGMA user_version')"
finish
