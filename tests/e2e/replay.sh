#!/usr/bin/env bash
# tftap replay: a plan and an apply recorded with the project's own
# providers (tftest5 speaks protocol 5, tftest6 protocol 6) are replayed in
# fresh directories whose CLI config can install no provider, with the
# recorded provider binaries gone: the same plan text, the same state and
# the same exit codes, no real provider started, and each replay recorded
# as a run of its own that `tftap diff` finds behaving the same. A changed
# configuration gets the mismatch diagnostic naming the differing path.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
db=$WORK/tftap.db

# A mirror of our own: once the recording is made it is deleted, so that
# the binaries the record names exist nowhere.
for p in tftest5 tftest6; do
    mkdir -p "$WORK/mirror/registry.opentofu.org/tftap/$p"
    cp -R "$PEERS/mirror/registry.opentofu.org/tftap/$p/0.1.0" \
        "$WORK/mirror/registry.opentofu.org/tftap/$p/"
done
printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' \
    "$WORK/mirror" >"$WORK/record.tfrc"
mkdir -p "$WORK/nothing"
printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' \
    "$WORK/nothing" >"$WORK/none.tfrc"

config() { # NAME
    cat <<EOF
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
provider "tftest6" { token = "provider-token" }
variable "name" {
  type    = string
  default = "$1"
}
resource "tftest5_pet" "p" { length = 2 }
resource "tftest6_thing" "t" {
  string_attr = var.name
  int_attr    = 3
  secret      = "s3cr3t-from-config"
}
data "tftest6_echo" "e" {
  input = { pet = tftest5_pet.p.id, n = 1 }
}
output "echo" { value = data.tftest6_echo.e.result }
EOF
}

# The plan text without the override warning's temporary directories (the
# shims' paths differ from run to run, and so does the order of the list),
# nor the times an apply took (a slower machine or build says 1s for 0s).
normalized() {
    grep -v '^ - tftap/tftest[56] in /' "$1" |
        sed -E 's/ complete after [0-9hms]+( |$)/ complete after Ns\1/; /: Still [a-z]+\.\.\. \[/d'
}

# ---- the recording ------------------------------------------------------------
mkdir -p "$WORK/orig"
config hello >"$WORK/orig/main.tf"
export TF_CLI_CONFIG_FILE=$WORK/record.tfrc
(cd "$WORK/orig" && tofu init -input=false -no-color >/dev/null) || not_ok "init of the original"
(cd "$WORK/orig" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color \
    -detailed-exitcode -out=p.plan >"$WORK/plan.orig" 2>"$WORK/plan.orig.err")
