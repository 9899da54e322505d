#!/usr/bin/env bash
# Issue 24, "never misnamed": every address tftap gives a call is held
# against what OpenTofu itself says of that instance (the plan JSON of a
# saved plan, the state before and after), for configurations with count,
# for_each keys with spaces and quotes, instances that differ by one
# attribute (null or a value), by nothing at all, count.index-derived
# values, sets, secrets, a data source and nested modules with count. Plans
# and applies run several times (parallel walks change the call order);
# a failed apply (its plan made again offline), import (the command and a
# block), tofu test (truth: its own -json -verbose) and replays too. A
# call is misnamed when a value it knows (planned, prior or new state; a
# secret or an unknown aside) disagrees with every object core reports for
# its address, or its id with every id there. 0 misnamed, every call named
# where the documents can name it, and `tftap check` finds nothing on runs
# tofu accepted (before: "final-plan at .prefix expected "cc" actual null").
. "$(dirname "$0")/lib.sh"
need_peers
w=$WORK/w db=$WORK/tftap.db
new_dir "$top_srcdir/tests/e2e/configs/naming" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# {address: [objects]}: every object the show -json documents give an
# address (states, a plan's prior state, planned values and changes).
cat >"$WORK/truth.jq" <<'EOF'
[ .[] | ((.. | objects | select(has("address") and has("mode") and has("values"))
          | {a: .address, v: .values}),
         (.resource_changes[]? | ({a: .address, v: .change.before}, {a: .address, v: .change.after}))) ]
| map(select(.v != null)) | group_by(.a) | map({key: .[0].a, value: map(.v)}) | from_entries
EOF
# Each call (v_resource_changes rows) with its verdict: named, unnamed or
# misnamed.
cat >"$WORK/judge.jq" <<'EOF'
def known: (type == "object" and (has("$unknown") or has("$sensitive") or has("$undecoded"))) | not;
def bare: if type == "object" and (keys == ["type", "value"]) then .value else . end;
def norm: if type == "array" and all(.[]; type != "object" and type != "array") then sort else . end;
# What core leaves out of a plan's after is unknown there.
def agrees($o; $v):
  all($v | to_entries[] | select(.key != "id" and (.value | known));
      . as $e | ($o | has($e.key) | not) or (($o[$e.key] | bare | norm) == ($e.value | bare | norm)));
def idok($objs; $v): ($v.id | type) != "string" or any($objs[]; .id == $v.id);
def fits($objs; $v): ($v | type) != "object" or (any($objs[]; agrees(.; $v)) and idok($objs; $v));
($truth[0]) as $all | ($after[0]) as $read
| map(. as $row | (if $row.method == "ReadDataSource" then $read else $all end) as $t | . + {verdict: (
    if $row.address == null then
      # A pet's id is random words: two instances whose ids collided are
      # the same object to a call carrying that id (it stays unnamed).
      ([$row.prior, $row.planned, $row.new] | map(select(. != null) | fromjson
        | select(type == "object") | .id | select(type == "string"))) as $ids
      | if any($ids[]; . as $id | [$t | to_entries[] | select(any(.value[]; .id == $id))]
          | length >= 2) then "twins" else "unnamed" end
    elif $t[$row.address] == null then "misnamed"
    else $t[$row.address] as $objs
      | if [$row.prior, $row.planned, $row.new] | map(select(. != null) | fromjson | select(. != null))
           | all(. as $v | fits($objs; $v)) then "named" else "misnamed" end
    end)})
EOF

total_misnamed=0
summary=

# judge KIND RUN DOC...: the run's calls against the documents.
judge() {
    local kind=$1 run=$2
    shift 2
    jq -s -f "$WORK/truth.jq" "$@" >"$WORK/truth.json" || not_ok "$kind: truth documents"
    # A data source read is of what the run read: the documents after it.
    jq -s -f "$WORK/truth.jq" "${@:2}" >"$WORK/truth-after.json" || not_ok "$kind: truth after"
    # With each UpgradeResourceState: what it upgraded to is the object
    # before (its prior state).
    sqlite3 -json "$db" "SELECT call_id, method, address, address_note, prior, planned, new
        FROM v_resource_changes WHERE run_id = $run
        UNION ALL SELECT c.id, c.rpc, a.address, a.address_note,
            c.response_json -> '\$.upgraded_state', NULL, NULL
        FROM calls c LEFT JOIN call_addresses a ON a.call_id = c.id
        WHERE c.run_id = $run AND c.rpc = 'UpgradeResourceState' ORDER BY call_id" >"$WORK/calls.json"
    jq --slurpfile truth "$WORK/truth.json" --slurpfile after "$WORK/truth-after.json" \
        -f "$WORK/judge.jq" "$WORK/calls.json" \
        >"$WORK/verdicts-$run.json" || not_ok "$kind: judging"
    local n named misnamed twins
    n=$(jq length "$WORK/verdicts-$run.json")
    named=$(jq '[.[] | select(.verdict == "named")] | length' "$WORK/verdicts-$run.json")
    misnamed=$(jq '[.[] | select(.verdict == "misnamed")] | length' "$WORK/verdicts-$run.json")
    twins=$(jq '[.[] | select(.verdict == "twins")] | length' "$WORK/verdicts-$run.json")
    total_misnamed=$((total_misnamed + misnamed))
    summary="$summary
  $kind (run $run): $n calls, $named named, $misnamed misnamed"
    # Left unnamed where ids collided: said, and counted with the named.
    if [ "$twins" != 0 ]; then
        summary="$summary, $twins unnamed about instances whose random ids collided"
        named=$((named + twins))
    fi
    check_eq "$kind (run $run): no call misnamed" "$misnamed" 0
    [ "$misnamed" = 0 ] || jq -c '.[] | select(.verdict == "misnamed") | {call_id, method, address}' \
        "$WORK/verdicts-$run.json" | head -5
    check "$kind (run $run): calls recorded" test "$n" -gt 0
    LAST_N=$n LAST_NAMED=$named
}

# tftap check finds nothing on a run tofu accepted.
checked() { # KIND
    "$TFTAP" check --db "$db" last >"$WORK/check.txt" 2>&1
    check_eq "$1: tftap check finds nothing" "$?" 0
    [ -s "$WORK/check.txt" ] && grep -v 'no provider contract violations' "$WORK/check.txt" | head -3
}

state() { (cd "$w" && tofu show -json) >"$WORK/$1.json"; }
tftap_run() { # SUBCOMMAND ARGS...: what tofu says goes to a file; its exit code is ours
    local sub=$1
    shift
    (cd "$w" && "$TFTAP" run --db "$db" -- tofu "$sub" -input=false -no-color "$@" \
        >"$WORK/out-$sub.txt" 2>&1)
}

