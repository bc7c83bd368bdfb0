#!/usr/bin/env python3
"""Writes the seed corpus of src/protocol/dispatch_fuzzer.cc into this directory.

Struct layouts come from src/protocol/messages.json through gen_protocol.py's own layout(), so
the seeds stay well-formed as messages change. Each seed is a mode byte and a sequence of
[u16 length][message] records (see dispatch_fuzzer.cc): a realistic session per seed, which
the fuzzer then mutates. Run it after changing messages.json:

    python3 tests/fuzz/protocol/make_seeds.py
"""

import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "src", "protocol"))
import gen_protocol  # noqa: E402

SPEC = json.load(open(os.path.join(HERE, "..", "..", "..", "src", "protocol", "messages.json")))
MESSAGES = {m["name"]: m for m in SPEC["messages"]}
PACK = {"u8": "B", "u16": "H", "u32": "I", "i32": "i", "u64": "Q", "i64": "q", "f32": "f",
        "handle": "Q", "dptr": "Q", "char": "s"}

PTX = b""".version 7.5
.target sm_75
.address_size 64
.global .align 4 .u32 table[4] = {1, 2, 3, 4};
.visible .entry axpi(.param .u64 x, .param .u64 y, .param .u32 a, .param .u32 n)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u32 %r1, [a];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %tid.x;
  setp.ge.u32 %p, %r3, %r2;
  @%p bra done;
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r4, [%rd4];
  mad.lo.u32 %r5, %r4, %r1, %r3;
  add.s64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r5;
done:
  ret;
}
"""


def request(name, payload=b"", flags=0, **fields):
    """One message: header (op, flags, seq 0: the fuzzer's mode bit 0 renumbers) + body."""
    msg = MESSAGES[name]
    members, size = gen_protocol.layout(msg.get("request", []))
    body = bytearray(size)
    for _decl, field, offset, base, count in members:
        if field is None or field not in fields:
            continue
        value = fields[field]
        if base == "char":
            body[offset:offset + count] = value.ljust(count, b"\0")[:count]
        elif count:
            struct.pack_into("<%d%s" % (count, PACK[base]), body, offset, *value)
        else:
            struct.pack_into("<" + PACK[base], body, offset, value)
    return struct.pack("<IIQ", msg["id"], flags, 0) + bytes(body) + payload


def entry(name, payload=b"", **fields):
    """One entry of a GraphExecCreate payload (host/session_graph.cc): op, size, the request's
    fixed part and payload, padded to 8 bytes."""
    body = request(name, payload, **fields)[16:]  # without the message header
    return struct.pack("<II", MESSAGES[name]["id"], len(body)) + body + b"\0" * (-len(body) % 8)


def seed(mode, *messages):
    out = bytes([mode])
    for m in messages:
        out += struct.pack("<H", len(m)) + m
    return out

# Relocatable PTX for a link image: a kernel calling an external function the second defines.
LINK_MAIN = b""".version 7.5
.target sm_75
.address_size 64
.extern .func (.param .b32 r) twice(.param .b32 x);
.visible .entry call_twice(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 a;
  .param .b32 r;
  st.param.b32 [a], %r1;
  call.uni (r), twice, (a);
  ld.param.b32 %r2, [r];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
"""
LINK_LIB = b""".version 7.5
.target sm_75
.address_size 64
.visible .func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
"""


# Texture and surface instructions through objects (docs/textures.md).
TEX_PTX = b""".version 7.5
.target sm_75
.address_size 64
.visible .entry sample(.param .u64 tex, .param .u64 surf, .param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [tex];
  ld.param.u64 %rd2, [surf];
  ld.param.u64 %rd3, [out];
  mov.f32 %f1, 0f3FC00000;
  tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];
  st.global.f32 [%rd3], %f2;
  mov.u32 %r1, 4;
  suld.b.2d.b32.clamp {%r2}, [%rd2, {%r1, %r1}];
  sust.b.2d.b32.trap [%rd2, {%r1, %r1}], {%r2};
  txq.width.b32 %r3, [%rd1];
  st.global.u32 [%rd3+4], %r3;
  ret;
}
"""


def link_image(*inputs):
    """src/protocol/link_image.h: header, then (type, name, data) records padded to 8 bytes."""
    body = b""
    for kind, name, data in inputs:
        record = struct.pack("<IIQ", kind, len(name), len(data)) + name + data
        body += record + b"\0" * (-len(record) % 8)
    return b"PVGPULNK" + struct.pack("<IIQ", 1, len(inputs), 24 + len(body)) + body


