#!/usr/bin/env bash
# A post-mortem through `tftap run`: an apply whose provider returns an error
# diagnostic for one resource (tests/peers/tftest/thing.go, fail = "error")
# is what `tftap show last` tells first, with the address, the attempted
# change and the diagnostics, in text and --json; `calls --failed` lists
# that call; an apply that fails everywhere still shows every failure;
# go-plugin's streams and Shutdown ending with the provider read as an
# expected close, statuses by name; a replacement made by a plain apply
# reads as one; map keys print sorted as tofu prints them.
. "$(dirname "$0")/lib.sh"
need_peers
w=$WORK/w f=$WORK/f db=$WORK/tftap.db
new_dir "$top_srcdir/tests/e2e/configs/failures" "$w"
new_dir "$top_srcdir/tests/e2e/configs/failures" "$f"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
(cd "$f" && tofu init -input=false -no-color >/dev/null) || not_ok "init (all-failed dir)"

apply() { # DIR OUT ARGS...: tofu apply through tftap; its exit code
    local dir=$1 out=$2
    shift 2
    (cd "$dir" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
        "$@" >"$out.tofu" 2>"$out.err")
}

# 1. Everything created.
apply "$w" "$WORK/create"
check_eq "first apply succeeds" "$?" 0
"$TFTAP" --db "$db" show last >"$WORK/create.txt"
# The provider encodes the map in Go's order; tofu prints it sorted.
check_eq "map keys print sorted, quoted" \
    "$(sed -n '/+ keepers   = {/,/}/p' "$WORK/create.txt" | grep -o '^ *+ "[a-z]*"' | tr -d '" +' |
        tr '\n' ' ')" "alpha beta delta kappa mid omega zeta "
check "no failure told for a clean apply" \
    bash -c "! grep -q 'failed' '$WORK/create.txt'"
grep '^  # [a-z]' "$WORK/create.txt" | awk '{ print $2 }' >"$WORK/order"
check "changes in the order of their addresses, as tofu prints them ($(wc -l <"$WORK/order"))" \
    bash -c "[ \$(wc -l <'$WORK/order') -ge 3 ] && sort -V '$WORK/order' | cmp -s - '$WORK/order'"
check_eq "the verdict leads: it succeeded" "$(sed -n 1p "$WORK/create.txt")" \
    "Run $(last_run "$db") succeeded: the command exited 0, every call was answered as core expects."

# Teardown: go-plugin's streams and Shutdown end as the providers exit.
"$TFTAP" --db "$db" calls last >"$WORK/plain.txt"
check "go-plugin's housekeeping left out of calls" \
    bash -c "! grep -qE ' (StreamStdio|StartStream|Shutdown) ' '$WORK/plain.txt'"
check "and said so" grep -qE '^\([1-9][0-9]* go-plugin housekeeping calls not shown: --all\)$' "$WORK/plain.txt"
"$TFTAP" --db "$db" calls last --all >"$WORK/calls.txt"
check "teardown calls listed with --all" grep -qE ' (StreamStdio|StartStream|Shutdown) ' "$WORK/calls.txt"
check_eq "--method names one: listed" \
    "$("$TFTAP" --db "$db" calls last --method shutdown | grep -c ' Shutdown ')" \
    "$(grep -c ' Shutdown ' "$WORK/calls.txt")"
check_eq "every StreamStdio/StartStream/Shutdown reads as an expected close" \
    "$(awk '$3 ~ /^(StreamStdio|StartStream|Shutdown)$/ && $5 != "closed"' "$WORK/calls.txt")" ""
