// Kernels that fault, trap, assert or never end. Expected: only their own context is affected
// (a sticky error there, as on hardware); another session keeps getting its kernels run with
// its data intact; a never-ending kernel is stopped when its guest destroys the context or is
// killed, after which the daemon's CPU use drops back.
#include <cuda.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

class KernelFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bystander_ = std::make_unique<GuestProcess>(
        daemon_.address(),
        std::vector<std::string>{PVGPU_HOSTILE_WORKER, "serve", PVGPU_HOSTILE_PTX});
    ASSERT_EQ(bystander_->ReadLine(), "ready");
  }
  void TearDown() override {
    ExpectBystanderWorks();
    EXPECT_EQ(bystander_->Wait(), 0);
  }
  void ExpectBystanderWorks() {
    bystander_->WriteLine("work");
    const std::string line = bystander_->ReadLine();
    EXPECT_EQ(line.rfind("ok ", 0), 0u) << "bystander: " << line;
  }
  // Runs a misbehaving kernel; returns the error its context reported and checks it is sticky.
  int RunKernel(const std::string& kind) {
    GuestProcess guest(daemon_.address(),
                       {PVGPU_HOSTILE_WORKER, "kernel", PVGPU_HOSTILE_PTX, kind});
    int result = -1, after = -1;
    // Device-side output (an assert's message) comes first on the guest's stdout.
    for (std::string line = guest.ReadLine(); !line.empty() && after < 0;
         line = guest.ReadLine()) {
      std::sscanf(line.c_str(), "result %d", &result);
      std::sscanf(line.c_str(), "after %d", &after);
    }
    EXPECT_EQ(after, result) << kind << ": the error is sticky for its context";
    EXPECT_EQ(guest.Wait(), 0);
    return result;
  }
  // The daemon's CPU use over half a second, in clock ticks.
  uint64_t CpuTicksOverHalfASecond() {
    const uint64_t before = daemon_.CpuTicks();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return daemon_.CpuTicks() - before;
  }
  // Waits until the daemon is nearly idle again (a spinning kernel keeps its workers at 100%).
  bool AwaitCpuDropsBack() {
    const uint64_t ticks_per_s = static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
    return Await([&] { return CpuTicksOverHalfASecond() < ticks_per_s / 5; },
                 std::chrono::seconds(20));
  }

  Daemon daemon_{std::vector<std::string>{"--threads", "2"}};
  std::unique_ptr<GuestProcess> bystander_;
};

TEST_F(KernelFaultTest, OutOfBoundsAccessIsAnIllegalAddress) {
  EXPECT_EQ(RunKernel("fault"), CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_F(KernelFaultTest, TrapIsALaunchFailure) {
  EXPECT_EQ(RunKernel("trap"), CUDA_ERROR_LAUNCH_FAILED);
}

TEST_F(KernelFaultTest, DeviceAssertIsAnAssert) {
  EXPECT_EQ(RunKernel("assert"), CUDA_ERROR_ASSERT);
}

TEST_F(KernelFaultTest, NeverEndingKernelStopsWhenItsContextIsDestroyed) {
  GuestProcess guest(daemon_.address(), {PVGPU_HOSTILE_WORKER, "kernel", PVGPU_HOSTILE_PTX,
                                         "hang"});
  ASSERT_EQ(guest.ReadLine(), "launched 0");
  ASSERT_TRUE(Await([&] { return CpuTicksOverHalfASecond() > 0; })) << "the kernel spins";
  guest.WriteLine("destroy");
  int destroyed = -1;
  const std::string line = guest.ReadLine(std::chrono::seconds(20));
  std::sscanf(line.c_str(), "destroyed %d", &destroyed);
  EXPECT_EQ(destroyed, CUDA_SUCCESS) << "cuCtxDestroy answered: '" << line << "'";
  EXPECT_TRUE(AwaitCpuDropsBack());
  ExpectBystanderWorks();
  EXPECT_EQ(guest.Wait(), 0);
}

TEST_F(KernelFaultTest, NeverEndingKernelStopsWhenItsGuestIsKilled) {
  GuestProcess guest(daemon_.address(), {PVGPU_HOSTILE_WORKER, "kernel", PVGPU_HOSTILE_PTX,
                                         "hang"});
  ASSERT_EQ(guest.ReadLine(), "launched 0");
  ASSERT_TRUE(Await([&] { return daemon_.GuestSessions() == 2; })) << daemon_.Status().dump(2);
  guest.Kill(SIGKILL);
  EXPECT_TRUE(Await([&] { return daemon_.GuestSessions() == 1; }, std::chrono::seconds(20)))
      << "the killed guest's session is still there";
  EXPECT_TRUE(AwaitCpuDropsBack());
  ExpectBystanderWorks();
}

}  // namespace
}  // namespace pvgpu::hostile
