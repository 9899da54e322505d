#!/usr/bin/env bash
# Many writers, one PostgreSQL server (started by this test: tests/pg/lib.sh),
# and faults: eight `tftap run -- tofu apply` at once, each with four
# providers (tftest protocol 5 and 6, the SDKv2 tftestsdk, provider-simple)
# and a chain of three resources (a, b, c) that hang in their apply until
# the test releases them (TFTEST_HANG_MARKER), so that the test, not the
# clock, decides what happens when. While every run hangs in a, one runner
# dies (SIGKILL to its whole process group: tftap run, tofu, shims,
# providers, recorders), then the server stops. With the server away:
# a is released (its answer reaches the recorder, which finds the server
# gone), then b (its answer is lost: a gap), and four runs are let finish
# altogether; the server comes back; the other three finish after it.
# Asserted: every run but the killed one exits 0 with tofu's output;
# nothing committed before the outage is lost or changed; each surviving
# run has a gap "database unavailable" whose count covers every call the
# providers logged (TFTEST_RPC_LOG) but the record lacks or never saw end,
# and processes.dropped sums its gaps; the runs that ended while the server
# was down get their exit code and the rest of their record once it is back
# (written in the background); `tftap runs/show/diff --db URI` read the
# shared record as they read a local copy of it (tftap bundle).
# The runs are recorded with --record-sensitive: the one way a recorder
# writes into the server live, whose faults this test is about (any other
# run is held back in a spool and copied at its end: tests/pg/secrets.sh,
# record.sh and finish.sh test that copy and its server away).
# Only conditions are waited for (polling with generous bounds), never time.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
for p in tftestsdk simple; do
    if ! [ -x "$PEERS/bin/terraform-provider-$p" ]; then
        echo "$e2e_name: peers missing: terraform-provider-$p (run scripts/build-peers)"
        echo "$e2e_name: 0 passed, 1 failed"
        exit 1
    fi
done

N=8
KILLED=3          # dies with SIGKILL before the outage
DOWN="1 2 4 6"    # finish while the server is down
UP="5 7 8"        # finish after it is back
SURVIVORS="$DOWN $UP"
declare -A pid

stop_runners() {
    local i
    for i in "${!pid[@]}"; do
        kill -KILL -- -"${pid[$i]}" 2>/dev/null
    done
}
trap 'stop_runners; pg_cleanup; cleanup_work' EXIT
pg_start || {
    not_ok "PostgreSQL server started"
    finish
}
URI=$(pg_uri)
WORK=$(cd "$WORK" && pwd -P) # runs.cwd is the real path

# One init, eight copies (the providers' binaries come along).
new_dir "$top_srcdir/tests/e2e/configs/many" "$WORK/init"
(cd "$WORK/init" && tofu init -input=false -no-color >"$WORK/init.out" 2>&1) || {
    not_ok "tofu init"
    cat "$WORK/init.out"
    finish
}
for i in $(seq $N); do
    new_dir "$WORK/init" "$WORK/r$i"
    mkdir -p "$WORK/r$i/tmp"
done

# Each runner in its own process group (setsid execs in place: the pid is
# the group's id), with its own TMPDIR (where the recorders of a URI log),
# hang marker and providers' call log.
for i in $(seq $N); do
    (
        cd "$WORK/r$i" || exit 1
        export TMPDIR=$WORK/r$i/tmp TFTEST_HANG_MARKER=$WORK/r$i/marker \
            TFTEST_RPC_LOG=$WORK/r$i/rpc.log
        exec setsid "$TFTAP" run --db "$URI" --record-sensitive -- tofu apply -auto-approve -input=false \
            -no-color >"$WORK/r$i/out" 2>&1
    ) &
    pid[$i]=$!
done

marked() { # RUNNERS...: each one's marker exists (its resource hangs)
    local i
    for i in "$@"; do [ -e "$WORK/r$i/marker" ] || return 1; done
}
release() { # RUNNERS...
    local i
    for i in "$@"; do rm -f "$WORK/r$i/marker"; done
}
# The runner's tftest6 recorder has found the server gone (it drops from
# then on: the line is logged after the decoder is told).
noticed() { # RUNNERS...
    local i
    for i in "$@"; do
        grep -q 'tftap/tftest6: cannot write the recording database' \
            "$WORK/r$i/tmp/tftap-$(id -u)/tftap.log" 2>/dev/null || return 1
    done
}
run_of() { pg_psql "SELECT id FROM runs WHERE cwd = '$WORK/r$1'"; }

# 1. Every run hangs in a (the other resources are applied by then).
if ! wait_for 3000 marked $(seq $N); then
    not_ok "all eight runs reached the hanging resource"
    for i in $(seq $N); do tail -3 "$WORK/r$i/out"; done
    finish
fi
ok "eight concurrent runs reached the hanging resource"
declare -A run
for i in $(seq $N); do run[$i]=$(run_of $i); done
check_eq "eight runs in the shared record, one per runner" \
    "$(for i in $(seq $N); do echo "${run[$i]}"; done | sort -u | grep -c .)" $N

