#!/bin/sh
# tftap shim between a real go-plugin client and real providers.
#
# The client (tests/proxy/client, Go) launches providers exactly as OpenTofu
# does and compares what comes back through tftap with the provider spoken
# to directly. Needs the peers from scripts/build-peers; without them the
# test is skipped (exit 77) unless TFTAP_REQUIRE_PEERS=1.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$PWD}
tftap=$top_builddir/tftap
bin=${TFTAP_CACHE:-$HOME/.cache/tftap}/peers/bin
cookie=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2

passed=0
failed=0
skipped=0
pass() { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }
skip() {
    if [ "${TFTAP_REQUIRE_PEERS:-0}" = 1 ]; then
        echo "FAIL - $* (TFTAP_REQUIRE_PEERS=1)"
        echo "0 passed, 1 failed"
        exit 1
    fi
    echo "SKIP - $*"
    exit 77
}

for p in tftest5 tftest6; do
    [ -x "$bin/terraform-provider-$p" ] || skip "no $bin/terraform-provider-$p (run scripts/build-peers)"
done
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
command -v "$GO" >/dev/null 2>&1 || skip "no go command to build the test client"

work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-proxy-test.XXXXXX")
hold_pid=
cleanup() {
    [ -n "$hold_pid" ] && kill -9 "$hold_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

client=$top_builddir/tests/proxy/proxyclient
if ! (cd "$top_srcdir/tests/proxy/client" &&
    GOTOOLCHAIN=local GOFLAGS=-mod=mod "$GO" build -o "$client" .) >"$work/go-build.log" 2>&1; then
    cat "$work/go-build.log"
    fail "build the Go test client"
    echo "$passed passed, $failed failed"
    exit 1
fi

# A shim directory as `tftap wrap` writes one.
make_shim() { # type -> prints the script's path
    dir=$work/shim-$1
    mkdir -p "$dir"
    cat >"$dir/tftap-shim.json" <<EOF
{"provider": "registry.opentofu.org/tftap/$1", "version": "0.1.0",
 "binary": "$bin/terraform-provider-$1", "db": "$work/tftap.db",
 "record_sensitive": false, "keep_raw": false}
EOF
    printf "#!/bin/sh\nexec '%s' shim '%s' \"\$@\"\n" "$tftap" "$dir/tftap-shim.json" \
        >"$dir/terraform-provider-$1"
    chmod +x "$dir/terraform-provider-$1"
    echo "$dir/terraform-provider-$1"
}
shim5=$(make_shim tftest5)
shim6=$(make_shim tftest6)

# ---- started by hand, the shim says what a provider says -------------------
out=$(env -u TF_PLUGIN_MAGIC_COOKIE "$shim5" 2>&1)
rc=$?
if [ $rc -eq 1 ] && printf '%s' "$out" | grep -q "This binary is a plugin"; then
    pass "without the magic cookie: exit 1 and the plugin message"
else
    fail "without the magic cookie: exit $rc, output: $out"
fi

# ---- byte-identical relay, both protocols, TLS and plaintext ---------------
for p in tftest5 tftest6; do
    eval shim=\$shim${p#tftest}
    if "$client" compare -shim "$shim" -direct "$bin/terraform-provider-$p" -type "$p" \
        >"$work/compare-$p.log" 2>&1; then
        pass "$p: schema, validate, configure, plan, apply, a 17 MiB echo, a health check, unknown methods, a bidi stream and 32 concurrent callers relayed byte for byte (mTLS from the client, plaintext to the provider)"
        grep '^latency' "$work/compare-$p.log"
    else
        cat "$work/compare-$p.log"
        fail "$p: compare through tftap (mTLS)"
    fi
done
if TFTAP_PROVIDER_TLS=1 "$client" compare -latency 0 -shim "$shim5" \
    -direct "$bin/terraform-provider-tftest5" -type tftest5 >"$work/compare-tls.log" 2>&1; then
    pass "tftest5: the same with TFTAP_PROVIDER_TLS=1 (mutual TLS on the provider's leg too)"
else
    cat "$work/compare-tls.log"
    fail "tftest5: compare through tftap (TFTAP_PROVIDER_TLS=1)"
fi
if "$client" compare -plain -latency 0 -shim "$shim5" -direct "$bin/terraform-provider-tftest5" \
    -type tftest5 >"$work/compare-plain.log" 2>&1; then
    pass "tftest5: the same relayed in plaintext (no PLUGIN_CLIENT_CERT)"
else
    cat "$work/compare-plain.log"
    fail "tftest5: compare through tftap (plaintext)"
fi

# ---- cancellation and deadlines reach the provider --------------------------
if "$client" cancel -shim "$shim6" -type tftest6 -marker "$work/hang6" >"$work/cancel.log" 2>&1; then
    pass "a cancelled call is cancelled at the provider; deadlines pass through"
else
    cat "$work/cancel.log"
    fail "cancellation"
fi

# ---- the provider dies mid-call: same error as without tftap, tftap exits ---
if "$client" crash -shim "$shim5" -direct "$bin/terraform-provider-tftest5" -type tftest5 \
    >"$work/crash.log" 2>&1; then
    pass "provider killed mid-call: Unavailable, as directly, and tftap exits"
else
    cat "$work/crash.log"
    fail "provider crash"
fi

# ---- the client is killed mid-call: nothing is left behind -----------------
# Run twice: the provider's leg in plaintext in a directory of tftap's own
# (the default), then with TFTAP_PROVIDER_TLS=1 (mutual TLS on that leg).
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
env_of() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep "^$2=" | cut -d= -f2-; }
hold_check() { # tls: 0 or 1
    rm -f "$work/info" "$work/hang5"
    TFTAP_PROVIDER_TLS=$1 "$client" hold -shim "$shim5" -type tftest5 -marker "$work/hang5" \
        -info "$work/info" >"$work/hold.log" 2>&1 &
    hold_pid=$!
    i=0
    while [ ! -s "$work/info" ] && [ $i -lt 600 ] && kill -0 "$hold_pid" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    if [ ! -s "$work/info" ]; then
        cat "$work/hold.log"
        fail "client killed mid-call: the hanging call never started"
        return
    fi
    read -r tftap_pid sock provider_pid <"$work/info"
    # What the provider was started with, while it runs.
    dir=$(env_of "$provider_pid" PLUGIN_UNIX_SOCKET_DIR)
    cert=$(env_of "$provider_pid" PLUGIN_CLIENT_CERT)
    if [ "$1" = 1 ]; then
        if [ -n "$cert" ] && [ -z "$dir" ]; then
            pass "TFTAP_PROVIDER_TLS=1: the provider gets tftap's certificate (mutual TLS on its leg)"
        else
            fail "TFTAP_PROVIDER_TLS=1: provider's PLUGIN_CLIENT_CERT '${cert%%
*}' PLUGIN_UNIX_SOCKET_DIR '$dir'"
        fi
    else
        case $dir in
        "${TMPDIR:-/tmp}"/tftap-provider-*)
            mode=$(stat -c %a "$dir" 2>/dev/null)
            socks=$(find "$dir" -type s 2>/dev/null | wc -l)
            if [ -z "$cert" ] && [ "$mode" = 700 ] && [ "$socks" = 1 ]; then
                pass "the provider's leg is plaintext (no PLUGIN_CLIENT_CERT), its socket alone in a 0700 directory of tftap's"
            else
                fail "provider leg: certificate '${cert%%
