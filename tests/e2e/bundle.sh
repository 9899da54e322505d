#!/usr/bin/env bash
# `tftap bundle`: a recorded apply (sensitive provider configuration, two
# resources with the same secret, a sensitive nested attribute), a plan
# that refreshes them (stored state with the secrets in clear goes to the
# provider) and an apply recorded with --record-sensitive are each bundled.
# No bundle holds a secret's bytes, the working directory or a provider
# path; a bundle opened from another directory reads as the original does
# (show, calls, check, export, runs, diff of the original against it:
# same behaviour); secrets hash equal inside a bundle and differently in
# each bundle and in the database; corrupted bundles give one error line,
# never a crash.
. "$(dirname "$0")/lib.sh"
need_peers
CLI=tofu
SECRETS="tok-Q7ZBUNDLETOKEN hunter2-Q7ZBUNDLESECRET nested-Q7ZBUNDLENESTED"
w=$WORK/rec ws=$WORK/recs db=$WORK/rec/.tftap/tftap.db dbs=$WORK/s.db out=$WORK/out other=$WORK/other
new_dir "$top_srcdir/tests/e2e/configs/bundle" "$w"
new_dir "$top_srcdir/tests/e2e/configs/bundle" "$ws"
mkdir -p "$out" "$other"

record() { # DIR DB [tftap run options] -- ARGS...
    local dir=$1 rdb=$2
    shift 2
    (cd "$dir" && "$TFTAP" run --db "$rdb" "$@" >"$WORK/run.out" 2>"$WORK/run.err") ||
        { not_ok "recorded: $*"; cat "$WORK/run.err"; }
    last_run "$rdb"
}
record "$w" "$db" -- tofu init -input=false -no-color >/dev/null
A=$(record "$w" "$db" -- tofu apply -auto-approve -input=false -no-color)
cp "$w/terraform.tfstate" "$WORK/applied.tfstate"
P=$(record "$w" "$db" -- tofu plan -input=false -no-color -var suffix=2)
cp "$WORK/run.out" "$WORK/plan.out"
record "$ws" "$dbs" -- tofu init -input=false -no-color >/dev/null
S=$(record "$ws" "$dbs" --record-sensitive -- tofu apply -auto-approve -input=false -no-color)
SP=$(record "$ws" "$dbs" --record-sensitive -- tofu plan -input=false -no-color -var suffix=2)

# The secrets are there to be redacted: in the --record-sensitive runs,
# stored state (UpgradeResourceState's raw_state) included; a redacted run
# has the stored state redacted too.
for s in $SECRETS; do
    check "--record-sensitive run holds $s in clear" test "$(grep -a -c -F "$s" "$dbs")" -gt 0
done
check_eq "--record-sensitive refresh: stored state with the secret in clear" \
    "$(sqlite3 "$dbs" "SELECT count(*) > 0 FROM calls WHERE run_id = $SP AND rpc = 'UpgradeResourceState'
       AND request_json LIKE '%raw_state%Q7ZBUNDLESECRET%'")" 1
check_eq "redacted refresh: stored state redacted in the record" \
    "$(sqlite3 "$db" "SELECT sum(request_json LIKE '%Q7ZBUNDLE%') || ' ' || sum(request_json ->> '\$.raw_state.json.secret.\$sensitive' LIKE 'hmac-sha256:%')
       FROM calls WHERE run_id = $P AND rpc = 'UpgradeResourceState' AND type_name = 'tftest6_thing'")" "0 2"
check_eq "the database holds no secret at all" "$(grep -a -c -F Q7ZBUNDLE "$db")" 0

bundle() { # NAME DB RUN FILE
    (cd "$other" && "$TFTAP" bundle --db "$2" "$3" -o "$4" >"$WORK/$1.summary" 2>"$WORK/$1.err")
    check_eq "$1: bundle exit code" "$?" 0
    cat "$WORK/$1.err"
}
bundle apply "$db" "$A" "$out/a1.tftap"
bundle apply-again "$db" "$A" "$out/a2.tftap"
bundle plan "$db" "$P" "$out/p.tftap"
bundle sensitive "$dbs" "$S" "$out/s.tftap"
bundle sensitive-plan "$dbs" "$SP" "$out/sp.tftap"

check "summary names run, command, providers, calls, changes, size" \
    grep -q "^Bundle $out/a1.tftap: run $A" "$WORK/apply.summary"
