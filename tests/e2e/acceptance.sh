#!/usr/bin/env bash
# `tftap run -- go test`: a provider's acceptance tests (tests/peers/tftest's
# acc_test.go, terraform-plugin-testing, compiled by scripts/build-peers),
# run with the project's OpenTofu as TF_ACC_TERRAFORM_PATH. Every CLI
# command of every test step is recorded as a run under the suite's run,
# named by test and step, with the calls to the in-process provider
# (reattached) decoded; the tests pass as without tftap; the steps tftap
# names are the harness's own (its log says which it started).
. "$(dirname "$0")/lib.sh"
need_peers
ACC=$PEERS/bin/tftest6-acc-v1.test
ACC2=$PEERS/bin/tftest6-acc-v2.test
SDK=$PEERS/bin/tftestsdk-acc.test
for f in "$ACC" "$ACC2" "$SDK"; do
    if ! [ -x "$f" ]; then
        echo "$e2e_name: $f missing (run scripts/build-peers)"
        echo "$e2e_name: 0 passed, 1 failed"
        exit 1
    fi
done
db=$WORK/tftap.db
export TMPDIR=$WORK/tmp TF_ACC=1
unset TF_LOG_PATH_MASK TF_ACC_LOG_PATH TF_ACC_LOG TF_ACC_TERRAFORM_VERSION

# The user's CLI, as the harness runs it: each command logged with the test
# the harness names in TF_LOG_PATH (the user's own mask, below; "none" for
# the commands tftap runs itself around a step, state pull and show -json,
# and the harness's version questions) and the run tftap records it in.
cat >"$WORK/cli" <<EOF
#!/bin/sh
printf '%s %s %s\n' "\$(basename "\${TF_LOG_PATH:-none}" .log)" "\$*" "\${TFTAP_RUN_ID:-0}" >>"$WORK/cli.log"
exec "$TOFU" "\$@"
EOF
chmod +x "$WORK/cli"
mkdir -p "$WORK/logs" "$WORK/direct-logs"

# ---- without tftap -----------------------------------------------------
TF_ACC_TERRAFORM_PATH=$TOFU "$ACC" -test.v -test.count=1 >"$WORK/direct.out" 2>&1
direct=$?
check_eq "the suite passes without tftap" "$direct" 0
[ "$direct" = 0 ] || tail -30 "$WORK/direct.out"

# ---- through tftap, with the user's own TF_LOG_PATH_MASK and TF_LOG -------
TF_ACC_TERRAFORM_PATH=$WORK/cli TF_LOG=DEBUG TF_LOG_PATH_MASK=$WORK/logs/%s.log \
    "$TFTAP" run --db "$db" -- "$ACC" -test.v -test.count=1 >"$WORK/acc.out" 2>"$WORK/acc.err"
code=$?
check_eq "through tftap the suite passes" "$code" 0
[ "$code" = 0 ] || { tail -30 "$WORK/acc.out"; cat "$WORK/acc.err"; }
check_eq "tftap says in one line which CLI the tests get, and where their steps go" \
    "$(cat "$WORK/acc.err")" \
    "tftap: note: '$(basename "$ACC")' is neither tofu nor terraform: the CLI commands of the acceptance tests it runs (with $WORK/cli) are recorded as step runs of run 1"
check_eq "the same tests passed" "$(grep -c '^--- PASS' "$WORK/acc.out")" \
    "$(grep -c '^--- PASS' "$WORK/direct.out")"
check_eq "three tests, run in parallel" "$(grep -c '^=== CONT' "$WORK/acc.out")" 3

suite=$(sqlite3 "$db" "SELECT id FROM runs WHERE parent_id IS NULL")
check_eq "one run for go test" "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE parent_id IS NULL")" 1
check_eq "the suite run has go test's exit code" \
    "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $suite")" 0

# Every CLI command the harness ran (its `version` questions aside) is a
# step run of the suite, in the same order per test.
grep -v '^none ' "$WORK/cli.log" >"$WORK/cli.steps"
check_eq "every CLI command of a step is a run under the suite" \
    "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE parent_id = $suite")" \
    "$(wc -l <"$WORK/cli.steps")"