*}', directory $dir mode '$mode', $socks socket(s) in it"
            fi
            ;;
        *) fail "provider's PLUGIN_UNIX_SOCKET_DIR '$dir' is not a directory of tftap's" ;;
        esac
    fi
    kill -9 "$hold_pid"
    wait "$hold_pid" 2>/dev/null
    hold_pid=
    i=0
    while { alive "$tftap_pid" || alive "$provider_pid"; } && [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    if [ -z "$provider_pid" ]; then
        fail "client killed mid-call: did not learn the provider's pid"
    elif alive "$tftap_pid" || alive "$provider_pid"; then
        fail "client killed mid-call: still running: tftap $tftap_pid provider $provider_pid"
    elif [ -e "$sock" ]; then
        fail "client killed mid-call: socket $sock left behind"
    elif [ -n "$dir" ] && [ -e "$dir" ]; then
        fail "client killed mid-call: the provider's directory $dir left behind"
    else
        pass "client killed mid-call (provider TLS $1): tftap and the provider exit, sockets and directory removed"
    fi
}
hold_check 0
hold_check 1

# ---- signals: SIGINT passed on (providers ignore it), SIGTERM ends it -------
# A background job of a non-interactive shell starts with SIGINT ignored,
# and an ignored signal never arrives: give it back its default first.
mkfifo "$work/hs"
TF_PLUGIN_MAGIC_COOKIE=$cookie PLUGIN_PROTOCOL_VERSIONS=5,6 PLUGIN_UNIX_SOCKET_DIR=$work \
    env --default-signal=INT "$tftap" shim "$work/shim-tftest6/tftap-shim.json" >"$work/hs" 2>"$work/sig.err" &