def main():
    version = SPEC["version"]
    hello = request("Hello", protocol_version=version, guest_pid=1, guest_name=b"seed")
    ctx = request("CtxCreate", ctx=16, device=0)
    alloc = request("MemAlloc", ctx=16, size=4096)
    # The cpu adapter's first allocation of a context: the address the seeds point at.
    base = 0x10000000000
    seeds = {
        "hello_only": seed(1, hello),
        "status": seed(1, hello, request("HostStatus"), request("DeviceGetInfo", device=0)),
        "context_life": seed(1, hello, ctx, request("MemGetInfo", ctx=16),
                             request("CtxSetLimit", ctx=16, limit=1, value=4096),
                             request("CtxSynchronize", ctx=16), request("CtxDestroy", ctx=16)),
        "copies": seed(1, hello, ctx, alloc, alloc,
                       request("MemcpyHtoD", b"0123456789abcdef", ctx=16, dst=base),
                       request("MemcpyDtoD", ctx=16, dst=base + 4096, src=base, size=16),
                       request("MemcpyDtoH", ctx=16, src=base + 4096, size=16),
                       request("Memset", ctx=16, dst=base, pitch=64, value=7, element_size=4,
                               width=16, height=4),
                       request("MemFree", ctx=16, dptr=base)),
        "module_launch": seed(1, hello, ctx, alloc,
                              request("ModuleLoad", PTX + b"\0", ctx=16, module=5, image_kind=1,
                                      log_limit=1024),
                              request("LaunchKernel", struct.pack("<QQII", base, base, 3, 4),
                                      ctx=16, module=5, kernel=0, grid=[1, 1, 1],
                                      block=[32, 1, 1]),
                              request("CtxSynchronize", ctx=16),
                              request("ModuleUnload", ctx=16, module=5)),
        "linked_module": seed(1, hello, ctx, alloc,
                              request("ModuleLoad",
                                      link_image((1, b"main.ptx", LINK_MAIN),
                                                 (1, b"lib.ptx", LINK_LIB)),
                                      ctx=16, module=6, image_kind=4, log_limit=1024),
                              request("LaunchKernel", struct.pack("<Q", base), ctx=16, module=6,
                                      kernel=0, grid=[1, 1, 1], block=[32, 1, 1]),
                              request("CtxSynchronize", ctx=16),
                              request("ModuleUnload", ctx=16, module=6)),
        "streams_events": seed(1, hello, ctx, request("StreamCreate", ctx=16, stream=7),
                               request("EventCreate", ctx=16, event=8),
                               request("EventCreate", ctx=16, event=9),
                               request("EventRecord", ctx=16, event=8, stream=7),
                               request("EventRecord", ctx=16, event=9, stream=7),
                               request("StreamSynchronize", ctx=16, stream=7),
                               request("EventElapsedTime", ctx=16, start=8, end=9),
                               request("EventDestroy", ctx=16, event=8),
                               request("StreamDestroy", ctx=16, stream=7)),
        "region_without_fd": seed(1, hello, request("HostRegionCreate", region=3, size=4096)),
        "managed_without_fd": seed(1, hello, ctx,
                                   request("ManagedAlloc", ctx=16, region=3,
                                           address=0x7f0000000000, size=4096)),
        "overflowing_ranges": seed(1, hello, ctx, alloc,
                                   request("MemcpyDtoD", flags=2, ctx=16, dst=base, src=base,
                                           size=2**64 - 1),
                                   request("Memset", flags=2, ctx=16, dst=base, pitch=2**62,
                                           element_size=4, width=16, height=8),
                                   request("MemcpyDtoH", ctx=16, src=base + 4092, size=64)),
        # A module image staged in chunks, loaded and launched.
        "module_upload": seed(1, hello, ctx, alloc,
                              request("ModuleUploadBegin", upload=30, size=len(PTX) + 1),
                              request("ModuleUploadChunk", PTX[:300], upload=30, offset=0),
                              request("ModuleUploadChunk", PTX[300:] + b"\0", upload=30,
                                      offset=300),
                              request("ModuleLoadUploaded", ctx=16, module=5, upload=30,
                                      image_kind=1, log_limit=1024),
                              request("LaunchKernel", struct.pack("<QQII", base, base, 3, 4),
                                      ctx=16, module=5, kernel=0, grid=[1, 1, 1],
                                      block=[32, 1, 1]),
                              request("CtxSynchronize", ctx=16)),
        # The fuzzer's session stages 2 uploads of 64 KiB together at most: sizes past that
        # are refused; then a chunk arrives out of order.
        "upload_limits": seed(1, hello, ctx,
                              request("ModuleUploadBegin", upload=31, size=2**64 - 1),
                              request("ModuleUploadBegin", upload=32, size=40000),
                              request("ModuleUploadBegin", upload=33, size=40000),
                              request("ModuleUploadBegin", upload=34, size=0),
                              request("ModuleUploadChunk", b"x" * 64, upload=32, offset=64)),
        # An array, a texture and a surface over it, a texture over memory, a kernel using
        # them; then descriptors that do not fit their resources (refused, not violations).
        "textures": seed(1, hello, ctx, alloc,
                         request("ArrayCreate", ctx=16, array=40, width=8, height=8, format=0x20,
                                 channels=1, flags=2, levels=1),
                         request("TexObjectCreate", ctx=16, texture=41, array=40,
                                 resource_type=0, address=[1, 1, 1], filter=1),
                         request("TexObjectCreate", ctx=16, texture=42, array=40, surface=1,
                                 resource_type=0),
                         request("TexObjectCreate", ctx=16, texture=43, dptr=base, width=64,
                                 height=4, pitch=256, resource_type=3, format=0x20, channels=1),
                         request("ModuleLoad", TEX_PTX + b"\0", ctx=16, module=5, image_kind=1,
                                 log_limit=1024),
                         request("LaunchKernel", struct.pack("<QQQ", 41, 42, base), ctx=16,
                                 module=5, kernel=0, grid=[1, 1, 1], block=[32, 1, 1]),
                         request("CtxSynchronize", ctx=16),
                         request("TexObjectCreate", ctx=16, texture=44, dptr=base, width=2**40,
                                 height=2**40, pitch=2**63, resource_type=3, format=0x20,
                                 channels=1),
                         request("TexObjectCreate", ctx=16, texture=45, array=40,
                                 resource_type=0, array_level=7),
                         request("ArrayCreate", ctx=16, array=46, width=2**63, height=2**63,
                                 depth=2**63, format=0x20, channels=4, flags=1, levels=64),
                         request("TexObjectDestroy", ctx=16, texture=41),
                         request("ArrayDestroy", ctx=16, array=40),
                         request("TexObjectDestroy", ctx=16, texture=42)),
        "bad_frames": seed(4, b"", b"\1\0\0", hello + b"extra", request("Print", b"hi")),
        "description": seed(4, struct.pack("<I", 1) + struct.pack("<I", 4) + b"axpi"),
        "goodbye": seed(1, hello, request("Goodbye")),
        # The fuzzer's session allows 4 streams: 2 more are refused, one of them is used and
        # one destroyed, then creations go on until the refusals run out and the session ends.
        "limits": seed(1, hello, ctx,
                       *[request("StreamCreate", ctx=16, stream=100 + i) for i in range(6)],
                       request("StreamSynchronize", ctx=16, stream=104),
                       request("StreamDestroy", ctx=16, stream=105),
                       request("CtxSynchronize", ctx=16),
                       *[request("StreamCreate", ctx=16, stream=200 + i) for i in range(6)]),
        # Another context's stream, and a module's handle used as a stream: both name nothing.
        "foreign_handles": seed(1, hello, ctx, request("CtxCreate", ctx=17, device=0),
                                request("StreamCreate", ctx=16, stream=7),
                                request("StreamSynchronize", ctx=17, stream=7),
                                request("ModuleLoad", PTX + b"\0", ctx=16, module=5,
                                        image_kind=1, log_limit=64),
                                request("StreamSynchronize", ctx=16, stream=5)),
        # Stream memory operations: waits that hold at once in each condition and width, bad
        # shapes (an error each), and a wait nothing satisfies, cancelled by the Goodbye.
        "stream_memops": seed(1, hello, ctx, alloc, request("StreamCreate", ctx=16, stream=7),
                              request("MemcpyHtoD", b"\x07\0\0\0\0\0\0\0", ctx=16, dst=base),
                              request("StreamWaitValue", ctx=16, address=base, value=5,
                                      width=4, condition=0),
                              request("StreamWaitValue", ctx=16, stream=7, address=base,
                                      value=7, width=8, condition=1),
                              request("StreamWaitValue", ctx=16, address=base, value=4,
                                      width=4, condition=2),
                              request("StreamWaitValue", ctx=16, address=base, value=0xfffffff0,
                                      width=4, condition=3),
                              request("StreamWaitValue", ctx=16, address=base + 2, width=4),
                              request("StreamWaitValue", ctx=16, address=base, width=3),
                              request("StreamWaitValue", ctx=16, address=base + 4096, width=8),
                              request("CtxSynchronize", ctx=16)),
        # Virtual memory management (docs/memory.md): a reservation (the cpu adapter places the
        # first one at the next 2 MiB boundary), physical memory mapped into it, accessible,
        # copied to and from, exported (the fuzzer's channel passes no descriptors); then an
        # overlapping map, a partial unmap and an unaligned size (errors each), and everything
        # given back.
        "vmm": seed(1, hello, ctx, alloc,
                    request("VmmReserve", ctx=16, reservation=50, size=4 << 20),
                    request("VmmCreate", ctx=16, physical=51, size=2 << 20),
                    request("VmmExport", ctx=16, physical=51),
                    request("VmmMap", ctx=16, reservation=50, physical=51,
                            address=base + (2 << 20), size=2 << 20),
                    request("VmmSetAccess", ctx=16, reservation=50, address=base + (2 << 20),
                            size=2 << 20, flags=3),
                    request("MemcpyHtoD", b"0123456789abcdef", ctx=16, dst=base + (2 << 20)),
                    request("MemcpyDtoH", ctx=16, src=base + (2 << 20), size=16),
                    request("VmmMap", ctx=16, reservation=50, physical=51,
                            address=base + (2 << 20), size=2 << 20),
                    request("VmmUnmap", ctx=16, reservation=50, address=base + (2 << 20),
                            size=1 << 20),
                    request("VmmCreate", ctx=16, physical=52, size=3 << 19),
                    request("VmmRelease", ctx=16, physical=51),
                    request("VmmUnmap", ctx=16, reservation=50, address=base + (2 << 20),
                            size=2 << 20),
                    request("VmmFree", ctx=16, reservation=50)),
        "stream_wait_cancelled": seed(1, hello, ctx, alloc,
                                      request("StreamWaitValue", ctx=16, address=base, value=1,
                                              width=4, condition=1),
                                      request("Goodbye")),
        # Graphs (docs/graphs.md): device work kept by the host and launched as one message.
        "graph": seed(1, hello, ctx, alloc, alloc,
                      request("ModuleLoad", PTX + b"\0", ctx=16, module=5, image_kind=1,
                              log_limit=1024),
                      request("EventCreate", ctx=16, event=8),
                      request("GraphExecCreate",
                              entry("Memset", ctx=16, dst=base, pitch=64, value=7,
                                    element_size=4, width=16, height=1)
                              + entry("LaunchKernel", struct.pack("<QQII", base, base, 3, 4),
                                      ctx=16, module=5, kernel=0, grid=[1, 1, 1],
                                      block=[32, 1, 1])
                              + entry("MemcpyDtoD", ctx=16, dst=base + 4096, src=base, size=64)
                              + entry("EventRecord", ctx=16, event=8),
                              ctx=16, exec=40, count=4),
                      request("GraphExecLaunch", ctx=16, exec=40),
                      request("GraphExecLaunch", flags=2, ctx=16, exec=40),
                      request("MemcpyDtoH", ctx=16, src=base + 4096, size=64),
                      request("GraphExecDestroy", ctx=16, exec=40),
                      request("CtxSynchronize", ctx=16)),
        # What a graph may not hold: a graph message, another context's work, a stray range
        # (an error when it runs, not a violation).
        "graph_abuse": seed(1, hello, ctx, alloc,
                            request("GraphExecCreate",
                                    entry("MemcpyDtoD", ctx=16, dst=2**63, src=base, size=64),
                                    ctx=16, exec=41, count=1),
                            request("GraphExecLaunch", flags=2, ctx=16, exec=41),
                            request("GraphExecCreate",
                                    entry("GraphExecLaunch", ctx=16, exec=41),
                                    ctx=16, exec=42, count=1),
                            request("GraphExecCreate",
                                    entry("MemcpyDtoD", ctx=17, dst=base, src=base, size=4),
                                    ctx=16, exec=43, count=1)),
    }
    for name, data in seeds.items():
        with open(os.path.join(HERE, name + ".bin"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
