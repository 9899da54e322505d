#!/usr/bin/env bash
# The upgrade workflow: the same plan recorded with version 0.1.0 and 0.2.0
# of the project's own provider (tests/peers/tftest/variant.go: a changed
# default, a new requires_replace, a new warning, an attribute added and
# one removed). `tftap diff` must find exactly those differences, and
# nothing else; two runs of one version whose prior states differ (random
# ids) must compare equal. `tftap schema diff` of the two binaries must list
# exactly the schema changes, classified; `tftap schema BINARY --json`, of a
# run and of a file, must equal `tofu providers schema -json`.
. "$(dirname "$0")/lib.sh"
need_peers
for f in "$PEERS/bin/terraform-provider-tftest5-v2" "$PEERS/bin/terraform-provider-tftest6-v2" \
    "$PEERS/tofurc-upgrade"; do
    if ! [ -e "$f" ]; then
        not_ok "peers: $f missing (run scripts/build-peers)"
        finish
    fi
done
export TF_CLI_CONFIG_FILE=$PEERS/tofurc-upgrade
CLI=tofu
db=$WORK/tftap.db

# config VERSION ZONE [b]: tftest6_server.a (and .b with "b") and a random pet.
config() {
    cat <<EOF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6", version = "$1" }
    tftest5 = { source = "tftap/tftest5", version = "$1" }
  }
}
resource "tftest6_server" "a" {
  name = "a"
  zone = "$2"
  port = 8080
}
resource "tftest5_pet" "p" { length = 6 } # ids of 2 words collide 1 in 600
EOF
    if [ "${3:-}" = b ]; then
        printf 'resource "tftest6_server" "b" {\n  name = "b"\n}\n'
    fi
}

# setup DIR: apply 0.1.0 with zone z1 (not recorded), then ask for zone z2
# and a second server.
setup() {
    mkdir -p "$1"
    config 0.1.0 z1 >"$1/main.tf"
    (cd "$1" && tofu init -input=false -no-color >/dev/null &&
        tofu apply -auto-approve -input=false -no-color >/dev/null) || not_ok "$1: applied 0.1.0"
    config 0.1.0 z2 b >"$1/main.tf"
}
plan() { # DIR PLANFILE
    (cd "$1" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -out="$2" >/dev/null) ||
        not_ok "$1: tftap run -- tofu plan"
    last_run "$db"
}

setup "$WORK/a"
setup "$WORK/b"
run_v1=$(plan "$WORK/a" p1)
run_v1b=$(plan "$WORK/b" p1)
(cd "$WORK/b" && tofu providers schema -json >"$WORK/tofu-v1.json") || not_ok "tofu providers schema (0.1.0)"
config 0.2.0 z2 b >"$WORK/a/main.tf"
(cd "$WORK/a" && tofu init -upgrade -input=false -no-color >/dev/null) || not_ok "init -upgrade to 0.2.0"
run_v2=$(plan "$WORK/a" p2)
(cd "$WORK/a" && tofu providers schema -json >"$WORK/tofu-v2.json") || not_ok "tofu providers schema (0.2.0)"

# ---- tftap diff: upgrade ------------------------------------------------------
# One line per finding: behaviour or input, kind, address (or type, or
# provider), method, path, change, old, new (the schema digests left out).
findings() {
    jq -r '.changes[] | [(if .behaviour then "B" else "I" end), .kind,
        (.address // .type // .provider), .method, (.path // "-"), (.change // "-"),
        (if .kind == "schema" then "-" else (.a | tojson) end),
        (if .kind == "schema" then "-" else (.b | tojson) end)] | join(" ")' "$1" | sort
}
"$TFTAP" diff --db "$db" "$run_v1" "$run_v2" --json >"$WORK/up.json"
check_eq "diff of 0.1.0 and 0.2.0 exits 1" "$?" 1
findings "$WORK/up.json" >"$WORK/up.got"
sort >"$WORK/up.want" <<'EOF'
B schema registry.opentofu.org/tftap/tftest6 GetProviderSchema - - - -
B schema registry.opentofu.org/tftap/tftest5 GetSchema - - - -
B attribute tftest6_server.a UpgradeResourceState .tier - null {"source":"provider","value":null}
B action tftest6_server.a PlanResourceChange - - "update" "replace"
B attribute tftest6_server.a PlanResourceChange .size - {"source":"prior","value":"small"} {"source":"provider","value":"medium"}
B attribute tftest6_server.a PlanResourceChange .tier - null {"source":"provider","value":"standard"}
B requires_replace tftest6_server.a PlanResourceChange .zone added null null
B diagnostic tftest6_server.a PlanResourceChange - added null {"severity":"WARNING","summary":"port is deprecated","detail":"tftest 0.2.0 chooses the port itself; remove it from the configuration","attribute":".port"}
B attribute tftest6_server.b PlanResourceChange .size - {"source":"provider","value":"small"} {"source":"provider","value":"medium"}
B attribute tftest6_server.b PlanResourceChange .tier - null {"source":"provider","value":"standard"}
I input tftest6_server.a UpgradeResourceState .legacy - {"source":"prior","value":null} null
I input tftest6_server.a ReadResource .legacy - {"source":"prior","value":null} null
I input tftest6_server.a ReadResource .tier - null {"source":"prior","value":null}
I input tftest6_server.a PlanResourceChange .legacy - {"source":"config","value":null} null
I input tftest6_server.b PlanResourceChange .legacy - {"source":"config","value":null} null
EOF
if cmp -s "$WORK/up.got" "$WORK/up.want"; then
    ok "diff 0.1.0 -> 0.2.0: every difference found, nothing else ($(wc -l <"$WORK/up.want") findings)"
