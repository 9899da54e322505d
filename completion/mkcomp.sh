#!/bin/sh
# Writes a completion script on stdout: what tftap's --help says of its
# commands and options (completion/help2comp.awk), then the shell's part.
#   completion/mkcomp.sh TFTAP SRCDIR bash|zsh
set -eu
tftap=$1
srcdir=$2
shell=$3
commands=$("$tftap" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z-]*\) .*/\1/p' | tr '\n' ' ')
commands=${commands% }
case $shell in
bash) sed -n '1,/^# @DATA@$/p' "$srcdir/completion/bash.in" ;;
zsh) sed -n '1,/^# @DATA@$/p' "$srcdir/completion/zsh.in" ;;
*) echo "mkcomp.sh: bash or zsh, not '$shell'" >&2; exit 1 ;;
esac
echo "# Generated from tftap's --help by completion/mkcomp.sh."
echo "_tftap_commands='$commands'"
if [ "$shell" = zsh ]; then
    # Each command with what it does, for zsh's menu (NAME:SUMMARY).
    printf '_tftap_described=(\n'
    "$tftap" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z-]*\)  *\(.*\)$/\1:\2/p' |
        sed "s/'/'\\\\''/g; s/^/    '/; s/\$/'/"
    printf ')\n'
fi
# Options before the command: tftap --help's synopsis and text.
"$tftap" --help | awk -v cmd=global -f "$srcdir/completion/help2comp.awk" | sed -n '1p' |
    sed 's/^_tftap_o_global=\(.*\)$/_tftap_global=\1/; s/--help/--help --version/'
for c in $commands; do
    "$tftap" "$c" --help | awk -v cmd="$c" -f "$srcdir/completion/help2comp.awk"
done
case $shell in
bash) sed -n '/^# @DATA@$/,$p' "$srcdir/completion/bash.in" | sed 1d ;;
zsh) sed -n '/^# @DATA@$/,$p' "$srcdir/completion/zsh.in" | sed 1d ;;
esac
