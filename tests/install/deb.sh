#!/usr/bin/env bash
# The Debian package built from the tree (dpkg-buildpackage -b, in a copy
# of the tree so that nothing is written beside it), checked by lintian as
# Debian checks its own packages (no error, no warning); as root, installed
# with dpkg -i, used
# (a recorded tofu plan, show, replay, serve, man, completion) and removed,
# leaving none of its files.
# Run by scripts/test: tests/install/deb.sh
. "$(dirname "$0")/../e2e/lib.sh"
need_peers
for tool in dpkg-buildpackage lintian git curl; do
    command -v $tool >/dev/null || { not_ok "$tool is needed (scripts/install-deps)"; finish; }
done
version=$(sed -n 's/^AC_INIT(\[tftap\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
check_eq "debian/changelog is at configure.ac's version" \
    "$(cd "$top_srcdir" && dpkg-parsechangelog -S Version)" "$version"

# The tree as git sees it (what is committed, and what would be), with its
# git description, as `make dist` would carry it.
src=$WORK/src/tftap-$version
mkdir -p "$src"
(cd "$top_srcdir" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"
git -C "$top_srcdir" describe --tags --always --dirty >"$src/.git-version"
arch=$(dpkg --print-architecture)
deb=$WORK/src/tftap_${version}_$arch.deb
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=${JOBS:-2}" dpkg-buildpackage -b -uc -us \
    >"$WORK/build.log" 2>&1)
st=$?
[ $st -eq 0 ] || tail -30 "$WORK/build.log"
check_eq "dpkg-buildpackage -b" "$st" 0
[ -f "$deb" ] || { not_ok "$deb built"; finish; }

lintian --fail-on error,warning "$WORK/src/tftap_${version}_$arch.changes" >"$WORK/lintian.log" 2>&1
st=$?
cat "$WORK/lintian.log"
check_eq "lintian: no error or warning" "$st" 0

# What the package declares against what tftap says when a library it
# loads at run time is missing: every "(Debian: PKG)" is recommended or
# suggested.
fields=" $(dpkg-deb -f "$deb" Recommends Suggests | sed 's/^[A-Za-z]*: //' | tr ',\n' '  ') "
named=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/tftap | strings |
    sed -n 's/.*(Debian: \([a-z0-9.+-]*\)).*/\1/p' | sort -u)
check "tftap names the packages of the libraries it loads" test -n "$named"
for p in $named; do
    case $fields in *" $p "*) ok "$p is recommended or suggested" ;;
    *) not_ok "$p (named by tftap) is neither recommended nor suggested:$fields" ;; esac
done
# tftap serve is a part of using tftap, not an extra.
check "libmicrohttpd12 is recommended" grep -qw libmicrohttpd12 <<<"$(dpkg-deb -f "$deb" Recommends)"

if [ "$(id -u)" -ne 0 ]; then
    echo "deb: not root: dpkg -i, use and removal skipped"
    e2e_skipped=$((e2e_skipped + 1))
    finish
fi
if dpkg-query -W -f='${Status}' tftap 2>/dev/null | grep -q "install ok installed"; then
    not_ok "a tftap package is installed already: not replacing it"
    finish
fi
dpkg -i "$deb" >"$WORK/dpkg.log" 2>&1
st=$?
[ $st -eq 0 ] || cat "$WORK/dpkg.log"
check_eq "dpkg -i" "$st" 0
files=$(dpkg -L tftap | while read -r f; do [ -f "$f" ] && echo "$f"; done)
path=/usr/bin:/bin:$PEERS/bin
check_eq "tftap on PATH is the package's" "$(PATH=$path command -v tftap)" /usr/bin/tftap
check "tftap --version: $version" grep -q "^tftap $version (git " <<<"$(/usr/bin/tftap --version)"
w=$WORK/w db=$WORK/pkg.db
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && PATH=$path tofu init -input=false -no-color >/dev/null &&
    PATH=$path tftap run --db "$db" -- tofu plan -input=false -no-color -out=p >"$w/plan.out" 2>&1)
check_eq "the installed tftap records tofu plan" "$?" 0
check "tofu's output came through" grep -q "Plan: " "$w/plan.out"
check "tftap show last" grep -q "tftest5_pet.server" <<<"$(PATH=$path tftap show --db "$db" last 2>&1)"
(cd "$w" && PATH=$path tftap replay --db "$db" "$db:1" -- tofu plan -input=false -no-color \
    >"$w/replay.out" 2>&1)
check_eq "tftap replay with /usr/libexec/tftap/tftap-replay-provider" "$?" 0
# tftap serve, its pages compiled in, libmicrohttpd loaded from the system.
fifo=$WORK/serve.fifo
mkfifo "$fifo"
PATH=$path tftap serve --db "$db" >"$fifo" 2>"$WORK/serve.err" &
spid=$!
exec 9<"$fifo"
url=
read -r -t 30 url <&9
# Served on loopback, plain HTTP, behind a token: scheme and host told apart.
case "${url%%:*} ${url#*//}" in "http 127.0.0.1:"*token=*)
    check "serve: the page" grep -q "<title>tftap</title>" <<<"$(curl -fsS "$url")"
    check "serve: the runs over the API" grep -q '"id":2' \
        <<<"$(curl -fsS "${url%%/?token=*}/api/runs?token=${url##*token=}")" ;;
*) not_ok "serve printed '$url' ($(cat "$WORK/serve.err"))" ;;
esac
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
exec 9<&-
check_eq "man -w tftap-run" "$(man -w tftap-run 2>&1)" /usr/share/man/man1/tftap-run.1.gz
check "man tftap-show" grep -q "tftap-show - " <<<"$(MANWIDTH=80 man tftap-show 2>&1)"
check_eq "bash completion from its standard place" "$(PATH=$path bash -c '
    . /usr/share/bash-completion/completions/tftap; complete -p tftap
    COMP_LINE="tftap show --db $1 1 tftest5_p"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=($COMP_LINE); COMP_CWORD=5; _tftap; echo "${COMPREPLY[*]}"' \
    _ "$db")" "complete -F _tftap tftap
tftest5_pet tftest5_pet.server"
check "zsh completion in vendor-completions" test -s /usr/share/zsh/vendor-completions/_tftap

dpkg -r tftap >>"$WORK/dpkg.log" 2>&1
check_eq "dpkg -r" "$?" 0
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done)
check_eq "removed: none of its files left" "$left" ""
finish
