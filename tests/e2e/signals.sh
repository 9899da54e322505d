#!/usr/bin/env bash
# Signals as a terminal, a CI runner or timeout(1) send them, while tofu
# applies thirty resources and one hangs: tofu must get exactly one
# interrupt per signal sent, whether it went to the process group (Ctrl-C,
# `kill -INT -- -PGID`), to `tftap run` alone, or came from timeout(1)
# (which signals its child and then its group). A second interrupt makes
# tofu exit at once without writing its state ("Two interrupts received"),
# so for each try: tofu never says so, exits as it does without tftap, and
# its state holds every resource it reported created. A second signal
# sent on purpose still reaches tofu as a second.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
db=$WORK/tftap.db marker=$WORK/hanging
export TFTEST_HANG_MARKER=$marker

base=$WORK/base
new_dir "$top_srcdir/tests/e2e/configs/signals" "$base"
(cd "$base" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# start DIR HOW FAIL: tofu apply in DIR, in a session of its own (setsid) so
# that its process group holds only the run; sets $pid (the group's
# leader: tftap run, tofu itself for "direct", or timeout).
start() {
    local dir=$1 how=$2 fail=$3
    rm -rf "$dir" "$marker"
    cp -a "$base" "$dir"
    local cmd=(tofu apply -auto-approve -input=false -no-color -var "fail=$fail")
    case $how in
    direct) ;;
    timeout-*) cmd=(timeout -s "${how#timeout-}" 3600 "$TFTAP" run --db "$db" -- "${cmd[@]}") ;;
    *) cmd=("$TFTAP" run --db "$db" -- "${cmd[@]}") ;;
    esac
    # tofu's own trace: should a state be lost, it tells which write left
    # it so (statemgr, backend/local lines, printed below).
    (cd "$dir" && TF_LOG=trace TF_LOG_PATH="$dir/trace.log" exec setsid "${cmd[@]}" \
        >"$dir/out" 2>"$dir/err") &
    pid=$!
}
# wait_exit PID: its exit code, or 255 after ~60 s (then killed).
wait_exit() {
    local n=300
    while kill -0 "$1" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.2; n=$((n - 1)); done
    if kill -0 "$1" 2>/dev/null; then
        kill -KILL -- -"$1" 2>/dev/null
        wait "$1"
        return 255
    fi
    wait "$1"
}
created() { sed -n 's/: Creation complete after.*//p' "$1/out" | sort -u; }
in_state() { (cd "$1" && tofu state list 2>/dev/null | sort); }
said() { grep -q "$2" "$1/out" "$1/err"; }

# try NAME HOW SIGNAL: one apply signalled once; prints its exit code as
# $code. HOW: group (kill -- -PGID), alone (kill PID), timeout-SIG
# (timeout(1) fired by its own SIGALRM), direct (tofu without tftap, group).
try() {
    local name=$1 how=$2 sig=$3 dir=$WORK/$1
    start "$dir" "$how" hang
    code=255
    if ! wait_for 600 test -e "$marker"; then
        not_ok "$name: the apply never reached the hanging call"
        cat "$dir/err"
        kill -KILL -- -"$pid" 2>/dev/null
        return
    fi
    check_eq "$name: the run leads its own process group" "$(ps -o pgid= -p "$pid" | tr -d ' ')" "$pid"
    case $how in
    group | direct) kill -s "$sig" -- -"$pid" ;;
    alone) kill -s "$sig" "$pid" ;;
    timeout-*) kill -s ALRM "$pid" ;;
    esac
    wait_exit "$pid"
    code=$?
    local made kept missing
    made=$(created "$dir")
    kept=$(in_state "$dir")
    missing=$(comm -23 <(printf '%s\n' "$made") <(printf '%s\n' "$kept"))
    echo "$name: exit $code, $(printf '%s\n' "$made" | grep -c .) created, $(printf '%s\n' "$kept" | grep -c .) in state"
    check "$name: tofu was interrupted once, never twice" \
        sh -c "! grep -q 'Two interrupts received' '$dir/out' '$dir/err'"
    check "$name: tofu created resources before the signal" test -n "$made"
    check_eq "$name: the state holds every resource tofu reported created" "$missing" ""
    if [ -n "$missing" ]; then # what is there to tell who lost it
        ls -la --time-style=full-iso "$dir" | sed 's/^/#   /'
        sed 's/^/#   err: /' "$dir/err"
        tail -n 5 "$dir/out" | sed 's/^/#   out: /'
        grep -E 'statemgr|backend/local|[Ii]nterrupt|Stopping|signal' "$dir/trace.log" |
            tail -n 40 | cut -c1-300 | sed 's/^/#   trace: /'
    fi
    # timeout(1) exits 124 whatever its command did: the run row has tofu's.
    local want=$code
    [ "${how%%-*}" = timeout ] && want=$direct_code
    if [ "$how" != direct ]; then
        check_eq "$name: the run row has tofu's exit code" \
            "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $(last_run "$db")")" "$want"
    fi
}

