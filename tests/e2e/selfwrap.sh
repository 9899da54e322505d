#!/usr/bin/env bash
# A shim never starts a shim (issue 14): `tftap wrap` run again under its own
# exported config, `tofu plan` after it, `tftap run` under the exported
# config, and hand-made configs whose shim would start tftap again. Under
# `tftap wrap` the provider processes of one command are one run.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
w=$WORK/basic
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# Bounded: without the guard, this sequence started shims without end.
plan() { # DB LOG OUT [tftap run]
    local db=$1 log=$2 out=$3 st
    shift 3
    (cd "$w" && TFTAP_DB=$db TFTEST_RPC_LOG=$log timeout 300 "$@" tofu plan -input=false -no-color \
        >"$out" 2>&1)
    st=$?
    # Under wrap nothing waits for the recorders (tftap run does): the
    # run is ended by its last recorder, so wait for that before reading.
    wait_until 600 '[ "$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE ended_us IS NULL" 2>/dev/null)" = 0 ]'
    return $st
}
# Unary provider calls, sorted: in the database (every run) and in the providers' own log.
db_calls() { sqlite3 "$1" "SELECT method FROM calls WHERE stream = 0 AND method LIKE '/tfplugin%'" | sort; }
log_calls() { awk -F '\t' '$1 == "begin" && $3 ~ /^\/tfplugin/ { print $3 }' "$1" | sort; }
# Shims and their recorder processes (forked, same command line) still alive,
# once the recorders have had time to finish (bounded poll).
# This test's shims only: other tests may run shims of the same tftap at the
# same time (make -j); every shim this test starts has its json under $WORK.
shims_running() {
    wait_until 300 '[ "$(pgrep -f -c "$TFTAP shim $WORK/" || true)" = 0 ]'
    pgrep -f -c "$TFTAP shim $WORK/" || true
}

# ---- the sequence of the issue -------------------------------------------------
db0=$WORK/direct.db
out=$(cd "$w" && "$TFTAP" wrap --db "$db0" --out "$WORK/ci-shims" 2>"$WORK/wrap1.err")
check_eq "wrap: exits 0" "$?" 0
eval "$out"
check_eq "wrap: the export is in force" "$TF_CLI_CONFIG_FILE" "$WORK/ci-shims/tftap.tfrc"
cp "$WORK/ci-shims/tftap.tfrc" "$WORK/tfrc.first"
first_binaries=$(jq -r '.provider + " " + .binary' "$WORK"/ci-shims/p*/tftap-shim.json)
check "wrap: the shims stand for the providers init installed" test "$(echo "$first_binaries" | grep -c "$PEERS/mirror/.*/terraform-provider-tftest[56]_v0.1.0$")" = 2

# A baseline: the exported config used once, as wrapped the first time.
plan "$db0" "$WORK/direct.log" "$WORK/direct.out"
check_eq "direct wrap: plan exits 0" "$?" 0
check "direct wrap: every provider call recorded once" cmp -s <(db_calls "$db0") <(log_calls "$WORK/direct.log")
ncalls=$(log_calls "$WORK/direct.log" | wc -l)
check "direct wrap: the providers saw calls" test "$ncalls" -gt 10

# Wrapped again, as docs/running.md says to after init, with the export in force.
(cd "$w" && "$TFTAP" wrap --db "$db0" --out "$WORK/ci-shims" >"$WORK/wrap2.out" 2>"$WORK/wrap2.err")
check_eq "wrap again: exits 0" "$?" 0
check_eq "wrap again: one line says what it did" \
    "$(grep -c "was written by tftap wrap: its 2 shim(s) replaced by the providers they stand for" "$WORK/wrap2.err")" 1
check_eq "wrap again: each shim stands for the real provider, as the first time" \
    "$(jq -r '.provider + " " + .binary' "$WORK"/ci-shims/p*/tftap-shim.json)" "$first_binaries"
check "wrap again: the CLI config is the same as the first time" cmp -s "$WORK/ci-shims/tftap.tfrc" "$WORK/tfrc.first"
check_eq "wrap again: one dev_overrides block" "$(grep -c 'dev_overrides {' "$WORK/ci-shims/tftap.tfrc")" 1

