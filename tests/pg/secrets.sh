#!/usr/bin/env bash
# Secrets and the shared record (a PostgreSQL server this test starts). A run
# recorded locally and pushed: the server never holds a value the
# configuration marks sensitive, not even in its files (its data directory
# after CHECKPOINT). A run recorded straight into the server: held back in a
# local spool until its end redacted it, so that the server's files never
# hold the value, while the run lasts (a resource hangs in its apply until
# the test releases it) nor after. A spool whose tftap run was killed is
# copied, redacted, by the next run into the record. `push` refuses a run
# recorded with --record-sensitive unless --allow-secrets, and a spool's run
# its end did not redact.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
pg_e2e_start
w=$WORK/w db=$WORK/local.db
mkdir -p "$w"
SECRET=pg-secret-value-Q9x
cat >"$w/main.tf" <<'TF'
terraform {
  required_providers {
    tftest6 = { source = "tftap/tftest6" }
  }
}
variable "pw" {
  type      = string
  sensitive = true
}
resource "tftest6_thing" "t" { string_attr = var.pw }
resource "tftest6_thing" "u" { string_attr = "user:${var.pw}" }
variable "hang" {
  type    = string
  default = ""
}
# Hangs in its apply (fail = "hang") until the test removes the marker,
# after t and u were applied: the run lasts while the test looks.
resource "tftest6_thing" "h" {
  string_attr = var.pw
  fail        = var.hang
  depends_on  = [tftest6_thing.t, tftest6_thing.u]
}
TF
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
# data_hits: how many files of the server's data directory hold the secret.
data_hits() {
    pg_psql "CHECKPOINT" >/dev/null
    grep -r -l -a -F -- "$SECRET" "$pg_dir/data" 2>/dev/null | wc -l
}

# ---- recorded locally, pushed: the server never holds it ------------------------
(cd "$w" && TF_VAR_pw=$SECRET "$TFTAP" run --db "$db" -- tofu apply -auto-approve \
    -input=false -no-color >"$WORK/apply.out" 2>&1)
check_eq "apply exits 0" "$?" 0
check_eq "the local file holds no copy" "$(cat "$db"* | grep -a -c -F -- "$SECRET")" 0
"$TFTAP" push last --db "$db" --to "$URI" >"$WORK/push.out" 2>&1
check_eq "push exits 0" "$?" 0
check "push says what the run's end redacted ($(head -n 1 "$WORK/push.out"))" \
    grep -Eq 'redacted at its end: [1-9][0-9]* where core marked them' "$WORK/push.out"
check_eq "the pushed run: no row holds the secret" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE request_json LIKE '%$SECRET%' OR response_json LIKE '%$SECRET%'")" 0
check_eq "the pushed run: the server's files never held it" "$(data_hits)" 0
check "the pushed run: its secrets' hashes came along" \
    test "$(pg_psql "SELECT count(*) FROM run_secrets")" -gt 0

# ---- recorded straight into the server: held back until the run's end ----------------
# The spool is in the recorders' side directory, ${TMPDIR}/tftap-UID.
export TMPDIR=$WORK/tmp
mkdir -p "$TMPDIR"
side=$TMPDIR/tftap-$(id -u)
marker=$WORK/hang.marker
runs_before=$(pg_psql "SELECT count(*) FROM runs")
(cd "$w" && TF_VAR_pw=$SECRET TF_VAR_hang=hang TFTEST_HANG_MARKER=$marker "$TFTAP" run \
    --db "$URI" -- tofu apply -auto-approve -input=false -no-color -replace=tftest6_thing.t \
    >"$WORK/direct.out" 2>&1; echo $? >"$WORK/direct.rc") &
