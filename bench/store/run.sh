#!/usr/bin/env bash
# bench/store: recorder throughput and database bytes per resource change,
# SQLite against PostgreSQL, the same prepared messages to each, taking turns
# round after round (ratios are the figures to compare on a busy machine).
# usage: bench/store/run.sh [BUILD_DIR] [CALLS] [ROUNDS]
#   BUILD_DIR: an out-of-tree build where `make bench/store/bench_store` works (default .)
#   NO_PG=1: SQLite only. The PostgreSQL server is a throwaway one (tests/pg/lib.sh:
#   initdb in a temporary directory, unix socket only, fsync off).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
calls=${2:-20000}
rounds=${3:-3}
make -C "$build" -s bench/store/bench_store >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tftap-bench-store.XXXXXX")
targets=(--db "$tmp/tftap.db")
if [ "${NO_PG:-0}" != 1 ]; then
    . "$here/../../tests/pg/lib.sh"
    trap 'pg_cleanup; rm -rf "$tmp"' EXIT
    pg_start >/dev/null
    targets+=(--db "$(pg_uri)")
else
    trap 'rm -rf "$tmp"' EXIT
fi
for profile in large small; do
    "$build/bench/store/bench_store" --calls "$calls" --profile "$profile" --rounds "$rounds" \
        "${targets[@]}"
    echo
done
