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
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=16m,mode=0700 tftap-e2e-full "$mnt" 2>"$WORK/mount.err"; then
    echo "diskfull: skipped, cannot mount a tmpfs here (needs root and mount permission): $(cat "$WORK/mount.err" 2>/dev/null)"
    exit 77
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
finish