else
    not_ok "diff 0.1.0 -> 0.2.0 findings (< got, > expected)"
    diff "$WORK/up.got" "$WORK/up.want"
fi
check_eq "json counts" "$(jq -c '[.same, .differences, .input_differences]' "$WORK/up.json")" \
    '[false,10,5]'
check_eq "json names both runs' provider versions" \
    "$(jq -r '[.runs[] | .providers["registry.opentofu.org/tftap/tftest6"]] | join(" ")' "$WORK/up.json")" \
    "0.1.0 0.2.0"

"$TFTAP" diff --db "$db" "$run_v1" "$run_v2" >"$WORK/up.txt"
check_eq "text diff exits 1" "$?" 1
check "text: action change" grep -qx '    ~ action: update -> replace' "$WORK/up.txt"
check "text: changed default" \
    grep -qxF '    ~ planned.size: "small" (from prior state) -> "medium" (chosen by provider)' "$WORK/up.txt"
check "text: new requires_replace" grep -qx '    + requires_replace .zone' "$WORK/up.txt"
check "text: new warning" grep -qx '    + Warning: port is deprecated (at .port)' "$WORK/up.txt"
check "text: no colour when not on a terminal" sh -c "! grep -q \$(printf '\\033') '$WORK/up.txt'"

"$TFTAP" diff --db="$db" "$run_v1" "$run_v2" tftest6_server.b --ignore=size --json >"$WORK/b.json"
check_eq "address filter and --ignore" "$(findings "$WORK/b.json" | cut -d' ' -f1-5 | tr '\n' ';')" \
    "B attribute tftest6_server.b PlanResourceChange .tier;I input tftest6_server.b PlanResourceChange .legacy;"
"$TFTAP" diff --db "$db" "$run_v1" "$run_v2" --ignore .size --ignore '.t*' --ignore .zone \
    tftest6_server.b >/dev/null
check_eq "all behaviour ignored: exit 0" "$?" 0

"$TFTAP" diff --db "$db" "$run_v1" "$run_v2" --format markdown >"$WORK/up.md"
check_eq "markdown exits 1" "$?" 1
# Two providers' schemas, tftest6_server.a and .b (its upgrade named
# after .a, as the object it upgraded).
check_eq "markdown: one collapsed section per address with differences" \
    "$(grep -c '^<details><summary>' "$WORK/up.md")" 4
"$TFTAP" diff --db "$db" "$run_v1" "$run_v2" --format markdown --max-bytes 1200 >"$WORK/cap.md"
check "markdown cap: under the cap" test "$(wc -c <"$WORK/cap.md")" -le 1200
check "markdown cap: says what was left out" grep -q 'more address.* not shown' "$WORK/cap.md"

# ---- tftap diff: same version, different prior states ---------------------------
"$TFTAP" diff --db "$db" "$run_v1" "$run_v1b" --json >"$WORK/same.json"
check_eq "same version, different random ids: exit 0" "$?" 0
check_eq "  ... reported as the same" "$(jq -c '[.same, .differences]' "$WORK/same.json")" '[true,0]'
check_eq "  ... the random ids are input differences, nothing else" \
    "$(jq -r '[.changes[] | "\(.kind) \(.path)"] | unique | join(",")' "$WORK/same.json")" "input .id"
check "  ... in every call that carried them" test "$(jq '.input_differences' "$WORK/same.json")" -ge 6

# ---- tftap diff: secrets hashed with different keys --------------------------------
# A run recorded into another database (its own redaction key) and pushed
# into this one: its secret values can never compare with this one's.
other=$WORK/other.db
(cd "$WORK/b" && "$TFTAP" run --db "$other" -- tofu plan -input=false -no-color -out=pf >/dev/null) ||
    not_ok "b: tftap run -- tofu plan into another database"
