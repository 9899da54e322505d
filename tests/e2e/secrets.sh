#!/usr/bin/env bash
# Secrets as core sees them. Values the configuration marks sensitive (a
# sensitive variable into a plain string, into a map, through a template
# and a function; a sensitive output; a provider's sensitive attribute
# copied into another provider's plain one) reach the providers unmarked:
# once `tftap run` returns, none of them may be readable through tftap:
# not in the SQLite file, its -wal or -shm, tftap.log, show, calls --json,
# export, the web API, a bundle, a push into PostgreSQL. What tofu itself
# shows is the reference: each value is hidden by `tofu show` too, and
# the tftest provider's own schema marks none of the attributes used but
# `secret`. A run recorded with --record-sensitive keeps them, and push
# refuses it without --allow-secrets; its bundle still hides them.
. "$(dirname "$0")/lib.sh"
need_peers

db=$WORK/tftap.db w=$WORK/w
mkdir -p "$w"
S1=hunter2-topsecret-A1     # a sensitive variable into a plain string and a template
S2=lower-secret-b2          # through a function: upper(), so LOWER-SECRET-B2 reaches the provider
S3=map-secret-c3            # a sensitive map variable's value, into a map (protocol 5)
S4=schema-secret-d4         # the provider's sensitive attribute, copied into a plain one
S5=default-secret-e5        # a sensitive variable's default, into a dynamic value
S6=json-secret-f6           # a sensitive variable from a .auto.tfvars.json file
UPPER_S2=LOWER-SECRET-B2
TMPL="prefix-$S1-suffix"
cat >"$w/main.tf" <<TF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
    tftest5 = { source = "tftap/tftest5" }
  }
}
variable "secret" {
  type      = string
  sensitive = true
}
variable "lower" {
  type      = string
  sensitive = true
}
variable "m" {
  type      = map(string)
  sensitive = true
}
variable "dflt" {
  type      = string
  sensitive = true
  default   = "$S5"
}
variable "j" {
  type      = string
  sensitive = true
}
resource "tftest6_thing" "plain" { string_attr = var.secret }
resource "tftest6_thing" "tmpl" { string_attr = "prefix-\${var.secret}-suffix" }
resource "tftest6_thing" "fn" { string_attr = upper(var.lower) }
resource "tftest5_pet" "map" { keepers = var.m }
resource "tftest6_thing" "gen" { secret = "$S4" }
resource "tftest5_thing" "copy" { string_attr = tftest6_thing.gen.secret }
resource "tftest6_thing" "dyn" { dynamic_attr = { d = var.dflt, j = var.j } }
output "out" {
  value     = "out-\${var.secret}"
  sensitive = true
}
TF
cat >"$w/terraform.tfvars" <<TF
m = { k = "$S3" }
TF
echo "{\"j\": \"$S6\"}" >"$w/secrets.auto.tfvars.json"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
export TF_VAR_lower=$S2
ALL=("$S1" "$S2" "$UPPER_S2" "$S3" "$S4" "$S5" "$S6" "$TMPL")

# hits FILE...: how many of the secrets any of the files holds (bytes, as grep -a sees them).
hits() {
    local n=0 s
    for s in "${ALL[@]}"; do
        n=$((n + $(cat "$@" 2>/dev/null | grep -a -c -F -- "$s")))
    done
    echo "$n"
}
# db_files: the database and whatever lies beside it.
db_files() { ls "$db" "$db-wal" "$db-shm" "$WORK/tftap.log" "$(dirname "$db")/tftap.log" 2>/dev/null; }

# ---- a plain plan: only the configuration tells (no state, no saved plan) ----------
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -var "secret=$S1" \
    >"$WORK/plan.out" 2>"$WORK/plan.err")
check_eq "plan exits 0" "$?" 0
check "tofu's own plan hides the variables (reference)" \
    bash -c "grep -q 'sensitive value' '$WORK/plan.out' && ! grep -q -F '$S1' '$WORK/plan.out'"
