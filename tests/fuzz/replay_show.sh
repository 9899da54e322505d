#!/bin/sh
# Replays the recorded-JSON rendering fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_show" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_show"