check "their status by name" grep -q '(expected close: UNAVAILABLE)' "$WORK/calls.txt"
check "no status by number in calls" bash -c "! grep -qE 'status[= ][0-9]' '$WORK/calls.txt'"
"$TFTAP" --db "$db" calls last --failed >"$WORK/none.txt" 2>"$WORK/none.err"
check_eq "calls --failed of a clean run lists nothing" "$(cat "$WORK/none.txt")" ""
check "and says so" grep -q 'no calls in run .* match the filters' "$WORK/none.err"
"$TFTAP" --db "$db" calls last --all --json >"$WORK/calls.json"
check_eq "teardown calls are is_teardown, not failed" \
    "$(jq '[.[] | select(.rpc == "StreamStdio" or .rpc == "StartStream" or .rpc == "Shutdown")
        | select(.is_teardown != true or .failed != false)] | length' "$WORK/calls.json")" 0
check_eq "calls --json keys are v_calls' columns, in order" \
    "$(jq -r '.[0] | keys_unsorted | join(",")' "$WORK/calls.json")" \
    "$(sqlite3 "$db" "SELECT group_concat(name, ',') FROM (SELECT name FROM
        pragma_table_info('v_calls') ORDER BY cid)")"
# docs/database.md's "slowest calls" query.
check_eq "the documented slowest-calls query skips streams and teardown" \
    "$(sqlite3 "$db" "SELECT rpc, type_name, duration_us / 1000.0 AS ms FROM v_calls
        WHERE run_id = (SELECT max(id) FROM runs) AND stream = 0 AND NOT is_teardown
        ORDER BY duration_us DESC LIMIT 10" | grep -cE '^(StreamStdio|StartStream|Shutdown)\|')" 0
check_eq "method names in any case" \
    "$("$TFTAP" --db "$db" calls last --method applyresourcechange | wc -l)" \
    "$("$TFTAP" --db "$db" calls last --method ApplyResourceChange | wc -l)"
check_eq "three applies listed" \
    "$("$TFTAP" --db "$db" calls last --method=applyResourceChange | grep -c ApplyResourceChange)" 3

# 2. One resource's update fails with an error diagnostic, the other's works.
apply "$w" "$WORK/fail" -var label=two -var fail_a=error
check_eq "the failing apply exits 1" "$?" 1
"$TFTAP" --db "$db" show last >"$WORK/fail.txt"
check_eq "show last leads with the verdict" "$(sed -n 1p "$WORK/fail.txt")" \
    "Run $(last_run "$db") failed: the command exited 1; 1 call failed."
check_eq "then the failed change with its address" "$(sed -n 3p "$WORK/fail.txt")" \
    "  # tftest6_thing.a failed to be updated in-place  [ApplyResourceChange]"
check "with the change it attempted" grep -q '~ string_attr = "a-one" -> "a-two"' "$WORK/fail.txt"
check "and the provider's diagnostic" grep -qx '  Error: tftest: apply failed' "$WORK/fail.txt"
check "and its detail" grep -qx '    the configuration asked for fail = "error"' "$WORK/fail.txt"
check_eq "the failure comes before the change that worked" \
    "$(grep -n '^  # tftest6_thing\.' "$WORK/fail.txt" | cut -d: -f1 | tr '\n' ' ')" \
    "3 $(grep -n '^  # tftest6_thing.b has been updated in-place' "$WORK/fail.txt" | cut -d: -f1) "
check "the summary line counts the failure" \
    grep -q '^1 call failed (shown first); 1 change: 0 to create, 1 to update' "$WORK/fail.txt"
"$TFTAP" --db "$db" show last --json >"$WORK/fail.json"
check_eq "--json: failed count and exit code" "$(jq -c '[.failed, .exit_code]' "$WORK/fail.json")" \
    "[1,1]"
check_eq "--json: the failure's address, action and diagnostics" \
    "$(jq -c '.failures[0] | [.address, .method, .action, .failed, .diagnostics[0].severity,
        .diagnostics[0].summary, .diagnostics[0].detail]' "$WORK/fail.json")" \
    '["tftest6_thing.a","ApplyResourceChange","update",true,"ERROR","tftest: apply failed","the configuration asked for fail = \"error\""]'