state s0
# A plan not saved, of nothing yet: no document names what it creates, so
# tftap run makes the same plan again offline, saved, against the run's own
# recording, and names every call from it (count, for_each, modules with
# count, data sources with count). Core's own saved plan of the same
# (unrecorded) is the truth. Three times: parallel walks change the call
# order.
(cd "$w" && tofu plan -input=false -no-color -var gen=1 -out=truth0.plan >/dev/null &&
    tofu show -json truth0.plan) >"$WORK/truth0-plan.json"
ls -A "$w" >"$WORK/files-before-plan"
for round in 1 2 3; do
    tftap_run plan -var gen=1
    check_eq "plan, nothing applied ($round): exit code" "$?" 0
    run=$(last_run "$db")
    judge "plan, nothing applied ($round)" "$run" "$WORK/s0.json" "$WORK/truth0-plan.json"
    check_eq "plan, nothing applied ($round): every call named" "$LAST_NAMED" "$LAST_N"
    checked "plan, nothing applied ($round)"
done
run_plain0=$run
check_eq "plan, nothing applied: fe[\"c\"] (prefix cc) named once, as core plans it" \
    "$(sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = $run
        AND address = 'tftest5_pet.fe[\"c\"]' AND planned ->> '$.prefix' = 'cc'")" 1
ls -A "$w" >"$WORK/files-after-plan"
check_eq "plan, nothing applied: the plan made again leaves no file behind" \
    "$(diff "$WORK/files-before-plan" "$WORK/files-after-plan")" ""
check_eq "plan, nothing applied: ... nor its directory" \
    "$(ls -d "${TMPDIR:-/tmp}"/tftap-replan-* 2>/dev/null)" ""
# -detailed-exitcode (2: changes) is the user's; the plan made again is the same.
tftap_run plan -var gen=1 -detailed-exitcode
check_eq "plan -detailed-exitcode: exit code" "$?" 2
judge "plan -detailed-exitcode" "$(last_run "$db")" "$WORK/s0.json" "$WORK/truth0-plan.json"
check_eq "plan -detailed-exitcode: every call named" "$LAST_NAMED" "$LAST_N"

gen=0
for round in 1 2; do
    gen=$((gen + 1))
    tftap_run plan -out=p$round -var gen=$gen
    check_eq "plan -out $round: exit code" "$?" 0
    (cd "$w" && tofu show -json p$round) >"$WORK/p$round.json"
    eval "run_plan$round=$(last_run "$db")"
    judge "plan -out $round" "$(last_run "$db")" "$WORK/s$((round - 1)).json" "$WORK/p$round.json"
    check_eq "plan -out $round: every call named" "$LAST_NAMED" "$LAST_N"
    checked "plan -out $round"
    if [ "$round" = 1 ]; then
        # The issue's case: one change per instance, fe["c"] (prefix "cc")
        # once, and the instances equal to each other paired.
        "$TFTAP" show --db "$db" last >"$WORK/show.txt"
        check_eq "plan -out: fe[\"c\"] shown once" \
            "$(grep -cF '# tftest5_pet.fe["c"] will be created' "$WORK/show.txt")" 1
        check_eq "plan -out: fe[\"d\\\"q\"] shown once" \
            "$(grep -cF '# tftest5_pet.fe["d\"q"] ' "$WORK/show.txt")" 1
        check "plan -out: nested module instances named" \
            grep -qF '# module.m[1].module.leaf[0].tftest5_pet.y will be created' "$WORK/show.txt"
    fi

    tftap_run apply p$round
    check_eq "apply PLANFILE $round: exit code" "$?" 0
    state s$round
    eval "run_apply$round=$(last_run "$db")"
    judge "apply PLANFILE $round" "$(last_run "$db")" "$WORK/s$((round - 1)).json" "$WORK/s$round.json"
    check_eq "apply PLANFILE $round: every call named" "$LAST_NAMED" "$LAST_N"
    checked "apply PLANFILE $round"
done

# Module addresses filter show, check, diff and mock as any address does:
# module.m (every instance, and the modules within), module.m[0],
# module.m.TYPE.NAME (in every instance of m), a nested module.
shown() { # RUN FILTER: the addresses `show --json` lists, sorted, one line
    "$TFTAP" show --db "$db" --all --json "$1" "$2" | jq -r '[.changes[].address] | unique | join(" ")'
}
check_eq "filter module.m" "$(shown $run_plan1 module.m)" \
    "module.m[0].data.tftest6_echo.d module.m[0].module.leaf[0].tftest5_pet.y module.m[0].module.leaf[1].tftest5_pet.y module.m[0].tftest5_pet.x module.m[1].data.tftest6_echo.d module.m[1].module.leaf[0].tftest5_pet.y module.m[1].module.leaf[1].tftest5_pet.y module.m[1].tftest5_pet.x"
check_eq "filter module.m[0]" "$(shown $run_plan1 'module.m[0]')" \
    "module.m[0].data.tftest6_echo.d module.m[0].module.leaf[0].tftest5_pet.y module.m[0].module.leaf[1].tftest5_pet.y module.m[0].tftest5_pet.x"
check_eq "filter module.m.data.tftest6_echo.d" "$(shown $run_plan1 module.m.data.tftest6_echo.d)" \
    "module.m[0].data.tftest6_echo.d module.m[1].data.tftest6_echo.d"
check_eq "filter module.m.tftest5_pet.x" "$(shown $run_plan1 module.m.tftest5_pet.x)" \
    "module.m[0].tftest5_pet.x module.m[1].tftest5_pet.x"
check_eq "filter module.m[1].module.leaf" "$(shown $run_plan1 'module.m[1].module.leaf')" \
    "module.m[1].module.leaf[0].tftest5_pet.y module.m[1].module.leaf[1].tftest5_pet.y"
check_eq "filter module.m.module.leaf[0].tftest5_pet.y" \
    "$(shown $run_plan1 'module.m.module.leaf[0].tftest5_pet.y')" \
    "module.m[0].module.leaf[0].tftest5_pet.y module.m[1].module.leaf[0].tftest5_pet.y"
"$TFTAP" show --db "$db" "$run_plan1" module.mm >/dev/null 2>"$WORK/mm.err"
check_eq "filter module.mm: names nothing, a usage error" "$?" 2
check_eq "filter tftest5_pet.eq: root instances only" "$(shown $run_plan1 tftest5_pet.eq)" \
    "tftest5_pet.eq[0] tftest5_pet.eq[1] tftest5_pet.eq[2]"
