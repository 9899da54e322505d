#!/usr/bin/env bash
# Shell completion over a PostgreSQL record: a real run pushed into a
# server this test starts offers the same run ids, types and addresses
# (tftap complete, and bash completing 'tftap show --db URI ...') as the
# SQLite file it came from.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
need_peers
pg_need
trap 'pg_cleanup; cleanup_work' EXIT
pg_e2e_start
w=$WORK/w db=$WORK/rec.db
new_dir "$top_srcdir/examples/basic" "$w"
(cd "$w" && tofu init -input=false -no-color >/dev/null &&
    "$TFTAP" run --db "$db" -- tofu plan -input=false -no-color -out=p >/dev/null) ||
    not_ok "a plan recorded"
"$TFTAP" push all --db "$db" --to "$URI" >/dev/null
check_eq "pushed" "$?" 0
check_eq "runs: as the file's" "$("$TFTAP" complete runs --db "$URI")" "$("$TFTAP" complete runs --db "$db")"
want=$("$TFTAP" complete targets last --db "$db")
check "the file's run has addresses" grep -q '^tftest5_pet\.server$' <<<"$want"
check_eq "targets: as the file's" "$("$TFTAP" complete targets last --db "$URI")" "$want"
mkdir -p "$WORK/bin"
ln -s "$TFTAP" "$WORK/bin/tftap"
check_eq "bash: 'tftap show --db URI last tftest5_pet.'" "$(PATH=$WORK/bin:$PATH bash -c '
    . "$1"; COMP_LINE="tftap show --db $2 last tftest5_pet."; COMP_POINT=${#COMP_LINE}
    COMP_WORDS=(tftap); COMP_CWORD=5; _tftap; echo "${COMPREPLY[*]}"' _ \
    "$top_builddir/completion/tftap" "$URI")" "tftest5_pet.server"
finish
