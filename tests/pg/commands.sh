#!/usr/bin/env bash
# The commands tests/pg/record.sh does not cover, on a PostgreSQL record
# (a server this test starts itself, tests/pg/lib.sh) against the same runs
# recorded into an SQLite file: check (text, --json, exit status), schema
# and schema diff, mock, replay (a run replayed from PostgreSQL, recorded
# there too), serve (the JSON API and its live updates), TFTAP_DB instead of
# --db, tftap wrap's shims of many provider instances joining one run at
# once, the redaction key shared by two runners, and messages that never
# show a URI's password.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
serve_pids=()
stop_serves() {
    local p
    for p in "${serve_pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    serve_pids=()
}
trap 'stop_serves; pg_cleanup; cleanup_work' EXIT
pg_e2e_start
PWURI="postgresql://tftap:hunter2@/tftap?host=$pg_dir"
CLI=tofu
db=$WORK/tftap.db
norm_ids() { sed -E 's/call [0-9]+/call N/g; s/hmac-sha256:[0-9a-f]{64}/hmac-sha256:<key>/g'; }
same() { # NAME FILE_SQLITE FILE_PG
    if [ -s "$3" ] && cmp -s "$2" "$3"; then
        ok "$1: PostgreSQL equals SQLite ($(wc -l <"$3") lines)"
    else
        not_ok "$1 differs (< SQLite, > PostgreSQL)"
        diff "$2" "$3" | cut -c1-300 | head -20
    fi
}
# record DIR ARGS...: one `tftap run` of tofu ARGS in a copy of DIR per
# backend (DIR for SQLite, DIR.pg for PostgreSQL), so both records hold the
# same runs under the same ids.
record() {
    local d=$1 target dir name="tofu $2 in $(basename "$1")"
    shift
    for target in "$db" "$URI"; do
        dir=$d
        [ "$target" = "$URI" ] && dir=$d.pg
        (cd "$dir" && "$TFTAP" run --db "$target" -- tofu "$@" >"$dir.out" 2>&1)
        echo $? >"$dir.status"
    done
    check_eq "$name: the same exit status on both backends" "$(cat "$d.status")" "$(cat "$d.pg.status")"
}

# ---- check ---------------------------------------------------------------------
# A resource of the test provider that breaks the plugin contract when
# updated (tests/e2e/check.sh): created cleanly, then updated.
misbehave_tf() { # RULE VALUE
    cat <<EOF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
    tftest5 = { source = "tftap/tftest5" }
  }
}
resource "tftest6_misbehave" "x" {
  rule   = "$1"
  legacy = false
  value  = "$2"
  list   = ["a"]
  set    = ["a"]
  item {
    name = "n"
  }
}
resource "tftest5_misbehave" "y" {
  rule   = "$1"
  legacy = true
  value  = "$2"
  list   = ["a"]
  set    = ["a"]
  item {
    name = "n"
  }
}
EOF
}
c=$WORK/c
mkdir -p "$c"
misbehave_tf none a >"$c/main.tf"
(cd "$c" && tofu init -input=false -no-color >/dev/null) || not_ok "check: tofu init"
cp -R "$c" "$c.pg"
record "$c" apply -auto-approve -input=false -no-color # run 1
for d in "$c" "$c.pg"; do misbehave_tf apply_changed b >"$d/main.tf"; done
record "$c" apply -auto-approve -input=false -no-color # run 2
for r in 1 2; do
    "$TFTAP" check $r --db "$db" >"$WORK/check$r.sqlite" 2>&1
    st_s=$?
    "$TFTAP" check $r --db "$URI" >"$WORK/check$r.pg" 2>&1
    st_p=$?
    check_eq "check $r: the same exit status ($st_s)" "$st_p" "$st_s"
    # Findings in call order: the two providers' calls interleave.
    norm_ids <"$WORK/check$r.sqlite" | sort >"$WORK/check$r.sqlite.n"
    norm_ids <"$WORK/check$r.pg" | sort >"$WORK/check$r.pg.n"
    same "check $r" "$WORK/check$r.sqlite.n" "$WORK/check$r.pg.n"