check_eq "summary: command" "$(sed -n 's/^  command: *//p' "$WORK/apply.summary")" \
    "tofu apply -auto-approve -input=false -no-color"
check_eq "summary: providers with versions" "$(sed -n 's/^  providers: *//p' "$WORK/apply.summary")" \
    "$(sqlite3 "$db" "SELECT group_concat(p, ', ') FROM (SELECT provider || ' ' || version || ' (protocol ' ||
       protocol || ')' AS p, min(id) AS m FROM processes WHERE run_id = $A GROUP BY 1 ORDER BY m)")"
check_eq "summary: calls" "$(sed -n 's/^  calls: *\([0-9]*\).*/\1/p' "$WORK/apply.summary")" \
    "$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $A")"
check_eq "summary: changes" "$(sed -n 's/^  changes: *//p' "$WORK/apply.summary")" 3
check_eq "summary: size" "$(sed -n 's/^  size: *\([0-9]*\) bytes/\1/p' "$WORK/apply.summary")" \
    "$(stat -c %s "$out/a1.tftap")"
check_eq "plan bundle: the -var value is not kept" \
    "$(sed -n 's/^  command: *//p' "$WORK/plan.summary")" "tofu plan -input=false -no-color -var <redacted>"
# A run whose decoded values have no schema to tell their secrets by is
# refused, and nothing is written.
cp "$dbs" "$WORK/noschema.db"
sqlite3 "$WORK/noschema.db" "UPDATE processes SET schema_sha256 = NULL WHERE run_id = $S"
(cd "$other" && "$TFTAP" bundle --db "$WORK/noschema.db" "$S" -o "$out/refused.tftap" >/dev/null 2>"$WORK/refused.err")
check_eq "no schema: refused (exit 1)" "$?" 1
check "no schema: one line naming the call" grep -q "^tftap: cannot bundle run $S safely: call [0-9]* (.*): a decoded value of .* has no schema to tell its secrets by$" "$WORK/refused.err"
check_eq "no schema: one error line" "$(wc -l <"$WORK/refused.err")" 1
check_eq "no schema: no file written" "$(ls "$out" | grep -c refused)" 0
check "refusing to replace a file" sh -c "! '$TFTAP' bundle --db '$db' $A -o '$out/a1.tftap' 2>/dev/null"

# Nothing secret or host-specific in any bundle's bytes.
for f in a1 a2 p s sp; do
    for s in $SECRETS "$WORK" "$PEERS" "terraform-provider-tftest"; do
        check_eq "$f.tftap holds no '$s'" "$(grep -a -c -F "$s" "$out/$f.tftap")" 0
    done
    check_eq "$f.tftap is one file" "$(ls "$out" | grep -c "^$f.tftap")" 1
    check_eq "$f.tftap is marked a bundle (application_id)" \
        "$(sqlite3 "$out/$f.tftap" "PRAGMA application_id")" 1952871522
    check_eq "$f.tftap has no raw messages, no cwd, no binary paths, no pids" \
        "$(sqlite3 "$out/$f.tftap" "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM runs
           WHERE cwd IS NOT NULL) + (SELECT count(*) FROM processes WHERE binary_path IS NOT NULL
           OR pid IS NOT NULL OR binary_stat IS NOT NULL)")" 0
done

# Read from another directory, with nothing but the bundle: the same as
# the original.
hashes() { sed 's/hmac-sha256:[0-9a-f]\{64\}/hmac-sha256:H/g'; }
# A secret as the original shows it: in clear where it was recorded so
# (the --record-sensitive run, stored state), else as the bundle does.
secrets() {
    sed -e 's/{"\$sensitive":"hmac-sha256:[0-9a-f]\{64\}"}/SECRET/g' \
        -e 's/"[a-z0-9]*-Q7ZBUNDLE[A-Z]*"/SECRET/g' -e 's/(sensitive value)/SECRET/g' \
        -e 's/hmac-sha256:[0-9a-f]\{64\}/hmac-sha256:H/g'
}
same_read() { # NAME DB RUN BUNDLE ARGS...
    local name=$1 rdb=$2 run=$3 b=$4
    shift 4
    (cd "$other" && "$TFTAP" "$@" --db "$rdb" "$run" >"$WORK/o.out" 2>&1)
    local ro=$?
    (cd "$other" && "$TFTAP" "$@" "$b" >"$WORK/b.out" 2>&1)
    local rb=$?
    check_eq "$name: exit code on the bundle" "$rb" "$ro"
    if [ -s "$WORK/o.out" ] && cmp -s <(secrets <"$WORK/o.out") <(secrets <"$WORK/b.out"); then
        ok "$name: the bundle reads as the original ($(wc -l <"$WORK/o.out") lines)"
    else
        not_ok "$name: the bundle reads differently (< original, > bundle)"
        diff <(secrets <"$WORK/o.out") <(secrets <"$WORK/b.out") | head -20
    fi
}
for c in show calls check "show --json" "calls --json" "check --json"; do
    # shellcheck disable=SC2086
    same_read "apply: $c" "$db" "$A" "$out/a1.tftap" $c
    # shellcheck disable=SC2086
    same_read "plan: $c" "$db" "$P" "$out/p.tftap" $c
    # shellcheck disable=SC2086
    same_read "--record-sensitive: $c" "$dbs" "$S" "$out/s.tftap" $c
    # shellcheck disable=SC2086
    same_read "--record-sensitive plan: $c" "$dbs" "$SP" "$out/sp.tftap" $c
