#!/usr/bin/env bash
# `tftap show last` against what tofu itself printed for the same plan: a
# create, an update in place (every value type, nested blocks, unknown and
# sensitive values), a replacement and a destroy. Per resource address, the
# resource's action marker and every named line (attributes, nested
# attributes, blocks, map keys) with its marker, its depth and whether it
# says "(known after apply)", "(sensitive value)" or "# forces replacement"
# must agree, and each body must read line for line as tofu's (but for the
# name of a change tftap could not tie to an address).
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
w=$WORK/w db=$WORK/tftap.db
mkdir -p "$w"
cp "$top_srcdir/tests/e2e/configs/show/v1.tf.txt" "$w/main.tf"
(cd "$w" && tofu init -input=false -no-color >/dev/null && tofu apply -auto-approve -input=false \
    -no-color >/dev/null) || not_ok "v1 applied"
cp "$top_srcdir/tests/e2e/configs/show/v2.tf.txt" "$w/main.tf"

# blocks FILE DIR: one file per resource in DIR, named by address, holding
# its normalized lines, sorted.
blocks() {
    rm -rf "$2"
    mkdir -p "$2"
    awk -v dir="$2" '
    function flush() { if (addr != "") { close(dir "/" addr); close(dir "/" addr ".body") } }
    /^  # [a-z0-9_]+ \(call [0-9]+, address unknown\)/ {
        flush(); addr = $2 ".?"; inside = 1; next
    }
    /^  # [^ (]+ / {
        flush(); addr = $2; inside = 1; next
    }
    inside && /^    }$/ { flush(); inside = 0; addr = ""; next }
    !inside { next }
    # The body as it reads, but for the resource line (an unmatched
    # change has no name) and comments above it.
    !/^  # / && !/^(-\/\+|<=| *[+~-]) (resource|data) "/ { print > (dir "/" addr ".body") }
    {
        line = $0
        match(line, /^ */); depth = RLENGTH
        sub(/^ */, "", line)
        if (line ~ /^#/ || line == "") next
        if (line ~ /^(-\/\+|<=|[+~-]) (resource|data) "/) {
            split(line, f, " "); print "resource " f[1] > (dir "/" addr); next
        }
        mark = " "
        if (line ~ /^[+~-] /) { mark = substr(line, 1, 1); line = substr(line, 3) }
        n = split(line, f, " ")
        if (n < 2 || f[1] ~ /,$/) next
        if (f[2] != "=" && f[2] != "{" && !(f[2] ~ /^"/ && f[3] == "{")) next
        flags = ""
        if (index($0, "(known after apply")) flags = flags " known-after-apply"
        if (index($0, "(sensitive value)")) flags = flags " sensitive"
        if (index($0, "# forces replacement")) flags = flags " forces-replacement"
        print depth " " mark " " f[1] (f[2] == "{" || f[3] == "{" ? " {" : " =") flags > (dir "/" addr)
    }
    END { flush() }' "$1"
    for f in "$2"/*; do case $f in *.body) ;; *) [ -e "$f" ] && sort -o "$f" "$f" ;; esac; done
}

# compare NAME TOFU_TEXT SHOW_TEXT [ADDRESS=SHOWN_AS...]: per address.
compare() {
    local name=$1 tofu_txt=$2 show_txt=$3
    shift 3
    blocks "$tofu_txt" "$WORK/$name.tofu"
    blocks "$show_txt" "$WORK/$name.show"
    local a as n=0
    for f in "$WORK/$name.tofu"/*; do
        case $f in *.body) continue ;; esac
        a=$(basename "$f")
        as=$a
        for m in "$@"; do [ "${m%%=*}" = "$a" ] && as=${m#*=}; done
        n=$((n + 1))
        if [ -f "$WORK/$name.show/$as" ] && cmp -s "$f" "$WORK/$name.show/$as"; then
            ok "$name: $a agrees with tofu ($(wc -l <"$f") lines)"
        else
            not_ok "$name: $a differs (< tofu, > tftap show as $as)"
            diff "$f" "$WORK/$name.show/$as" 2>&1 | head -20
        fi
        if cmp -s "$f.body" "$WORK/$name.show/$as.body"; then
            ok "$name: $a reads line for line as tofu's"
        else
            not_ok "$name: $a does not read as tofu's (< tofu, > tftap show)"
            diff "$f.body" "$WORK/$name.show/$as.body" 2>&1 | head -20
        fi
    done
    check_eq "$name: tofu and tftap show the same resources" \
        "$(ls "$WORK/$name.show" | grep -vc '\.body$')" "$n"
    check "$name: tofu planned the four kinds of change" \
        test "$(cat "$WORK/$name.tofu"/* | grep -c '^resource ')" = 4
}

# A plan not saved to a file: the new object is named by the plan made
# again offline (docs/database.md).
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color >"$WORK/plan.txt" \
    2>"$WORK/plan.err")
check_eq "plan: exit code" "$?" 0
"$TFTAP" show --db "$db" last >"$WORK/show.txt"
check_eq "plan: show exit code" "$?" 0
compare plan "$WORK/plan.txt" "$WORK/show.txt"
# With a -state of its own it is not made again: the new object cannot be
# named, and says so.
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -state=terraform.tfstate \
    >"$WORK/plan-s.txt" 2>"$WORK/plan-s.err")
check_eq "plan -state: exit code" "$?" 0
"$TFTAP" show --db "$db" last >"$WORK/show-s.txt"
compare plan-s "$WORK/plan-s.txt" "$WORK/show-s.txt" "tftest6_thing.created=tftest6_thing.?"
check "plan -state: the new object's change says why it has no address" \
    grep -q "not matched to an address: a new tftest6_thing object: only a saved plan" "$WORK/show-s.txt"
check "plan: no secret in the output" sh -c "! grep -q -e '\"s2\"' -e new-secret -e '\"hidden\"' '$WORK/show.txt'"
# The CLI's version is asked for after the command: it is in the record
# once `tftap run` returns.
check_eq "plan: the run records the CLI's version" \
    "$("$TFTAP" runs --db "$db" --json | jq -r '.[-1].cli_version')" \
    "$(tofu version -json | jq -r .terraform_version)"

# The same plan saved to a file: every change named.
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -out=tfplan \
    >"$WORK/plan2.txt" 2>"$WORK/plan2.err")
check_eq "plan -out: exit code" "$?" 0
"$TFTAP" show --db "$db" last >"$WORK/show2.txt"
compare "plan-out" "$WORK/plan2.txt" "$WORK/show2.txt"
check "plan -out: every change has its address" sh -c "! grep -q 'address unknown' '$WORK/show2.txt'"
finish
