#!/bin/sh
# tftap runs/calls/show/export against a database the recorder test wrote.
set -u
: "${top_builddir:=.}"
TFTAP="$top_builddir/tftap"
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-cli-XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
skipped=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
check() { # check DESCRIPTION COMMAND...
    desc=$1; shift
    if "$@"; then ok; else fail "$desc"; fi
}

TFTAP_TEST_KEEP=1 TMPDIR="$work" "$top_builddir/tests/recorder/test_recorder" >"$work/rec.log" 2>&1 ||
    { echo "test_recorder failed"; cat "$work/rec.log"; exit 1; }
db=$(ls "$work"/tftap-test-rec-*/rec/tftap.db)
export TFTAP_DB="$db"

"$TFTAP" runs >"$work/runs.txt"; check "runs exits 0" [ $? -eq 0 ]
check "runs lists 14 runs" [ "$(grep -c '^[0-9]' "$work/runs.txt")" -eq 14 ]
"$TFTAP" runs --json >"$work/runs.json"
check "runs --json is a JSON array of 14" [ "$(jq length "$work/runs.json")" = 14 ]
# Run 5 is test_show_plan's (a replacement and a create), run 6 an apply,
# run 7 a replacement planned in two calls, runs 8 and 9 a process closing
# while another commits the schema, run 10 plans of instances differing by
# a null, run 11 three plans of identical instances (count = 3), runs 12
# and 13 a test's run blocks and applies answered otherwise, run 14 two
# processes at once with creates answered otherwise.
"$TFTAP" show 6 >"$work/apply.txt"
check "show of an apply run" grep -q 'has been created  \[ApplyResourceChange\]' "$work/apply.txt"
"$TFTAP" show 7 >"$work/seven.txt"
check "show 7 is a replacement" grep -q '^-/+ resource "test_thing"' "$work/seven.txt"
"$TFTAP" show 11 >"$work/last.txt"
check "show 11 names identical instances" \
    grep -q '# test_thing.web\[2\] (identical to web\[0\], web\[1\]) will be created' "$work/last.txt"
"$TFTAP" show 11 --json >"$work/last.json"
check "show --json keeps the note of a paired instance" \
    [ "$(jq -r '[.changes[] | select(.address == "test_thing.web[1]") | .address_note][0]' "$work/last.json")" = "identical to web[0], web[2]" ]

"$TFTAP" calls 5 --method PlanResourceChange >"$work/calls.txt"
check "calls --method keeps plan calls" [ "$(grep -c PlanResourceChange "$work/calls.txt")" -eq 2 ]
check "calls shows the matched address" grep -q 'test_thing.web\[0\]' "$work/calls.txt"
"$TFTAP" calls 5 --type test_thing --json >"$work/calls.json"
check "calls --json decodes requests" \
    [ "$(jq -r '.[0].request_json.config.name' "$work/calls.json")" = beta ]

"$TFTAP" show 5 >"$work/show.txt"
check "show renders a replacement" grep -q '^-/+ resource "test_thing" "web" {' "$work/show.txt"
check "show marks forcing attributes" grep -q '~ name     = "alpha" -> "beta" # forces replacement' "$work/show.txt"
check "show says where it could not match" grep -q 'not matched to an address' "$work/show.txt"
check "no colour when not a terminal" [ "$(grep -c "$(printf '\033')" "$work/show.txt")" -eq 0 ]
"$TFTAP" show 5 test_thing.web >"$work/show1.txt"
check "show ADDRESS filters" [ "$(grep -c 'resource "test_thing"' "$work/show1.txt")" -eq 1 ]
"$TFTAP" show 5 --json >"$work/show.json"
check "show --json lists changes with actions" \
    [ "$(jq -r '[.changes[].action] | join(",")' "$work/show.json")" = "replace,create" ]

