#!/bin/sh
# Replays the replay-encoder corpus (decoded JSON back to msgpack and protobuf).
exec "${top_builddir:-.}/tests/fuzz/replay_encode" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_encode"
