#!/bin/sh
# Replays the contract checks' fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_check" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_check"
