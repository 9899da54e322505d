#!/usr/bin/env bash
# Where tofu and the provider spend more through the relay than directly:
# the system calls of each process kind, counted (not timed, so a busy
# machine changes them little), in a refreshing `tofu plan` of COUNT
# resources run directly with tftap run's dev_overrides (direct-dev) and
# through `tftap run`, REPS times each, alternating.
#
#   bench/relay/syscalls.sh [TFTAP] [COUNT] [REPS]
#
# TFTAP defaults to ./tftap (run from the build directory), COUNT to 1000,
# REPS to 2. Prints, per side and process kind (tofu, provider, tftap's
# processes), the median CPU time (sampled) and the median count of all
# system calls and of the I/O, wake-up and timer ones, per planned resource. Needs the peers (scripts/build-peers)
# and perf (perf trace, as root or with perf_event_paranoid <= 1).
set -euo pipefail

tftap=$(realpath "${1:-./tftap}")
count=${2:-1000}
reps=${3:-2}
cache=${TFTAP_CACHE:-$HOME/.cache/tftap}
peers=$cache/peers
tofu=$peers/bin/tofu
for f in "$tofu" "$peers/tofurc" "$tftap"; do
    [ -e "$f" ] || { echo "syscalls.sh: $f missing (run scripts/build-peers, or give TFTAP)" >&2; exit 1; }
done
command -v perf >/dev/null || { echo "syscalls.sh: perf missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-syscalls.XXXXXX")
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT
export TF_CLI_CONFIG_FILE=$peers/tofurc TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1

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
resource "tftest5_trigger" "r" {
  count = var.n
}
EOF
cd "$work/plan"
"$tofu" init -input=false -no-color >"$work/init.log" 2>&1 || { cat "$work/init.log"; exit 1; }
"$tofu" apply -input=false -auto-approve -no-color -var n=1 >"$work/apply.log" 2>&1 ||
    { tail -20 "$work/apply.log"; exit 1; }
# Copies of the applied instance: every plan refreshes and plans each one.
jq -c --argjson n "$count" '.serial += 1 | .resources[0].instances as $have
    | .resources[0].instances = [range(0; $n) as $i
        | if $i < ($have | length) then $have[$i]
          else ($have[0] | .index_key = $i | .attributes.id = (9000000000000 + $i | tostring)) end]' \
    terraform.tfstate >terraform.tfstate.new && mv terraform.tfstate.new terraform.tfstate
# tftap run sends tofu to its shims with dev_overrides; direct-dev sends it
# to the real provider the same way (tofu treats an overridden provider
# differently from an installed one).
"$tftap" wrap --db "$work/wrap.db" --out "$work/wrap" >/dev/null 2>"$work/wrap.log" ||
    { cat "$work/wrap.log"; exit 1; }
shim=$(find "$work/wrap" -name 'terraform-provider-tftest5*' -type f | head -n 1)
provdir=$(dirname "$(jq -r .binary "$(dirname "$shim")/tftap-shim.json")")
sed "s#\"$(dirname "$shim")\"#\"$provdir\"#" "$work/wrap/tftap.tfrc" >"$work/direct-dev.tfrc"
grep -q "\"$provdir\"" "$work/direct-dev.tfrc" || { echo "syscalls.sh: no dev_overrides" >&2; exit 1; }
# One untimed run records the provider's digest and schema, as a user's
# earlier runs have.
"$tftap" run --db "$work/plan.db" -- "$tofu" plan -input=false -lock=false -no-color \
    -var "n=$count" >"$work/first.log" 2>&1 || { tail -20 "$work/first.log"; exit 1; }

# perf trace -s: a summary per thread ("comm (tid), N events" then one row
# per system call: name, calls, ...). Summed per process kind by comm.
summarize() { # FILE SIDE REP
    awk -v side="$2" -v rep="$3" '
        /^ [^ ].* \([0-9]+\), [0-9]+ events/ {
            comm = $1
            kind = "other"
            if (comm ~ /^tofu/) kind = "tofu"
            else if (comm ~ /^terraform-pro/) kind = "provider"
            else if (comm ~ /^tftap/) kind = "tftap"
            next
        }
        /^   [a-z_0-9]+ +[0-9]+ / && kind != "" {
            n = $2
            all[kind] += n
            if ($1 ~ /^(read|write|readv|writev|recvmsg|sendmsg|recvfrom|sendto|pread64|pwrite64)$/) io[kind] += n
            else if ($1 ~ /^(futex|epoll_pwait|epoll_wait|poll|ppoll|select|pselect6)$/) wake[kind] += n
            else if ($1 ~ /^(nanosleep|clock_nanosleep|sched_yield|tgkill|rt_sigreturn)$/) timer[kind] += n
        }
        END {
            for (k in all) printf "%s %s %s %d %d %d %d\n", side, rep, k, all[k], io[k], wake[k], timer[k]
        }' "$1"
}