check_eq "--json: the failed change among the changes too" \
    "$(jq -c '[.changes[] | select(.failed) | .address]' "$WORK/fail.json")" '["tftest6_thing.a"]'
"$TFTAP" --db "$db" calls last --failed >"$WORK/failed.txt"
check_eq "calls --failed leads with the verdict" "$(sed -n 1p "$WORK/failed.txt")" \
    "Run $(last_run "$db") failed: the command exited 1; 1 call failed."
check_eq "calls --failed lists the one failed call" "$(grep -c '^[0-9]' "$WORK/failed.txt")" 1
check "as FAILED with one error, at its address" \
    grep -qE '^[0-9]+ +[0-9]+ +ApplyResourceChange +tftest6_thing +FAILED +1 error .* tftest6_thing\.a$' \
    "$WORK/failed.txt"
check_eq "calls --json marks it failed with its counts" \
    "$("$TFTAP" --db "$db" calls last --json | jq -c '[.[] | select(.failed) |
        [.rpc, .status_name, .error_count, .warning_count, .address]]')" \
    '[["ApplyResourceChange","OK",1,0,"tftest6_thing.a"]]'

# 3. A replacement made by a plain apply (prefix forces it): one "-/+".
apply "$w" "$WORK/replace" -var label=two -var prefix=p2
check_eq "the replacing apply succeeds" "$?" 0
"$TFTAP" --db "$db" show last >"$WORK/replace.txt"
check "reads as one replacement" grep -qx '  # tftest5_pet.r\[0\] has been replaced  \[ApplyResourceChange\]' \
    "$WORK/replace.txt"
check "marked -/+" grep -qx -- '-/+ resource "tftest5_pet" "r" {' "$WORK/replace.txt"
check "with what forced it, from the plan" \
    grep -qx '      ~ prefix    = "p1" -> "p2" # forces replacement' "$WORK/replace.txt"
check "not as a destroy and a create" \
    bash -c "! grep -qE 'tftest5_pet.* has been (destroyed|created)' '$WORK/replace.txt'"
check "counted in to replace" grep -q ' 0 to create, 1 to update, 1 to replace, 0 to destroy' \
    "$WORK/replace.txt"
check_eq "--json: one replace for the address" \
    "$("$TFTAP" --db "$db" show last --json | jq -c '[.changes[] | select(.address == "tftest5_pet.r[0]") | .action]')" \
    '["replace"]'

# 4. Everything fails (both creates): every failure is shown, in both forms.
apply "$f" "$WORK/all" -var others=false -var fail_a=error -var fail_b=error
check_eq "the all-failed apply exits 1" "$?" 1
"$TFTAP" --db "$db" show last >"$WORK/all.txt"
check_eq "show last leads with both failures" "$(sed -n 1p "$WORK/all.txt")" \
    "Run $(last_run "$db") failed: the command exited 1; 2 calls failed."
check_eq "each an attempted create" "$(grep -c 'failed to be created  \[ApplyResourceChange\]' "$WORK/all.txt")" 2
check_eq "each with its diagnostic" "$(grep -cx '  Error: tftest: apply failed' "$WORK/all.txt")" 2
# Two blocks of one type, and nothing after the apply holds either: the
# plan the apply made, made again offline against its recording, names
# them as tofu does.
check "each named as tofu names it" grep -qF 'with tftest6_thing.a,' "$WORK/all.err"
check "... and as tftap does" grep -qx '  # tftest6_thing.a failed to be created  \[ApplyResourceChange\]' \
    "$WORK/all.txt"
check "... both" grep -qx '  # tftest6_thing.b failed to be created  \[ApplyResourceChange\]' "$WORK/all.txt"
"$TFTAP" --db "$db" show last --json >"$WORK/all.json"
check_eq "--json: two failures with diagnostics, among the changes too" \
    "$(jq -c '[.failed, ([.failures[] | .diagnostics[0].summary] | unique),
        ([.changes[] | select(.failed)] | length)]' "$WORK/all.json")" \
    '[2,["tftest: apply failed"],2]'
