#!/bin/sh
# tftap version and --version: the version configure.ac gives, the git
# description of the tree it was built from, the protocol versions the
# .proto files follow, the SQLite library and the schema version of the
# databases it writes (tests/install/install.sh compares it with a recorded
# database's).
set -u
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
TFTAP="$top_builddir/tftap"
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-version-XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check_eq() { # NAME GOT EXPECTED
    if [ "$2" = "$3" ]; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: $1: got '$2', expected '$3'" >&2; fi
}

version=$(sed -n 's/^AC_INIT(\[tftap\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
"$TFTAP" version >"$work/v" 2>&1
check_eq "version exits 0" $? 0
"$TFTAP" --version >"$work/dv" 2>&1
check_eq "--version exits 0" $? 0
check_eq "--version is tftap version" "$(cat "$work/dv")" "$(cat "$work/v")"
first=$(sed -n 1p "$work/v")
case $first in "tftap $version" | "tftap $version (git "*")") passed=$((passed + 1)) ;;
*) failed=$((failed + 1)); echo "FAIL: first line '$first'" >&2 ;; esac

"$TFTAP" version --json >"$work/j"
check_eq "version --json exits 0" $? 0
check_eq "json: version" "$(jq -r .version "$work/j")" "$version"
# The git description: of this tree when it is a git checkout, else the
# one a release tarball carries (.git-version).
if top=$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null) &&
    [ "$(cd "$top" && pwd -P)" = "$(cd "$top_srcdir" && pwd -P)" ]; then
    want=$(git -C "$top_srcdir" describe --tags --always)
else
    want=$(sed -n 1p "$top_srcdir/.git-version" 2>/dev/null)
fi
check_eq "json: git" "$(jq -r '.git // ""' "$work/j" | sed 's/-dirty$//')" "${want%-dirty}"
p5=$(sed -n 's/.*contract of minor version \(5\.[0-9]*\).*/\1/p' "$top_srcdir/proto/tfplugin5.proto")
p6=$(sed -n 's/.*contract of minor version \(6\.[0-9]*\).*/\1/p' "$top_srcdir/proto/tfplugin6.proto")
check_eq "json: protocols, as the .proto files say" "$(jq -c .protocols "$work/j")" "[\"$p5\",\"$p6\"]"
check_eq "json: sqlite" "$(jq -r .sqlite "$work/j")" "$(sqlite3 :memory: 'select sqlite_version()')"
check_eq "json: database_schema is a number" "$(jq -r '.database_schema | type' "$work/j")" number
check_eq "text says the same" "$(sed -n 's/^database schema: //p' "$work/v")" "$(jq -r .database_schema "$work/j")"

"$TFTAP" version extra >/dev/null 2>"$work/err"
check_eq "an operand: exit 2" $? 2
check_eq "an operand: one line" "$(cat "$work/err")" \
    "tftap: unexpected argument 'extra' (see 'tftap version --help')"
"$TFTAP" --db x.db version >/dev/null 2>&1
check_eq "a global --db: exit 2" $? 2

echo "version: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