check "the harness ran commands" test -s "$WORK/cli.steps"
check_eq "each of them is the one command of its step run" \
    "$(awk '{ print $NF }' "$WORK/cli.steps" | sort -n | uniq | tr '\n' ' ')" \
    "$(sqlite3 "$db" "SELECT id FROM runs WHERE parent_id = $suite ORDER BY id" | tr '\n' ' ')"
for t in TestAccServer_lifecycle TestAccPet_length TestAccThing_expectError; do
    check_eq "$t: the commands recorded are the harness's, in order" \
        "$(sqlite3 "$db" "SELECT json_extract(args, '\$[0]') FROM runs
            WHERE parent_id = $suite AND test_name = '$t' ORDER BY id" | tr '\n' ' ')" \
        "$(awk -v t="$t" '$1 == t { print $2 }' "$WORK/cli.steps" | tr '\n' ' ')"
    # The harness logs each step it starts (TF_LOG=DEBUG, per test).
    check_eq "$t: the steps named are the harness's" \
        "$(sqlite3 "$db" "SELECT DISTINCT test_step FROM runs
            WHERE parent_id = $suite AND test_name = '$t' ORDER BY test_step" | tr '\n' ' ')" \
        "$(grep -o 'Starting TestStep: .*' "$WORK/logs/$t.log" |
            grep -o 'test_step_number=[0-9]*' | cut -d= -f2 | sort -n | tr '\n' ' ')"
done
check_eq "no step run without its test and step" "$(sqlite3 "$db" "SELECT count(*) FROM runs
    WHERE parent_id = $suite AND (test_name IS NULL OR test_step IS NULL)")" 0
check_eq "the user's per-test logs are where the user asked" \
    "$(ls "$WORK/logs" | sort | tr '\n' ' ')" \
    "TestAccPet_length.log TestAccServer_lifecycle.log TestAccThing_expectError.log "

# The calls: the provider under test, served in the test process, decoded.
q() { sqlite3 "$db" "SELECT $1 FROM v_calls c JOIN runs r ON r.id = c.run_id
    WHERE r.parent_id = $suite AND $2"; }
check "the reattached provider's calls are recorded" \
    test "$(q 'count(*)' "c.provider = 'registry.opentofu.org/tftap/tftest6'")" -gt 50
check_eq "TestAccServer_lifecycle step 1 applies the server, decoded" \
    "$(q "json_extract(c.request_json, '\$.planned_state.name')" \
        "r.test_name = 'TestAccServer_lifecycle' AND r.test_step = 1 AND c.rpc = 'ApplyResourceChange'")" \
    alpha
check_eq "step 2 changes its zone in place" \
    "$(q "json_extract(c.response_json, '\$.new_state.zone')" \
        "r.test_name = 'TestAccServer_lifecycle' AND r.test_step = 2 AND c.rpc = 'ApplyResourceChange'
         AND json_extract(c.request_json, '\$.planned_state') IS NOT NULL")" z1
check_eq "step 3 imports it by its id" \
    "$(q "json_extract(c.response_json, '\$.imported_resources[0].state.id') =
          (SELECT json_extract(c2.response_json, '\$.new_state.id') FROM v_calls c2
           JOIN runs r2 ON r2.id = c2.run_id WHERE r2.parent_id = $suite
           AND r2.test_name = 'TestAccServer_lifecycle' AND r2.test_step = 1
           AND c2.rpc = 'ApplyResourceChange')" \
        "r.test_name = 'TestAccServer_lifecycle' AND r.test_step = 3 AND c.rpc = 'ImportResourceState'")" 1
check_eq "TestAccThing_expectError step 1: the plan fails with the provider's error" \
    "$(q "json_extract(c.response_json, '\$.diagnostics[0].summary')" \
        "r.test_name = 'TestAccThing_expectError' AND r.test_step = 1 AND c.rpc = 'PlanResourceChange'
         AND c.error_count > 0")" "tftest: planned failure"
check_eq "that step's plan run failed as tofu said (exit 1)" \
    "$(sqlite3 "$db" "SELECT group_concat(exit_code) FROM runs WHERE parent_id = $suite
        AND test_name = 'TestAccThing_expectError' AND test_step = 1
        AND json_extract(args, '\$[0]') = 'plan'")" 1
check_eq "no call failed elsewhere" "$(q 'count(*)' \
    "c.failed AND NOT (r.test_name = 'TestAccThing_expectError' AND r.test_step = 1)")" 0
check_eq "every planned and applied change tied to its resource address" \
    "$(q "count(*) - count(c.address)" "c.rpc IN ('PlanResourceChange', 'ApplyResourceChange')")" 0
check_eq "  the server's by its name" "$(q "group_concat(DISTINCT c.address)" \
    "c.type_name = 'tftest6_server' AND c.rpc = 'PlanResourceChange'")" tftest6_server.s
check_eq "nothing decoded wrongly" "$(q 'count(*)' "c.decode_error IS NOT NULL")" 0

# What a user reads.
"$TFTAP" runs --db "$db" --test 'TestAccPet_*' >"$WORK/runs.txt"
check_eq "runs --test: only that test's step runs" "$(tail -n +2 "$WORK/runs.txt" | wc -l)" \
    "$(awk '$1 == "TestAccPet_length"' "$WORK/cli.steps" | wc -l)"
check "runs names a step run by test, step and command" \
    grep -q " TestAccPet_length / step 2 / apply (run $suite): $WORK/cli apply" "$WORK/runs.txt"
"$TFTAP" runs --db "$db" --test Nope >/dev/null 2>"$WORK/nope.err"
check_eq "runs --test matching nothing is a usage error" "$?" 2
check_eq "runs --json: parent, test and step" "$("$TFTAP" runs --db "$db" --json |
    jq -r '[.[] | select(.test == "TestAccPet_length" and .step == 3)][0] | "\(.parent_id) \(.test) \(.step)"')" \
    "$suite TestAccPet_length 3"

