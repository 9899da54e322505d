#!/bin/sh
# `tftap decode --schema`: a payload decoded against a resource type's schema
# from real `tofu providers schema -json` output (tests/decoder/golden/schema),
# with the sensitive attribute redacted by default and shown on request.
set -u
dir="${top_srcdir:-.}/tests/decoder/golden/schema"
tftap="${top_builddir:-.}/tftap"
pass=0
fail=0
check() { # check NAME COMMAND...: the command must succeed
    name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $name"; fi
}
decode() {
    "$tftap" decode --schema "$dir/providers-schema.json" "$@"
}

out=$(decode --provider-address tftap/tftest5 --resource tftest5_thing --json "$dir/thing.msgpack")
check "decodes" [ $? -eq 0 ]
check "nested block list" sh -c 'printf %s "$1" | grep -qF "\"rule\":[{\"name\":\"ssh\",\"port\":22}]"' _ "$out"
check "single block with refined unknown" sh -c 'printf %s "$1" | grep -qF "\"settings\":{\"enabled\":false,\"level\":{\"\$unknown\":{\"null\":false,\"prefix\":\"lv-\"}}}"' _ "$out"
check "dynamic attribute" sh -c 'printf %s "$1" | grep -qF "\"dynamic_attr\":{\"type\":[\"list\",\"number\"],\"value\":[1,2]}"' _ "$out"
check "secret redacted" sh -c 'printf %s "$1" | grep -qE "\"secret\":\\{\"\\\$sensitive\":\"hmac-sha256:[0-9a-f]{64}\"\\}"' _ "$out"
check "secret absent" sh -c '! printf %s "$1" | grep -q hunter2' _ "$out"

out=$(decode --provider-address registry.opentofu.org/tftap/tftest5 --resource tftest5_thing --show-sensitive --json "$dir/thing.msgpack")
check "secret shown on request" sh -c 'printf %s "$1" | grep -qF "\"secret\":\"hunter2\""' _ "$out"

err=$(decode --resource tftest5_thing "$dir/thing.msgpack" 2>&1 >/dev/null)
check "ambiguous provider is an error" [ $? -eq 1 ]
check "ambiguous provider message" sh -c 'printf %s "$1" | grep -q "^tftap: .*2 matching providers"' _ "$err"

err=$(decode --provider-address tftest5 --resource nope "$dir/thing.msgpack" 2>&1 >/dev/null)
check "unknown resource type" [ $? -eq 1 ]
check "unknown resource message" [ "$err" = "tftap: $dir/providers-schema.json: no schema for nope" ]

err=$(decode --provider-address tftest5 --resource tftest5_pet "$dir/thing.msgpack" 2>&1 >/dev/null)
check "wrong schema is a decode error" [ $? -eq 1 ]
check "wrong schema message" [ "$err" = "tftap: decode error at .: an object with 5 attributes is required (15 given)" ]

"$tftap" decode --schema "$dir/providers-schema.json" "$dir/thing.msgpack" >/dev/null 2>&1
check "usage error without a kind" [ $? -eq 2 ]

# Nesting is bounded by what the stack holds, with a clear error, never a
# crash: a dynamic value whose type and value nest N levels deep (python3
# writes it: fixarray 2, bin32 type JSON, N one-element arrays).
deep() { # N FILE
    python3 -c '
import struct, sys
n = int(sys.argv[1]); t = "\"string\""
for _ in range(n): t = "[\"list\"," + t + "]"
tb = t.encode()
sys.stdout.buffer.write(b"\x92\xc6" + struct.pack(">I", len(tb)) + tb + b"\x91" * n + b"\xa1x")' "$1" >"$2"
}
tmp=$(mktemp -d)
deep 40000 "$tmp/deep40k"
deep 2000 "$tmp/deep2k"
(ulimit -s 8192 2>/dev/null; "$tftap" decode --type '"dynamic"' --max-depth 100000 "$tmp/deep40k" >/dev/null 2>"$tmp/err")
check "--max-depth past what the stack holds: a usage error" [ $? -eq 2 ]
check "... that says the bound" grep -q '^tftap: --max-depth must be a number from 1 to [0-9]* (what the stack holds' "$tmp/err"
(ulimit -s 8192 2>/dev/null; "$tftap" decode --type '"dynamic"' --max-depth 10000 "$tmp/deep40k" >/dev/null 2>"$tmp/err")
check "40,000 levels under --max-depth 10000: a decode error, no crash" [ $? -eq 1 ]
check "... naming the limit" grep -q 'nested deeper than 10000 levels' "$tmp/err"
"$tftap" decode --type '"dynamic"' --max-depth 2500 --json "$tmp/deep2k" >"$tmp/out" 2>&1
check "2,000 levels under --max-depth 2500: decoded" [ $? -eq 0 ]
rm -rf "$tmp"

echo "decode_schema: $pass passed, $fail failed"
[ $fail -eq 0 ]
