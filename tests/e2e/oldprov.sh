#!/usr/bin/env bash
# Expected is not failed: a provider built before resource identities
# (tests/peers/tftest's sources on terraform-plugin-framework v1.7.0 and
# terraform-plugin-go v0.22.1: bin/terraform-provider-tftestold) answers
# GetResourceIdentitySchemas UNIMPLEMENTED, which core takes as "no
# identities". OpenTofu v1.10 never asks it; newer cores do, at start, so
# bin/coreprobe (go-plugin's client, as core starts a provider) asks it
# through a tftap shim. The record must read as clean as the run was:
# `show`, `calls --failed`, the bundle's summary and `calls --json` say no
# failure, the status reads by name, a replay answers as recorded and
# `diff ORIGINAL REPLAY` exits 0; and a real apply by tofu with the same
# provider reads clean and replays to a diff that exits 0.
. "$(dirname "$0")/lib.sh"
need_peers
for p in terraform-provider-tftestold coreprobe; do
    if ! [ -x "$PEERS/bin/$p" ]; then
        echo "$e2e_name: peers missing: $PEERS/bin/$p (run scripts/build-peers)"
        [ "${TFTAP_REQUIRE_PEERS:-0}" = 1 ] && { echo "$e2e_name: 0 passed, 1 failed"; exit 1; }
        exit 77
    fi
done
CLI=tofu
db=$WORK/tftap.db w=$WORK/w
mkdir -p "$w"
cat >"$w/main.tf" <<'TF'
terraform {
  required_providers {
    tftestold = { source = "tftap/tftestold" }
  }
}
resource "tftestold_pet" "p" { length = 2 }
resource "tftestold_thing" "t" {
  string_attr = "old"
  int_attr    = 3
}
TF
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# ---- a real apply by tofu ------------------------------------------------------
(cd "$w" && "$TFTAP" run --db "$db" -- tofu apply -auto-approve -input=false -no-color \
    >"$WORK/apply.out" 2>"$WORK/apply.err")
check_eq "tofu apply with the older provider exits 0" "$?" 0
run_apply=$(last_run "$db")
"$TFTAP" --db "$db" show last >"$WORK/show.txt"
check "show: no failure told" bash -c "! grep -qi 'fail' '$WORK/show.txt'"
check "show: the creates" grep -q 'tftestold_thing.t has been created' "$WORK/show.txt"
"$TFTAP" --db "$db" calls last --failed >"$WORK/failed.txt" 2>/dev/null
check_eq "calls --failed: nothing" "$(cat "$WORK/failed.txt")" ""
mkdir -p "$WORK/ra"
cp "$w/main.tf" "$WORK/ra/"
# RUN alone, as every command takes it: a run of --db.
(cd "$WORK/ra" && "$TFTAP" replay "$run_apply" --db "$db" -- tofu apply -auto-approve \
    -input=false -no-color >"$WORK/ra.out" 2>"$WORK/ra.err")
check_eq "the replayed apply (replay RUN --db DB) exits 0" "$?" 0
"$TFTAP" diff --db "$db" "$run_apply" "$(last_run "$db")" >"$WORK/diff.apply"
check_eq "diff ORIGINAL REPLAY of the apply exits 0 ($(head -n 1 "$WORK/diff.apply"))" "$?" 0

# ---- what a newer core asks at start ---------------------------------------------
(cd "$w" && "$TFTAP" wrap --db "$db" --out "$WORK/shims" >/dev/null 2>&1) || not_ok "wrap"
shim=$(ls "$WORK"/shims/p*/terraform-provider-tftestold_v* 2>/dev/null | head -n 1)
coreprobe 5 "$shim" GetSchema GetResourceIdentitySchemas >"$WORK/probe.out" 2>"$WORK/probe.err"
check_eq "the probe ran" "$?" 0
check_eq "the older provider answers GetResourceIdentitySchemas UNIMPLEMENTED" \
    "$(sed -n 2p "$WORK/probe.out")" "GetResourceIdentitySchemas Unimplemented"
wait_for 150 recorders_done "$WORK/shims" || not_ok "the probe's recorders finish"
run_probe=$(last_run "$db")
check_eq "the probe is a run of its own" "$((run_probe > run_apply))" 1
"$TFTAP" --db "$db" calls "$run_probe" >"$WORK/calls.txt"
check "calls: GetResourceIdentitySchemas recorded as an expected close, by name" \
    grep -qE '^[0-9]+ +[0-9]+ +GetResourceIdentitySchemas +- +closed .*\(expected close: UNIMPLEMENTED\)$' \
    "$WORK/calls.txt"
check "calls: no status by number" bash -c "! grep -qE 'status[= ][0-9]' '$WORK/calls.txt'"
"$TFTAP" --db "$db" calls "$run_probe" --failed >"$WORK/pfailed.txt" 2>"$WORK/pfailed.err"
check_eq "calls --failed: nothing" "$(cat "$WORK/pfailed.txt")" ""
check_eq "calls --json: expected_close, not failed" \
    "$("$TFTAP" --db "$db" calls "$run_probe" --json | jq -c '[.[] | select(.rpc ==
        "GetResourceIdentitySchemas") | [.status_name, .expected_close, .failed]]')" \
    '[["UNIMPLEMENTED",true,false]]'
"$TFTAP" --db "$db" show "$run_probe" >"$WORK/pshow.txt" 2>&1
check "show: no failure told" bash -c "! grep -qi 'fail' '$WORK/pshow.txt'"
"$TFTAP" --db "$db" bundle "$run_probe" -o "$WORK/probe.tftap" >"$WORK/bundle.out" 2>&1
check "bundle: counts no failed call" grep -q 'calls: *[0-9]* (0 failed)' "$WORK/bundle.out"

# ---- the replay answers as recorded ------------------------------------------------
"$TFTAP" replay "$db:$run_probe" --db "$db" --out "$WORK/rep" >/dev/null 2>"$WORK/rep.err" ||
    not_ok "replay --out ($(cat "$WORK/rep.err"))"
rshim=$(ls "$WORK"/rep/p*/terraform-provider-tftestold* 2>/dev/null | head -n 1)
coreprobe 5 "$rshim" GetSchema GetResourceIdentitySchemas >"$WORK/rprobe.out" 2>"$WORK/rprobe.err"
check_eq "the replay answers GetResourceIdentitySchemas UNIMPLEMENTED, as recorded" \
    "$(cat "$WORK/rprobe.out")" "$(cat "$WORK/probe.out")"
wait_for 150 recorders_done "$WORK/rep" || not_ok "the replay's recorders finish"
"$TFTAP" diff --db "$db" "$run_probe" "$(last_run "$db")" >"$WORK/diff.probe"
check_eq "diff ORIGINAL REPLAY exits 0 ($(head -n 1 "$WORK/diff.probe"))" "$?" 0

finish