"$TFTAP" check --db "$db" "$run_apply1" 'module.m[0]' >"$WORK/check-m.txt"
check_eq "check module.m[0]: exit code" "$?" 0
"$TFTAP" diff --db "$db" "$run_plan1" "$run_plan2" 'module.m[1].module.leaf' --json >"$WORK/diff-m.json"
check_eq "diff module.m[1].module.leaf: only those addresses" \
    "$(jq -r '[.changes[].address] | unique | join(" ")' "$WORK/diff-m.json")" \
    "module.m[1].module.leaf[0].tftest5_pet.y module.m[1].module.leaf[1].tftest5_pet.y"
"$TFTAP" mock --db "$db" "$run_apply1" 'module.m[1]' >"$WORK/mock-m.tf"
check_eq "mock module.m[1]: exit code" "$?" 0
check "mock module.m[1]: defaults from an instance of it" \
    grep -qE '# defaults from module\.m\[1\]\.' "$WORK/mock-m.tf"
check "mock module.m[1]: nothing of another" sh -c "! grep -qE 'defaults from (module\.m\[0\]|tftest)' '$WORK/mock-m.tf'"

# Applies that plan for themselves: replacements (cnt[0]'s keepers come
# and go) and in-place updates (t[1] from gen 2 on).
for gen in 3 4; do
    tftap_run apply -auto-approve -var gen=$gen
    check_eq "apply gen=$gen: exit code" "$?" 0
    state s$gen
    judge "apply gen=$gen" "$(last_run "$db")" "$WORK/s$((gen - 1)).json" "$WORK/s$gen.json"
    check_eq "apply gen=$gen: every call named" "$LAST_NAMED" "$LAST_N"
    checked "apply gen=$gen"
done
cp "$w/terraform.tfstate" "$WORK/raw4.tfstate"

# An apply that fails: f[1]'s create fails, f[0] and f[2] (equal) are
# created. Nothing it cannot tell is named.
ls -A "$w" >"$WORK/files-before"
tftap_run apply -auto-approve -var gen=$gen -var fail=true
check_eq "failed apply: exit code" "$?" 1
state s5
# The truth of what it planned: core's own saved plan of the same, from
# the state before (unrecorded, in a copy).
new_dir "$w" "$WORK/wcopy"
(cd "$WORK/wcopy" && cp "$WORK/raw4.tfstate" terraform.tfstate &&
    tofu plan -input=false -no-color -refresh=false -var gen=$gen -var fail=true -out=t.plan >/dev/null &&
    tofu show -json t.plan) >"$WORK/s5-plan.json"
judge "failed apply" "$(last_run "$db")" "$WORK/s4.json" "$WORK/s5-plan.json" "$WORK/s5.json"
# f[1]'s plans and apply agree with no instance the states hold: the plan
# the apply made, made again offline against its recording, names it.
check_eq "failed apply: every call named" "$LAST_NAMED" "$LAST_N"
check_eq "failed apply: the failed call named as tofu names it" \
    "$(sqlite3 "$db" "SELECT address FROM v_calls WHERE run_id = $(last_run "$db")
        AND rpc = 'ApplyResourceChange' AND failed")" 'tftest6_thing.f[1]'
check "failed apply: tofu names it so" grep -qF 'with tftest6_thing.f[1],' "$WORK/out-apply.txt"
ls -A "$w" >"$WORK/files-after"
check_eq "failed apply: the plan made again leaves no file behind" \
    "$(diff "$WORK/files-before" "$WORK/files-after")" ""
check_eq "failed apply: ... nor its directory" "$(ls -d "${TMPDIR:-/tmp}"/tftap-replan-* 2>/dev/null)" ""
checked "failed apply"

# The same failure from a saved plan: the plan file names every instance it
# applies, f[1] too, whose create fails again (tofu: "with
# tftest6_thing.f[1]").
tftap_run plan -out=pf -var gen=$gen -var fail=true
check_eq "plan -out, a create to fail: exit code" "$?" 0
(cd "$w" && tofu show -json pf) >"$WORK/pf.json"
tftap_run apply pf
check_eq "failed apply PLANFILE: exit code" "$?" 1
check "failed apply PLANFILE: tofu names f[1]" grep -qF 'with tftest6_thing.f[1],' "$WORK/out-apply.txt"
state s5b
judge "failed apply PLANFILE" "$(last_run "$db")" "$WORK/s5.json" "$WORK/pf.json" "$WORK/s5b.json"
check_eq "failed apply PLANFILE: every call named" "$LAST_NAMED" "$LAST_N"
check_eq "failed apply PLANFILE: the failed call named as tofu names it" \
    "$(sqlite3 "$db" "SELECT address FROM v_calls WHERE run_id = $(last_run "$db")
        AND rpc = 'ApplyResourceChange' AND failed")" 'tftest6_thing.f[1]'
checked "failed apply PLANFILE"

# A plan not saved: core's own plan of the same (unrecorded, saved) is the
# truth; new objects cannot be named yet (only calls about existing ones
# are expected named).
tftap_run plan -var gen=5
check_eq "plan: exit code" "$?" 0
run=$(last_run "$db")
(cd "$w" && tofu plan -input=false -no-color -var gen=5 -out=truth.plan >/dev/null &&
    tofu show -json truth.plan) >"$WORK/truth-plan.json"
judge "plan" "$run" "$WORK/s5.json" "$WORK/truth-plan.json"
check_eq "plan: every call about an existing object named" \
    "$(jq '[.[] | select(.verdict == "unnamed" and .prior != "null" and .prior != null)] | length' \
        "$WORK/verdicts-$run.json")" 0
check_eq "plan: every call named (its plan made again)" "$LAST_NAMED" "$LAST_N"
checked "plan"
# The same plan with a -state of its own (not made again: its creates stay
# unnamed), then saved: tftap diff pairs the unnamed creates of the plain
# plan with the named ones, by type and order (before: "only in run A/B").
tftap_run plan -var gen=5 -state=terraform.tfstate
check_eq "plan -state: exit code" "$?" 0
run=$(last_run "$db")
tftap_run plan -out=p5 -var gen=5
check_eq "plan -out 5: exit code" "$?" 0
"$TFTAP" diff --db "$db" "$run" "$(last_run "$db")" --json >"$WORK/diff-plain.json"
check_eq "diff plan, plan -out: nothing only in one run" \
    "$(jq '[.changes[] | select(.kind == "only_in_a" or .kind == "only_in_b")] | length' \
        "$WORK/diff-plain.json")" 0
check "diff plan, plan -out: the plain plan has unnamed calls" test \
    "$(sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = $run AND address IS NULL")" -gt 0

