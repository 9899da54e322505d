#!/usr/bin/env bash
# The database on a full filesystem (a tiny tmpfs, filled up; needs root
# and mount(2), skipped otherwise): `tftap run -- tofu apply` must behave
# exactly as tofu alone (exit code and output), with one line of warning
# from tftap; once space is freed, the next run records normally into the
# same database.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
mnt=$WORK/full
mkdir -p "$mnt"
# CI runs as root: there this is the one test of a full disk.
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=16m,mode=0700 tftap-e2e-full "$mnt" 2>"$WORK/mount.err"; then
    cannot_run "cannot mount a tmpfs here (needs root and mount permission): $(cat "$WORK/mount.err" 2>/dev/null)"
fi
unmount() { umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; }
trap 'unmount; cleanup_work' EXIT

db=$mnt/rec/tftap.db
w=$WORK/wrapped d=$WORK/direct
new_dir "$top_srcdir/examples/basic" "$w"
new_dir "$top_srcdir/examples/basic" "$d"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init (wrapped dir)"
(cd "$d" && tofu init -input=false -no-color >/dev/null) || not_ok "init (direct dir)"

# Fill every block of the filesystem.
dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null
check "the filesystem is full" test "$(df -P "$mnt" | awk 'NR == 2 { print $4 }')" = 0

# What tofu prints, modulo values random by design (from each directory's
# own state) and timings.
norm() { # DIR FILE
    local randoms=$1.randoms
    (cd "$1" && tofu show -json) | jq -r '[.. | objects | to_entries[] | select(.key == "id" or
        .key == "hex" or .key == "b64_std" or .key == "dec") | .value | select(type == "string"
        and length > 0)] | unique | sort_by(-length) | .[]' >"$randoms"
    perl -e 'open(my $f, "<", $ARGV[0]) or die; chomp(my @r = <$f>); local $/; my $t = <STDIN>;
        for my $v (@r) { $t =~ s/\Q$v\E/<random>/g } $t =~ s/after [0-9]+s/after Ns/g; print $t' \
        "$randoms" <"$2"
}

(cd "$w" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/out.w" 2>"$WORK/err.w")
gw=$?
(cd "$d" && tofu apply -auto-approve -input=false -no-color >"$WORK/out.d" 2>"$WORK/err.d")
gd=$?
check_eq "full: exit code through tftap = direct" "$gw" "$gd"
check_eq "full: the apply succeeded" "$gw" 0
# Resources apply in parallel: their progress lines come in any order.
if cmp -s <(norm "$w" "$WORK/out.w" | sort) <(norm "$d" "$WORK/out.d" | sort); then
    ok "full: output through tftap = direct (lines, in any order)"
else
    not_ok "full: output differs (< tftap, > direct)"
    diff <(norm "$w" "$WORK/out.w" | sort) <(norm "$d" "$WORK/out.d" | sort) | head -20
fi
check_eq "full: stderr is direct's plus one tftap line" \
    "$(grep -v '^tftap: cannot record into' "$WORK/err.w")" "$(cat "$WORK/err.d")"
check_eq "full: tftap warned once" "$(grep -c '^tftap: ' "$WORK/err.w")" 1
grep '^tftap: ' "$WORK/err.w"
check_eq "full: the state through tftap has what direct has" \
    "$(cd "$w" && tofu state list | tr '\n' ' ')" "$(cd "$d" && tofu state list | tr '\n' ' ')"
check_eq "full: nothing of tftap's left in TMPDIR" "$(find "$TMPDIR" -mindepth 1 | head -3)" ""

# Space again: the same database records the next run.
rm -f "$mnt/fill"
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -detailed-exitcode \
    >"$WORK/out.w" 2>"$WORK/err.w")
check_eq "freed: plan exit code (no changes)" "$?" 0
check_eq "freed: no tftap warning" "$(grep -c '^tftap: ' "$WORK/err.w")" 0
check_eq "freed: the database is intact" "$(sqlite3 "$db" "PRAGMA integrity_check")" ok
run=$(last_run "$db")
check_eq "freed: the run is recorded with its exit code" \
    "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" 0
check "freed: its provider calls are recorded" \
    test "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run AND rpc = 'PlanResourceChange'")" -eq 4
check_eq "freed: nothing was lost" "$(sqlite3 "$db" "SELECT count(*) FROM gaps")" 0

