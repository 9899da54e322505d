#!/usr/bin/env bash
# bench/naming/run.sh BUILDDIR [N] [SHAPE]: what naming costs at the end of
# `tftap run -- tofu plan` (no -out): wall and CPU of the whole command,
# every process it starts included (cputime.py reaps the detached ones),
# beside the same plan direct and saved (-out), and how many resource
# calls got an address. SHAPE: `new` (default), N tftest5_pet of `count`
# with five distinct lengths, all created by the plan: every call is
# named by the plan made again, the worst case (everything planned again,
# 1,000 equal instances per value to pair); `mixed`, N of them applied
# and ten new tftest6_pet: only the new block is planned again (-target).
# Peers from scripts/build-peers (TFTAP_CACHE).
set -eu
builddir=$(cd "${1:?usage: run.sh BUILDDIR [N] [new|mixed]}" && pwd)
n=${2:-1000}
shape=${3:-new}
here=$(cd "$(dirname "$0")" && pwd)
peers=${TFTAP_CACHE:-$HOME/.cache/tftap}/peers
export TF_CLI_CONFIG_FILE=$peers/tofurc PATH=$peers/bin:$PATH CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-bench-naming.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
cat >main.tf <<TF
terraform {
  required_providers {
    tftest5 = { source = "tftap/tftest5" }
    tftest6 = { source = "tftap/tftest6" }
  }
}
resource "tftest5_pet" "p" {
  count  = $n
  length = count.index % 5 + 1
}
TF
tofu init -input=false -no-color >/dev/null
if [ "$shape" = mixed ]; then
    tofu apply -auto-approve -input=false -no-color -parallelism=20 >/dev/null
    cat >>main.tf <<'TF'
resource "tftest6_pet" "n" {
  count  = 10
  length = count.index + 1
}
TF
fi
measure() { # LABEL COMMAND...
    local label=$1
    shift
    printf '%-28s ' "$label"
    "$here/cputime.py" "$@" 2>&1 >/dev/null | tail -1
}
measure "tofu plan (direct)" tofu plan -input=false -no-color -lock=false
measure "tftap run -- tofu plan -out" "$builddir/tftap" run --db "$work/t.db" -- \
    tofu plan -input=false -no-color -lock=false -out=p
measure "tftap run -- tofu plan" "$builddir/tftap" run --db "$work/t.db" -- \
    tofu plan -input=false -no-color -lock=false
echo "named: $(sqlite3 "$work/t.db" "SELECT count(address) || ' of ' || count(*) FROM v_resource_changes
    WHERE run_id = (SELECT max(id) FROM runs)") resource calls of the plain plan"
