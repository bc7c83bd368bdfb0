// Guests that break the protocol, against a real pvgpud. Expected outcome of every attack: that
// session ends with the reason in the daemon's log ("protocol violation: ..."), the daemon keeps
// running, and a bystander guest (a libcuda program started before the first attack and kept
// alive across all of them) still gets its work done with the data it left on the device intact.
// API-tier mistakes (bad pointers, overflowing ranges) are CUDA errors, not session ends.
#include "tests/hostile/abuse_fixture.h"

namespace pvgpu::hostile {
namespace {

using namespace protocol;

// --- Framing: sizes, order, ops, flags --------------------------------------------------------

TEST_F(ProtocolAbuseTest, EmptyMessage) {
  ExpectFatal("message shorter than its header (0 bytes)", [](RawGuest& g) { g.SendBytes({}); });
}

TEST_F(ProtocolAbuseTest, TruncatedHeader) {
  ExpectFatal("message shorter than its header (7 bytes)", [](RawGuest& g) {
    const uint8_t seven[7] = {1, 0, 0, 0, 0, 0, 0};
    g.SendBytes(seven);
  });
}

TEST_F(ProtocolAbuseTest, TruncatedHello) {
  ExpectFatal("bad size for Hello (8 bytes)", [](RawGuest& g) {
    const uint8_t part[8] = {};
    g.SendOp(static_cast<uint32_t>(Op::kHello), part);
  });
}

TEST_F(ProtocolAbuseTest, OversizedRequest) {
  ExpectFatal("bad size for MemAlloc", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    std::vector<uint8_t> big(sizeof(MemAllocRequest) + 100000, 0xAB);
    g.SendOp(static_cast<uint32_t>(Op::kMemAlloc), big);
  });
}

TEST_F(ProtocolAbuseTest, MessageBeforeHello) {
  ExpectFatal("first message must be Hello", [](RawGuest& g) { g.Send(MemAllocRequest{}); });
}

TEST_F(ProtocolAbuseTest, SecondHello) {
  ExpectFatal("second Hello", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.Hello();
  });
}

TEST_F(ProtocolAbuseTest, SeqDoesNotStartAtOne) {
  ExpectFatal("out-of-order message: seq 5 after 0", [](RawGuest& g) {
    g.set_seq(4);
    g.Hello();
  });
}

TEST_F(ProtocolAbuseTest, RepeatedSeq) {
  ExpectFatal("out-of-order message: seq 1 after 1", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.set_seq(0);
    g.Send(HostStatusRequest{});
  });
}

TEST_F(ProtocolAbuseTest, SkippedSeq) {
  ExpectFatal("out-of-order message: seq 3 after 1", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.set_seq(2);
    g.Send(HostStatusRequest{});
  });
}

// HtoD copies run where they arrive in the ring (Session::RunInPlace), past the checks the
// other messages meet in the session loop: the same checks, so the same violations. (The
// harness's daemon logs at info level; at trace level every message takes the usual path.)
TEST_F(ProtocolAbuseTest, CopyBeforeHello) {
  ExpectFatal("first message must be Hello",
              [](RawGuest& g) { g.Send(MemcpyHtoDRequest{}, Bytes("data", 4)); });
}

TEST_F(ProtocolAbuseTest, CopyWithSkippedSeq) {
  ExpectFatal("out-of-order message: seq 3 after 1", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.set_seq(2);
    g.Send(MemcpyHtoDRequest{}, Bytes("data", 4));
  });
}

TEST_F(ProtocolAbuseTest, CopyWithUnknownFlags) {
  ExpectFatal("unknown message flags 1", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.Send(MemcpyHtoDRequest{}, Bytes("data", 4), kFlagReply);
  });
}

TEST_F(ProtocolAbuseTest, TruncatedCopy) {
  ExpectFatal("bad size for MemcpyHtoD (8 bytes)", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    const uint8_t part[8] = {};
    g.SendOp(static_cast<uint32_t>(Op::kMemcpyHtoD), part);
  });
}

TEST_F(ProtocolAbuseTest, UnknownOp) {
  ExpectFatal("unknown op 9999", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.SendOp(9999, {});
  });
}

TEST_F(ProtocolAbuseTest, UnknownFlags) {
  ExpectFatal("unknown message flags 2147483648", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.Send(HostStatusRequest{}, {}, 0x80000000u);
  });
}

TEST_F(ProtocolAbuseTest, ReplyFlagFromTheGuest) {
  ExpectFatal("unknown message flags 1", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.Send(HostStatusRequest{}, {}, kFlagReply);
  });
}

TEST_F(ProtocolAbuseTest, HostToGuestOpFromTheGuest) {
  ExpectFatal("host-to-guest op sent by the guest", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    g.Send(PrintRequest{}, Bytes("hi", 2));
  });
}

// --- Handles: unknown, zero, reused, stale (used after destroy), out of range -----------------

TEST_F(ProtocolAbuseTest, UnknownContext) {
  ExpectFatal("MemAlloc: unknown context handle 48879", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    MemAllocRequest alloc;
    alloc.ctx = 0xBEEF;
    alloc.size = 64;
    g.Send(alloc);
  });
}

TEST_F(ProtocolAbuseTest, ContextUsedAfterDestroy) {
  ExpectFatal("MemAlloc: unknown context handle 4096", [](RawGuest& g) {
    Open(g);
    CtxDestroyRequest destroy;
    destroy.ctx = kCtx;
    ASSERT_EQ(g.Call(destroy), 0);
    MemAllocRequest alloc;
    alloc.ctx = kCtx;
    alloc.size = 64;
    g.Send(alloc);
  });
}

