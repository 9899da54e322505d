# zsh -f zpty.zsh FNDIR HOME < CASES: each case "LINE<TAB>PATTERN": LINE typed into an
# interactive zsh (compinit, _tftap from FNDIR) with Tab Tab, and PATTERN
# must show up in what it prints. tests/completion/complete.sh runs it
# under timeout(1): a pattern that never shows up fails it.
zmodload zsh/zpty || exit 1
zpty -b z "HOME=$2 PS1='%% ' TERM=dumb zsh -f -i"
zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -d $2/zcompdump; print READY"
zpty -r z out '*READY*' || exit 1
st=0
while IFS=$'\t' read -r line pattern; do
    zpty -w -n z "$line"$'\t\t'
    if zpty -r z out "*${~pattern}*"; then
        print -r -- "ok: zsh: '$line' offers $pattern"
    else
        print -r -- "FAILED: zsh: '$line': no $pattern"; st=1
    fi
    zpty -w z $'\C-u print NEXT'
    zpty -r z out '*NEXT*'
done
zpty -d z
exit $st
