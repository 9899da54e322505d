#!/bin/sh
# Every command's options in every form: "--opt value", "--opt=value", the
# global "--db" before the command, options after operands; usage errors as
# one line with a hint, exit 2; --help on stdout, exit 0. Against a database
# the recorder test wrote (no peers needed).
set -u
: "${top_builddir:=.}"
TFTAP="$top_builddir/tftap"
work=$(mktemp -d "${TMPDIR:-/tmp}/tftap-options-XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

TFTAP_TEST_KEEP=1 TMPDIR="$work" "$top_builddir/tests/recorder/test_recorder" >"$work/rec.log" 2>&1 ||
    { echo "test_recorder failed"; cat "$work/rec.log"; exit 1; }
db=$(ls "$work"/tftap-test-rec-*/rec/tftap.db)
unset TFTAP_DB
cd "$work" || exit 1 # no ./.tftap here: only --db finds the database
printf '"hello"' >"$work/value.json"

# same NAME "ARGS A" "ARGS B": both give the same stdout, stderr and exit code,
# and exit 0 (word splitting on purpose: the table below holds no spaces
# inside an argument).
same() {
    name=$1
    # shellcheck disable=SC2086
    "$TFTAP" $2 >"$work/a.out" 2>"$work/a.err"
    ra=$?
    # shellcheck disable=SC2086
    "$TFTAP" $3 >"$work/b.out" 2>"$work/b.err"
    rb=$?
    if [ "$ra" -ne 0 ]; then
        fail "$name: '$2' exits $ra: $(head -1 "$work/a.err")"
    elif [ "$ra" -ne "$rb" ] || ! cmp -s "$work/a.out" "$work/b.out" ||
        ! cmp -s "$work/a.err" "$work/b.err"; then
        fail "$name: '$2' and '$3' differ (exit $ra vs $rb)"
    elif [ ! -s "$work/a.out" ]; then
        fail "$name: '$2' printed nothing"
    else
        ok
    fi
}

# Each command's options, value forms against each other.
while IFS='|' read -r name a b; do
    [ -n "$name" ] || continue
    same "$name" "$a" "$b"
done <<EOF
runs --db|runs --db $db|runs --db=$db
runs global --db|--db $db runs|runs --db $db
runs global --db=|--db=$db runs --json|runs --json --db $db
runs --limit|runs --db $db --limit 2|runs --db=$db --limit=2
calls --db|calls 5 --db $db|calls --db=$db 5
mock --db|mock 5 --db $db|mock --db=$db 5
mock global --db|--db $db mock 5 test_thing|mock 5 test_thing --db $db
mock ADDRESS|mock 5 test_thing.web --db $db|mock --db $db 5 test_thing.web[0]
calls global --db|--db $db calls 5|calls 5 --db=$db
calls --method|calls 5 --db $db --method PlanResourceChange|calls --method=PlanResourceChange 5 --db $db
calls --method any case|calls 5 --db $db --method PlanResourceChange|calls 5 --db $db --method planresourcechange
calls --method full path|calls 5 --db $db --method /tfplugin5.Provider/PlanResourceChange|calls 5 --db $db --method=/TFPLUGIN5.provider/planresourcechange
calls --type|calls 5 --db $db --type test_thing|calls 5 --db $db --type=test_thing
calls --json|calls 5 --db $db --json|calls --json 5 --db=$db
show --db|show 5 --db $db|show --db=$db 5
show global --db|--db $db show 5 test_thing.web|show 5 test_thing.web --db $db
show --all|show 5 --db $db --all|show --all 5 --db=$db
show --json|show 5 --db $db --json|show --json --db $db 5
export --format|export 5 --db $db --format jsonl|export 5 --db=$db --format=jsonl
export global --db|--db $db export 5|export 5 --db $db
bundle --output|bundle 5 --db $db --output $work/b1.tftap --force|bundle 5 --db=$db --output=$work/b1.tftap --force
bundle -o|bundle 5 --db $db -o $work/b1.tftap --force --json|bundle --force --json -o $work/b1.tftap --db $db 5
calls SOURCE|calls $work/b1.tftap|calls $work/b1.tftap:5
push --to|push 5 --db $db --to $work/p1.db|push 5 --db=$db --to=$work/p2.db
push global --db|--db $db push 5 --to $work/p3.db|push --to $work/p4.db 5 --db $db
show SOURCE global --db|--db $db show $work/b1.tftap|show $work/b1.tftap:last
decode --type|decode --type "string" --input json $work/value.json|decode --type="string" --input=json $work/value.json
decode --json|decode --type "string" --json $work/value.json|decode --json --type="string" $work/value.json
EOF

# --limit N keeps the newest N runs, oldest first.
ids=$("$TFTAP" runs --db "$db" --limit 2 | awk 'NR > 1 { print $1 }' | tr '\n' ' ')
all=$("$TFTAP" runs --db "$db" | awk 'NR > 1 { print $1 }' | tail -2 | tr '\n' ' ')
if [ -n "$ids" ] && [ "$ids" = "$all" ]; then ok; else fail "runs --limit 2: '$ids', expected '$all'"; fi
# A command's own --db after a global one wins.
if "$TFTAP" --db "$work/nowhere.db" runs --db "$db" >/dev/null 2>&1; then ok; else
    fail "the command's --db after a global --db is the one used"
fi

# run and wrap: both forms of every value option. run records a run in the
# database --db names (and says the program is not tofu); wrap finds no
# provider in an empty directory, naming the same directory either way.
i=0
for form in "--db X" "--db=X"; do
    i=$((i + 1))
    rdb="$work/run-$i.db"
    # shellcheck disable=SC2086
    "$TFTAP" run $(echo "$form" | sed "s|X|$rdb|") --no-match -- true 2>"$work/run.err"
    rc=$?
    n=$("$TFTAP" runs --db "$rdb" 2>/dev/null | grep -c ' true$')
    if [ "$rc" -eq 0 ] && [ "$n" = 1 ]; then ok; else fail "run $form: exit $rc, $n runs recorded"; fi
    if grep -q "^tftap: note: 'true' is neither tofu nor terraform" "$work/run.err"; then ok; else
        fail "run $form: no note that 'true' is not tofu: $(cat "$work/run.err")"
    fi
done
"$TFTAP" --db "$work/global-run.db" run -- true 2>/dev/null
if [ "$("$TFTAP" runs --db "$work/global-run.db" 2>/dev/null | grep -c ' true$')" = 1 ]; then ok; else
    fail "global --db before run"
fi
mkdir -p "$work/empty"
for form in "--out $work/empty/s1 --cli terraform --db $work/w.db" \
    "--out=$work/empty/s1 --cli=terraform --db=$work/w.db"; do
    # shellcheck disable=SC2086
    (cd "$work/empty" && "$TFTAP" wrap $form >/dev/null 2>"$work/wrap.err")
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "no installed providers found for $work/empty" "$work/wrap.err"; then
        ok
    else
        fail "wrap $form: exit $rc, $(cat "$work/wrap.err")"
    fi
done

# replay --out: both forms of every value option write the same files and
# print the same line (the recorder test's run 5 has one provider).
for form in "--out $work/rp --run 5 --ignore .id --cli terraform --db $work/r.db" \
    "--out=$work/rp --run=5 --ignore=.id --cli=terraform --db=$work/r.db"; do
    # shellcheck disable=SC2086
    "$TFTAP" replay "$db" $form >"$work/rp.out" 2>"$work/rp.err"
    rc=$?
    if [ "$rc" -eq 0 ] && grep -qx "export TF_CLI_CONFIG_FILE='$work/rp/tftap.tfrc'" "$work/rp.out" &&
        grep -q "replay-provider --db '$db' --run 5 --provider 'registry.opentofu.org/test/thing' --ignore '.id'" \
            "$work/rp/replay/p0/terraform-provider-thing"; then
        ok
    else
        fail "replay $form: exit $rc, $(cat "$work/rp.err")"
    fi
    rm -rf "$work/rp"
done
"$TFTAP" --db "$work/r.db" replay "$db:5" --out "$work/rp" >/dev/null 2>&1
if grep -q "\"db\": \"$work/r.db\"" "$work/rp/p0/tftap-shim.json"; then ok; else
    fail "global --db before replay names where the replay is recorded"
fi

# Usage errors: one line naming the problem and where to look, exit 2.
while IFS='|' read -r args want; do
    [ -n "$args" ] || continue
    # shellcheck disable=SC2086
    "$TFTAP" $args >"$work/u.out" 2>"$work/u.err"
    rc=$?
    got=$(cat "$work/u.err")
    if [ "$rc" -eq 2 ] && [ "$got" = "$want" ] && [ ! -s "$work/u.out" ]; then ok; else
        fail "'tftap $args': exit $rc, '$got', expected '$want'"
    fi
done <<EOF
runs --bogus|tftap: unknown option '--bogus' (see 'tftap runs --help')
calls 5 --x|tftap: unknown option '--x' (see 'tftap calls --help')
show 5 --x=1|tftap: unknown option '--x' (see 'tftap show --help')
export 5 --bogus|tftap: unknown option '--bogus' (see 'tftap export --help')
run --bogus -- true|tftap: unknown option '--bogus' (see 'tftap run --help')
wrap --bogus|tftap: unknown option '--bogus' (see 'tftap wrap --help')
decode --bogus|tftap: unknown option '--bogus' (see 'tftap decode --help')
calls 5 --method|tftap: option '--method' needs a value (see 'tftap calls --help')
run --db|tftap: option '--db' needs a value (see 'tftap run --help')
wrap --out|tftap: option '--out' needs a value (see 'tftap wrap --help')
runs --json=yes|tftap: option '--json' takes no value (see 'tftap runs --help')
runs --limit 0|tftap: --limit must be a positive number, not '0' (see 'tftap runs --help')
calls|tftap: calls needs RUN (a run id or 'last') (see 'tftap calls --help')
show 5 a b|tftap: unexpected argument 'b' (see 'tftap show --help')
mock 5 a b|tftap: unexpected argument 'b' (see 'tftap mock --help')
mock|tftap: mock needs RUN (see 'tftap mock --help')
mock 5 --x=1|tftap: unknown option '--x' (see 'tftap mock --help')
mock 5 -o|tftap: option '-o' needs a value (see 'tftap mock --help')
mock 5 --output|tftap: option '--output' needs a value (see 'tftap mock --help')
export 5 --format csv|tftap: unknown export format 'csv' (only jsonl) (see 'tftap export --help')
run|tftap: no command given (tftap run -- tofu ARGS...) (see 'tftap run --help')
wrap|tftap: --out DIR is required (see 'tftap wrap --help')
wrap --out x --cli bash|tftap: --cli must be tofu or terraform, not 'bash' (see 'tftap wrap --help')
bundle 5 --db $db|tftap: bundle needs -o FILE (see 'tftap bundle --help')
bundle|tftap: bundle needs RUN (see 'tftap bundle --help')
bundle 5 --bogus|tftap: unknown option '--bogus' (see 'tftap bundle --help')
push|tftap: push needs RUN (a run id, 'last', a FILE, FILE:RUN) or 'all' (see 'tftap push --help')
push 5 --db $db|tftap: push needs --to URL (the record to push into) (see 'tftap push --help')
push 5 --to|tftap: option '--to' needs a value (see 'tftap push --help')
push all 5 --to x.db|tftap: 'all' is every run: name no other RUN with it (see 'tftap push --help')
calls nosuch|tftap: RUN must be a run id, 'last', or a bundle or database file (FILE or FILE:RUN), not 'nosuch'
decode|tftap: give --type or --schema (one of them) (see 'tftap decode --help')
replay --bogus x.db -- true|tftap: unknown option '--bogus' (see 'tftap replay --help')
replay --run|tftap: option '--run' needs a value (see 'tftap replay --help')
replay -- tofu plan|tftap: no SOURCE given (a database or bundle) (see 'tftap replay --help')
replay x.db tofu plan|tftap: unexpected argument 'tofu' (the command goes after --) (see 'tftap replay --help')
replay x.db --dir d -- tofu plan|tftap: --dir DIR is where a step's directory is laid out: give no command and no --out (see 'tftap replay --help')
replay x.db --dir d --out o|tftap: --dir DIR is where a step's directory is laid out: give no command and no --out (see 'tftap replay --help')
replay x.db --out d -- tofu plan|tftap: --out DIR writes files for later commands: give no command (see 'tftap replay --help')
replay x.db --cli tofu -- tofu plan|tftap: --cli is for --out or a step's replay: the command names its CLI (see 'tftap replay --help')
replay x.db --out d --cli bash|tftap: --cli must be tofu or terraform, not 'bash' (see 'tftap replay --help')
replay x.db:3 --run 4 --out d|tftap: two runs given: x.db:3 and --run 4 (see 'tftap replay --help')
replay-provider --bogus|tftap: unknown option '--bogus' (see 'tftap replay-provider --help')
replay-provider|tftap: --provider ADDR is required (see 'tftap replay-provider --help')
replay-provider --provider|tftap: option '--provider' needs a value (see 'tftap replay-provider --help')
replay-provider --provider p x|tftap: unexpected argument 'x' (see 'tftap replay-provider --help')
--bogus runs|tftap: unknown option '--bogus' (see 'tftap --help')
--db|tftap: option '--db' needs a value (see 'tftap --help')
nosuch|tftap: unknown command 'nosuch' (see 'tftap --help')
--db x decode --type "string"|tftap: 'decode' reads no database: --db does not apply (see 'tftap decode --help')
EOF
# "tftap" alone.
"$TFTAP" >"$work/u.out" 2>"$work/u.err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(cat "$work/u.err")" = "tftap: no command given (see 'tftap --help')" ]; then ok; else
    fail "'tftap' alone: exit $rc, $(cat "$work/u.err")"
