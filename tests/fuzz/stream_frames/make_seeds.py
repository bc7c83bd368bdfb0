#!/usr/bin/env python3
"""Writes the seed corpus of src/transport/stream_frames_fuzzer.cc into this directory.

Each seed is one byte that seeds how the fuzzer cuts the rest into pieces, then a stream of
remote-channel frames (src/transport/stream_frames.h: u32 length, u32 type, body): realistic
streams, and streams that break the rules at each kind of check. Run it after changing the
framing:

    python3 tests/fuzz/stream_frames/make_seeds.py
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MESSAGE, FENCE, HEARTBEAT, GOODBYE, FENCE_WANTED = 1, 2, 3, 4, 5
MAX_MESSAGE = 64 << 10  # the fuzzer's limit


def frame(kind, body=b""):
    return struct.pack("<II", len(body), kind) + body


def message(size, seed):
    return frame(MESSAGE, bytes((seed + i * 7) & 0xFF for i in range(size)))


def value(kind, v):
    return frame(kind, struct.pack("<Q", v))


SEEDS = {
    # A session's traffic: requests, replies, fences, heartbeats, a goodbye.
    "session": message(40, 1) + message(0, 2) + value(FENCE, 1) + frame(HEARTBEAT)
    + message(300, 3) + value(FENCE_WANTED, 3) + value(FENCE, 3) + frame(GOODBYE),
    # Bulk chunks large enough to be read in place.
    "bulk": message(40000, 4) + message(MAX_MESSAGE, 5) + value(FENCE, 9),
    # Many small frames back to back (pipelined launches and their coalesced fence).
    "burst": b"".join(message(150, i) for i in range(60)) + value(FENCE, 60),
    # Fences out of order: the largest wins.
    "fences": value(FENCE, 10) + value(FENCE, 7) + value(FENCE_WANTED, 11) + value(FENCE, 12),
    # Truncated in the middle of a header, and of a body.
    "truncated_header": message(20, 6) + struct.pack("<I", 8),
    "truncated_body": message(20, 7) + struct.pack("<II", 1000, MESSAGE) + b"x" * 10,
    # Each rule broken once.
    "oversized": struct.pack("<II", MAX_MESSAGE + 1, MESSAGE),
    "huge": struct.pack("<II", 0xFFFFFFFF, MESSAGE) + b"y" * 64,
    "short_fence": message(8, 8) + frame(FENCE, b"\x01\x02\x03\x04"),
    "long_wanted": frame(FENCE_WANTED, b"\x00" * 16),
    "heartbeat_body": frame(HEARTBEAT, b"\x01"),
    "goodbye_body": frame(GOODBYE, b"\x00" * 8),
    "unknown_type": message(5, 9) + frame(6, b"") + message(5, 10),
    "type_zero": frame(0),
}


def main():
    for i, (name, stream) in enumerate(sorted(SEEDS.items())):
        with open(os.path.join(HERE, name + ".bin"), "wb") as f:
            f.write(bytes([i * 37 & 0xFF]) + stream)


if __name__ == "__main__":
    main()
