#!/usr/bin/env bash
# tftap mock: an apply recorded with the test providers (protocols 5 and 6)
# becomes mock_provider blocks that OpenTofu's own `tofu test` accepts, and
# the mocked resources then carry the values the real apply produced: the
# computed ids and hashes of two instances of one type (the first address's
# values for both), optional computed defaults, a protocol-6 resource with
# a sensitive attribute, and a data source whose result holds quotes,
# backslashes, "${" and "%{", a tab, a newline, non-ASCII and a number no
# float64 holds; an SDKv2 resource too. The same test with one expected
# value changed must fail.
. "$(dirname "$0")/lib.sh"
need_peers
if ! [ -x "$PEERS/bin/terraform-provider-tftestsdk" ]; then
    not_ok "peers: $PEERS/bin/terraform-provider-tftestsdk missing (run scripts/build-peers)"
    finish
fi
CLI=tofu
w=$WORK/w db=$WORK/tftap.db
new_dir "$top_srcdir/tests/e2e/configs/mock" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "tofu init"
(cd "$w" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/apply.out" 2>&1) || not_ok "tftap run -- tofu apply"
(cd "$w" && tofu show -json) >"$WORK/state.json" || not_ok "tofu show -json"
val() { jq -r --arg a "$1" --arg k "$2" \
    '.values.root_module.resources[] | select(.address == $a) | .values[$k]' "$WORK/state.json"; }
hex_a=$(val tftest5_id.a hex) hex_b=$(val tftest5_id.b hex) id_a=$(val tftest5_id.a id)
pet=$(val tftest5_pet.p id) thing=$(val tftest6_thing.t id)
check "the apply made values to compare ($hex_a, $pet, $thing)" \
    test -n "$hex_a" -a "$hex_a" != null -a "$hex_a" != "$hex_b" -a -n "$pet" -a -n "$thing"

mkdir -p "$w/tests"
"$TFTAP" mock --db "$db" last -o "$w/tests/real.tftest.hcl" 2>"$WORK/mock.err"
check_eq "tftap mock -o exits 0" "$?" 0
m=$w/tests/real.tftest.hcl
# The file the docs tell you to add run blocks to is never overwritten
# unless asked.
echo 'run "mine" {}' >>"$m"
cp "$m" "$WORK/mine.hcl"
"$TFTAP" mock --db "$db" last -o "$m" >/dev/null 2>"$WORK/again.err"
check_eq "mock -o FILE that exists: exit 1, one line" "$? $(cat "$WORK/again.err")" \
    "1 tftap: $m exists (--force replaces it)"
check "mock -o FILE that exists: left as it was" cmp -s "$m" "$WORK/mine.hcl"
"$TFTAP" mock --db "$db" last -o "$m" --force 2>/dev/null
check_eq "mock -o FILE --force replaces it" "$?$(grep -c '^run "mine"' "$m")" 00
check "one mock_provider per provider, named by its type" \
    test "$(grep -c '^mock_provider "tftest\(5\|6\|sdk\)" {$' "$m")" = 3
check "a mock_resource per resource type, a mock_data per data source" \
    test "$(grep -cE '^  mock_(resource "tftest5_id"|resource "tftest5_pet"|resource "tftest6_thing"|resource "tftestsdk_misbehave"|data "tftest5_echo") \{$' "$m")" = 5
check "the defaults name the address they came from (the first of two)" \
    grep -q '# defaults from tftest5_id.a (ApplyResourceChange, call [0-9]*)' "$m"
check "the other instance's values are said to differ" \
    grep -q 'recorded with other values too: tftest5_id.b' "$m"
check "configured attributes are not written (byte_length, prefix, string_attr)" \
    sh -c "! grep -qE '^ *(byte_length|prefix|string_attr|input|rule|value) *=' '$m'"
check "the secret never appears" sh -c "! grep -q s3cret '$m' && ! grep -q hmac '$m'"
check "strings escaped for HCL templates" \
    grep -qF 's     = "q\"uote \\ back $${not} %%{nope} café\ttab\nnl"' "$m"
check "numbers digit for digit" grep -qF 'n     = 12345678901234567890.125' "$m"
check "tofu fmt leaves the file as it is" sh -c "cd '$w' && tofu fmt -check -no-color tests/real.tftest.hcl"

# The test file: the mocks and assertions on the real values. Without the
# mocks tofu test would make new random ids; with OpenTofu's own invented
# mock values (random strings) the assertions could not hold either.
cat >>"$m" <<EOF

run "real_values" {
  assert {
    condition     = tftest5_id.a.hex == "$hex_a" && tftest5_id.a.id == "$id_a"
    error_message = "tftest5_id.a.hex is \${tftest5_id.a.hex}"
  }
  assert {
    condition     = tftest5_id.b.hex == "$hex_a"
    error_message = "tftest5_id.b takes the defaults of tftest5_id.a"
  }
  assert {
    condition     = tftest5_pet.p.id == "$pet" && tftest5_pet.p.length == 2 && tftest5_pet.p.separator == "-"
    error_message = "tftest5_pet.p.id is \${tftest5_pet.p.id}"
  }
  assert {
    condition     = tftest6_thing.t.id == "$thing" && tftest6_thing.t.string_attr == "kept"
    error_message = "tftest6_thing.t.id is \${tftest6_thing.t.id}"
  }
  assert {
    condition     = tftestsdk_misbehave.s.id == "sdk-1" && tftestsdk_misbehave.s.computed == "done"
    error_message = "tftestsdk_misbehave.s is \${tftestsdk_misbehave.s.id}, \${tftestsdk_misbehave.s.computed}"
  }
  assert {
    condition     = data.tftest5_echo.e.result.s == "q\"uote \\\\ back \$\${not} %%{nope} caf\u00e9\ttab\nnl"
    error_message = "the echoed string came back different"
  }
  assert {
    condition     = data.tftest5_echo.e.result.n == 12345678901234567890.125 && data.tftest5_echo.e.result["a b"][1] == "y"
    error_message = "the echoed number came back different"
  }
}
EOF
(cd "$w" && tofu test -no-color) >"$WORK/test.out" 2>&1
rc=$?
check_eq "tofu test passes with the generated mocks" "$rc" 0
[ "$rc" = 0 ] || cat "$WORK/test.out"
check "tofu test ran the run block" grep -q 'run "real_values"... pass' "$WORK/test.out"

# The same test expecting another hex must fail, naming the real one.
sed -i "s/tftest5_id.a.hex == \"$hex_a\"/tftest5_id.a.hex == \"not-$hex_a\"/" "$m"
(cd "$w" && tofu test -no-color) >"$WORK/test2.out" 2>&1
rc=$?
check_eq "tofu test fails when an expected value is changed" "$rc" 1
check "the failure names the mocked value" grep -q "tftest5_id.a.hex is $hex_a" "$WORK/test2.out"

# ADDRESS: the defaults come from that instance only.
"$TFTAP" mock --db="$db" last tftest5_id.b >"$WORK/b.hcl"
check_eq "tftap mock last ADDRESS exits 0" "$?" 0
check "ADDRESS: the defaults come from it" grep -qF "hex     = \"$hex_b\"" "$WORK/b.hcl"
check "ADDRESS: only its type" test "$(grep -c 'mock_resource\|mock_data' "$WORK/b.hcl")" = 1
"$TFTAP" --db "$db" mock last tftest5_echo >"$WORK/e.hcl"
check "TYPE: a data source by its type" grep -q '^  mock_data "tftest5_echo" {$' "$WORK/e.hcl"
check_eq "TYPE: only its provider's block, no empty ones for the others" \
    "$(grep '^mock_provider' "$WORK/e.hcl")" 'mock_provider "tftest5" {'
"$TFTAP" --db "$db" mock last --provider tftest6 >"$WORK/p.hcl"
check_eq "--provider TYPE: that provider's block alone" \
    "$(grep '^mock_provider' "$WORK/p.hcl")" 'mock_provider "tftest6" {'
check "--provider TYPE: with its resources" grep -q '^  mock_resource "tftest6_thing" {$' "$WORK/p.hcl"
"$TFTAP" --db "$db" mock last --provider nosuch >/dev/null 2>"$WORK/err"
check_eq "--provider that names nothing: exit 2" "$?" 2
check "... naming the run's providers" grep -q "^tftap: --provider 'nosuch' names no provider of run 1 (its providers: .*tftap/tftest6" "$WORK/err"

# Errors: one line, exit 2 for usage (a filter that matches nothing too).
"$TFTAP" mock --db "$db" >/dev/null 2>"$WORK/err"
check_eq "no RUN: exit 2" "$?" 2
check "no RUN: one line" test "$(wc -l <"$WORK/err")" = 1
"$TFTAP" mock --db "$db" last nosuch_type >/dev/null 2>"$WORK/err"
check_eq "a filter that matches nothing: exit 2" "$?" 2
check_eq "a filter that matches nothing: names the nearest" "$(cat "$WORK/err")" \
    "tftap: 'nosuch_type' names no resource type or address in run 1 (nearest: tftest5_pet)"
"$TFTAP" mock --help >"$WORK/help"
check_eq "--help exits 0" "$?" 0
check "--help names -o" grep -q -- '-o FILE' "$WORK/help"
finish