# The disk fills up in the middle of a run, and is freed before it ends:
# three applies in a row, each hanging until the test lets it go. The
# recorder warns once, drops what arrives while it cannot write, and
# records that loss as a gap once it can write again; the run goes on.
h=$WORK/hang marker=$WORK/hanging
new_dir "$top_srcdir/tests/e2e/configs/hang3" "$h"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "init (hang)"
rm -f "$marker"
(cd "$h" && TFTEST_HANG_MARKER=$marker exec "$TFTAP" run --db "$db" -- tofu apply -auto-approve \
    -input=false -no-color >"$WORK/out.h" 2>"$WORK/err.h") &
pid=$!
# The recorder's stats are not visible from here; its failed write is: the
# provider's stderr (go-plugin logs it) is not ours either, so watch the
# database for the call b's release completes never arriving.
dropping() { ! recorded_end a && sleep 1 && ! recorded_end a; }
recorded_end() { # RESOURCE: its apply call ended in the record
    [ "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE rpc = 'ApplyResourceChange'
        AND request_json ->> '$.config.string_attr' = '$1' AND ended_us IS NOT NULL" 2>/dev/null)" -ge 1 ]
}
recorded() { # RESOURCE: its apply call is in the record
    [ "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE rpc = 'ApplyResourceChange'
        AND request_json ->> '$.config.string_attr' = '$1'" 2>/dev/null)" -ge 1 ]
}
gap_recorded() {
    [ "$(sqlite3 "$db" "SELECT count(*) FROM gaps WHERE run_id = (SELECT max(id) FROM runs)" \
        2>/dev/null)" -ge 1 ]
}
if wait_for 300 test -e "$marker" && wait_for 100 recorded a; then
    ok "mid-run: a hangs, its call recorded"
    dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null
    rm -f "$marker" # a goes on; b starts and hangs: the recorder hits the full disk
    check "mid-run: b hangs" wait_for 300 test -e "$marker"
    # The recorder's own warning goes to tofu's plugin log, not to the
    # terminal. Give it the time of a few commits to fail writing a's end
    # (SQLite may still fit a write into space its files already have, so
    # this is not asserted; the gap below is).
    dropping_seen=1
    wait_for 5 dropping || { dropping_seen=0; echo "note: a's end was written although the disk is full"; }
    rm -f "$marker" # b goes on and c starts, unrecorded: the disk is still full
    check "mid-run: c hangs" wait_for 300 test -e "$marker"
    rm -f "$mnt/fill"
    # Watched only where a write looked refused; whether one was is known
    # after the run (a slow recorder looks the same for a while).
    gap_while_hanging=unwatched
    if [[ $dropping_seen -eq 1 ]]; then
        gap_while_hanging=no
        wait_for 150 gap_recorded && gap_while_hanging=yes
    fi
    rm -f "$marker"
    wait "$pid"
    check_eq "mid-run: the apply succeeded" "$?" 0
    check_eq "mid-run: the state has all three" "$(cd "$h" && tofu state list | tr '\n' ' ')" \
        "tftest6_thing.a tftest6_thing.b tftest6_thing.c "
    run=$(last_run "$db")
    lost=$(sqlite3 "$db" "SELECT coalesce(sum(dropped), 0) FROM processes WHERE run_id = $run")
    if [[ $lost -gt 0 ]]; then
        if [[ $gap_while_hanging == unwatched ]]; then
            echo "note: a's end was written, the loss came later: the gap was not watched while c hung"
        else
            check_eq "mid-run: the loss is recorded as a gap once the disk has room, c still hanging" \
                "$gap_while_hanging" yes
        fi
        check_eq "mid-run: tftap run said once that the record has gaps" \
            "$(grep -c '^tftap: the record of run [0-9]* has gaps' "$WORK/err.h") $(grep -c '^tftap: ' "$WORK/err.h")" "1 1"
        check_eq "mid-run: the gap says why" \
            "$(sqlite3 "$db" "SELECT group_concat(DISTINCT reason) FROM gaps WHERE run_id = $run")" \
            "database unavailable"
        check_eq "mid-run: the process counts what the gaps lost" \
            "$(sqlite3 "$db" "SELECT (SELECT sum(lost) FROM gaps WHERE run_id = $run) =
                (SELECT sum(dropped) FROM processes WHERE run_id = $run)")" 1
        # a's end came while the disk was full: kept and written after (the
        # SQL stage retries what it holds), or dropped when it came before
        # the decoder knew, and then counted in the gap.
        if recorded_end a; then
            ok "mid-run: a's completion, held while the disk was full, is written after"
        else
            echo "note: a's completion was dropped while the disk was full, not held"
            check "mid-run: a's dropped completion is counted in the gap" test "$lost" -ge 1
        fi
        check "mid-run: calls made after the disk had room are recorded" test "$(sqlite3 "$db" \
            "SELECT count(*) FROM calls WHERE run_id = $run AND ended_us IS NOT NULL AND started_us >
             (SELECT min(recorded_us) FROM gaps WHERE run_id = $run)")" -ge 1
    else
        # SQLite fitted every write into space its files already had: then
        # nothing may be missing and nothing may be reported as lost.
        echo "note: the full disk never refused a write this time: checking that nothing is missing"
        check_eq "mid-run: no gap recorded when nothing was lost" \
            "$(sqlite3 "$db" "SELECT count(*) FROM gaps WHERE run_id = $run")" 0
        check_eq "mid-run: tftap printed nothing" "$(grep -c '^tftap: ' "$WORK/err.h")" 0
        check "mid-run: a's completion is recorded" recorded_end a
        check_eq "mid-run: every call recorded as ended" \
            "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run AND ended_us IS NULL")" 0
    fi
    check_eq "mid-run: the database is intact" "$(sqlite3 "$db" "PRAGMA integrity_check")" ok
    check_eq "mid-run: the run row has the exit code" \
        "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" 0