# ---- what tftap passes on, counted -----------------------------------------
# The command here is a shell in a process group of its own: no signal sent
# to tftap's group reaches it, so whatever it receives tftap passed on.
# Without tftap, a command in the group gets one copy of each signal sent to
# the group: tftap must pass on none of those, and exactly one of each sent
# to it alone.
counter() { # NAME HOW SIG: starts it; sets $pid, $tftap, $got (what it logs)
    local name=$1 how=$2 sig=$3 dir=$WORK/$1
    mkdir -p "$dir"
    got=$dir/got
    : >"$got"
    local trap='for s in INT TERM HUP QUIT; do trap "echo $s >>got" $s; done'
    # A shell cannot trap what it was started with ignored, and a test run
    # as a background job has SIGINT and SIGQUIT ignored (POSIX, for
    # asynchronous lists), and the late sender below ignores what it sends
    # (TERM too): what it counts starts from the defaults.
    local cmd=("$TFTAP" run --db "$db" -- setsid env --default-signal=INT,QUIT,TERM sh -c \
        "$trap; touch ready; while [ ! -e stop ]; do sleep 0.05; done")
    case $how in
    timeout-*) cmd=(timeout -s "$sig" 3600 "${cmd[@]}") ;;
    # A sender in tftap's own group, as timeout(1) is, sends SIG to tftap,
    # then the marker. late: timeout held back between its two kill(2)s for
    # longer than tftap's usual 200 ms (a busy machine), the group's copy
    # sent 0.3 s after. script: a script that started tftap in the
    # background and signals it alone (`kill $!`), nothing to the group.
    late-* | script-*) cmd=(sh -c 'trap "" "$2"; how=$1 s=$2; shift 2; "$@" & t=$!
        while [ ! -e go ]; do sleep 0.05; done
        kill -s "$s" "$t"
        [ "$how" = late ] && sleep 0.3 && kill -s "$s" 0
        kill -s QUIT "$t"; wait "$t"' sh "${how%%-*}" "$sig" "${cmd[@]}") ;;
    esac
    (cd "$dir" && exec setsid "${cmd[@]}" >"$dir/out" 2>"$dir/err") &
    pid=$!
    wait_for 300 test -e "$dir/ready" || not_ok "$name: the command never started"
    tftap=$pid
    case $how in timeout-*) tftap=$(pgrep -P "$pid" | head -1) ;; esac
}
# passed_on NAME HOW SIG WANT: SIG sent as HOW, then SIGQUIT to tftap alone
# as a marker: tftap decides on signals in the order they came, so once the
# marker arrived, whatever it passed on of SIG has too. WANT: what the
# command received, sorted, the marker included.
passed_on() {
    local name=$1 how=$2 sig=$3 want=$4
    counter "$name" "$how" "$sig"
    case $how in
    group) kill -s "$sig" -- -"$pid" ;;
    # Two signals to the group at once: the second's copy is at the
    # sentinel by the time tftap looks for the first's.
    group-two) kill -s "$sig" -- -"$pid" && kill -s TERM -- -"$pid" ;;
    alone) kill -s "$sig" "$pid" ;;
    timeout-*) kill -s ALRM "$pid" ;;
    late-* | script-*) touch "$WORK/$name/go" ;;
    esac
    case $how in late-* | script-*) ;; *) kill -QUIT "$tftap" ;; esac
    wait_for 300 grep -q QUIT "$got"
    touch "$WORK/$name/stop"
    wait_exit "$pid"
    check_eq "$name: signals tftap passed on" "$(sort "$got" | tr '\n' ' ')" "$want"
}
passed_on count-group-int group INT "QUIT "
passed_on count-group-term group TERM "QUIT "
passed_on count-group-hup group HUP "QUIT "
passed_on count-group-int-term group-two INT "QUIT "
passed_on count-alone-int alone INT "INT QUIT "
passed_on count-alone-term alone TERM "QUIT TERM "
passed_on count-timeout-int timeout-INT INT "QUIT "
passed_on count-timeout-term timeout-TERM TERM "QUIT "
passed_on count-late-int late-INT INT "QUIT "
passed_on count-late-term late-TERM TERM "QUIT "
passed_on count-script-int script-INT INT "INT QUIT "
passed_on count-script-term script-TERM TERM "QUIT TERM "
# A Ctrl-C at a terminal (the group: the command has it, and so has the
# sentinel), then INT to tftap alone: only the second is passed on. Before,
# the sentinel kept its copy of the Ctrl-C, and the INT was taken for the
# group's and never passed on.
check_eq "ctrl-c, then INT to tftap alone: signals tftap passed on" \
    "$(python3 "$top_srcdir/tests/e2e/ctrlc.py" "$TFTAP" "$db" "$WORK/ctrlc")" "INT QUIT"