done
check_eq "check 2 finds violations (exit 1)" "$st_p" 1
check_json() { "$TFTAP" check 2 --db "$1" --json | jq -S -c '.findings[] | del(.call_id)' | norm_ids | sort; }
check_json "$db" >"$WORK/checkj.sqlite"
check_json "$URI" >"$WORK/checkj.pg"
same "check 2 --json findings" "$WORK/checkj.sqlite" "$WORK/checkj.pg"
"$TFTAP" check 2 tftest5_misbehave --db "$URI" --json >"$WORK/checkj5.pg"
check_eq "check 2 TYPE --json: only that type's findings" \
    "$(jq '(.findings | length) > 0 and all(.findings[]; .address | startswith("tftest5_misbehave"))' \
        "$WORK/checkj5.pg")" true

# ---- schema, schema diff --------------------------------------------------------
for p in tftap/tftest6 tftap/tftest5; do
    "$TFTAP" schema 1 $p --db "$db" --json >"$WORK/schema.sqlite" 2>&1
    "$TFTAP" schema 1 $p --db "$URI" --json >"$WORK/schema.pg" 2>&1
    same "schema 1 $p --json" "$WORK/schema.sqlite" "$WORK/schema.pg"
    "$TFTAP" schema 1 $p --db "$db" >"$WORK/schemat.sqlite" 2>&1
    "$TFTAP" schema 1 $p --db "$URI" >"$WORK/schemat.pg" 2>&1
    same "schema 1 $p" "$WORK/schemat.sqlite" "$WORK/schemat.pg"
done
"$TFTAP" schema diff 1 2 --provider tftap/tftest6 --db "$URI" --json >"$WORK/sdiff.pg"
check_eq "schema diff 1 2 (the same provider): exit 0 on PostgreSQL" "$?" 0
"$TFTAP" schema diff 1 2 --provider tftap/tftest6 --db "$db" --json >"$WORK/sdiff.sqlite"
same "schema diff 1 2 --json" "$WORK/sdiff.sqlite" "$WORK/sdiff.pg"
# Against a file: the recorded schema without its misbehave resource.
"$TFTAP" schema 1 tftap/tftest6 --db "$db" --json |
    jq 'del(.provider_schemas[].resource_schemas.tftest6_misbehave)' >"$WORK/schema6.json"
"$TFTAP" schema diff 1 "$WORK/schema6.json" --provider tftap/tftest6 --db "$URI" >"$WORK/sdiff2.pg"
st_p=$?
"$TFTAP" schema diff 1 "$WORK/schema6.json" --provider tftap/tftest6 --db "$db" >"$WORK/sdiff2.sqlite"
check_eq "schema diff RUN FILE (a resource type removed): the same exit status" "$st_p" "$?"
check_eq "schema diff RUN FILE on PostgreSQL: exit 1 (changed)" "$st_p" 1
same "schema diff RUN FILE" "$WORK/sdiff2.sqlite" "$WORK/sdiff2.pg"

# ---- mock -----------------------------------------------------------------------
"$TFTAP" mock 1 --db "$db" >"$WORK/mock.sqlite" 2>&1
check_eq "mock 1 (SQLite) exits 0" "$?" 0
"$TFTAP" mock 1 --db "$URI" >"$WORK/mock.pg" 2>&1
check_eq "mock 1 (PostgreSQL) exits 0" "$?" 0
norm_ids <"$WORK/mock.sqlite" >"$WORK/mock.sqlite.n"
norm_ids <"$WORK/mock.pg" >"$WORK/mock.pg.n"
same "mock 1" "$WORK/mock.sqlite.n" "$WORK/mock.pg.n"
check "mock 1 writes mock_provider blocks" grep -q '^mock_provider "tftest6" {$' "$WORK/mock.pg"

# ---- the redaction key: one per database, shared by its runners ----------------
secret_tf() {
    cat <<EOF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
resource "tftest6_thing" "t" {
  string_attr = "s"
  secret      = "same-secret-everywhere"
}
EOF
}
for r in r1 r2 r3; do
    mkdir -p "$WORK/$r"
    secret_tf >"$WORK/$r/main.tf"
    (cd "$WORK/$r" && tofu init -input=false -no-color >/dev/null) || not_ok "$r: tofu init"
done
hashes() { "$TFTAP" calls "$2" --db "$1" --json | grep -o 'hmac-sha256:[0-9a-f]*' | sort -u; }
(cd "$WORK/r1" && "$TFTAP" run --db "$URI" -- tofu plan -input=false -no-color >/dev/null 2>&1) ||
    not_ok "runner 1: plan into PostgreSQL"
(cd "$WORK/r2" && "$TFTAP" run --db "$URI" -- tofu plan -input=false -no-color >/dev/null 2>&1) ||
    not_ok "runner 2: plan into PostgreSQL"