else
    not_ok "mid-run: the apply never reached the first hanging call"
    cat "$WORK/err.h"
    kill -KILL "$pid" 2>/dev/null
fi
rm -f "$marker" "$mnt/fill"

# The disk fills up mid-run and stays full past the end of the command:
# tftap run must say that the record is not complete yet, and leave the run
# open in the record (not ended) while a recorder still holds calls; once
# there is room again, the recorders write them and the background
# finisher ends the run.
rm -f "$marker"
(cd "$h" && tofu destroy -auto-approve -input=false -no-color >/dev/null 2>&1)
(cd "$h" && TFTEST_HANG_MARKER=$marker exec "$TFTAP" run --db "$db" -- tofu apply -auto-approve \
    -input=false -no-color >"$WORK/out.f" 2>"$WORK/err.f") &
pid=$!
if wait_for 300 test -e "$marker" && wait_for 100 recorded a; then
    run=$(last_run "$db")
    dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null
    # Let every hanging apply go on, until the command is over.
    while kill -0 "$pid" 2>/dev/null; do rm -f "$marker"; sleep 0.2; done
    wait "$pid"
    check_eq "full to the end: the apply succeeded" "$?" 0
    grep '^tftap: ' "$WORK/err.f"
    held=$(grep -c "^tftap: the record of run $run is not complete yet" "$WORK/err.f")
    if [ "$held" = 1 ]; then
        ok "full to the end: tftap run said the record is not complete yet"
        check_eq "full to the end: the run is not ended in the record while a recorder holds calls" \
            "$(sqlite3 "$db" "SELECT ended_us IS NULL FROM runs WHERE id = $run")" 1
        rm -f "$mnt/fill"
        run_ended() { [ "$(sqlite3 "$db" "SELECT ended_us IS NOT NULL FROM runs WHERE id = $run" 2>/dev/null)" = 1 ]; }
        check "full to the end: with room again, the run is ended in the background" wait_for 300 run_ended
        check_eq "full to the end: with its exit code" \
            "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" 0
        # What arrived while the disk refused writes is dropped and counted:
        # c's apply is either written or in a gap of that reason.
        gap_why=$(sqlite3 "$db" "SELECT coalesce(sum(lost), 0) || ' ' || coalesce(group_concat(DISTINCT reason), '')
            FROM gaps WHERE run_id = $run")
        echo "full to the end: gaps: $gap_why"
        check "full to the end: c's apply is recorded or counted in a gap saying why" \
            sh -c "[ \"\$(sqlite3 '$db' \"SELECT count(*) FROM calls WHERE run_id = $run AND rpc = 'ApplyResourceChange' AND ended_us IS NOT NULL AND request_json ->> '\$.config.string_attr' = 'c'\")\" = 1 ] || echo '$gap_why' | grep -q 'database unavailable'"
    else
        # SQLite fitted every write into pages its files already had.
        echo "note: the full disk never refused a write this time"
        check_eq "full to the end: no gap when nothing was lost" \
            "$(sqlite3 "$db" "SELECT count(*) FROM gaps WHERE run_id = $run")" 0
    fi
else
    not_ok "full to the end: the apply never reached the first hanging call"
    kill -KILL "$pid" 2>/dev/null
fi
rm -f "$marker" "$mnt/fill"
finish