# Two sent to tftap alone, the second once the first arrived: two.
got_at_least() { [ "$(grep -c . "$got")" -ge "$1" ]; }
counter count-alone-twice alone INT
kill -INT "$pid"
wait_for 300 got_at_least 1
kill -INT "$pid"
wait_for 300 got_at_least 2
touch "$WORK/count-alone-twice/stop"
wait_exit "$pid"
check_eq "count-alone-twice: signals tftap passed on" "$(grep -c . "$got")" 2

# ---- tofu itself -------------------------------------------------------------
direct_code=1
try direct-int direct INT
direct_code=$code
check "direct: tofu stopped the apply (exit 1)" test "$direct_code" = 1
for t in group-int:group:INT group-int-again:group:INT group-term:group:TERM alone-int:alone:INT \
    alone-term:alone:TERM timeout-int:timeout-INT:INT timeout-term:timeout-TERM:TERM; do
    IFS=: read -r name how sig <<<"$t"
    try "$name" "$how" "$sig"
    # timeout(1) exits 124 when it had to signal its command.
    if [ "${how%%-*}" = timeout ]; then
        check_eq "$name: timeout says it timed out" "$code" 124
    else
        check_eq "$name: exit code as without tftap" "$code" "$direct_code"
    fi
done

# twice NAME HOW: two interrupts on purpose, the second once tofu said it
# got the first: tofu must see both ("Two interrupts received").
twice() {
    local name=$1 how=$2 dir=$WORK/$1
    start "$dir" "$how" stubborn
    if ! wait_for 600 test -e "$marker"; then
        not_ok "$name: the apply never reached the hanging call"
        kill -KILL -- -"$pid" 2>/dev/null
        return
    fi
    local target=$pid
    [ "$how" = group ] && target=-$pid
    kill -INT -- "$target"
    check "$name: tofu got the first interrupt" wait_for 300 said "$dir" 'Interrupt received'
    kill -INT -- "$target"
    check "$name: tofu got the second as a second" wait_for 300 said "$dir" 'Two interrupts received'
    rm -f "$marker" # releases the provider, should it still run
    wait_exit "$pid"
}
twice twice-alone alone
twice twice-group group
finish
