#!/bin/sh
# Replays the bundle redaction's fuzz corpus.
exec "${top_builddir:-.}/tests/fuzz/replay_redact" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_redact"
