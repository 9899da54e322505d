#!/bin/sh
# Replays the HTTP/2 watcher's fuzz corpus (both legs of a relayed connection).
exec "${top_builddir:-.}/tests/fuzz/replay_h2watch" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_h2watch"