check_eq "--json: the attempted values" \
    "$(jq -c '[.failures[] | .planned.string_attr] | sort' "$WORK/all.json")" '["a-one","b-one"]'

# 5. An apply whose result core rejects (tests/peers/tftest/misbehave.go,
# rule apply_changed: the new state differs from the plan): tofu exits 1
# with "Provider produced inconsistent result after apply". No call failed
# at the protocol level; the run is still failed, and says why first.
m=$WORK/m
mkdir -p "$m"
misbehave() { # RULE VALUE
    cat >"$m/main.tf" <<TF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
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
TF
}
misbehave none a
(cd "$m" && tofu init -input=false -no-color >/dev/null) || not_ok "init (misbehave)"
apply "$m" "$WORK/mcreate"
check_eq "the misbehaving provider's create succeeds" "$?" 0
misbehave apply_changed b
apply "$m" "$WORK/rej"
rej_rc=$?
check_eq "tofu rejects the inconsistent result: exit 1" "$rej_rc" 1
check "tofu says why" grep -q 'Provider produced inconsistent result after apply' "$WORK/rej.err"
run_rej=$(last_run "$db")
"$TFTAP" --db "$db" show last >"$WORK/rej.txt"
check_eq "show leads with the verdict: tofu's exit code and the rejected answer" \
    "$(sed -n 1p "$WORK/rej.txt")" "Run $run_rej failed: the command exited $rej_rc; 1 answer core rejects."
check_eq "then the rejected change, first" "$(sed -n 3p "$WORK/rej.txt")" \
    "  # tftest6_misbehave.x has been updated in-place  [ApplyResourceChange]"
check "with the rule, the path and why" \
    grep -qx '  Core rejected this answer (apply-compatible at .value): planned a known value, the result differs' \
    "$WORK/rej.txt"
check "and both values" grep -qx '    actual:   "b-applied"' "$WORK/rej.txt"
check "the summary counts it" grep -q '^1 answer core rejected (shown first); 1 change:' "$WORK/rej.txt"
"$TFTAP" --db "$db" calls last --failed >"$WORK/rejcalls.txt" 2>&1
check_eq "calls --failed leads with the verdict" "$(sed -n 1p "$WORK/rejcalls.txt")" \
    "Run $run_rej failed: the command exited $rej_rc; 1 answer core rejects."
check "calls --failed lists the rejected apply with its rule" \
    grep -qE '^[0-9]+ +[0-9]+ +ApplyResourceChange +tftest6_misbehave +REJECTED .* tftest6_misbehave\.x  \(core rejects: apply-compatible at \.value\)$' \
    "$WORK/rejcalls.txt"
check_eq "and only it" "$(grep -c '^[0-9]' "$WORK/rejcalls.txt")" 1
check_eq "show --json: the verdict with the rule, path and values" \
    "$("$TFTAP" --db "$db" show last --json | jq -c '.verdict | [.failed, .exit_code,
        (.rejected[] | [.address, .rule, .path, .expected, .actual])]')" \
    '[true,1,["tftest6_misbehave.x","apply-compatible",".value","b","b-applied"]]'
"$TFTAP" --db "$db" runs >"$WORK/runs.txt"
check "runs: the run FAILED, with why" \
    grep -qE "^$run_rej +FAILED .*\(the command exited 1; 1 answer core rejects\)\$" "$WORK/runs.txt"
check "runs: the clean first apply ok" grep -qE '^1 +ok ' "$WORK/runs.txt"
"$TFTAP" --db "$db" bundle last -o "$WORK/rej.tftap" >"$WORK/rejbundle.txt" 2>&1
check_eq "the bundle's summary gives the verdict" "$(sed -n 2p "$WORK/rejbundle.txt")" \
    "  verdict:    Run $run_rej failed: the command exited $rej_rc; 1 answer core rejects."

finish
