#!/usr/bin/env bash
# Relay benchmark: what tftap's live relay adds, side by side with nginx's
# grpc_pass as the reference relay, in one run (bench/README.md explains the
# figures).
#
#   bench/relay/run.sh [OPTIONS] [TFTAP]
#
# 1. Unary calls (relaybench unary, Go, go-plugin client as OpenTofu uses):
#    one small RPC N times sequentially and N times from 8 callers, rounds
#    interleaved, against
#      direct/tls         the provider, started by go-plugin with AutoMTLS
#      tftap/tls          the same through a shim written by `tftap wrap`
#      direct/plain       the provider started here without PLUGIN_CLIENT_CERT
#      tftap/plain        the shim started by go-plugin without AutoMTLS
#      tftap-norec/plain  the shim with no database: relaying, not recording
#      nginx/plain        nginx (grpc_pass, h2c both legs) in front of direct/plain
#      direct/tls-script  the provider started here with our client certificate
#      nginx/tls          nginx (TLS both legs, client certificates) in front of it
#    tftap records into a temporary database all along, as in real use.
# 2. `tofu plan` of COUNT tftest5_trigger resources with all of them in the
#    state (so every plan refreshes and plans each one: ReadResource and
#    PlanResourceChange per resource), directly, directly with the
#    dev_overrides tftap run uses (direct-dev: tofu skips its lock file checks
#    for an overridden provider, and that alone makes its plan cheaper) and
#    through `tftap run`, in rotating order, REPS times each: median wall
#    time, overhead, the median of the pair ratios (each tftap run against the
#    direct and direct-dev runs beside it), and
#    the peak RSS of tftap's shim processes (relaybench rss samples VmHWM of
#    every tftap process in /proc every 20 ms; see bench/README.md). The runs
#    record into one database per size, as a user's runs go into
#    .tftap/tftap.db, after one untimed run that records the provider binary's
#    digest and schema there; --fresh-db gives every run a new database.
#
# TFTAP defaults to ./tftap (run from the build directory).
# Options:
#   --n N            calls per block (default 1000)
#   --rounds R       rounds of blocks (default 5)
#   --rpc NAME       validate (default), plan or metadata
#   --sizes "A B"    resource counts for the plan part (default "1000 5000")
#   --reps R         plan repetitions per side and size (default 3)
#   --no-unary, --no-plan, --no-nginx-tls   skip a part
#   --real-apply     apply every size with tofu (minutes at 5,000) instead of
#                    applying the first size and growing the state with jq
#   --big            n=3000 rounds=20 reps=5 sizes "1000 5000 10000"
#   --fresh-db       every tftap run records into a database of its own
#   --relay-only     a fourth plan side, relay-only: tofu with dev_overrides
#                    to the shim without a database (relaying, no recorder,
#                    no end of run), which tells tftap's costs apart
# Needs: the peers (scripts/build-peers), nginx and openssl
# (scripts/install-deps), Go. Default run: about 6-9 minutes on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n=1000
rounds=5
rpc=validate
sizes="1000 5000"
reps=3
do_unary=1
do_plan=1
nginx_tls=1
real_apply=0
fresh_db=0
relay_only=0
tftap=
while [ $# -gt 0 ]; do
    case $1 in
    --n) n=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --rpc) rpc=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --reps) reps=$2; shift ;;
    --no-unary) do_unary=0 ;;
    --no-plan) do_plan=0 ;;
    --no-nginx-tls) nginx_tls=0 ;;
    --real-apply) real_apply=1 ;;
    --fresh-db) fresh_db=1 ;;
    --relay-only) relay_only=1 ;;
    --big) n=3000; rounds=20; reps=5; sizes="1000 5000 10000" ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) tftap=$1 ;;
    esac
    shift
done
tftap=$(realpath "${tftap:-./tftap}")
[ -x "$tftap" ] || { echo "run.sh: $tftap not built (make tftap)" >&2; exit 1; }

cache=${TFTAP_CACHE:-$HOME/.cache/tftap}
peers=$cache/peers
prov=$peers/bin/terraform-provider-tftest5
tofu=$peers/bin/tofu
for f in "$prov" "$tofu" "$peers/tofurc"; do
    [ -e "$f" ] || { echo "run.sh: $f missing (run scripts/build-peers)" >&2; exit 1; }
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "run.sh: nginx not installed (scripts/install-deps)" >&2; exit 1; }
for t in openssl jq sqlite3; do
    command -v $t >/dev/null || { echo "run.sh: $t not installed (scripts/install-deps)" >&2; exit 1; }
