#!/usr/bin/env bash
# make install, as a user gets it: into a DESTDIR (staging, as packagers do)
# and into another prefix (make install prefix=DIR), the installed tftap
# alone on PATH records a real `tofu plan`, shows it, serves the web UI
# (the assets compiled in), replays the run with the tftap-replay-provider
# installed beside it in libexecdir (not the build tree's), reads its man
# pages and completes; make uninstall leaves no file behind.
# Run by scripts/test after the build: tests/install/install.sh [BUILDDIR]
top_builddir=${1:-${top_builddir:-}}
. "$(dirname "$0")/../e2e/lib.sh"
need_peers
make=${MAKE:-make}
for tool in curl man; do
    command -v $tool >/dev/null || { not_ok "$tool is needed (scripts/install-deps)"; finish; }
done

# installed ROOT: every file under ROOT, relative, sorted.
installed() { (cd "$1" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort); }

# use BINDIR LIBEXECDIR MANDIR BASHCOMP: the installed tftap at work.
use() {
    local bindir=$1 libexecdir=$2 mandir=$3 bashcomp=$4 tag=$5
    local w=$WORK/use-$tag db=$WORK/use-$tag.db
    new_dir "$top_srcdir/examples/basic" "$w"
    # PATH: the installed tftap, tofu and the providers; no build tree.
    local path=$bindir:$PEERS/bin:/usr/bin:/bin
    check_eq "$tag: tftap on PATH is the installed one" "$(PATH=$path command -v tftap)" "$bindir/tftap"
    local v
    v=$(PATH=$path tftap --version | sed -n 1p)
    case $v in "tftap $(sed -n 's/^AC_INIT(\[tftap\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")"*) ok "$tag: --version: $v" ;;
    *) not_ok "$tag: --version: $v" ;; esac
    (cd "$w" && PATH=$path tofu init -input=false -no-color >/dev/null) || not_ok "$tag: tofu init"
    (cd "$w" && PATH=$path tftap run --db "$db" -- tofu plan -input=false -no-color -out=p >"$w/plan.out" 2>&1)
    check_eq "$tag: tftap run -- tofu plan: exit status" "$?" 0
    check "$tag: tofu's own output came through" grep -q "Plan: " "$w/plan.out"
    check_eq "$tag: version --json: the schema of the database it wrote" \
        "$(PATH=$path tftap version --json | jq .database_schema)" "$(sqlite3 "$db" 'PRAGMA user_version')"
    local shown
    shown=$(PATH=$path tftap show --db "$db" last 2>&1)
    check "$tag: tftap show last reads the run" grep -q "tftest5_pet.server" <<<"$shown"

    # Serve: the first line is the URL; the page and its assets come from
    # the binary alone.
    local fifo=$WORK/$tag.serve url= pid
    mkfifo "$fifo"
    PATH=$path tftap serve --db "$db" >"$fifo" 2>"$WORK/$tag.serve.err" &
    pid=$!
    exec 9<"$fifo"
    read -r -t 30 url <&9
    # Loopback, plain HTTP, behind a token: scheme and host told apart.
    case "${url%%:*} ${url#*//}" in "http 127.0.0.1:"*token=*) ok "$tag: serve printed its URL" ;;
    *) not_ok "$tag: serve printed '$url' ($(cat "$WORK/$tag.serve.err"))" ;; esac
    if [ -n "$url" ]; then
        local base=${url%%/?token=*} token=${url##*token=}
        check "$tag: serve: the page" grep -q "<title>tftap</title>" <<<"$(curl -fsS "$url")"
        check "$tag: serve: its script" test -n "$(curl -fsS "$base/assets/app.js?token=$token")"
        check "$tag: serve: the run over the API" grep -q '"id":1' <<<"$(curl -fsS "$base/api/runs?token=$token")"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    exec 9<&-

    # Replay: tofu starts `tftap replay-provider`, which hands over to the
    # program in libexecdir. Without it there, it says where it looked.
    (cd "$w" && PATH=$path tftap replay --db "$db" "$db:1" -- tofu plan -input=false -no-color \
        >"$w/replay.out" 2>&1)
    check_eq "$tag: tftap replay -- tofu plan: exit status" "$?" 0
    check "$tag: replayed plan reads as the recorded one" grep -q "Plan: " "$w/replay.out"
    check_eq "$tag: the replay is recorded as run 2" "$(PATH=$path tftap complete runs --db "$db" | tail -n 1)" 2
    mv "$libexecdir/tftap-replay-provider" "$WORK/rp.moved"
    local err
    err=$(PATH=$path tftap replay-provider --help 2>&1 >/dev/null)
    case $err in "tftap: replay-provider: tftap-replay-provider is not installed"*) ok "$tag: without the program in libexecdir replay-provider says so" ;;
    *) not_ok "$tag: without the program: '$err'" ;; esac
    mv "$WORK/rp.moved" "$libexecdir/tftap-replay-provider"

    # man tftap-run from the installed manual (its lines justified: spaces squeezed).
    check "$tag: man tftap-run" grep -q "tftap-run - run a tofu" \
        <<<"$(MANPATH=$mandir MANWIDTH=80 man tftap-run 2>&1 | tr -s ' ')"
    check "$tag: man tftap" grep -q "^SYNOPSIS" <<<"$(MANPATH=$mandir MANWIDTH=80 man tftap 2>&1)"
    # The installed bash completion, with the installed tftap, in a directory
    # of its own (a RUN operand completes file names too: the build
    # directory's launch/ would be one).
    mkdir -p "$WORK/complete-here"
    check_eq "$tag: bash completion of 'tftap show --db DB l'" "$(cd "$WORK/complete-here" && PATH=$path bash -c '
        . "$1"; COMP_LINE="tftap show --db $2 l"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=($COMP_LINE); COMP_CWORD=4
        _tftap; echo "${COMPREPLY[*]}"' _ \
        "$bashcomp" "$db")" "last"
}