done
check_eq "schema BUNDLE = schema RUN" \
    "$(cd "$other" && "$TFTAP" schema "$out/a1.tftap" tftap/tftest6 --json | jq -S . | md5sum)" \
    "$(cd "$other" && "$TFTAP" schema --db "$db" "$A" tftap/tftest6 --json | jq -S . | md5sum)"
# A bundle of an older database version reads (brought up to date in
# memory), its file untouched; one of a newer version is refused.
# Back to version 4: version 10's run_files dropped, version 8's call_addresses back into calls (views
# that read them there stand in for the older ones, which the migration
# replaces), version 7's processes.uuid and gaps.seq, version 6's
# runs.uuid and runs.key_id undone.
OLDER="DROP TABLE run_files; ALTER TABLE processes DROP COLUMN start_error;
       ALTER TABLE runs DROP COLUMN values_kept; ALTER TABLE runs DROP COLUMN redactions; DROP TABLE run_secrets;
       DROP INDEX runs_parent; ALTER TABLE runs DROP COLUMN parent_id;
       ALTER TABLE runs DROP COLUMN test_name; ALTER TABLE runs DROP COLUMN test_step;
       DROP VIEW v_calls; DROP VIEW v_resource_changes; DROP VIEW v_diagnostics;
       ALTER TABLE calls ADD COLUMN address TEXT; ALTER TABLE calls ADD COLUMN address_note TEXT;
       UPDATE calls SET address = (SELECT address FROM call_addresses a WHERE a.call_id = calls.id),
           address_note = (SELECT address_note FROM call_addresses a WHERE a.call_id = calls.id);
       DROP TABLE call_addresses;
       CREATE VIEW v_calls AS SELECT c.id AS call_id, c.address FROM calls c;
       CREATE VIEW v_resource_changes AS SELECT c.id AS call_id, c.address, c.address_note FROM calls c;
       CREATE VIEW v_diagnostics AS SELECT c.id AS call_id, c.address FROM calls c;
       DROP INDEX processes_uuid; ALTER TABLE processes DROP COLUMN uuid;
       DROP INDEX gaps_seq; ALTER TABLE gaps DROP COLUMN seq;
       DROP TRIGGER runs_uuid; DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid;
       ALTER TABLE runs DROP COLUMN key_id; PRAGMA user_version = 4"
cp "$out/a1.tftap" "$WORK/old.tftap"
sqlite3 "$WORK/old.tftap" "$OLDER"
sum=$(md5sum <"$WORK/old.tftap")
check "an older bundle: its addresses in calls" \
    test "$(sqlite3 "$WORK/old.tftap" "SELECT count(address) FROM calls")" -gt 0
check_eq "an older bundle reads as a current one" "$(cd "$other" && "$TFTAP" show "$WORK/old.tftap" 2>&1)" \
    "$(cd "$other" && "$TFTAP" show "$out/a1.tftap" 2>&1)"
