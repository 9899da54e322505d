#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/fuzz_h2watch.c: both legs of relayed
HTTP/2 connections carrying tfplugin gRPC calls, as the input format wants
them (chunks of: 1 byte side | clock steps << 1, 2 bytes big-endian length,
the bytes). Header blocks are hand-encoded HPACK: literals without indexing
unless a seed is about the dynamic table; Huffman strings are RFC 7541's
own examples (appendix C.4).

    python3 tests/fuzz/seeds_h2watch.py [tests/fuzz/corpus/fuzz_h2watch]
"""
import os
import struct
import sys

CLIENT, PROVIDER = 0, 1
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = 0, 1, 2, 3, 4, 5, 6, 7
WINDOW_UPDATE, CONTINUATION = 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20


def frame(ftype, flags, stream, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, stream) + payload


def settings(*pairs, ack=False):
    return frame(SETTINGS, ACK if ack else 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def hpack_int(value, prefix_bits, first=0):
    """RFC 7541 5.1: an integer with an N-bit prefix; first holds the flag bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hstr(s, huffman=None):
    """A string literal: raw, or the given Huffman bytes (H bit set)."""
    if huffman is not None:
        return hpack_int(len(huffman), 7, 0x80) + huffman
    s = s.encode() if isinstance(s, str) else s
    return hpack_int(len(s), 7) + s


def lit(name, value):
    """Literal header field without indexing, new name (0x00)."""
    return b"\x00" + hstr(name) + hstr(value)


def lit_indexed(name, value):
    """Literal header field with incremental indexing, new name (0x40)."""
    return b"\x40" + hstr(name) + hstr(value)


def indexed(i):
    return hpack_int(i, 7, 0x80)


def request_block(path, timeout=None):
    b = lit(":method", "POST") + lit(":scheme", "http") + lit(":path", path)
    b += lit(":authority", "localhost") + lit("content-type", "application/grpc")
    b += lit("te", "trailers") + lit("user-agent", "grpc-go/1.68.0")
    if timeout is not None:
        b += lit("grpc-timeout", timeout)
    return b


def response_block():
    return lit(":status", "200") + lit("content-type", "application/grpc")


def trailers_block(status, message=None):
    b = lit("grpc-status", str(status))
    if message is not None:
        b += lit("grpc-message", message)
    return b


def grpc(payload, compressed=0):
    return struct.pack(">BI", compressed, len(payload)) + payload


def chunk(side, data, steps=0):
    out = b""
    while True:  # a chunk holds at most 65535 bytes
        part, data = data[:65535], data[65535:]
        out += bytes([steps << 1 | side]) + struct.pack(">H", len(part)) + part
        steps = 0
        if not data:
            return out


def client_open():
    return chunk(CLIENT, PREFACE + settings((2, 0), (4, 4194304), (6, 16384)))


def provider_open():
    return chunk(PROVIDER, settings((3, 100), (5, 16384)) + settings(ack=True))


def client_ack():
    return chunk(CLIENT, settings(ack=True) + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 983041)))


SCHEMA = "/tfplugin5.Provider/GetProviderSchema"
PLAN = "/tfplugin6.Provider/PlanResourceChange"
# Small protobuf-looking payloads (field 1, length-delimited).
REQ = b"\x0a\x0btest_thing\x12\x02\x80\x01"
RESP = b"\x0a\x21\x0a\x1f\x08\x01\x12\x1b\x0a\x19\x0a\x02id\x1a\x08\"string\"" + b"\x40\x01"


def unary_ok():
    """A whole call: request split over two DATA frames, answer with trailers."""
    msg = grpc(REQ)
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1, request_block(SCHEMA, "5S"))
                    + frame(DATA, 0, 1, msg[:7]))
            + chunk(CLIENT, frame(DATA, END_STREAM, 1, msg[7:]))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS, 1, response_block())
                    + frame(DATA, 0, 1, grpc(RESP))
                    + frame(HEADERS, END_HEADERS | END_STREAM, 1, trailers_block(0)), steps=1))