"$TFTAP" push last --db "$other" --to "$db" >/dev/null || not_ok "push into the first database"
run_far=$(last_run "$db")
check "  ... the pushed run keeps its key's id" \
    test -n "$(sqlite3 "$db" "SELECT key_id FROM runs WHERE id = $run_far")"
"$TFTAP" diff --db "$db" "$run_v1" "$run_far" --json >"$WORK/far.json" 2>"$WORK/far.err"
check_eq "different keys: the diff itself as for the same keys (exit 0)" "$?" 0
check_eq "  ... one warning line on stderr" "$(cat "$WORK/far.err")" \
    "tftap: warning: runs $run_v1 and $run_far hashed their secret values with different keys (runs.key_id): secret values are not comparable between these runs"
check_eq "  ... --json: secrets_comparable is false" "$(jq '.secrets_comparable' "$WORK/far.json")" false
"$TFTAP" diff --db "$db" "$run_v1" "$run_far" >/dev/null 2>"$WORK/far.err"
check_eq "  ... text: the same warning" "$(grep -c 'secret values are not comparable' "$WORK/far.err")" 1
"$TFTAP" diff --db "$db" "$run_v1" "$run_v1b" --json >"$WORK/near.json" 2>"$WORK/near.err"
check_eq "same keys: no warning" "$(cat "$WORK/near.err")" ""
check_eq "  ... and no secrets_comparable" "$(jq 'has("secrets_comparable")' "$WORK/near.json")" false
"$TFTAP" diff --db "$db" "$run_v1" "$other:1" >/dev/null 2>"$WORK/file.err"
check_eq "a run of another database file (FILE:RUN): the warning too" \
    "$(grep -c 'secret values are not comparable' "$WORK/file.err")" 1

