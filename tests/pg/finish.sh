#!/usr/bin/env bash
# tftap run's background finisher giving up: the run's own command stops
# the PostgreSQL server, so the run's end cannot be recorded when the command
# exits; tftap run exits with its code at once and leaves the end to the
# finisher, which (TFTAP_FINISH_WAIT=2: two seconds, not eleven minutes)
# gives up with one line in the recorders' log (the URI case:
# ${TMPDIR}/tftap-UID/tftap.log) naming the run, its exit code and why.
# The server started again: the run is there without its end. That run is
# recorded with --record-sensitive (the one way a run is recorded into the
# server live); any other is held back in a spool until its end, and its
# copy into the record is what waits for the server then: the same stop
# without it, the copier in the background giving up with one line, the
# spool kept, and the next run into the record copying it.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
pg_e2e_start
mkdir -p "$WORK/tmp"
export TMPDIR=$WORK/tmp
log=$TMPDIR/tftap-$(id -u)/tftap.log
# From / : as root the server's tools run as postgres, who may not enter $WORK.
(cd / && TFTAP_FINISH_WAIT=2 "$TFTAP" run --db "$URI" --record-sensitive -- "${pg_runas[@]}" "$pg_bin/pg_ctl" \
    -D "$pg_dir/data" -w -s -m fast stop >"$WORK/run.out" 2>&1)
check_eq "tftap run exits with its command's code" "$?" 0
check "tftap run says the end is left to the background" \
    grep -q "^tftap: cannot record the end of run 1 into .*: it is recorded when the database is back (tftap keeps trying for 2 s in the background)$" "$WORK/run.out"
check "the finisher gives up with one line in the recorders' log" \
    wait_for 120 grep -qs "tftap run: gave up recording the end of run 1 (exit code 0) into " "$log"
check_eq "one line, naming why" \
    "$(grep -c "pid [0-9]* tftap run: gave up recording the end of run 1 (exit code 0) into postgresql:///tftap?host=.*: cannot open it: .* (tried every second for 2 s)$" "$log")" 1
pg_start || not_ok "server started again"
check_eq "the run is recorded, without its end" \
    "$(pg_psql "SELECT count(*) FROM runs WHERE id = 1 AND ended_us IS NULL")" 1

# ---- held back in a spool: its copy waits for the server --------------------------
side=$TMPDIR/tftap-$(id -u)
(cd / && TFTAP_FINISH_WAIT=2 "$TFTAP" run --db "$URI" -- "${pg_runas[@]}" "$pg_bin/pg_ctl" \
    -D "$pg_dir/data" -w -s -m fast stop >"$WORK/spool.out" 2>&1)
check_eq "spool: tftap run exits with its command's code" "$?" 0
check "spool: tftap run says the copy is left to the background" \
    grep -q "^tftap: cannot copy run 1 into .* now (.*): it is held in $side/tftap-spool-.*\.db and copied when the server is back (tftap keeps trying for 2 s in the background)$" "$WORK/spool.out"
check "spool: the copier gives up with one line in the recorders' log" \
    wait_for 120 grep -qs "tftap run: gave up copying run 1 into " "$log"
check_eq "spool: one line, naming why and where the run is" \
    "$(grep -c "pid [0-9]* tftap run: gave up copying run 1 into postgresql:///tftap?host=.*: cannot open it: .* (tried every second for 2 s): it is held in $side/tftap-spool-.*\.db; the next tftap run into the record copies it" "$log")" 1
check_eq "spool: kept" "$(ls "$side" | grep -c '^tftap-spool-.*\.db$')" 1
pg_start || not_ok "server started again"
check_eq "spool: not in the record" "$(pg_psql "SELECT count(*) FROM runs")" 1
(cd / && "$TFTAP" run --db "$URI" -- true >"$WORK/next.out" 2>&1)
check_eq "spool: the next run into the record exits 0" "$?" 0
check_eq "spool: both runs in the record, each ended" \
    "$(pg_psql "SELECT count(*) FROM runs WHERE id > 1 AND ended_us IS NOT NULL")" 2
check_eq "spool: the spool removed" "$(ls "$side" | grep -c '^tftap-spool-')" 0
finish
