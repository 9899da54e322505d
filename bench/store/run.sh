#!/bin/sh
# bench/store: recorder throughput and database size per resource change.
# usage: bench/store/run.sh [BUILD_DIR] [CALLS]
#   BUILD_DIR: an out-of-tree build where `make bench/store/bench_store` works (default .)
set -eu
build=${1:-.}
calls=${2:-50000}
make -C "$build" -s bench/store/bench_store >/dev/null
for profile in large small; do
    "$build/bench/store/bench_store" "$calls" "$profile"
    echo
done