"$TFTAP" show --db "$db" "$suite" --test TestAccThing_expectError >"$WORK/show.txt"
check_eq "show SUITE --test: each step run of the test under its name" \
    "$(grep -c '^== TestAccThing_expectError / step [12] / [a-z]* (run [0-9]*) ==$' "$WORK/show.txt")" \
    "$(awk '$1 == "TestAccThing_expectError"' "$WORK/cli.steps" | wc -l)"
check "  the failed step's plan shows the provider's error" \
    grep -q '^  Error: tftest: planned failure' "$WORK/show.txt"
check_eq "show --test --json: an array of the reports" \
    "$("$TFTAP" show --db "$db" "$suite" --test 'TestAccThing_*' --json | jq 'length')" \
    "$(awk '$1 == "TestAccThing_expectError"' "$WORK/cli.steps" | wc -l)"
check_eq "export SUITE --test: the test's step runs, named" \
    "$("$TFTAP" export --db "$db" "$suite" --test TestAccPet_length |
        jq -r 'select(.kind == "run") | "\(.parent_id) \(.test_name)"' | sort | uniq -c | awk '{ print $1, $2, $3 }')" \
    "$(awk '$1 == "TestAccPet_length"' "$WORK/cli.steps" | wc -l) $suite TestAccPet_length"
"$TFTAP" export --db "$db" "$suite" --test Nope >/dev/null 2>&1
check_eq "export --test matching nothing: a usage error" "$?" 2

# A step run bundled keeps its name; pushed with its suite, its suite too.
step=$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE parent_id = $suite AND test_name = 'TestAccPet_length'
    AND test_step = 2 AND json_extract(args, '\$[0]') = 'apply'")
"$TFTAP" bundle --db "$db" "$step" -o "$WORK/step.tftap" >/dev/null 2>&1
check_eq "a bundled step run keeps its test and step" \
    "$("$TFTAP" runs --db "$WORK/step.tftap" --json | jq -r '.[0] | "\(.test) \(.step) \(.parent_id)"')" \
    "TestAccPet_length 2 null"
"$TFTAP" push "$suite" --db "$db" --to "$WORK/pushed.db" >/dev/null 2>&1 &&
    "$TFTAP" push all --db "$db" --to "$WORK/pushed.db" >/dev/null 2>&1
