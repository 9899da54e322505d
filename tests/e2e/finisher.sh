#!/usr/bin/env bash
# The background finisher on an SQLite file. When tofu exits and the
# database refuses writes (made immutable here with chattr +i, as a full
# disk or a read-only filesystem would refuse them), `tftap run` exits with
# tofu's code and leaves the run's end to a finisher that tries every
# second. It must end the run once the file takes writes again, with
# tofu's exit code. And when the file is gone meanwhile, or replaced by
# another database whose run of that id is another run, it must give up at
# once, with one line in the log, and write nothing into the new file
# (the other run keeps its own exit code). A write refused in SQLite's
# mapped -shm file is a SIGBUS: tftap run still exits with tofu's code.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
probe=$WORK/probe
touch "$probe"
# CI runs as root on ext4: there this is the finisher's one test on SQLite.
if [ "$(id -u)" != 0 ] || ! chattr +i "$probe" 2>"$WORK/chattr.err"; then
    cannot_run "cannot make a file immutable here (needs root and a filesystem with chattr +i): $(cat "$WORK/chattr.err")"
fi
chattr -i "$probe"
dbdir=$WORK/db db=$WORK/db/tftap.db
mkdir -p "$dbdir" "$WORK/bin"
# Never leave an immutable file behind: the scratch directory is removed.
trap 'chattr -i "$dbdir"/* 2>/dev/null; cleanup_work' EXIT

# tofu, and after an apply the database and its write-ahead log made
# immutable, before tftap run records the end (FREEZE_SHM=1: its -shm file
# too, which SQLite maps: a write refused there is a SIGBUS).
cat >"$WORK/bin/tofu" <<EOF
#!/bin/sh
"$TOFU" "\$@"
rc=\$?
if [ "\$1" = apply ] && [ -n "\${FREEZE:-}" ]; then
    # The recorders' last commits first (on a busy machine they may still
    # be writing what the providers answered last): what is frozen out is
    # the run's end alone, which tftap run records after this.
    n=0
    while pgrep -f "tftap shim \$TMPDIR/" >/dev/null && [ \$n -lt 1500 ]; do
        sleep 0.2
        n=\$((n + 1))
    done
    chattr +i "\$FREEZE" "\$FREEZE-wal" || exit 99
    # Its pages written back first, so that the next write to any of them
    # faults, and is refused.
    if [ -n "\${FREEZE_SHM:-}" ]; then sync "\$FREEZE-shm" && chattr +i "\$FREEZE-shm" || exit 99; fi
fi
exit \$rc
EOF
chmod +x "$WORK/bin/tofu"
w=$WORK/w
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
export TFTAP_FINISH_WAIT=600 TFTAP_RECORDER_WAIT=5
log=$dbdir/tftap.log

# frozen_apply NAME: an apply whose end is left to a finisher; sets $run and $fin (its pid).
frozen_apply() {
    (cd "$w" && rm -f terraform.tfstate* &&
        FREEZE=$db "$TFTAP" run --db "$db" -- "$WORK/bin/tofu" apply -auto-approve -input=false \
            -no-color >"$WORK/$1.out" 2>"$WORK/$1.err")
    check_eq "$1: tftap run exits with tofu's code" "$?" 0
    run=$(sqlite3 -readonly "$db" "SELECT max(id) FROM runs")
    check "$1: tftap run says the end is left to the background ($(cat "$WORK/$1.err"))" \
        grep -q "^tftap: cannot record the end of run $run into .* now: it is recorded when the database is back" \
        "$WORK/$1.err"
    check_eq "$1: the run is not ended yet" \
        "$(sqlite3 -readonly "$db" "SELECT ended_us IS NULL FROM runs WHERE id = $run")" 1
    fin=$(pgrep -f -- "--db $db -- $WORK/bin/tofu apply" | head -n 1)
    check "$1: a finisher waits in the background" test -n "$fin"
}
finisher_gone() { ! kill -0 "$fin" 2>/dev/null; }
gave_up() { grep -q "gave up recording the end of run $1 (exit code 0) into $db: $2" "$log" 2>/dev/null; }

