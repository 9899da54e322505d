#!/bin/sh
# Replays the web API routing fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_web_api" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_web_api"