check_eq "pushed after their suite, step runs stay under it, named" \
    "$("$TFTAP" runs --db "$WORK/pushed.db" --json | jq -r --arg u "$(sqlite3 "$db" "SELECT uuid FROM runs
        WHERE id = $suite")" '(.[] | select(.uuid == $u) | .id) as $p
        | [.[] | select(.parent_id == $p)] | "\(length) \(map(.test) | unique | join(","))"')" \
    "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE parent_id = $suite") TestAccPet_length,TestAccServer_lifecycle,TestAccThing_expectError"

# ---- tftap replay STEP: a recorded step run again, offline -------------
# The harness removed its working directories when the tests ended; each
# step run kept what its command found there.
check_eq "every step run kept its working directory's configuration" \
    "$(sqlite3 "$db" "SELECT count(*) FROM runs r JOIN run_files f ON f.run_id = r.id
        WHERE r.parent_id = $suite AND f.name = 'terraform_plugin_test.tf' AND f.content IS NOT NULL")" \
    "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE parent_id = $suite")"
check_eq "  nothing left out (no secret in these tests, no file over the limits; the CLI
    marks the schema's sensitive attributes in the state even when null, which holds none)" \
    "$(sqlite3 "$db" "SELECT count(*) FROM runs r JOIN run_files f ON f.run_id = r.id
        WHERE r.parent_id = $suite AND f.content IS NULL")" 0
