#!/usr/bin/env bash
# tftap serve in a real browser: headless chromium, driven over the DevTools
# protocol by tests/web/browser.js (puppeteer-core, installed from the npm
# registry into $TFTAP_CACHE/node on first use; chromium is Debian's, never
# downloaded). The runs are real: tofu applies through `tftap run` with the
# project's providers (one creating resources, one whose provider panics),
# one run live while the browser watches, and a 50,000-call bench run for
# scale. Screenshots: $top_builddir/tests/web/screenshots/.
. "$(dirname "$0")/../e2e/lib.sh"
need_peers
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
if ! [ -x "$CHROMIUM" ] || ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    cannot_run "chromium, node and npm are needed (scripts/install-deps)"
fi
PUPPETEER=24.10.0
NODE_DIR=${TFTAP_CACHE:-$HOME/.cache/tftap}/node
if [ "$(jq -r .version "$NODE_DIR/node_modules/puppeteer-core/package.json" 2>/dev/null)" != "$PUPPETEER" ]; then
    mkdir -p "$NODE_DIR"
    (cd "$NODE_DIR" && PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --silent \
        "puppeteer-core@$PUPPETEER" >"$WORK/npm.log" 2>&1) || {
        cat "$WORK/npm.log"
        not_ok "puppeteer-core $PUPPETEER installed into $NODE_DIR"
        finish
    }
fi
db=$WORK/tftap.db
shots=$top_builddir/tests/web/screenshots
rm -rf "$shots"
mkdir -p "$shots"
q() { sqlite3 "$db" "$1"; }

