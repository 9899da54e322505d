#!/usr/bin/env bash
# Recording never stands in the way of the command: a CLI config tftap
# cannot read (over its 4 MiB bound) makes tftap run say so in one line and
# run the command anyway, unwrapped, with the exit code and output it has
# without tftap.
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
finish
