#!/usr/bin/env bash
# `tftap push`: runs of real tofu commands recorded into an SQLite file (and
# a bundle) copied into a PostgreSQL server this test starts itself: one
# run, then `all`, then `all` again (nothing added: every table's row count
# stays), a bundle; `runs`, `calls`, `show`, `diff` and `export` read each
# pushed run as they read the original. Secrets keep the hashes they were
# recorded with (runs.key_id says whose key), a run still recording is
# skipped unless named, a run that cannot be written leaves nothing behind,
# a server that is not there is one error line and exit 2.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
pg_e2e_start
CLI=tofu
db=$WORK/local.db db2=$WORK/other.db
w=$WORK/w s=$WORK/s s2=$WORK/s2 o=$WORK/o
mkdir -p "$w"
cp "$top_srcdir/tests/e2e/configs/show/v1.tf.txt" "$w/main.tf"
(cd "$w" && tofu init -input=false -no-color >/dev/null && tofu apply -auto-approve -input=false \
    -no-color >/dev/null) || not_ok "v1 applied"
cp "$top_srcdir/tests/e2e/configs/show/v2.tf.txt" "$w/main.tf"
cp -R "$w" "$o"
new_dir "$top_srcdir/tests/e2e/configs/bundle" "$s"
new_dir "$top_srcdir/tests/e2e/configs/bundle" "$s2"
for d in "$s" "$s2"; do
    (cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "init $d"
done

record() { # DIR DB [tftap run options] -- ARGS...
    local dir=$1 rdb=$2
    shift 2
    (cd "$dir" && "$TFTAP" run --db "$rdb" "$@" >"$WORK/run.out" 2>"$WORK/run.err") ||
        { not_ok "recorded: $*"; cat "$WORK/run.err"; }
}
# The local record: two plans (the second keeping raw messages), an apply,
# and an apply with secrets (sensitive provider configuration, equal
# secrets in two resources, a nested one).
record "$w" "$db" -- tofu plan -input=false -no-color
record "$w" "$db" --keep-raw -- tofu plan -input=false -no-color
record "$w" "$db" -- tofu apply -auto-approve -input=false -no-color
record "$s" "$db" -- tofu apply -auto-approve -input=false -no-color
# Another runner's record, handed over as a bundle.
record "$o" "$db2" -- tofu plan -input=false -no-color
"$TFTAP" bundle 1 --db "$db2" -o "$WORK/b.tftap" >/dev/null || not_ok "bundle written"
# The same secrets recorded straight into the shared record: its run 1.
record "$s2" "$URI" -- tofu apply -auto-approve -input=false -no-color
check_eq "local record: four runs" "$(sqlite3 "$db" "SELECT count(*) FROM runs")" 4
check_eq "local record: raw messages kept for run 2" \
    "$(sqlite3 "$db" "SELECT count(*) > 0 FROM messages m JOIN calls c ON c.id = m.call_id
                      WHERE c.run_id = 2")" 1

# Run 1 alone.
"$TFTAP" push 1 --db "$db" --to "$URI" >"$WORK/push1.out" 2>"$WORK/push1.err"
check_eq "push 1: exit 0" "$?" 0
check_eq "push 1: nothing on stderr (not a terminal)" "$(cat "$WORK/push1.err")" ""
check "push 1: says where it went" grep -qE "^run 1 of .*local.db: pushed as run 2 \([0-9a-f-]{36}\): [0-9]+ calls" "$WORK/push1.out"
check_eq "push 1: summary" "$(tail -1 "$WORK/push1.out")" \
    "pushed 1 run ($(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = 1") calls), 0 already there"
check_eq "push 1: the run is there under its uuid" \
    "$(pg_psql "SELECT uuid FROM runs WHERE id = 2")" "$(sqlite3 "$db" "SELECT uuid FROM runs WHERE id = 1")"

# Then everything: run 1 is there already.
"$TFTAP" push all --db "$db" --to "$URI" --json >"$WORK/all.json" 2>"$WORK/all.err"
check_eq "push all: exit 0" "$?" 0
check_eq "push all: nothing on stderr" "$(cat "$WORK/all.err")" ""
check_eq "push all --json: statuses" "$(jq -c '[.runs[] | [.run, .status, .to_run]]' "$WORK/all.json")" \
    '[[1,"already",2],[2,"pushed",3],[3,"pushed",4],[4,"pushed",5]]'