# Run R: an apply whose result core rejects (tests/peers/tftest/misbehave.go,
# rule apply_changed: the new state differs from the plan): tofu exits 1
# with "Provider produced inconsistent result after apply", and no call
# failed at the protocol level: only the verdict says why.
m=$WORK/m
mkdir -p "$m"
misbehave() { # RULE VALUE
    cat >"$m/main.tf" <<TF
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "note" {
  default = ""
}
resource "tftest6_misbehave" "x" {
  rule   = "$1"
  legacy = false
  value  = "$2"
  list   = ["a"]
  set    = ["a"]
  item {
    name = "n"
  }
}
TF
}
misbehave none a
(cd "$m" && tofu init -input=false -no-color >/dev/null &&
    "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color >"$WORK/m1.out" 2>&1)
check_eq "run R0: the first apply succeeds" "$?" 0
run_r0=$(last_run "$db")
# (runs A and B come between: the diff base of R is R0, the previous
# run of the same command in the same directory, not the run before it)
# Run A: an apply creating every kind of value (sensitive, numbers, blocks).
a=$WORK/a
mkdir -p "$a"
cp "$top_srcdir/tests/e2e/configs/show/v1.tf.txt" "$a/main.tf"
(cd "$a" && tofu init -input=false -no-color >/dev/null &&
    "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color >"$WORK/a.out" 2>&1)
check_eq "run A: apply through tftap" "$?" 0
run_a=$(last_run "$db")
# Run B: a provider panicking in its apply.
b=$WORK/b
new_dir "$top_srcdir/tests/e2e/configs/crash" "$b"
(cd "$b" && tofu init -input=false -no-color >/dev/null &&
    "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color -var fail=panic \
        >"$WORK/b.out" 2>&1)
check_eq "run B: the apply fails" "$?" 1
run_b=$(last_run "$db")
# Run R: the same apply, now rejected.
misbehave apply_changed b
(cd "$m" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    -var "note=it's a \$HOME" >"$WORK/m2.out" 2>&1)
check_eq "run R: core rejects the apply: exit 1" "$?" 1
grep -q 'Provider produced inconsistent result after apply' "$WORK/m2.out" || not_ok "run R: tofu says why"
run_r=$(last_run "$db")
"$TFTAP" show --db "$db" "$run_r" --json | jq -c '.verdict' >"$WORK/r-verdict.json"
# Run C: one call holding what only exact rendering shows right (numbers
# beyond a double, a refined unknown), written the way the recorder does.
q "INSERT INTO runs (command, args, started_us, ended_us, exit_code) VALUES ('synthetic', '[]', 1, 2, 0);
   INSERT INTO processes (run_id, provider, protocol, pid, started_us)
     VALUES ((SELECT max(id) FROM runs), 'registry.opentofu.org/tftap/synthetic', 6, 1, 1);
   INSERT INTO calls (run_id, process_id, call_seq, method, rpc, started_us, ended_us, status_code,
     type_name, request_json, response_json)
     VALUES ((SELECT max(id) FROM runs), (SELECT max(id) FROM processes), 1,
     '/tfplugin6.Provider/PlanResourceChange', 'PlanResourceChange', 1, 2, 0, 'synthetic_thing',
     '{\"type_name\":\"synthetic_thing\",\"config\":{\"big\":123456789012345678901234567890,\"precise\":0.1000000000000000055511151231257827,\"huge\":-1e+400,\"ami\":{\"\$unknown\":{\"null\":false,\"prefix\":\"ami-\"}}}}',
     '{\"planned_state\":null,\"diagnostics\":[]}');"
run_c=$(last_run "$db")
call_c=$(q "SELECT max(id) FROM calls")

# The live run: an apply that hangs in its provider until interrupted.
h=$WORK/h
new_dir "$top_srcdir/tests/e2e/configs/hang" "$h"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "init (live)"
cat >"$WORK/live.sh" <<LIVE
#!/usr/bin/env bash
# start: begin the hanging apply and wait until it hangs; stop: interrupt it.
set -u
state=$WORK/live.json
case \$1 in
start)
    rm -f "$WORK/hanging"
    (cd "$h" && TFTEST_HANG_MARKER="$WORK/hanging" exec "$TFTAP" run --db "$db" -- tofu apply \
        -auto-approve -input=false -no-color >"$WORK/live.out" 2>&1) &
    echo \$! >"$WORK/live.pid"
    n=600
    while ! [ -e "$WORK/hanging" ] && [ \$n -gt 0 ]; do sleep 0.1; n=\$((n - 1)); done
    echo "{\"run\": \$(sqlite3 "$db" 'SELECT max(id) FROM runs')}" >"\$state"
    ;;
stop)
    pid=\$(cat "$WORK/live.pid")
    kill -INT "\$pid"
    n=600
    while kill -0 "\$pid" 2>/dev/null && [ \$n -gt 0 ]; do sleep 0.1; n=\$((n - 1)); done
    run=\$(sqlite3 "$db" 'SELECT max(id) FROM runs')
    echo "{\"run\": \$run, \"calls\": \$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = \$run"),
        \"addressed\": \$(sqlite3 "$db" "SELECT count(*) FROM v_calls WHERE run_id = \$run AND address IS NOT NULL")}" >"\$state"
    ;;
esac
LIVE

# The 50,000-call run (the recorder's own benchmark writes it).
mkdir -p "$WORK/big"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    "$top_builddir/bench/store/bench_store" 50000 small --db "$WORK/big/tftap.db" >/dev/null || not_ok "bench run written"

# Commits into the big run while the browser watches it (live, at scale).
cat >"$WORK/touch.sh" <<TOUCH
#!/usr/bin/env bash
for i in \$(seq "\$1"); do
    sqlite3 -cmd '.timeout 10000' "$WORK/big/tftap.db" "UPDATE calls SET status_message = 'touch \$i' WHERE id = 1"
done
TOUCH

"$TFTAP" serve --db "$db" >"$WORK/url" 2>"$WORK/url.err" &
srv=$!
"$TFTAP" serve --db "$WORK/big/tftap.db" >"$WORK/big-url" 2>"$WORK/big-url.err" &
big=$!
trap 'kill $srv $big 2>/dev/null; cleanup_work' EXIT
wait_for 150 test -s "$WORK/url" || not_ok "serve printed its URL"
wait_for 150 test -s "$WORK/big-url" || not_ok "serve printed its URL (bench run)"

