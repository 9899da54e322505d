#!/bin/sh
# Replays the JSON reader's fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_json" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_json"
