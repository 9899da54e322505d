#!/usr/bin/env bash
# tftap replay-provider, the server alone (no shim, no relay, no `tftap
# replay`): tofu starts it directly as both test providers (protocols 5 and
# 6) through dev_overrides and plans against a recorded run, with mutual TLS
# as go-plugin does it: the same plan text and exit code as recorded, every
# server gone and its socket removed afterwards, nothing said on stderr. A
# changed configuration gets the mismatch diagnostic. Then the server by
# hand: its handshake line and certificate, the cookie, protocol
# negotiation, an unknown provider, SIGTERM, and a peer's garbage over
# HTTP/2 (curl), go-plugin's streams held open until Shutdown.
. "$(dirname "$0")/../e2e/lib.sh"
need_peers
CLI=tofu
if ! command -v curl >/dev/null || ! command -v openssl >/dev/null; then
    echo "$e2e_name: curl and openssl are needed (scripts/install-deps)"
    echo "$e2e_name: 0 passed, 1 failed"
    exit 1
fi
# gRPC core is the replay server's alone: tftap (every shim of a live run)
# must start without loading it.
if command -v ldd >/dev/null; then
    check_eq "tftap itself links no gRPC core" "$(ldd "$TFTAP" | grep -c 'libgrpc')" 0
    check_eq "tftap-replay-provider links gRPC core" \
        "$(ldd "$(dirname "$TFTAP")/tftap-replay-provider" | grep -q libgrpc && echo yes)" yes
fi
db=$WORK/src.db
# has TEXT REGEX: a line of TEXT matches.
has() { printf '%s\n' "$1" | grep -q "$2"; }
COOKIE=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2

# ---- the source: a plan with prior state (read, upgrade, replace) ----------
w=$WORK/w
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null &&
    tofu apply -auto-approve -input=false -no-color >/dev/null) || not_ok "source applied"
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -detailed-exitcode \
    -var environment=prod >"$WORK/plan.rec" 2>&1)
rec_rc=$?
check_eq "recorded plan: changes (exit 2)" "$rec_rc" 2
run=$(last_run "$db")

# ---- tofu starts replay-provider itself ------------------------------------
# One script per provider that execs the server (what `tftap replay` writes,
# minus the shim); a CLI config that can install nothing else.
for v in 5 6; do
    mkdir -p "$WORK/prov$v"
    cat >"$WORK/prov$v/terraform-provider-tftest$v" <<EOF
#!/bin/sh
exec "$TFTAP" replay-provider --db "$db" --run $run --provider registry.opentofu.org/tftap/tftest$v 2>>"$WORK/server$v.err"
EOF
    chmod +x "$WORK/prov$v/terraform-provider-tftest$v"
