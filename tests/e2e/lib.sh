# Sourced by tests/e2e/*.sh: finds the real peers and tftap, makes a scratch
# directory, and keeps the pass/fail count. Not a test itself.
#
# Peers come from scripts/build-peers (${TFTAP_CACHE:-$HOME/.cache/tftap}/peers).
# Without them a test is skipped (exit 77) unless TFTAP_REQUIRE_PEERS=1.

set -u
e2e_name=$(basename "$0" .sh)
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
TFTAP=$top_builddir/tftap
PEERS=${TFTAP_CACHE:-$HOME/.cache/tftap}/peers
TOFU=$PEERS/bin/tofu

e2e_passed=0
e2e_failed=0
e2e_skipped=0

ok() { e2e_passed=$((e2e_passed + 1)); echo "ok: $*"; }
not_ok() { e2e_failed=$((e2e_failed + 1)); echo "FAILED: $*"; }
# check NAME COMMAND...: passes when the command succeeds.
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else not_ok "$name"; fi
}
check_eq() { # NAME GOT EXPECTED
    if [ "$2" = "$3" ]; then
        ok "$1"
    else
        not_ok "$1: got '$2', expected '$3'"
    fi
}
finish() {
    echo "$e2e_name: $e2e_passed passed, $e2e_failed failed, $e2e_skipped skipped"
    [ "$e2e_failed" -eq 0 ]
    exit $?
}

# cannot_run WHY: what the test needs is not here. Under
# TFTAP_REQUIRE_PEERS=1 (CI) the test fails, as a skip there would hide it;
# else it is skipped (exit 77). Never returns.
cannot_run() {
    if [ "${TFTAP_REQUIRE_PEERS:-0}" = 1 ]; then
        echo "$e2e_name: $1"
        echo "$e2e_name: 0 passed, 1 failed"
        exit 1
    fi
    echo "$e2e_name: skipped, $1"
    exit 77
}

need_peers() {
    local missing=
    for f in "$TOFU" "$PEERS/bin/terraform-provider-tftest5" "$PEERS/bin/terraform-provider-tftest6" \
        "$PEERS/tofurc"; do
        [ -e "$f" ] || missing="$missing $f"
    done
    [ -z "$missing" ] || cannot_run "peers missing:$missing (run scripts/build-peers)"
    for tool in sqlite3 jq; do
        if ! command -v $tool >/dev/null; then
            echo "$e2e_name: $tool is needed (scripts/install-deps)"
            echo "$e2e_name: 0 passed, 1 failed"
            exit 1
        fi
    done
    if ! [ -x "$TFTAP" ]; then
        echo "$e2e_name: $TFTAP not built"
        echo "$e2e_name: 0 passed, 1 failed"
        exit 1
    fi
}

# Queries wait for a writer (a shim still flushing) instead of failing.
sqlite3() { command sqlite3 -cmd '.timeout 10000' "$@"; }

# A scratch directory, removed at exit unless the test failed.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tftap-e2e-$e2e_name.XXXXXX")
cleanup_work() {
    local st=$?
    if [ "$e2e_failed" -eq 0 ] && [ "${TFTAP_KEEP_WORK:-0}" != 1 ]; then
        rm -rf "$WORK"
    else
        echo "$e2e_name: scratch directory kept: $WORK"
    fi
    return $st
}
trap cleanup_work EXIT

# The CLI sees only the peers' mirror, never the network or the user's files.
export TF_CLI_CONFIG_FILE=$PEERS/tofurc
export TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
unset TF_PLUGIN_CACHE_DIR TF_DATA_DIR TF_LOG TF_LOG_PATH TFTAP_DB TFTAP_RUN_ID TF_REATTACH_PROVIDERS
export PATH=$PEERS/bin:$PATH
# tftap run remembers CLI versions in the user's cache directory: each test
# its own (tests/e2e/cliversion.sh tests that memory).
export XDG_CACHE_HOME=$WORK/xdg-cache
# Every temporary file, socket and shim directory lands here, so the tests
# can tell whether anything was left behind.
mkdir -p "$WORK/tmp"
export TMPDIR=$WORK/tmp

# A fresh copy of a configuration directory.
new_dir() { # SRC DEST
    rm -rf "$2"
    mkdir -p "$2"
    cp -R "$1"/. "$2"/
    chmod -R u+w "$2" # a distcheck source tree is read-only
}

# `CLI show -json [FILE]` with the values random by design replaced: every
# string equal to one of the id/hex/b64_std/dec values, or containing one
# at least 6 long, is "<random>", and timestamps go.
normalized_show() { # DIR [PLANFILE]
    (cd "$1" && "$CLI" show -json ${2:+"$2"}) | jq -S '
      ([.. | objects | to_entries[] | select(.key == "id" or .key == "hex" or
          .key == "b64_std" or .key == "dec") | .value | select(type == "string" and length > 0)]
        | unique) as $r
      | walk(if type == "string" then (. as $s | if any($r[]; . as $x | $s == $x or
             ($x | length >= 6) and ($s | contains($x))) then "<random>" else . end) else . end)
      | del(.timestamp)'
}