# 2. One runner dies whole.
killed_group=${pid[$KILLED]}
kill -KILL -- -"$killed_group"
wait "$killed_group" 2>/dev/null
unset "pid[$KILLED]"
gone() { ! pgrep -g "$1" >/dev/null; }
check "the killed runner's processes are all gone" wait_for 600 gone "$killed_group"

# What was committed before the outage: every ended call, and the runs.
snapshot() {
    pg_psql "SELECT c.id, c.run_id, c.process_id, c.call_seq, c.method, c.ended_us,
               c.status_code, c.request_bytes, c.response_bytes, md5(coalesce(c.response_json, ''))
             FROM calls c WHERE c.id IN (SELECT id FROM before_ids) ORDER BY c.id"
}
pg_psql "CREATE TABLE before_ids AS SELECT id FROM calls WHERE ended_us IS NOT NULL" >/dev/null
snapshot >"$WORK/before.calls"
pg_psql "SELECT id, command, args, cwd, started_us FROM runs ORDER BY id" >"$WORK/before.runs"
check "calls of all eight runs committed before the outage" test \
    "$(pg_psql "SELECT count(DISTINCT run_id) FROM calls WHERE id IN (SELECT id FROM before_ids)")" \
    = $N

# 3. The server goes away.
pg_stop || not_ok "server stopped"
release $SURVIVORS
if wait_for 3000 marked $SURVIVORS && wait_for 3000 noticed $SURVIVORS; then
    ok "server down: a applied, b hangs, the recorders found the server gone"
else
    not_ok "server down: a applied, b hangs, the recorders found the server gone"
fi
release $SURVIVORS # b: its answer is lost
wait_for 3000 marked $SURVIVORS || not_ok "server down: c hangs"
release $DOWN # these finish while the server is down
for i in $DOWN; do
    wait "${pid[$i]}"
    check_eq "run $i finished while the server was down: exit 0" "$?" 0
    exited_us[$i]=$(($(date +%s%N) / 1000))
    unset "pid[$i]"
    check "run $i: tofu's output" grep -q 'Apply complete! Resources: 8 added' "$WORK/r$i/out"
    check "run $i: tftap says the end is recorded later" \
        grep -q 'recorded when the database is back' "$WORK/r$i/out"
done

# 4. The server is back.
pg_start || not_ok "server started again"
gapped() { # RUNNERS...: each one's run has a database gap
    local i
    for i in "$@"; do
        [ "$(pg_psql "SELECT count(*) FROM gaps WHERE run_id = ${run[$i]}
                      AND reason LIKE '%database unavailable%'")" -gt 0 ] || return 1
    done
}
check "server back: the hanging runs record their gaps" wait_for 3000 gapped $UP
release $UP
for i in $UP; do
    wait "${pid[$i]}"
    check_eq "run $i finished after the outage: exit 0" "$?" 0
    unset "pid[$i]"
    check "run $i: tofu's output" grep -q 'Apply complete! Resources: 8 added' "$WORK/r$i/out"
done
# The runs that ended during the outage: their recorders and tftap run's
# finisher write the rest in the background once the server is back.
complete() { # RUNNERS...
    local i
    for i in "$@"; do
        [ "$(pg_psql "SELECT count(*) FROM runs WHERE id = ${run[$i]} AND exit_code = 0
                      AND ended_us IS NOT NULL AND NOT EXISTS (SELECT 1 FROM processes p
                      WHERE p.run_id = runs.id AND p.ended_us IS NULL)")" = 1 ] || return 1
    done
}
check "server back: runs ended during the outage get their gaps" wait_for 3000 gapped $DOWN
check "server back: every surviving run gets its exit code and its processes' ends" \
    wait_for 3000 complete $SURVIVORS
# The finisher writes the end the command had, not the time it could write.
for i in $DOWN; do
    check "run $i: its end is when its command ended, not when the server came back" test \
        "$(pg_psql "SELECT ended_us FROM runs WHERE id = ${run[$i]}")" -le "${exited_us[$i]}"
done

# 5. The record.
snapshot >"$WORK/after.calls"
if [ -s "$WORK/before.calls" ] && cmp -s "$WORK/before.calls" "$WORK/after.calls"; then
    ok "nothing committed before the outage was lost or changed ($(wc -l <"$WORK/before.calls") calls)"
else
    not_ok "calls committed before the outage changed (< before, > after)"
    diff "$WORK/before.calls" "$WORK/after.calls" | head -10
fi
pg_psql "SELECT id, command, args, cwd, started_us FROM runs WHERE id IN
         (SELECT id FROM runs ORDER BY id LIMIT $N) ORDER BY id" >"$WORK/after.runs"
check "the runs' rows are unchanged" cmp -s "$WORK/before.runs" "$WORK/after.runs"
check_eq "the killed run keeps no end" \
    "$(pg_psql "SELECT count(*) FROM runs WHERE id = ${run[$KILLED]} AND ended_us IS NULL")" 1