sig_pid=$!
exec 3<"$work/hs"
read -r line <&3
sock=$(printf '%s' "$line" | cut -d'|' -f4)
case $line in
"1|6|unix|$work/"*"|grpc|") pass "plaintext handshake: protocol 6, our socket in PLUGIN_UNIX_SOCKET_DIR" ;;
*) fail "handshake line: $line" ;;
esac
# go-plugin prints its handshake before it starts catching SIGINT: until
# then an interrupt kills the provider, with tftap as without. Wait until
# the provider catches it (SigCgt in its /proc status).
catches_int() {
    local p
    p=$(pgrep -P "$sig_pid" | head -1)
    [ -n "$p" ] && [ $((0x$(awk '/^SigCgt:/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0) & 2)) -ne 0 ]
}
i=0
while [ $i -lt 300 ] && ! catches_int; do
    sleep 0.1
    i=$((i + 1))
done
kill -INT "$sig_pid"
# go-plugin's server logs each interrupt it receives (and ignores) on the
# provider's stderr, which is tftap's: that line is the provider saying it
# got the signal tftap forwarded.
i=0
while [ $i -lt 300 ] && ! grep -q 'plugin received interrupt signal' "$work/sig.err"; do
    sleep 0.1
    i=$((i + 1))
done
if grep -q 'plugin received interrupt signal' "$work/sig.err"; then
    pass "SIGINT: forwarded, the provider got it"
else
    cat "$work/sig.err"
    fail "SIGINT: the provider never said it got the signal"
fi
if alive "$sig_pid"; then
    pass "SIGINT: like the provider, tftap keeps running"
else
    fail "SIGINT ended tftap"
fi
kill -TERM "$sig_pid"
wait "$sig_pid"
rc=$?
exec 3<&-
if [ $rc -eq 143 ] && [ ! -e "$sock" ]; then
    pass "SIGTERM: forwarded; tftap exits with the provider's status (143) and removes $sock"
else
    cat "$work/sig.err"
    fail "SIGTERM: exit $rc, socket present: $([ -e "$sock" ] && echo yes || echo no)"
fi
# The provider (which makes its socket in PLUGIN_UNIX_SOCKET_DIR too) died of
# the signal without removing its own: tftap removes it after reaping it.
left=$(find "$work" -maxdepth 1 -type s)
if [ -z "$left" ]; then
    pass "SIGTERM: the provider's socket is removed too"
else
    fail "SIGTERM: sockets left behind: $left"
fi

# ---- what was relayed was recorded ---------------------------------------
if ! command -v sqlite3 >/dev/null 2>&1; then
    # The only check of what was recorded: without sqlite3 it is a failure.
    fail "the store holds the relayed calls: no sqlite3 command to read it (scripts/install-deps)"
else
    # The recorder finishes in its own process after tftap exits: wait for it.
    i=0
    n=0
    while [ $i -lt 300 ]; do
        n=$(sqlite3 "$work/tftap.db" \
            "select count(*) from calls where method like '%/ReadDataSource' and status_code = 0" \
            2>/dev/null || echo 0)
        [ "${n:-0}" -ge 3 ] && break
        sleep 0.1
        i=$((i + 1))
    done
    if [ "${n:-0}" -ge 3 ]; then
        pass "the store holds the relayed calls ($n ReadDataSource calls ended OK)"
    else
        fail "the store holds $n ReadDataSource calls, want 3"
    fi
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
