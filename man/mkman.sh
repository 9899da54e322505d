#!/bin/sh
# Writes the man page of tftap (no COMMAND) or of one command on stdout,
# from what that tftap's --help prints (man/help2man.awk).
#   man/mkman.sh TFTAP SRCDIR [COMMAND]
set -eu
tftap=$1
srcdir=$2
cmd=${3:-}
version=$("$tftap" version | sed -n '1s/^tftap \([^ ]*\).*/\1/p')
# The commands tftap --help lists, and what each does.
commands=$("$tftap" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z-]*\) .*/\1/p' | tr '\n' ' ')
if [ -z "$cmd" ]; then
    page=tftap
    summary=$("$tftap" --help | sed -n '3{s/\.$//;s/^Records/records/;p;}')
    help=$("$tftap" --help)
else
    page=tftap-$cmd
    summary=$("$tftap" --help | sed -n "s/^  $cmd  *//p")
    help=$("$tftap" "$cmd" --help)
fi
if [ -z "$summary" ]; then
    echo "mkman.sh: '$cmd' is not a command tftap --help lists" >&2
    exit 1
fi
printf '%s\n' "$help" | awk -v page="$page" -v cmd="$cmd" -v version="$version" \
    -v summary="$summary" -v commands="${commands% }" -f "$srcdir/man/help2man.awk"
