#!/bin/sh
# Replays the recorder pipe reader's fuzz corpus (seeds: tests/fuzz/seeds_recpipe.py).
exec "${top_builddir:-.}/tests/fuzz/replay_recpipe" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_recpipe"
