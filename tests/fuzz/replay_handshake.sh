#!/bin/sh
# Replays the provider handshake line's fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_handshake" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_handshake"