TEST_F(ProtocolAbuseTest, ContextHandleReused) {
  ExpectFatal("CtxCreate: new context handle 4096 is in use", [](RawGuest& g) {
    Open(g);
    CtxCreateRequest again;
    again.ctx = kCtx;
    g.Send(again);
  });
}

TEST_F(ProtocolAbuseTest, ZeroAsANewHandle) {
  ExpectFatal("CtxCreate: new context handle is 0", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    CtxCreateRequest create;
    create.ctx = 0;
    g.Send(create);
  });
}

// Handles are typed and scoped: another context's stream, or a module's handle passed as a
// stream, names nothing.
TEST_F(ProtocolAbuseTest, StreamOfAnotherContext) {
  ExpectFatal("MemcpyDtoD: unknown stream handle 78", [](RawGuest& g) {
    Open(g);
    CtxCreateRequest other;
    other.ctx = kCtx + 1;
    ASSERT_EQ(g.Call(other), 0);
    StreamCreateRequest create;
    create.ctx = kCtx;
    create.stream = 78;
    g.Send(create);
    MemcpyDtoDRequest copy;
    copy.ctx = kCtx + 1;
    copy.stream = 78;
    g.Send(copy);
  });
}

TEST_F(ProtocolAbuseTest, HandleOfAnotherKind) {
  ExpectFatal("LaunchKernel: unknown stream handle 8", [](RawGuest& g) {
    Open(g);
    LoadModule(g, 8);
    LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = 8;
    launch.stream = 8;  // the module's handle
    g.Send(launch);
  });
}

TEST_F(ProtocolAbuseTest, NoSuchDevice) {
  ExpectFatal("CtxCreate: no such device", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    CtxCreateRequest create;
    create.ctx = 7;
    create.device = 0xFFFFFFFFu;
    g.Send(create);
  });
}

TEST_F(ProtocolAbuseTest, DeviceInfoOutOfRange) {
  ExpectFatal("DeviceGetInfo: no such device", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    DeviceGetInfoRequest info;
    info.device = 12;
    g.Send(info);
  });
}

TEST_F(ProtocolAbuseTest, StreamDestroyedTwice) {
  ExpectFatal("StreamDestroy: unknown stream handle 77", [](RawGuest& g) {
    Open(g);
    StreamCreateRequest create;
    create.ctx = kCtx;
    create.stream = 77;
    g.Send(create);
    StreamDestroyRequest destroy;
    destroy.ctx = kCtx;
    destroy.stream = 77;
    g.Send(destroy);
    g.Send(destroy);
  });
}

TEST_F(ProtocolAbuseTest, CopyOnUnknownStream) {
  ExpectFatal("MemcpyDtoD: unknown stream handle 555", [](RawGuest& g) {
    Open(g);
    MemcpyDtoDRequest copy;
    copy.ctx = kCtx;
    copy.stream = 555;
    g.Send(copy);
  });
}

TEST_F(ProtocolAbuseTest, HtoDCopyOnUnknownStream) {
  ExpectFatal("MemcpyHtoD: unknown stream handle 556", [](RawGuest& g) {
    Open(g);
    MemcpyHtoDRequest copy;
    copy.ctx = kCtx;
    copy.stream = 556;
    g.Send(copy, Bytes("data", 4));
  });
}

TEST_F(ProtocolAbuseTest, EventRecordedAfterDestroy) {
  ExpectFatal("EventRecord: unknown event handle 9", [](RawGuest& g) {
    Open(g);
    EventCreateRequest create;
    create.ctx = kCtx;
    create.event = 9;
    g.Send(create);
    EventDestroyRequest destroy;
    destroy.ctx = kCtx;
    destroy.event = 9;
    g.Send(destroy);
    EventRecordRequest record;
    record.ctx = kCtx;
    record.event = 9;
    g.Send(record);
  });
}

TEST_F(ProtocolAbuseTest, ModuleUsedAfterUnload) {
  ExpectFatal("LaunchKernel: unknown module handle 3", [](RawGuest& g) {
    Open(g);
    LoadModule(g, 3);
    ModuleUnloadRequest unload;
    unload.ctx = kCtx;
    unload.module = 3;
    ASSERT_EQ(g.Call(unload), 0);
    LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = 3;
    g.Send(launch);
  });
}

TEST_F(ProtocolAbuseTest, KernelIndexOutOfRange) {
  ExpectFatal("LaunchKernel: no such kernel", [](RawGuest& g) {
    Open(g);
    LoadModule(g, 4);
    LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = 4;
    launch.kernel = 100000;
    g.Send(launch);
  });
}

TEST_F(ProtocolAbuseTest, KernelParametersOfTheWrongSize) {
  ExpectFatal("LaunchKernel: parameter buffer of 3 bytes", [](RawGuest& g) {
    Open(g);
    LoadModule(g, 5);
    LaunchKernelRequest launch;
    launch.ctx = kCtx;
    launch.module = 5;
    launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
    launch.block[0] = launch.block[1] = launch.block[2] = 1;
    g.Send(launch, Bytes("abc", 3));
  });
}

TEST_F(ProtocolAbuseTest, BadImageKind) {
  ExpectFatal("ModuleLoad: bad image kind", [](RawGuest& g) {
    Open(g);
    ModuleLoadRequest load;
    load.ctx = kCtx;
    load.module = 6;
    load.image_kind = 42;
    g.Send(load, Bytes("x", 1));
  });
}

TEST_F(ProtocolAbuseTest, RegionDestroyedTwice) {
  ExpectFatal("HostRegionDestroy: unknown region handle 21", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    CreateRegion(g, 21);
    HostRegionDestroyRequest destroy;
    destroy.region = 21;
    g.Send(destroy);
    g.Send(destroy);
  });
}

}  // namespace
}  // namespace pvgpu::hostile
