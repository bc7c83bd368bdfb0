// Managed memory over the in-process channel (session_fixture.h). Guest and host share one
// process here, so the test sees both sides: an address the "guest" already uses is taken in
// the "daemon" too (the collision path), and a free one is mapped there, at that address, over
// the same pages as the guest's own mapping, and kernels use it as a device address.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "host/session_fixture.h"

namespace pvgpu::host {
namespace {

using namespace protocol;

constexpr uint64_t kRegion = 0x600;
constexpr size_t kBytes = 8192;

int SealedMemfd(size_t size, bool seal = true) {
  const int fd = memfd_create("managed-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  if (seal) EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  return fd;
}

// An address range that is free now (reserved, then given back).
uint64_t FreeAddress(size_t size) {
  void* p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  munmap(p, size);
  return reinterpret_cast<uint64_t>(p);
}

class SessionManagedTest : public SessionTest {
 protected:
  Code Alloc(int fd, uint64_t address, uint32_t* taken = nullptr, uint64_t region = kRegion) {
    EXPECT_TRUE(guest_->SendFd(fd).ok());
    ManagedAllocRequest request;
    request.ctx = kCtx;
    request.region = region;
    request.address = address;
    request.size = kBytes;
    HostMessage reply;
    const Code code = Call(request, {}, &reply);
    if (taken != nullptr && code != Code::kDeviceUnavailable) {
      *taken = reply.As<ManagedAllocReply>().address_taken;
    }
    return code;
  }
};

TEST_F(SessionManagedTest, OneAddressForTheGuestTheDaemonAndKernels) {
  Hello();
  Open();
  const int fd = SealedMemfd(kBytes);
  auto* guest_view =
      static_cast<uint32_t*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(guest_view, MAP_FAILED);

  // The guest's own address is in use in this process, as it would be in a busy daemon.
  uint32_t taken = 0;
  EXPECT_EQ(Alloc(fd, reinterpret_cast<uint64_t>(guest_view), &taken), Code::kOutOfMemory);
  EXPECT_EQ(taken, 1u);
  EXPECT_EQ(Alloc(fd, FreeAddress(kBytes) + 1, &taken, kRegion + 1), Code::kInvalidValue);

  const uint64_t address = FreeAddress(kBytes);
  ASSERT_EQ(Alloc(fd, address, &taken, kRegion + 2), Code::kOk);
  EXPECT_EQ(taken, 0u);
  close(fd);
  auto* daemon_view = reinterpret_cast<uint32_t*>(address);
  for (uint32_t i = 0; i < 4; ++i) guest_view[i] = 10 * i;
  EXPECT_EQ(daemon_view[3], 30u) << "the same pages at the proposed address";

  ModuleDescription description;
  ASSERT_EQ(LoadModule(ImageKind::kPtx, Bytes(kPtx, sizeof(kPtx)), &description), Code::kOk);
  AddOneParams params{address, 4};
  ASSERT_EQ(Launch(0, Bytes(&params, 12), 4), Code::kOk);
  EXPECT_EQ(guest_view[0], 1u);
  EXPECT_EQ(guest_view[3], 31u);
  const auto read = Read(address + 4, 4);  // a copy from it reads the same pages
  uint32_t copied = 0;
  std::memcpy(&copied, read.data(), sizeof(copied));
  EXPECT_EQ(copied, 11u);

  HostRegionDestroyRequest destroy;
  destroy.region = kRegion + 2;
  EXPECT_EQ(Call(destroy), Code::kOk);
  // Gone from the daemon: the address can be mapped afresh, and kernels fault on it.
  void* again = mmap(reinterpret_cast<void*>(address), kBytes, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  EXPECT_EQ(again, reinterpret_cast<void*>(address));
  if (again != MAP_FAILED) munmap(again, kBytes);
  EXPECT_EQ(Launch(0, Bytes(&params, 12), 4), Code::kIllegalAddress);
  munmap(guest_view, kBytes);
}

TEST_F(SessionManagedTest, AnUnsealedMemfdEndsTheSession) {
  Hello();
  Open();
  const int fd = SealedMemfd(kBytes, /*seal=*/false);
  EXPECT_EQ(Alloc(fd, FreeAddress(kBytes)), Code::kDeviceUnavailable);
  close(fd);
  ASSERT_TRUE(Ended());
  EXPECT_EQ(session_->violation().rfind("ManagedAlloc: ", 0), 0u) << session_->violation();
}

TEST_F(SessionManagedTest, TheQuotaCountsIt) {
  SessionPolicy policy;
  policy.memory_quota = kBytes - 1;
  Restart(policy);
  Hello();
  Open();
  const int fd = SealedMemfd(kBytes);
  EXPECT_EQ(Alloc(fd, FreeAddress(kBytes)), Code::kOutOfMemory);
  close(fd);
  EXPECT_EQ(Synchronize(), Code::kOk);
}

}  // namespace
}  // namespace pvgpu::host