# refresh: every ReadResource, and every call about an existing object,
# named by the object it read, every data source read, and the create
# half of a replacement it planned (and did not apply).
tftap_run refresh -var gen=5
check_eq "refresh: exit code" "$?" 0
state s5r
run=$(last_run "$db")
# What it planned (and did not apply) is what core plans of the same: its
# own saved plan (unrecorded) is the truth of those values.
(cd "$w" && tofu plan -input=false -no-color -var gen=5 -out=truthr.plan >/dev/null &&
    tofu show -json truthr.plan) >"$WORK/truthr-plan.json"
judge "refresh" "$run" "$WORK/s5b.json" "$WORK/truthr-plan.json" "$WORK/s5r.json"
# (A read of one of two pets whose random ids collided is rightly unnamed:
# twins, counted with the named as everywhere here.)
check_eq "refresh: every ReadResource named" \
    "$(jq '[.[] | select(.method == "ReadResource" and .verdict != "named" and .verdict != "twins")] | length' \
        "$WORK/verdicts-$run.json")" 0
check_eq "refresh: every call about an existing object named" \
    "$(jq '[.[] | select(.verdict == "unnamed" and .prior != "null" and .prior != null)] | length' \
        "$WORK/verdicts-$run.json")" 0
# Its reads of data sources with count: named from the state after, which
# holds what it read (the plan made again targets other blocks: what its
# prior state holds of those reads is as before the run, never taken).
check_eq "refresh: every data source read named" \
    "$(jq '[.[] | select(.method == "ReadDataSource" and .verdict != "named")] | length' \
        "$WORK/verdicts-$run.json")" 0
# And its plan of the create half of cnt[0]'s replacement (keepers
# changed), which no document after it lists: after the replacing plan.
check_eq "refresh: every call named" "$LAST_NAMED" "$LAST_N"
check_eq "refresh: the create half named after the replacing plan" \
    "$(sqlite3 "$db" "SELECT address FROM v_resource_changes WHERE run_id = $run
        AND address_note LIKE 'the create half of its replacement (call %)'")" 'tftest5_pet.cnt[0]'
# tftap match, as under tftap wrap, names the same from the same documents
# (it knows the run a refresh: its state after says nothing of what was
# kept).
"$TFTAP" match "$run" --db "$db" --state "$WORK/s5r.json" --before "$WORK/s5b.json" --config "$w" \
    --json >"$WORK/match-refresh.json"
check_eq "refresh, matched again by tftap match: every call named" \
    "$(jq -c '[.named, .calls]' "$WORK/match-refresh.json")" "[$LAST_N,$LAST_N]"
checked "refresh"

# What a destroy reads (data sources) no state after holds: core's own
# saved destroy plan of the same (unrecorded) is the truth.
(cd "$w" && tofu plan -destroy -input=false -no-color -var gen=$gen -out=truthd.plan >/dev/null &&
    tofu show -json truthd.plan) >"$WORK/truthd-plan.json"
tftap_run destroy -auto-approve -var gen=$gen
check_eq "destroy: exit code" "$?" 0
state s6
judge "destroy" "$(last_run "$db")" "$WORK/s5r.json" "$WORK/truthd-plan.json" "$WORK/s6.json"
# Its plan made again (plan -destroy) names its reads of data sources.
check_eq "destroy: every call named" "$LAST_NAMED" "$LAST_N"
check_eq "destroy: module.m's reads named (count in a module with count)" \
    "$(sqlite3 "$db" "SELECT group_concat(address, ' ') FROM (SELECT address FROM v_resource_changes
        WHERE run_id = $(last_run "$db") AND method = 'ReadDataSource' AND type_name = 'tftest6_echo'
        ORDER BY address)")" 'module.m[0].data.tftest6_echo.d module.m[1].data.tftest6_echo.d'
checked "destroy"

# The configuration is read only where it can be read with certainty: a
# heredoc or an override file, and nothing is named from it. (A state file
# of the command's own, -state: its plan is not made again, the
# configuration alone names.)
g=$WORK/giveup
mkdir -p "$g"
cat >"$g/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
resource "tftest6_pet" "solo" {
  length = 2
}
EOF
(cd "$g" && tofu init -input=false -no-color >/dev/null) || not_ok "giveup: init"
named_in_plain_plan() { # the addresses a plain plan of $g names
    (cd "$g" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -state=own.tfstate \
        >/dev/null 2>&1) ||
        not_ok "giveup: plan"
    sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = (SELECT max(id) FROM runs)
        AND address IS NOT NULL"
}
check_eq "config: the only block named" "$(named_in_plain_plan)" 1
printf 'locals {\n  text = <<-EOT\n    {\n  EOT\n}\n' >"$g/heredoc.tf"
check_eq "config with a heredoc: nothing named" "$(named_in_plain_plan)" 0
rm "$g/heredoc.tf"
printf 'resource "tftest6_pet" "solo" {\n  length = 3\n}\n' >"$g/solo_override.tf"
check_eq "config with an override file: nothing named" "$(named_in_plain_plan)" 0

# Under tftap wrap nothing of tftap sees the command end: `tftap match` ties
# its calls to addresses afterwards, from the documents tofu itself writes.
mkdir -p "$WORK/shims"
(cd "$w" && "$TFTAP" wrap --db "$db" --out "$WORK/shims" >/dev/null 2>"$WORK/wrap.err") ||
    { not_ok "wrap"; cat "$WORK/wrap.err"; }
wrapped() { # SUBCOMMAND ARGS...: tofu in $w under the wrap config
    local sub=$1
    shift
    (cd "$w" && TF_CLI_CONFIG_FILE=$WORK/shims/tftap.tfrc tofu "$sub" -input=false -no-color "$@" \
        >"$WORK/out-wrapped.txt" 2>&1)
}
wrapped plan -out=pw -var gen=1
check_eq "wrapped plan -out: exit code" "$?" 0
# Nothing waits for a shim's recorder: it may still be writing.
check "wrapped plan -out: its recorders finished" wait_for 300 recorders_done "$WORK/shims"
run=$(last_run "$db")
check_eq "wrapped plan -out: nothing named before match" \
    "$(sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = $run AND address IS NOT NULL")" 0
(cd "$w" && tofu show -json pw) >"$WORK/pw.json"
"$TFTAP" match --db "$db" "$run" --plan "$WORK/pw.json" --before "$WORK/s6.json" >"$WORK/match.out"
check_eq "match of the wrapped plan: exit code" "$?" 0
judge "wrapped plan -out, then match" "$run" "$WORK/s6.json" "$WORK/pw.json"
check_eq "wrapped plan -out, then match: every call named" "$LAST_NAMED" "$LAST_N"
check_eq "match says what it named" "$(cat "$WORK/match.out")" \
    "run $run: $LAST_N of $LAST_N resource calls named (tftap show $run says why the others are not)"