check_eq "an older bundle: runs --db" "$(cd "$other" && "$TFTAP" runs --db "$WORK/old.tftap" --json | jq '.[0].id')" "$A"
check_eq "an older bundle is left as it is" "$(md5sum <"$WORK/old.tftap")" "$sum"
# Its run gets the same uuid each time it is opened (from the file's
# bytes): pushed twice, it is there once.
"$TFTAP" push "$WORK/old.tftap" --to "$WORK/merged.db" >"$WORK/old-push1.out" 2>&1
"$TFTAP" push "$WORK/old.tftap" --to "$WORK/merged.db" >"$WORK/old-push2.out" 2>&1
check_eq "an older bundle pushed twice: once there" \
    "$(tail -1 "$WORK/old-push1.out") / $(tail -1 "$WORK/old-push2.out") / $(sqlite3 "$WORK/merged.db" "SELECT count(*) || ' ' || (SELECT key_id FROM runs) FROM runs")" \
    "pushed 1 run ($(sqlite3 "$out/a1.tftap" "SELECT count(*) FROM calls") calls), 0 already there / pushed 0 runs (0 calls), 1 already there / 1 unknown"
check_eq "an older bundle pushed: its values as they are" \
    "$(sqlite3 "$WORK/merged.db" "SELECT md5sum FROM (SELECT group_concat(request_json || response_json, '') AS md5sum FROM (SELECT * FROM calls ORDER BY id))")" \
    "$(sqlite3 "$out/a1.tftap" "SELECT md5sum FROM (SELECT group_concat(request_json || response_json, '') AS md5sum FROM (SELECT * FROM calls ORDER BY id))")"
check_eq "an older bundle pushed: its addresses" \
    "$(sqlite3 "$WORK/merged.db" "SELECT group_concat(x, ' ') FROM (SELECT c.call_seq || '=' || coalesce(a.address, '') || '/' || coalesce(a.address_note, '') AS x
                                  FROM call_addresses a JOIN calls c ON c.id = a.call_id ORDER BY x)")" \
    "$(sqlite3 "$WORK/old.tftap" "SELECT group_concat(x, ' ') FROM (SELECT call_seq || '=' || coalesce(address, '') || '/' || coalesce(address_note, '') AS x
                                  FROM calls WHERE address IS NOT NULL OR address_note IS NOT NULL ORDER BY x)")"
check_eq "an older bundle is still left as it is" "$(md5sum <"$WORK/old.tftap")" "$sum"
cp "$out/a1.tftap" "$WORK/new.tftap"
sqlite3 "$WORK/new.tftap" "PRAGMA user_version = 99"
check_eq "a newer bundle: one error line" "$(cd "$other" && "$TFTAP" show "$WORK/new.tftap" 2>&1)" \
    "tftap: cannot read $WORK/new.tftap: not a tftap database or bundle, or one of another tftap version"
check_eq "show FILE:RUN = show FILE" "$(cd "$other" && "$TFTAP" show "$out/a1.tftap:$A")" \
    "$(cd "$other" && "$TFTAP" show "$out/a1.tftap")"
check_eq "runs --db BUNDLE" "$(cd "$other" && "$TFTAP" runs --db "$out/a1.tftap" --json | jq -c '[.[] | [.id, .cwd, .calls]]')" \
    "[[$A,null,$(sqlite3 "$db" "SELECT count(*) FROM calls WHERE run_id = $A")]]"
check_eq "export: no cwd, no binary path" \
    "$(cd "$other" && "$TFTAP" export "$out/a1.tftap" | jq -r 'select(.kind == "run" or .kind == "process") | [.cwd, .binary_path] | map(tostring) | join(",")' | sort -u)" \
    "null,null"
check_eq "the bundle file is unchanged by reading it" "$(ls "$out" | tr '\n' ' ')" "a1.tftap a2.tftap p.tftap s.tftap sp.tftap "

# diff: the original against its bundle behaves the same; two bundles
# compare as their originals do.
(cd "$other" && "$TFTAP" diff --db "$db" "$A" "$out/a1.tftap" --json >"$WORK/d.json")
check_eq "diff RUN BUNDLE: same behaviour (exit 0)" "$?" 0
check_eq "diff RUN BUNDLE: no behaviour difference" "$(jq '.differences' "$WORK/d.json")" 0
(cd "$other" && "$TFTAP" diff "$out/a1.tftap" "$out/a2.tftap" >/dev/null)
check_eq "diff BUNDLE BUNDLE: same behaviour (exit 0)" "$?" 0
(cd "$other" && "$TFTAP" diff --db "$db" "$A" "$P" --json >"$WORK/d1.json")
r1=$?
(cd "$other" && "$TFTAP" diff "$out/a1.tftap" "$out/p.tftap" --json >"$WORK/d2.json")
check_eq "diff of two bundles exits as diff of their runs" "$?" "$r1"
check "diff of two bundles: some behaviour differences" test "$(jq '.differences' "$WORK/d1.json")" -gt 0
check_eq "diff of two bundles: the same behaviour differences" \
    "$(jq -c '[.same, .differences, [.changes[] | select(.behaviour)]]' "$WORK/d2.json" | secrets)" \
    "$(jq -c '[.same, .differences, [.changes[] | select(.behaviour)]]' "$WORK/d1.json" | secrets)"

