#!/usr/bin/env bash
# Diff benchmark: `tftap diff` of two recorded plans of COUNT resources,
# timed side by side with `tofu show -json` of one of those plans (the
# yardstick the issue sets: at most 1x its time), with peak memory.
#
#   bench/diff/run.sh [--count N] [--runs R] [TFTAP]
#
# Records three `tofu plan -out` runs of COUNT tftest6_server resources
# (created, so each is validated and planned) through `tftap run` into one
# database: two with tftest6 0.1.0 and one with 0.2.0 (the upgrade of
# tests/peers/tftest/variant.go: a changed default and a new attribute on
# every resource). Then, A and B in turn (after one untimed run of each), R
# times each, with GNU time (wall, CPU, peak RSS; medians, and the median of
# the pair ratios A/B):
#   upgrade:  tftap diff --json of the 0.1.0 and 0.2.0 runs  vs  tofu show -json
#   same:     tftap diff --json of the two 0.1.0 runs        vs  tofu show -json
# TFTAP defaults to ./tftap (run from the build directory).
# Needs: the peers (scripts/build-peers), GNU time (/usr/bin/time). About 3-4 minutes on
# 2 cores at 5,000 (recording the three plans is most of it).
set -euo pipefail

count=5000
runs=5
tftap=
while [ $# -gt 0 ]; do
    case $1 in
    --count) count=$2; shift ;;
    --runs) runs=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) tftap=$1 ;;
    esac
    shift
done
tftap=$(realpath "${tftap:-./tftap}")
[ -x "$tftap" ] || { echo "run.sh: $tftap not built (make tftap)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "run.sh: /usr/bin/time (GNU time) is needed" >&2; exit 1; }
peers=${TFTAP_CACHE:-$HOME/.cache/tftap}/peers
for f in "$peers/bin/tofu" "$peers/tofurc-upgrade"; do
    [ -e "$f" ] || { echo "run.sh: $f missing (run scripts/build-peers)" >&2; exit 1; }
done
export PATH=$peers/bin:$PATH TF_CLI_CONFIG_FILE=$peers/tofurc-upgrade
export TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
unset TF_PLUGIN_CACHE_DIR TF_DATA_DIR TF_LOG TFTAP_DB

work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-bench-diff.XXXXXX")
trap 'rm -rf "$work"' EXIT
db=$work/tftap.db

record() { # DIR VERSION
    mkdir -p "$work/$1"
    cat >"$work/$1/main.tf" <<EOF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6", version = "$2" }
  }
}
resource "tftest6_server" "s" {
  count = $count
  name  = "s\${count.index}"
  zone  = "z\${count.index % 3}"
}
EOF
    (cd "$work/$1" && tofu init -input=false -no-color >/dev/null &&
        "$tftap" run --db "$db" -- tofu plan -input=false -no-color -refresh=false -out=p >/dev/null)
    echo "recorded $1 ($2): run $(sqlite3 "$db" 'SELECT max(id) FROM runs'), $(sqlite3 "$db" \
        "SELECT count(*) FROM calls WHERE run_id = (SELECT max(id) FROM runs)") calls"
}

start=$(date +%s)
record v1 0.1.0
record v1b 0.1.0
record v2 0.2.0
echo "recording took $(($(date +%s) - start)) s; database $(($(stat -c %s "$db") / 1024 / 1024)) MiB"

# What each diff says, once (so the figures are of a diff that works).
"$tftap" diff --db "$db" 1 3 --json >"$work/up.json" || true
"$tftap" diff --db "$db" 1 2 --json >"$work/same.json" || true
echo "upgrade diff: $(jq -c '[.differences, .input_differences]' "$work/up.json") (behaviour, input) differences"
echo "same diff:    $(jq -c '[.differences, .input_differences]' "$work/same.json") (behaviour, input) differences"
echo "tofu show -json of one plan: $(cd "$work/v1" && tofu show -json p | wc -c) bytes"

echo
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# pairs NAME DIR -- A... : A and B (tofu show -json p in DIR) in turn; one
# line of medians each, then the pair ratios.
pairs() {
    local name=$1 dir=$2
    shift 3
    (cd "$dir" && tofu show -json p >/dev/null) && "$@" >/dev/null || true # untimed
    : >"$work/$name.a"; : >"$work/$name.b"
    for _ in $(seq 1 "$runs"); do
        /usr/bin/time -q -f '%e %U %S %M' -o "$work/t" "$@" >/dev/null || true
        cat "$work/t" >>"$work/$name.a"
        (cd "$dir" && /usr/bin/time -q -f '%e %U %S %M' -o "$work/t" tofu show -json p >/dev/null)
        cat "$work/t" >>"$work/$name.b"
    done
    for side in a b; do
        f=$work/$name.$side
        printf '  %s: wall %ss, CPU %ss, peak %s MiB (medians of %s)\n' \
            "$([ $side = a ] && echo "A tftap diff  " || echo "B tofu show   ")" \
            "$(awk '{ print $1 }' "$f" | median)" "$(awk '{ print $2 + $3 }' "$f" | median)" \
            "$(awk '{ printf "%.1f\n", $4 / 1024 }' "$f" | median)" "$runs"
    done
    echo "  A/B pair by pair: wall $(paste "$work/$name.a" "$work/$name.b" | awk '{ printf "%.3f\n", $1 / $5 }' | median)x (median)"
}

echo "== upgrade: tftap diff (A) vs tofu show -json (B), $count resources each"
pairs upgrade "$work/v1" -- "$tftap" diff --db "$db" 1 3 --json
echo
echo "== same version: tftap diff (A) vs tofu show -json (B)"
pairs same "$work/v1" -- "$tftap" diff --db "$db" 1 2 --json