checked "wrapped plan -out, then match"
wrapped apply pw
check_eq "wrapped apply PLANFILE: exit code" "$?" 0
check "wrapped apply PLANFILE: its recorders finished" wait_for 300 recorders_done "$WORK/shims"
run=$(last_run "$db")
state s7
"$TFTAP" match --db "$db" "$run" --plan "$WORK/pw.json" --state "$WORK/s7.json" \
    --before "$WORK/s6.json" >/dev/null
check_eq "match of the wrapped apply: exit code" "$?" 0
judge "wrapped apply PLANFILE, then match" "$run" "$WORK/s6.json" "$WORK/pw.json" "$WORK/s7.json"
check_eq "wrapped apply PLANFILE, then match: every call named" "$LAST_NAMED" "$LAST_N"
checked "wrapped apply PLANFILE, then match"
"$TFTAP" match --db "$db" "$run" >/dev/null 2>&1
check_eq "match without a document: usage, exit 2" "$?" 2
echo '{"not": ' >"$WORK/bad.json"
"$TFTAP" match --db "$db" "$run" --state "$WORK/bad.json" >/dev/null 2>&1
check_eq "match of a document that is not JSON: exit 1" "$?" 1
# Matched before its last recorder was done (here: its end taken off, as
# a run cut short has none), the count is not the whole run's: said so.
cp "$db" "$WORK/open.db"
sqlite3 "$WORK/open.db" "UPDATE runs SET ended_us = NULL WHERE id = $run"
"$TFTAP" match --db "$WORK/open.db" "$run" --plan "$WORK/pw.json" --json >"$WORK/open.json" \
    2>"$WORK/open.err"
check_eq "match of a run without an end: exit 0, ended false" "$? $(jq .ended "$WORK/open.json")" "0 false"
check "... and says so" grep -q "^tftap: run $run has no end in the record yet" "$WORK/open.err"
check "tftap check of a run without an end: says it has not ended" \
    sh -c "'$TFTAP' check --db '$WORK/open.db' $run | grep -q '; the run has not ended: calls recorded after this are not checked\.\$'"
check_eq "... --json: running" "$("$TFTAP" check --db "$WORK/open.db" "$run" --json | jq .running)" true
"$TFTAP" diff --db "$WORK/open.db" "$run" "$run" >/dev/null 2>"$WORK/open-diff.err"
check_eq "tftap diff of a run without an end: the same (exit 0), a warning per side" \
    "$? $(grep -c "^tftap: warning: run $run has no end in the record yet" "$WORK/open-diff.err")" "0 2"
"$TFTAP" diff --db "$db" "$run" "$run" >/dev/null 2>"$WORK/closed-diff.err"
check_eq "tftap diff of an ended run: no warning" "$? $(wc -c <"$WORK/closed-diff.err")" "0 0"
check_eq "tftap check of an ended run: no running, no such words" \
    "$("$TFTAP" check --db "$db" "$run" --json | jq .running) $("$TFTAP" check --db "$db" "$run" | grep -c 'not ended')" "null 0"
"$TFTAP" match --db "$db" "$run" --plan "$WORK/pw.json" --state "$WORK/s7.json" \
    --before "$WORK/s6.json" --json >"$WORK/closed.json" 2>"$WORK/closed.err"
check_eq "match of an ended run: ended true, nothing on stderr" \
    "$(jq .ended "$WORK/closed.json") $(wc -c <"$WORK/closed.err")" "true 0"
check_eq "... and the names it had stay" \
    "$(sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = $run AND address IS NOT NULL")" "$LAST_NAMED"

# A create that fails where the configuration makes the address certain
# (one tftest6_thing block, no count): named after it, as tofu itself names
# it ("with tftest6_thing.bad"), though no document holds the object.
fw=$WORK/fail1
new_dir "$top_srcdir/tests/e2e/configs/naming-fail" "$fw"
(cd "$fw" && tofu init -input=false -no-color >/dev/null) || not_ok "fail1: init"
(cd "$fw" && tofu show -json) >"$WORK/f0.json"
(cd "$fw" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/out-fail1.txt" 2>&1)
check_eq "failed create, the only block: exit code" "$?" 1
check "failed create, the only block: tofu names it" \
    grep -qF 'with tftest6_thing.bad,' "$WORK/out-fail1.txt"
(cd "$fw" && tofu show -json) >"$WORK/f1.json"
(cd "$fw" && tofu plan -input=false -no-color -out=truth.plan >/dev/null &&
    tofu show -json truth.plan) >"$WORK/f1-plan.json"
run=$(last_run "$db")
judge "failed create, the only block" "$run" "$WORK/f0.json" "$WORK/f1-plan.json" "$WORK/f1.json"
check_eq "failed create, the only block: every call named" "$LAST_NAMED" "$LAST_N"
check_eq "failed create, the only block: its calls named as tofu names it" \
    "$(sqlite3 "$db" "SELECT DISTINCT address FROM v_resource_changes WHERE run_id = $run
        AND type_name = 'tftest6_thing'")" 'tftest6_thing.bad'
check_eq "failed create, the only block: the failed apply among them" \
    "$(sqlite3 "$db" "SELECT address FROM v_calls WHERE run_id = $run AND rpc = 'ApplyResourceChange'
        AND failed")" 'tftest6_thing.bad'

# import: `tofu import ADDRESS ID` reads the object it imports
# (ReadResource); the state after names it, by its id among instances of
# for_each (keys with a space and a quote) and the only block of a type.
iw=$WORK/imp
mkdir -p "$iw"
cat >"$iw/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
  }
}
resource "tftest5_server" "imp" {
  for_each = toset(["a b", "c\"q", "d"])
  name     = each.key
}
resource "tftest5_server" "one" {
  name = "one"
}
EOF
(cd "$iw" && tofu init -input=false -no-color >/dev/null) || not_ok "import: init"
(cd "$iw" && tofu show -json) >"$WORK/i0.json"
n=0
for pair in 'tftest5_server.imp["a b"] srv-ab' 'tftest5_server.one srv-one' 'tftest5_server.imp["c\"q"] srv-cq'; do
    n=$((n + 1))
    (cd "$iw" && "$TFTAP" run --db "$db" -- tofu import -input=false -no-color "${pair% *}" "${pair##* }" \
        >"$WORK/out-import.txt" 2>&1)
    check_eq "import $n: exit code" "$?" 0
    (cd "$iw" && tofu show -json) >"$WORK/i$n.json"
    judge "import ${pair% *}" "$(last_run "$db")" "$WORK/i$((n - 1)).json" "$WORK/i$n.json"
    check_eq "import $n: every call named" "$LAST_NAMED" "$LAST_N"
    check_eq "import $n: the read named as tofu imported it" \
        "$(sqlite3 "$db" "SELECT group_concat(DISTINCT address) FROM v_resource_changes
            WHERE run_id = $(last_run "$db") AND method = 'ReadResource'")" "${pair% *}"
    checked "import $n"