# ---- tftap diff: two applies of one version ----------------------------------------
# Values chosen at apply time (random ids) are the provider's behaviour; a
# user who knows them to be random ignores them.
for d in c1 c2; do
    mkdir -p "$WORK/$d"
    config 0.1.0 z1 b >"$WORK/$d/main.tf"
    (cd "$WORK/$d" && tofu init -input=false -no-color >/dev/null &&
        "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color >/dev/null) ||
        not_ok "$d: tftap run -- tofu apply"
done
run_c2=$(last_run "$db")
run_c1=$((run_c2 - 1))
"$TFTAP" diff --db "$db" "$run_c1" "$run_c2" --json >"$WORK/apply.json"
check_eq "two applies: the ids chosen at apply differ (exit 1)" "$?" 1
check_eq "  ... and nothing else" \
    "$(jq -r '[.changes[] | "\(.kind) \(.method) \(.path) \(.a.source) \(.b.source)"] | unique | join(",")' "$WORK/apply.json")" \
    "attribute ApplyResourceChange .id provider provider"
check_eq "  ... one per resource" "$(jq '.differences' "$WORK/apply.json")" 3
"$TFTAP" diff --db "$db" "$run_c1" "$run_c2" --ignore id >/dev/null
check_eq "  ... --ignore id: the same (exit 0)" "$?" 0

# ---- usage ----------------------------------------------------------------------
"$TFTAP" diff --db "$db" "$run_v1" 2>"$WORK/err"
check_eq "diff with one run: exit 2" "$?" 2
check "  ... one tftap: line" grep -q '^tftap: ' "$WORK/err"
"$TFTAP" diff --db "$db" "$run_v1" 9999 2>/dev/null
check_eq "diff with a missing run: exit 2" "$?" 2
"$TFTAP" diff --db "$db" "$run_v1" "$run_v2" --format yaml 2>/dev/null
check_eq "bad --format: exit 2" "$?" 2
"$TFTAP" diff --help | grep -q '^usage: tftap diff'
check_eq "diff --help" "$?" 0
"$TFTAP" --db "$db" diff "$run_v1" "$run_v1b" >/dev/null
check_eq "tftap --db PATH diff (the global form)" "$?" 0

# ---- tftap schema -------------------------------------------------------------
for p in 5 6; do
    addr=registry.opentofu.org/tftap/tftest$p
    jq -S ".provider_schemas[\"$addr\"]" "$WORK/tofu-v2.json" >"$WORK/want$p"
    "$TFTAP" schema "$PEERS/bin/terraform-provider-tftest$p-v2" "$addr" --json >"$WORK/bin$p.json"
    check_eq "schema BINARY (protocol $p) exits 0" "$?" 0
    jq -S ".provider_schemas[\"$addr\"]" "$WORK/bin$p.json" >"$WORK/got$p"
    if [ -s "$WORK/want$p" ] && [ "$(cat "$WORK/want$p")" != null ] && cmp -s "$WORK/got$p" "$WORK/want$p"; then
        ok "schema BINARY --json equals tofu providers schema -json (protocol $p)"
    else
        not_ok "schema BINARY --json (protocol $p) differs from tofu's (< tftap, > tofu)"
        diff "$WORK/got$p" "$WORK/want$p" | head -20
    fi
    jq -S ".provider_schemas[\"$addr\"]" "$WORK/tofu-v1.json" >"$WORK/want$p.v1"
    "$TFTAP" schema --db "$db" "$run_v1" "tftap/tftest$p" --json |
        jq -S ".provider_schemas[\"$addr\"]" >"$WORK/run$p"
    check "schema RUN --json equals tofu's (protocol $p, 0.1.0)" cmp -s "$WORK/run$p" "$WORK/want$p.v1"
    "$TFTAP" schema "$WORK/tofu-v1.json" "tftap/tftest$p" --json |
        jq -S ".provider_schemas[\"$addr\"]" >"$WORK/file$p"
    check "schema FILE --json round trip (protocol $p)" cmp -s "$WORK/file$p" "$WORK/want$p.v1"
done
"$TFTAP" schema "$WORK/tofu-v1.json" 2>/dev/null
check_eq "schema of a file with two providers, none named: exit 2" "$?" 2

v1=$PEERS/bin/terraform-provider-tftest6 v2=$PEERS/bin/terraform-provider-tftest6-v2
"$TFTAP" schema diff "$v1" "$v2" --json >"$WORK/sd.json"
check_eq "schema diff of the binaries exits 1" "$?" 1
check_eq "schema diff: exactly the changes, classified" \
    "$(jq -r '.list[] | "\(.kind) \(.name) \(.path) \(.change) \(.breaking)"' "$WORK/sd.json" | sort | tr '\n' ';')" \
    "resource tftest6_server .legacy attribute removed true;resource tftest6_server .tier attribute added false;"
"$TFTAP" schema diff --breaking "$v1" "$v2" >"$WORK/sd.txt"
check_eq "schema diff --breaking exits 1" "$?" 1
check_eq "schema diff --breaking lists only the removal" "$(grep -c 'attribute' "$WORK/sd.txt")" 1
"$TFTAP" schema diff --db "$db" "$run_v1" "$run_v2" --provider tftap/tftest5 --format=markdown >"$WORK/sd.md"
check_eq "schema diff of two runs' tftest5 exits 1" "$?" 1
check "  ... markdown marks the breaking change" grep -q '^| \*\*breaking\*\* | resource | `tftest5_server` | `.legacy`' "$WORK/sd.md"
"$TFTAP" schema diff "$v1" "$WORK/tofu-v1.json" --provider tftap/tftest6 >/dev/null
check_eq "schema diff of a binary and tofu's JSON of the same version: exit 0" "$?" 0
"$TFTAP" schema diff "$v1" 2>/dev/null
check_eq "schema diff with one source: exit 2" "$?" 2
"$TFTAP" schema /nonexistent/provider 2>/dev/null
check_eq "schema of something that is not a source: exit 2" "$?" 2
# Eight instances of one type, planned twice: their UpgradeResourceState
# calls (never named) come in the order of tofu's parallel walk, and pair
# by what they asked, not by that order: the same states, no difference.
many=$WORK/many
mkdir -p "$many"
cat >"$many/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5", version = "0.1.0" }
  }
}
resource "tftest5_pet" "p" {
  count  = 8
  length = count.index + 2
}
EOF
(cd "$many" && tofu init -input=false -no-color >/dev/null && tofu apply -auto-approve -input=false -no-color \
    >/dev/null) || not_ok "eight pets: init and apply"
for i in 1 2; do
    (cd "$many" && "$TFTAP" run --db "$WORK/many.db" -- tofu plan -input=false -no-color >/dev/null) ||
        not_ok "eight pets: plan $i"
done
check_eq "eight pets: each plan upgraded eight states" "$(sqlite3 "$WORK/many.db" "SELECT group_concat(n)
    FROM (SELECT count(*) AS n FROM calls WHERE method LIKE '%/UpgradeResourceState' GROUP BY run_id)")" "8,8"
"$TFTAP" diff --db "$WORK/many.db" 1 2 >"$WORK/many.txt"
check_eq "eight pets: diff of the two plans exits 0" "$?" 0
check "eight pets: no input difference either" grep -q ', 0 input differences' "$WORK/many.txt"

check_eq "no provider left running" "$(pgrep -f 'terraform-provider-tftest6-v2$' || true)" ""

finish
