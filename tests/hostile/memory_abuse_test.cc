// Shared memory read as hostile: pinned-region offsets and sizes near UINT64_MAX, memfds that
// are missing, unsealed or too small, a ring whose indices and lengths are garbage, and copies
// whose ranges overflow. Wire-tier violations end the session with a logged reason; API-tier
// ones (a pointer outside every allocation, an overflowing copy) are CUDA errors and the session
// goes on. Same fixture, same bystander as protocol_abuse_test.cc.
#include "tests/hostile/abuse_fixture.h"
#include "tests/hostile/ring_guest.h"

namespace pvgpu::hostile {
namespace {

using namespace protocol;

MemcpyHtoDRegionRequest RegionCopy(uint64_t dst, uint64_t region, uint64_t offset, uint64_t size) {
  MemcpyHtoDRegionRequest copy;
  copy.ctx = kCtx;
  copy.dst = dst;
  copy.region = region;
  copy.offset = offset;
  copy.size = size;
  return copy;
}

// --- Pinned host memory: memfds and region ranges ---------------------------------------------

TEST_F(ProtocolAbuseTest, RegionWithoutItsMemfd) {
  ExpectFatal("HostRegionCreate without its memfd", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    HostRegionCreateRequest create;
    create.region = 1;
    create.size = 4096;
    g.Send(create);
  });
}

TEST_F(ProtocolAbuseTest, RegionFromAnUnsealedMemfd) {
  ExpectFatal("HostRegionCreate: shared memory memfd is not sealed", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    const int fd = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    ASSERT_TRUE(g.endpoint().SendFd(fd).ok());
    close(fd);
    HostRegionCreateRequest create;
    create.region = 1;
    create.size = 4096;
    g.Send(create);
  });
}