done
mkdir -p "$WORK/nothing"
cat >"$WORK/replay.tfrc" <<EOF
provider_installation {
  dev_overrides {
    "tftap/tftest5" = "$WORK/prov5"
    "tftap/tftest6" = "$WORK/prov6"
  }
  filesystem_mirror {
    path = "$WORK/nothing"
  }
}
EOF
r=$WORK/r
mkdir -p "$r"
cp "$w"/*.tf "$w/terraform.tfstate" "$r/"

# The plan from its first line about actions to its end (the dev_overrides
# warning before it names directories).
plan_body() { sed -n '/^OpenTofu used the selected providers/,$p' "$1"; }
replan() { # OUT ARGS...
    local out=$1
    shift
    (cd "$r" && TF_CLI_CONFIG_FILE=$WORK/replay.tfrc tofu plan -input=false -no-color \
        -detailed-exitcode "$@" >"$out" 2>&1)
}
servers_gone() { ! pgrep -f "replay-provider --db $db" >/dev/null; }
no_sockets() { [ -z "$(find "$TMPDIR" -name 'tftap-replay*' -print -quit)" ]; }

replan "$WORK/plan.replay" -var environment=prod
check_eq "replayed plan: same exit code" "$?" "$rec_rc"
if [ -n "$(plan_body "$WORK/plan.rec")" ] &&
    cmp -s <(plan_body "$WORK/plan.rec") <(plan_body "$WORK/plan.replay"); then
    ok "replayed plan: same plan text ($(plan_body "$WORK/plan.rec" | wc -l) lines)"
else
    not_ok "replayed plan: plan text differs (< recorded, > replayed)"
    diff <(plan_body "$WORK/plan.rec") <(plan_body "$WORK/plan.replay") | head -20
fi
check "replayed plan: both protocols served (tofu started the servers)" \
    test -e "$WORK/server5.err" -a -e "$WORK/server6.err"
check_eq "replayed plan: the servers said nothing" "$(cat "$WORK"/server[56].err)" ""
check "replayed plan: every server ended" wait_for 100 servers_gone
check "replayed plan: no socket left behind" no_sockets

# A changed configuration: the method's normal answer with one ERROR
# diagnostic, and the server says which call did not match.
replan "$WORK/plan.changed" -var environment=other
check_eq "changed config: plan fails" "$?" 1
check "changed config: tofu shows the mismatch diagnostic" \
    grep -q "tftap replay: no recorded call matches" "$WORK/plan.changed"
check "changed config: the server names the call and the path on stderr, in one line" \
    grep -q "^tftap replay-provider: .*tftest5_pet.*\.config\.keepers\.environment" "$WORK/server5.err"
check_eq "changed config: every stderr line is the server's" \
    "$(grep -vc '^tftap replay-provider: ' "$WORK/server5.err")" 0
check "changed config: every server ended" wait_for 100 servers_gone
check "changed config: no socket left behind" no_sockets

# ---- by hand: what go-plugin sees ------------------------------------------
P6=registry.opentofu.org/tftap/tftest6
# serve OUT ERR ENV...: start the server in the background, with go-plugin's
# environment plus ENV; sets $pid.
serve() {
    local out=$1 err=$2
    shift 2
    env TF_PLUGIN_MAGIC_COOKIE=$COOKIE PLUGIN_PROTOCOL_VERSIONS=5,6 "$@" \
        "$TFTAP" replay-provider --db "$db" --run "$run" --provider $P6 >"$out" 2>"$err" &
    pid=$!
}
has_line() { [ -s "$1" ] && [ "$(wc -l <"$1")" -ge 1 ]; }

# Mutual TLS: go-plugin's client sends its certificate in PLUGIN_CLIENT_CERT.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -days 1 -keyout "$WORK/client.key" -out "$WORK/client.pem" 2>/dev/null ||
    not_ok "client certificate made"
serve "$WORK/hs.out" "$WORK/hs.err" PLUGIN_CLIENT_CERT="$(cat "$WORK/client.pem")"
check "handshake: printed" wait_for 100 has_line "$WORK/hs.out"
IFS='|' read -r core proto net addr kind cert <"$WORK/hs.out"
check_eq "handshake: core, protocol, network, kind" "$core|$proto|$net|$kind" "1|6|unix|grpc"
check "handshake: a socket in TMPDIR" test -S "$addr" -a "$(dirname "$addr")" = "$TMPDIR"
# The certificate: base64 DER without padding (go-plugin's form), localhost.
pad=$(printf '%*s' $(((4 - ${#cert} % 4) % 4)) '' | tr ' ' '=')
printf '%s%s' "$cert" "$pad" | base64 -d >"$WORK/server.der" 2>/dev/null
check "handshake: the certificate is for localhost" has \
    "$(openssl x509 -inform DER -in "$WORK/server.der" -noout -subject 2>&1)" 'CN *= *localhost'
# Only the client whose certificate came in PLUGIN_CLIENT_CERT gets in.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -days 1 -keyout "$WORK/other.key" -out "$WORK/other.pem" 2>/dev/null ||
    not_ok "other certificate made"
printf '\0\0\0\0\0' >"$WORK/empty"
tls_call() { # CERTNAME: GetProviderSchema over TLS with that client certificate
    curl -sS -k --http2 --unix-socket "$addr" --cert "$WORK/$1.pem" --key "$WORK/$1.key" \
        -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @"$WORK/empty" \
        --proto-default https -D - -o /dev/null localhost/tfplugin6.Provider/GetProviderSchema 2>&1 |
        tr -d '\r'
}
check "mutual TLS: the client's certificate is accepted" has "$(tls_call client)" '^grpc-status: 0$'
check "mutual TLS: another certificate is refused" test -z "$(tls_call other | grep '^grpc-status')"
check "mutual TLS: the refusal is one line on stderr" \
    grep -q '^tftap replay-provider: grpc: Handshake failed' "$WORK/hs.err"
kill -TERM "$pid"
wait "$pid"
check_eq "SIGTERM: the server dies of it" "$?" 143
check "SIGTERM: the socket is removed" test ! -e "$addr"

serve "$WORK/bad.out" "$WORK/bad.err" PLUGIN_CLIENT_CERT=garbage
wait "$pid"
check_eq "PLUGIN_CLIENT_CERT unreadable: exit 1" "$?" 1
check_eq "PLUGIN_CLIENT_CERT unreadable: one line saying so" "$(cat "$WORK/bad.err")" \
    "tftap replay-provider: PLUGIN_CLIENT_CERT holds no PEM certificate"

# Plaintext (no PLUGIN_CLIENT_CERT): the handshake carries no certificate,
# and curl can speak gRPC to it.
serve "$WORK/hs2.out" "$WORK/hs2.err"
check "plaintext: handshake printed" wait_for 100 has_line "$WORK/hs2.out"
check "plaintext: no certificate in the handshake" grep -q '|grpc|$' "$WORK/hs2.out"
sock=$(cut -d'|' -f4 "$WORK/hs2.out")
# grpc METHOD FILE: one gRPC call with FILE's bytes as its message; prints
# the response headers and trailers, the message bytes go to $WORK/resp.
# (Over the unix socket the host is only the :authority; curl's default
# scheme for a host without one is plain HTTP.)
grpc() {
    curl -sS --http2-prior-knowledge --unix-socket "$sock" -H 'content-type: application/grpc' \
        -H 'te: trailers' --data-binary @"$2" -D - -o "$WORK/resp" "localhost$1" | tr -d '\r'
}
printf '\0\0\0\0\5\377\377\377\377\377' >"$WORK/junk" # five bytes no protobuf reads
# go-plugin's streams: open until Shutdown, like a provider's.
grpc /plugin.GRPCStdio/StreamStdio "$WORK/empty" >"$WORK/stdio.out" &
stdio=$!
grpc /plugin.GRPCBroker/StartStream "$WORK/empty" >"$WORK/broker.out" &
broker=$!
out=$(grpc /tfplugin6.Provider/PlanResourceChange "$WORK/junk")
check "garbage request: INVALID_ARGUMENT" has "$out" '^grpc-status: 3$'
check "garbage request: the status names the decode error" has "$out" \
    '^grpc-message: cannot decode the request: decode error at '
check "garbage request: said on stderr" grep -q \
    "^tftap replay-provider: /tfplugin6.Provider/PlanResourceChange: cannot decode the request" "$WORK/hs2.err"
out=$(grpc /tfplugin6.Provider/GetProviderSchema "$WORK/empty")
check "GetProviderSchema: OK" has "$out" '^grpc-status: 0$'
stored=$(sqlite3 "$db" "SELECT hex(raw) FROM schemas s JOIN processes p ON p.schema_sha256 = s.sha256
    WHERE p.run_id = $run AND p.provider = '$P6' LIMIT 1")
got=$(tail -c +6 "$WORK/resp" | od -An -tx1 -v | tr -d ' \n' | tr a-f A-F)
check "GetProviderSchema: the stored bytes" test -n "$stored" -a "$got" = "$stored"
out=$(grpc /tfplugin6.Provider/GetMetadata "$WORK/empty")
check "GetMetadata unrecorded: a minimal valid answer" has "$out" '^grpc-status: 0$'
out=$(grpc /tfplugin6.Provider/StopProvider "$WORK/empty")
check "StopProvider: OK" has "$out" '^grpc-status: 0$'
check_eq "StopProvider: an empty answer" "$(od -An -tx1 "$WORK/resp" | tr -d ' \n')" 0000000000
out=$(grpc /tfplugin5.Provider/GetSchema "$WORK/empty")
check "the other protocol's methods: UNIMPLEMENTED" has "$out" '^grpc-status: 12$'
check "streams: still open" test -n "$(alive $stdio $broker)" -a "$(alive $stdio $broker | wc -w)" = 2
check "server: alive after all of it" test -n "$(alive $pid)"
out=$(grpc /plugin.GRPCController/Shutdown "$WORK/empty")
check "Shutdown: answered OK" has "$out" '^grpc-status: 0$'
wait "$pid"
check_eq "Shutdown: the server exits 0" "$?" 0
wait "$stdio" "$broker"
check "Shutdown: the stdio stream ends OK" grep -q '^grpc-status: 0$' "$WORK/stdio.out"
check "Shutdown: the broker stream ends OK" grep -q '^grpc-status: 0$' "$WORK/broker.out"
check "Shutdown: the socket is removed" test ! -e "$sock"

# A client gone before it read the handshake line: the server says so and
# leaves no socket behind (a pipe without a reader, as go-plugin's would be).
hs_rc=$(python3 - "$TFTAP" "$db" "$run" "$P6" "$COOKIE" 2>"$WORK/gone.err" <<'EOF'
import os, subprocess, sys
tftap, db, run, prov, cookie = sys.argv[1:]
r, w = os.pipe()
os.close(r)
env = dict(os.environ, TF_PLUGIN_MAGIC_COOKIE=cookie, PLUGIN_PROTOCOL_VERSIONS="6")
p = subprocess.run([tftap, "replay-provider", "--db", db, "--run", run, "--provider", prov],
                   stdout=w, env=env, timeout=120)
print(p.returncode)
EOF
)
check_eq "handshake line unread: exit 1" "$hs_rc" 1
check "... saying why" grep -q '^tftap replay-provider: cannot write the handshake line' "$WORK/gone.err"
check "... and no socket left behind" no_sockets

# ---- recorded GetMetadata / GetResourceIdentitySchemas ----------------------
# tofu asked neither in the source run: a copy of it gets one recorded answer
# of each, the second one that cannot be encoded back.
meta=$WORK/meta.db
sqlite3 "$db" ".backup '$meta'"
add_call() { # RPC RESPONSE_JSON
    sqlite3 "$meta" "INSERT INTO calls (run_id, process_id, call_seq, method, rpc, started_us,
        ended_us, status_code, request_json, response_json)
        SELECT run_id, id, 100000 + (SELECT count(*) FROM calls), '/tfplugin6.Provider/$1', '$1',
            started_us, started_us, 0, '{}', '$2'
        FROM processes WHERE run_id = $run AND provider = '$P6' ORDER BY id LIMIT 1"
}
add_call GetMetadata '{"server_capabilities":{"plan_destroy":true},"diagnostics":[],"resources":[{"type_name":"tftest6_recorded_meta"}]}'
add_call GetResourceIdentitySchemas '{"identity_schemas":5}'
# A call the recording ends before it was answered: no response, no status.
sqlite3 "$meta" "DELETE FROM calls WHERE rpc = 'GetFunctions';
    INSERT INTO calls (run_id, process_id, call_seq, method, rpc, started_us, request_json)
    SELECT run_id, id, 200000, '/tfplugin6.Provider/GetFunctions', 'GetFunctions', started_us, '{}'
    FROM processes WHERE run_id = $run AND provider = '$P6' ORDER BY id LIMIT 1"
env TF_PLUGIN_MAGIC_COOKIE=$COOKIE "$TFTAP" replay-provider --db "$meta" --run "$run" --provider $P6 \
    >"$WORK/m.out" 2>"$WORK/m.err" &
pid=$!
check "recorded metadata: handshake printed" wait_for 100 has_line "$WORK/m.out"
sock=$(cut -d'|' -f4 "$WORK/m.out")
out=$(grpc /tfplugin6.Provider/GetMetadata "$WORK/empty")
check "recorded GetMetadata: OK" has "$out" '^grpc-status: 0$'
check "recorded GetMetadata: the recorded answer" grep -q tftest6_recorded_meta "$WORK/resp"
out=$(grpc /tfplugin6.Provider/GetResourceIdentitySchemas "$WORK/empty")
check "unencodable recorded answer: OK" has "$out" '^grpc-status: 0$'
check_eq "unencodable recorded answer: an empty message" "$(od -An -tx1 "$WORK/resp" | tr -d ' \n')" 0000000000
check "unencodable recorded answer: said in one line" grep -q \
    "^tftap replay-provider: the recorded GetResourceIdentitySchemas answer cannot be encoded: .*; answering GetResourceIdentitySchemas with an empty message$" "$WORK/m.err"
out=$(grpc /tfplugin6.Provider/GetFunctions "$WORK/empty")
check "a recorded call never answered: UNAVAILABLE" has "$out" '^grpc-status: 14$'
check "... naming it" has "$out" '^grpc-message: recorded call [0-9]* never got an answer'
grpc /plugin.GRPCController/Shutdown "$WORK/empty" >/dev/null
wait "$pid"
check_eq "recorded metadata: Shutdown ends it with 0" "$?" 0

# ---- refusals ------------------------------------------------------------
"$TFTAP" replay-provider --db "$db" --provider $P6 >"$WORK/c.out" 2>"$WORK/c.err"
check_eq "no cookie: exit 1 as a provider does" "$?" 1
check "no cookie: go-plugin's message" grep -q "^This binary is a plugin" "$WORK/c.err"
check_eq "no cookie: nothing on stdout" "$(cat "$WORK/c.out")" ""
TF_PLUGIN_MAGIC_COOKIE=$COOKIE PLUGIN_PROTOCOL_VERSIONS=5 "$TFTAP" replay-provider --db "$db" \
    --run "$run" --provider $P6 >"$WORK/v.out" 2>"$WORK/v.err"
check_eq "protocol not offered: exit 1" "$?" 1
check_eq "protocol not offered: one line saying so" "$(cat "$WORK/v.err")" \
    "tftap replay-provider: the recording speaks plugin protocol 6, which the client does not offer (PLUGIN_PROTOCOL_VERSIONS=5)"
TF_PLUGIN_MAGIC_COOKIE=$COOKIE "$TFTAP" replay-provider --db "$db" --run "$run" \
    --provider registry.opentofu.org/tftap/nosuch >"$WORK/n.out" 2>"$WORK/n.err"
check_eq "unknown provider: exit 1" "$?" 1
check_eq "unknown provider: one line saying so" "$(cat "$WORK/n.err")" \
    "tftap replay-provider: run $run recorded no schema for provider registry.opentofu.org/tftap/nosuch"
check "refusals: no socket left behind" no_sockets
finish
