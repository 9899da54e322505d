#!/bin/sh
# The man pages (man/mkman.sh): one for tftap and one for each command
# `tftap --help` lists, no more, no fewer; each renders without a single
# groff warning (groff -ww) and as man(1) shows it (man -l); each carries
# what its --help says.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
tftap=$top_builddir/tftap
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
not_ok() { failed=$((failed + 1)); echo "FAILED: $*"; }
for tool in groff man; do
    if ! command -v $tool >/dev/null; then
        echo "man: $tool is needed (scripts/install-deps)"
        echo "man: 0 passed, 1 failed"
        exit 1
    fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tftap-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# MAN_PAGES: the Makefile's list (make check sets it); else what was built.
pages=${MAN_PAGES:-$(cd "$top_builddir" && ls man/*.1)}

want=$( (echo tftap; "$tftap" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z-]*\) .*/tftap-\1/p') | sort)
have=$(for p in $pages; do basename "$p" .1; done | sort)
if [ "$want" = "$have" ]; then
    ok "a page for tftap and each command it lists ($(echo "$have" | wc -l))"
else
    not_ok "pages and commands differ: $(printf '%s\n' "$want" "$have" | sort | uniq -u | tr '\n' ' ')"
fi

for p in $pages; do
    f=$top_builddir/$p
    name=$(basename "$p" .1)
    if ! [ -s "$f" ]; then
        not_ok "$name: $f missing"
        continue
    fi
    LC_ALL=C.UTF-8 groff -ww -z -man -Tutf8 "$f" >"$tmp/groff.out" 2>&1
    if [ $? -eq 0 ] && ! [ -s "$tmp/groff.out" ]; then
        ok "$name: groff -ww says nothing"
    else
        not_ok "$name: groff -ww: $(head -5 "$tmp/groff.out")"
    fi
    LC_ALL=C.UTF-8 MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings -l "$f" >"$tmp/man.out" 2>"$tmp/man.err"
    if [ $? -eq 0 ] && ! [ -s "$tmp/man.err" ] && grep -q "^NAME" "$tmp/man.out" &&
        grep -q "^SYNOPSIS" "$tmp/man.out"; then
        ok "$name: man -l renders NAME and SYNOPSIS, no warning"
    else
        not_ok "$name: man -l: $(head -5 "$tmp/man.err")"
    fi
    # Every option its --help names is in the page's text.
    cmd=${name#tftap}
    cmd=${cmd#-}
    "$tftap" $cmd --help | grep -o -- '--[a-z][a-z-]*' | sort -u >"$tmp/opts"
    missing=
    while read -r o; do
        grep -qF -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "$f" || missing="$missing $o"
    done <"$tmp/opts"
    if [ -z "$missing" ]; then
        ok "$name: every option of --help ($(wc -l <"$tmp/opts"))"
    else
        not_ok "$name: options missing from the page:$missing"
    fi
done

# A page that warns is caught: the check above can fail.
printf '.TH X 1\n.SH NAME\nx \\- y\n.XX not a macro\n' >"$tmp/bad.1"
if [ -n "$(groff -ww -z -man -Tutf8 "$tmp/bad.1" 2>&1)" ]; then
    ok "groff -ww reports an unknown macro"
else
    not_ok "groff -ww reports nothing on a broken page"
fi

echo "man: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
