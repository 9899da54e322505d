#!/usr/bin/env bash
# Shell completion against a real recorded database: the bash script
# (completion/tftap) sourced into bash, asked as bash asks it (COMP_WORDS,
# COMP_CWORD) for partial words: commands, options, option values, run ids
# and 'last', addresses and types of a run; the zsh one (completion/_tftap)
# found by compinit as tftap's.
#   COMPLETION_BASH=FILE COMPLETION_ZSH=FILE TFTAP=BIN: test installed copies
. "$(dirname "$0")/../e2e/lib.sh"
need_peers
TFTAP=${COMPLETION_TFTAP:-$TFTAP}
bash_script=${COMPLETION_BASH:-$top_builddir/completion/tftap}
zsh_script=${COMPLETION_ZSH:-$top_builddir/completion/_tftap}
for f in "$bash_script" "$zsh_script"; do
    [ -s "$f" ] || { not_ok "$f made"; finish; }
done

# Two runs of examples/basic: a plan, and a plan with -out (addresses).
w=$WORK/w db=$WORK/rec.db
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null &&
    "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >/dev/null &&
    "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -out=p >/dev/null) ||
    not_ok "two plans recorded"

# The completion runs the tftap the line starts with: this one.
bin=$WORK/bin
mkdir -p "$bin"
ln -s "$TFTAP" "$bin/tftap"
export PATH=$bin:$PATH
# An empty directory but for a file and a directory, so that file names
# offered are known.
cwd=$WORK/cwd
mkdir -p "$cwd/adir"
: >"$cwd/afile"
cd "$cwd" || exit 1
unset TFTAP_DB

check_eq "complete -p" "$(bash -c '. "$1"; complete -p tftap' _ "$bash_script")" \
    "complete -F _tftap tftap"