done
go=$(command -v go 2>/dev/null || echo /usr/local/go/bin/go)
[ -x "$go" ] || command -v "$go" >/dev/null || { echo "run.sh: go not found" >&2; exit 1; }

mkdir -p "$cache/bench-relay"
bench=$cache/bench-relay/relaybench
(cd "$here/go" && GOTOOLCHAIN=local "$go" build -mod=readonly -o "$bench.tmp" . && mv "$bench.tmp" "$bench")

work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-bench-relay.XXXXXX")
pids=()
cleanup() {
    # Only what this script started, by pid.
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "run.sh: $*" >&2; }
cookie=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2
export TF_CLI_CONFIG_FILE=$peers/tofurc TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
unset TF_LOG TF_LOG_PATH TF_PLUGIN_CACHE_DIR TF_DATA_DIR TFTAP_DB TFTAP_RUN_ID TF_REATTACH_PROVIDERS \
    PLUGIN_CLIENT_CERT 2>/dev/null || true

say "host: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); tftap $tftap; $("$tofu" version | head -n 1)"
say "nginx: $("$nginx" -v 2>&1 | sed 's/.*: //'); provider $(cat "$peers/versions" | tr '\n' ' ')"

# ---- a configuration of COUNT cheap resources, and its shim ------------------
mkdir -p "$work/plan"
cat >"$work/plan/main.tf" <<'EOF'
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
  }
}
variable "n" {
  type    = number
  default = 1
}
# The cheapest resource tftest has: an id, nothing else configured.
resource "tftest5_trigger" "r" {
  count = var.n
}
EOF
(cd "$work/plan" && "$tofu" init -input=false -no-color >"$work/init.log" 2>&1) ||
    { cat "$work/init.log"; exit 1; }
# Exactly the shim `tftap wrap` writes, recording into a temporary database.
(cd "$work/plan" && "$tftap" wrap --db "$work/unary.db" --out "$work/wrap" >/dev/null 2>"$work/wrap.log") ||
    { cat "$work/wrap.log"; exit 1; }
shim=$(find "$work/wrap" -name 'terraform-provider-tftest5*' -type f | head -n 1)
[ -n "$shim" ] || { echo "run.sh: tftap wrap wrote no shim" >&2; exit 1; }
# The same shim with no database in its metadata: tftap relays without
# recording (no recorder process, no tee), which tells the two costs apart.
mkdir -p "$work/norec"
jq 'del(.db)' "$(dirname "$shim")/tftap-shim.json" >"$work/norec/tftap-shim.json"
printf "#!/bin/sh\nexec '%s' shim '%s' \"\$@\"\n" "$tftap" "$work/norec/tftap-shim.json" \
    >"$work/norec/$(basename "$shim")"
chmod +x "$work/norec/$(basename "$shim")"
shim_norec=$work/norec/$(basename "$shim")
# tftap run sends tofu to its shims with dev_overrides, and tofu treats an
# overridden provider differently from an installed one (it skips the lock
# file's checks; at 1,000 resources its plan is measurably cheaper). The
# direct-dev side runs tofu with the same overrides pointing at the real
# provider, so that tftap's own cost shows apart from that difference.
devrc=$work/direct-dev.tfrc
provdir=$(dirname "$(jq -r .binary "$(dirname "$shim")/tftap-shim.json")")
sed "s#\"$(dirname "$shim")\"#\"$provdir\"#" "$work/wrap/tftap.tfrc" >"$devrc"
grep -q "\"$provdir\"" "$devrc" || { echo "run.sh: no dev_overrides in $work/wrap/tftap.tfrc" >&2; exit 1; }
norecrc=$work/relay-only.tfrc
sed "s#\"$(dirname "$shim")\"#\"$work/norec\"#" "$work/wrap/tftap.tfrc" >"$norecrc"
sides="direct direct-dev tftap"
[ "$relay_only" = 0 ] || sides="direct direct-dev relay-only tftap"

