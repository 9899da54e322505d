#!/usr/bin/env bash
# count and for_each over equal values: nothing in a provider call tells the
# instances apart, so a saved plan's calls are paired with them one to one
# (issue: "address unknown: values match 3 instances equally" before). Every
# change of the plan and of the apply that follows is named, each instance
# once, and says which instances it is identical to.
. "$(dirname "$0")/lib.sh"
need_peers
w=$WORK/w db=$WORK/tftap.db
new_dir "$top_srcdir/tests/e2e/configs/count" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"

# addresses RUN: the addresses of the run's changes as `show --json` lists them.
addresses() {
    "$TFTAP" show --db "$db" --all --json "$1" | jq -r '.changes[] | .address // "?"' | sort
}

(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -out=tfplan \
    >"$WORK/plan.txt" 2>"$WORK/plan.err")
check_eq "plan -out: exit code" "$?" 0
"$TFTAP" show --db "$db" last >"$WORK/show.txt"
check_eq "plan -out: show exit code" "$?" 0
check "plan -out: every change has its address" sh -c "! grep -q 'address unknown' '$WORK/show.txt'"
expected='tftest5_pet.keyed["a"]
tftest5_pet.keyed["b"]
tftest5_pet.single
tftest5_pet.web[0]
tftest5_pet.web[1]
tftest5_pet.web[2]'
check_eq "plan -out: each instance named once" "$(addresses last)" "$expected"
check "plan -out: web[0] says it is identical to the others" \
    grep -qF '# tftest5_pet.web[0] (identical to web[1], web[2]) will be created' "$WORK/show.txt"
check "plan -out: keyed[\"b\"] says it is identical to keyed[\"a\"]" \
    grep -qF '# tftest5_pet.keyed["b"] (identical to keyed["a"]) will be created' "$WORK/show.txt"
check "plan -out: a lone instance has no note" \
    grep -qF '# tftest5_pet.single will be created' "$WORK/show.txt"
check_eq "plan -out: --json notes" \
    "$("$TFTAP" show --db "$db" --json last | jq -r '.changes[] | select(.address == "tftest5_pet.web[2]") | .address_note')" \
    "identical to web[0], web[1]"

(cd "$w" && "$TFTAP" run --db "$db" -- tofu apply -input=false -no-color tfplan \
    >"$WORK/apply.txt" 2>"$WORK/apply.err")
check_eq "apply: exit code" "$?" 0
"$TFTAP" show --db "$db" last >"$WORK/show-apply.txt"
check "apply: every change has its address" sh -c "! grep -q 'address unknown' '$WORK/show-apply.txt'"
check_eq "apply: each instance named once" "$(addresses last | sort -u)" "$expected"

# Once applied, each instance has an id of its own: a refresh-only plan
# names them by their values, with no note.
(cd "$w" && "$TFTAP" run --db "$db" -- tofu plan -refresh-only -input=false -no-color \
    >"$WORK/refresh.txt" 2>"$WORK/refresh.err")
check_eq "refresh-only plan: exit code" "$?" 0
check_eq "refresh-only plan: no call tied" \
    "$(sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = (SELECT max(id) FROM runs)
                      AND address_note LIKE 'identical to%'")" 0
check_eq "refresh-only plan: every ReadResource named" \
    "$(sqlite3 "$db" "SELECT count(*) FROM v_calls WHERE run_id = (SELECT max(id) FROM runs)
                      AND rpc = 'ReadResource' AND address IS NULL")" 0
finish
