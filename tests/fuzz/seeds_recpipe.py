#!/usr/bin/env python3
"""Writes the recorder pipe reader's seed corpus (tests/fuzz/corpus/fuzz_recpipe):
frames as the tee writes them (struct recorder_frame in host order, x86-64:
u32 kind, i32 a, i32 b, u32 len, u64 call_id, i64 t_us, then len bytes), and
the malformed ones the reader must count and survive."""
import os, struct, sys

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_recpipe")
PROCESS, BEGIN, MESSAGE, END, LOST = 1, 2, 3, 4, 5


def frame(kind, payload=b"", a=0, b=0, call_id=0, t=0, length=None):
    n = len(payload) if length is None else length
    return struct.pack("<IiiIQq", kind, a, b, n, call_id, t) + payload


def call(i, method=b"/tfplugin5.Provider/GetSchema"):
    return (frame(BEGIN, method, call_id=i, t=1000 + i)
            + frame(MESSAGE, b"\x0a\x00", a=0, call_id=i, t=1001 + i)
            + frame(MESSAGE, b"\x12\x03abc", a=1, call_id=i, t=1002 + i)
            + frame(END, b"", a=0, call_id=i, t=1003 + i))


seeds = {
    "one-call": frame(PROCESS, b"registry/x/y\x001.0\x00/bin/p", a=5, b=42) + call(1),
    "two-calls-error": call(1) + call(2) + frame(END, b"not found", a=5, call_id=3),
    "process-one-nul": frame(PROCESS, b"registry\x00no-binary", a=6) + call(1),
    "process-three-nuls": frame(PROCESS, b"a\x00b\x00c\x00d") + call(1),
    "bad-direction": frame(MESSAGE, b"xyz", a=7, call_id=1) + call(2),
    "unknown-kind": frame(9, b"skip me") + call(1),
    "nul-in-method": frame(BEGIN, b"/a\x00b", call_id=1) + call(2),
    "message-over-bound": frame(MESSAGE, b"\x00" * 70000, a=0, call_id=1) + call(2),
    "length-out-of-step": frame(MESSAGE, b"", length=0xFFFFFFFF) + call(1),
    "truncated-payload": frame(BEGIN, b"/x", length=100),
    "truncated-header": frame(BEGIN, b"/x")[:10],
    "empty": b"",
    "tee-dropped": call(1) + frame(LOST, call_id=17) + call(2),
    "lost-with-payload": frame(LOST, b"xx", call_id=3) + call(1),
}
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}", file=sys.stderr)