# Secrets: equal inside a bundle, keyed differently by every bundle and by
# the database; a run recorded in clear is keyed the same way.
secret_hashes() { # DB RUN
    sqlite3 "$1" "SELECT DISTINCT json_extract(response_json, '\$.new_state.secret.\"\$sensitive\"')
        FROM calls WHERE run_id = $2 AND rpc = 'ApplyResourceChange' AND type_name = 'tftest6_thing'"
}
h0=$(secret_hashes "$db" "$A") h1=$(secret_hashes "$out/a1.tftap" "$A") h2=$(secret_hashes "$out/a2.tftap" "$A")
hs=$(secret_hashes "$out/s.tftap" "$S")
check_eq "database: one hash for the two equal secrets" "$(echo "$h0" | grep -c '^hmac-sha256:')" 1
check_eq "bundle: one hash for the two equal secrets" "$(echo "$h1" | grep -c '^hmac-sha256:[0-9a-f]\{64\}$')" 1
check_eq "bundle again: one hash for the two equal secrets" "$(echo "$h2" | grep -c '^hmac-sha256:[0-9a-f]\{64\}$')" 1
check_eq "--record-sensitive bundle: one hash for the two equal secrets" \
    "$(echo "$hs" | grep -c '^hmac-sha256:[0-9a-f]\{64\}$')" 1
check "bundle hash differs from the database's" test "$h1" != "$h0"
check "each bundle has its own key" test "$h1" != "$h2"

# A bundle replays elsewhere: the plan in a fresh directory with the
# applied state, a CLI config that installs no provider: the same plan.
mkdir -p "$WORK/nothing" "$WORK/replay"
printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' \
    "$WORK/nothing" >"$WORK/none.tfrc"
cp "$w/main.tf" "$WORK/replay/"
cp "$WORK/applied.tfstate" "$WORK/replay/terraform.tfstate"
(cd "$WORK/replay" && TF_CLI_CONFIG_FILE=$WORK/none.tfrc "$TFTAP" replay "$out/p.tftap" \
    --db "$WORK/replay.db" -- tofu plan -input=false -no-color -var suffix=2 \
    >"$WORK/plan.replay" 2>"$WORK/plan.replay.err")
check_eq "replay BUNDLE: exit code" "$?" 0
# (Refreshes run in parallel: lines in any order.)
if grep -v '^ - tftap/tftest[56] in /' "$WORK/plan.replay" | sort >"$WORK/b" &&
    grep -v '^ - tftap/tftest[56] in /' "$WORK/plan.out" | sort >"$WORK/a" && cmp -s "$WORK/a" "$WORK/b" &&
    grep -q 'tftest6_thing.a will be updated in-place' "$WORK/b"; then
    ok "replay BUNDLE: the same plan text"
else
    not_ok "replay BUNDLE: plan text (< original, > replay)"
    diff "$WORK/a" "$WORK/b" | head -20
    head -20 "$WORK/plan.replay.err"
fi

# Corrupted bundles: one error line (exit 1, or 2 for the judging
# commands), or a normal answer, never a crash. Deterministic offsets.
size=$(stat -c %s "$out/a1.tftap")
printf 'not a database\n' >"$WORK/text.tftap"
: >"$WORK/empty.tftap"
head -c 3000 "$out/a1.tftap" >"$WORK/trunc.tftap"
sqlite3 "$WORK/other.tftap" "CREATE TABLE t(x); PRAGMA application_id = 1952871522;"
files="$WORK/text.tftap $WORK/empty.tftap $WORK/trunc.tftap $WORK/other.tftap"
seed=12345
for i in $(seq 1 40); do
    f=$WORK/c$i.tftap
    cp "$out/a1.tftap" "$f"
    # Every fourth an older version: the in-memory path reads it.
    [ $((i % 4)) = 0 ] && sqlite3 "$f" "$OLDER"
    n=$((1 + i % 3))
    for _ in $(seq 1 $n); do
        seed=$(((seed * 1103515245 + 12345) % 2147483648))
        off=$((seed % size))
        seed=$(((seed * 1103515245 + 12345) % 2147483648))
        printf "\\$(printf %03o $((seed % 256)))\\$(printf %03o $(((seed / 256) % 256)))" |
            dd of="$f" bs=1 seek="$off" conv=notrunc 2>/dev/null
    done
    files="$files $f"
