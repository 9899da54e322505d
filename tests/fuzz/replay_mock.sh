#!/bin/sh
# Replays the mock fuzz corpus (recorded values, configurations, schemas).
exec "${top_builddir:-.}/tests/fuzz/replay_mock" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_mock"