fi

# mock -o FILE, --output FILE and --output=FILE write what stdout gets.
"$TFTAP" mock 5 --db "$db" >"$work/m.out"
n=0
for form in "-o" "--output" "--output="; do
    n=$((n + 1))
    f=$work/m$n.hcl
    case $form in
    *=) set -- "$form$f" ;;
    *) set -- "$form" "$f" ;;
    esac
    if "$TFTAP" mock 5 --db "$db" "$@" >"$work/m.stdout" && [ ! -s "$work/m.stdout" ] &&
        [ -s "$work/m.out" ] && cmp -s "$work/m.out" "$f"; then ok; else
        fail "mock $form FILE"
    fi
done

# --help: on stdout, exit 0, for every command and the program.
for c in runs calls show export run wrap replay replay-provider decode shim mock bundle push check diff serve; do
    "$TFTAP" "$c" --help >"$work/h.out" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && head -1 "$work/h.out" | grep -q "^usage: tftap $c"; then ok; else
        fail "$c --help: exit $rc"
    fi
done
for h in --help help; do
    if "$TFTAP" $h | grep -q '^usage: tftap \[--db PATH\] COMMAND'; then ok; else fail "tftap $h"; fi
done

# replay-provider is hidden: what tofu starts, never listed.
if "$TFTAP" --help | grep -q 'replay-provider'; then fail "tftap --help lists replay-provider"; else ok; fi
# replay-provider's value options in both forms, global --db too (it runs
# only under go-plugin's cookie; the provider is not in the run).
cookie=TF_PLUGIN_MAGIC_COOKIE=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2
for form in "--db $db --run 5 --provider x/y" "--db=$db --run=5 --provider=x/y" \
    "--provider x/y --run 5 --ignore .id --ignore=.x --db $db"; do
    # shellcheck disable=SC2086
    env "$cookie" "$TFTAP" replay-provider $form >"$work/rp.out" 2>"$work/rp.err"
    rc=$?
    if [ "$rc" -eq 1 ] && [ "$(cat "$work/rp.err")" = "tftap replay-provider: run 5 recorded no schema for provider x/y" ]; then
        ok
    else
        fail "replay-provider $form: exit $rc, $(cat "$work/rp.err")"
    fi
done
env "$cookie" "$TFTAP" --db "$db" replay-provider --run 5 --provider x/y >/dev/null 2>"$work/rp.err"
if grep -q "recorded no schema for provider x/y" "$work/rp.err"; then ok; else
    fail "global --db before replay-provider: $(cat "$work/rp.err")"
fi

# A 120 KB argument is cut in the one line that names it.
long=$(head -c 120000 /dev/zero | tr '\0' a)
"$TFTAP" show "$long" --db "$db" >/dev/null 2>"$work/e.err"
if [ "$(wc -l <"$work/e.err")" -eq 1 ] && [ "$(wc -c <"$work/e.err")" -lt 1100 ] &&
    grep -q 'bytes cut)' "$work/e.err"; then ok; else
    fail "a long argument: $(wc -c <"$work/e.err") bytes of message"
fi

echo "options.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
