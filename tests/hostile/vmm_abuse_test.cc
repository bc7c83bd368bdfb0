// Virtual memory management under hostile guests (docs/memory.md): sizes, offsets and
// addresses that are unaligned, empty, outside their reservation or physical memory, or near
// UINT64_MAX are CUDA errors and the session goes on; overlapping maps, partial unmaps and
// access to unmapped ranges are refused; handles of another context or kind end the session; a
// guest that dies with its memory mapped gives all of it back. Same fixture and bystander as
// protocol_abuse_test.cc.
#include "tests/hostile/abuse_fixture.h"

namespace pvgpu::hostile {
namespace {

using namespace protocol;

constexpr uint64_t kGranule = 2u << 20;
const int32_t kInvalid = static_cast<int32_t>(Code::kInvalidValue);

uint64_t Reserve(RawGuest& g, uint64_t handle, uint64_t size, uint64_t alignment = 0,
                 int32_t* result = nullptr) {
  VmmReserveRequest reserve;
  reserve.ctx = kCtx;
  reserve.reservation = handle;
  reserve.size = size;
  reserve.alignment = alignment;
  VmmReserveReply reply;
  const int32_t r = g.Call(reserve, {}, &reply);
  if (result != nullptr) *result = r;
  return r == 0 ? reply.dptr : 0;
}

int32_t Create(RawGuest& g, uint64_t handle, uint64_t size) {
  VmmCreateRequest create;
  create.ctx = kCtx;
  create.physical = handle;
  create.size = size;
  return g.Call(create);
}

int32_t Map(RawGuest& g, uint64_t reservation, uint64_t physical, uint64_t address, uint64_t size,
            uint64_t offset) {
  VmmMapRequest map;
  map.ctx = kCtx;
  map.reservation = reservation;
  map.physical = physical;
  map.address = address;
  map.size = size;
  map.offset = offset;
  return g.Call(map);
}

int32_t Unmap(RawGuest& g, uint64_t reservation, uint64_t address, uint64_t size) {
  VmmUnmapRequest unmap;
  unmap.ctx = kCtx;
  unmap.reservation = reservation;
  unmap.address = address;
  unmap.size = size;
  return g.Call(unmap);
}

int32_t Access(RawGuest& g, uint64_t reservation, uint64_t address, uint64_t size, uint32_t flags) {
  VmmSetAccessRequest access;
  access.ctx = kCtx;
  access.reservation = reservation;
  access.address = address;
  access.size = size;
  access.flags = flags;
  return g.Call(access);
}

TEST_F(ProtocolAbuseTest, VirtualMemoryRequestsNearUint64Max) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  int32_t result = 0;
  Reserve(g, 1, 0, 0, &result);
  EXPECT_EQ(result, kInvalid);
  Reserve(g, 2, kGranule + 4096, 0, &result);
  EXPECT_EQ(result, kInvalid);
  Reserve(g, 3, kGranule, 3 * kGranule, &result);  // not a power of two
  EXPECT_EQ(result, kInvalid);
  Reserve(g, 4, kMax - kGranule + 1, 0, &result);
  EXPECT_EQ(result, static_cast<int32_t>(Code::kOutOfMemory));
  Reserve(g, 5, kGranule, uint64_t{1} << 63, &result);
  EXPECT_EQ(result, static_cast<int32_t>(Code::kOutOfMemory));
  EXPECT_EQ(Create(g, 6, 0), kInvalid);
  EXPECT_EQ(Create(g, 7, kGranule - 1), kInvalid);
  EXPECT_EQ(Create(g, 8, kMax - kGranule + 1), static_cast<int32_t>(Code::kOutOfMemory));

  const uint64_t base = Reserve(g, 10, 4 * kGranule);
  ASSERT_NE(base, 0u);
  ASSERT_EQ(Create(g, 11, 2 * kGranule), 0);
  EXPECT_EQ(Map(g, 10, 11, base, 0, 0), kInvalid);
  EXPECT_EQ(Map(g, 10, 11, base + 4096, kGranule, 0), kInvalid);      // unaligned address
  EXPECT_EQ(Map(g, 10, 11, base, kGranule, 4096), kInvalid);          // unaligned offset
  EXPECT_EQ(Map(g, 10, 11, base, 3 * kGranule, 0), kInvalid);         // past the memory
  EXPECT_EQ(Map(g, 10, 11, base, kGranule, 2 * kGranule), kInvalid);  // offset at its end
  EXPECT_EQ(Map(g, 10, 11, base, kGranule, kMax - kGranule + 1), kInvalid);
  EXPECT_EQ(Map(g, 10, 11, base + 3 * kGranule, 2 * kGranule, 0), kInvalid);  // past the range
  EXPECT_EQ(Map(g, 10, 11, kMax - kGranule + 1, kGranule, 0), kInvalid);
  EXPECT_EQ(Map(g, 10, 11, base - kGranule, kGranule, 0), kInvalid);  // before the range
  ASSERT_EQ(Map(g, 10, 11, base + kGranule, 2 * kGranule, 0), 0);
  EXPECT_EQ(Map(g, 10, 11, base, 2 * kGranule, 0), kInvalid);  // overlaps it
  EXPECT_EQ(Map(g, 10, 11, base + 2 * kGranule, kGranule, 0), kInvalid);