TEST_F(ProtocolAbuseTest, RegionLargerThanItsMemfd) {
  ExpectFatal("HostRegionCreate: shared memory memfd has 4096 bytes", [](RawGuest& g) {
    ASSERT_EQ(g.Hello(), 0);
    const int fd = memfd_create("small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
    ASSERT_TRUE(g.endpoint().SendFd(fd).ok());
    close(fd);
    HostRegionCreateRequest create;
    create.region = 1;
    create.size = kMax;
    g.Send(create);
  });
}

TEST_F(ProtocolAbuseTest, RegionOffsetNearUint64Max) {
  ExpectFatal("range [18446744073709551605, +100) outside a host region of 4096", [](RawGuest& g) {
    Open(g);
    CreateRegion(g, 31);
    g.Send(RegionCopy(Alloc(g, 4096), 31, kMax - 10, 100));
  });
}

TEST_F(ProtocolAbuseTest, RegionSizeNearUint64Max) {
  ExpectFatal("range [16, +18446744073709551615) outside a host region", [](RawGuest& g) {
    Open(g);
    CreateRegion(g, 32);
    g.Send(RegionCopy(Alloc(g, 4096), 32, 16, kMax));
  });
}

TEST_F(ProtocolAbuseTest, RegionRangeJustPastItsEnd) {
  ExpectFatal("range [4000, +97) outside a host region", [](RawGuest& g) {
    Open(g);
    CreateRegion(g, 33);
    g.Send(RegionCopy(Alloc(g, 4096), 33, 4000, 97));
  });
}

TEST_F(ProtocolAbuseTest, RegionCopyBackWithWrappingRange) {
  ExpectFatal("range [18446744073709547520, +8192) outside a host region", [](RawGuest& g) {
    Open(g);
    CreateRegion(g, 34);
    MemcpyDtoHRegionRequest copy;
    copy.ctx = kCtx;
    copy.src = Alloc(g, 8192);
    copy.region = 34;
    copy.offset = kMax - 4095;  // offset + size wraps to 4096
    copy.size = 8192;
    g.Send(copy);
  });
}

TEST_F(ProtocolAbuseTest, MapOfAnUnknownRegion) {
  ExpectFatal("HostRegionMap: unknown region handle 999", [](RawGuest& g) {
    Open(g);
    HostRegionMapRequest map;
    map.ctx = kCtx;
    map.region = 999;
    g.Send(map);
  });
}

TEST_F(ProtocolAbuseTest, CopyBackLargerThanTheChannel) {
  ExpectFatal("DtoH chunk larger than the channel allows", [](RawGuest& g) {
    Open(g);
    MemcpyDtoHRequest copy;
    copy.ctx = kCtx;
    copy.src = Alloc(g, 64);
    copy.size = kMax;
    g.Send(copy);
  });
}

// --- The shared ring itself -------------------------------------------------------------------

// Like ExpectFatal, for a guest that writes the ring by hand.
TEST_F(ProtocolAbuseTest, RingTailFarBeyondTheRing) {
  const size_t before = daemon_->CountInLog("protocol violation: channel error:");
  ++attacks_;
  RingGuest guest(daemon_->socket_path());
  guest.Publish(uint64_t{1} << 40);
  EXPECT_TRUE(guest.AwaitHangUp());
  EXPECT_TRUE(Await([&] {
    return daemon_->CountInLog("protocol violation: channel error:") > before;
  })) << daemon_->Log();
  ++ended_;
}

TEST_F(ProtocolAbuseTest, RingLengthWordPastTheTail) {
  const size_t before = daemon_->CountInLog("protocol violation: channel error:");
  ++attacks_;
  RingGuest guest(daemon_->socket_path());
  // An honest Hello first, so the session is past its handshake.
  HelloRequest hello;
  hello.protocol_version = kProtocolVersion;
  guest.WriteRequest(static_cast<uint32_t>(Op::kHello), 1, &hello, sizeof(hello));
  guest.WriteLengthWord(0xFFFFFFF0u);
  guest.Publish(guest.tail() + 64);
  EXPECT_TRUE(guest.AwaitHangUp());
  EXPECT_TRUE(Await([&] {
    return daemon_->CountInLog("protocol violation: channel error:") > before;
  })) << daemon_->Log();
  ++ended_;
}

TEST_F(ProtocolAbuseTest, RingReplyIndexCorrupted) {
  // The host finds the guest's consumer index impossible when it next needs it: once its
  // replies have used the space it last knew free (the whole ring, at first). The replies
  // cannot be delivered and the session must end, with the reason logged.
  const size_t before = daemon_->CountInLog("protocol violation: channel error:");
  ++attacks_;
  RingGuest guest(daemon_->socket_path());
  guest.CorruptReplyHead(uint64_t{1} << 50);
  HelloRequest hello;
  hello.protocol_version = kProtocolVersion;
  guest.WriteRequest(static_cast<uint32_t>(Op::kHello), 1, &hello, sizeof(hello));
  // Each reply is about 1 KiB: more than a ring's worth in all, never read.
  const DeviceGetInfoRequest info{};
  const uint64_t replies = RingGuest::kRing / sizeof(DeviceGetInfoReply) + 8;
  for (uint64_t seq = 2; seq < 2 + replies; ++seq) {
    guest.WriteRequest(static_cast<uint32_t>(Op::kDeviceGetInfo), seq, &info, sizeof(info));
  }
  EXPECT_TRUE(guest.AwaitHangUp());
  EXPECT_TRUE(Await([&] {
    return daemon_->CountInLog("protocol violation: channel error:") > before;
  })) << daemon_->Log();
  ++ended_;
}

// --- API tier: overflowing or stray ranges are CUDA errors, the session goes on ---------------

TEST_F(ProtocolAbuseTest, OverflowingCopiesAreErrorsNotCrashes) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  const uint64_t a = Alloc(g, 4096);
  const uint64_t b = Alloc(g, 4096);
  const int32_t invalid = static_cast<int32_t>(Code::kInvalidValue);
  auto tried = [&](int32_t result) {
    ++attacks_;
    return result;
  };

  MemcpyDtoDRequest dtod;
  dtod.ctx = kCtx;
  dtod.dst = a;
  dtod.src = b;
  dtod.size = kMax;  // dst + size wraps
  EXPECT_EQ(tried(g.Call(dtod, {}, nullptr, nullptr, kFlagWantReply)), invalid);
  dtod.size = kMax - a + 64;  // dst + size wraps to just past zero
  EXPECT_EQ(tried(g.Call(dtod, {}, nullptr, nullptr, kFlagWantReply)), invalid);

  MemcpyHtoDRequest htod;
  htod.ctx = kCtx;
  htod.dst = kMax - 4;
  EXPECT_EQ(tried(g.Call(htod, Bytes("0123456789abcdef", 16), nullptr, nullptr, kFlagWantReply)),
            invalid);
  htod.dst = a + 4090;  // crosses the end of the allocation
  EXPECT_EQ(tried(g.Call(htod, Bytes("0123456789abcdef", 16), nullptr, nullptr, kFlagWantReply)),
            invalid);

  MemsetRequest memset;
  memset.ctx = kCtx;
  memset.dst = a;
  memset.element_size = 4;
  memset.width = 16;
  memset.pitch = uint64_t{1} << 62;
  memset.height = 8;  // rows at dst + row * pitch overflow
  EXPECT_EQ(tried(g.Call(memset, {}, nullptr, nullptr, kFlagWantReply)), invalid);
  memset.width = kMax / 2;  // width * element overflows
  memset.height = 1;
  EXPECT_EQ(tried(g.Call(memset, {}, nullptr, nullptr, kFlagWantReply)), invalid);

  MemcpyDtoHRequest dtoh;
  dtoh.ctx = kCtx;
  dtoh.src = a + 4092;
  dtoh.size = 64;
  EXPECT_EQ(tried(g.Call(dtoh)), invalid);

  MemFreeRequest free_request;
  free_request.ctx = kCtx;
  free_request.dptr = a + 1;  // inside, but not the start of an allocation
  EXPECT_EQ(tried(g.Call(free_request)), invalid);

  MemAllocRequest huge;
  huge.ctx = kCtx;
  huge.size = kMax;
  EXPECT_EQ(tried(g.Call(huge)), static_cast<int32_t>(Code::kOutOfMemory));

  // The session still works: a clean copy there and back.
  CtxSynchronizeRequest sync;
  sync.ctx = kCtx;
  g.Call(sync);  // reports (and clears) the first asynchronous error
  htod.dst = a;
  EXPECT_EQ(g.Call(htod, Bytes("0123456789abcdef", 16), nullptr, nullptr, kFlagWantReply), 0);
  dtoh.src = a;
  dtoh.size = 16;
  std::vector<uint8_t> back;
  EXPECT_EQ(g.Call(dtoh, {}, nullptr, &back), 0);
  EXPECT_EQ(back, Bytes("0123456789abcdef", 16));
}

