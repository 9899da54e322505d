#!/bin/sh
# Replays the value decoder's fuzz corpus and every golden payload.
exec "${top_builddir:-.}/tests/fuzz/replay_value" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_value"