check_eq "push all --json: totals" "$(jq -c '[.pushed, .calls, .already, .failed]' "$WORK/all.json")" \
    "[3,$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id > 1"),1,0]"

# Every table's rows, to see that pushing again adds none.
counts() {
    pg_psql "SELECT (SELECT count(*) FROM runs) || ' ' || (SELECT count(*) FROM processes) || ' ' ||
             (SELECT count(*) FROM calls) || ' ' || (SELECT count(*) FROM messages) || ' ' ||
             (SELECT count(*) FROM gaps) || ' ' || (SELECT count(*) FROM schemas) || ' ' ||
             (SELECT last_value FROM runs_id_seq)"
}
before=$(counts)
"$TFTAP" push all --db "$db" --to "$URI" >"$WORK/again.out" 2>&1
check_eq "push all again: exit 0" "$?" 0
check_eq "push all again: summary" "$(tail -1 "$WORK/again.out")" "pushed 0 runs (0 calls), 4 already there"
check_eq "push all again: no row added anywhere (no run id used up)" "$(counts)" "$before"
check_eq "pushed: rows per table as in the local record" \
    "$(pg_psql "SELECT (SELECT count(*) FROM processes WHERE run_id > 1) || ' ' ||
                (SELECT count(*) FROM calls WHERE run_id > 1) || ' ' || (SELECT count(*) FROM messages m
                JOIN calls c ON c.id = m.call_id WHERE c.run_id > 1)")" \
    "$(sqlite3 "$db" "SELECT (SELECT count(*) FROM processes) || ' ' || (SELECT count(*) FROM calls) || ' ' ||
                       (SELECT count(*) FROM messages)")"
check_eq "pushed: raw message bytes kept" \
    "$(pg_psql "SELECT md5(string_agg(encode(m.raw, 'hex'), '' ORDER BY c.call_seq, c.process_id, m.seq))
                FROM messages m JOIN calls c ON c.id = m.call_id WHERE c.run_id = 3" | wc -c)" 33
check_eq "pushed: no wrap key, no recorders" \
    "$(pg_psql "SELECT count(*) FROM runs WHERE cli_key IS NOT NULL OR recorders <> 0")" 0