done
# An import block: a plan not saved, then an apply, import the last one.
cat >"$iw/import.tf" <<'EOF'
import {
  to = tftest5_server.imp["d"]
  id = "srv-d"
}
EOF
(cd "$iw" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >"$WORK/out-import.txt" 2>&1)
check_eq "plan with an import block: exit code" "$?" 0
run=$(last_run "$db")
(cd "$iw" && tofu plan -input=false -no-color -out=truth.plan >/dev/null &&
    tofu show -json truth.plan) >"$WORK/i-plan.json"
judge "plan with an import block" "$run" "$WORK/i3.json" "$WORK/i-plan.json"
check_eq "plan with an import block: the imported object's read and plan named after its target" \
    "$(sqlite3 "$db" "SELECT group_concat(DISTINCT address) FROM v_resource_changes WHERE run_id = $run
        AND prior ->> '$.id' = 'srv-d'")" 'tftest5_server.imp["d"]'
check_eq "plan with an import block: every call but the replacements' creates named" \
    "$(jq '[.[] | select(.verdict == "unnamed" and .prior != "null" and .prior != null)] | length' \
        "$WORK/verdicts-$run.json")" 0
checked "plan with an import block"
(cd "$iw" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/out-import.txt" 2>&1)
check_eq "apply with an import block: exit code" "$?" 0
(cd "$iw" && tofu show -json) >"$WORK/i4.json"
# What it imports is in no state: tofu's own plan of the same (the same
# id imported, the same object read) says it.
judge "apply with an import block" "$(last_run "$db")" "$WORK/i3.json" "$WORK/i-plan.json" "$WORK/i4.json"
checked "apply with an import block"
check_eq "apply with an import block: every call named" "$LAST_NAMED" "$LAST_N"
# An id that is no literal (a template): nothing is taken from the block.
cp "$iw/import.tf" "$WORK/import.tf.kept"
sed -i 's/id = "srv-d"/id = "srv-${"e"}"/; s/imp\["d"\]/imp["e"]/' "$iw/import.tf"
sed -i 's/"c\\"q", "d"\]/"c\\"q", "d", "e"]/' "$iw/main.tf"
(cd "$iw" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >"$WORK/out-import.txt" 2>&1)
check_eq "plan with a templated import id: exit code" "$?" 0
(cd "$iw" && tofu plan -input=false -no-color -out=truth.plan >/dev/null &&
    tofu show -json truth.plan) >"$WORK/i-plan-e.json"
judge "plan with a templated import id" "$(last_run "$db")" "$WORK/i3.json" "$WORK/i-plan-e.json"
check_eq "plan with a templated import id: the imported object named by the plan made again" \
    "$(sqlite3 "$db" "SELECT count(address) || ' of ' || count(*) || ' ' || group_concat(DISTINCT address)
        FROM v_resource_changes WHERE run_id = $(last_run "$db") AND prior ->> '$.id' = 'srv-e'")" \
    '2 of 2 tftest5_server.imp["e"]'
(cd "$iw" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -state=terraform.tfstate \
    >"$WORK/out-import.txt" 2>&1)
check_eq "plan with a templated import id, -state: exit code" "$?" 0
check_eq "plan with a templated import id, not made again: nothing taken from the block" \
    "$(sqlite3 "$db" "SELECT count(address) || ' of ' || count(*) FROM v_resource_changes
        WHERE run_id = $(last_run "$db") AND prior ->> '$.id' = 'srv-e'")" "0 of 2"

# tofu test: its run blocks plan and apply the configuration in states of
# their own, destroyed at its end; no state file holds them. The truth is
# what tofu prints with -json -verbose (each run block's plan or state),
# the user's own flags, which tftap leaves as they are. count and for_each
# (a key with a space), a data source with count, and run blocks whose variables change what count
# derives (many[1]: length 5, or 6; many[2] new): one address, other
# values in another run block (a plan of them too: no plan of one run
# block is held against another's by the check). Twice: parallel walks
# change the call order.
tw=$WORK/tst
mkdir -p "$tw/tests"
cat >"$tw/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "n" {
  default = 2
}
resource "tftest6_pet" "solo" {
  length = 2
}
resource "tftest5_pet" "many" {
  count  = var.n
  length = count.index * var.n + 3
}
resource "tftest5_pet" "fe" {
  for_each = toset(["a b", "c"])
  length   = 2
  prefix   = each.key
}
data "tftest6_echo" "d" {
  count = var.n
  input = "d${count.index * var.n}"
}
EOF
cat >"$tw/tests/n.tftest.hcl" <<'EOF'
run "plan" {
  command = plan
}
run "plan3" {
  command = plan
  variables {
    n = 3
  }
}
run "apply" {
  assert {
    condition     = length(tftest5_pet.many) == 2
    error_message = "two pets"
  }
}
run "three" {
  variables {
    n = 3
  }
}
EOF
(cd "$tw" && tofu init -input=false -no-color >/dev/null) || not_ok "test: init"
ls -A "$tw" >"$WORK/files-before-test"
echo '{}' >"$WORK/empty.json"
for round in 1 2; do
    (cd "$tw" && "$TFTAP" run --db "$db" -- tofu test -no-color -json -verbose >"$WORK/out-test.json" 2>&1)
    check_eq "tofu test ($round): exit code" "$?" 0
    jq -c 'select(.test_plan) | .test_plan' "$WORK/out-test.json" >"$WORK/test-plan.json"
    jq -c 'select(.test_state) | .test_state' "$WORK/out-test.json" >"$WORK/test-state.json"
    check "tofu test ($round): its plan and state printed" test -s "$WORK/test-plan.json" -a -s "$WORK/test-state.json"
    run=$(last_run "$db")
    judge "tofu test ($round)" "$run" "$WORK/empty.json" "$WORK/test-plan.json" "$WORK/test-state.json"
    # Its run blocks, run again offline against the recording, print their
    # plans and states: every call named, those of count's and for_each's
    # instances, of the run block that changes many[1], and of the destroy at
    # its end too.
    check_eq "tofu test ($round): every call named (its run blocks run again)" "$LAST_NAMED" "$LAST_N"
    check_eq "tofu test ($round): every resource change call of the run named" \
        "$(sqlite3 "$db" "SELECT count(address) || ' of ' || count(*) FROM v_resource_changes
            WHERE run_id = $run")" \
        "$(sqlite3 "$db" "SELECT count(*) || ' of ' || count(*) FROM v_resource_changes WHERE run_id = $run")"
    check_eq "tofu test ($round): many[1] named with both lengths its run blocks gave it" \
        "$(sqlite3 "$db" "SELECT group_concat(l) FROM (SELECT DISTINCT planned ->> '$.length' AS l
            FROM v_resource_changes WHERE run_id = $run AND address = 'tftest5_pet.many[1]'
            AND planned ->> '$.length' IS NOT NULL ORDER BY l)")" "5,6"
    check_eq "tofu test ($round): every instance named, destroyed at its end" \
        "$(sqlite3 "$db" "SELECT group_concat(address, ' ') FROM (SELECT DISTINCT d.address
            FROM v_resource_changes d WHERE d.run_id = $run AND d.method = 'ApplyResourceChange'
            AND d.new = 'null' AND d.call_id > (SELECT max(call_id) FROM v_resource_changes
            WHERE run_id = $run AND method = 'ApplyResourceChange' AND new != 'null')
            ORDER BY d.address)")" \
        'tftest5_pet.fe["a b"] tftest5_pet.fe["c"] tftest5_pet.many[0] tftest5_pet.many[1] tftest5_pet.many[2] tftest6_pet.solo'
    check_eq "tofu test ($round): the only tftest6_pet block's calls named after it" \
        "$(sqlite3 "$db" "SELECT group_concat(DISTINCT address) FROM v_resource_changes
            WHERE run_id = $run AND type_name = 'tftest6_pet'")" tftest6_pet.solo
    ls -A "$tw" >"$WORK/files-after-test"
    check_eq "tofu test ($round): run again, it leaves no file behind" \
        "$(diff "$WORK/files-before-test" "$WORK/files-after-test")" ""
    checked "tofu test ($round)"