# 1. A DESTDIR under the configured prefix.
prefix=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
dest=$WORK/dest
$make -s -C "$top_builddir" install DESTDIR="$dest" >"$WORK/install.log" 2>&1
check_eq "DESTDIR: make install" "$?" 0
root=$dest$prefix
want="bin/tftap
libexec/tftap/tftap-replay-provider
share/bash-completion/completions/tftap
share/man/man1/tftap.1
share/zsh/site-functions/_tftap"
for f in $want; do
    check "DESTDIR: installed $f" test -s "$root/$f"
done
n_man=$(installed "$root" | grep -c '^share/man/man1/tftap.*\.1$')
n_cmd=$("$root/bin/tftap" --help | sed -n '/^commands:$/,/^$/p' | grep -c '^  ')
check_eq "DESTDIR: a man page for tftap and each command" "$n_man" "$((n_cmd + 1))"
use "$root/bin" "$root/libexec/tftap" "$root/share/man" "$root/share/bash-completion/completions/tftap" destdir
$make -s -C "$top_builddir" uninstall DESTDIR="$dest" >>"$WORK/install.log" 2>&1
check_eq "DESTDIR: make uninstall" "$?" 0
check_eq "DESTDIR: nothing left behind" "$(installed "$dest")" ""

# 2. Another prefix given to make install.
pfx=$WORK/prefix
$make -s -C "$top_builddir" install prefix="$pfx" >>"$WORK/install.log" 2>&1
check_eq "prefix: make install prefix=DIR" "$?" 0
use "$pfx/bin" "$pfx/libexec/tftap" "$pfx/share/man" "$pfx/share/bash-completion/completions/tftap" prefix
$make -s -C "$top_builddir" uninstall prefix="$pfx" >>"$WORK/install.log" 2>&1
check_eq "prefix: make uninstall" "$?" 0
check_eq "prefix: nothing left behind" "$(installed "$pfx")" ""
finish
