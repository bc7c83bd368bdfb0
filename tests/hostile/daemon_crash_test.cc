// The daemon killed (SIGKILL) while guests are busy with copies and launches. Expected: every
// guest's next call fails promptly with CUDA_ERROR_DEVICE_UNAVAILABLE (none hangs), and a daemon
// restarted on the same socket serves new guests.
#include <cuda.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <vector>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

constexpr int kGuests = 4;

TEST(DaemonCrashTest, GuestCallsFailPromptlyAndARestartedDaemonServes) {
  Daemon daemon;
  std::vector<std::unique_ptr<GuestProcess>> guests;
  for (int i = 0; i < kGuests; ++i) {
    guests.push_back(std::make_unique<GuestProcess>(
        daemon.address(), std::vector<std::string>{PVGPU_HOSTILE_WORKER, "churn",
                                                   PVGPU_HOSTILE_PTX}));
  }
  for (auto& guest : guests) ASSERT_EQ(guest->ReadLine(), "running");

  const auto killed_at = std::chrono::steady_clock::now();
  daemon.Kill(SIGKILL);
  double slowest_s = 0;
  for (auto& guest : guests) {
    // Generous bound: "promptly" means seconds, and a hang would never answer at all.
    const std::string line = guest->ReadLine(std::chrono::seconds(20));
    const double waited_s = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - killed_at).count();
    slowest_s = std::max(slowest_s, waited_s);
    std::istringstream fields(line);
    std::string word;
    int code = -1;
    double call_ms = -1;
    fields >> word >> code >> call_ms;
    EXPECT_EQ(word, "error") << "guest said: '" << line << "'";
    EXPECT_EQ(code, CUDA_ERROR_DEVICE_UNAVAILABLE) << line;
    EXPECT_LT(waited_s, 10.0) << "a guest took too long to notice the daemon's death";
    EXPECT_EQ(guest->Wait(), 3);
  }
  std::printf("[ hostile ] daemon killed under %d busy guests: all failed with "
              "CUDA_ERROR_DEVICE_UNAVAILABLE, the slowest after %.2f s\n", kGuests, slowest_s);

  // Same socket path, stale file left by the dead daemon: the new one takes over and serves.
  daemon.Restart();
  GuestProcess fresh(daemon.address(), {PVGPU_HOSTILE_WORKER, "serve", PVGPU_HOSTILE_PTX});
  ASSERT_EQ(fresh.ReadLine(), "ready");
  fresh.WriteLine("work");
  EXPECT_EQ(fresh.ReadLine().rfind("ok ", 0), 0u);
  EXPECT_EQ(fresh.Wait(), 0);
}

TEST(DaemonCrashTest, AGuestStartedWhileNoDaemonRunsFailsCleanly) {
  Daemon daemon;
  daemon.Kill(SIGKILL);
  // No daemon: cuInit reports no device instead of hanging; the worker prints the failing call.
  GuestProcess orphan(daemon.address(), {PVGPU_HOSTILE_WORKER, "serve", PVGPU_HOSTILE_PTX});
  const std::string line = orphan.ReadLine(std::chrono::seconds(20));
  EXPECT_EQ(line.rfind("fail ", 0), 0u) << line;
  EXPECT_EQ(orphan.Wait(), 2);
}

}  // namespace
}  // namespace pvgpu::hostile