done
# A test that fails (exit code 1: run "apply" asserts two pets, -var n=3
# makes three) planned and applied what it did: run again with the
# user's -var, it fails the same, and names every call.
(cd "$tw" && "$TFTAP" run --db "$db" -- tofu test -no-color -json -verbose -var n=3 \
    >"$WORK/out-test1.json" 2>&1)
check_eq "tofu test that fails: exit code" "$?" 1
jq -c 'select(.test_plan) | .test_plan' "$WORK/out-test1.json" >"$WORK/test-plan1.json"
jq -c 'select(.test_state) | .test_state' "$WORK/out-test1.json" >"$WORK/test-state1.json"
run=$(last_run "$db")
judge "tofu test that fails" "$run" "$WORK/empty.json" "$WORK/test-plan1.json" "$WORK/test-state1.json"
check_eq "tofu test that fails: every call named" "$LAST_NAMED" "$LAST_N"
# A second test file applying the same configuration from nothing again:
# its creates ask what the first file's asked, and were given other
# random ids. Run again, the replaying providers' processes share their
# claims (one process per run block and command, one after another):
# each file's creates are given their own ids, and every call is named.
cp "$tw/tests/n.tftest.hcl" "$tw/tests/again.tftest.hcl"
(cd "$tw" && "$TFTAP" run --db "$db" -- tofu test -no-color -json -verbose >"$WORK/out-test3.json" 2>&1)
check_eq "tofu test, creates asked twice: exit code" "$?" 0
jq -c 'select(.test_plan) | .test_plan' "$WORK/out-test3.json" >"$WORK/test-plan3.json"
jq -c 'select(.test_state) | .test_state' "$WORK/out-test3.json" >"$WORK/test-state3.json"
run=$(last_run "$db")
judge "tofu test, creates asked twice" "$run" "$WORK/empty.json" "$WORK/test-plan3.json" \
    "$WORK/test-state3.json"
check_eq "tofu test, creates asked twice: every call named" "$LAST_NAMED" "$LAST_N"
# Each create named after the state of its own test file: the id it was
# given is in that file's states under its name (the files ran one after
# the other: a create's file is that of the last state printed before it).
jq -r 'select(.test_state) | .["@testfile"] as $f | .test_state.values.root_module.resources[]
    | select(.mode == "managed") | "\($f)\t\(.address)\t\(.values.id)"' "$WORK/out-test3.json" |
    sort -u >"$WORK/ids-by-file3.txt"
sqlite3 "$db" "SELECT address || char(9) || (new ->> '$.id') FROM v_resource_changes
    WHERE run_id = $run AND method = 'ApplyResourceChange' AND new != 'null'" |
    sort -u >"$WORK/created3.txt"
check_eq "tofu test, creates asked twice: both files' creates, each id once" \
    "$(wc -l <"$WORK/created3.txt")" "$(cut -f2- "$WORK/ids-by-file3.txt" | sort -u | wc -l)"
check_eq "tofu test, creates asked twice: every create's id under its name in a file's state" \
    "$(comm -23 "$WORK/created3.txt" <(cut -f2- "$WORK/ids-by-file3.txt" | sort -u))" ""
# Ids are random words: now and then the two files give an address the
# same one. The addresses given other ids by each file make the case.
apart=$(cut -f2,3 "$WORK/ids-by-file3.txt" | sort -u | cut -f1 | uniq -d | wc -l)
check "tofu test, creates asked twice: the two files gave addresses other ids ($apart)" \
    test "$apart" -ge 1
checked "tofu test, creates asked twice"
# Replayed, the same test gives each file its own ids again, as recorded:
# the replaying processes hand those creates out in recorded order.
(cd "$tw" && "$TFTAP" replay "$run" --db "$db" -- tofu test -no-color -json -verbose \
    >"$WORK/out-test3r.json" 2>"$WORK/out-test3r.err")
check_eq "tofu test, creates asked twice, replayed: exit code" "$?" 0
check "tofu test, creates asked twice, replayed: in step with the recording" \
    sh -c "! grep -q 'did not keep in step' '$WORK/out-test3r.err'"
check_eq "tofu test, creates asked twice, replayed: each file's ids as recorded" \
    "$(jq -r 'select(.test_state) | .["@testfile"] as $f | .test_state.values.root_module.resources[]
        | select(.mode == "managed") | "\($f)\t\(.address)\t\(.values.id)"' "$WORK/out-test3r.json" |
        sort -u | md5sum)" "$(md5sum <"$WORK/ids-by-file3.txt")"