  // Access and unmapping name whole mappings.
  EXPECT_EQ(Access(g, 10, base, 4 * kGranule, 3), kInvalid);
  EXPECT_EQ(Access(g, 10, base + kGranule, kGranule, 3), kInvalid);  // half the mapping
  EXPECT_EQ(Access(g, 10, base + kGranule, 2 * kGranule, 7), kInvalid);
  EXPECT_EQ(Access(g, 10, base + kGranule, 2 * kGranule, 1),
            static_cast<int32_t>(Code::kNotSupported));
  EXPECT_EQ(Unmap(g, 10, base + kGranule, kGranule), kInvalid);
  EXPECT_EQ(Unmap(g, 10, base, 4 * kGranule), kInvalid);
  EXPECT_EQ(Unmap(g, 10, kMax - 1, 2), kInvalid);

  // Copies reach the mapping only once it is accessible, and only inside it.
  const uint8_t bytes[16] = {1, 2, 3};
  MemcpyHtoDRequest write;
  write.ctx = kCtx;
  write.dst = base + kGranule;
  EXPECT_EQ(g.Call(write, bytes, nullptr, nullptr, kFlagWantReply), kInvalid);
  ASSERT_EQ(Access(g, 10, base + kGranule, 2 * kGranule, 3), 0);
  EXPECT_EQ(g.Call(write, bytes, nullptr, nullptr, kFlagWantReply), 0);
  write.dst = base + 3 * kGranule - 8;  // runs past the mapping into reserved addresses
  EXPECT_EQ(g.Call(write, bytes, nullptr, nullptr, kFlagWantReply), kInvalid);
  write.dst = base + kGranule - 8;  // starts before it
  EXPECT_EQ(g.Call(write, bytes, nullptr, nullptr, kFlagWantReply), kInvalid);