step_run() { # TEST STEP COMMAND: the step run of the suite
    sqlite3 "$db" "SELECT id FROM runs WHERE parent_id = $suite AND test_name = '$1'
        AND test_step = $2 AND json_extract(args, '\$[0]') = '$3' ORDER BY id LIMIT 1"
}
recorded_exit() { sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $1"; }
rdb=$WORK/replay.db
# No provider but the recording: the test process that served the provider
# is gone, and the CLI gets no configuration that could install one.
: >"$WORK/empty.tfrc"
replay_offline() { TF_CLI_CONFIG_FILE=$WORK/empty.tfrc "$TFTAP" replay --db "$rdb" "$@"; }
apply1=$(step_run TestAccServer_lifecycle 1 apply)
# The recorded CLI is the user's script in front of tofu ($WORK/cli), not
# named like one: --cli names it (tftap runs no other program a record names).
replay_offline "$db:$apply1" --dir "$WORK/step-apply" --cli "$WORK/cli" \
    >"$WORK/r1.out" 2>"$WORK/r1.err"
check_eq "replay of an apply step: the recorded step's exit code" "$?" "$(recorded_exit "$apply1")"
check "  says which step it runs, where" grep -q \
    "^tftap: replaying run $apply1 (TestAccServer_lifecycle / step 1) in $WORK/step-apply: $WORK/cli apply .* tfplan$" \
    "$WORK/r1.err"
check "  prints the CLI's output" grep -q '^Apply complete! Resources: 1 added, 0 changed, 0 destroyed.$' \
    "$WORK/r1.out"
check_eq "  the state holds the recorded server, with its recorded id" \
    "$(jq -r '.resources[] | "\(.type).\(.name) \(.instances[0].attributes.id) \(.instances[0].attributes.size)"' \
        "$WORK/step-apply/terraform.tfstate")" \
    "$(sqlite3 "$db" "SELECT 'tftest6_server.s ' || json_extract(response_json, '\$.new_state.id') || ' ' ||
        json_extract(response_json, '\$.new_state.size') FROM calls WHERE run_id = $apply1
        AND rpc = 'ApplyResourceChange'")"
check_eq "  every call answered from the recording" \
    "$(sqlite3 "$rdb" "SELECT count(*) || ' ' || sum(failed) FROM v_calls WHERE run_id = 1
        AND rpc IN ('PlanResourceChange', 'ApplyResourceChange')")" "2 0"
apply2=$(step_run TestAccServer_lifecycle 2 apply)
replay_offline "$db:$apply2" --cli "$TOFU" >"$WORK/r2.out" 2>"$WORK/r2.err"
check_eq "replay of step 2's apply (from step 1's state): exit code as recorded" "$?" \
    "$(recorded_exit "$apply2")"
check "  changes the server in place" grep -q '^Apply complete! Resources: 0 added, 1 changed, 0 destroyed.$' \
    "$WORK/r2.out"
failed=$(step_run TestAccThing_expectError 1 plan)
replay_offline "$db:$failed" --cli "$TOFU" >"$WORK/r3.out" 2>"$WORK/r3.err"
check_eq "replay of the expected-error step: its plan fails as recorded (exit 1)" "$?" \
    "$(recorded_exit "$failed")"
check "  with the provider's error (on stderr, as the CLI writes errors)" grep -q \
    "^Error: $(sqlite3 "$db" "SELECT json_extract(response_json, '\$.diagnostics[0].summary') FROM v_calls
        WHERE run_id = $failed AND rpc = 'PlanResourceChange' AND error_count > 0")\$" "$WORK/r3.err"
check_eq "  no mismatch (the recording answered every call)" \
    "$(cat "$WORK/r3.out" "$WORK/r3.err" | grep -c 'no recorded call matches')" 0
# Every command of one test's steps (init aside: it asks the provider
# nothing) replays with its recorded exit code, no call unanswered.
bad=
for r in $(sqlite3 "$db" "SELECT id FROM runs WHERE parent_id = $suite AND test_name = 'TestAccPet_length'
        AND json_extract(args, '\$[0]') != 'init' ORDER BY id"); do
    replay_offline "$db:$r" --cli "$TOFU" >"$WORK/ra.out" 2>"$WORK/ra.err"
    got=$?
    [ "$got" = "$(recorded_exit "$r")" ] && ! grep -q 'no recorded call matches' "$WORK/ra.out" "$WORK/ra.err" ||
        bad="$bad $r:$got"
done
check_eq "every command of TestAccPet_length's steps replays as recorded" "$bad" ""
# A configuration changed after the fact: the digest says so; changed
# with its digest, the step asks what the recording never answered, and
# the replay says its exit code is not the step's.
plan1=$(step_run TestAccServer_lifecycle 1 plan)
cp "$db" "$WORK/tampered.db"
sqlite3 "$WORK/tampered.db" "SELECT writefile('$WORK/tampered.tf', content) FROM run_files
    WHERE run_id = $plan1 AND name = 'terraform_plugin_test.tf'" >/dev/null
sed -i 's/alpha/omega/' "$WORK/tampered.tf"
sqlite3 "$WORK/tampered.db" "UPDATE run_files SET content = readfile('$WORK/tampered.tf')
    WHERE run_id = $plan1 AND name = 'terraform_plugin_test.tf'"
replay_offline "$WORK/tampered.db:$plan1" --cli "$TOFU" >/dev/null 2>"$WORK/r8.err"
check_eq "a kept file that does not match its digest: exit 1" "$?" 1
check "  one line saying so" grep -q \
    "^tftap: the recorded file terraform_plugin_test.tf does not match its digest: the record is damaged$" \
    "$WORK/r8.err"
sqlite3 "$WORK/tampered.db" "UPDATE run_files SET sha256 = '$(sha256sum <"$WORK/tampered.tf" | cut -c1-64)'
    WHERE run_id = $plan1 AND name = 'terraform_plugin_test.tf'"
replay_offline "$WORK/tampered.db:$plan1" --cli "$TOFU" >"$WORK/r9.out" 2>"$WORK/r9.err"
check_eq "a changed configuration: the plan fails (exit 1)" "$?" 1
check "  on a call the recording never answered" grep -q 'no recorded call matches' "$WORK/r9.err"
check "  and tftap says the step's exit code was another" grep -q \
    "^tftap: note: exit code 1, the recorded step's was $(recorded_exit "$plan1")$" "$WORK/r9.err"
# A record names files: never one outside the directory.
sqlite3 "$WORK/tampered.db" "INSERT INTO run_files (run_id, name, size, sha256, content)
    VALUES ($plan1, '../escaped.tf', 1, '', x'41')"
replay_offline "$WORK/tampered.db:$plan1" --cli "$TOFU" --dir "$WORK/step-x" \
    >/dev/null 2>"$WORK/r10.err"
check "a recorded file named outside the directory: left out, said" grep -q \
    '^tftap: the recorded file "../escaped.tf" is not a file name: left out$' "$WORK/r10.err"
check "  nothing written outside" test ! -e "$WORK/escaped.tf"
replay_offline "$db:$apply1" --dir "$WORK/step-apply" --cli "$TOFU" >/dev/null 2>"$WORK/r4.err"
check_eq "--dir not empty: exit 1" "$?" 1
check "  one line saying so" grep -q "^tftap: --dir $WORK/step-apply: not empty" "$WORK/r4.err"
replay_offline "$rdb:1" >/dev/null 2>"$WORK/r5.err"
check_eq "a run that is no step, without a command: exit 1" "$?" 1
check "  it kept no working directory" grep -q "^tftap: run 1 of .* kept no working directory" "$WORK/r5.err"

# Secrets: a step whose test's record redacts a value keeps its lock file
# only (the front run by hand, as the harness would, in a directory with
# a sensitive attribute set).
mkdir -p "$WORK/sec" "$WORK/front/steps"
printf '%s' "$WORK/sec.db" >"$WORK/front/front-db"
cat >"$WORK/sec/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest6 = { source = "registry.opentofu.org/tftap/tftest6" }
  }
}
resource "tftest6_thing" "t" {
  string_attr = "x"
  secret      = "hunter2-s3cret"
}
EOF
# A file over the size limit of a kept file is listed without its content.
head -c 9437184 /dev/zero >"$WORK/sec/big.bin"
(cd "$WORK/sec" && export TF_CLI_CONFIG_FILE=$PEERS/tofurc TF_LOG_PATH_MASK=$WORK/%s.log \
    TF_LOG_PATH=$WORK/TestSecret.log && "$TOFU" init -no-color >/dev/null &&
    "$TFTAP" run --front "$WORK/front" --parent 0 -- "$TOFU" apply -auto-approve -no-color >/dev/null &&
    "$TFTAP" run --front "$WORK/front" --parent 0 -- "$TOFU" show -no-color >/dev/null)