// --- Stream memory operations (StreamWaitValue) ----------------------------------------------

TEST_F(ProtocolAbuseTest, StreamWaitsOfBadShapesAreErrorsNotCrashes) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  const uint64_t a = Alloc(g, 4096);
  const int32_t invalid = static_cast<int32_t>(Code::kInvalidValue);
  StreamWaitValueRequest wait;
  wait.ctx = kCtx;
  wait.value = 0;
  auto tried = [&](uint64_t address, uint32_t width, uint32_t condition) {
    ++attacks_;
    wait.address = address;
    wait.width = width;
    wait.condition = condition;
    return g.Call(wait, {}, nullptr, nullptr, kFlagWantReply);
  };
  EXPECT_EQ(tried(a, 3, 0), invalid);                    // neither 4 nor 8 bytes
  EXPECT_EQ(tried(a + 2, 4, 0), invalid);                // unaligned
  EXPECT_EQ(tried(a, 4, 9), invalid);                    // no such condition
  EXPECT_EQ(tried(a + 4096, 4, 0), invalid);             // past the allocation
  EXPECT_EQ(tried(kMax - 3, 4, 0), invalid);             // address + width wraps
  EXPECT_EQ(tried(0x1000, 8, 0), invalid);               // never allocated
  // A wait on memory that holds the value at once passes (GEQ 0 always holds).
  EXPECT_EQ(tried(a, 8, 0), 0);
}

TEST_F(ProtocolAbuseTest, StreamWaitOnAnotherContextsStream) {
  ExpectFatal("StreamWaitValue: unknown stream handle 77", [](RawGuest& g) {
    Open(g);
    const uint64_t a = Alloc(g, 4096);
    StreamWaitValueRequest wait;
    wait.ctx = kCtx;
    wait.stream = 77;
    wait.address = a;
    wait.width = 4;
    g.Send(wait);
  });
}

}  // namespace
}  // namespace pvgpu::hostile