direct=$!
hanging() { [ -e "$marker" ]; }
spool_holds() { cat "$side"/tftap-spool-*.db* 2>/dev/null | grep -a -q -F -- "$SECRET"; }
check "the run hangs in h's apply" wait_for 3000 hanging
# What the recorders wrote is in the spool (committed every 100 ms): the
# secret is recorded, and the server has none of it.
check "while the run lasts, its spool holds the secret" wait_for 3000 spool_holds
check_eq "while the run lasts, the server's files never held it" "$(data_hits)" 0
check_eq "while the run lasts, no run of it in the record yet" \
    "$(pg_psql "SELECT count(*) FROM runs")" "$runs_before"
rm -f "$marker"
wait $direct
check_eq "apply straight into the server exits 0" "$(cat "$WORK/direct.rc")" 0
check "... tofu's output" grep -q 'Apply complete!' "$WORK/direct.out"
check_eq "its end copied it into the record and removed the spool" \
    "$(ls "$side" | grep -c '^tftap-spool-')" 0
check_eq "after the run, the server's files never held it" "$(data_hits)" 0
run=$(pg_psql "SELECT max(id) FROM runs")
check_eq "the run is in the record with its calls" \
    "$(pg_psql "SELECT count(*) > 20 FROM calls WHERE run_id = $run")" t
check_eq "... ended, with tofu's exit code" \
    "$(pg_psql "SELECT exit_code FROM runs WHERE id = $run AND ended_us IS NOT NULL")" 0
check_eq "... its hashes keyed with the record's own key (runs.key_id NULL)" \
    "$(pg_psql "SELECT count(*) FROM runs WHERE id = $run AND key_id IS NULL")" 1
check_eq "straight into the server: no row holds the secret" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE request_json LIKE '%$SECRET%' OR response_json LIKE '%$SECRET%'")" 0
check_eq "straight into the server: nor the arguments" \
    "$(pg_psql "SELECT count(*) FROM runs WHERE args LIKE '%$SECRET%'")" 0
check "straight into the server: redactions counted" \
    bash -c "pg_psql() { psql -X -q -A -t '$URI' -c \"\$1\"; }; pg_psql 'SELECT redactions FROM runs WHERE id = $run' | jq -e '.core_mark + .known_secret > 0' >/dev/null"
"$TFTAP" show "$run" --db "$URI" >"$WORK/show.txt" 2>&1
check_eq "straight into the server: show holds no secret" "$(grep -c -F -- "$SECRET" "$WORK/show.txt")" 0

# ---- under tftap wrap: the command's run held back until the command is over --------
mkdir -p "$WORK/shims"
(cd "$w" && "$TFTAP" wrap --db "$URI" --out "$WORK/shims" >/dev/null 2>"$WORK/wrap.err") ||
    { not_ok "wrap"; cat "$WORK/wrap.err"; }
runs_before=$(pg_psql "SELECT count(*) FROM runs")
(cd "$w" && TF_VAR_pw=$SECRET TF_VAR_hang=hang TFTEST_HANG_MARKER=$marker \
    TF_CLI_CONFIG_FILE=$WORK/shims/tftap.tfrc tofu apply -auto-approve -input=false -no-color \
    -replace=tftest6_thing.h >"$WORK/wrapped.out" 2>&1; echo $? >"$WORK/wrapped.rc") &
wrapped=$!
wspool_holds() { cat "$side"/tftap-spool-*-w*.db* 2>/dev/null | grep -a -q -F -- "$SECRET"; }
check "wrapped: the apply hangs in h's apply" wait_for 3000 hanging
check "wrapped: while it lasts, the command's spool holds the secret" wait_for 3000 wspool_holds
check_eq "wrapped: while it lasts, the server's files never held it" "$(data_hits)" 0
check_eq "wrapped: while it lasts, no run of it in the record yet" \
    "$(pg_psql "SELECT count(*) FROM runs")" "$runs_before"
