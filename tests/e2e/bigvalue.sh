#!/usr/bin/env bash
# Big values pass and are recorded whole (docs/proxy.md, "Big messages"):
# a 64 MiB attribute and an 8 MiB one, applied in parallel through
# `tftap run`. Messages of 4 MiB or more go through spill files beside the
# database, not through the recorder's queues: every call is recorded with
# its values, nothing is counted lost, no spill file is left, and the
# recorder process stays within its documented bound (its 127 MiB of queues
# plus twice the messages of the one big call it writes at a time),
# sampled from /proc while it runs. It prints the figures.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
command -v python3 >/dev/null || { not_ok "python3 is needed to sample the recorders' memory"; finish; }
w=$WORK/w db=$WORK/w/.tftap/tftap.db
new_dir "$top_srcdir/tests/e2e/configs/big" "$w"
head -c $((64 << 20)) /dev/zero | tr '\0' 'b' >"$w/big.txt"
head -c $((8 << 20)) /dev/zero | tr '\0' 'm' >"$w/mid.txt"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# The recorders are no children of ours (double-forked): they are told
# apart by a mark in the environment they inherit. VmHWM is the peak
# resident size so far: sampled until each recorder exits. The analyses
# at the end of the run (tftap-analyses, which read every value: gigabytes
# here) are killed as the kernel would kill them for memory: tftap run must
# still exit with tofu's code and say what is missing.
mark=bigvalue-$$
# The bound is the product's: under AddressSanitizer (the sanitizer build
# runs this test too) freed blocks wait in a quarantine of up to 256 MiB
# before their memory is reused, which the bound does not count (seen: a
# peak of 639 MiB against 543); other builds ignore the variable.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
cat >"$WORK/watch.py" <<'PY'
import os, sys, time
mark, out = sys.argv[1].encode(), sys.argv[2]
peaks, seen_any, killed = {}, False, False
while True:
    alive = False
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            st = open('/proc/%s/status' % d).read()
            name = st.split('\n', 1)[0]
            if name not in ('Name:\ttftap-rec', 'Name:\ttftap-analyses'):
                continue
            if b'TFTAP_E2E_MARK=' + mark not in open('/proc/%s/environ' % d, 'rb').read():
                continue
            if name == 'Name:\ttftap-analyses':
                if not killed:
                    os.kill(int(d), 9)
                    killed = True
                    open(out + '.killed', 'w').close()
                continue
            hwm = int(st.split('VmHWM:')[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        alive = seen_any = True
        peaks[d] = max(peaks.get(d, 0), hwm)
    if os.path.exists(out + '.stop') and not alive:
        break
    time.sleep(0.01)
with open(out, 'w') as f:
    for d, v in sorted(peaks.items()):
        f.write('%s %d\n' % (d, v))
PY
python3 "$WORK/watch.py" "$mark" "$WORK/peaks" &
watcher=$!
(cd "$w" && TFTAP_E2E_MARK=$mark "$TFTAP" run -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/out" 2>"$WORK/err")
code=$?
touch "$WORK/peaks.stop"
wait "$watcher"
check_eq "the apply through tftap succeeded" "$code" 0
check "tofu says it created both" grep -q "Apply complete! Resources: 2 added" "$WORK/out"
check "the analyses at the end were found and killed" test -e "$WORK/peaks.killed"
check "tftap said they were cut off, and what is missing" \
    grep -q "^tftap: the analyses at the end of run [0-9]* were cut off by signal 9 .*the calls' addresses, the redaction of values core marks sensitive (they may be in clear in the record) and the check are missing" "$WORK/err"
check_eq "tftap said nothing of gaps or other problems" \
    "$(grep '^tftap: ' "$WORK/err" | grep -v -e 'waiting for' -e 'were cut off by signal')" ""
run=$(last_run "$db")
check_eq "the run's end is recorded with tofu's exit code" \
    "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run AND ended_us IS NOT NULL")" 0
check_eq "nothing lost" "$(sqlite3 "$db" "SELECT count(*) FROM gaps")" 0
check_eq "every call ended" "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run AND ended_us IS NULL")" 0
check_eq "no spill file is left" "$(find "$w/.tftap/spill" -type f | wc -l)" 0

# The values, whole: what the recorded plan and apply carry is the file.
want=$(sha256sum <"$w/big.txt" | cut -d' ' -f1)
for q in "PlanResourceChange|request_json|$.config.keepers.big" \
    "PlanResourceChange|request_json|$.proposed_new_state.keepers.big" \
    "PlanResourceChange|response_json|$.planned_state.keepers.big" \
    "ApplyResourceChange|request_json|$.planned_state.keepers.big" \
    "ApplyResourceChange|response_json|$.new_state.keepers.big"; do
    IFS='|' read -r rpc col path <<<"$q"
    # apply plans again before it applies: each such call, one by one.
    ids=$(sqlite3 "$db" "SELECT id FROM calls WHERE run_id = $run AND rpc = '$rpc'
        AND request_bytes > $((64 << 20))")
    whole=0 calls=0
    for id in $ids; do
        calls=$((calls + 1))
        got=$(sqlite3 "$db" "SELECT json_extract($col, '$path') FROM calls WHERE id = $id" |
            tr -d '\n' | sha256sum | cut -d' ' -f1)
        [ "$got" = "$want" ] && whole=$((whole + 1))
    done
    check "$rpc's $path is the 64 MiB value, in each of its $calls call(s)" \
        test "$calls" -ge 1 -a "$whole" = "$calls"
done
check_eq "the 8 MiB value's apply is whole too" \
    "$(sqlite3 "$db" "SELECT length(json_extract(response_json, '$.new_state.keepers.mid')) FROM calls
        WHERE run_id = $run AND rpc = 'ApplyResourceChange' AND request_bytes BETWEEN $((8 << 20)) AND $((64 << 20))")" \
    $((8 << 20))
check_eq "no call has a decode error" "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run AND decode_error IS NOT NULL")" 0
check "show prints the changes (unnamed: the analyses were cut off)" \
    "$TFTAP" show --db "$db" last tftest5_pet >/dev/null

# The recorders' peaks against the bound (docs/proxy.md): 127 MiB of
# queues, twice the largest big call's messages, and what any recorder
# process holds besides (code, SQLite's cache), as the small ones show.
largest=$(sqlite3 "$db" "SELECT max(request_bytes + response_bytes) FROM calls WHERE run_id = $run")
peak=$(sort -k2 -n "$WORK/peaks" | tail -1 | cut -d' ' -f2)
n=$(wc -l <"$WORK/peaks")
bound=$(((127 << 10) + 2 * largest / 1024 + (32 << 10)))
echo "bigvalue: $n recorder processes; the largest call's messages: $((largest >> 20)) MiB;" \
    "the highest recorder peak: $((peak >> 10)) MiB; bound: $((bound >> 10)) MiB"
check "the recorders were sampled" test "$n" -ge 2
check "the highest recorder peak is within the bound" test "$peak" -le "$bound"
check "and above what one copy of the largest message takes (the sampling saw it)" \
    test "$peak" -ge $((largest / 2 / 1024))
finish