def trailers_only():
    """An unknown method answered with a trailers-only UNIMPLEMENTED."""
    block = (lit(":status", "200") + lit("content-type", "application/grpc")
             + trailers_block(12, "unknown method GetResourceIdentitySchemas for service "
                                  "tfplugin5.Provider%20%E2%9C%93"))
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1,
                                  request_block("/tfplugin5.Provider/GetResourceIdentitySchemas"))
                    + frame(DATA, END_STREAM, 1, grpc(b"")))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS | END_STREAM, 1, block)))


def cancel_after_deadline():
    """grpc-timeout 5S, then the client's CANCEL 6 s later: DEADLINE_EXCEEDED."""
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1, request_block(PLAN, "5S"))
                    + frame(DATA, END_STREAM, 1, grpc(REQ)))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS, 1, response_block()))
            + chunk(CLIENT, frame(RST_STREAM, 0, 1, struct.pack(">I", 8)), steps=60))


def provider_reset():
    """The provider refuses one stream and resets another mid-answer."""
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1, request_block(SCHEMA))
                    + frame(DATA, END_STREAM, 1, grpc(REQ))
                    + frame(HEADERS, END_HEADERS, 3, request_block(PLAN, "250m"))
                    + frame(DATA, END_STREAM, 3, grpc(REQ)))
            + chunk(PROVIDER, frame(RST_STREAM, 0, 1, struct.pack(">I", 7))
                    + frame(HEADERS, END_HEADERS, 3, response_block())
                    + frame(DATA, 0, 3, grpc(RESP)[:4])
                    + frame(RST_STREAM, 0, 3, struct.pack(">I", 2))))


def continuation():
    """Header blocks spread over HEADERS and CONTINUATION frames."""
    block = request_block(SCHEMA, "10S")
    trailers = trailers_block(0) + lit("x-trace", "a" * 40)
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, 0, 1, block[:20])
                    + frame(CONTINUATION, 0, 1, block[20:60])
                    + frame(CONTINUATION, END_HEADERS, 1, block[60:])
                    + frame(DATA, END_STREAM, 1, grpc(REQ)))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS, 1, response_block())
                    + frame(DATA, 0, 1, grpc(RESP))
                    + frame(HEADERS, END_STREAM, 1, trailers[:9])
                    + frame(CONTINUATION, END_HEADERS, 1, trailers[9:])))


def padded():
    """Padded DATA, and HEADERS with padding and priority."""
    block = request_block(PLAN)
    headers = bytes([5]) + struct.pack(">IB", 0x80000000, 200) + block + b"\0" * 5
    msg = grpc(REQ)
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS | PADDED | PRIO, 1, headers)
                    + frame(DATA, PADDED, 1, bytes([7]) + msg[:3] + b"\0" * 7)
                    + frame(DATA, PADDED | END_STREAM, 1, bytes([0]) + msg[3:]))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS, 1, response_block())
                    + frame(DATA, PADDED, 1, bytes([3]) + grpc(RESP) + b"\0\0\0")
                    + frame(HEADERS, END_HEADERS | END_STREAM, 1, trailers_block(0))))


def table_size():
    """The provider shrinks the client's HPACK table, the client acknowledges
    and starts its next block with a table size update; the client grows the
    provider's table the same way."""
    return (client_open()
            + chunk(PROVIDER, settings((1, 256), (3, 100)))
            + chunk(CLIENT, settings(ack=True) + settings((1, 8192)))
            + chunk(PROVIDER, settings(ack=True))
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1,
                                  hpack_int(256, 5, 0x20) + lit(":method", "POST")
                                  + lit(":scheme", "http") + lit_indexed(":path", SCHEMA)
                                  + lit("content-type", "application/grpc")
                                  + lit("te", "trailers"))
                    + frame(DATA, END_STREAM, 1, grpc(REQ)))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS, 1,
                                    hpack_int(8192, 5, 0x20) + response_block())
                    + frame(DATA, 0, 1, grpc(RESP))
                    + frame(HEADERS, END_HEADERS | END_STREAM, 1, trailers_block(0))))


