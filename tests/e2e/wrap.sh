#!/usr/bin/env bash
# `tftap wrap`: the shims and CLI config it writes, used by hand; a shim
# started without go-plugin's cookie behaves as the real provider does; a
# user's own CLI config (filesystem mirror, dev_overrides) is kept and its
# dev-override providers wrapped too; usage errors.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
db=$WORK/tftap.db
w=$WORK/basic
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# ---- wrap: its output and files ----------------------------------------------
out=$(cd "$w" && "$TFTAP" wrap --db "$db" --out "$WORK/shims" 2>"$WORK/wrap.err")
check_eq "wrap: exits 0" "$?" 0
check_eq "wrap: prints the export line" "$out" "export TF_CLI_CONFIG_FILE='$WORK/shims/tftap.tfrc'"
check_eq "wrap: one shim per provider" "$(ls -d "$WORK"/shims/p* | wc -l)" 2
meta5=$(grep -l tftest5 "$WORK"/shims/p*/tftap-shim.json)
check_eq "wrap: shim metadata" "$(jq -c '[.provider, .version, .binary, .db, .record_sensitive, .keep_raw]' "$meta5")" \
    "[\"registry.opentofu.org/tftap/tftest5\",\"0.1.0\",\"$(realpath "$w"/.terraform/providers/registry.opentofu.org/tftap/tftest5/0.1.0/*/terraform-provider-tftest5_v0.1.0)\",\"$db\",false,false]"
shim5=$(ls "$(dirname "$meta5")"/terraform-provider-tftest5*)
check "wrap: the shim script is executable" test -x "$shim5"
check "wrap: the CLI config keeps the user's mirror" grep -q "filesystem_mirror" "$WORK/shims/tftap.tfrc"

# ---- a shim without the cookie: just like the real provider -------------------
real5=$(jq -r .binary "$meta5")
for cookie in unset wrong; do
    if [ $cookie = unset ]; then
        env -u TF_PLUGIN_MAGIC_COOKIE "$shim5" >"$WORK/s.out" 2>"$WORK/s.err"; gs=$?
        env -u TF_PLUGIN_MAGIC_COOKIE "$real5" >"$WORK/r.out" 2>"$WORK/r.err"; gr=$?
    else
        TF_PLUGIN_MAGIC_COOKIE=wrong "$shim5" >"$WORK/s.out" 2>"$WORK/s.err"; gs=$?
        TF_PLUGIN_MAGIC_COOKIE=wrong "$real5" >"$WORK/r.out" 2>"$WORK/r.err"; gr=$?
    fi
    check_eq "cookie $cookie: shim exit code = provider's" "$gs" "$gr"
    check_eq "cookie $cookie: shim exit code" "$gs" 1
    check "cookie $cookie: shim stdout = provider's" cmp -s "$WORK/s.out" "$WORK/r.out"
    check "cookie $cookie: shim stderr = provider's" cmp -s "$WORK/s.err" "$WORK/r.err"
done
check "cookie: nothing recorded, no database made" test ! -e "$db"

# ---- using the export by hand ------------------------------------------------
(cd "$w" && eval "$out" && TFTAP_RUN_ID= tofu apply -auto-approve -input=false -no-color >"$WORK/apply.out" 2>&1)
check_eq "wrapped by hand: apply exits 0" "$?" 0
# No `tftap run` around the shims to wait for their recorders: wait until
# they (and the shims) are gone before reading the database.
check "wrapped by hand: the recorders finished" wait_for 300 recorders_done "$WORK/shims"
check "wrapped by hand: provider processes recorded" test "$(sqlite3 "$db" "SELECT count(*) FROM processes")" -ge 2
check_eq "wrapped by hand: every resource applied through the shims" "$(sqlite3 "$db" \
    "SELECT count(*) FROM calls WHERE rpc = 'ApplyResourceChange' AND status_code = 0")" 4

# ---- the user's own CLI config: mirror and dev_overrides kept, all wrapped -----
d=$WORK/dev
new_dir "$top_srcdir/tests/e2e/configs/dev" "$d"
export TF_CLI_CONFIG_FILE=$PEERS/tofurc-dev
(cd "$d" && tofu init -input=false -no-color >/dev/null 2>&1) || not_ok "init (dev overrides)"
(cd "$d" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color >"$WORK/dev.out" 2>&1)
check_eq "user dev_overrides: apply exits 0" "$?" 0
run=$(last_run "$db")
check_eq "user dev_overrides: both providers wrapped" "$(sqlite3 "$db" "SELECT group_concat(p, ' ')
    FROM (SELECT DISTINCT provider AS p FROM processes WHERE run_id = $run ORDER BY p)")" \
    "registry.opentofu.org/tftap/simple registry.opentofu.org/tftap/tftest5"
