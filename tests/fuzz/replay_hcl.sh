#!/bin/sh
# Replays the HCL tokenizer fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_hcl" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_hcl"