def table_size_twice():
    """RFC 7541 4.2: the provider changes the client's table size twice (0,
    then 4096) before the client's next block, which then starts with two
    size updates; a plain SETTINGS before them is acknowledged first, and a
    block between the ACKs still uses the old table."""
    block = (lit_indexed(":method", "POST") + lit(":scheme", "http")
             + lit_indexed(":path", SCHEMA) + lit("content-type", "application/grpc")
             + lit("te", "trailers"))
    return (client_open()
            + chunk(PROVIDER, settings() + settings((1, 0)) + settings((1, 4096)))
            + chunk(CLIENT, settings(ack=True)
                    + frame(HEADERS, END_HEADERS, 1, block)
                    + frame(DATA, END_STREAM, 1, grpc(REQ))
                    + frame(HEADERS, END_HEADERS, 3, indexed(63) + indexed(62)
                            + lit(":scheme", "http") + lit("content-type", "application/grpc")
                            + lit("te", "trailers"))
                    + frame(DATA, END_STREAM, 3, grpc(REQ))
                    + settings(ack=True) + settings(ack=True)
                    + frame(HEADERS, END_HEADERS, 5, hpack_int(0, 5, 0x20)
                            + hpack_int(4096, 5, 0x20) + block)
                    + frame(DATA, END_STREAM, 5, grpc(REQ))))


def huffman_dynamic():
    """Static-table indexes, Huffman literals and the dynamic table across
    two calls: the second request is mostly indexes into the first's."""
    first = (indexed(3) + indexed(6)  # :method POST, :scheme http
             + b"\x44" + hstr(SCHEMA)  # :path, incremental indexing, name index 4
             + b"\x41" + hstr(None, bytes.fromhex("f1e3c2e5f23a6ba0ab90f4ff"))  # www.example.com
             + b"\x0f\x09" + hstr(None, bytes.fromhex("a8eb10649cbf"))  # cache-control no-cache
             + b"\x40" + hstr(None, bytes.fromhex("25a849e95ba97d7f"))  # custom-key
             + hstr(None, bytes.fromhex("25a849e95bb8e8b4bf"))  # custom-value
             + lit_indexed("content-type", "application/grpc") + lit("te", "trailers"))
    # Dynamic table now (newest first): 62 content-type, 63 custom-key,
    # 64 :authority, 65 :path.
    second = (indexed(3) + indexed(6) + b"\x04" + hstr(PLAN) + indexed(64) + indexed(62)
              + indexed(63) + lit("te", "trailers"))
    status = b"\x48" + hstr("200") + lit_indexed("content-type", "application/grpc")
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1, first)
                    + frame(DATA, END_STREAM, 1, grpc(REQ))
                    + frame(HEADERS, END_HEADERS, 3, second)
                    + frame(DATA, END_STREAM, 3, grpc(REQ)))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS, 3, status)
                    + frame(DATA, 0, 3, grpc(RESP))
                    + frame(HEADERS, END_HEADERS, 1, indexed(63) + indexed(62))
                    + frame(HEADERS, END_HEADERS | END_STREAM, 3, trailers_block(0))
                    + frame(HEADERS, END_HEADERS | END_STREAM, 1, trailers_block(0))))


