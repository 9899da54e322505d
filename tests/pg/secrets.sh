#!/usr/bin/env bash
# Secrets and the shared record (a PostgreSQL server this test starts). A run
# recorded locally and pushed: the server never holds a value the
# configuration marks sensitive, not even in its files (its data directory
# after CHECKPOINT). A run recorded straight into the server: redacted at its
# end like a local one (no row holds the value), with what docs/database.md
# says of the server's files. `push` refuses a run recorded with
# --record-sensitive unless --allow-secrets.
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

# ---- recorded straight into the server: redacted at the run's end --------------------
(cd "$w" && TF_VAR_pw=$SECRET "$TFTAP" run --db "$URI" -- tofu apply -auto-approve \
    -input=false -no-color -replace=tftest6_thing.t >"$WORK/direct.out" 2>&1)
check_eq "apply straight into the server exits 0" "$?" 0
run=$(pg_psql "SELECT max(id) FROM runs")
check_eq "straight into the server: no row holds the secret" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE request_json LIKE '%$SECRET%' OR response_json LIKE '%$SECRET%'")" 0
check_eq "straight into the server: nor the arguments" \
    "$(pg_psql "SELECT count(*) FROM runs WHERE args LIKE '%$SECRET%'")" 0
check "straight into the server: redactions counted" \
    bash -c "pg_psql() { psql -X -q -A -t '$URI' -c \"\$1\"; }; pg_psql 'SELECT redactions FROM runs WHERE id = $run' | jq -e '.core_mark + .known_secret > 0' >/dev/null"
"$TFTAP" show "$run" --db "$URI" >"$WORK/show.txt" 2>&1
check_eq "straight into the server: show holds no secret" "$(grep -c -F -- "$SECRET" "$WORK/show.txt")" 0

# ---- --record-sensitive: refused, unless asked ---------------------------------------
(cd "$w" && TF_VAR_pw=$SECRET "$TFTAP" run --db "$WORK/kept.db" --record-sensitive -- tofu plan \
    -input=false -no-color >/dev/null 2>&1) || not_ok "plan --record-sensitive"
before=$(pg_psql "SELECT count(*) FROM runs")
"$TFTAP" push all --db "$WORK/kept.db" --to "$URI" >"$WORK/kept.out" 2>"$WORK/kept.err"
check_eq "push all of a --record-sensitive run: exit 1" "$?" 1
check "... saying why" grep -q 'recorded with --record-sensitive' "$WORK/kept.err"
check_eq "... nothing pushed" "$(pg_psql "SELECT count(*) FROM runs")" "$before"

finish