check_eq "a step with a secret: its apply and show recorded" "$?" 0
check_eq "  only the lock file kept; the configuration and state listed, not kept; the big file listed" \
    "$(sqlite3 "$WORK/sec.db" "SELECT group_concat(run_id || ':' || name || ':' ||
        CASE WHEN content IS NULL THEN coalesce(note, '') ELSE 'kept' END, ' ')
        FROM (SELECT * FROM run_files ORDER BY run_id, name)")" \
    "1:.terraform.lock.hcl:kept 1:big.bin:over the size limit of a kept file (8 MiB) 1:main.tf:may hold a secret (kept only with --record-sensitive) 2:.terraform.lock.hcl:kept 2:big.bin:over the size limit of a kept file (8 MiB) 2:main.tf:may hold a secret (kept only with --record-sensitive) 2:terraform.tfstate:may hold a secret (kept only with --record-sensitive)"
check "  the secret is nowhere in the record" sh -c "! grep -q hunter2-s3cret '$WORK/sec.db'"
replay_offline "$WORK/sec.db:2" --cli "$TOFU" >/dev/null 2>"$WORK/r6.err"
check "  its replay says what it runs without" grep -q \
    "^tftap: note: main.tf was not kept (may hold a secret (kept only with --record-sensitive)): the command runs without it" \
    "$WORK/r6.err"

# ---- tftap's own mask: the user set none (the v2 build of the provider) ----
: >"$WORK/cli.log"
TF_ACC_TERRAFORM_PATH=$WORK/cli "$TFTAP" run --db "$db" -- "$ACC2" -test.v -test.count=1 \
    >"$WORK/acc2.out" 2>"$WORK/acc2.err"
check_eq "the v2 suite passes through tftap" "$?" 0
suite2=$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE parent_id IS NULL")
check_eq "its step runs: one per CLI command of the harness" \
    "$(sqlite3 "$db" "SELECT id FROM runs WHERE parent_id = $suite2 ORDER BY id" | tr '\n' ' ')" \
    "$(awk -v s="$suite2" '$NF != s { print $NF }' "$WORK/cli.log" | sort -n | tr '\n' ' ')"
check_eq "named by test and step without a mask of the user's" \
    "$(sqlite3 "$db" "SELECT group_concat(DISTINCT test_name || ':' || test_step) FROM
        (SELECT test_name, test_step FROM runs WHERE parent_id = $suite2 ORDER BY 1, 2)")" \
    "TestAccPet_length:1,TestAccPet_length:2,TestAccPet_length:3,TestAccServer_lifecycle:1,TestAccServer_lifecycle:2,TestAccServer_lifecycle:3,TestAccThing_expectError:1,TestAccThing_expectError:2"
check_eq "the CLI logged nowhere (tftap's mask is not the CLI's log)" \
    "$(awk '{ print $1 }' "$WORK/cli.log" | sort -u)" none