# start_provider NAME [PEM]: the provider started as go-plugin starts it, its
# handshake read from a fifo (kept open: go-plugin never writes it again).
# Sets prov_sock, prov_pid, prov_cert (base64 DER, empty in plaintext).
fd=3
start_provider() {
    local name=$1 pem=${2:-} line
    mkfifo "$work/hs-$name"
    if [ -n "$pem" ]; then
        PLUGIN_CLIENT_CERT=$pem TF_PLUGIN_MAGIC_COOKIE=$cookie PLUGIN_PROTOCOL_VERSIONS=5 \
            PLUGIN_UNIX_SOCKET_DIR=$work "$prov" >"$work/hs-$name" 2>"$work/provider-$name.log" &
    else
        TF_PLUGIN_MAGIC_COOKIE=$cookie PLUGIN_PROTOCOL_VERSIONS=5 \
            PLUGIN_UNIX_SOCKET_DIR=$work "$prov" >"$work/hs-$name" 2>"$work/provider-$name.log" &
    fi
    prov_pid=$!
    pids+=("$prov_pid")
    eval "exec $fd<\"\$work/hs-\$name\""
    read -r line <&$fd
    fd=$((fd + 1))
    prov_sock=$(printf '%s' "$line" | cut -d'|' -f4)
    prov_cert=$(printf '%s' "$line" | cut -d'|' -f6)
    case $line in 1\|5\|unix\|*\|grpc*) ;; *) echo "run.sh: $name: handshake '$line'" >&2; exit 1 ;; esac
}

# nginx_conf NAME UPSTREAM LISTEN_EXTRA LOCATION_EXTRA: one process (like
# tftap's one relay thread), no logging, upstream connections kept alive
# and never recycled during the run (the client's likewise).
start_nginx() {
    local name=$1 upstream=$2 listen_extra=$3 server_extra=$4 pass=$5
    mkdir -p "$work/nginx-$name"
    cat >"$work/nginx-$name/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx-$name/nginx.pid;
error_log $work/nginx-$name/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/nginx-$name/body;
    proxy_temp_path $work/nginx-$name/proxy;
    fastcgi_temp_path $work/nginx-$name/fastcgi;
    uwsgi_temp_path $work/nginx-$name/uwsgi;
    scgi_temp_path $work/nginx-$name/scgi;
    client_max_body_size 0;
    keepalive_requests 100000000;
    keepalive_timeout 3600s;
    upstream provider {
        server unix:$upstream;
        keepalive 64;
        keepalive_requests 100000000;
        keepalive_timeout 3600s;
    }
    server {
        listen unix:$work/nginx-$name/sock $listen_extra;
        $server_extra
        location / {
            grpc_pass $pass://provider;
            grpc_read_timeout 3600s;
            grpc_send_timeout 3600s;
        }
    }
}
EOF
    "$nginx" -p "$work/nginx-$name" -e "$work/nginx-$name/error.log" \
        -c "$work/nginx-$name/nginx.conf" &
    nginx_pid=$!
    pids+=("$nginx_pid")
    local i=0
    while [ ! -S "$work/nginx-$name/sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    [ -S "$work/nginx-$name/sock" ] || { cat "$work/nginx-$name/error.log"; exit 1; }
}