# --claims DIR keeps the claims for a caller (tftap run's test run again
# reads them): one file per contested call answered, none saying the replay
# left the recording's steps; a directory holding another replay's claims
# is refused.
mkdir -p "$WORK/claims"
(cd "$tw" && "$TFTAP" replay "$db:$run" --no-record --claims "$WORK/claims" -- \
    tofu test -no-color >/dev/null 2>"$WORK/claims.err")
check_eq "replay --claims DIR: exit code" "$?" 0
check "replay --claims DIR: the creates of both files claimed (one file each)" \
    test "$(find "$WORK/claims" -name '[0-9]*' | wc -l)" -ge $((2 * apart))
check "replay --claims DIR: in step" test ! -e "$WORK/claims/out-of-step"
(cd "$tw" && "$TFTAP" replay "$db:$run" --no-record --claims "$WORK/claims" -- \
    tofu test -no-color >/dev/null 2>"$WORK/claims2.err")
check_eq "replay --claims DIR, not empty: refused" "$?" 1
check "replay --claims DIR, not empty: says why" grep -q 'the directory is not empty' "$WORK/claims2.err"
rm "$tw/tests/again.tftest.hcl"
# Instances of count over equal values, each create given a random id in
# one provider process: a replay could give either id to either instance,
# so the test is not run again. Nothing misnamed, and each call says why.
te=$WORK/tst-eq
mkdir -p "$te/tests"
cat >"$te/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
  }
}
resource "tftest5_pet" "same" {
  count  = 2
  length = 3
}
EOF
printf 'run "apply" {}\n' >"$te/tests/eq.tftest.hcl"
(cd "$te" && tofu init -input=false -no-color >/dev/null) || not_ok "test of equal instances: init"
(cd "$te" && "$TFTAP" run --db "$db" -- tofu test -no-color -json -verbose >"$WORK/out-test4.json" 2>&1)
check_eq "tofu test of equal instances: exit code" "$?" 0
jq -c 'select(.test_state) | .test_state' "$WORK/out-test4.json" >"$WORK/test-state4.json"
judge "tofu test of equal instances" "$(last_run "$db")" "$WORK/empty.json" "$WORK/test-state4.json"
# The two ids are random words (1 in 14,400 that they collide). Equal, the
# creates were answered alike: the test is run again and pairs the calls.
if [ "$(jq -r '.values.root_module.resources[]? | .values.id' "$WORK/test-state4.json" |
        sort -u | wc -l)" = 1 ]; then
    why='identical to same[_]'
    summary="$summary
  tofu test of equal instances: their random ids collided, so it was run again"
else
    why='%object of a test: no plan or state of the test is left to name it, and its run blocks could not be run again offline'
fi
check_eq "tofu test of equal instances: none named (or all, ids collided), each says why" \
    "$(sqlite3 "$db" "SELECT (count(address) = count(*) * ('$why' LIKE 'identical%'))
        || ' ' || (count(*) = sum(address_note LIKE '$why'))
        || ' ' || (count(*) > 5) FROM v_resource_changes WHERE run_id = $(last_run "$db")")" "1 1 1"
checked "tofu test of equal instances"
# A run block that runs another module: its objects may be of the same
# types, and nothing is named from the configuration.
mkdir -p "$tw/other"
cat >"$tw/other/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
resource "tftest6_pet" "other" {
  length = 5
}
EOF
printf 'run "other" {\n  module {\n    source = "./other"\n  }\n}\n' >"$tw/tests/other.tftest.hcl"
(cd "$tw" && tofu init -input=false -no-color >/dev/null) || not_ok "test with a module block: init"
(cd "$tw" && "$TFTAP" run --db "$db" -- tofu test -no-color >"$WORK/out-test2.txt" 2>&1)
check_eq "tofu test with a module block: exit code" "$?" 0
check_eq "tofu test with a module block: nothing named from the configuration" \
    "$(sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = $(last_run "$db")
        AND address IS NOT NULL")" 0
check "tofu test with a module block: its calls recorded" test "$(sqlite3 "$db" "SELECT count(*)
    FROM v_resource_changes WHERE run_id = $(last_run "$db") AND type_name = 'tftest6_pet'")" -gt 2
rm -r "$tw/other" "$tw/tests/other.tftest.hcl"

# Replays: the first plans of the naming configuration, answered by their
# recordings in a directory of their own with nothing applied (as when they
# were recorded), are named as the originals were: wholly (the plan not
# saved by its plan made again, from the replay's own recording).
rw=$WORK/rep
new_dir "$top_srcdir/tests/e2e/configs/naming" "$rw"
(cd "$rw" && tofu init -input=false -no-color >/dev/null) || not_ok "replay: init"
(cd "$rw" && "$TFTAP" replay "$db:$run_plain0" --db "$db" -- tofu plan -input=false -no-color -var gen=1 \
    >"$WORK/out-replay.txt" 2>&1)
check_eq "replayed plan: exit code" "$?" 0
judge "replayed plan" "$(last_run "$db")" "$WORK/empty.json" "$WORK/truth0-plan.json"
check_eq "replayed plan: every call named (its plan made again from the replay's recording)" \
    "$LAST_NAMED" "$LAST_N"
checked "replayed plan"
(cd "$rw" && "$TFTAP" replay "$db:$run_plan1" --db "$db" -- tofu plan -input=false -no-color \
    -var gen=1 -out=pr >"$WORK/out-replay.txt" 2>&1)
check_eq "replayed plan -out: exit code" "$?" 0
(cd "$rw" && tofu show -json pr) >"$WORK/pr.json"
judge "replayed plan -out" "$(last_run "$db")" "$WORK/empty.json" "$WORK/pr.json"
check_eq "replayed plan -out: every call named" "$LAST_NAMED" "$LAST_N"
checked "replayed plan -out"
(cd "$rw" && "$TFTAP" replay "$db:$run_apply1" --db "$db" -- tofu apply -input=false -no-color pr \
    >"$WORK/out-replay.txt" 2>&1)
check_eq "replayed apply PLANFILE: exit code" "$?" 0
(cd "$rw" && tofu show -json) >"$WORK/r1.json"
judge "replayed apply PLANFILE" "$(last_run "$db")" "$WORK/empty.json" "$WORK/pr.json" "$WORK/r1.json"
check_eq "replayed apply PLANFILE: every call named" "$LAST_NAMED" "$LAST_N"
checked "replayed apply PLANFILE"

echo "named and misnamed, per run:$summary"
check_eq "no call misnamed in any run" "$total_misnamed" 0
finish