plan_run=$(last_run "$db")
# The values core marks in a plain plan that only the configuration tells: the variables'.
VARS=("$S1" "$S2" "$S3" "$S5" "$S6")
var_hits=0
for s in "${VARS[@]}"; do var_hits=$((var_hits + $(cat $(db_files) | grep -a -c -F -- "$s"))); done
check_eq "plain plan: no sensitive variable's value in the database files" "$var_hits" 0
"$TFTAP" --db "$db" show "$plan_run" >"$WORK/plan.show" 2>&1
check_eq "plain plan: show holds none of the variables" \
    "$(for s in "${VARS[@]}"; do grep -c -F -- "$s" "$WORK/plan.show"; done | paste -sd+ | bc)" 0
check "plain plan: show says where a value was hidden" grep -q 'sensitive' "$WORK/plan.show"
check_eq "plain plan: the -var argument is hidden in the record" \
    "$(sqlite3 "$db" "SELECT instr(args, '(sensitive value)') > 0 AND instr(args, '$S1') = 0 FROM runs WHERE id = $plan_run")" 1

# ---- apply: the state after marks everything core hides -------------------------
(cd "$w" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    -var "secret=$S1" >"$WORK/apply.out" 2>"$WORK/apply.err")
check_eq "apply exits 0" "$?" 0
apply_run=$(last_run "$db")
(cd "$w" && tofu show -no-color >"$WORK/tofu.show")
check_eq "tofu show hides every secret (reference)" "$(hits "$WORK/tofu.show")" 0
check "the state holds them (so they did reach the providers)" \
    bash -c "[ \"\$(grep -c -F -- '$S4' '$w/terraform.tfstate')\" -gt 0 ]"
check_eq "apply: no secret in the database, -wal, -shm or log" "$(hits $(db_files))" 0
check_eq "the write-ahead log is empty after the run" "$(stat -c %s "$db-wal" 2>/dev/null || echo 0)" 0
"$TFTAP" --db "$db" show "$apply_run" >"$WORK/apply.show" 2>&1
check_eq "apply: show holds no secret" "$(hits "$WORK/apply.show")" 0
check "apply: show names the copied secret's resource" grep -q 'tftest5_thing.copy' "$WORK/apply.show"
"$TFTAP" --db "$db" calls "$apply_run" --json >"$WORK/calls.json" 2>&1
check_eq "apply: calls --json holds no secret" "$(hits "$WORK/calls.json")" 0
"$TFTAP" --db "$db" export "$apply_run" >"$WORK/export.jsonl" 2>&1
check_eq "apply: export holds no secret" "$(hits "$WORK/export.jsonl")" 0
"$TFTAP" --db "$db" check "$apply_run" >"$WORK/check.txt" 2>&1
check_eq "apply: check holds no secret" "$(hits "$WORK/check.txt")" 0
check "apply: calls --json is JSON, the values still there as hashes" \
    bash -c "jq -e '[.. | objects | select(has(\"\$sensitive\"))] | length > 0' '$WORK/calls.json' >/dev/null"
check_eq "apply: every call's values are JSON after the redaction" \
    "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $apply_run AND
        ((request_json IS NOT NULL AND NOT json_valid(request_json)) OR
         (response_json IS NOT NULL AND NOT json_valid(response_json)))")" 0