updated_calls=$(q "SELECT count(*) FROM v_calls WHERE run_id = $run_a AND address = 'tftest6_thing.updated'")
jq -n --arg url "$(head -1 "$WORK/url")" --arg big_url "$(head -1 "$WORK/big-url")" \
    --arg chromium "$CHROMIUM" --arg node_dir "$NODE_DIR" --arg shots "$shots" \
    --arg profile "$WORK/chromium" --arg live "$WORK/live.sh" --arg live_state "$WORK/live.json" \
    --arg touch "$WORK/touch.sh" \
    --argjson runs "[$(q "SELECT group_concat(id) FROM (SELECT id FROM runs ORDER BY id DESC)")]" \
    --argjson schemas "$(q "SELECT count(*) FROM schemas WHERE kind = 'provider'")" \
    --argjson a "{\"run\": $run_a,
        \"processes\": $(q "SELECT count(*) FROM processes WHERE run_id = $run_a"),
        \"calls\": $(q "SELECT count(*) FROM calls WHERE run_id = $run_a"),
        \"addresses\": $("$TFTAP" show --db "$db" "$run_a" --json | jq -c '[.changes[].address]'),
        \"thing_calls\": $(q "SELECT count(*) FROM calls WHERE run_id = $run_a AND type_name = 'tftest6_thing'"),
        \"apply_calls\": $(q "SELECT count(*) FROM calls WHERE run_id = $run_a AND instr(lower(rpc), 'apply') > 0"),
        \"apply_call\": $(q "SELECT call_id FROM v_calls WHERE run_id = $run_a AND rpc = 'ApplyResourceChange' AND address = 'tftest6_thing.updated'"),
        \"unknown_call\": $(q "SELECT id FROM calls WHERE run_id = $run_a AND rpc = 'PlanResourceChange' AND response_json LIKE '%\$unknown%' LIMIT 1"),
        \"updated_calls\": $updated_calls}" \
    --argjson b "{\"run\": $run_b,
        \"call\": $(q "SELECT id FROM calls WHERE run_id = $run_b AND rpc = 'ApplyResourceChange' AND status_code <> 0 ORDER BY id LIMIT 1"),
        \"status\": \"$(q "SELECT status_name FROM v_calls WHERE run_id = $run_b AND rpc = 'ApplyResourceChange' AND status_code <> 0 ORDER BY call_id LIMIT 1")\"}" \
    --argjson c "{\"run\": $run_c, \"call\": $call_c}" \
    --argjson r "{\"run\": $run_r, \"prev\": $run_r0, \"verdict\": $(cat "$WORK/r-verdict.json"),
        \"cwd\": $(jq -n --arg d "$m" '$d'),
        \"argv\": $(q "SELECT json_array(command) FROM runs WHERE id = $run_r" | jq -c --argjson a "$(q "SELECT args FROM runs WHERE id = $run_r")" '. + $a'),
        \"calls\": $(q "SELECT count(*) FROM calls WHERE run_id = $run_r"),
        \"failed\": $(q "SELECT count(*) FROM v_calls WHERE run_id = $run_r AND failed"),
        \"closed\": $(q "SELECT count(*) FROM v_calls WHERE run_id = $run_r AND expected_close")}" \
    --argjson check "$("$TFTAP" check --db "$db" "$run_b" --json | jq -c '{violations, findings: (.findings | length)}')" \
    --argjson diff "$("$TFTAP" diff --db "$db" "$run_a" "$run_b" --json | jq -c '{same, differences, changes: (.changes | length)}')" \
    '$ARGS.named' >"$WORK/conf.json" || not_ok "expectations from the database"
if node "$top_srcdir/tests/web/browser.js" "$WORK/conf.json"; then
    ok "every view in chromium (screenshots in $shots)"
else
    not_ok "views in chromium (screenshots in $shots)"
fi
# Both servers stop cleanly on SIGTERM, without a sanitizer report.
for pid in $srv $big; do
    kill -TERM "$pid"
    wait "$pid"
    check_eq "serve (pid $pid) exits 0 on SIGTERM" "$?" 0
done
for f in "$WORK/url.err" "$WORK/big-url.err"; do
    if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$f"; then
        not_ok "a sanitizer report from serve: $f"
        cat "$f"
    fi
done
finish