(cd "$WORK/r3" && "$TFTAP" run --db "$WORK/other.db" -- tofu plan -input=false -no-color \
    >/dev/null 2>&1) || not_ok "runner 3: plan into an SQLite file"
h1=$(hashes "$URI" 3) h2=$(hashes "$URI" 4) h3=$(hashes "$WORK/other.db" 1)
check "the secret was hashed ($h1)" test "$(echo "$h1" | wc -w)" = 1
check_eq "two runners into one PostgreSQL database: the same hash" "$h2" "$h1"
check "a separate SQLite record: another hash" test -n "$h3" -a "$h3" != "$h1"
check "the secret itself is stored nowhere" \
    sh -c "! '$TFTAP' export 3 --db '$URI' | grep -q same-secret-everywhere"
# SQLite gets the same two runs (ids 3 and 4), so later ids stay equal.
for r in r1 r2; do
    (cd "$WORK/$r" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >/dev/null 2>&1) ||
        not_ok "$r: plan into SQLite"
done

# ---- TFTAP_DB instead of --db ---------------------------------------------------
(cd "$WORK/r1" && TFTAP_DB=$URI "$TFTAP" run -- tofu plan -input=false -no-color >/dev/null 2>&1) ||
    not_ok "TFTAP_DB: tftap run"
(cd "$WORK/r1" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >/dev/null 2>&1) ||
    not_ok "plan 5 into SQLite"
check "TFTAP_DB: the run was recorded into PostgreSQL (run 5)" \
    test "$(pg_psql "SELECT count(*) FROM runs WHERE id = 5 AND exit_code = 0")" = 1
check "TFTAP_DB: nothing written beside the working directory" test ! -e "$WORK/r1/.tftap/tftap.db"
TFTAP_DB=$URI "$TFTAP" runs >"$WORK/runs.env" 2>&1
"$TFTAP" runs --db "$URI" >"$WORK/runs.opt" 2>&1
check "TFTAP_DB: runs lists what runs --db lists" cmp -s "$WORK/runs.env" "$WORK/runs.opt"
check_eq "TFTAP_DB: runs lists five runs" "$(awk 'NR > 1' "$WORK/runs.env" | wc -l)" 5
TFTAP_DB=$URI "$TFTAP" check 2 >/dev/null 2>&1
check_eq "TFTAP_DB: check 2 exits 1 (violations)" "$?" 1

# ---- serve ------------------------------------------------------------------------
# start_serve DB NAME [--source]: the URL it printed in $WORK/NAME.url
# (--source: DB as serve's operand instead of --db's value)
start_serve() {
    local how=--db
    [ "${3:-}" = --source ] && how=
    # shellcheck disable=SC2086 # an option or none
    "$TFTAP" serve $how "$1" >"$WORK/$2.url" 2>"$WORK/$2.err" &
    serve_pids+=($!)
    wait_for 150 test -s "$WORK/$2.url"
}
api() { # NAME PATH
    local url
    url=$(head -1 "$WORK/$1.url")
    curl -s -f "${url%%/\?*}$2$([[ $2 == *\?* ]] && echo '&' || echo '?')token=${url##*token=}"
}
start_serve "$db" s || not_ok "serve --db FILE printed its URL"
start_serve "$URI" p || not_ok "serve --db URI printed its URL"
check "serve --db URI: the URL line" grep -qE '^http:/{2}127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}$' "$WORK/p.url"
api_norm() { # NAME PATH
    api "$1" "$2" | jq -S 'walk(if type == "object" then del(.started_us, .ended_us, .duration_us,
        .id, .call_id, .process_id, .pid, .call_seq, .recorded_us, .next, .last, .first_seen_us,
        .sha256, .schema_sha256, .first_us, .last_us) else . end)
        | if has("schemas") then .schemas | map({provider, versions, protocol}) | unique else . end' | sed 's|\.pg",$|",|' |
        norm_ids | sort
}
for path in /api/runs "/api/runs/1/calls" "/api/runs/2/check" "/api/diff/3/4" "/api/runs/2" \
    "/api/schemas"; do
    api_norm s "$path" >"$WORK/api.sqlite"
    api_norm p "$path" >"$WORK/api.pg"
    same "serve: GET $path" "$WORK/api.sqlite" "$WORK/api.pg"
done
stop_serves

# ---- replay ------------------------------------------------------------------------
# A plan recorded into PostgreSQL is replayed from there (no provider
# started), and the replay is recorded there too.
(cd "$WORK/r1" && "$TFTAP" run --db "$URI" -- tofu plan -input=false -no-color -detailed-exitcode \
    >"$WORK/plan.orig" 2>&1)