db1=$WORK/again.db
plan "$db1" "$WORK/again.log" "$WORK/again.out"
check_eq "after wrapping again: plan exits 0" "$?" 0
check "after wrapping again: every provider call recorded once" cmp -s <(db_calls "$db1") <(log_calls "$WORK/again.log")
check_eq "after wrapping again: as many calls as the first time" "$(db_calls "$db1" | wc -l)" "$ncalls"
check_eq "after wrapping again: one process per provider process" \
    "$(sqlite3 "$db1" "SELECT count(*) FROM processes")" \
    "$(awk -F '\t' '$1 == "begin" { print $2 }' "$WORK/again.log" | sort -u | wc -l)"
check_eq "after wrapping again: no shim left running" "$(shims_running)" 0

# One run per CLI command, named after it, ended by its last recorder.
check_eq "wrap: one tofu plan is one run" "$(sqlite3 "$db1" "SELECT count(*) FROM runs")" 1
check_eq "wrap: the run's command line is tofu's" \
    "$(sqlite3 "$db1" "SELECT command || ' ' || args || ' ' || cwd || ' ' || cli_name FROM runs")" \
    "tofu [\"plan\",\"-input=false\",\"-no-color\"] $w tofu"
check_eq "wrap: the run holds every provider process" "$(sqlite3 "$db1" "SELECT count(DISTINCT run_id) FROM processes")" 1
wait_until 300 '[ "$(sqlite3 "$db1" "SELECT count(*) FROM runs WHERE ended_us IS NOT NULL")" = 1 ]'
check_eq "wrap: the last recorder ended the run, exit code unknown" \
    "$(sqlite3 "$db1" "SELECT recorders, ended_us >= started_us, exit_code IS NULL FROM runs")" "0|1|1"
check "wrap: tftap runs shows it" grep -q "tofu plan -input=false -no-color" <("$TFTAP" runs --db "$db1")
# No tftap process sees the CLI exit: unknown, never a code.
check_eq "wrap: tftap runs says the exit code is unknown" \
    "$("$TFTAP" runs --db "$db1" | awk '/tofu plan/ { print ($0 ~ / unknown /) }')" 1
check "wrap: tftap show says the exit code is unknown" \
    grep -q "the command's exit code is unknown (a tftap wrap run)" <("$TFTAP" show --db "$db1" last)
(cd "$w" && TFTAP_DB=$db1 tofu validate -no-color >/dev/null 2>&1)
check_eq "wrap: a second command is a second run" "$(sqlite3 "$db1" "SELECT count(*) FROM runs")" 2

# While its providers work, the command's run shows as running; once its
# recorders are done, as ended with no exit code.
h=$WORK/hang
marker=$WORK/hanging
db3=$WORK/hang.db
new_dir "$top_srcdir/tests/e2e/configs/hang" "$h"
(cd "$h" && TF_CLI_CONFIG_FILE=$PEERS/tofurc tofu init -input=false -no-color >/dev/null) || not_ok "init (hang)"
hang_cfg=$(cd "$h" && TF_CLI_CONFIG_FILE=$PEERS/tofurc "$TFTAP" wrap --db "$db3" --out "$WORK/hang-shims" 2>/dev/null | sed "s/^export TF_CLI_CONFIG_FILE=//; s/'//g")
(cd "$h" && TF_CLI_CONFIG_FILE=$hang_cfg TFTEST_HANG_MARKER=$marker tofu apply -auto-approve -input=false \
    -no-color >"$WORK/hang.out" 2>&1) &
applier=$!
if wait_for 600 test -e "$marker"; then
    check_eq "wrap: the command's run shows as running while its provider works" \
        "$("$TFTAP" runs --db "$db3" | awk '$0 ~ /tofu apply/ { print ($0 ~ / running /) }')" 1
    rm -f "$marker"
else
    not_ok "wrap: the apply never reached the hanging call"