# ---- tftap diff SUITE_A SUITE_B ----------------------------------------
# The same build again: only the values the provider draws at random differ
# (pet names, random ids), which a user who knows them ignores.
TF_ACC_TERRAFORM_PATH=$TOFU "$TFTAP" run --db "$db" -- "$ACC" -test.count=1 >/dev/null 2>&1
check_eq "the v1 suite again" "$?" 0
suite3=$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE parent_id IS NULL")
# A step recorded with tofu itself: replayed with it, no --cli needed.
pet=$(sqlite3 "$db" "SELECT id FROM runs WHERE parent_id = $suite3 AND test_name = 'TestAccPet_length'
    AND test_step = 1 AND json_extract(args, '\$[0]') = 'apply'")
replay_offline "$db:$pet" >"$WORK/r7.out" 2>"$WORK/r7.err"
check_eq "replay of a step recorded with tofu: exit as recorded" "$?" \
    "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $pet")"
check "  with the recorded tofu" grep -q "^tftap: replaying run $pet (TestAccPet_length / step 1) in .*: $TOFU apply " \
    "$WORK/r7.err"
random=(--ignore .id --ignore .hex --ignore .dec --ignore .b64_std)
"$TFTAP" diff --db "$db" "$suite" "$suite3" "${random[@]}" >"$WORK/same.txt"
check_eq "two suites of the same build: exit 0" "$?" 0
check "  every step run paired" grep -q "^$(sqlite3 "$db" "SELECT count(*) FROM runs
    WHERE parent_id = $suite") step runs compared, 0 differ; 0 only in one suite" "$WORK/same.txt"
"$TFTAP" diff --db "$db" "$suite" "$suite3" >/dev/null
check_eq "  without --ignore the random values differ: exit 1" "$?" 1

# v2 changes the server's computed default size (small -> medium).
"$TFTAP" diff --db "$db" "$suite" "$suite2" "${random[@]}" --json >"$WORK/diff.json"
check_eq "v1 against v2: exit 1" "$?" 1
check_eq "the size is named under the test and step that plan the server" \
    "$(jq -r '.pairs[] | .a as $s | .diff.changes[]
        | select(.path == ".size" and .value == "planned" and .behaviour)
        | "\($s.test) step \($s.step): \(.a.value) -> \(.b.value)"' "$WORK/diff.json" |
        sort -u | tr '\n' ';')" \
    "TestAccServer_lifecycle step 1: small -> medium;TestAccServer_lifecycle step 2: small -> medium;"
check_eq "  first in the plan of step 1" "$(jq -r '[.pairs[] | select(.a.test == "TestAccServer_lifecycle"
    and .a.step == 1 and .a.command == "plan" and .a.nth == 1) | .diff.changes[]
    | select(.path == ".size" and .behaviour) | .method] | join(" ")' "$WORK/diff.json")" \
    PlanResourceChange
check_eq "  and under no other test" "$(jq -r '[.pairs[] | select(.a.test != "TestAccServer_lifecycle")
    | .diff.changes[] | select(.path != null and (.path | test("size")))] | length' "$WORK/diff.json")" 0
check_eq "  no test or step run in one suite only" \
    "$(jq -r '"\(.only_a | length) \(.only_b | length) \(.tests_in_one_only)"' "$WORK/diff.json")" "0 0 0"
"$TFTAP" diff --db "$db" "$suite" "$suite2" "${random[@]}" --format markdown >"$WORK/diff.md"
check_eq "markdown: exit 1" "$?" 1
check "  a summary table, a row per test" grep -q '^| `TestAccPet_length` | ' "$WORK/diff.md"
check "  then the test's details, collapsed" \
    grep -q '^<details><summary><code>TestAccServer_lifecycle</code>' "$WORK/diff.md"
check "  the attribute under its step" grep -q 'planned.size: "small"' "$WORK/diff.md"
"$TFTAP" diff --db "$db" "$suite" "$(sqlite3 "$db" "SELECT min(id) FROM runs WHERE parent_id = $suite")" \
    >/dev/null 2>&1
check_eq "a suite against a run: exit 2" "$?" 2

