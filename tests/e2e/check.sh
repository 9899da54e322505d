#!/usr/bin/env bash
# `tftap check` against OpenTofu's own verdicts. The test provider's
# <type>_misbehave resource breaks one rule of the plugin contract per case
# (tests/peers/tftest/misbehave.go); each case runs tofu through `tftap run`
# and compares, as multisets of "address|path":
#   - the errors tofu printed (stderr) with the findings `tftap check last`
#     says core rejects,
#   - the "tolerating it" warnings tofu logged (TF_LOG=warn) with the
#     findings it says core tolerates: the legacy type system flag set by
#     misbehave.go (legacy = true), and a real terraform-plugin-sdk/v2
#     provider (tests/peers/tftestsdk) misbehaving the ways SDK providers do,
#   - the "unexpected new value ... during refresh" warnings with the drift
#     findings,
# so every verdict of tofu is found at the same address and path, and
# nothing else is. Clean runs of the other e2e configurations check clean.
. "$(dirname "$0")/lib.sh"
need_peers
[ -x "$PEERS/bin/terraform-provider-tftestsdk" ] ||
    cannot_run "peers missing: $PEERS/bin/terraform-provider-tftestsdk (run scripts/build-peers)"
CLI=tofu

# The (address|path) pairs named by tofu's errors, one per line, from its
# stderr: each known message form of a provider contract error.
tofu_errors() { # STDERR_FILE
    tr '\n' ' ' <"$1" | sed 's/  */ /g' | sed 's/Error: /\n&/g' | awk '
    function emit(a, p) { print a "|" p }
    function split_addr(s,   m) { # "type.name.rest" -> address, path
        if (match(s, /^(data\.)?[a-z0-9_]+\.[a-z0-9_-]+(\[[^]]*\])?/)) {
            emit(substr(s, 1, RLENGTH), substr(s, RLENGTH + 1))
        }
    }
    /^Error: Provider produced invalid plan/ && /planned an invalid value for / {
        s = $0; sub(/.*planned an invalid value for /, "", s); sub(/: .*/, "", s)
        split_addr(s); next
    }
    /^Error: Provider produced invalid plan/ && /non-existent attribute path/ {
        a = $0; sub(/.*"requires replacement" on /, "", a); sub(/ for a non-existent.*/, "", a)
        p = $0; sub(/.*cty\.Path\{/, "", p); sub(/\}\..*/, "", p)
        out = ""
        while (match(p, /GetAttrStep\{Name:"[^"]*"\}/)) {
            step = substr(p, RSTART + 18, RLENGTH - 20); out = out "." step
            p = substr(p, RSTART + RLENGTH)
        }
        emit(a, out); next
    }
    /^Error: Provider produced invalid plan/ && /planned a non-null destroy value for / {
        a = $0; sub(/.*destroy value for /, "", a); sub(/\. .*/, "", a); emit(a, ""); next
    }
    /^Error: Provider produced inconsistent result after apply/ {
        a = $0; sub(/.*When applying changes to /, "", a); sub(/, provider .*/, "", a)
        p = $0; sub(/.*produced an unexpected new value: /, "", p)
        if (p ~ /^[.[]/) { sub(/: .*/, "", p) } else { p = "" }
        emit(a, p); next
    }
    /^Error: Provider returned invalid result object after apply/ && /unknown value for / {
        s = $0; sub(/.*unknown value for /, "", s); sub(/\. All values.*/, "", s)
        split_addr(s); next
    }
    /^Error: Provider returned invalid result object after apply/ && /null object for / {
        a = $0; sub(/.*null object for /, "", a); sub(/\. .*/, "", a); emit(a, ""); next
    }
    /^Error: Provider produced inconsistent final plan/ {
        a = $0; sub(/.*When expanding the plan for /, "", a); sub(/ to include .*/, "", a)
        p = $0; sub(/.*produced an invalid new value for /, "", p)
        if (p ~ /^[.[]/) { sub(/: .*/, "", p) } else { p = "" }
        emit(a, p); next
    }
    /^Error: Provider produced/ || /^Error: Provider returned/ { print "UNPARSED " $0 }
    ' | sort
}

# The (address|path) pairs of tofu's "tolerating it" warnings, from its log.
tofu_tolerated() { # LOG_FILE
    awk '
    /but we are tolerating it/ {
        a = $0; sub(/.* for /, "", a); sub(/, but we are tolerating.*/, "", a); inwarn = 1; next
    }
    inwarn && /^ *- / {
        p = $0; sub(/^ *- /, "", p)
        if (p ~ /^[.[]/) { sub(/: .*/, "", p) } else { p = "" }
        print a "|" p; next
    }
    inwarn && !/^ *The following problems/ { inwarn = 0 }
    ' "$1" | sort
}

# The (address|path) pairs of tofu's refresh warnings (drift), from its log.
tofu_drift() { # LOG_FILE
    awk '
    /produced an unexpected new value for .* during refresh\./ {
        a = $0; sub(/.* new value for /, "", a); sub(/ during refresh\..*/, "", a); inwarn = 1; next
    }
    inwarn && /^ *- / {
        p = $0; sub(/^ *- /, "", p)
        if (p ~ /^[.[]/) { sub(/: .*/, "", p) } else { p = "" }
        print a "|" p; next
    }
    inwarn { inwarn = 0 }
    ' "$1" | sort
}

# compare NAME DIR DB EXIT: tofu's verdicts (DIR/err, DIR/tofu.log) against
# `tftap check last`, then tftap run's line and the exit status it kept.
compare() {
    local name=$1 d=$2 db=$3 st=$4 v n
    tofu_errors "$d/err" >"$d/tofu-rejects"
    tofu_tolerated "$d/tofu.log" >"$d/tofu-tolerates"
    tofu_drift "$d/tofu.log" >"$d/tofu-drift"
    for v in rejects tolerates drift; do
        findings "$db" $v >"$d/tftap-$v"
    done
    if ! [ -s "$d/tofu-rejects" ] && ! [ -s "$d/tofu-tolerates" ] && ! [ -s "$d/tofu-drift" ]; then
        not_ok "$name: tofu reported nothing (exit $st): the misbehaviour did not happen"
        return
    fi
    if grep -q UNPARSED "$d/tofu-rejects"; then
        not_ok "$name: an error of tofu's this test cannot read: $(grep UNPARSED "$d/tofu-rejects")"
        return
    fi
    local same=1 report=
    for v in rejects tolerates drift; do
        cmp -s "$d/tofu-$v" "$d/tftap-$v" || same=0
        report="$report $v: tofu [$(tr '\n' ' ' <"$d/tofu-$v")] tftap [$(tr '\n' ' ' <"$d/tftap-$v")];"
    done
    if [ $same = 1 ]; then
        ok "$name: same as tofu:$report"
    else
        not_ok "$name:$report"
    fi
    # Exit status: 1 exactly when core rejects something; what it only
    # tolerates fails too under --strict.
    local rej tol line=
    rej=$(wc -l <"$d/tftap-rejects")
    tol=$(wc -l <"$d/tftap-tolerates")
    "$TFTAP" check last --db "$db" >/dev/null
    check_eq "$name: tftap check's exit status" "$?" "$([ "$rej" -gt 0 ] && echo 1 || echo 0)"
    "$TFTAP" check last --strict --db "$db" >/dev/null
    check_eq "$name: tftap check --strict's exit status" "$?" \
        "$([ $((rej + tol)) -gt 0 ] && echo 1 || echo 0)"
    # tftap run said so in one line at the end, what core only tolerates
    # apart, and left tofu's exit status.
    [ "$rej" -gt 0 ] && line="$rej provider contract violation$([ "$rej" = 1 ] || echo s)"
    [ "$tol" -gt 0 ] && line="${line:+$line, }$tol tolerated legacy finding$([ "$tol" = 1 ] ||
        echo s) (core accepts $([ "$tol" = 1 ] && echo it || echo them))"
    if [ -n "$line" ]; then
        check_eq "$name: tftap run's one line" \
            "$(grep -E 'provider contract violation|tolerated legacy finding' "$d/err")" \
            "tftap: $line; see tftap check last"
    else
        check_eq "$name: tftap run says nothing" \
            "$(grep -cE 'provider contract violation|tolerated legacy finding' "$d/err")" 0
    fi
    check_eq "$name: tofu's exit status kept" "$st" "$([ -s "$d/tofu-rejects" ] && echo 1 || echo 0)"
}

# Findings of `tftap check last` with one verdict, as "address|path".
findings() { # DB VERDICT
    "$TFTAP" check last --db "$1" --json |
        jq -r --arg v "$2" '.findings[] | select(.verdict == $v) | "\(.address)|\(.path)"' | sort
}

misbehave_tf() { # TYPE RULE LEGACY VALUE
    cat <<EOF
terraform {
  required_providers {
    $1 = { source = "tftap/$1" }
  }
}
resource "${1}_misbehave" "x" {
  rule   = "$2"
  legacy = $3
  value  = "$4"
  list   = ["a"]
  set    = ["a"]
  item {
    name = "n"
  }
}
EOF
}

# A case: the resource is created (rule "none", or for MODE destroy the
# rule itself, which only bites when destroying), then updated to misbehave
# (MODE update) or destroyed (MODE destroy). Updating an existing object
# keeps its address known to tftap from the state before the run (a create
# that fails is in no state and no saved plan, so its calls name only the
# resource type). The create must check clean.
run_case() { # TYPE RULE LEGACY MODE
    local type=$1 rule=$2 legacy=$3 mode=$4
    local name="$type $rule legacy=$legacy"
    local d=$WORK/case-$type-$rule-$legacy db=$WORK/case-$type-$rule-$legacy.db st
    mkdir -p "$d"
    if [ "$mode" = destroy ] || [ "$mode" = refresh ]; then
        misbehave_tf "$type" "$rule" "$legacy" a >"$d/main.tf"
    else
        misbehave_tf "$type" none "$legacy" a >"$d/main.tf"
    fi
    (cd "$d" && tofu init -input=false -no-color >/dev/null &&
        "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color >"$d/out0" 2>&1) || {
        not_ok "$name: the create ran ($(tail -n 3 "$d/out0"))"
        return
    }
    "$TFTAP" check last --db "$db" >"$d/check0" ||
        not_ok "$name: the create checks clean ($(cat "$d/check0"))"
    local args=(apply -auto-approve -input=false -no-color)
    if [ "$mode" = destroy ]; then
        args=(destroy -auto-approve -input=false -no-color)
    elif [ "$mode" = refresh ]; then
        args=(plan -input=false -no-color)
    else
        misbehave_tf "$type" "$rule" "$legacy" b >"$d/main.tf"
    fi
    (cd "$d" && TF_LOG=warn TF_LOG_PATH="$d/tofu.log" "$TFTAP" run --db "$db" -- tofu "${args[@]}" \
        >"$d/out" 2>"$d/err")
    st=$?
    compare "$name" "$d" "$db" "$st"
}

types=${CHECK_TYPES-tftest6 tftest5}
for type in $types; do
    for rule in plan_config_changed plan_unknown_config plan_noncomputed plan_block_count \
        plan_replace_missing final_plan_changed apply_changed apply_null_attr apply_unknown \
        apply_list_grows apply_set_grows apply_refinement apply_null_object; do
        run_case "$type" "$rule" false update
    done
    run_case "$type" plan_destroy_nonnull false destroy
    run_case "$type" apply_delete_nonnull false destroy
    # A refresh that finds the object changed is drift, not a violation.
    run_case "$type" read_drift false refresh
    # The legacy type system: core tolerates (logs) what it rejects above.
    for rule in plan_config_changed plan_noncomputed apply_changed apply_list_grows \
        apply_set_grows apply_null_object; do
        run_case "$type" "$rule" true update
    done
done

# terraform-plugin-sdk/v2: what core tolerates from a real SDK provider
# (a StateFunc that plans another value than configured, a Create that
# stores other values than planned) and drift found by its Read.
sdk_tf() { # RULE
    cat <<EOF
terraform {
  required_providers {
    tftestsdk = { source = "tftap/tftestsdk" }
  }
}
resource "tftestsdk_misbehave" "x" {
  rule   = "$1"
  value  = "a"
  hashed = "abc"
  list   = ["a"]
}
EOF
}
for rule in none apply_changed list_grows read_drift; do
    d=$WORK/sdk-$rule db=$WORK/sdk-$rule.db
    mkdir -p "$d"
    sdk_tf $rule >"$d/main.tf"
    (cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "sdk $rule: init"
    args=(apply -auto-approve -input=false -no-color)
    if [ $rule = read_drift ]; then
        (cd "$d" && tofu apply -auto-approve -input=false -no-color >/dev/null) ||
            not_ok "sdk $rule: created"
        args=(plan -input=false -no-color)
    fi
    (cd "$d" && TF_LOG=warn TF_LOG_PATH="$d/tofu.log" "$TFTAP" run --db "$db" -- tofu "${args[@]}" \
        >"$d/out" 2>"$d/err")
    compare "sdk $rule" "$d" "$db" $?
done

# What core tolerates is reported, and CI can gate on what it rejects: the
# SDK provider's tolerated findings pass `check`, fail `check --strict`,
# and tftap run's line counts them apart from violations.
d=$WORK/sdk-apply_changed db=$WORK/sdk-apply_changed.db
"$TFTAP" check last --db "$db" >"$d/check.txt"
check_eq "sdk: tolerated findings pass check" "$?" 0
check "sdk: and are reported, counted apart" \
    grep -qE '^Run [0-9]+: no provider contract violations; [1-9][0-9]* tolerated legacy findings? \(core accepts (it|them)\)' \
    "$d/check.txt"
"$TFTAP" check last --strict --db "$db" >/dev/null
check_eq "sdk: check --strict fails on them" "$?" 1
check "sdk: tftap run's line says core accepts them" \
    grep -qE '^tftap: [1-9][0-9]* tolerated legacy findings? \(core accepts (it|them)\); see tftap check last$' \
    "$d/err"

# Filters that match nothing are usage errors naming the nearest name.
filter_err() { # NAME EXPECTED_LINE COMMAND...
    local name=$1 want=$2
    shift 2
    "$@" >"$WORK/filter.out" 2>"$WORK/filter.err"
    local st=$?
    check_eq "$name: exit 2, nothing on stdout" "$st $(wc -c <"$WORK/filter.out")" "2 0"
    check_eq "$name: one line naming the nearest" "$(cat "$WORK/filter.err")" "$want"
}
r=$(sqlite3 "$db" "SELECT max(id) FROM runs")
filter_err "check TYPO" "tftap: 'tftestsdk_misbehav' names no resource type or address in run $r (nearest: tftestsdk_misbehave)" \
    "$TFTAP" check last tftestsdk_misbehav --db "$db"
filter_err "show ADDRESS typo" "tftap: 'tftestsdk_misbehave.y' names no resource type or address in run $r (nearest: tftestsdk_misbehave.x)" \
    "$TFTAP" show last tftestsdk_misbehave.y --db "$db"
filter_err "diff A B TYPO" "tftap: 'nonexist_type' names no resource type or address in runs $r and $r (nearest: tftestsdk_misbehave)" \
    "$TFTAP" diff $r $r nonexist_type --db "$db"
filter_err "calls --method typo" "tftap: no call of run $r is 'PlanResourceChang' (nearest: PlanResourceChange)" \
    "$TFTAP" calls last --method PlanResourceChang --db "$db"
filter_err "calls --method Bogus" "tftap: no call of run $r is 'Bogus' (nearest: Configure)" \
    "$TFTAP" calls last --method Bogus --db "$db"
filter_err "calls --type typo" "tftap: 'tftestsdk_misbehav' names no resource type in run $r (nearest: tftestsdk_misbehave)" \
    "$TFTAP" calls last --type tftestsdk_misbehav --db "$db"
filter_err "mock TYPO" "tftap: 'tftestsdk_misbehav' names no resource type or address in run $r (nearest: tftestsdk_misbehave)" \
    "$TFTAP" mock last tftestsdk_misbehav --db "$db"
"$TFTAP" check last tftestsdk_misbehave.x --db "$db" >/dev/null
check_eq "a filter that matches: check runs (exit 0)" "$?" 0

# Clean runs of the other configurations check clean: create, update in
# place with every value type, replace and destroy (show), many providers
# in parallel (multi), instances only their index tells apart (count).
d=$WORK/show db=$WORK/show.db
mkdir -p "$d"
cp "$top_srcdir/tests/e2e/configs/show/v1.tf.txt" "$d/main.tf"
clean_step() { # NAME DIR DB ARGS...
    local name=$1 dir=$2 cdb=$3
    shift 3
    (cd "$dir" && "$TFTAP" run --db "$cdb" -- tofu "$@" >"$dir/out" 2>&1) || {
        not_ok "$name: tofu $* ran"
        return
    }
    "$TFTAP" check last --db "$cdb" >"$dir/check.out"
    local st=$?
    check_eq "$name: checks clean ($(tail -n 1 "$dir/check.out"))" "$st" 0
    if grep -qE 'provider contract violation|tolerated legacy finding' "$dir/out"; then
        not_ok "$name: tftap run said nothing of violations"
    else
        ok "$name: tftap run said nothing of violations"
    fi
}
(cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "show: init"
clean_step "show v1 apply" "$d" "$db" apply -auto-approve -input=false -no-color
cp "$top_srcdir/tests/e2e/configs/show/v2.tf.txt" "$d/main.tf"
clean_step "show v2 plan -out" "$d" "$db" plan -input=false -no-color -out=tfplan
# A saved plan's apply compares its final plans with the earlier run's.
clean_step "show v2 apply tfplan" "$d" "$db" apply -input=false -no-color tfplan
clean_step "show destroy" "$d" "$db" destroy -auto-approve -input=false -no-color

d=$WORK/multi db=$WORK/multi.db
new_dir "$top_srcdir/tests/e2e/configs/multi" "$d"
(cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "multi: init"
clean_step "multi apply" "$d" "$db" apply -auto-approve -input=false -no-color
clean_step "multi destroy" "$d" "$db" destroy -auto-approve -input=false -no-color

# Two things of one type, one planned with little configured (its plan
# tells it from the other only by what it leaves null): each plan named by
# its own address, so the final plans compare with their own first plans.
d=$WORK/bundle db=$WORK/bundle.db
new_dir "$top_srcdir/tests/e2e/configs/bundle" "$d"
(cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "bundle: init"
clean_step "two things, one barely configured: apply" "$d" "$db" apply -auto-approve -input=false \
    -no-color
check_eq "  ... each plan named by its own address" \
    "$(sqlite3 "$db" "SELECT group_concat(a.address, ' ') FROM calls c JOIN call_addresses a
        ON a.call_id = c.id WHERE c.rpc = 'PlanResourceChange' AND c.type_name = 'tftest6_thing'
        AND json_extract(c.request_json, '$.config.entries') IS NULL ORDER BY c.id")" \
    "tftest6_thing.b tftest6_thing.b"

d=$WORK/count db=$WORK/count.db
new_dir "$top_srcdir/tests/e2e/configs/count" "$d"
(cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "count: init"
clean_step "count plan -out" "$d" "$db" plan -input=false -no-color -out=tfplan
clean_step "count apply tfplan" "$d" "$db" apply -input=false -no-color tfplan
clean_step "count destroy" "$d" "$db" destroy -auto-approve -input=false -no-color

finish
