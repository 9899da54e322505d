#!/usr/bin/env bash
# The whole life of a configuration through `tftap run`, against the same
# steps run directly in a twin directory: init, plan -out, apply of the
# plan, plan again (no changes), destroy. Exit codes, plans and states
# (modulo values random by design) must be the same; the record must hold
# every call the providers saw (their own log is the reference), with
# method, status and sizes; nothing may be left in TMPDIR.
# With `terraform` on PATH the same runs again with it.
. "$(dirname "$0")/lib.sh"
need_peers

lifecycle() { # CLI
    CLI=$1
    local w=$WORK/$CLI/wrapped d=$WORK/$CLI/direct db=$WORK/$CLI/tftap.db
    local log=$WORK/$CLI/rpc.log
    new_dir "$top_srcdir/examples/basic" "$w"
    new_dir "$top_srcdir/examples/basic" "$d"

    step() { # NAME EXPECTED_EXIT ARGS...
        local name=$1 want=$2 gw gd run
        shift 2
        : >"$log"
        (cd "$w" && TFTEST_RPC_LOG=$log "$TFTAP" run --db "$db" -- "$CLI" "$@" \
            >"$WORK/out.w" 2>"$WORK/err.w")
        gw=$?
        (cd "$d" && "$CLI" "$@" >"$WORK/out.d" 2>"$WORK/err.d")
        gd=$?
        check_eq "$CLI $name: exit code through tftap = direct" "$gw" "$gd"
        check_eq "$CLI $name: exit code" "$gw" "$want"
        [ "$gw" = "$want" ] || { cat "$WORK/err.w"; tail -20 "$WORK/out.w"; }
        run=$(last_run "$db")
        check_eq "$CLI $name: run row has the exit code" \
            "$(sqlite3 "$db" "SELECT exit_code FROM runs WHERE id = $run")" "$gw"
        check_eq "$CLI $name: run row has the command" \
            "$(sqlite3 "$db" "SELECT cli_name || ' ' || json_extract(args, '\$[0]') FROM runs WHERE id = $run")" \
            "$CLI $1"
        if [ -s "$log" ]; then
            compare_calls "$CLI $name" "$db" "$run" "$log"
        fi
        case $name in
        "plan -out" | apply | destroy) ;; # tftap's `show -json` after them starts providers of its own
        *) check_eq "$CLI $name: no provider escaped wrapping" "$(log_unwrapped "$log")" "" ;;
        esac
    }

    step init 0 init -input=false -no-color
    check_eq "$CLI init: lock files equal" "$(cat "$w/.terraform.lock.hcl")" "$(cat "$d/.terraform.lock.hcl")"

    step "plan -out" 2 plan -input=false -no-color -detailed-exitcode -out=tfplan
    check "$CLI plan: wrapped run made provider calls" test -s "$log"
    normalized_show "$w" tfplan >"$WORK/plan.w"
    normalized_show "$d" tfplan >"$WORK/plan.d"
    check "$CLI plan: show -json of the plans equal" cmp -s "$WORK/plan.w" "$WORK/plan.d"
    run=$(last_run "$db")
    check_eq "$CLI plan: planned calls tied to addresses" \
        "$(sqlite3 "$db" "SELECT group_concat(address, ' ') FROM (SELECT DISTINCT address FROM v_calls
           WHERE run_id = $run AND rpc = 'PlanResourceChange' ORDER BY address)")" \
        "tftest5_id.suffix tftest5_pet.server tftest5_trigger.deploy tftest6_thing.config"

    step apply 0 apply -input=false -no-color tfplan
    normalized_show "$w" >"$WORK/state.w"
    normalized_show "$d" >"$WORK/state.d"
    check "$CLI apply: show -json of the states equal" cmp -s "$WORK/state.w" "$WORK/state.d"
    check "$CLI apply: state has 5 resources" \
        test "$(jq '.values.root_module.resources | length' "$WORK/state.w")" = 5
    run=$(last_run "$db")
    check_eq "$CLI apply: every resource applied once" \
        "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $run AND rpc = 'ApplyResourceChange'
           AND status_code = 0")" 4
    # The plans made while applying (unknowns learnt since) are history:
    # `show` gives each resource once, as applied.
    "$TFTAP" show --db "$db" "$run" >"$WORK/show.apply" 2>&1
    check_eq "$CLI apply: show lists each resource once, as applied" \
        "$(grep '^  # ' "$WORK/show.apply" | sed 's/  \[.*//' | sort | tr '\n' ';')" \
        "  # tftest5_id.suffix has been created;  # tftest5_pet.server has been created;  # tftest5_trigger.deploy has been created;  # tftest6_thing.config has been created;"
    # The sensitive attribute is redacted in the record, by default.
    check_eq "$CLI apply: sensitive value not stored" \
        "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE request_json LIKE '%hunter2%'
           OR response_json LIKE '%hunter2%'")" 0

    # init again, everything installed: still unwrapped (dev_overrides would
    # make it skip those providers and warn).
    step "init again" 0 init -input=false -no-color
    check "$CLI init again: no development-override warning" \
        sh -c "! grep -qi 'development overrides' '$WORK/out.w' '$WORK/err.w'"
    check_eq "$CLI init again: lock files equal" "$(cat "$w/.terraform.lock.hcl")" "$(cat "$d/.terraform.lock.hcl")"

    step "plan (no changes)" 0 plan -input=false -no-color -detailed-exitcode
    # A plan not saved to a file: the state it started from names every
    # existing object, data sources included.
    run=$(last_run "$db")
    check_eq "$CLI plan (no changes): calls tied to addresses from the state before it" \
        "$(sqlite3 "$db" "SELECT group_concat(address, ' ') FROM (SELECT DISTINCT address FROM v_calls
           WHERE run_id = $run AND rpc IN ('PlanResourceChange', 'ReadDataSource') ORDER BY address)")" \
        "data.tftest6_echo.echo tftest5_id.suffix tftest5_pet.server tftest5_trigger.deploy tftest6_thing.config"
    check_eq "$CLI plan (no changes): no call left unmatched" \
        "$(sqlite3 "$db" "SELECT count(*) FROM v_resource_changes WHERE run_id = $run AND address IS NULL")" 0
    step destroy 0 destroy -auto-approve -input=false -no-color
    run=$(last_run "$db")
    check_eq "$CLI destroy: destroyed objects tied to addresses (gone from the state after)" \
        "$(sqlite3 "$db" "SELECT group_concat(address, ' ') FROM (SELECT DISTINCT address FROM v_calls
           WHERE run_id = $run AND rpc = 'ApplyResourceChange' ORDER BY address)")" \
        "tftest5_id.suffix tftest5_pet.server tftest5_trigger.deploy tftest6_thing.config"
    normalized_show "$w" >"$WORK/state.w"
    normalized_show "$d" >"$WORK/state.d"
    check "$CLI destroy: show -json of the states equal" cmp -s "$WORK/state.w" "$WORK/state.d"

    check_eq "$CLI: runs recorded" "$(sqlite3 "$db" "SELECT count(*) FROM runs")" 6
    check_eq "$CLI: calls recorded for every run but init" \
        "$(sqlite3 "$db" "SELECT count(DISTINCT run_id) FROM calls")" 4
    check_eq "$CLI: no shim directory or socket left in TMPDIR" "$(find "$TMPDIR" -mindepth 1 | head -5)" ""
}

lifecycle tofu
if command -v terraform >/dev/null 2>&1; then
    lifecycle terraform
else
    skip "terraform lifecycle" "terraform not on PATH"
fi
finish