plan_rc=$?
run_plan=$(last_run "$db")
(cd "$WORK/orig" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/apply.orig" 2>"$WORK/apply.orig.err")
apply_rc=$?
run_apply=$(last_run "$db")
check_eq "the original plan has changes (-detailed-exitcode)" "$plan_rc" 2
check_eq "plan -detailed-exitcode's 2 (changes) reads as success" \
    "$("$TFTAP" show --db "$db" "$run_plan" | head -n 1 | cut -d, -f1)" \
    "Run $run_plan succeeded: the command exited 2"
check_eq "the original apply succeeds" "$apply_rc" 0
check_eq "both protocols recorded" \
    "$(sqlite3 "$db" "SELECT group_concat(DISTINCT protocol) FROM (SELECT protocol FROM processes
        WHERE run_id = $run_plan ORDER BY protocol)")" "5,6"
check "the original state holds the configuration's secret" \
    grep -q '"secret":"s3cr3t-from-config"' "$WORK/orig/terraform.tfstate"

# ---- no provider anywhere -------------------------------------------------------
rm -rf "$WORK/mirror" "$WORK/orig/.terraform"
bins=$(sqlite3 "$db" "SELECT DISTINCT binary_path FROM processes WHERE run_id IN ($run_plan, $run_apply)")
gone=yes
for b in $bins; do
    case $b in "$WORK"/*) ;; *) gone="no: $b is not ours" ;; esac
    [ -e "$b" ] && gone="no: $b exists"
done
check_eq "the recorded provider binaries exist no more ($(echo "$bins" | wc -l) paths)" "$gone" yes
export TF_CLI_CONFIG_FILE=$WORK/none.tfrc
mkdir -p "$WORK/try"
config hello >"$WORK/try/main.tf"
(cd "$WORK/try" && tofu init -input=false -no-color >"$WORK/try.out" 2>&1)
check "the replay's CLI config can install no provider (init fails)" test $? -ne 0
export TFTEST_RPC_LOG=$WORK/rpc.log

# ---- replaying the plan -----------------------------------------------------------
mkdir -p "$WORK/rp"
config hello >"$WORK/rp/main.tf"
(cd "$WORK/rp" && "$TFTAP" replay "$db:$run_plan" --db "$db" -- tofu plan -input=false -no-color \
    -detailed-exitcode -out=p.plan >"$WORK/plan.rep" 2>"$WORK/plan.rep.err")
check_eq "replayed plan: same exit code" "$?" "$plan_rc"
replay_plan=$(last_run "$db")
if normalized "$WORK/plan.orig" >"$WORK/a" && normalized "$WORK/plan.rep" >"$WORK/b" &&
    cmp -s "$WORK/a" "$WORK/b" && grep -q 'tftest6_thing.t will be created' "$WORK/b"; then
    ok "replayed plan: the same plan text ($(wc -l <"$WORK/b") lines)"
else
    not_ok "replayed plan text (< original, > replay)"
    diff "$WORK/a" "$WORK/b" | head -20
    head -20 "$WORK/plan.rep.err"
fi
check_eq "replayed plan: recorded as a run of its own" "$((replay_plan > run_apply))" 1
"$TFTAP" diff --db "$db" "$run_plan" "$replay_plan" >"$WORK/diff.plan"
check_eq "tftap diff ORIGINAL REPLAY (plan): the providers behaved the same" "$?" 0
check "diff says so" grep -q '^Provider behaved the same: 0 behaviour differences' "$WORK/diff.plan"
check_eq "the replay's providers are the replaying scripts" \
    "$(sqlite3 "$db" "SELECT count(*) FROM processes WHERE run_id = $replay_plan
        AND binary_path LIKE '%/replay/p_/terraform-provider-tftest_'")" \
    "$(sqlite3 "$db" "SELECT count(*) FROM processes WHERE run_id = $replay_plan")"

# ---- replaying the apply ------------------------------------------------------------
mkdir -p "$WORK/ra"
config hello >"$WORK/ra/main.tf"
(cd "$WORK/ra" && "$TFTAP" replay "$db:$run_apply" --db "$db" -- tofu apply -auto-approve \
    -input=false -no-color >"$WORK/apply.rep" 2>"$WORK/apply.rep.err")
check_eq "replayed apply: same exit code" "$?" "$apply_rc"
replay_apply=$(last_run "$db")
# Resources are applied in parallel: their lines come in any order.
if normalized "$WORK/apply.orig" | sort >"$WORK/a" && normalized "$WORK/apply.rep" | sort >"$WORK/b" &&
    cmp -s "$WORK/a" "$WORK/b" && grep -q 'Apply complete! Resources: 2 added' "$WORK/b"; then
    ok "replayed apply: the same output"
else
    not_ok "replayed apply output (< original, > replay)"
    diff "$WORK/a" "$WORK/b" | head -20
    head -20 "$WORK/apply.rep.err"
fi
# The whole state, the configuration's secret included (the recording
# holds only its hash: replay sends back what the request gave).
state() { jq -S '{resources, outputs}' "$1/terraform.tfstate"; }
if state "$WORK/orig" >"$WORK/a" && state "$WORK/ra" >"$WORK/b" && cmp -s "$WORK/a" "$WORK/b" &&
    grep -q '"secret": "s3cr3t-from-config"' "$WORK/b" && grep -q '"id": "thing-' "$WORK/b"; then
    ok "replayed apply: the same state (resources and outputs, secret included)"
else
    not_ok "replayed state (< original, > replay)"
    diff "$WORK/a" "$WORK/b" | head -20
fi
"$TFTAP" diff --db "$db" "$run_apply" "$replay_apply" >"$WORK/diff.apply"
check_eq "tftap diff ORIGINAL REPLAY (apply): the providers behaved the same" "$?" 0
check "no real provider was started by any replay" test ! -e "$WORK/rpc.log"

# ---- a configuration the recording never saw ----------------------------------------
mkdir -p "$WORK/rc"
config changed >"$WORK/rc/main.tf"
(cd "$WORK/rc" && "$TFTAP" replay "$db:$run_plan" --db "$db" -- tofu plan -input=false -no-color \
    >"$WORK/c.out" 2>"$WORK/c.err")
check_eq "changed config: the plan fails" "$?" 1
check "changed config: the mismatch diagnostic" grep -q 'Error: tftap replay: no recorded call matches' "$WORK/c.err"
# The diagnostic's detail is wrapped by the CLI: join its lines.
tr '\n' ' ' <"$WORK/c.err" | tr -s ' ' >"$WORK/c.flat"
check "changed config: it names the call" grep -q 'no recorded call matches [A-Za-z]* of tftest6_thing' "$WORK/c.flat"
check "changed config: it names the differing path and the replayed value" \
    grep -q '\.config\.string_attr: recorded [^,]*, replayed "changed"' "$WORK/c.flat"

# A function has no diagnostics: the mismatch comes back as its error.
mkdir -p "$WORK/rf"
config hello >"$WORK/rf/main.tf"
echo 'output "rev" { value = provider::tftest6::reverse("never recorded") }' >>"$WORK/rf/main.tf"
(cd "$WORK/rf" && "$TFTAP" replay "$db:$run_plan" --db "$db" -- tofu plan -input=false -no-color \
    >"$WORK/f.out" 2>"$WORK/f.err")
check_eq "a function call nothing matches: the plan fails" "$?" 1
tr '\n' ' ' <"$WORK/f.err" | tr -s ' ' >"$WORK/f.flat"
check "... with the mismatch as the function's error" \
    grep -q 'tftap replay: no recorded call matches: no recorded call matches CallFunction' "$WORK/f.flat"

# ---- SOURCE errors ------------------------------------------------------------------
(cd "$WORK/rc" && "$TFTAP" replay "$db:999" -- tofu plan >/dev/null 2>"$WORK/e.err")
check_eq "a run that does not exist: exit 1" "$?" 1
check_eq "... with one line naming it" "$(cat "$WORK/e.err")" "tftap: $db: no run '999'"
check "... and nothing left in TMPDIR" test -z "$(ls -A "$TMPDIR")"

# ---- --out DIR: files for later commands, like tftap wrap -----------------------------
mkdir -p "$WORK/ro"
config hello >"$WORK/ro/main.tf"
before=$(last_run "$db")
export_line=$("$TFTAP" replay "$db" --run "$run_plan" --db "$db" --out "$WORK/out" 2>/dev/null)
check_eq "--out prints the export line" "$export_line" "export TF_CLI_CONFIG_FILE='$WORK/out/tftap.tfrc'"
(cd "$WORK/ro" && TF_CLI_CONFIG_FILE=$WORK/out/tftap.tfrc tofu plan -input=false -no-color \
    -detailed-exitcode -out=p.plan >"$WORK/plan.out" 2>"$WORK/plan.out.err")
check_eq "--out: tofu plan through the written config, same exit code" "$?" "$plan_rc"
wait_for 150 recorders_done "$WORK/out"
if normalized "$WORK/plan.orig" >"$WORK/a" && normalized "$WORK/plan.out" >"$WORK/b" &&
    cmp -s "$WORK/a" "$WORK/b"; then
    ok "--out: the same plan text"
else
    not_ok "--out: the plan text (< original, > replay)"
    diff "$WORK/a" "$WORK/b" | head -20
fi
check_eq "--out: the command was recorded as a run" "$(($(last_run "$db") > before))" 1
check "no real provider was started" test ! -e "$WORK/rpc.log"

# ---- --no-record: the command straight against the recording -------------------------
mkdir -p "$WORK/rn"
config hello >"$WORK/rn/main.tf"
before=$(last_run "$db")
(cd "$WORK/rn" && "$TFTAP" replay "$db" --run "$run_plan" --no-record -- tofu plan -input=false \
    -no-color -detailed-exitcode >"$WORK/norec.out" 2>"$WORK/norec.err")
check_eq "--no-record: the command's exit code" "$?" "$plan_rc"
if normalized "$WORK/plan.orig" >"$WORK/a" && normalized "$WORK/norec.out" >"$WORK/b" &&
    cmp -s "$WORK/a" "$WORK/b"; then
    ok "--no-record: the same plan text"
else
    not_ok "--no-record: the plan text (< original, > replay)"
    diff "$WORK/a" "$WORK/b" | head -20
fi
check_eq "--no-record: nothing recorded" "$(last_run "$db")" "$before"
check "--no-record: no database where it ran" test ! -e "$WORK/rn/.tftap"
check "--no-record: nothing left in TMPDIR" test -z "$(ls -A "$TMPDIR")"
"$TFTAP" replay "$db" --run "$run_plan" --no-record --db "$db" -- tofu plan >/dev/null 2>"$WORK/nr.err"
check_eq "--no-record with --db: a usage error" "$?" 2
"$TFTAP" replay "$db" --run "$run_plan" --no-record >/dev/null 2>&1
check_eq "--no-record without a command: a usage error" "$?" 2
check "no real provider was started" test ! -e "$WORK/rpc.log"

# ---- a SOURCE from someone else -----------------------------------------------------------
# The address goes into the scripts' comment lines: a newline in it must not
# become a shell command.
cp "$db" "$WORK/evil.db"
sqlite3 "$WORK/evil.db" "UPDATE processes SET provider = 'registry.opentofu.org/tftap' ||
    char(10) || 'touch $WORK/pwned' || char(10) || '#/tftest6' WHERE provider LIKE '%/tftest6'"
"$TFTAP" replay "$WORK/evil.db:$run_plan" --db "$db" --out "$WORK/evil" >/dev/null 2>"$WORK/evil.err"
check_eq "an address with a newline in it: exit 1" "$?" 1
check_eq "... with one line naming it" "$(wc -l <"$WORK/evil.err")" 1
check "... and no script written" test ! -e "$WORK/evil/replay"

finish
