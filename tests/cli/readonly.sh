#!/bin/sh
# Reading never writes. Every command that reads a record, run on a file that
# is not one (another program's SQLite database, an empty file), refuses
# with one line and leaves the file byte for byte as it was, with no -wal
# or -shm beside it; on a record of an older tftap it reads (brought up to
# date in memory: tests/store/test_db.c) and leaves the file as it was. A --db, --to or TFTAP_DB
# that looks like a URI but is not a PostgreSQL one is a usage error naming
# its scheme, and creates nothing. Against a database the recorder test
# wrote (no peers needed).
set -u
: "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
TFTAP="$top_builddir/tftap"
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-readonly-XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

TFTAP_TEST_KEEP=1 TMPDIR="$work" "$top_builddir/tests/recorder/test_recorder" >"$work/rec.log" 2>&1 ||
    { echo "test_recorder failed"; cat "$work/rec.log"; exit 1; }
rec=$(ls "$work"/tftap-test-rec-*/rec/tftap.db)
unset TFTAP_DB
mkdir "$work/cwd" && cd "$work/cwd" || exit 1

# Every reading command, as "ARGS" with FILE standing for the database.
commands='runs --db FILE
calls last --db FILE
show last --db FILE
export last --db FILE
check last --db FILE
diff 1 1 --db FILE
schema last --db FILE
mock last --db FILE
bundle last --db FILE -o OUT
push last --db FILE --to postgresql://127.0.0.1:1/none
serve --db FILE --listen 127.0.0.1:0
calls FILE
show FILE:1'

# refused NAME FILE: every command refuses FILE with one line, exit 1 (2
# for the commands that judge: check, diff, schema), and the file is unchanged.
refused() {
    name=$1 file=$2
    before=$(sha256sum "$file" | cut -d' ' -f1)
    echo "$commands" | while IFS= read -r line; do
        # shellcheck disable=SC2086
        set -- $(echo "$line" | sed "s|FILE|$file|g; s|OUT|$work/out.tftap|")
        "$TFTAP" "$@" >"$work/out" 2>"$work/err" </dev/null
        code=$?
        case $1 in check | diff | schema) want=2 ;; *) want=1 ;; esac
        if [ "$code" != "$want" ]; then
            echo "FAIL: $name: tftap $line: exit $code, want $want" >&2
            cat "$work/err" >&2
            echo x >>"$work/bad"
        elif [ "$(wc -l <"$work/err")" != 1 ] || ! grep -q "^tftap: .*$(basename "$file")" "$work/err"; then
            echo "FAIL: $name: tftap $line: not one line naming the file:" >&2
            cat "$work/err" >&2
            echo x >>"$work/bad"
        fi
    done
    if [ -s "$work/bad" ]; then fail "$name: refused by every reading command"; else ok; fi
    rm -f "$work/bad"
    after=$(sha256sum "$file" | cut -d' ' -f1)
    [ "$before" = "$after" ] && ok || fail "$name: the file changed ($before -> $after)"
    [ ! -e "$file-wal" ] && [ ! -e "$file-shm" ] && [ ! -e "$file-journal" ] && ok ||
        fail "$name: files appeared beside it: $(ls "$file"-* 2>/dev/null)"
    [ ! -e "$work/out.tftap" ] && ok || fail "$name: a bundle was written"
    [ ! -e .tftap ] && ok || fail "$name: a default database appeared"
}

sqlite3 "$work/other.db" "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT);
    INSERT INTO accounts (owner) VALUES ('alice'), ('bob');"
refused "another program's database" "$work/other.db"
: >"$work/empty.db"
refused "an empty file" "$work/empty.db"
sqlite3 "$work/wal.db" "PRAGMA journal_mode=WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);" >/dev/null
refused "another program's WAL database" "$work/wal.db"

# URIs: a usage error naming the scheme, exit 2, nothing created.
uri() { # NAME EXPECTED-IN-MESSAGE ARGS...
    name=$1 want=$2
    shift 2
    "$TFTAP" "$@" >"$work/out" 2>"$work/err"
    code=$?
    [ "$code" = 2 ] && grep -q -- "$want" "$work/err" && [ "$(wc -l <"$work/err")" = 1 ] && ok ||
        { fail "$name: exit $code: $(cat "$work/err")"; }
    [ -z "$(ls -A .)" ] && ok || { fail "$name: created $(ls -A .)"; rm -rf ./* ./.tftap; }
}
uri "push --to a misspelt scheme" "scheme 'postgresq'" push last --db "$rec" --to postgresq://localhost/tftap
uri "--db postgresql:/x" "postgresql://" runs --db postgresql:/tftap
uri "--db sqlite:FILE" "scheme 'sqlite'" show last --db sqlite:tftap.db
uri "global --db sqlite:FILE" "scheme 'sqlite'" --db sqlite:tftap.db runs
uri "run --db sqlite:FILE" "scheme 'sqlite'" run --db sqlite:tftap.db -- true
uri "--db ''" "empty" runs --db ''
TFTAP_DB=postgresq://localhost/x uri "TFTAP_DB misspelt" "TFTAP_DB" runs
# A file whose name looks like a URI is still a file.
cp "$rec" "$work/cwd/x:y"
"$TFTAP" runs --db "x:y" >/dev/null 2>&1 && ok || fail "an existing file named x:y"
rm -f "$work/cwd/x:y"

# run --db a bundle or a directory: the command runs, unrecorded, and one line says why.
"$TFTAP" bundle last --db "$rec" -o "$work/b.tftap" >/dev/null 2>&1 || fail "bundle for run --db"
b_sum=$(sha256sum <"$work/b.tftap")
"$TFTAP" run --db "$work/b.tftap" -- true >/dev/null 2>"$work/err"
[ $? = 0 ] && grep -q 'a bundle is read only' "$work/err" && ok || fail "run --db BUNDLE: $(cat "$work/err")"
[ "$(sha256sum <"$work/b.tftap")" = "$b_sum" ] && ok || fail "run --db BUNDLE changed the bundle"
mkdir -p "$work/adir"
"$TFTAP" runs --db "$work/adir" >/dev/null 2>"$work/err"
[ $? = 1 ] && grep -q 'a directory (--db names a database file' "$work/err" && ok ||
    fail "runs --db DIR: $(cat "$work/err")"
"$TFTAP" run --db "$work/adir" -- true >/dev/null 2>"$work/err"
[ $? = 0 ] && grep -q 'a directory: --db names a database file' "$work/err" && ok ||
    fail "run --db DIR: $(cat "$work/err")"

echo "readonly: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
