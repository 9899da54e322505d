#!/bin/sh
# Replays the run diff / schema diff fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_diff" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_diff"
