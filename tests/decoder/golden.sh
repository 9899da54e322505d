#!/bin/sh
# Golden vectors: every case in tests/decoder/golden is decoded by the real
# `tftap decode` and its stdout (or its error line and exit code) compared
# with the expected file. Regenerate the vectors with make-golden.py.
set -u
dir="${top_srcdir:-.}/tests/decoder/golden"
tftap="${top_builddir:-.}/tftap"
pass=0
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for typefile in "$dir"/*.type; do
    name=$(basename "$typefile" .type)
    if [ -f "$dir/$name.msgpack" ]; then
        input="$dir/$name.msgpack"
    else
        input="$dir/$name.json"
    fi
    args=""
    [ -f "$dir/$name.args" ] && args=$(cat "$dir/$name.args")
    # shellcheck disable=SC2086
    "$tftap" decode --json $args --type "$(cat "$typefile")" "$input" >"$tmp/out" 2>"$tmp/err"
    status=$?
    if [ -f "$dir/$name.expected.err" ]; then
        if [ $status -eq 1 ] && [ ! -s "$tmp/out" ] && cmp -s "$tmp/err" "$dir/$name.expected.err"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL $name (exit $status)"
            echo "  expected: $(cat "$dir/$name.expected.err")"
            echo "  got:      $(cat "$tmp/err")"
        fi
    else
        if [ $status -eq 0 ] && cmp -s "$tmp/out" "$dir/$name.expected.json"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL $name (exit $status)"
            echo "  expected: $(cat "$dir/$name.expected.json")"
            echo "  got:      $(cat "$tmp/out") $(cat "$tmp/err")"
        fi
    fi
done
echo "golden: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