fi
wait "$applier"
check_eq "wrap: the apply exits 0" "$?" 0
wait_until 300 '[ "$(sqlite3 "$db3" "SELECT count(*) FROM runs WHERE ended_us IS NULL")" = 0 ]'
check_eq "wrap: one run, ended once its recorders are done, exit code unknown" \
    "$(sqlite3 "$db3" "SELECT count(*), sum(recorders), sum(exit_code IS NULL) FROM runs")" "1|0|1"
check_eq "wrap: tftap runs no longer shows it running" \
    "$("$TFTAP" runs --db "$db3" | awk '$0 ~ /tofu apply/ { print ($0 ~ / running /) }')" 0

# ---- tftap run under the exported wrap config -----------------------------------
db2=$WORK/run.db
plan "$db2" "$WORK/run.log" "$WORK/run.out" "$TFTAP" run --db "$db2" --
check_eq "run under a wrap config: plan exits 0" "$?" 0
check_eq "run under a wrap config: one line says what it did" \
    "$(grep -c "tftap: $WORK/ci-shims/tftap.tfrc is a tftap wrap config: this run's shims replace its 2, each call is recorded once, in this run" "$WORK/run.out")" 1
check "run under a wrap config: every provider call recorded once" cmp -s <(db_calls "$db2") <(log_calls "$WORK/run.log")
check_eq "run under a wrap config: as many calls as the direct wrap" "$(db_calls "$db2" | wc -l)" "$ncalls"
check_eq "run under a wrap config: one run" "$(sqlite3 "$db2" "SELECT count(*) FROM runs")" 1
check_eq "run under a wrap config: no shim left running" "$(shims_running)" 0
unset TF_CLI_CONFIG_FILE
export TF_CLI_CONFIG_FILE=$PEERS/tofurc

# ---- the user's own dev_overrides, wrapped twice ---------------------------------
# A shim standing for a dev override (no version) resolves to the override's binary.
d=$WORK/dev
new_dir "$top_srcdir/tests/e2e/configs/dev" "$d"
(cd "$d" && TF_CLI_CONFIG_FILE=$PEERS/tofurc-dev tofu init -input=false -no-color >/dev/null 2>&1) || not_ok "init (dev)"
dev_cfg=$(cd "$d" && TF_CLI_CONFIG_FILE=$PEERS/tofurc-dev "$TFTAP" wrap --db "$WORK/dev.db" --out "$WORK/devshims" 2>/dev/null | sed "s/^export TF_CLI_CONFIG_FILE=//; s/'//g")
dev_first=$(jq -r '.provider + " " + (.version // "-") + " " + .binary' "$WORK"/devshims/p*/tftap-shim.json | sort)
(cd "$d" && TF_CLI_CONFIG_FILE=$dev_cfg "$TFTAP" wrap --db "$WORK/dev.db" --out "$WORK/devshims" >/dev/null 2>&1)
check_eq "dev overrides wrapped again: every shim stands for the same real provider" \
    "$(jq -r '.provider + " " + (.version // "-") + " " + .binary' "$WORK"/devshims/p*/tftap-shim.json | sort)" "$dev_first"
check "dev overrides wrapped again: simple's shim stands for its dev binary" \
    grep -qx "registry.opentofu.org/tftap/simple - $PEERS/bin/terraform-provider-simple" <(echo "$dev_first")
(cd "$d" && TF_CLI_CONFIG_FILE=$dev_cfg TFTEST_RPC_LOG=$WORK/dev.log timeout 300 tofu apply -auto-approve \
    -input=false -no-color >"$WORK/dev.out" 2>&1)
check_eq "dev overrides wrapped again: apply exits 0" "$?" 0
# As in plan(): under wrap nothing waits for the recorders; the last one
# ends the run.
wait_until 600 '[ "$(sqlite3 "$WORK/dev.db" "SELECT count(*) FROM runs WHERE ended_us IS NULL" 2>/dev/null)" = 0 ]'
check_eq "dev overrides wrapped again: simple_resource applied once" "$(sqlite3 "$WORK/dev.db" \
    "SELECT count(*) FROM calls WHERE rpc = 'ApplyResourceChange' AND type_name = 'simple_resource'")" 1
