#!/bin/sh
# go-cty cross-check: random cty values encoded by go-cty are decoded by
# tftap's decoder (tests/crosscheck/decode_batch) and compared with go-cty's
# own decoding; damaged payloads must be rejected or decoded as go-cty does.
# The Go half is built into ${TFTAP_CACHE:-$HOME/.cache/tftap}/crosscheck.
#
# Environment: TFTAP_CROSSCHECK_SEED (default random, always printed),
# TFTAP_CROSSCHECK_COUNT (default 25000), TFTAP_CROSSCHECK_WRAP (a command
# prefix for the driver, e.g. "valgrind -q --error-exitcode=99").
# Without Go this test is skipped (77), or fails when TFTAP_REQUIRE_PEERS=1.
set -u
src="${top_srcdir:-.}/tests/crosscheck/go"
driver="${top_builddir:-.}/tests/crosscheck/decode_batch"
cache="${TFTAP_CACHE:-$HOME/.cache/tftap}/crosscheck"

unavailable() {
    echo "crosscheck: $1"
    if [ "${TFTAP_REQUIRE_PEERS:-0}" = 1 ]; then
        echo "crosscheck: 0 passed, 1 failed"
        exit 1
    fi
    echo "crosscheck: 0 passed, 0 failed, 1 skipped"
    exit 77
}

go=$(command -v go 2>/dev/null || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
[ -n "$go" ] || unavailable "go not found"
mkdir -p "$cache" || unavailable "cannot create $cache"
# go.sum pins every module; the build never edits go.mod (read-only source
# trees work). Built under a temporary name and renamed, as other builds may
# be running the cached binary.
if ! (cd "$src" && "$go" build -mod=readonly -o "$cache/crosscheck.$$" .); then
    rm -f "$cache/crosscheck.$$"
    unavailable "cannot build the Go half (no module proxy?)"
fi
mv -f "$cache/crosscheck.$$" "$cache/crosscheck"

set -- -driver "$driver" -count "${TFTAP_CROSSCHECK_COUNT:-25000}"
[ -n "${TFTAP_CROSSCHECK_SEED:-}" ] && set -- "$@" -seed "$TFTAP_CROSSCHECK_SEED"
[ -n "${TFTAP_CROSSCHECK_WRAP:-}" ] && set -- "$@" -wrap "$TFTAP_CROSSCHECK_WRAP"
exec "$cache/crosscheck" "$@"