orig_rc=$?
(cd "$WORK/r1" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >/dev/null 2>&1)
check_eq "replay: the original plan has changes" "$orig_rc" 2
plan_run=$(pg_psql "SELECT max(id) FROM runs")
for form in "$URI:$plan_run" "$URI --run $plan_run"; do
    rm -rf "$WORK/rp"
    mkdir -p "$WORK/rp"
    secret_tf >"$WORK/rp/main.tf"
    # shellcheck disable=SC2086 # the form is SOURCE or SOURCE --run RUN
    (cd "$WORK/rp" && TFTEST_RPC_LOG=$WORK/replay-rpc.log "$TFTAP" replay $form --db "$URI" -- \
        tofu plan -input=false -no-color -detailed-exitcode >"$WORK/plan.rep" 2>"$WORK/plan.rep.err")
    check_eq "replay $form: the same exit code" "$?" "$orig_rc"
    if grep -q 'tftest6_thing.t will be created' "$WORK/plan.rep" &&
        cmp -s <(grep -v '^ - tftap/tftest6 in /' "$WORK/plan.orig") \
            <(grep -v '^ - tftap/tftest6 in /' "$WORK/plan.rep"); then
        ok "replay $form: the same plan text"
    else
        not_ok "replay $form: the plan text (< original, > replay)"
        diff "$WORK/plan.orig" "$WORK/plan.rep" | head -20
        head -20 "$WORK/plan.rep.err"
    fi
    rep_run=$(pg_psql "SELECT max(id) FROM runs")
    check "replay $form: recorded into PostgreSQL as a run of its own ($rep_run)" \
        test "$rep_run" -gt "$plan_run"
    "$TFTAP" diff "$plan_run" "$rep_run" --db "$URI" >"$WORK/diff.rep" 2>&1
    check_eq "replay $form: diff ORIGINAL REPLAY finds the same behaviour" "$?" 0
done
check "replay: no real provider was started" test ! -e "$WORK/replay-rpc.log"
"$TFTAP" replay "$URI:999" --db "$URI" -- tofu plan >/dev/null 2>"$WORK/replay.err"
check_eq "replay of a run that does not exist: exit 1" "$?" 1
check "... one line naming the run" grep -q "no run '999'" "$WORK/replay.err"

# ---- many shims joining one run at once (tftap wrap) ------------------------------
m=$WORK/multi
new_dir "$top_srcdir/tests/e2e/configs/multi" "$m"
(cd "$m" && tofu init -input=false -no-color >/dev/null) || not_ok "multi: tofu init"
runs_before=$(pg_psql "SELECT count(*) FROM runs")
(
    cd "$m" && eval "$("$TFTAP" wrap --db "$URI" --out "$WORK/shims" 2>/dev/null)" &&
        TFTEST_RPC_LOG=$WORK/rpc_wrap.log tofu apply -auto-approve -input=false -no-color \
            >"$WORK/wrap.out" 2>&1
) || not_ok "tofu apply through tftap wrap's shims"
wait_for 300 recorders_done "$WORK/shims" || not_ok "wrap: the shims' recorders finished"
check_eq "wrap: the shims of five provider instances joined one run" \
    "$(pg_psql "SELECT count(*) FROM runs")" $((runs_before + 1))
check_eq "wrap: no run id used up by the joins" \
    "$(pg_psql "SELECT max(id) - min(id) + 1 = count(*) FROM runs")" t
wrap_run=$(pg_psql "SELECT max(id) FROM runs")
check "wrap: many provider processes in the run ($(pg_psql "SELECT count(*) FROM processes WHERE run_id = $wrap_run"))" \
    test "$(pg_psql "SELECT count(*) FROM processes WHERE run_id = $wrap_run")" -ge 10
pg_psql "SELECT p.pid || ' ' || c.method || ' ' || c.request_bytes FROM calls c
         JOIN processes p ON p.id = c.process_id WHERE c.run_id = $wrap_run AND c.stream = 0" |
    sort >"$WORK/wrap_begins"
log_begins "$WORK/rpc_wrap.log" >"$WORK/log_begins_wrap"
if [ -s "$WORK/log_begins_wrap" ] && cmp -s "$WORK/wrap_begins" "$WORK/log_begins_wrap"; then
    ok "wrap: PostgreSQL holds every call the providers saw ($(wc -l <"$WORK/wrap_begins"))"
