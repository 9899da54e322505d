#!/bin/sh
# Decode benchmark: tftap's msgpack decoder (bench_decode) against go-cty
# (msgpack.Unmarshal + JSON output) on the same corpora, several passes
# each, best and median; prints a table of MB/s of msgpack input.
#
#   bench/decode/run.sh [BENCH_DECODE]     (make bench runs it)
#
# BENCH_DECODE defaults to ./bench/decode/bench_decode (run from the build
# directory). REPEAT=N sets the passes (default 5). The Go half and the
# corpora (10,000 planned resource states; one ~30 MB schema-shaped value)
# are kept in ${TFTAP_CACHE:-$HOME/.cache/tftap}/bench-decode.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:-./bench/decode/bench_decode}
repeat=${REPEAT:-5}
cache="${TFTAP_CACHE:-$HOME/.cache/tftap}/bench-decode"
corpus="$cache/corpus-v1"

go=$(command -v go 2>/dev/null || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
if [ -z "$go" ]; then
    echo "run.sh: go not found (needed for the corpus and the go-cty reference)" >&2
    exit 1
fi
[ -x "$bench" ] || { echo "run.sh: $bench not built (make bench/decode/bench_decode)" >&2; exit 1; }

mkdir -p "$cache"
(cd "$here/go" && "$go" build -mod=readonly -o "$cache/decodebench.$$" .)
mv -f "$cache/decodebench.$$" "$cache/decodebench"
if [ ! -f "$corpus/planned.frames" ] || [ ! -f "$corpus/schema.frames" ]; then
    echo "run.sh: writing the corpora to $corpus ..." >&2
    "$cache/decodebench" gen -out "$corpus.tmp"
    rm -rf "$corpus" && mv "$corpus.tmp" "$corpus"
fi

results=$(mktemp)
trap 'rm -f "$results"' EXIT
echo "run.sh: $repeat passes per corpus; host: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$bench" -r "$repeat" "$corpus/planned.frames" "$corpus/schema.frames" >>"$results"
"$cache/decodebench" run -repeat "$repeat" "$corpus/planned.frames" "$corpus/schema.frames" >>"$results"

# result WHO NAME BYTES PAYLOADS BEST_S MEDIAN_S
awk '
$1 == "result" {
    key = $3; who = $2
    bytes[key] = $4; payloads[key] = $5
    best[who, key] = $4 / 1e6 / $6; median[who, key] = $4 / 1e6 / $7
    if (!(key in seen)) { order[n++] = key; seen[key] = 1 }
}
END {
    printf "%-15s %8s %9s | %17s | %17s | %13s | %17s\n", "corpus", "input", "payloads",
        "tftap MB/s", "go-cty MB/s", "ours/go-cty", "go-cty Unmarshal"
    printf "%-15s %8s %9s | %17s | %17s | %13s | %17s\n", "", "MB", "",
        "best   median", "best   median", "best  median", "MB/s (best)"
    for (i = 0; i < n; i++) {
        k = order[i]
        printf "%-15s %8.1f %9d | %8.1f %8.1f | %8.1f %8.1f | %5.1fx %5.1fx | %8.1f\n", k,
            bytes[k] / 1e6, payloads[k], best["tftap", k], median["tftap", k],
            best["go-cty", k], median["go-cty", k],
            best["tftap", k] / best["go-cty", k], median["tftap", k] / median["go-cty", k],
            best["go-cty-unmarshal", k]
    }
}' "$results"
