// The fixture of the protocol-abuse tests: one real pvgpud and one bystander guest for the whole
// binary (CTest runs it as one test, so the bystander lives across every attack), and helpers
// that run an attack and check its outcome.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {

inline constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
inline constexpr uint64_t kCtx = 0x1000;

inline std::vector<uint8_t> Bytes(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  return {p, p + size};
}

class ProtocolAbuseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new Daemon();
    bystander_ = new GuestProcess(daemon_->address(),
                                  {PVGPU_HOSTILE_WORKER, "serve", PVGPU_HOSTILE_PTX});
    ASSERT_EQ(bystander_->ReadLine(), "ready");
  }
  static void TearDownTestSuite() {
    std::printf("[ hostile ] %d bad inputs tried, %d sessions ended with a logged reason, "
                "bystander rounds all ok\n", attacks_, ended_);
    EXPECT_EQ(bystander_->Wait(), 0);
    delete bystander_;
    delete daemon_;
  }
  // After every attack the daemon still serves the bystander, whose data is intact.
  void TearDown() override {
    ASSERT_TRUE(daemon_->running());
    bystander_->WriteLine("work");
    const std::string line = bystander_->ReadLine();
    EXPECT_EQ(line.rfind("ok ", 0), 0u) << "bystander: " << line;
  }

  // Runs `attack` and expects its session to end with `reason` newly in the log.
  template <typename Attack>
  void ExpectFatal(const std::string& reason, Attack attack) {
    const std::string logged = "protocol violation: " + reason;
    const size_t before = daemon_->CountInLog(logged);
    RawGuest guest(daemon_->socket_path());
    ++attacks_;
    attack(guest);
    EXPECT_TRUE(guest.AwaitClosed()) << "the session outlived: " << reason;
    EXPECT_TRUE(Await([&] { return daemon_->CountInLog(logged) > before; }))
        << "not logged: " << logged << "\nlog:\n" << daemon_->Log();
    ++ended_;
  }

  // Hello and a context on device 0.
  static void Open(RawGuest& guest) {
    ASSERT_EQ(guest.Hello(), 0);
    protocol::CtxCreateRequest create;
    create.ctx = kCtx;
    ASSERT_EQ(guest.Call(create), 0);
  }
  static uint64_t Alloc(RawGuest& guest, uint64_t size) {
    protocol::MemAllocRequest alloc;
    alloc.ctx = kCtx;
    alloc.size = size;
    protocol::MemAllocReply reply;
    EXPECT_EQ(guest.Call(alloc, {}, &reply), 0);
    return reply.dptr;
  }
  // Loads the test kernels as module `handle`.
  static void LoadModule(RawGuest& guest, uint64_t handle) {
    std::ifstream in(PVGPU_HOSTILE_PTX);
    std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    protocol::ModuleLoadRequest load;
    load.ctx = kCtx;
    load.module = handle;
    load.image_kind = static_cast<uint32_t>(protocol::ImageKind::kPtx);
    load.log_limit = 4096;
    ASSERT_EQ(guest.Call(load, {reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size() + 1}),
              0);
  }
  // A sealed memfd region of 4 KiB registered as `handle`.
  static void CreateRegion(RawGuest& guest, uint64_t handle) {
    const int fd = memfd_create("hostile-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
    ASSERT_TRUE(guest.endpoint().SendFd(fd).ok());
    close(fd);
    protocol::HostRegionCreateRequest create;
    create.region = handle;
    create.size = 4096;
    ASSERT_EQ(guest.Call(create), 0);
  }

  static inline Daemon* daemon_ = nullptr;
  static inline GuestProcess* bystander_ = nullptr;
  static inline int attacks_ = 0;
  static inline int ended_ = 0;
};

}  // namespace pvgpu::hostile