check "dev overrides wrapped again: every tftest5 call recorded once" \
    cmp -s <(sqlite3 "$WORK/dev.db" "SELECT c.method FROM calls c JOIN processes p ON p.id = c.process_id
        WHERE c.stream = 0 AND c.method LIKE '/tfplugin%' AND p.provider LIKE '%tftest5'" | sort) <(log_calls "$WORK/dev.log")

# ---- a shim copied into a filesystem mirror: resolved like an override ---------
m5=$(grep -l tftest5 "$WORK"/ci-shims/p*/tftap-shim.json)
mdir=$WORK/mirror/registry.opentofu.org/tftap/tftest5/0.1.0/linux_amd64
mkdir -p "$mdir" "$WORK/empty-data"
jq --arg b "$(jq -r .binary "$m5")" '.binary = $b' "$m5" >"$mdir/tftap-shim.json"
printf '#!/bin/sh\nexec %s shim %s "$@"\n' "'$TFTAP'" "'$mdir/tftap-shim.json'" >"$mdir/terraform-provider-tftest5_v0.1.0"
chmod +x "$mdir/terraform-provider-tftest5_v0.1.0"
printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' "$WORK/mirror" >"$WORK/mirror.tfrc"
(cd "$w" && TF_DATA_DIR=$WORK/empty-data TF_CLI_CONFIG_FILE=$WORK/mirror.tfrc "$TFTAP" wrap --db "$WORK/m.db" \
    --out "$WORK/mirrorshims" >/dev/null 2>"$WORK/mirror.err")
check_eq "shim in a mirror: wrap exits 0" "$?" 0
check_eq "shim in a mirror: its shim stands for the real provider" \
    "$(jq -r .binary "$WORK"/mirrorshims/p*/tftap-shim.json)" "$(jq -r .binary "$m5")"

# ---- hand-made: a dev_override at a shim whose provider is tftap itself ----------
loop=$WORK/loop
mkdir -p "$loop"
jq -n --arg bin "$TFTAP" --arg db "$WORK/loop.db" \
    '{provider: "registry.opentofu.org/tftap/tftest5", version: null, binary: $bin, db: $db,
      record_sensitive: false, keep_raw: false}' >"$loop/tftap-shim.json"
printf '#!/bin/sh\nexec %s shim %s "$@"\n' "'$TFTAP'" "'$loop/tftap-shim.json'" >"$loop/terraform-provider-tftest5"
chmod +x "$loop/terraform-provider-tftest5"
sed "s|^\( *\)provider_installation {|&\n\1  dev_overrides {\n\1    \"tftap/tftest5\" = \"$loop\"\n\1  }|" \
    "$PEERS/tofurc" >"$WORK/loop.tfrc"
check "hand-made: the config has the override" grep -q "\"tftap/tftest5\" = \"$loop\"" "$WORK/loop.tfrc"

(cd "$w" && TF_CLI_CONFIG_FILE=$WORK/loop.tfrc timeout 120 tofu plan -input=false -no-color >"$WORK/loop.out" 2>&1)
st=$?
check "hand-made, tofu plan: fails at once (exit $st)" test "$st" -ne 0 -a "$st" -ne 124
check_eq "hand-made, tofu plan: tofu shows our one line" \
    "$(grep -c "tftap: the shim $loop/tftap-shim.json names tftap itself as its provider; refusing to start it" "$WORK/loop.out")" 1
check "hand-made, tofu plan: nothing recorded" test ! -e "$WORK/loop.db"
check_eq "hand-made, tofu plan: no shim left running" "$(shims_running)" 0

(cd "$w" && TF_CLI_CONFIG_FILE=$WORK/loop.tfrc "$TFTAP" wrap --db "$WORK/loop.db" --out "$WORK/loopshims" >/dev/null 2>"$WORK/loopwrap.err")
check_eq "hand-made, wrap: refuses" "$?" 1
check_eq "hand-made, wrap: in one line naming the config to unset" "$(cat "$WORK/loopwrap.err")" \
    "tftap: registry.opentofu.org/tftap/tftest5: the tftap shim $loop/terraform-provider-tftest5 stands for $TFTAP, which is tftap again; unset TF_CLI_CONFIG_FILE ($WORK/loop.tfrc) and wrap again"
