#!/bin/sh
# Replays the message and schema fuzz corpus (protobuf from peers).
exec "${top_builddir:-.}/tests/fuzz/replay_message" "${top_srcdir:-.}/tests/fuzz/corpus/fuzz_message"