# Colour only on a terminal, and NO_COLOR turns it off there too.
if command -v script >/dev/null 2>&1; then
    script -qec "env -u NO_COLOR TERM=xterm '$TFTAP' show 5" /dev/null >"$work/tty.txt" 2>&1
    check "colour on a terminal" grep -q "$(printf '\033')\[" "$work/tty.txt"
    script -qec "env NO_COLOR=1 TERM=xterm '$TFTAP' show 5" /dev/null >"$work/tty2.txt" 2>&1
    check "NO_COLOR respected" [ "$(grep -c "$(printf '\033')\[3" "$work/tty2.txt")" -eq 0 ]
else
    skipped=$((skipped + 1))
    echo "SKIPPED: colour on a terminal: no script(1) to make one"
fi

"$TFTAP" export 5 --format jsonl >"$work/export.jsonl"
check "export exits 0" [ $? -eq 0 ]
check "export lines are JSON objects" jq -e -s 'length > 4 and all(.[]; .kind)' "$work/export.jsonl" >/dev/null
check "export has the run, process and calls" \
    [ "$(jq -r -s '[.[].kind] | unique | join(",")' "$work/export.jsonl")" = "call,process,run" ]
check "export: a call's keys are calls --json's, in order" \
    [ "$(jq -r -s '[.[] | select(.kind == "call")][0] | del(.kind) | keys_unsorted | join(",")' "$work/export.jsonl")" = \
      "$("$TFTAP" calls 5 --json | jq -r '.[0] | keys_unsorted | join(",")')" ]
check "export: the run line carries uuid and key_id" \
    [ "$(jq -r -s '.[] | select(.kind == "run") | [has("uuid"), has("key_id"), (.uuid | length)] | map(tostring) | join(",")' "$work/export.jsonl")" = "true,true,36" ]

"$TFTAP" calls 999 2>"$work/err.txt"; rc=$?
check "unknown run exits 1" [ $rc -eq 1 ]
check "one error line" [ "$(wc -l <"$work/err.txt")" -eq 1 ]
check "error prefix" grep -q '^tftap: no run 999' "$work/err.txt"
"$TFTAP" show 2>"$work/err.txt"; rc=$?
check "missing RUN is usage (2)" [ $rc -eq 2 ]
check "usage error is one line" [ "$(wc -l <"$work/err.txt")" -eq 1 ]
"$TFTAP" export 5 --format csv 2>/dev/null; check "bad format is usage" [ $? -eq 2 ]
"$TFTAP" runs --db "$work/none/x.db" 2>"$work/err.txt"; rc=$?
check "missing database exits 1" [ $rc -eq 1 ]
check "missing database is not created" [ ! -e "$work/none" ]
"$TFTAP" runs --help >/dev/null; check "--help exits 0" [ $? -eq 0 ]

# Failed calls that are no resource change, in a copy of the database: one
# answered OK with an error diagnostic, one with a failing status, one never
# answered in a run that ended; and go-plugin's Shutdown cut at exit, which
# is no failure. show tells them first, calls --failed lists them.
if command -v sqlite3 >/dev/null; then
    cp "$db" "$work/f.db"
    sqlite3 "$work/f.db" "
      INSERT INTO runs (id, command, started_us, ended_us, exit_code) VALUES (100, 'tofu', 1, 9, 1);
      INSERT INTO processes (id, run_id, provider, started_us) VALUES (100, 100, 'example/p', 1);
      INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, ended_us,
        status_code, response_json) VALUES
        (1001, 100, 100, 1, '/tfplugin6.Provider/ConfigureProvider', 'ConfigureProvider', 2, 3, 0,
         '{\"diagnostics\":[{\"severity\":\"ERROR\",\"summary\":\"bad token\",\"detail\":\"it expired\",\"attribute\":{\"path\":\".token\"}}]}'),
        (1002, 100, 100, 2, '/tfplugin6.Provider/ValidateResourceConfig', 'ValidateResourceConfig', 4, 5, 13, NULL),
        (1004, 100, 100, 4, '/plugin.GRPCController/Shutdown', 'Shutdown', 7, 8, 14, NULL);
      UPDATE calls SET status_message = 'boom' WHERE id = 1002;
      INSERT INTO calls (id, run_id, process_id, call_seq, method, rpc, started_us, type_name)
        VALUES (1003, 100, 100, 3, '/tfplugin6.Provider/ReadDataSource', 'ReadDataSource', 6, 'p_x');"
    "$TFTAP" show 100 --db "$work/f.db" >"$work/f.txt"
    check "show leads with the verdict" [ "$(head -1 "$work/f.txt")" = "Run 100 failed: the command exited 1; 3 calls failed." ]
    check "a failed ConfigureProvider with its diagnostic" \
        grep -q '^  # ConfigureProvider (example/p) failed: error diagnostics  \[call 1001\]$' "$work/f.txt"
    check "its summary, path and detail" grep -q '^  Error: bad token (at .token)$' "$work/f.txt"
    check "a failing status by name" \
        grep -q '^  # ValidateResourceConfig (example/p) failed: INTERNAL (boom)  \[call 1002\]$' "$work/f.txt"
    check "a data source read never answered" \
        grep -q '^  # p_x (call 1003, address unknown) could not be read  \[ReadDataSource\]$' "$work/f.txt"
    check "says it was never answered" grep -q '^  # no answer: the call was still in flight' "$work/f.txt"
    check "and shows no value it never got" sh -c "! grep -q '+ null' '$work/f.txt'"
    check "Shutdown is no failure" sh -c "! grep -q Shutdown '$work/f.txt'"
    check "the failures are counted in the summary" grep -q '^3 calls failed (shown first); 0 changes' "$work/f.txt"
    "$TFTAP" show 100 --db "$work/f.db" --json >"$work/f.json"
    check "--json lists them as failures" \
        [ "$(jq -c '[.failed, [.failures[] | [.call_id, .status_name, .no_answer, (.diagnostics | length)]]]' "$work/f.json")" = \
          '[3,[[1003,null,true,0],[1001,"OK",false,1],[1002,"INTERNAL",false,0]]]' ]
    check "--json keeps the diagnostic's path" \
        [ "$(jq -r '.failures[] | select(.call_id == 1001) | .diagnostics[0].attribute.path' "$work/f.json")" = .token ]
    check "calls --failed lists the three" \
        [ "$("$TFTAP" calls 100 --db "$work/f.db" --failed | awk '/^[0-9]/ { print $1 ":" $5 }' | tr '\n' ' ')" = \
          "1001:FAILED 1002:INTERNAL 1003:no " ]
    "$TFTAP" calls 100 --db "$work/f.db" --all >"$work/f.calls"
    check "calls shows Shutdown as an expected close" \
        grep -q '^1004 .*Shutdown .* closed .*(expected close: UNAVAILABLE)$' "$work/f.calls"
    # A bundle keys a secret recorded in clear as the source database's
    # recorder keyed its redacted copies, also when the database is named
    # as a FILE:RUN operand (opened read only): the same secret, once in
    # clear (--record-sensitive) and once redacted, hashes equal inside the
    # bundle either way.
    raw=$(ls "$work"/tftap-test-rec-*/raw/tftap.db)
    cp "$raw" "$work/mixed.db"
    key=$(sqlite3 "$work/mixed.db" "SELECT hex(key) FROM secret_key")
    clear=$(sqlite3 "$work/mixed.db" "SELECT request_json ->> '\$.config.password' FROM calls WHERE rpc = 'PlanResourceChange'")
    mac=$(printf '"%s"' "$clear" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" | awk '{ print $NF }')
    sqlite3 "$work/mixed.db" "INSERT INTO calls (run_id, process_id, call_seq, method, rpc, started_us,
        ended_us, status_code, type_name, request_json, response_json)
      SELECT run_id, process_id, 3, method, rpc, started_us + 1, ended_us + 1, status_code, type_name,
        json_set(request_json, '\$.config.password', json_object('\$sensitive', 'hmac-sha256:$mac')),
        response_json FROM calls WHERE rpc = 'PlanResourceChange'"
    for how in "--db $work/mixed.db 1" "$work/mixed.db:1"; do
        rm -f "$work/mixed.tftap"
        # shellcheck disable=SC2086 # two words or one
        "$TFTAP" bundle $how -o "$work/mixed.tftap" >/dev/null 2>"$work/mixed.err"
        check "bundle $how: exits 0" [ $? -eq 0 ]
        check "bundle $how: the clear and the redacted copy of a secret hash equal" \
            [ "$(sqlite3 "$work/mixed.tftap" "SELECT count(DISTINCT request_json ->> '\$.config.password.\$sensitive')
                  || ' ' || count(*) FROM calls WHERE rpc = 'PlanResourceChange'")" = "1 2" ]
        check "bundle $how: no secret in clear" [ "$(grep -a -c -F "$clear" "$work/mixed.tftap")" = 0 ]
    done
    # A bundle is never recorded into: tftap run --db BUNDLE runs the
    # command unrecorded, leaving the file as it was (no run, no key, no WAL).
    mkdir -p "$work/bin" "$work/empty"
    printf '#!/bin/sh\nexit 0\n' >"$work/bin/tofu"
    chmod +x "$work/bin/tofu"
    cp "$work/mixed.tftap" "$work/evidence.tftap"
    (cd "$work/empty" && PATH="$work/bin:$PATH" "$TFTAP" run --db "$work/evidence.tftap" -- tofu version \
        >/dev/null 2>"$work/evidence.err")
    check "run --db BUNDLE: the command's exit code" [ $? -eq 0 ]
    check "run --db BUNDLE: one line, unrecorded" \
        [ "$(grep -c 'cannot record into .*evidence.tftap .*running the command unrecorded' "$work/evidence.err")" = 1 ]
    check "run --db BUNDLE: the bundle is unchanged" cmp -s "$work/mixed.tftap" "$work/evidence.tftap"
    check "run --db BUNDLE: no -wal beside it" [ ! -e "$work/evidence.tftap-wal" ]
else
    fail "sqlite3 is needed (scripts/install-deps)"
fi

echo "cli.sh: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
