#!/usr/bin/env bash
# `tftap run --db URI` with a password in the URI (user:PASSWORD@ and a
# password= parameter; the test's server asks for it): while the apply hangs in its provider, neither the providers', the
# shims' nor tofu's environment (/proc/PID/environ) holds the password, and TFTAP_DB
# there names the run's spool (the run is held back in it until its end,
# docs/database.md); the run is still recorded into PostgreSQL (tftap run
# copies it there with the whole URI).
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'rm -f "$marker"; pg_cleanup; cleanup_work' EXIT
pg_e2e_start
secret=s3cretPW
PURI="postgresql://tftap:$secret@/tftap?host=$pg_dir&password=$secret"
# The server asks for the password from now on (psql below gets it from
# PGPASSWORD, never exported to tftap).
pg_psql "ALTER USER tftap PASSWORD '$secret'" || not_ok "password set"
hba=$pg_dir/data/pg_hba.conf
sed 's/trust$/scram-sha-256/' "$hba" >"$WORK/hba" && cat "$WORK/hba" >"$hba" # keeps its owner
pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -s reload || not_ok "server reloaded"
check "the server asks for a password" wait_for 60 sh -c "! psql -X -w '$(pg_uri)' -c 'SELECT 1' >/dev/null 2>&1"
check "the URI's password is accepted" psql -X -w -q "$PURI" -c 'SELECT 1'
h=$WORK/hang
marker=$WORK/hanging
new_dir "$top_srcdir/tests/e2e/configs/hang" "$h"
(cd "$h" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
(cd "$h" && TFTEST_HANG_MARKER=$marker exec "$TFTAP" run --db "$PURI" -- tofu apply \
    -auto-approve -input=false -no-color >"$WORK/apply.out" 2>&1) &
runner=$!
providers=
if wait_for 600 test -e "$marker"; then
    # This test's shims (children of tofu) and their providers.
    for s in $(pgrep -f "tftap shim $WORK/"); do
        providers="$providers $s $(pgrep -P "$s")"
    done
    tofu_pid=$(pgrep -x tofu -P "$runner")
    # A shim of an earlier step (the schema's provider process) may be
    # ending as we look: what is gone before it could be read is said, not
    # checked; the hung provider, its shim and tofu stay and are checked.
    alive=
    for p in $providers $tofu_pid; do
        tr '\0' '\n' <"/proc/$p/environ" >"$WORK/environ.$p" 2>/dev/null
        tr '\0' ' ' <"/proc/$p/cmdline" >"$WORK/cmdline.$p" 2>/dev/null
        if [ ! -s "$WORK/cmdline.$p" ]; then # gone, or a zombie: no command line
            echo "note: pid $p ended before it could be read: not checked"
        elif [ "$p" != "$tofu_pid" ]; then
            alive="$alive $p"
        fi
    done
    providers=$alive
    rm -f "$marker"
fi
check "the apply hung in a provider" grep -q '^[^ ]*/terraform-provider-tftest6' $(for p in $providers; do echo "$WORK/cmdline.$p"; done)
check "tofu found" test -n "$tofu_pid"
for p in $providers $tofu_pid; do
    what=$(cut -d' ' -f1 "$WORK/cmdline.$p")
    check "pid $p ($(basename "$what")): environment read" test -s "$WORK/environ.$p"
    if grep -q "$secret" "$WORK/environ.$p"; then
        not_ok "pid $p: no password in its environment: $(grep "$secret" "$WORK/environ.$p")"
    else
        ok "pid $p: no password in its environment"
    fi
    check "pid $p: TFTAP_DB is the run's spool ($(grep '^TFTAP_DB=' "$WORK/environ.$p"))" \
        grep -Eq "^TFTAP_DB=$WORK/tmp/tftap-$(id -u)/tftap-spool-[0-9a-f]{12}-[A-Za-z0-9]{6}\.db\$" "$WORK/environ.$p"
done
wait "$runner"
check_eq "the apply exits 0" "$?" 0
check "the apply says what tofu says" grep -q 'Apply complete!' "$WORK/apply.out"
check_eq "the run is recorded into PostgreSQL, with its end" \
    "$(PGPASSWORD=$secret pg_psql "SELECT count(*) FROM runs WHERE ended_us IS NOT NULL AND exit_code = 0")" 1
check_eq "the hung apply's calls are recorded" \
    "$(PGPASSWORD=$secret pg_psql "SELECT count(*) FROM calls WHERE rpc = 'ApplyResourceChange' AND ended_us IS NOT NULL")" 2
check_eq "nothing lost" "$(PGPASSWORD=$secret pg_psql "SELECT count(*) FROM gaps")" 0
finish
