#!/usr/bin/env bash
# tftap run records the CLI's version (`tofu version -json`, a whole CLI
# start) and remembers it by the binary's identity in
# ${XDG_CACHE_HOME}/tftap/cli-versions, so that later runs of the same
# binary do not start the CLI once more for it (issue 8: the end of a run).
# Only tofu or terraform is ever asked.
. "$(dirname "$0")/lib.sh"
need_peers
w=$WORK/basic
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
cache=$XDG_CACHE_HOME/tftap/cli-versions

# A tofu that notes each time it is asked its version.
bin=$WORK/bin
mkdir -p "$bin"
cat >"$bin/tofu" <<SCRIPT
#!/bin/sh
[ "\$1" = version ] && echo asked >>"$WORK/asked"
exec "$TOFU" "\$@"
SCRIPT
chmod +x "$bin/tofu"
: >"$WORK/asked"
db=$WORK/t.db
run_plan() {
    (cd "$w" && PATH=$bin:$PATH "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color \
        >"$WORK/run.out" 2>&1)
}
recorded() { sqlite3 "$db" "SELECT cli_version FROM runs ORDER BY id DESC LIMIT 1"; }
version=$("$TOFU" version -json | jq -r .terraform_version)

run_plan
check_eq "first run exits 0" "$?" 0
check_eq "first run: the CLI asked its version once" "$(wc -l <"$WORK/asked")" 1
check_eq "first run: the version recorded" "$(recorded)" "$version"
check_eq "the memory is 0600" "$(stat -c %a "$cache" 2>&1)" 600
check_eq "in a 0700 directory" "$(stat -c %a "$(dirname "$cache")" 2>&1)" 700
check_eq "one line: the binary's identity, a tab, the version" \
    "$(grep -cE "^[0-9]+:[0-9]+:[0-9]+:[0-9]+\.[0-9]{9}:[0-9]+\.[0-9]{9}	$version\$" "$cache")" 1

run_plan
check_eq "second run exits 0" "$?" 0
check_eq "second run: the CLI not asked again" "$(wc -l <"$WORK/asked")" 1
check_eq "second run: the version recorded all the same" "$(recorded)" "$version"

# Lines that are not ours are skipped, ours still found.
long=$(head -c 3000 /dev/zero | tr '\0' x)
printf 'garbage\n%s\n1:2:3:4.000000000:5.000000000\tnot a version\n' "$long" >>"$cache"
run_plan
check_eq "with junk in the memory: not asked" "$(wc -l <"$WORK/asked")" 1
check_eq "with junk in the memory: the version recorded" "$(recorded)" "$version"

# Another binary at the same path (an upgrade) is another identity.
cp -p "$bin/tofu" "$bin/tofu.new" && mv "$bin/tofu.new" "$bin/tofu"
run_plan
check_eq "a replaced binary is asked again" "$(wc -l <"$WORK/asked")" 2
check_eq "the memory keeps one line per binary it was told of" \
    "$(grep -c "	$version\$" "$cache")" 2

# A memory that cannot be written (not a directory) costs nothing but the ask.
rm -rf "$XDG_CACHE_HOME"
printf 'a file where the directory would be\n' >"$XDG_CACHE_HOME"
run_plan
check_eq "unwritable memory: run exits 0" "$?" 0
check_eq "unwritable memory: asked" "$(wc -l <"$WORK/asked")" 3
check_eq "unwritable memory: the version recorded" "$(recorded)" "$version"
check "unwritable memory: nothing said about it" sh -c "! grep -qi 'cache\|cli-versions' '$WORK/run.out'"
rm -f "$XDG_CACHE_HOME"

# A command that is not tofu or terraform (a script that runs tofu) is
# never asked `version -json`: it would run the script once more.
cat >"$bin/runner" <<SCRIPT
#!/bin/sh
echo "\$*" >>"$WORK/runner-args"
exec tofu plan -input=false -no-color
SCRIPT
chmod +x "$bin/runner"
(cd "$w" && PATH=$bin:$PATH "$TFTAP" run --db "$db" -- runner >"$WORK/runner.out" 2>&1)
check_eq "a script: run exits 0" "$?" 0
check_eq "a script: started once, never as 'runner version -json'" "$(wc -l <"$WORK/runner-args")" 1
finish
