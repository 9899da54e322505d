#!/bin/sh
# Replays the OTLP readers' fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_otlp" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_otlp"