# ---- no TF_ACC_TERRAFORM_PATH: the CLI the harness would find on PATH -----
found=$(command -v terraform || command -v tofu)
(unset TF_ACC_TERRAFORM_PATH
    "$TFTAP" run --db "$db" -- "$ACC" -test.count=1 -test.run TestAccPet_length \
        >"$WORK/path.out" 2>"$WORK/path.err")
check_eq "without TF_ACC_TERRAFORM_PATH the suite passes through tftap" "$?" 0
suite5=$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE parent_id IS NULL")
check_eq "  with the CLI on PATH the harness would run ($found)" "$(cat "$WORK/path.err")" \
    "tftap: note: '$(basename "$ACC")' is neither tofu nor terraform: the CLI commands of the acceptance tests it runs (with $found) are recorded as step runs of run $suite5"
check_eq "  its steps recorded and named" "$(sqlite3 "$db" "SELECT group_concat(DISTINCT test_name ||
    ':' || test_step) FROM (SELECT test_name, test_step FROM runs WHERE parent_id = $suite5
    ORDER BY 1, 2)")" "TestAccPet_length:1,TestAccPet_length:2,TestAccPet_length:3"
check "  and its calls" test "$(sqlite3 "$db" "SELECT count(*) FROM calls c JOIN runs r
    ON r.id = c.run_id WHERE r.parent_id = $suite5")" -gt 20

# ---- two test processes at once with tests of the same names (go test ./...
# runs a test binary per package in parallel) ------------------------------
TF_ACC_TERRAFORM_PATH=$TOFU "$TFTAP" run --db "$db" -- sh -c \
    '"$1" -test.count=1 -test.run TestAccPet_length & "$1" -test.count=1 -test.run TestAccPet_length
     wait $! && wait' sh "$ACC" >"$WORK/two.out" 2>&1
check_eq "two test processes at once pass through tftap" "$?" 0
suite6=$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE parent_id IS NULL")
check_eq "  each test's steps counted in its own process: steps 1 to 3, twice" \
    "$(sqlite3 "$db" "SELECT test_step || 'x' || count(*) FROM runs WHERE parent_id = $suite6
        AND json_extract(args, '\$[0]') = 'apply' GROUP BY test_step ORDER BY test_step" | tr '\n' ' ')" \
    "1x2 2x2 3x2 "

# ---- terraform-plugin-sdk/v2's own harness (tftestsdk) -----------------
: >"$WORK/cli.log"
TF_ACC_TERRAFORM_PATH=$WORK/cli TF_LOG=DEBUG TF_LOG_PATH_MASK=$WORK/logs/%s.log \
    "$TFTAP" run --db "$db" -- "$SDK" -test.count=1 >"$WORK/sdk.out" 2>&1
check_eq "the SDK harness's suite passes through tftap" "$?" 0
suite4=$(sqlite3 "$db" "SELECT max(id) FROM runs WHERE parent_id IS NULL")
check_eq "  each CLI command of its steps a step run, in order" \
    "$(sqlite3 "$db" "SELECT json_extract(args, '\$[0]') FROM runs WHERE parent_id = $suite4
        AND test_name = 'TestAccSDK_value' ORDER BY id" | tr '\n' ' ')" \
    "$(awk '$1 == "TestAccSDK_value" { print $2 }' "$WORK/cli.log" | tr '\n' ' ')"
check_eq "  the steps named are the harness's" \
    "$(sqlite3 "$db" "SELECT DISTINCT test_step FROM runs WHERE parent_id = $suite4
        ORDER BY test_step" | tr '\n' ' ')" \
    "$(grep -o 'Starting TestStep: .*' "$WORK/logs/TestAccSDK_value.log" |
        grep -o 'test_step_number=[0-9]*' | cut -d= -f2 | sort -n | tr '\n' ' ')"
check_eq "  step 2 applies the new value, decoded" "$(sqlite3 "$db" "SELECT
    json_extract(c.request_json, '\$.planned_state.value') FROM v_calls c JOIN runs r
    ON r.id = c.run_id WHERE r.parent_id = $suite4 AND r.test_step = 2
    AND c.rpc = 'ApplyResourceChange' AND c.provider = 'registry.opentofu.org/hashicorp/tftestsdk'")" b

check_eq "nothing of tftap's left in TMPDIR" \
    "$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'tftap-*' | head -3)" ""
finish