# The same secret hashes alike wherever it is: the plain copy and the provider's own sensitive attribute.
gen_hash=$(sqlite3 "$db" "SELECT json_extract(c.request_json, '$.config.secret') FROM calls c
    JOIN call_addresses a ON a.call_id = c.id WHERE c.run_id = $apply_run AND a.address = 'tftest6_thing.gen'
    AND c.rpc = 'ApplyResourceChange'")
copy_hash=$(sqlite3 "$db" "SELECT json_extract(c.request_json, '$.config.string_attr') FROM calls c
    JOIN call_addresses a ON a.call_id = c.id WHERE c.run_id = $apply_run AND a.address = 'tftest5_thing.copy'
    AND c.rpc = 'ApplyResourceChange'")
check "the copied secret hashes as the provider's own sensitive value ($copy_hash)" \
    bash -c "[ -n '$gen_hash' ] && [ '$gen_hash' = '$copy_hash' ]"
red=$(sqlite3 "$db" "SELECT redactions FROM runs WHERE id = $apply_run")
check "apply: the run counts what each rule redacted ($red)" \
    bash -c "echo '$red' | jq -e '.core_mark > 0' >/dev/null"

# ---- a plain plan of new instances: what only a saved plan would mark ----------------
# No state, no saved plan: the configuration tells which attributes core
# marks: sensitive("literal"), a function of a sensitive variable (sha256
# through a local), a sensitive number, a schema-sensitive value through a
# function (base64encode) and through a local (upper), a provider function
# of a sensitive variable, a function of a child module's sensitive output.
# tofu's own plan hides each of them; so must tftap, by the value each
# attribute was given, in every call of every provider.
wc=$WORK/wc
mkdir -p "$wc"
CPW=pw-secret-P9 CNUM=918273.5 CLIT=literal-secret-L7 CGEN=schema-secret-G8
CHASH=$(printf %s "$CPW" | sha256sum | cut -c1-64)
CB64=$(printf %s "$CGEN" | base64)
CREV=$(printf %s "$CPW" | rev)
CMD5=$(printf %s module-out-M3 | md5sum | cut -c1-32)
CUP=SCHEMA-SECRET-G8
cat >"$wc/main.tf" <<'TF'
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
    tftest5 = { source = "tftap/tftest5" }
  }
}
variable "pw" {
  type      = string
  sensitive = true
}
variable "n" {
  type      = number
  sensitive = true
}
locals {
  hashed = sha256(var.pw)
}
resource "tftest6_thing" "lit" { string_attr = sensitive("literal-secret-L7") }
resource "tftest6_thing" "hash" { string_attr = local.hashed }
resource "tftest6_thing" "num" { number_attr = var.n }
resource "tftest6_thing" "gen" { secret = "schema-secret-G8" }
resource "tftest6_thing" "fn" {
  string_attr = base64encode(
    tftest6_thing.gen.secret
  )
}
resource "tftest5_thing" "rev" { string_attr = provider::tftest6::reverse(var.pw) }
module "m" { source = "./mod" }
resource "tftest6_thing" "mod" { list_attr = [md5(module.m.tok)] }
locals {
  gen_secret = tftest6_thing.gen.secret
}
resource "tftest6_thing" "loc" { set_attr = [upper(local.gen_secret)] }
TF
mkdir -p "$wc/mod"
cat >"$wc/mod/main.tf" <<'TF'
output "tok" {
  value     = "module-out-M3"
  sensitive = true
}
TF
(cd "$wc" && tofu init -input=false -no-color >/dev/null) || not_ok "init (configuration marks)"
(cd "$wc" && TF_VAR_n=$CNUM "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color \
    -var "pw=$CPW" >"$WORK/cplan.out" 2>&1)
check_eq "configuration marks: plan exits 0" "$?" 0
cplan_run=$(last_run "$db")
CMARKED=("$CPW" "$CNUM" "$CLIT" "$CGEN" "$CHASH" "$CB64" "$CREV" "$CMD5" "$CUP")
# chits FILE...: how many of the values core marks here any of the files holds.
chits() {
    local n=0 s
    for s in "${CMARKED[@]}"; do n=$((n + $(cat "$@" 2>/dev/null | grep -a -c -F -- "$s"))); done
    echo "$n"
}
check_eq "configuration marks: tofu's own plan hides all eight (reference)" \
    "$(grep -c -e '= (sensitive value)' -e '^ *+ (sensitive value),$' "$WORK/cplan.out") $(chits "$WORK/cplan.out")" "8 0"
check_eq "configuration marks: none of the values in the database files" "$(chits $(db_files))" 0
"$TFTAP" --db "$db" show "$cplan_run" >"$WORK/cplan.show" 2>&1
check_eq "configuration marks: show hides all eight as tofu does" \
    "$(grep -c '= (sensitive value)' "$WORK/cplan.show") $(chits "$WORK/cplan.show")" "8 0"
"$TFTAP" --db "$db" calls "$cplan_run" --json >"$WORK/cplan.calls" 2>&1
check_eq "configuration marks: calls --json holds none" "$(chits "$WORK/cplan.calls")" 0
check "configuration marks: the provider function's answer is redacted too" \
    bash -c "jq -e '[.[] | select(.rpc == \"CallFunction\") | .response_json.result | objects | has(\"\$sensitive\")] | any' '$WORK/cplan.calls' >/dev/null"
cred=$(sqlite3 "$db" "SELECT redactions FROM runs WHERE id = $cplan_run")
check "configuration marks: counted by rule, the function's answer as a known secret ($cred)" \
    bash -c "echo '$cred' | jq -e '.core_mark > 0 and .known_secret > 0' >/dev/null"
"$TFTAP" --db "$db" export "$cplan_run" >"$WORK/cplan.export" 2>&1
check_eq "configuration marks: export holds none" "$(chits "$WORK/cplan.export")" 0
"$TFTAP" --db "$db" bundle "$cplan_run" -o "$WORK/cplan.tftap" >/dev/null 2>&1
check_eq "configuration marks: a bundle holds none" "$(chits "$WORK/cplan.tftap")" 0

# ---- a provider's words: a secret quoted in an error diagnostic ------------------------
# The framework's own error for a number that is not an integer quotes it:
# a sensitive variable's value, given as text and converted to a number by
# core, comes back inside the diagnostic's detail (tofu prints it: core
# does not redact what a provider says). tftap cuts the value out of the
# words and keeps the rest.
wd=$WORK/wd
RATIO=7315.0625
new_dir "$top_srcdir/tests/e2e/configs/quoted-secret" "$wd"
(cd "$wd" && tofu init -input=false -no-color >/dev/null) || not_ok "init (words)"
(cd "$wd" && TF_VAR_ratio=$RATIO "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color \
    >"$WORK/words.out" 2>&1)
check_eq "words: plan fails (the provider refuses the value)" "$?" 1
words_run=$(last_run "$db")
check "words: the provider quoted the value in its error (tofu shows it)" grep -q -F "$RATIO" "$WORK/words.out"
check_eq "words: not in the database files" "$(cat $(db_files) | grep -a -c -F -- "$RATIO")" 0
"$TFTAP" --db "$db" show "$words_run" >"$WORK/words.show" 2>&1
check_eq "words: show holds it nowhere, and says where it was" \
    "$(grep -c -F -- "$RATIO" "$WORK/words.show") $(grep -c 'Value .*(sensitive value).* is not an integer' "$WORK/words.show")" "0 1"
"$TFTAP" --db "$db" calls "$words_run" --json >"$WORK/words.calls" 2>&1
check_eq "words: calls --json holds it nowhere" "$(grep -c -F -- "$RATIO" "$WORK/words.calls")" 0
check "words: the diagnostic is still text, its summary whole" \
    bash -c "jq -e '[.[] | .response_json.diagnostics? // [] | .[] | select(.summary == \"Configuration Read Error\" and (.detail | type) == \"string\" and (.detail | contains(\"(sensitive value)\")))] | length == 1' '$WORK/words.calls' >/dev/null"
wred=$(sqlite3 "$db" "SELECT redactions FROM runs WHERE id = $words_run")
check "words: counted as a known secret cut out ($wred)" \
    bash -c "echo '$wred' | jq -e '.known_secret == 1' >/dev/null"
"$TFTAP" --db "$db" export "$words_run" >"$WORK/words.export" 2>&1
check_eq "words: export holds it nowhere" "$(grep -c -F -- "$RATIO" "$WORK/words.export")" 0
"$TFTAP" --db "$db" bundle "$words_run" -o "$WORK/words.tftap" >/dev/null 2>&1
check_eq "words: a bundle holds it nowhere" "$(grep -a -c -F -- "$RATIO" "$WORK/words.tftap")" 0
ALL+=("$RATIO" "${CMARKED[@]}")

# ---- a provider's words: a schema-sensitive value quoted in its error -----------------
# tftest's thing with fail = "quote-secret" refuses its plan with an error
# whose detail quotes its schema-sensitive `secret`. Nothing in the
# configuration marks it: at the run's end only its hash is known, so the
# recorder cuts it out of the call's words while it decodes the call.
wq=$WORK/wq
QSECRET=quoted-schema-secret-g7
mkdir -p "$wq"
cat >"$wq/main.tf" <<TF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
resource "tftest6_thing" "q" {
  secret = "$QSECRET"
  fail   = "quote-secret"
}
TF
(cd "$wq" && tofu init -input=false -no-color >/dev/null) || not_ok "init (quoted schema secret)"
(cd "$wq" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >"$WORK/qs.out" 2>&1)
check_eq "schema words: plan fails (the provider refuses the value)" "$?" 1
qs_run=$(last_run "$db")
check "schema words: the provider quoted the value in its error (tofu shows it)" \
    grep -q -F "$QSECRET" "$WORK/qs.out"
check_eq "schema words: not in the database files" "$(cat $(db_files) | grep -a -c -F -- "$QSECRET")" 0
"$TFTAP" --db "$db" calls "$qs_run" --json >"$WORK/qs.calls" 2>&1
check_eq "schema words: calls --json holds it nowhere" "$(grep -c -F -- "$QSECRET" "$WORK/qs.calls")" 0
check "schema words: the diagnostic keeps its words, the value cut out" \
    bash -c "jq -e '[.[] | .response_json.diagnostics? // [] | .[] | select(.summary == \"tftest: secret refused\" and .detail == \"the secret \\\"(sensitive value)\\\" is not accepted here\")] | length >= 1' '$WORK/qs.calls' >/dev/null"
"$TFTAP" --db "$db" show "$qs_run" >"$WORK/qs.show" 2>&1
check_eq "schema words: show holds it nowhere" "$(grep -c -F -- "$QSECRET" "$WORK/qs.show")" 0
ALL+=("$QSECRET")

# ---- the web API ---------------------------------------------------------------------
: >"$WORK/serve.url"
"$TFTAP" serve --db "$db" >"$WORK/serve.url" 2>"$WORK/serve.err" </dev/null &
serve_pid=$!
wait_for 600 grep -q '^http' "$WORK/serve.url" || not_ok "serve started"
url=$(head -n 1 "$WORK/serve.url")
base=${url%%/\?token=*}
token=${url##*token=}
: >"$WORK/api.txt"
api() { curl -s -f "$base$1$([[ $1 == *\?* ]] && echo '&' || echo '?')token=$token"; }
for path in "/api/runs/$apply_run" "/api/runs/$apply_run/calls" "/api/runs/$apply_run/changes" \
    "/api/runs/$apply_run/check" "/api/runs/$apply_run/verdict" "/api/runs?verdict=1"; do
    api "$path" >>"$WORK/api.txt"
done
for run in "$apply_run" "$cplan_run" "$words_run"; do
    api "/api/runs/$run/calls" >>"$WORK/api.txt"
    for id in $(sqlite3 "$db" "SELECT id FROM calls WHERE run_id = $run"); do
        api "/api/runs/$run/calls/$id" >>"$WORK/api.txt"
    done
done
check "web API: answered ($(wc -c <"$WORK/api.txt") bytes)" bash -c "[ \$(wc -c <'$WORK/api.txt') -gt 1000 ]"
check_eq "web API: no secret" "$(hits "$WORK/api.txt")" 0
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null

# ---- a bundle -----------------------------------------------------------------------
"$TFTAP" --db "$db" bundle "$apply_run" -o "$WORK/b.tftap" >"$WORK/bundle.txt" 2>&1
check_eq "bundle: written" "$?" 0
check_eq "bundle: no secret in the file" "$(hits "$WORK/b.tftap")" 0
check "bundle: the summary counts by rule ($(grep redacted "$WORK/bundle.txt"))" \
    grep -Eq 'by core \(the plan or state\)' "$WORK/bundle.txt"
check "bundle: core-marked values counted" \
    bash -c "grep -E 'redacted:' '$WORK/bundle.txt' | grep -Eq ', [1-9][0-9]* by core'"
# Counted exactly: as many as the bundle holds markers, the rules adding up.
bmarks=$(sqlite3 "$WORK/b.tftap" "SELECT sum((length(coalesce(request_json, '')) -
    length(replace(coalesce(request_json, ''), '\$sensitive', ''))) / 10 +
    (length(coalesce(response_json, '')) -
    length(replace(coalesce(response_json, ''), '\$sensitive', ''))) / 10) FROM calls")
bsaid=$(sed -n 's/^  redacted: *\([0-9]*\) sensitive values\{0,1\} keyed afresh: \([0-9]*\) [^,]*, \([0-9]*\) by core[^,]*, \([0-9]*\) equal.*/\1 \2+\3+\4/p' "$WORK/bundle.txt")
check_eq "bundle: the count is the markers it holds, schema + core + known = all" \
    "${bsaid%% *} $(echo "${bsaid#* }" | bc)" "$bmarks $bmarks"

# ---- replay of the redacted apply: the recorded providers answer, in a fresh directory ----
mkdir -p "$WORK/ra"
cp "$w/main.tf" "$w/terraform.tfvars" "$w/secrets.auto.tfvars.json" "$WORK/ra/"
(cd "$WORK/ra" && "$TFTAP" replay "$apply_run" --db "$db" -- tofu apply -auto-approve \
    -input=false -no-color -var "secret=$S1" >"$WORK/ra.out" 2>"$WORK/ra.err")
ra_rc=$?
check_eq "replay of the redacted apply exits 0 ($(grep -m 1 'no recorded call' "$WORK/ra.err"))" "$ra_rc" 0
check "... and creates what the apply created" grep -q 'Apply complete! Resources: 7 added' "$WORK/ra.out"
check_eq "replay: no secret in the database files" "$(hits $(db_files))" 0

# ---- a plan of the applied configuration: the state before marks -------------------
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -var "secret=$S1" \
    >/dev/null 2>&1)
check_eq "plan after apply: no secret in the database files" "$(hits $(db_files))" 0

# ---- a saved plan of a change: before_sensitive and after_sensitive -------------------
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -out=tfplan \
    -var "secret=${S1}-changed" >/dev/null 2>&1)
ALL+=("${S1}-changed" "prefix-${S1}-changed-suffix")
check_eq "plan -out of a change: no secret, old or new, in the database files" \
    "$(hits $(db_files))" 0
(cd "$w" && "$TFTAP" run --db "$db" -- tofu apply -input=false -no-color tfplan >/dev/null 2>&1)
check_eq "apply PLANFILE: no secret in the database files" "$(hits $(db_files))" 0
change_run=$(last_run "$db")
# diff and mock print values: the old and the new secret's runs side by side,
# and mock blocks from the applied values.
"$TFTAP" --db "$db" diff "$apply_run" "$change_run" >"$WORK/diff.txt" 2>&1
check "diff: the two applies differ where the secret changed ($(wc -l <"$WORK/diff.txt") lines)" \
    grep -q 'string_attr' "$WORK/diff.txt"
check_eq "diff: holds no secret, old or new" "$(hits "$WORK/diff.txt")" 0
"$TFTAP" --db "$db" diff "$apply_run" "$change_run" --json >"$WORK/diff.json" 2>&1
check_eq "diff --json: holds no secret, old or new" "$(hits "$WORK/diff.json")" 0
"$TFTAP" --db "$db" mock "$apply_run" >"$WORK/mock.hcl" 2>&1
check "mock: blocks written" grep -q 'mock_provider' "$WORK/mock.hcl"
check_eq "mock: holds no secret" "$(hits "$WORK/mock.hcl")" 0

# ---- under tftap wrap (CI): no end of the command is seen; each recorder redacts ---------
# what the local state, the sensitive variables (values from the arguments and
# the environment the CLI passes on) and the schema's secrets' copies tell.
wdb=$WORK/wrap.db ww=$WORK/ww
mkdir -p "$ww"
cp "$w/main.tf" "$w/terraform.tfvars" "$w/secrets.auto.tfvars.json" "$ww/"
(cd "$ww" && tofu init -input=false -no-color >/dev/null 2>&1) || not_ok "init for wrap"
wout=$(cd "$ww" && "$TFTAP" wrap --db "$wdb" --out "$WORK/wshims" 2>"$WORK/wrap.err")
(cd "$ww" && eval "$wout" && TFTAP_RUN_ID= tofu apply -auto-approve -input=false -no-color \
    -var "secret=$S1" >"$WORK/wapply.out" 2>&1)
check_eq "wrap: apply exits 0" "$?" 0
check "wrap: the recorders finished" wait_for 600 recorders_done "$WORK/wshims"
check "wrap: calls recorded" test "$(sqlite3 "$wdb" "SELECT count(*) FROM calls")" -gt 20
# The values known from here: the variables (all of them: -var, TF_VAR_, tfvars,
# default), the template and upper() of one, and the copy of the provider's secret.
WRAPPED=("$S1" "$S2" "$UPPER_S2" "$S3" "$S5" "$S6" "$S4" "$TMPL")
wrap_hits=0
for s in "${WRAPPED[@]}"; do
    wrap_hits=$((wrap_hits + $(cat "$wdb" "$wdb-wal" "$wdb-shm" 2>/dev/null | grep -a -c -F -- "$s")))
done
check_eq "wrap: none of the variables' values, their template or the schema secret's copy" \
    "$wrap_hits" 0

# ---- --record-sensitive: kept, and only where asked ----------------------------------
(cd "$w" && "$TFTAP" run --db "$WORK/kept.db" --record-sensitive -- tofu plan -input=false \
    -no-color -var "secret=${S1}-changed" >/dev/null 2>&1)
kept_run=$(last_run "$WORK/kept.db")
check_eq "--record-sensitive: the run says it keeps values" \
    "$(sqlite3 "$WORK/kept.db" "SELECT values_kept FROM runs WHERE id = $kept_run")" 1
check "--record-sensitive: the values are kept (as asked)" \
    bash -c "[ \"\$(cat '$WORK/kept.db' '$WORK/kept.db-wal' 2>/dev/null | grep -a -c -F -- '$S4')\" -gt 0 ]"
"$TFTAP" --db "$WORK/kept.db" bundle "$kept_run" -o "$WORK/kept.tftap" >"$WORK/kept.bundle" 2>&1
check_eq "--record-sensitive: its bundle holds no secret" "$(hits "$WORK/kept.tftap")" 0
"$TFTAP" push "$kept_run" --db "$WORK/kept.db" --to "$WORK/shared.db" >"$WORK/push.out" 2>"$WORK/push.err"
check_eq "push of a --record-sensitive run: refused (exit 1)" "$?" 1
check "... saying why" grep -q 'record-sensitive' "$WORK/push.err"
check_eq "... nothing pushed" "$(sqlite3 "$WORK/shared.db" "SELECT count(*) FROM runs" 2>/dev/null || echo 0)" 0
"$TFTAP" push "$kept_run" --db "$WORK/kept.db" --to "$WORK/shared.db" --allow-secrets >/dev/null 2>&1
check_eq "push --allow-secrets: pushed as it is" "$?" 0

finish