# ---- the file takes writes again: the run is ended, with tofu's code -----------------
frozen_apply back
chattr -i "$db" "$db-wal"
run_ended() { [ "$(sqlite3 -readonly "$db" "SELECT ended_us IS NOT NULL FROM runs WHERE id = $run" 2>/dev/null)" = 1 ]; }
check "back: the finisher ends the run" wait_for 300 run_ended
check_eq "back: with tofu's exit code" "$(sqlite3 -readonly "$db" "SELECT exit_code FROM runs WHERE id = $run")" 0
check "back: the finisher is done" wait_for 300 finisher_gone
# What the recorders could not write while the file was frozen they write now.
all_answered() { [ "$(sqlite3 -readonly "$db" "SELECT count(*) FROM calls WHERE run_id = $run AND ended_us IS NULL")" = 0 ]; }
check "back: every call recorded has its answer" wait_for 300 all_answered

# ---- the file is gone: nothing brings it back, the finisher says so at once ----------
frozen_apply gone
gone_run=$run
# Held still while the file is freed and deleted: it must not find it
# taking writes in between.
kill -STOP "$fin"
chattr -i "$db" "$db-wal"
rm -f "$db" "$db-wal" "$db-shm"
kill -CONT "$fin"
# Within a minute, not the ten it would otherwise keep trying for.
check "gone: the finisher gives up at once, saying why" wait_for 300 gave_up "$gone_run" \
    'the database file is gone'
check "gone: and is done" wait_for 300 finisher_gone
check "gone: no database made again in its place" test ! -e "$db"

# ---- the file replaced by another database: its run of that id is another run -------
# Held still (SIGSTOP) while the file is swapped, so that it looks only at
# the new one: a plan recorded elsewhere, run 1 there too, exit code 2.
frozen_apply replaced
check_eq "replaced: the frozen run is run 1 of a new file" "$run" 1
kill -STOP "$fin"
other=$WORK/other
mkdir -p "$other"
new_dir "$top_srcdir/examples/basic" "$WORK/w2"
(cd "$WORK/w2" && tofu init -input=false -no-color >/dev/null) || not_ok "init (other)"
(cd "$WORK/w2" && "$TFTAP" run --db "$other/tftap.db" -- tofu plan -detailed-exitcode \
    -input=false -no-color >/dev/null 2>&1)
check_eq "replaced: the other database's plan exits 2 (changes)" "$?" 2
check_eq "replaced: its run 1 has the plan's exit code" \
    "$(sqlite3 -readonly "$other/tftap.db" "SELECT id, exit_code FROM runs")" "1|2"
chattr -i "$db" "$db-wal"
rm -f "$db-wal" "$db-shm"
mv "$other/tftap.db" "$db"
kill -CONT "$fin"
check "replaced: the finisher gives up, saying why" wait_for 300 gave_up 1 \
    'the database was replaced: its run of that id is another run'
check "replaced: and is done" wait_for 300 finisher_gone
check_eq "replaced: the other run keeps its own exit code" \
    "$(sqlite3 -readonly "$db" "SELECT id, exit_code FROM runs")" "1|2"

# ---- the mapped -shm file refuses writes too: SIGBUS, never the command's code -------
rm -f "$db" "$db-wal" "$db-shm"
(cd "$w" && rm -f terraform.tfstate* &&
    FREEZE=$db FREEZE_SHM=1 "$TFTAP" run --db "$db" -- "$WORK/bin/tofu" apply -auto-approve \
        -input=false -no-color >"$WORK/bus.out" 2>"$WORK/bus.err")
check_eq "SIGBUS: tftap run exits with tofu's code ($(tail -n 1 "$WORK/bus.err"))" "$?" 0
check "SIGBUS: saying why the run may stay without its end" \
    grep -q '^tftap: the database.s files refused a write (SIGBUS)' "$WORK/bus.err"
check "SIGBUS: tofu's own output whole" grep -q 'Apply complete!' "$WORK/bus.out"
chattr -i "$db" "$db-wal" "$db-shm"
finish