check_eq "user dev_overrides: simple_resource applied through its shim" "$(sqlite3 "$db" \
    "SELECT count(*) FROM calls WHERE run_id = $run AND rpc = 'ApplyResourceChange' AND type_name = 'simple_resource'")" 1
# The user's config plus an override whose binary is not there: kept verbatim.
sed 's|^\( *\)dev_overrides {|&\n\1  "example/absent" = "/nonexistent/dir"|' "$PEERS/tofurc-dev" >"$WORK/user.tfrc"
(cd "$d" && TF_CLI_CONFIG_FILE=$WORK/user.tfrc "$TFTAP" wrap --db "$db" --out "$WORK/devshims" >/dev/null 2>&1)
check_eq "user dev_overrides: one dev_overrides block in the written config" \
    "$(grep -c 'dev_overrides {' "$WORK/devshims/tftap.tfrc")" 1
check "user dev_overrides: the user's mirror kept" grep -q "path = \"$PEERS/mirror\"" "$WORK/devshims/tftap.tfrc"
check "user dev_overrides: an override with a binary is wrapped" \
    grep -q "\"registry.opentofu.org/tftap/simple6\" = \"$WORK/devshims/p" "$WORK/devshims/tftap.tfrc"
check "user dev_overrides: an override without one is kept as it was" \
    grep -q '"example/absent" = "/nonexistent/dir"' "$WORK/devshims/tftap.tfrc"
check "user dev_overrides: the user's comments kept" grep -q "Written by scripts/build-peers" "$WORK/devshims/tftap.tfrc"
export TF_CLI_CONFIG_FILE=$PEERS/tofurc

# ---- a user config without provider_installation: one is added ---------------
printf 'disable_checkpoint = true\n' >"$WORK/plain.tfrc"
(cd "$w" && TF_CLI_CONFIG_FILE=$WORK/plain.tfrc "$TFTAP" wrap --db "$db" --out "$WORK/plainshims" >/dev/null 2>&1)
check_eq "plain config: kept, with a provider_installation block added" \
    "$(grep -c -e '^disable_checkpoint = true$' -e '^provider_installation {$' -e '^  direct {}$' "$WORK/plainshims/tftap.tfrc")" 3
(cd "$w" && TF_CLI_CONFIG_FILE=$WORK/plain.tfrc "$TFTAP" run --db "$db" -- tofu plan -input=false \
    -no-color -detailed-exitcode >"$WORK/plain.out" 2>&1)
check_eq "plain config: plan through tftap finds no changes" "$?" 0
check_eq "plain config: that plan recorded calls" "$(sqlite3 "$db" "SELECT count(*) > 0 FROM calls
    WHERE run_id = $(last_run "$db") AND rpc = 'PlanResourceChange'")" 1

# ---- -chdir: providers found in the directory the CLI will use ---------------
(cd "$WORK" && "$TFTAP" run --db "$db" -- tofu -chdir="$w" plan -input=false -no-color \
    -detailed-exitcode >"$WORK/chdir.out" 2>&1)
check_eq "-chdir: plan through tftap finds no changes" "$?" 0
check_eq "-chdir: the run's working directory is the -chdir one" \
    "$(sqlite3 "$db" "SELECT cwd FROM runs WHERE id = $(last_run "$db")")" "$(realpath "$w")"
check_eq "-chdir: its calls were recorded" "$(sqlite3 "$db" "SELECT count(*) > 0 FROM calls
    WHERE run_id = $(last_run "$db") AND rpc = 'PlanResourceChange'")" 1

# ---- usage and failures --------------------------------------------------------
"$TFTAP" run >/dev/null 2>&1
check_eq "run without a command: usage error" "$?" 2
"$TFTAP" wrap >/dev/null 2>&1
check_eq "wrap without --out: usage error" "$?" 2
"$TFTAP" run --help | grep -q "^usage: tftap run"
check_eq "run --help" "$?" 0
"$TFTAP" wrap --help | grep -q "^usage: tftap wrap"
check_eq "wrap --help" "$?" 0
(cd "$w" && "$TFTAP" run --db "$db" -- "$WORK/no-such-cli" plan 2>"$WORK/err")
check_eq "run: a command that cannot start exits 127" "$?" 127
check "run: ... with one 'tftap: ' line" grep -q "^tftap: cannot run" "$WORK/err"
(cd "$WORK" && "$TFTAP" wrap --out "$WORK/none" >/dev/null 2>"$WORK/err")
check_eq "wrap: no providers installed is an error" "$?" 1
check_eq "nothing of tftap's left in TMPDIR" "$(find "$TMPDIR" -mindepth 1 -name 'tftap-*' | head -3)" ""
finish