done
bad=0 errors=0
for f in $files; do
    for c in show calls check export runs diff; do
        case $c in
        runs)
            # --db of a file that is no bundle is a database to bring up
            # to date (written): only the corrupted bundles here.
            case $f in */c[0-9]*.tftap) ;; *) continue ;; esac
            (cd "$other" && "$TFTAP" runs --db "$f" >/dev/null 2>"$WORK/c.err")
            ;;
        diff) (cd "$other" && "$TFTAP" diff "$out/a1.tftap" "$f" >/dev/null 2>"$WORK/c.err") ;;
        *) (cd "$other" && "$TFTAP" $c "$f" >/dev/null 2>"$WORK/c.err") ;;
        esac
        rc=$? lines=$(wc -l <"$WORK/c.err")
        case $c:$rc in
        # Two bundles' secrets are hashed with keys of their own: diff
        # says so in one warning line (and of a run the damage left
        # without an end, in another).
        diff:0 | diff:1) [ "$(grep -cv 'secret values are not comparable\|has no end in the record yet' \
            "$WORK/c.err")" = 0 ] ||
            rc=crash ;;
        check:0 | check:1 | [a-z]*:0) [ "$lines" = 0 ] || rc=crash ;;
        check:2 | diff:2 | show:1 | calls:1 | export:1 | runs:1)
            errors=$((errors + 1))
            [ "$lines" = 1 ] && grep -q '^tftap: ' "$WORK/c.err" || rc=crash
            ;;
        *) rc=crash ;;
        esac
        if [ "$rc" = crash ]; then
            bad=$((bad + 1))
            echo "corrupted $(basename "$f"): $c: stderr:"
            head -5 "$WORK/c.err"
        fi
    done
done
check_eq "corrupted bundles: one error line or an answer, never a crash" "$bad" 0
check "corrupted bundles: some were refused with an error" test "$errors" -gt 10
check_eq "a text file as SOURCE: the error" "$(cd "$other" && "$TFTAP" show "$WORK/text.tftap" 2>&1)" \
    "tftap: cannot read $WORK/text.tftap: not a tftap database or bundle, or one of another tftap version"
check_eq "an empty file as SOURCE is left empty" "$(stat -c %s "$WORK/empty.tftap")" 0

# A bundle is checked before it is believed: a schema whose bytes no longer
# match its digest (a flipped byte, as a damaged copy would have) is one
# line naming it, exit 1, for every reader of a RUN and for replay.
cp "$out/a1.tftap" "$WORK/damaged.tftap"
sqlite3 "$WORK/damaged.tftap" "UPDATE schemas SET raw = CAST(zeroblob(1) || substr(raw, 2) AS BLOB)
    WHERE sha256 = (SELECT min(sha256) FROM schemas)"
bad=$(sqlite3 "$WORK/damaged.tftap" "SELECT substr(min(sha256), 1, 16) FROM schemas")
# (check, which exits 1 for what it finds, exits 2 on an error.)
for c in show:1 calls:1 export:1 check:2; do
    "$TFTAP" ${c%:*} "$WORK/damaged.tftap" >/dev/null 2>"$WORK/damaged.err"
    check_eq "a damaged schema: ${c%:*} exits ${c#*:} with one line" "$? $(cat "$WORK/damaged.err")" \
        "${c#*:} tftap: $WORK/damaged.tftap: the schema $bad... does not match its digest: the bundle is damaged"
done
"$TFTAP" replay "$WORK/damaged.tftap" --out "$WORK/damaged-out" >/dev/null 2>"$WORK/damaged.err"
check_eq "a damaged schema: replay refuses it too" "$? $(cat "$WORK/damaged.err")" \
    "1 tftap: $WORK/damaged.tftap: the schema $bad... does not match its digest: the bundle is damaged"
"$TFTAP" show "$out/a1.tftap" >/dev/null 2>&1
check_eq "the undamaged bundle still reads" "$?" 0
finish
