#!/usr/bin/env bash
# The decoder's inverse (replay) over real traffic: tofu applies two
# configurations with the test providers (protocols 5 and 6: creates, an
# update of every value type with unknown and sensitive values, a
# replacement, a destroy) under `tftap run --keep-raw --record-sensitive`.
# Every recorded message decodes, encodes back and decodes to the same JSON;
# those without reduced forms (docs/replay.md) come back byte for byte. A
# second, redacted recording's stored JSON (what replay answers from) must
# encode and decode back alike.
. "$(dirname "$0")/lib.sh"
need_peers
w=$WORK/w db=$WORK/raw.db rdb=$WORK/redacted.db
mkdir -p "$w"
cp "$top_srcdir/tests/e2e/configs/show/v1.tf.txt" "$w/main.tf"
(cd "$w" && tofu init -input=false -no-color >/dev/null) || not_ok "init"
for v in v1 v2; do
    cp "$top_srcdir/tests/e2e/configs/show/$v.tf.txt" "$w/main.tf"
    (cd "$w" && "$TFTAP" run --db "$db" --keep-raw --record-sensitive -- tofu apply -auto-approve \
        -input=false -no-color >"$WORK/apply-$v.out" 2>&1) || not_ok "$v applied (raw)"
done
(cd "$w" && "$TFTAP" run --db "$rdb" -- tofu plan -input=false -no-color >"$WORK/plan.out" 2>&1) ||
    not_ok "planned (redacted)"
(cd "$w" && "$TFTAP" run --db "$rdb" -- tofu destroy -auto-approve -input=false -no-color \
    >"$WORK/destroy.out" 2>&1) || not_ok "destroyed (redacted)"

msgs=$(sqlite3 "$db" "SELECT count(*) FROM messages")
rpcs=$(sqlite3 "$db" "SELECT count(DISTINCT rpc) FROM calls")
check "recorded raw messages of several methods ($msgs messages, $rpcs methods)" \
    test "$msgs" -gt 40 -a "$rpcs" -gt 6

"$top_builddir/tests/decoder/encode_db" "$db" >"$WORK/raw.txt" 2>&1
st=$?
cat "$WORK/raw.txt" | tail -20
check "every raw message round-trips" test $st -eq 0
equal=$(sed -n 's/.* \([0-9]*\) byte-equal.*/\1/p' "$WORK/raw.txt")
check "most raw messages come back byte for byte ($equal of $msgs)" test "${equal:-0}" -gt $((msgs / 2))

sens=$(sqlite3 "$rdb" "SELECT count(*) FROM calls WHERE response_json LIKE '%\$sensitive%'")
check "the redacted run holds redacted values ($sens calls)" test "$sens" -gt 0
"$top_builddir/tests/decoder/encode_db" "$rdb" >"$WORK/redacted.txt" 2>&1
st=$?
cat "$WORK/redacted.txt" | tail -20
check "every stored (redacted) message encodes and decodes back" test $st -eq 0
finish