db_begins_pg() {
    pg_psql "SELECT p.pid || ' ' || c.method || ' ' || c.request_bytes FROM calls c
             JOIN processes p ON p.id = c.process_id WHERE c.run_id = $1 AND c.stream = 0" | sort
}
db_ends_pg() {
    pg_psql "SELECT p.pid || ' ' || c.method || ' ' || coalesce(c.status_code::text, '') || ' '
               || c.response_bytes FROM calls c JOIN processes p ON p.id = c.process_id
             WHERE c.run_id = $1 AND c.stream = 0 AND c.method LIKE '/tfplugin%'" | sort
}
for i in $SURVIVORS; do
    r=${run[$i]}
    lost=$(pg_psql "SELECT coalesce(sum(lost), 0) FROM gaps WHERE run_id = $r")
    db_begins_pg "$r" >"$WORK/db_begins.$i"
    log_begins "$WORK/r$i/rpc.log" >"$WORK/log_begins.$i"
    db_ends_pg "$r" >"$WORK/db_ends.$i"
    log_ends "$WORK/r$i/rpc.log" >"$WORK/log_ends.$i"
    # Each call the providers logged but the record lacks (or holds without
    # its answer) lost at least one event of its own.
    nb=$(comm -13 "$WORK/db_begins.$i" "$WORK/log_begins.$i" | grep -c .)
    ne=$(comm -13 "$WORK/db_ends.$i" "$WORK/log_ends.$i" | grep -c .)
    if [ "$lost" -gt 0 ] && [ $((nb + ne)) -gt 0 ] && [ "$nb" -le "$lost" ] && [ "$ne" -le "$lost" ]; then
        ok "run $i: a gap of $lost events covers the $nb calls and $ne answers the record lacks"
    else
        not_ok "run $i: gaps count $lost events; the record lacks $nb calls and $ne answers"
    fi
    check_eq "run $i: every gap says the database was unavailable" \
        "$(pg_psql "SELECT count(*) FROM gaps WHERE run_id = $r AND reason NOT LIKE '%database unavailable%'")" 0
    check_eq "run $i: processes.dropped sums the gaps" \
        "$(pg_psql "SELECT count(*) FROM processes p WHERE p.run_id = $r AND p.dropped !=
                    (SELECT coalesce(sum(lost), 0) FROM gaps g WHERE g.process_id = p.id)")" 0
    check_eq "run $i: one process row per provider process" \
        "$(pg_psql "SELECT count(*) - count(DISTINCT pid) FROM processes WHERE run_id = $r")" 0
    check_eq "run $i: all four providers recorded" \
        "$(pg_psql "SELECT count(DISTINCT provider) FROM processes WHERE run_id = $r")" 4
done

# 6. The commands read the shared record as they read a local copy of it.
"$TFTAP" runs --db "$URI" >"$WORK/runs.out" 2>&1 || not_ok "runs --db URI"
check_eq "runs --db URI lists the eight runs" "$(awk 'NR > 1' "$WORK/runs.out" | grep -c .)" $N
a=${run[1]} b=${run[5]}
for r in $a $b; do
    "$TFTAP" bundle "$r" -o "$WORK/b$r.tftap" --db "$URI" >/dev/null 2>"$WORK/bundle.err" ||
        not_ok "bundle $r --db URI: $(cat "$WORK/bundle.err")"
done
"$TFTAP" show "$a" --db "$URI" >"$WORK/show.pg" 2>&1
"$TFTAP" show "$WORK/b$a.tftap" >"$WORK/show.local" 2>&1
if grep -q 'simple_resource.s' "$WORK/show.pg" && cmp -s "$WORK/show.pg" "$WORK/show.local"; then
    ok "show --db URI reads run $a as its local copy does"
else
    not_ok "show --db URI differs from its local copy (< URI, > local)"
    diff "$WORK/show.pg" "$WORK/show.local" | head -10
fi
"$TFTAP" diff "$a" "$b" --db "$URI" >"$WORK/diff.pg" 2>"$WORK/diff.pg.err"
st_pg=$?
"$TFTAP" diff "$WORK/b$a.tftap" "$WORK/b$b.tftap" >"$WORK/diff.local" 2>"$WORK/diff.local.err"
st_local=$?
check_eq "diff --db URI: nothing on stderr (one record, one key)" "$(cat "$WORK/diff.pg.err")" ""
# Each bundle hashes its secrets with a key of its own.
check_eq "diff of the two bundles: one warning, secrets not comparable" \
    "$(grep -c 'hashed their secret values with different keys' "$WORK/diff.local.err")/$(wc -l <"$WORK/diff.local.err")" 1/1
check "diff --db URI: not an error ($st_pg)" test "$st_pg" -le 1
if [ "$st_pg" = "$st_local" ] && cmp -s "$WORK/diff.pg" "$WORK/diff.local"; then
    ok "diff --db URI reads runs $a and $b as their local copies do"
else
    not_ok "diff --db URI differs from the local copies' ($st_pg, $st_local; < URI, > local)"
    diff "$WORK/diff.pg" "$WORK/diff.local" | head -10
fi
finish
