#!/bin/sh
# Replays the value decoder's fuzz corpus (seeded from the golden payloads it holds).
exec "${top_builddir:-.}/tests/fuzz/replay_value" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_value"