: >"$work/counts"
: >"$work/cpu"
# run SIDE TOOL...: the side's plan under a perf tool (which follows every
# process it starts, tftap's recorders included).
run() {
    local side=$1
    shift
    if [ "$side" = direct-dev ]; then
        TF_CLI_CONFIG_FILE=$work/direct-dev.tfrc "$@" -- "$tofu" plan -input=false -lock=false \
            -no-color -var "n=$count" >"$work/plan.log" 2>&1
    else
        "$@" -- "$tftap" run --db "$work/plan.db" -- "$tofu" plan -input=false -lock=false \
            -no-color -var "n=$count" >"$work/plan.log" 2>&1
    fi
    grep -q "No changes" "$work/plan.log" || { tail -20 "$work/plan.log"; exit 1; }
}
for r in $(seq 1 "$reps"); do
    for side in direct-dev tftap; do
        run "$side" perf trace -s -o "$work/trace"
        summarize "$work/trace" "$side" "$r" >>"$work/counts"
        # CPU by process kind: samples of the CPU clock at 999 Hz, by command name.
        run "$side" perf record -q -F 999 -e cpu-clock -o "$work/perf.data"
        perf report -i "$work/perf.data" --stdio --sort comm -F comm,sample 2>/dev/null |
            awk -v side="$side" -v rep="$r" '
                /^ +[^#]/ && NF >= 2 {
                    n = $NF; comm = $1
                    kind = "other"
                    if (comm ~ /^tofu/) kind = "tofu"
                    else if (comm ~ /^terraform-pro/) kind = "provider"
                    else if (comm ~ /^tftap/) kind = "tftap"
                    s[kind] += n
                }
                END { for (k in s) printf "%s %s %s %.0f\n", side, rep, k, s[k] * 1000 / 999 }' \
                >>"$work/cpu"
        if [ "$side" = tftap ]; then
            perf report -i "$work/perf.data" --stdio --sort comm -F comm,sample 2>/dev/null |
                awk '/^ +tftap/ { printf "%s %.0f\n", $1, $NF * 1000 / 999 }' >"$work/tftap-threads"
        fi
    done
done

[ "${KEEP:-0}" = 1 ] && echo "syscalls.sh: kept $work"
echo "syscalls.sh: tofu plan of $count resources, $reps runs per side (median)"
echo "CPU ms by process kind (perf record, cpu-clock at 999 Hz):"
printf '%-10s %-9s %10s\n' side process "CPU ms"
for side in direct-dev tftap; do
    for kind in tofu provider tftap; do
        { grep "^$side [0-9]* $kind " "$work/cpu" || true; } | sort -k4,4n | awk -v side="$side" -v kind="$kind" '
            { a[NR] = $4 } END { if (NR) printf "%-10s %-9s %10d\n", side, kind, a[int((NR + 1) / 2)] }'
    done
done
echo "tftap's CPU ms by thread name, its last run: $(tr '\n' ' ' <"$work/tftap-threads")"
echo "system calls per resource (perf trace -s):"
printf '%-10s %-9s %10s %10s %10s %10s\n' side process all "I/O" "wake-ups" "timers"
for side in direct-dev tftap; do
    for kind in tofu provider tftap; do
        { grep "^$side [0-9]* $kind " "$work/counts" || true; } | sort -k4,4n | awk -v n="$count" -v side="$side" -v kind="$kind" '
            { a[NR] = $4; b[NR] = $5; c[NR] = $6; d[NR] = $7 }
            END {
                if (NR == 0) exit
                m = int((NR + 1) / 2)
                printf "%-10s %-9s %10.1f %10.1f %10.1f %10.1f\n", side, kind, a[m] / n, b[m] / n, c[m] / n, d[m] / n
            }'
    done
done
