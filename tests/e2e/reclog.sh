#!/usr/bin/env bash
# The recorders' log (issue 8): a recorder's problems go to tftap.log beside
# the database (0600, one prefixed line each), not to the provider's stderr
# or the terminal, and `tftap run` ends with one line when the log grew.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
d=$WORK/dbdir
mkdir -p "$d"
log=$d/tftap.log
w=$WORK/basic
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# ---- under tftap wrap: a database the recorders cannot open -------------------
printf 'this is not an SQLite database, it is a text file of more than a hundred bytes, so that SQLite reads a header\n' >"$d/bad.db"
eval "$(cd "$w" && "$TFTAP" wrap --db "$d/bad.db" --out "$WORK/shims" 2>/dev/null)"
# wrapped_processes LOG: how many provider processes a shim started (each
# has a recorder, which logs its one line in its own time).
wrapped_processes() { log_begins "$1" | cut -d' ' -f1 | sort -u | wc -l; }
(cd "$w" && TFTEST_RPC_LOG=$WORK/rpc1.log TF_LOG=trace TF_LOG_PATH=$WORK/tofu-trace.log \
    tofu plan -input=false -no-color >"$WORK/plan.out" 2>&1)
check_eq "wrap, unopenable database: plan exits 0" "$?" 0
check "wrap: tofu's output says nothing of the recorders" sh -c "! grep -q 'recording database' '$WORK/plan.out'"
check "wrap: nor does the provider's stderr (tofu's plugin log)" sh -c "! grep -q 'recording database' '$WORK/tofu-trace.log'"
n=$(wrapped_processes "$WORK/rpc1.log")
check "wrap: providers started by shims" test "$n" -ge 2
check "wrap: every provider process's recorder logged one line" \
    wait_until 300 '[ -s "$log" ] && [ "$(wc -l <"$log")" -eq "$n" ]'
check_eq "wrap: the log is 0600" "$(stat -c %a "$log")" 600
check_eq "wrap: each line is time, pid, provider, message" \
    "$(grep -cvE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z pid [0-9]+ registry\.opentofu\.org/tftap/tftest[56]: cannot open the recording database $d/bad.db: " "$log")" 0
export TF_CLI_CONFIG_FILE=$PEERS/tofurc

# ---- tftap run: one line at the end when the log grew meanwhile ----------------
# Nothing goes wrong in the run's own recorders: no line.
(cd "$w" && "$TFTAP" run --db "$d/tftap.db" -- tofu plan -input=false -no-color >"$WORK/run1.out" 2>&1)
check_eq "run, nothing logged: exits 0" "$?" 0
check "run, nothing logged: no line about the log" sh -c "! grep -q 'tftap: the recorders logged' '$WORK/run1.out'"
# While an apply hangs under tftap run, a wrapped plan of another directory
# whose recorders cannot open their database logs into the same file.
h=$WORK/hang
marker=$WORK/hanging
new_dir "$top_srcdir/tests/e2e/configs/hang" "$h"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "init (hang)"
before=$(wc -l <"$log")
(cd "$h" && TFTEST_HANG_MARKER=$marker "$TFTAP" run --db "$d/tftap.db" -- tofu apply -auto-approve \
    -input=false -no-color >"$WORK/run2.out" 2>&1) &
runner=$!
if wait_for 600 test -e "$marker"; then
    (cd "$w" && TFTEST_RPC_LOG=$WORK/rpc2.log TF_CLI_CONFIG_FILE=$WORK/shims/tftap.tfrc \
        tofu plan -input=false -no-color >/dev/null 2>&1)
    added=$(wrapped_processes "$WORK/rpc2.log")
    check "run: the wrapped plan's recorders logged their lines meanwhile" \
        wait_until 300 '[ "$(wc -l <"$log")" -eq $((before + added)) ]'
    rm -f "$marker"
else
    not_ok "run: the apply never reached the hanging call"
    added=0
fi
wait "$runner"
check_eq "run: the apply exits 0" "$?" 0
check_eq "run: ends with one line about the log" \
    "$(grep -c "^tftap: the recorders logged $added problem(s) in $log; the first: .* registry.opentofu.org/tftap/tftest[56]: cannot open the recording database" "$WORK/run2.out")" 1
# The wrapped plans' recorders keep trying their database for minutes: once
# the scratch directory is gone they would make it again (a database whose
# directory is missing is made, with the directory).
pkill -f "$TFTAP shim $WORK/" 2>/dev/null
check "the wrapped plans' recorders stopped" wait_for 300 recorders_done "$WORK"
finish