# Read back: each pushed run reads as the original (ids aside).
pets() { sed -E 's/(new|thing)-[a-z]+-[a-z]+/\1-<random>/g'; }
calls_norm() { # DB RUN
    "$TFTAP" calls "$2" --db "$1" --json | jq -S -c '.[] | del(.call_id, .run_id, .process_id)'
}
for pair in 1:2 2:3 3:4 4:5; do
    l=${pair%:*} p=${pair#*:}
    calls_norm "$db" "$l" >"$WORK/calls$l.sqlite"
    calls_norm "$URI" "$p" >"$WORK/calls$l.pg"
    if [ -s "$WORK/calls$l.pg" ] && cmp -s "$WORK/calls$l.sqlite" "$WORK/calls$l.pg"; then
        ok "calls $l --json: the pushed run $p equals it ($(wc -l <"$WORK/calls$l.pg") calls, times included)"
    else
        not_ok "calls $l --json: pushed run $p differs (< SQLite, > PostgreSQL)"
        diff "$WORK/calls$l.sqlite" "$WORK/calls$l.pg" | cut -c1-300 | head -10
    fi
    "$TFTAP" show "$l" --db "$db" --all | sed -E 's/call [0-9]+/call N/g; s/^Run [0-9]+/Run N/' >"$WORK/show$l.sqlite"
    "$TFTAP" show "$p" --db "$URI" --all | sed -E 's/call [0-9]+/call N/g; s/^Run [0-9]+/Run N/' >"$WORK/show$l.pg"
    if [ -s "$WORK/show$l.pg" ] && cmp -s "$WORK/show$l.sqlite" "$WORK/show$l.pg"; then
        ok "show $l: the pushed run $p equals it"
    else
        not_ok "show $l: pushed run $p differs (< SQLite, > PostgreSQL)"
        diff "$WORK/show$l.sqlite" "$WORK/show$l.pg" | head -10
    fi
    # key_id: a pushed run names the key it was hashed with (runs.key_id).
    ex() { "$TFTAP" export "$2" --db "$1" | jq -S -c 'del(.id, .call_id, .run_id, .process_id, .key_id)'; }
    if cmp -s <(ex "$db" "$l") <(ex "$URI" "$p"); then
        ok "export $l: the pushed run $p equals it (times, pids, paths included)"
    else
        not_ok "export $l: pushed run $p differs"
        diff <(ex "$db" "$l") <(ex "$URI" "$p") | cut -c1-300 | head -10
    fi
done
runs_norm() { # DB IDS...
    local d=$1
    shift
    "$TFTAP" runs --db "$d" --json | jq -c --argjson ids "[$(echo "$@" | tr ' ' ,)]" \
        '.[] | select(.id as $i | $ids | index($i)) | del(.id)'
}
check_eq "runs --json: the pushed runs as the originals (ids aside)" \
    "$(runs_norm "$URI" 2 3 4 5)" "$(runs_norm "$db" 1 2 3 4)"
"$TFTAP" diff 1 2 --db "$db" >"$WORK/diff.sqlite" 2>&1
st_sqlite=$?
"$TFTAP" diff 2 3 --db "$URI" >"$WORK/diff.pg" 2>&1
check_eq "diff of two pushed plans: the originals' exit status" "$?" "$st_sqlite"
if [ -s "$WORK/diff.pg" ] &&
    cmp -s <(sed -E 's/run [0-9]+/run N/g; s/\(calls? [0-9]+(, [0-9]+)?\)/(calls N)/g' "$WORK/diff.sqlite" | sort) \
        <(sed -E 's/run [0-9]+/run N/g; s/\(calls? [0-9]+(, [0-9]+)?\)/(calls N)/g' "$WORK/diff.pg" | sort); then
    ok "diff of two pushed plans: the originals' text"
else
    not_ok "diff of two pushed plans differs (< SQLite, > PostgreSQL; run and call ids aside)"
    diff <(sed -E 's/run [0-9]+/run N/g; s/\(calls? [0-9]+(, [0-9]+)?\)/(calls N)/g' "$WORK/diff.sqlite" | sort) \
        <(sed -E 's/run [0-9]+/run N/g; s/\(calls? [0-9]+(, [0-9]+)?\)/(calls N)/g' "$WORK/diff.pg" | sort) | head -10
fi

# Secrets keep the hashes they were recorded with: the local key's, which
# runs.key_id names; the run recorded straight into the shared record
# hashes the same secret with the shared key.
secret_sqlite() { # RUN: the distinct hashes of tftest6_thing's secret
    sqlite3 "$db" "SELECT DISTINCT response_json ->> '\$.new_state.secret.\$sensitive' FROM calls
                   WHERE run_id = $1 AND rpc = 'ApplyResourceChange' AND type_name = 'tftest6_thing'"
}
secret_pg() { # RUN
    pg_psql "SELECT DISTINCT tftap_json(response_json) #>> '{new_state,secret,\$sensitive}' FROM calls
             WHERE run_id = $1 AND rpc = 'ApplyResourceChange' AND type_name = 'tftest6_thing'"
}
local_h=$(secret_sqlite 4)
pushed_h=$(secret_pg 5)
direct_h=$(secret_pg 1)
check "secret: one hash for the two equal secrets, in each record" \
    test "$(echo "$local_h" | wc -l) $(echo "$pushed_h" | wc -l) $(echo "$direct_h" | wc -l)" = "1 1 1"
check "secret: a redacted hash" sh -c "echo '$local_h' | grep -qE '^hmac-sha256:[0-9a-f]{64}$'"
check_eq "secret: the pushed run keeps the local record's hash" "$pushed_h" "$local_h"
check "secret: the run recorded straight into PostgreSQL hashes it with the shared key" \
    test "$direct_h" != "$pushed_h"
local_key_id=$(sqlite3 "$db" "SELECT hex(key) FROM secret_key" | xxd -r -p | sha256sum | cut -c1-16)
check_eq "key_id: the pushed runs name the local key, the direct run none" \
    "$(pg_psql "SELECT id || '=' || coalesce(key_id, 'NULL') FROM runs WHERE id <= 5 ORDER BY id" | tr '\n' ' ')" \
    "1=NULL 2=$local_key_id 3=$local_key_id 4=$local_key_id 5=$local_key_id "
check "push says the pushed run keeps its own key" grep -qx '1 pushed run keeps the redaction key it was recorded with (runs.key_id): $sensitive hashes compare only with runs of that key' "$WORK/push1.out"

# A bundle: pushed once, then already there; its original (the same run,
# the same uuid) too.
"$TFTAP" push "$WORK/b.tftap" --to "$URI" >"$WORK/bundle.out" 2>&1
check_eq "push BUNDLE: exit 0" "$?" 0
check "push BUNDLE: pushed as run 6" grep -q "pushed as run 6 " "$WORK/bundle.out"
"$TFTAP" show "$WORK/b.tftap" --all | sed -E 's/call [0-9]+/call N/g; s/^Run [0-9]+/Run N/' >"$WORK/show.bundle"
"$TFTAP" show 6 --db "$URI" --all | sed -E 's/call [0-9]+/call N/g; s/^Run [0-9]+/Run N/' >"$WORK/show.bundle.pg"
if [ -s "$WORK/show.bundle.pg" ] && cmp -s "$WORK/show.bundle" "$WORK/show.bundle.pg"; then
    ok "push BUNDLE: show reads the pushed run as the bundle"
else
    not_ok "push BUNDLE: show differs (< bundle, > PostgreSQL)"
    diff "$WORK/show.bundle" "$WORK/show.bundle.pg" | head -10
fi
check_eq "push BUNDLE: calls as in the bundle" "$(calls_norm "$URI" 6)" "$(calls_norm "$WORK/b.tftap" 1)"
check_eq "push BUNDLE: key_id is the bundle's (a key nobody holds)" \
    "$(pg_psql "SELECT key_id FROM runs WHERE id = 6")" "$(sqlite3 "$WORK/b.tftap" "SELECT key_id FROM runs")"
check "push BUNDLE: the bundle names its key" test -n "$(sqlite3 "$WORK/b.tftap" "SELECT key_id FROM runs")"
before=$(counts)
"$TFTAP" push "$WORK/b.tftap:1" "$db2:1" --to "$URI" >"$WORK/bundle2.out" 2>&1
check_eq "push BUNDLE:1 and its original again: exit 0" "$?" 0
check_eq "push BUNDLE:1 and its original again: both already there" \
    "$(grep -c "already there as run 6 " "$WORK/bundle2.out")" 2
check_eq "push BUNDLE again: no row added" "$(counts)" "$before"

# A run still recording (no end time) is skipped by all, pushed when named.
sqlite3 "$db" "INSERT INTO runs (command, args, started_us) VALUES ('tofu', '[\"plan\"]', 1)"
"$TFTAP" push all --db "$db" --to "$URI" >"$WORK/open.out" 2>"$WORK/open.err"
check_eq "push all: a run still recording is skipped (exit 0)" "$?" 0
check_eq "push all: ...with one note" "$(cat "$WORK/open.err")" \
    "tftap: run 5 is still recording (no end time): skipped (name it to push it as it is)"
check_eq "push all: ...counted" "$(tail -1 "$WORK/open.out")" \
    "pushed 0 runs (0 calls), 4 already there, 1 still recording skipped"
"$TFTAP" push 5 --db "$db" --to "$URI" >"$WORK/open5.out" 2>&1
check "push 5: a run named is pushed as it is" grep -q "^run 5 of .*: pushed as run 7 " "$WORK/open5.out"
check_eq "push 5: no end time" "$(pg_psql "SELECT ended_us IS NULL FROM runs WHERE id = 7")" t

# A run the server refuses halfway leaves nothing: one transaction per run.
sqlite3 "$db2" "UPDATE calls SET status_message = 'boom' WHERE id = (SELECT max(id) FROM calls)"
pg_psql "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS
         \$\$BEGIN IF NEW.status_message = 'boom' THEN RAISE EXCEPTION 'refused by the test'; END IF;
         RETURN NEW; END\$\$;
         CREATE TRIGGER boom BEFORE INSERT ON calls FOR EACH ROW EXECUTE FUNCTION boom()" >/dev/null
sqlite3 "$db2" "UPDATE runs SET uuid = '00000000-0000-4000-8000-000000000001'"
before=$(counts | cut -d' ' -f1-6)
"$TFTAP" push 1 --db "$db2" --to "$URI" >"$WORK/boom.out" 2>"$WORK/boom.err"
check_eq "refused halfway: exit 1" "$?" 1
check_eq "refused halfway: one error line" "$(wc -l <"$WORK/boom.err")" 1
check "refused halfway: it says the server's reason" grep -q "^tftap: cannot push run 1 of .*: refused by the test" "$WORK/boom.err"
check_eq "refused halfway: no row of it anywhere" "$(counts | cut -d' ' -f1-6)" "$before"
pg_psql "DROP TRIGGER boom ON calls" >/dev/null
"$TFTAP" push 1 --db "$db2" --to "$URI" >/dev/null 2>&1
check_eq "refused, then allowed: pushed whole" \
    "$(pg_psql "SELECT count(*) FROM calls c JOIN runs r ON r.id = c.run_id
                WHERE r.uuid = '00000000-0000-4000-8000-000000000001'")" \
    "$(sqlite3 "$db2" "SELECT count(*) FROM calls")"

# Progress on a terminal: one line rewritten in place, cleared at the end.
if command -v script >/dev/null; then
    sqlite3 "$db2" "UPDATE runs SET uuid = '00000000-0000-4000-8000-000000000002'"
    script -qec "'$TFTAP' push 1 --db '$db2' --to '$URI' >'$WORK/tty.out'" /dev/null >"$WORK/tty.log" 2>&1
    n=$(sqlite3 "$db2" "SELECT count(*) FROM calls")
    check "progress on a terminal: a line rewritten in place" \
        grep -qaF $'\r\033[Kpushing run 1 (1/1): '"$n/$n calls"$'\r\033[K' "$WORK/tty.log"
    check "progress on a terminal: the lines on stdout are not in it" \
        grep -q "pushed 1 run" "$WORK/tty.out"
else
    not_ok "script(1) is needed for the terminal check (bsdutils)"
fi

# A uuid that is not one (a file edited by hand): refused.
sqlite3 "$db2" "UPDATE runs SET uuid = 'x'"
"$TFTAP" push 1 --db "$db2" --to "$URI" >/dev/null 2>"$WORK/baduuid.err"
check_eq "a run whose uuid is not a UUID: exit 1, one line" "$? $(cat "$WORK/baduuid.err")" \
    "1 tftap: cannot push run 1 of $db2 into $URI: database error: the run's uuid is not a UUID"
check "runs --json: each run's uuid" \
    test "$("$TFTAP" runs --db "$db" --json | jq -r '.[0].uuid')" = "$(pg_psql "SELECT uuid FROM runs WHERE id = 2")"

# Many calls: inserted many to a statement (and the calls with raw
# messages one by one in between), with NULLs in every nullable column
# here and there; read back as the original.
db3=$WORK/many.db
"$TFTAP" run --db "$db3" -- true >/dev/null 2>&1 || not_ok "a run of true recorded"
sqlite3 "$db3" "INSERT INTO processes (run_id, provider, version, protocol, started_us) VALUES (1, 'x/y', '1.0', 6, 1);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
INSERT INTO calls (run_id, process_id, call_seq, method, rpc, stream, started_us, ended_us, status_code,
    status_message, request_bytes, type_name, request_json, response_json, decode_error)
SELECT 1, 1, i, '/tfplugin6.Provider/PlanResourceChange', 'PlanResourceChange', i % 2, 1000 + i,
    CASE WHEN i % 7 = 0 THEN NULL ELSE 2000 + i END, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 END,
    CASE WHEN i % 3 = 0 THEN 'm' || i END, i, CASE WHEN i % 11 <> 0 THEN 't_' || i END,
    CASE WHEN i % 13 <> 0 THEN '{\"config\":{\"n\":' || i || '}}' END,
    CASE WHEN i % 17 <> 0 THEN '{\"planned_state\":{\"n\":' || i || '}}' END,
    CASE WHEN i % 19 = 0 THEN 'bad ' || i END FROM n;
INSERT INTO call_addresses (call_id, address, address_note)
SELECT id, CASE WHEN call_seq % 4 = 0 THEN 't_' || call_seq || '.x' END,
    CASE WHEN call_seq % 4 IN (0, 1) THEN 'note ' || call_seq END FROM calls
WHERE process_id = 1 AND call_seq % 4 IN (0, 1);
INSERT INTO messages (call_id, seq, direction, t_us, raw)
SELECT id, 1, 'request', started_us, randomblob(1 + call_seq) FROM calls WHERE call_seq % 50 = 0;"
"$TFTAP" push 1 --db "$db3" --to "$URI" --json >"$WORK/many.json" 2>&1 || not_ok "push of 300 calls"
m=$(jq '.runs[0].to_run' "$WORK/many.json")
check_eq "300 calls: pushed, 6 with raw messages" "$(jq -c '.runs[0] | [.calls, .messages]' "$WORK/many.json")" "[300,6]"
check_eq "300 calls: read back as the original" "$(calls_norm "$URI" "$m" | md5sum)" "$(calls_norm "$db3" 1 | md5sum)"
check_eq "300 calls: the raw messages' bytes" \
    "$(pg_psql "SELECT string_agg(c.call_seq || ':' || encode(m.raw, 'hex'), ' ' ORDER BY c.call_seq)
                FROM messages m JOIN calls c ON c.id = m.call_id WHERE c.run_id = $m")" \
    "$(sqlite3 "$db3" "SELECT group_concat(s, ' ') FROM (SELECT c.call_seq || ':' || lower(hex(m.raw)) AS s
                       FROM messages m JOIN calls c ON c.id = m.call_id ORDER BY c.call_seq)")"
check_eq "300 calls: their addresses and notes" \
    "$(pg_psql "SELECT string_agg(c.call_seq || '=' || coalesce(a.address, '-') || '/' || a.address_note, ' '
                ORDER BY c.call_seq) FROM call_addresses a JOIN calls c ON c.id = a.call_id WHERE c.run_id = $m")" \
    "$(sqlite3 "$db3" "SELECT group_concat(s, ' ') FROM (SELECT c.call_seq || '=' || coalesce(a.address, '-') || '/'
                       || a.address_note AS s FROM call_addresses a JOIN calls c ON c.id = a.call_id ORDER BY c.call_seq)")"
check_eq "300 calls: in the same order" \
    "$(pg_psql "SELECT string_agg(call_seq::text, ' ' ORDER BY id) FROM calls WHERE run_id = $m" | md5sum)" \
    "$(sqlite3 "$db3" "SELECT group_concat(call_seq, ' ') FROM (SELECT call_seq FROM calls ORDER BY id)" | md5sum)"

# A shared record of version 5 (before runs.uuid) migrated by the next
# writer: each run gets a uuid of its own, and push goes on from there.
pg_psql "CREATE DATABASE v5" >/dev/null
U5=$(pg_uri v5)
psql5() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$U5" -c "$1"; }
"$TFTAP" push 1 --db "$db" --to "$U5" >/dev/null 2>&1 || not_ok "push into a new database"
# Version 10 undone first (run_files), then version 9 (processes.start_error; the views follow), then
# version 8: addresses back into calls, under views that read them there
# (the migration replaces them).
psql5 "DROP TABLE run_files; ALTER TABLE processes DROP COLUMN start_error;
       ALTER TABLE runs DROP COLUMN values_kept, DROP COLUMN redactions; DROP TABLE run_secrets;
       DROP INDEX runs_parent; ALTER TABLE runs DROP COLUMN parent_id, DROP COLUMN test_name,
         DROP COLUMN test_step;
       DROP VIEW v_calls; DROP VIEW v_resource_changes; DROP VIEW v_diagnostics;
       ALTER TABLE calls ADD COLUMN address text, ADD COLUMN address_note text;
       UPDATE calls c SET address = a.address, address_note = a.address_note FROM call_addresses a
           WHERE a.call_id = c.id;
       DROP TABLE call_addresses;
       CREATE VIEW v_calls AS SELECT c.id AS call_id, c.address FROM calls c;
       CREATE VIEW v_resource_changes AS SELECT c.id AS call_id, c.address, c.address_note FROM calls c;
       CREATE VIEW v_diagnostics AS SELECT c.id AS call_id, c.address FROM calls c;
       DROP INDEX processes_uuid; ALTER TABLE processes DROP COLUMN uuid;
       DROP INDEX gaps_seq; ALTER TABLE gaps DROP COLUMN seq;
       DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid, DROP COLUMN key_id;
       UPDATE tftap_meta SET value = '5' WHERE key = 'schema_version';
       INSERT INTO runs (command, started_us) VALUES ('a', 1), ('b', 2)" >/dev/null
"$TFTAP" push 1 2 --db "$db" --to "$U5" >"$WORK/v5.out" 2>&1
check_eq "version 5 record: migrated by push, which adds its runs" "$? $(tail -1 "$WORK/v5.out")" \
    "0 pushed 2 runs ($(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id <= 2") calls), 0 already there"
