#!/bin/sh
# tftap serve at the HTTP level (tests/web/serve_http.py) over a database the real
# recorder wrote (bench/store/bench_store): no peers needed.
set -eu
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-web-http.XXXXXX")
trap 'rm -rf "$work"' EXIT
calls=1234
# (the benchmark does not free its small schema: leaks there are not ours to report)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    "$top_builddir/bench/store/bench_store" $calls small --db "$work/tftap.db" >/dev/null
exec python3 "$top_srcdir/tests/web/serve_http.py" "$top_builddir/tftap" "$work/tftap.db" $calls
