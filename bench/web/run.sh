#!/bin/sh
# bench/web/run.sh BUILDDIR [CALLS]: a run of CALLS (default 50,000)
# aws_instance-sized calls written by bench/store/bench_store (which makes
# its database afresh: the diff is of the run with itself, as costly as
# with another of its size), then bench/web/bench_web.py against `tftap
# serve` on it.
set -eu
build=${1:?usage: run.sh BUILDDIR [CALLS]}
calls=${2:-50000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-bench-web.XXXXXX")
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
"$build/bench/store/bench_store" "$calls" large --db "$work/tftap.db" >/dev/null
python3 "$here/bench_web.py" "$build/tftap" "$work/tftap.db" 1 1
