#!/bin/sh
# libpq and libmicrohttpd are loaded only by what needs them (a postgresql://
# --db, `tftap serve`): the binary does not link them (nor what they pull in:
# GnuTLS, Kerberos, LDAP), a command on an SQLite file never maps them, and
# when one cannot be used the user gets one line naming it, with the exit
# code of an unusable database or a server that cannot start.
set -u
: "${top_builddir:=.}"
TFTAP="$top_builddir/tftap"
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-libs-XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
unset TFTAP_DB
cd "$work" || exit 1

# Not linked. (ldd lists libsqlite3, which is: the listing is real.)
ldd "$TFTAP" >ldd.out 2>&1 || { cat ldd.out; exit 1; }
if ! grep -q 'libsqlite3\.so' ldd.out; then
    fail "ldd does not list libsqlite3: $(cat ldd.out)"
elif grep -E 'libpq\.so|libmicrohttpd|libgnutls|libkrb5|libldap|libsasl' ldd.out; then
    fail "tftap links a library only --db postgresql:// or serve needs (above)"
else
    ok
fi

# Not mapped by a command on an SQLite file (what every shim does): the
# dynamic loader's own trace of every library it opens, dlopen included.
"$TFTAP" run --db "$work/t.db" -- true >run.out 2>&1 || { cat run.out; fail "run on a file"; }
LD_DEBUG=files "$TFTAP" runs --db "$work/t.db" >runs.out 2>ld.trace
rc=$?
if [ "$rc" -ne 0 ]; then
    fail "runs exits $rc: $(grep -v '^ *[0-9]*:' ld.trace | head -3)"
elif ! grep -q 'file=libsqlite3\.so' ld.trace; then
    fail "LD_DEBUG=files shows no libsqlite3: $(head -5 ld.trace)"
elif grep -E 'file=(libpq|libmicrohttpd|libgnutls)' ld.trace; then
    fail "runs on an SQLite file loaded a library it does not need (above)"
else
    ok
fi

# Unusable libraries: a shared object without their symbols under their names.
mkdir lib
ln -s "$top_builddir/tests/cli/stub.so" lib/libpq.so.5
ln -s "$top_builddir/tests/cli/stub.so" lib/libmicrohttpd.so.12

# The exit code of a database that cannot be used (nothing listens on port 1).
"$TFTAP" runs --db postgresql://127.0.0.1:1/none >/dev/null 2>refused.err
refused=$?
grep -q 'cannot connect' refused.err || fail "a refused connection: $(cat refused.err)"

# expect NAME EXIT "STDERR" CMD...: exactly that one line and that exit code
# (with $last set: that line last, after others).
last=
expect() {
    name=$1 code=$2 line=$3
    shift 3
    LD_LIBRARY_PATH="$work/lib" "$@" >out 2>err </dev/null
    rc=$?
    if [ -n "$last" ]; then got=$(tail -n 1 err); else got=$(cat err); fi
    if [ "$rc" -ne "$code" ]; then
        fail "$name: exit $rc, expected $code: $(cat err)"
    elif [ "$got" != "$line" ]; then
        fail "$name: stderr:
$(cat err)
expected:
$line"
    else
        ok
    fi
}
nopq='tftap: PostgreSQL needs libpq.so.5 (Debian: libpq5): libpq.so.5: no symbol PQclear'
expect "runs --db postgresql://" "$refused" "$nopq" \
    "$TFTAP" runs --db postgresql://127.0.0.1:1/none
expect "show --db postgresql://" "$refused" "$nopq" \
    "$TFTAP" show last --db postgresql://127.0.0.1:1/none
# push refuses a target it cannot open with 2, as for any other reason.
expect "push to postgresql://" 2 "$nopq" \
    "$TFTAP" push --db "$work/t.db" --to postgresql://127.0.0.1:1/none last
# run goes on unrecorded, as with any database it cannot use (after a note:
# 'true' is not tofu).
last=1
expect "run --db postgresql://" 0 "tftap: cannot record into postgresql://127.0.0.1:1/none (PostgreSQL needs libpq.so.5 (Debian: libpq5): libpq.so.5: no symbol PQclear); running the command unrecorded" \
    "$TFTAP" run --db postgresql://127.0.0.1:1/none -- true
last=
# An SQLite file never asks for libpq.
LD_LIBRARY_PATH="$work/lib" "$TFTAP" runs --db "$work/t.db" >out 2>err &&
    grep -q ' true$' out && ok || fail "runs on a file with an unusable libpq: $(cat err)"
expect "serve" 1 "tftap: serve needs libmicrohttpd.so.12 (Debian: libmicrohttpd12): libmicrohttpd.so.12: no symbol MHD_add_response_header" \
    "$TFTAP" serve --db "$work/t.db" --listen 127.0.0.1:0

echo "libs.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