def interleaved():
    """Two calls whose frames interleave, PING and GOAWAY between them, and
    chunks cut at arbitrary bytes (inside frame headers and gRPC prefixes)."""
    big = bytes(range(256)) * 80  # a 20 KiB message over two DATA frames
    msg = grpc(big)
    client = (frame(HEADERS, END_HEADERS, 1, request_block(SCHEMA))
              + frame(HEADERS, END_HEADERS, 3, request_block(PLAN, "30S"))
              + frame(DATA, 0, 3, grpc(REQ)[:2])
              + frame(DATA, END_STREAM, 1, grpc(REQ))
              + frame(PING, 0, 0, b"12345678")
              + frame(DATA, END_STREAM, 3, grpc(REQ)[2:]))
    provider = (frame(PING, ACK, 0, b"12345678")
                + frame(HEADERS, END_HEADERS, 3, response_block())
                + frame(HEADERS, END_HEADERS, 1, response_block())
                + frame(DATA, 0, 1, msg[:16384])
                + frame(DATA, 0, 3, grpc(RESP))
                + frame(DATA, 0, 1, msg[16384:])
                + frame(HEADERS, END_HEADERS | END_STREAM, 3, trailers_block(0))
                + frame(HEADERS, END_HEADERS | END_STREAM, 1, trailers_block(0))
                + frame(GOAWAY, 0, 0, struct.pack(">II", 3, 0)))
    out = client_open() + provider_open() + client_ack()
    cuts = [0, 5, 14, 40, 41, 90, 200, len(client)]
    for a, b in zip(cuts, cuts[1:]):
        out += chunk(CLIENT, client[a:b])
    for a in range(0, len(provider), 7000):
        out += chunk(PROVIDER, provider[a:a + 7000])
    return out


def odd_answers():
    """Answers without grpc-status: HTTP 404, an answer ended by DATA, and a
    PUSH_PROMISE (which gRPC never sends) decoded only for its table."""
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block(SCHEMA))
                    + frame(HEADERS, END_HEADERS, 3, request_block(PLAN))
                    + frame(DATA, END_STREAM, 3, grpc(REQ))
                    + frame(HEADERS, END_HEADERS, 5, request_block(PLAN))
                    + frame(DATA, END_STREAM, 5, grpc(REQ)))
            + chunk(PROVIDER, frame(PUSH_PROMISE, END_HEADERS, 1,
                                    struct.pack(">I", 2) + lit_indexed(":path", "/pushed"))
                    + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                            lit(":status", "404") + lit("content-type", "text/plain"))
                    + frame(HEADERS, END_HEADERS, 3, response_block())
                    + frame(DATA, END_STREAM, 3, grpc(RESP))
                    + frame(HEADERS, END_HEADERS | END_STREAM, 5, lit(":status", "503"))))


def malformed_hpack():
    """A header block indexing past both tables: the watching stops, the
    open call ends as not recorded to its end."""
    return (client_open() + provider_open() + client_ack()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1, request_block(SCHEMA))
                    + frame(DATA, END_STREAM, 1, grpc(REQ)))
            + chunk(PROVIDER, frame(HEADERS, END_HEADERS, 1, indexed(100))))


def no_preface():
    """A client that does not speak HTTP/2 with prior knowledge."""
    return chunk(CLIENT, b"POST /tfplugin5.Provider/GetProviderSchema HTTP/1.1\r\n\r\n")


def unclosed():
    """The connection drops mid-call: the watcher's free ends the call."""
    msg = grpc(REQ * 4)
    return (client_open() + provider_open()
            + chunk(CLIENT, frame(HEADERS, END_HEADERS, 1, request_block(SCHEMA, "1H"))
                    + frame(DATA, 0, 1, msg[:30]))
            + chunk(CLIENT, frame(DATA, END_STREAM, 1, msg[30:])[:6]))


SEEDS = {
    "unary-ok": unary_ok,
    "trailers-only-unimplemented": trailers_only,
    "cancel-after-deadline": cancel_after_deadline,
    "provider-reset": provider_reset,
    "continuation": continuation,
    "padded": padded,
    "settings-table-size": table_size,
    "settings-table-size-twice": table_size_twice,
    "huffman-dynamic-table": huffman_dynamic,
    "interleaved-split": interleaved,
    "answers-without-status": odd_answers,
    "malformed-hpack": malformed_hpack,
    "no-preface": no_preface,
    "connection-dropped": unclosed,
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_h2watch")
    os.makedirs(out, exist_ok=True)
    for name, make in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(make())


if __name__ == "__main__":
    main()