  // A reservation still mapped is not freed; memory still mapped outlives its release.
  VmmFreeRequest free_request;
  free_request.ctx = kCtx;
  free_request.reservation = 10;
  EXPECT_EQ(g.Call(free_request), kInvalid);
  VmmReleaseRequest release;
  release.ctx = kCtx;
  release.physical = 11;
  g.Send(release);
  write.dst = base + kGranule;
  EXPECT_EQ(g.Call(write, bytes, nullptr, nullptr, kFlagWantReply), 0);
  ASSERT_EQ(Unmap(g, 10, base + kGranule, 2 * kGranule), 0);
  EXPECT_EQ(g.Call(write, bytes, nullptr, nullptr, kFlagWantReply), kInvalid);
  EXPECT_EQ(g.Call(free_request), 0);
  EXPECT_EQ(g.Call(HostStatusRequest{}), 0);
}

TEST_F(ProtocolAbuseTest, MapOfAnUnknownReservation) {
  ExpectFatal("VmmMap: unknown reservation handle 99", [](RawGuest& g) {
    Open(g);
    ASSERT_EQ(Create(g, 1, kGranule), 0);
    VmmMapRequest map;
    map.ctx = kCtx;
    map.reservation = 99;
    map.physical = 1;
    g.Send(map);
  });
}

TEST_F(ProtocolAbuseTest, MapOfAnotherContextsMemory) {
  ExpectFatal("VmmMap: unknown physical handle 3", [](RawGuest& g) {
    Open(g);
    CtxCreateRequest other;
    other.ctx = kCtx + 1;
    ASSERT_EQ(g.Call(other), 0);
    ASSERT_EQ(Create(g, 3, kGranule), 0);  // in kCtx
    VmmReserveRequest reserve;
    reserve.ctx = kCtx + 1;
    reserve.reservation = 4;
    reserve.size = kGranule;
    VmmReserveReply reply;
    ASSERT_EQ(g.Call(reserve, {}, &reply), 0);
    VmmMapRequest map;
    map.ctx = kCtx + 1;
    map.reservation = 4;
    map.physical = 3;
    map.address = reply.dptr;
    map.size = kGranule;
    g.Send(map);
  });
}

TEST_F(ProtocolAbuseTest, PhysicalMemoryReleasedTwice) {
  ExpectFatal("VmmRelease: unknown physical handle 5", [](RawGuest& g) {
    Open(g);
    ASSERT_EQ(Create(g, 5, kGranule), 0);
    VmmReleaseRequest release;
    release.ctx = kCtx;
    release.physical = 5;
    g.Send(release);
    g.Send(release);
  });
}

TEST_F(ProtocolAbuseTest, ReservationHandleReused) {
  ExpectFatal("VmmReserve: new reservation handle 6 is in use", [](RawGuest& g) {
    Open(g);
    ASSERT_NE(Reserve(g, 6, kGranule), 0u);
    VmmReserveRequest again;
    again.ctx = kCtx;
    again.reservation = 6;
    again.size = kGranule;
    g.Send(again);
  });
}

TEST_F(ProtocolAbuseTest, DyingGuestGivesMappedMemoryBack) {
  const uint64_t baseline = daemon_->AdapterMemoryUsed();
  {
    RawGuest g(daemon_->socket_path());
    Open(g);
    const uint64_t base = Reserve(g, 1, 8 * kGranule);
    ASSERT_NE(base, 0u);
    ASSERT_EQ(Create(g, 2, 4 * kGranule), 0);
    ASSERT_EQ(Map(g, 1, 2, base, 4 * kGranule, 0), 0);
    ASSERT_EQ(Map(g, 1, 2, base + 4 * kGranule, 2 * kGranule, 2 * kGranule), 0);
    ASSERT_EQ(Access(g, 1, base, 6 * kGranule, 3), 0);
    VmmReleaseRequest release;
    release.ctx = kCtx;
    release.physical = 2;
    g.Send(release);
    EXPECT_EQ(g.Call(HostStatusRequest{}), 0);
    EXPECT_EQ(daemon_->AdapterMemoryUsed(), baseline + 4 * kGranule);
  }  // the connection closes with everything mapped
  EXPECT_TRUE(Await([&] { return daemon_->AdapterMemoryUsed() == baseline; }))
      << daemon_->Status().dump(2);
}

// Import takes only memory sealed against shrinking, a whole number of granules: a guest's own
// memfd that could shrink under kernels, or a pipe, is a CUDA error and the session goes on;
// an imported memfd of its own is memory like any other, counted while it is held.
TEST_F(ProtocolAbuseTest, ImportOfDescriptorsThatAreNoDeviceMemory) {
  RawGuest g(daemon_->socket_path());
  Open(g);
  auto import = [&](int fd, uint64_t handle, uint64_t* size = nullptr) {
    EXPECT_TRUE(g.endpoint().SendFd(fd).ok());
    VmmImportRequest request;
    request.ctx = kCtx;
    request.physical = handle;
    VmmImportReply reply;
    const int32_t result = g.Call(request, {}, &reply);
    if (size != nullptr) *size = reply.size;
    return result;
  };
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_EQ(import(pipe_fds[0], 1), kInvalid);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(unsealed, kGranule), 0);
  EXPECT_EQ(import(unsealed, 2), kInvalid);
  ASSERT_EQ(fcntl(unsealed, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  const uint64_t baseline = daemon_->AdapterMemoryUsed();
  uint64_t size = 0;
  EXPECT_EQ(import(unsealed, 3, &size), 0);
  EXPECT_EQ(size, kGranule);
  EXPECT_EQ(daemon_->AdapterMemoryUsed(), baseline + kGranule);
  const int odd = memfd_create("odd", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(odd, kGranule + 4096), 0);
  ASSERT_EQ(fcntl(odd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_EQ(import(odd, 4), kInvalid);
  close(odd);
  // Mapped and written by a copy: the guest sees the bytes in its own memfd.
  const uint64_t base = Reserve(g, 5, kGranule);
  ASSERT_NE(base, 0u);
  ASSERT_EQ(Map(g, 5, 3, base, kGranule, 0), 0);
  ASSERT_EQ(Access(g, 5, base, kGranule, 3), 0);
  MemsetRequest memset_request;
  memset_request.ctx = kCtx;
  memset_request.dst = base;
  memset_request.pitch = 4096;
  memset_request.value = 0xAB;
  memset_request.element_size = 1;
  memset_request.width = 4096;
  memset_request.height = 1;
  g.Send(memset_request);
  EXPECT_EQ(g.Call(HostStatusRequest{}), 0);  // after the memset
  uint8_t byte = 0;
  ASSERT_EQ(pread(unsealed, &byte, 1, 100), 1);
  EXPECT_EQ(byte, 0xAB);
  close(unsealed);
}

TEST_F(ProtocolAbuseTest, ImportWithoutItsDescriptor) {
  ExpectFatal("VmmImport without its descriptor", [](RawGuest& g) {
    Open(g);
    VmmImportRequest request;
    request.ctx = kCtx;
    request.physical = 1;
    g.Send(request);
  });
}

TEST_F(ProtocolAbuseTest, ExportOfAnUnknownPhysicalHandle) {
  ExpectFatal("VmmExport: unknown physical handle 9", [](RawGuest& g) {
    Open(g);
    VmmExportRequest request;
    request.ctx = kCtx;
    request.physical = 9;
    g.Send(request);
  });
}

}  // namespace
}  // namespace pvgpu::hostile