else
    not_ok "wrap: PostgreSQL's calls differ from the providers' log (< db, > provider)"
    diff "$WORK/wrap_begins" "$WORK/log_begins_wrap" | head -20
fi
# The last shim ends the run once its provider exited.
check "wrap: the run ended" wait_until 150 \
    '[ "$(pg_psql "SELECT count(*) FROM runs WHERE id = $wrap_run AND ended_us IS NOT NULL")" = 1 ]'

# ---- serve: live updates -----------------------------------------------------------
start_serve "$URI" live --source || not_ok "serve URI (SOURCE) printed its URL"
# Live updates: a run recorded while serve runs is announced and listed.
url=$(head -1 "$WORK/live.url")
curl -s -N "${url%%/\?*}/api/events?token=${url##*token=}" \
    >"$WORK/events" 2>/dev/null &
serve_pids+=($!)
wait_for 150 grep -q 'event: hello' "$WORK/events" || not_ok "serve: /api/events says hello"
(cd "$WORK/r2" && "$TFTAP" run --db "$URI" -- tofu plan -input=false -no-color >/dev/null 2>&1) ||
    not_ok "a plan recorded while serve runs"
new_run=$(pg_psql "SELECT max(id) FROM runs")
check "serve: a change event after a new run was recorded" wait_for 150 grep -q 'event: change' "$WORK/events"
check_eq "serve: /api/runs lists the new run first" "$(api live /api/runs | jq '.runs[0].id')" "$new_run"
check_eq "serve: the new run's calls are served" \
    "$(api live "/api/runs/$new_run/calls" | jq '.calls | length')" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE run_id = $new_run")"

# API requests share a few sessions kept open: the server logs each
# connection it accepts, and 30 requests may not make 30 of them.
pg_psql "ALTER SYSTEM SET log_connections = on" && pg_psql "SELECT pg_reload_conf()" >/dev/null
connections() { grep -c 'connection authorized: user=tftap database=tftap' "$pg_dir/log"; }
before=$(connections)
good=0
for i in $(seq 30); do
    [ "$(api live "/api/runs/$new_run/calls" | jq '.calls | length')" -gt 0 ] && good=$((good + 1))
done
check_eq "serve: 30 API requests answered" "$good" 30
check "serve: 30 API requests opened at most 4 sessions ($(($(connections) - before)))" \
    test $(($(connections) - before)) -le 4

# The server restarts: requests are answered on new sessions, and the live
# updates go on (a change event once reconnected, another for a new run).
changes() { grep -c 'event: change' "$WORK/events"; }
more_changes() { [ "$(changes)" -gt "$1" ]; }
n=$(changes)
pg_stop || not_ok "server stopped under serve"
pg_start || not_ok "server started again under serve"
check_eq "serve: after a server restart the API answers" \
    "$(api live "/api/runs/$new_run/calls" | jq '.calls | length')" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE run_id = $new_run")"
check "serve: a change event once the live updates reconnected" wait_for 150 more_changes "$n"
n=$(changes)
(cd "$WORK/r2" && "$TFTAP" run --db "$URI" -- tofu plan -input=false -no-color >/dev/null 2>&1) ||
    not_ok "a plan recorded after the restart while serve runs"
check "serve: a change event for a run recorded after the restart" \
    wait_for 150 more_changes "$n"
check_eq "serve: /api/runs lists that run first" "$(api live /api/runs | jq '.runs[0].id')" \
    "$(pg_psql "SELECT max(id) FROM runs")"
stop_serves

# ---- a password in a URI is never printed -----------------------------------------
# The server trusts local connections: the password is accepted and ignored.
for cmd in "show 999" "calls 999" "export 999" "check 999" "mock 999" "schema 999" "diff 998 999" \
    "bundle 999 -o $WORK/x.tftap" "replay $PWURI:999 -- tofu plan"; do
    # shellcheck disable=SC2086 # a command and its words
    "$TFTAP" $cmd --db "$PWURI" >/dev/null 2>"$WORK/pw.err"
    if [ -s "$WORK/pw.err" ] && ! grep -q hunter2 "$WORK/pw.err" && grep -q 'tftap:\*\*\*@' "$WORK/pw.err"; then
        ok "$cmd: the error names the database without its password"
    else
        not_ok "$cmd: $(cat "$WORK/pw.err")"
    fi