# comp LINE: what bash offers for LINE with the cursor at its end, sorted,
# on one line. Words split as readline does (at spaces, and at '=' after
# an option).
comp() {
    bash -c '
        . "$1"
        line=$2
        read -ra COMP_WORDS <<<"$line"
        [[ $line == *" " || -z $line ]] && COMP_WORDS+=("")
        words=()
        for w in "${COMP_WORDS[@]}"; do
            if [[ $w == -*=* ]]; then
                words+=("${w%%=*}" "=")
                [[ -n ${w#*=} ]] && words+=("${w#*=}")
            else
                words+=("$w")
            fi
        done
        COMP_WORDS=("${words[@]}")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE=$line
        COMP_POINT=${#line}
        COMPREPLY=()
        _tftap tftap "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort -u | tr "\n" " "
    ' _ "$bash_script" "$1" 2>&1 | sed 's/ $//'
}
# expect LINE WANT: the candidates are exactly WANT.
expect() { check_eq "bash: '$1'" "$(comp "$1")" "$2"; }
# offers LINE WORD...: the candidates include each WORD.
offers() {
    local got line=$1 missing=
    shift
    got=" $(comp "$line") "
    for x in "$@"; do [[ $got == *" $x "* ]] || missing="$missing $x"; done
    if [ -z "$missing" ]; then ok "bash: '$line' offers $*"; else not_ok "bash: '$line' lacks$missing (got$got)"; fi
}

commands=$("$TFTAP" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z-]*\) .*/\1/p' | sort | tr '\n' ' ')
expect "tftap " "${commands% }"
expect "tftap sh" "shim show"
expect "tftap --" "--db --help --version"
expect "tftap show --" "--all --db --help --json --test"
expect "tftap diff --format " "json markdown text"
expect "tftap diff --format=m" "markdown"
expect "tftap schema diff 1 2 --format " "json markdown text"
expect "tftap export --format " "jsonl"
expect "tftap decode --input " "json msgpack"
expect "tftap wrap --cli t" "terraform tofu"
expect "tftap replay x.db --out " "adir"
expect "tftap runs --db " "adir afile"
expect "tftap prune --" "--db --dry-run --help --json --keep --older-than"
expect "tftap runs --cwd " "adir"
expect "tftap match --" "--before --config --db --help --json --plan --state"
offers "tftap runs --" --command --cwd --failed --provider --since
# Run ids and 'last' (and files: a RUN may be a bundle) from the database
# --db names, before the command or after it, or TFTAP_DB.
expect "tftap --db $db show " "1 2 adir afile last"
expect "tftap show --db=$db l" "last"
check_eq "bash: TFTAP_DB=db 'tftap calls '" "$(TFTAP_DB=$db comp "tftap calls ")" "1 2 adir afile last"
expect "tftap diff --db $db 1 " "1 2 adir afile last"
# Addresses and types of the run named before.
expect "tftap show --db $db last tftest5_p" "tftest5_pet tftest5_pet.server"
expect "tftap check --db $db 2 tftest6_" "tftest6_echo tftest6_thing tftest6_thing.config"
expect "tftap diff --db $db 1 2 tftest5_i" "tftest5_id tftest5_id.suffix"
expect "tftap calls --db $db 2 --type tftest5_t" "tftest5_trigger"
expect "tftap mock --db $db last tftest5_trigger." "tftest5_trigger.deploy"
# A RUN of another file (FILE:RUN); bash completes what follows ':'.
cp "$db" "$WORK/copy.db"
expect "tftap show $WORK/copy.db:2 tftest5_pet." "tftest5_pet.server"
expect "tftap show --db=$db 2 tftest5_pet." "tftest5_pet.server"
# The first run had no plan file: its addresses are named from the
# configuration, where it makes them certain.
expect "tftap show --db $db 1 tftest5_p" "tftest5_pet tftest5_pet.server"
offers "tftap schema --db $db " diff last 1 2
offers "tftap push --db $db " all last 1 2
offers "tftap run -- to" tofu
# Nothing where there is nothing, and never a word on the terminal.
expect "tftap --db $WORK/none.db show " "adir afile"
expect "tftap show --db $db last nothing" ""
expect "tftap replay-provider --" ""

# zsh: compinit finds _tftap for tftap, and the function parses.
if command -v zsh >/dev/null; then
    zdir=$WORK/zsh
    mkdir -p "$zdir/fn"
    cp "$zsh_script" "$zdir/fn/_tftap"
    got=$(HOME=$zdir zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -d "$2"; print -r -- ${_comps[tftap]}' _ "$zdir/fn" "$zdir/zcompdump" 2>&1)
    check_eq "zsh: compinit binds tftap to _tftap" "$got" "_tftap"
    check "zsh: _tftap parses" zsh -n "$zsh_script"
    # Typed into an interactive zsh, Tab Tab lists what it should.
    printf '%s\t%s\n' \
        "tftap sh" "shim" \
        "tftap s" "browse the recorded runs" \
        "tftap diff --format " "markdown" \
        "tftap wrap --cli=t" "terraform" \
        "tftap --db $db show " "last" \
        "tftap show --db $db last tftest5_p" "tftest5_pet.server" \
        "tftap calls --db=$db 2 --type tftest6_" "tftest6_thing" \
        "tftap diff --db $db 1 2 tftest5_i" "tftest5_id.suffix" \
        "tftap run -- to" "tofu" >"$zdir/cases"
    TERM=dumb timeout 60 zsh -f "$top_srcdir/tests/completion/zpty.zsh" "$zdir/fn" "$zdir" \
        <"$zdir/cases" >"$zdir/out" 2>&1
    zst=$?
    cat "$zdir/out"
    e2e_passed=$((e2e_passed + $(grep -c '^ok: ' "$zdir/out")))
    e2e_failed=$((e2e_failed + $(grep -c '^FAILED: ' "$zdir/out")))
    [ $zst -eq 0 ] || not_ok "zsh: every line offered what it should (status $zst)"
else
    not_ok "zsh is needed (scripts/install-deps)"
fi
finish
