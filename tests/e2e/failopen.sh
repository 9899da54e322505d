#!/usr/bin/env bash
# Recording never stands in the way of the command: a CLI config tftap
# cannot read (over its 4 MiB bound) makes tftap run say so in one line and
# run the command anyway, unwrapped, with the exit code and output it has
# without tftap. A provider that does not start is recorded as such.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
w=$WORK/w db=$WORK/tftap.db
new_dir "$top_srcdir/tests/e2e/configs/count" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
big=$WORK/big.tfrc
# 5 MB of comment lines, then the real config: tofu reads it, tftap may not.
awk 'BEGIN { for (i = 0; i < 100000; i++) print "# padding padding padding padding padding padding" }' >"$big"
cat "$TF_CLI_CONFIG_FILE" >>"$big"
(cd "$w" && TF_CLI_CONFIG_FILE=$big tofu plan -input=false -no-color -detailed-exitcode >"$WORK/out.d" 2>"$WORK/err.d")
direct=$?
(cd "$w" && TF_CLI_CONFIG_FILE=$big "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color \
    -detailed-exitcode >"$WORK/out.w" 2>"$WORK/err.w")
code=$?
check_eq "a config tftap cannot read: exit code as without tftap" "$code" "$direct"
check_eq "... tofu planned (2: changes)" "$code" 2
check_eq "... tofu's output as without tftap" "$(grep -c 'will be created' "$WORK/out.w")" \
    "$(grep -c 'will be created' "$WORK/out.d")"
check_eq "... one tftap line, saying why" "$(grep -c '^tftap: ' "$WORK/err.w")" 1
check "... naming the config and what it does instead" \
    grep -q "^tftap: cannot read CLI config $big: .*; running the command without recording its providers$" "$WORK/err.w"
check_eq "... recorded as a run with its exit code" \
    "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = (SELECT max(id) FROM runs)")" 2

# A provider that does not start (it prints a line that is no handshake):
# tofu says what it says without tftap, and the record has the process,
# named, with why it did not start, and no gap (nothing was lost).
b=$WORK/broken
new_dir "$top_srcdir/tests/e2e/configs/count" "$b"
(cd "$b" && tofu init -input=false -no-color >/dev/null) || not_ok "init (broken)"
plat=$(find "$b/.terraform/providers" -mindepth 5 -maxdepth 5 -name '*_*' ! -name '*.lock' | head -1)
rm -rf "$plat" && mkdir -p "$plat"
printf '#!/bin/sh\necho "this provider is broken" >&2\necho bogus-line\nexit 3\n' \
    >"$plat/terraform-provider-tftest5_v0.1.0"
chmod +x "$plat/terraform-provider-tftest5_v0.1.0"
(cd "$b" && tofu plan -input=false -no-color >"$WORK/bout.d" 2>"$WORK/berr.d")
direct=$?
(cd "$b" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >"$WORK/bout.w" 2>"$WORK/berr.w")
check_eq "a provider that does not start: exit code as without tftap" "$?" "$direct"
check_eq "... tofu failed (1)" "$direct" 1
check "... tofu says what it printed, as without tftap" grep -q "Unrecognized remote plugin message: bogus-line" "$WORK/berr.w"
run=$(sqlite3 "$db" "SELECT max(id) FROM runs")
check_eq "... the record names the process and why it did not start" \
    "$(sqlite3 "$db" "SELECT count(*) FROM processes WHERE run_id = $run AND provider LIKE '%/tftest5'
        AND start_error LIKE '%(it printed: bogus-line)'")" "$(sqlite3 "$db" "SELECT count(*) FROM processes WHERE run_id = $run")"
check "... at least one such process" test "$(sqlite3 "$db" "SELECT count(*) FROM processes WHERE run_id = $run")" -ge 1
check_eq "... and no gap: nothing was lost" "$(sqlite3 "$db" "SELECT count(*) FROM gaps WHERE run_id = $run")" 0
finish