check_eq "version 5 record: now the current version (10), every run a distinct uuid" \
    "$(psql5 "SELECT (SELECT value FROM tftap_meta WHERE key = 'schema_version') || ' ' || count(DISTINCT uuid)
              || ' ' || count(*) FILTER (WHERE uuid ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
              FROM runs")" "10 5 5"
check_eq "version 5 record: the addresses it had, through the views" \
    "$(psql5 "SELECT string_agg(address, ' ' ORDER BY call_id) FROM v_resource_changes WHERE run_id = 1")" \
    "$(sqlite3 "$db" "SELECT group_concat(address, ' ') FROM (SELECT address FROM v_resource_changes WHERE run_id = 1 ORDER BY call_id)")"
check "version 5 record: run 1 had addresses" \
    test -n "$(sqlite3 "$db" "SELECT group_concat(address, ' ') FROM v_resource_changes WHERE run_id = 1")"

# Two pushes of the same runs at once (two recorders of a wrapped command
# each copying its spool, say): each run once, and no id used up by the
# one that found the other's run (PostgreSQL's INSERT that conflicts still
# takes a number; the copies take turns on the run's uuid).
db3=$WORK/three.db
for i in 1 2 3; do record "$w" "$db3" -- tofu plan -input=false -no-color; done
before=$(pg_psql "SELECT coalesce(max(id), 0) FROM runs")
"$TFTAP" push all --db "$db3" --to "$URI" >"$WORK/twice1.out" 2>&1 &
p1=$!
"$TFTAP" push all --db "$db3" --to "$URI" >"$WORK/twice2.out" 2>&1
c2=$?
wait "$p1"
check_eq "two pushes at once: both exit 0" "$? $c2" "0 0"
check_eq "two pushes at once: each run once, numbered on without a gap" \
    "$(pg_psql "SELECT count(*) || ' ' || count(DISTINCT uuid) || ' ' || (max(id) - $before)
        FROM runs WHERE id > $before")" "3 3 3"

# Errors: one line, exit 2.
"$TFTAP" push 1 --db "$db" --to "postgresql:///tftap?host=$WORK/nothere" >"$WORK/gone.out" 2>"$WORK/gone.err"
check_eq "no server: exit 2" "$?" 2
check_eq "no server: one error line" "$(wc -l <"$WORK/gone.err")" 1
check "no server: it says it cannot connect" grep -q "^tftap: cannot open postgresql:///tftap?host=.*nothere" "$WORK/gone.err"
"$TFTAP" push 1 --db "$db" >/dev/null 2>"$WORK/noto.err"
check_eq "no --to: exit 2" "$?" 2
check_eq "no --to: one line" "$(wc -l <"$WORK/noto.err")" 1
"$TFTAP" push 99 --db "$db" --to "$URI" >/dev/null 2>"$WORK/norun.err"
check_eq "no such run: exit 1, one line" "$? $(wc -l <"$WORK/norun.err")" "1 1"
"$TFTAP" push all 1 --db "$db" --to="$URI" >/dev/null 2>&1
check_eq "all with a RUN: usage error" "$?" 2
finish