done
# Waited for by what serve says (or its exit), not by time: a busy machine is slow to start it.
"$TFTAP" serve --db "$PWURI" >"$WORK/pw.out" 2>"$WORK/pw.err" </dev/null &
pw_pid=$!
serve_said() { grep -q 'tftap: serving' "$WORK/pw.err" || ! kill -0 "$pw_pid" 2>/dev/null; }
wait_for 1500 serve_said
kill "$pw_pid" 2>/dev/null
wait "$pw_pid" 2>/dev/null
pw_rc=$?
if grep -q 'tftap:\*\*\*@' "$WORK/pw.err" && ! grep -q hunter2 "$WORK/pw.err" "$WORK/pw.out"; then
    ok "serve: says which database it serves without the password"
else
    not_ok "serve: says which database it serves without the password (exit $pw_rc; it said:" \
        "$(cat "$WORK/pw.out" "$WORK/pw.err" | tr "\n" " "))"
fi

# ---- messages for a database with no tftap record ----------------------------------
psql -q -X "$(pg_uri postgres)" -c 'CREATE DATABASE empty' >/dev/null || not_ok "CREATE DATABASE empty"
"$TFTAP" serve --db "$(pg_uri empty)" >/dev/null 2>"$WORK/empty.err" </dev/null
check_eq "serve of a database without a tftap record: exit 1" "$?" 1
check_eq "... saying so for a URI" "$(cat "$WORK/empty.err")" \
    "tftap: no tftap record in $(pg_uri empty) (record one with 'tftap run --db URI')"
"$TFTAP" runs --db "postgresql:///nosuch?host=$pg_dir&user=tftap" >/dev/null 2>"$WORK/nodb.err"
check_eq "a database that does not exist: exit 1" "$?" 1
check "... libpq's reason" grep -q 'database "nosuch" does not exist' "$WORK/nodb.err"
# A record of a newer tftap is left alone, and said to be one.
psql -q -X "$(pg_uri postgres)" -c 'CREATE DATABASE newer' >/dev/null || not_ok "CREATE DATABASE newer"
"$TFTAP" runs --db "$(pg_uri newer)" >/dev/null 2>"$WORK/empty-read.err"
check_eq "reading an empty database refuses it (reading never writes)" "$? $(cat "$WORK/empty-read.err")" \
    "1 tftap: no tftap record in $(pg_uri newer) (record one with 'tftap run --db URI')"
check_eq "... and makes no table" \
    "$(psql -X -A -t "$(pg_uri newer)" -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" 0
"$TFTAP" run --db "$(pg_uri newer)" -- true >/dev/null 2>&1 || not_ok "a recording command makes the record"
psql -q -X "$(pg_uri newer)" -c "UPDATE tftap_meta SET value = '999' WHERE key = 'schema_version'" ||
    not_ok "version 999"
"$TFTAP" runs --db "$(pg_uri newer)" >/dev/null 2>"$WORK/newer.err"
check_eq "a record of a newer tftap: exit 1" "$?" 1
check_eq "... saying so" "$(cat "$WORK/newer.err")" \
    "tftap: cannot read $(pg_uri newer): its tftap record is of another tftap version (an older one is brought up to date by recording into it: 'tftap run --db URI' or 'tftap push --to URI')"
check_eq "... and left as it was" \
    "$(psql -X -A -t "$(pg_uri newer)" -c "SELECT value FROM tftap_meta WHERE key = 'schema_version'")" 999
"$TFTAP" serve --db "$(pg_uri newer)" >/dev/null 2>"$WORK/newer.err" </dev/null
check_eq "serve of a record of another version: says so" "$(cat "$WORK/newer.err")" \
    "tftap: cannot read $(pg_uri newer): its tftap record is of another tftap version (an older one is brought up to date by recording into it: 'tftap run --db URI' or 'tftap push --to URI')"
# A role that may not create tables: the record cannot be made, and the
# server says why.
psql -q -X "$(pg_uri postgres)" -c 'CREATE ROLE reader LOGIN' -c 'CREATE DATABASE fresh' >/dev/null &&
    psql -q -X "$(pg_uri fresh)" -c 'REVOKE CREATE ON SCHEMA public FROM PUBLIC' >/dev/null ||
    not_ok "CREATE ROLE reader, DATABASE fresh"
"$TFTAP" run --db "postgresql:///fresh?host=$pg_dir&user=reader" -- true >/dev/null 2>"$WORK/perm.err"
check_eq "a database the role cannot write: the command runs unrecorded" "$?" 0
check "... the server's reason" grep -q "permission denied for schema public" "$WORK/perm.err"
cat "$WORK/perm.err"
finish