# Call multisets for one run, keyed by the provider's pid: "pid method
# request_bytes" per unary call begun and "pid method status
# response_bytes" per provider-protocol call answered, from the database
# and from the providers' own log (TFTEST_RPC_LOG), sorted. Only providers
# tftap started count (tftap's own unwrapped `show -json` starts others).
# go-plugin's streams are left out: at shutdown the client may open one
# the exiting provider never sees; Shutdown itself is begun but never
# answered on the provider's side, so answers compare the provider
# protocol only.
db_begins() { # DB RUN
    sqlite3 -separator ' ' "$1" \
        "SELECT p.pid, c.method, c.request_bytes
         FROM calls c JOIN processes p ON p.id = c.process_id WHERE c.run_id = $2 AND c.stream = 0" | sort
}
db_ends() { # DB RUN
    sqlite3 -separator ' ' "$1" \
        "SELECT p.pid, c.method, c.status_code, c.response_bytes
         FROM calls c JOIN processes p ON p.id = c.process_id
         WHERE c.run_id = $2 AND c.stream = 0 AND c.method LIKE '/tfplugin%'" | sort
}
log_begins() { # LOG
    awk -F '\t' '$1 == "begin" && $5 == "tftap" { print $2 " " $3 " " $4 }' "$1" | sort
}
log_ends() { # LOG
    awk -F '\t' '$1 == "end" && $6 == "tftap" && $3 ~ /^\/tfplugin/ { print $2 " " $3 " " $4 " " $5 }' "$1" | sort
}
# Providers in the log that something other than tftap started.
log_unwrapped() { # LOG
    awk -F '\t' '$1 == "begin" && $5 != "tftap" { print $2 }' "$1" | sort -u
}
# compare_calls NAME DB RUN LOG [died]: the record holds exactly the calls
# the providers saw, with the same sizes and statuses. With "died", calls the
# provider never answered because it died in them may be recorded as
# UNAVAILABLE (14) with no response.
compare_calls() {
    local name=$1 db=$2 run=$3 log=$4 died=${5:-}
    db_begins "$db" "$run" >"$WORK/db_begins"
    log_begins "$log" >"$WORK/log_begins"
    if [ "$died" = died ]; then
        # The client may also call a provider that is already gone (e.g.
        # Shutdown): such calls are recorded, failed, and the provider never
        # logs them. Drop those from the comparison.
        sqlite3 -separator ' ' "$db" \
            "SELECT p.pid, c.method, c.request_bytes FROM calls c JOIN processes p ON p.id = c.process_id
             WHERE c.run_id = $run AND c.stream = 0 AND c.status_code = 14" | sort >"$WORK/db_failed"
        comm -23 "$WORK/db_begins" "$WORK/log_begins" | comm -23 - "$WORK/db_failed" >"$WORK/extra"
        comm -12 "$WORK/db_begins" "$WORK/log_begins" | sort - "$WORK/extra" >"$WORK/db_kept"
        mv "$WORK/db_kept" "$WORK/db_begins"
    fi
    if [ -s "$WORK/log_begins" ] && cmp -s "$WORK/db_begins" "$WORK/log_begins"; then
        ok "$name: every call recorded with method and request size ($(wc -l <"$WORK/log_begins") calls)"
    else
        not_ok "$name: recorded calls differ from the providers' log (< db, > provider)"
        diff "$WORK/db_begins" "$WORK/log_begins" | head -20
    fi
    if [ "$died" = died ]; then
        db_ends "$db" "$run" | grep -v ' 14 0$' >"$WORK/db_ends"
    else
        db_ends "$db" "$run" >"$WORK/db_ends"
    fi
    log_ends "$log" >"$WORK/log_ends"
    if [ -s "$WORK/log_ends" ] && cmp -s "$WORK/db_ends" "$WORK/log_ends"; then
        ok "$name: every answer recorded with status and response size"
    else
        not_ok "$name: recorded answers differ from the providers' log (< db, > provider)"
        diff "$WORK/db_ends" "$WORK/log_ends" | head -20
    fi
}
last_run() { sqlite3 "$1" "SELECT max(id) FROM runs"; }

# open_by FILE: the processes that have FILE open (pid, state, command
# line), one per line: who holds a run's lock, when a test finds it held.
open_by() {
    local f p
    f=$(readlink -f "$1") || return 0
    for p in /proc/[0-9]*; do
        if ls -l "$p/fd" 2>/dev/null | grep -qF -- "-> $f"; then
            printf '%s %s %s\n' "${p#/proc/}" "$(ps -o stat= -p "${p#/proc/}" 2>/dev/null)" \
                "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
        fi
    done
}

# Processes still alive among the pids given.
alive() {
    local p out=
    for p in "$@"; do
        if kill -0 "$p" 2>/dev/null; then
            # A zombie is dead for our purposes (its parent reaps it).
            case $(ps -o stat= -p "$p" 2>/dev/null) in Z*) ;; *) out="$out $p" ;; esac
        fi
    done
    echo "${out# }"
}

# Wait (bounded, by polling) until COMMAND succeeds; 0 if it did.
# skip NAME WHY: a check that cannot run here, counted and said.
skip() {
    e2e_skipped=$((e2e_skipped + 1))
    echo "SKIPPED: $1: $2"
}
# recorders_done DIR: no tftap process of a shim under DIR is left: the
# shims, and the recorder processes they forked (which share their command
# line), so what they relayed is committed. For tests that use shims
# without `tftap run`, which waits for its recorders itself.
recorders_done() { ! pgrep -f "tftap shim $1/" >/dev/null; }
wait_for() { # TRIES COMMAND...
    local n=$1
    shift
    while [ "$n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.2
        n=$((n - 1))
    done
    return 1
}
# wait_until TRIES CONDITION: as wait_for, CONDITION shell text evaluated
# afresh at each try. Single-quote it: wait_for's `test "$(query)" = x`
# runs the query once, before the first try, and then waits on that.
wait_until() {
    local n=$1
    while [ "$n" -gt 0 ]; do
        eval "$2" && return 0
        sleep 0.2
        n=$((n - 1))
    done
    return 1
}
