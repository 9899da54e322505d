#!/usr/bin/env bash
# Writes the PostgreSQL server refuses (not a lost connection): a trigger
# this test adds to the calls table raises an exception for every
# ReadResource call, in the middle of the batches the recorder pipelines.
# Asserted: the run exits 0 with tofu's output; every other call of the
# plan is recorded (as many as in the same plan recorded before the
# trigger); the refused calls are one gap per refusal pass whose reason
# names the table and the server's message, whose counts cover every
# refused call, and processes.dropped is their sum; the recorders' log
# (the URI case: ${TMPDIR}/tftap-UID/tftap.log) names the table and the
# server's message; `tftap runs` shows the loss. The runs are recorded with
# --record-sensitive, the one way a recorder writes into the server live
# (any other run is held back in a spool and copied at its end,
# tests/pg/secrets.sh), so that its writes meet the trigger.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
pg_e2e_start
w=$WORK/w
mkdir -p "$w" "$WORK/tmp"
export TMPDIR=$WORK/tmp
log=$TMPDIR/tftap-$(id -u)/tftap.log
cp "$top_srcdir/tests/e2e/configs/show/v1.tf.txt" "$w/main.tf"
(cd "$w" && tofu init -input=false -no-color >/dev/null && tofu apply -auto-approve -input=false \
    -no-color >/dev/null) || not_ok "v1 applied"

plan() {
    (cd "$w" && "$TFTAP" run --db "$URI" --record-sensitive -- tofu plan -input=false -no-color >"$WORK/plan$1.out" 2>&1)
}
plan 1 || not_ok "plan 1 (no trigger)"
reads=$(pg_psql "SELECT count(*) FROM calls WHERE run_id = 1 AND rpc = 'ReadResource'")
others=$(pg_psql "SELECT count(*) FROM calls WHERE run_id = 1 AND rpc <> 'ReadResource'")
check "plan 1 read resources" test "$reads" -gt 0

pg_psql "CREATE FUNCTION refuse_reads() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  IF NEW.rpc = 'ReadResource' THEN
    RAISE EXCEPTION 'tftap test refuses %', NEW.rpc;
  END IF;
  RETURN NEW;
END \$\$;
CREATE TRIGGER refuse_reads BEFORE INSERT OR UPDATE ON calls
  FOR EACH ROW EXECUTE FUNCTION refuse_reads();" || not_ok "trigger added"

if plan 2; then ok "plan 2 (reads refused) exits 0"; else not_ok "plan 2 (reads refused) exits 0"; fi
check "plan 2 says what tofu says" grep -Eq 'No changes|Plan:' "$WORK/plan2.out"
check_eq "plan 2: no ReadResource recorded" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE run_id = 2 AND rpc = 'ReadResource'")" 0
check_eq "plan 2: every other call recorded" \
    "$(pg_psql "SELECT count(*) FROM calls WHERE run_id = 2 AND rpc <> 'ReadResource'")" "$others"
check "plan 2 has a gap of refused writes" test "$(pg_psql "SELECT count(*) FROM gaps
    WHERE run_id = 2 AND reason LIKE 'refused by the database:%'")" -gt 0
check_eq "plan 2: its gaps name the table and the server's message" \
    "$(pg_psql "SELECT count(*) FROM gaps WHERE run_id = 2 AND reason NOT LIKE
        'refused by the database: calls: ERROR:  tftap test refuses ReadResource%'")" 0
lost=$(pg_psql "SELECT coalesce(sum(lost), 0) FROM gaps WHERE run_id = 2")
check "plan 2: the gaps count every refused call ($lost >= $reads)" test "$lost" -ge "$reads"
check_eq "plan 2: processes.dropped is the sum of their gaps" \
    "$(pg_psql "SELECT count(*) FROM processes p WHERE run_id = 2 AND dropped <>
        (SELECT coalesce(sum(lost), 0) FROM gaps g WHERE g.process_id = p.id)")" 0
check "the recorders' log names the table and the server's message" \
    grep -q 'refused a write to table calls: ERROR:  tftap test refuses ReadResource' "$log"
check "runs shows the loss" sh -c "'$TFTAP' runs --db '$URI' --json | jq -e '.[] | select(.id == 2) | .dropped > 0' >/dev/null"
finish