if [ "$do_unary" = 1 ]; then
    say "part 1: unary $rpc, $rounds rounds x ($n sequential + $n by 8 callers) per target"
    start_provider plain
    plain_sock=$prov_sock plain_pid=$prov_pid
    start_nginx plain "$plain_sock" http2 "" grpc
    nginx_plain_pid=$nginx_pid
    tls_args=()
    if [ "$nginx_tls" = 1 ]; then
        # Certificates like go-plugin's (ECDSA, CN/SAN localhost): the
        # client's, which the provider requires, and nginx's server one.
        for c in client server; do
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
                -subj /CN=localhost -addext subjectAltName=DNS:localhost \
                -keyout "$work/$c.key" -out "$work/$c.pem" >/dev/null 2>&1
        done
        start_provider tls "$(cat "$work/client.pem")"
        tls_sock=$prov_sock tls_pid=$prov_pid
        b64=$prov_cert
        while [ $(( ${#b64} % 4 )) -ne 0 ]; do b64="$b64="; done
        printf '%s' "$b64" | base64 -d | openssl x509 -inform der -out "$work/provider.pem"
        start_nginx tls "$tls_sock" "ssl http2" "
        ssl_certificate $work/server.pem;
        ssl_certificate_key $work/server.key;
        ssl_client_certificate $work/client.pem;
        ssl_verify_client on;
        grpc_ssl_certificate $work/client.pem;
        grpc_ssl_certificate_key $work/client.key;
        grpc_ssl_trusted_certificate $work/provider.pem;
        grpc_ssl_verify on;
        grpc_ssl_name localhost;
        grpc_ssl_session_reuse on;" grpcs
        tls_args=(-tls-provider "unix:$tls_sock" -tls-provider-pid "$tls_pid"
            -tls-provider-cert "$work/provider.pem" -nginx-tls "unix:$work/nginx-tls/sock"
            -nginx-tls-pid "$nginx_pid" -nginx-tls-cert "$work/server.pem"
            -client-cert "$work/client.pem" -client-key "$work/client.key")
    fi
    (cd "$work" && "$bench" unary -rpc "$rpc" -n "$n" -rounds "$rounds" -c 8 \
        -direct "$prov" -shim "$shim" -shim-norec "$shim_norec" \
        -plain-provider "unix:$plain_sock" -plain-provider-pid "$plain_pid" \
        -nginx "unix:$work/nginx-plain/sock" -nginx-pid "$nginx_plain_pid" "${tls_args[@]}")
    recorded=$(sqlite3 -cmd '.timeout 10000' "$work/unary.db" "select count(*) from calls" 2>/dev/null || echo "?")
    say "tftap recorded $recorded calls into its database during part 1"
    echo
fi

# ---- part 2: tofu plan, directly and through tftap run -----------------------
now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

if [ "$do_plan" = 1 ]; then
    say "part 2: tofu plan, sizes $sizes, $reps repetitions per side (alternating)"
    # wall: until the command exits (what the user waits for); drained: until
    # the last process under it (tftap's recorders, flushing) has exited;
    # CPU: user+sys of every process under it, recorders included.
    printf '%-9s %-10s %4s %8s %7s %7s %8s | %8s %8s %8s | %s\n' resources side reps "wall s" "min" "max" \
        overhead "drained" "CPU s" "CPU ovh" "tftap shim processes: peak RSS"
    for size in $sizes; do
        t0=$(now)
        state=$work/plan/terraform.tfstate
        if [ "$real_apply" = 1 ] || [ ! -f "$state" ]; then
            (cd "$work/plan" && "$tofu" apply -input=false -auto-approve -no-color -var "n=$size" \
                >"$work/apply-$size.log" 2>&1) || { tail -20 "$work/apply-$size.log"; exit 1; }
            say "applied $size resources in $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s (directly)"
        else
            # Applying thousands of resources takes minutes of tofu's own
            # time: grow the state tofu wrote with copies of its first
            # instance instead (the plans below must still say No changes).
            jq -c --argjson n "$size" '.serial += 1 | .resources[0].instances as $have
                | .resources[0].instances = [range(0; $n) as $i
                    | if $i < ($have | length) then $have[$i]
                      else ($have[0] | .index_key = $i | .attributes.id = (9000000000000 + $i | tostring)) end]' \
                "$state" >"$state.new" && mv "$state.new" "$state"
            say "state grown to $size resources (copies of an applied instance; --real-apply applies them)"
        fi
        # The sampler runs through both sides alike so its own CPU use
        # weighs on neither; it reports tftap's processes only.
        "$bench" rss -exe "$tftap" -interval 20ms -o "$work/rss-$size" &
        rss_pid=$!
        pids+=("$rss_pid")
        for f in $sides; do
            : >"$work/$f-$size"
            : >"$work/$f-cpu-$size"
            : >"$work/$f-drain-$size"
        done
        if [ "$fresh_db" = 0 ]; then
            db=$work/plan-$size.db
            (cd "$work/plan" && "$tftap" run --db "$db" -- "$tofu" plan -input=false -lock=false \
                -no-color -var "n=$size" >"$work/plan.log" 2>&1) || { tail -20 "$work/plan.log"; exit 1; }
        fi
        for r in $(seq 1 "$reps"); do
            # Rotate which side goes first, so none always follows another.
            set -- $sides
            order=
            for ((j = 0; j < $#; j++)); do
                i=$(((j + r) % $# + 1))
                order="$order ${!i}"
            done
            for side in $order; do
                [ "$fresh_db" = 0 ] || db=$work/plan-$size-$r.db
                if [ $side = direct ]; then
                    (cd "$work/plan" && "$bench" cpu -- "$tofu" plan -input=false -lock=false -no-color \
                        -var "n=$size" >"$work/plan.log" 2>&1) || { tail -20 "$work/plan.log"; exit 1; }
                elif [ $side = direct-dev ] || [ $side = relay-only ]; then
                    rc=$devrc
                    [ $side = direct-dev ] || rc=$norecrc
                    (cd "$work/plan" && TF_CLI_CONFIG_FILE=$rc "$bench" cpu -- "$tofu" plan -input=false \
                        -lock=false -no-color -var "n=$size" >"$work/plan.log" 2>&1) ||
                        { tail -20 "$work/plan.log"; exit 1; }
                else
                    (cd "$work/plan" && "$bench" cpu -- "$tftap" run --db "$db" -- "$tofu" plan -input=false \
                        -lock=false -no-color -var "n=$size" >"$work/plan.log" 2>&1) ||
                        { tail -20 "$work/plan.log"; exit 1; }
                fi
                grep -q "No changes" "$work/plan.log" || { tail -20 "$work/plan.log"; exit 1; }
                # relaybench-cpu wall=S drained=S user=S sys=S orphans=N exit=N
                line=$(grep '^relaybench-cpu ' "$work/plan.log" | tail -n 1)
                printf '%s\n' "$line" | sed 's/.* wall=\([^ ]*\).*/\1/' >>"$work/$side-$size"
                printf '%s\n' "$line" | sed 's/.* drained=\([^ ]*\).*/\1/' >>"$work/$side-drain-$size"
                printf '%s\n' "$line" | awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                    printf "%.3f\n", v["user"] + v["sys"] }' >>"$work/$side-cpu-$size"
            done
        done
        kill "$rss_pid"
        wait "$rss_pid" 2>/dev/null || true
        md=$(median <"$work/direct-$size")
        mt=$(median <"$work/tftap-$size")
        cd_=$(median <"$work/direct-cpu-$size")
        ct=$(median <"$work/tftap-cpu-$size")
        calls=$(sqlite3 -cmd '.timeout 10000' "$db" "select count(*) from calls" 2>/dev/null || echo "?")
        rss=$(cat "$work/rss-$size")
        for side in $sides; do
            m=$(median <"$work/$side-$size")
            lo=$(sort -g "$work/$side-$size" | head -n 1)
            hi=$(sort -g "$work/$side-$size" | tail -n 1)
            c=$(median <"$work/$side-cpu-$size")
            dr=$(median <"$work/$side-drain-$size")
            if [ $side = direct ]; then
                ov="" cov="" extra=""
            elif [ $side = direct-dev ] || [ $side = relay-only ]; then
                ov=$(awk -v d="$md" -v t="$m" 'BEGIN { printf "%+.1f%%", (t / d - 1) * 100 }')
                cov=$(awk -v d="$cd_" -v t="$c" 'BEGIN { printf "%+.1f%%", (t / d - 1) * 100 }')
                extra="tofu with tftap run's dev_overrides, to the real provider"
                [ $side = direct-dev ] || extra="tofu with dev_overrides to the shim without a database"
            else
                ov=$(awk -v d="$md" -v t="$mt" 'BEGIN { printf "%+.1f%%", (t / d - 1) * 100 }')
                cov=$(awk -v d="$cd_" -v t="$ct" 'BEGIN { printf "%+.1f%%", (t / d - 1) * 100 }')
                extra=$(printf '%s' "$rss" | awk '{
                    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                    printf "instance (relay+recorder) %s MiB, relay %s, recorder %s, all shims at once %s; %s shims; provider %s MiB",
                        v["instance_peak_mib"], v["relay_peak_mib"], v["recorder_peak_mib"],
                        v["all_at_once_peak_mib"], v["relays"], v["provider_peak_mib"] }')
                extra="$extra; $calls calls recorded in the last run"
            fi
            printf '%-9s %-10s %4s %8.2f %7.2f %7.2f %8s | %8.2f %8.2f %8s | %s\n' "$size" "$side" "$reps" "$m" "$lo" "$hi" \
                "$ov" "$dr" "$c" "$cov" "$extra"
        done
        # Runs side by side share the machine's state of the moment: their
        # ratio varies less than either side's times.
        pairs="tftap/direct tftap/direct-dev"
        [ "$relay_only" = 0 ] || pairs="$pairs relay-only/direct-dev tftap/relay-only"
        for pair in $pairs; do
            a=${pair%/*} base=${pair#*/}
            for k in "" -cpu; do
                paste "$work/$a$k-$size" "$work/$base$k-$size" | awk '{ printf "%.4f\n", $1 / $2 }' \
                    >"$work/ratio$k-$a-$base-$size"
            done
            r_=$work/ratio-$a-$base-$size
            say "pair ratios $a/$base: wall median $(median <"$r_")x" \
                "($(sort -g "$r_" | head -n 1)-$(sort -g "$r_" | tail -n 1)), CPU" \
                "median $(median <"$work/ratio-cpu-$a-$base-$size")x; wall ratios: $(tr '\n' ' ' <"$r_")"
        done
        for side in $sides; do
            say "$side: wall (s) $(tr '\n' ' ' <"$work/$side-$size"); CPU (s) $(tr '\n' ' ' <"$work/$side-cpu-$size")"
        done
    done
fi
say "done; load $(cut -d' ' -f1-3 /proc/loadavg)"