(cd "$w" && TF_CLI_CONFIG_FILE=$WORK/loop.tfrc "$TFTAP" run --db "$WORK/loop.db" -- tofu plan -input=false -no-color >"$WORK/looprun.out" 2>&1)
check_eq "hand-made, run: refuses" "$?" 1
check_eq "hand-made, run: in one line" "$(cat "$WORK/looprun.out")" "$(cat "$WORK/loopwrap.err")"

# ---- hand-made: a shim whose provider is a script that starts another shim ------
# No path check sees through the script: the shims' environment marker does.
inner=$WORK/inner
mkdir -p "$inner"
real5=$(realpath "$w"/.terraform/providers/registry.opentofu.org/tftap/tftest5/0.1.0/*/terraform-provider-tftest5_v0.1.0)
jq -n --arg bin "$real5" --arg db "$WORK/chain.db" \
    '{provider: "registry.opentofu.org/tftap/tftest5", version: null, binary: $bin, db: $db,
      record_sensitive: false, keep_raw: false}' >"$inner/inner.json"
printf '#!/bin/sh\nexec %s shim %s "$@"\n' "'$TFTAP'" "'$inner/inner.json'" >"$WORK/wrapper.sh"
chmod +x "$WORK/wrapper.sh"
chain=$WORK/chain
mkdir -p "$chain"
jq -n --arg bin "$WORK/wrapper.sh" --arg db "$WORK/chain.db" \
    '{provider: "registry.opentofu.org/tftap/tftest5", version: null, binary: $bin, db: $db,
      record_sensitive: false, keep_raw: false}' >"$chain/tftap-shim.json"
printf '#!/bin/sh\nexec %s shim %s "$@"\n' "'$TFTAP'" "'$chain/tftap-shim.json'" >"$chain/terraform-provider-tftest5"
chmod +x "$chain/terraform-provider-tftest5"
sed "s|\"$loop\"|\"$chain\"|" "$WORK/loop.tfrc" >"$WORK/chain.tfrc"
(cd "$w" && TF_CLI_CONFIG_FILE=$WORK/chain.tfrc TF_LOG=debug TF_LOG_PATH=$WORK/chain.tflog \
    timeout 120 tofu plan -input=false -no-color >"$WORK/chain.out" 2>&1)
st=$?
check "shim behind a script: fails at once (exit $st)" test "$st" -ne 0 -a "$st" -ne 124
refusal="tftap: the shim $inner/inner.json was started by another tftap shim (TFTAP_SHIM_DEPTH is set); refusing to start it"
# On stderr, which tofu keeps in its log, always.
check "shim behind a script: the refusal reaches tofu's plugin log" grep -qF "$refusal" "$WORK/chain.tflog"
# The outer shim read the inner one's line instead of a handshake, and the
# record says so (once its recorder has written it: nothing waits for it
# here, as under tftap wrap).
check "shim behind a script: the outer shim recorded the inner one's line" \
    wait_until 300 '[ "$(sqlite3 "$WORK/chain.db" "SELECT count(*) FROM processes WHERE instr(start_error, '"'"'$refusal'"'"') > 0")" -ge 1 ]'
# As the handshake line too, which tofu prints in its error. Earlier sessions
# saw tofu print an empty message here on a loaded machine (go-plugin read no
# line from the outer shim's stdout); not seen since. What each side said is
# shown if it comes back.
shown=$(grep -cF "$refusal" "$WORK/chain.out")
if [ "$shown" != 1 ]; then
    echo "shim behind a script: tofu's error:"
    grep -A3 "Unrecognized remote plugin message" "$WORK/chain.out" | sed 's/^/  /'
    echo "shim behind a script: the record's start errors:"
    sqlite3 "$WORK/chain.db" "SELECT id, start_error FROM processes" | sed 's/^/  /'
    echo "shim behind a script: go-plugin in tofu's log:"
    grep -E "plugin (process exited|started)|Unrecognized|waiting for RPC" "$WORK/chain.tflog" | sed 's/^/  /'
fi
check_eq "shim behind a script: tofu shows our one line" "$shown" 1
check_eq "shim behind a script: no shim left running" "$(shims_running)" 0

finish
