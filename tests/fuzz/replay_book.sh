#!/bin/sh
# Replays the replay book's fuzz corpus (request matching, secrets filled in).
exec "${top_builddir:-.}/tests/fuzz/replay_book" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_book"