rm -f "$marker"
wait $wrapped
check_eq "wrapped: the apply exits 0" "$(cat "$WORK/wrapped.rc")" 0
copied() { [ "$(pg_psql "SELECT count(*) FROM runs")" -gt "$runs_before" ]; }
check "wrapped: its last recorder copies the run once the command is over" wait_for 3000 copied
spool_gone() { ! ls "$side" | grep -q '^tftap-spool-'; }
check "wrapped: ... and removes the spool" wait_for 3000 spool_gone
check_eq "wrapped: the copied run holds no secret" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE request_json LIKE '%$SECRET%' OR response_json LIKE '%$SECRET%'")" 0
check "wrapped: the copied run has its calls" \
    test "$(pg_psql "SELECT count(*) FROM calls WHERE run_id = (SELECT max(id) FROM runs)")" -gt 10
check_eq "wrapped: after it, the server's files never held it" "$(data_hits)" 0

# ---- a run whose tftap run was killed: its spool stays, copied redacted later ------
(cd "$w" && TF_VAR_pw=$SECRET TF_VAR_hang=hang TFTEST_HANG_MARKER=$marker exec setsid \
    "$TFTAP" run --db "$URI" -- tofu apply -auto-approve -input=false -no-color \
    -replace=tftest6_thing.h >"$WORK/killed.out" 2>&1) &
killed=$!
check "the run to be killed hangs in h's apply" wait_for 3000 hanging
check "its spool holds the secret" wait_for 3000 spool_holds
kill -KILL -- -"$killed" 2>/dev/null
wait "$killed" 2>/dev/null
rm -f "$marker"
spool=$(ls "$side"/tftap-spool-*.db 2>/dev/null | head -n 1)
check "the killed run's spool stays" test -n "$spool"
# Nobody holds its run once every process of the killed run is gone
# (prune's dry run reads the holds).
unheld() {
    [ "$("$TFTAP" prune --db "$spool" --keep 0 --dry-run --json 2>/dev/null |
        jq -r '.runs[] | select(.id == 1) | .status')" = would_remove ]
}
check "its processes let go of it" wait_for 3000 unheld
"$TFTAP" push "$spool:1" --to "$URI" >"$WORK/orphan-push.out" 2>"$WORK/orphan-push.err"
check_eq "push of its unredacted run: exit 1" "$?" 1
check "... saying why" grep -q 'not redacted' "$WORK/orphan-push.err"
check_eq "the server's files never held it" "$(data_hits)" 0
runs_before=$(pg_psql "SELECT count(*) FROM runs")
(cd "$w" && "$TFTAP" run --db "$URI" -- tofu plan -lock=false -input=false -no-color \
    -var pw=other-value-1 >"$WORK/next.out" 2>&1)
check_eq "the next run into the record exits 0" "$?" 0
check "... saying it copied the killed run" grep -q 'did not copy it) is now run' "$WORK/next.out"
check_eq "... both runs in the record" "$(pg_psql "SELECT count(*) FROM runs")" $((runs_before + 2))
check_eq "... the spool removed" "$(ls "$side" | grep -c '^tftap-spool-')" 0
check_eq "the killed run in the record holds no secret" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE request_json LIKE '%$SECRET%' OR response_json LIKE '%$SECRET%'")" 0
check_eq "the server's files never held it" "$(data_hits)" 0
unset TMPDIR

# ---- --record-sensitive: refused, unless asked ---------------------------------------
(cd "$w" && TF_VAR_pw=$SECRET "$TFTAP" run --db "$WORK/kept.db" --record-sensitive -- tofu plan \
    -input=false -no-color >/dev/null 2>&1) || not_ok "plan --record-sensitive"
before=$(pg_psql "SELECT count(*) FROM runs")
"$TFTAP" push all --db "$WORK/kept.db" --to "$URI" >"$WORK/kept.out" 2>"$WORK/kept.err"
check_eq "push all of a --record-sensitive run: exit 1" "$?" 1
check "... saying why" grep -q 'recorded with --record-sensitive' "$WORK/kept.err"
check_eq "... nothing pushed" "$(pg_psql "SELECT count(*) FROM runs")" "$before"

finish
