// Stream memory operations and stream-ordered pools against a real pvgpud: a stream wait that
// nothing will ever satisfy must not wedge the daemon (other sessions keep being served while
// it waits) and ends when its guest dies or destroys the context; pools never take a session
// past its --quota, and memory reused inside a pool is not counted twice.
#include <cuda.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <sstream>
#include <string>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

TEST(MemoryOpsTest, NeverSatisfiedWaitEndsWhenTheGuestDies) {
  Daemon daemon;
  GuestProcess bystander(daemon.address(), {PVGPU_HOSTILE_WORKER, "serve", PVGPU_HOSTILE_PTX});
  ASSERT_EQ(bystander.ReadLine(), "ready");
  ASSERT_TRUE(Await([&] { return daemon.GuestSessions() == 1; }));
  const uint64_t baseline = daemon.AdapterMemoryUsed();
  {
    GuestProcess victim(daemon.address(), {PVGPU_HOSTILE_WORKER, "wait", PVGPU_HOSTILE_PTX});
    ASSERT_EQ(victim.ReadLine(), "waiting");
    ASSERT_TRUE(Await([&] { return daemon.GuestSessions() == 2; }));
    // The victim's session thread is waiting; everyone else is served meanwhile.
    for (int round = 0; round < 3; ++round) {
      bystander.WriteLine("work");
      EXPECT_EQ(bystander.ReadLine().rfind("ok ", 0), 0u) << "round " << round;
    }
    victim.Kill(SIGKILL);
  }
  EXPECT_TRUE(Await([&] {
    return daemon.GuestSessions() == 1 && daemon.AdapterMemoryUsed() == baseline;
  })) << daemon.Status().dump(2);
  bystander.WriteLine("work");
  EXPECT_EQ(bystander.ReadLine().rfind("ok ", 0), 0u);
  ASSERT_TRUE(daemon.running());
  EXPECT_EQ(bystander.Wait(), 0);
}

TEST(MemoryOpsTest, NeverSatisfiedWaitEndsWhenTheContextIsDestroyed) {
  Daemon daemon;
  GuestProcess victim(daemon.address(), {PVGPU_HOSTILE_WORKER, "wait", PVGPU_HOSTILE_PTX});
  ASSERT_EQ(victim.ReadLine(), "waiting");
  victim.WriteLine("destroy");
  std::istringstream fields(victim.ReadLine(std::chrono::seconds(20)));
  std::string word;
  int result = -1;
  fields >> word >> result;
  EXPECT_EQ(word, "destroyed");
  EXPECT_EQ(result, CUDA_SUCCESS);
  EXPECT_EQ(victim.Wait(), 0);
  EXPECT_TRUE(Await([&] { return daemon.GuestSessions() == 0; }));
}

TEST(MemoryOpsTest, PoolsRespectTheQuota) {
  constexpr uint64_t kQuota = 32u << 20;
  Daemon daemon({"--quota", "32M"});
  GuestProcess guest(daemon.address(),
                     {PVGPU_HOSTILE_WORKER, "pool", PVGPU_HOSTILE_PTX, std::to_string(kQuota)});
  std::map<std::string, int> checks;
  uint64_t filled = 0, peak = 0;
  for (std::string line = guest.ReadLine(); line != "done"; line = guest.ReadLine()) {
    ASSERT_FALSE(line.empty()) << "the guest stopped early";
    std::istringstream fields(line);
    std::string word;
    fields >> word;
    if (word == "filled") {
      fields >> filled;
    } else if (word == "check") {
      std::string name;
      int result = -1;
      fields >> name >> result;
      checks[name] = result;
    } else {
      FAIL() << "unexpected line: " << line;
    }
    const auto status = daemon.Status();  // kept: the loop ranges over a part of it
    for (const auto& session : status["sessions"]) {
      peak = std::max<uint64_t>(peak, session["memory_used"].get<uint64_t>());
    }
  }
  EXPECT_EQ(guest.Wait(), 0);
  EXPECT_GT(filled, kQuota / 2) << "the pool reached most of the quota";
  EXPECT_LE(filled, kQuota);
  EXPECT_LE(peak, kQuota) << "the host never counted more than the quota";
  EXPECT_EQ(checks["pool_alloc_when_full"], CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(checks["pool_alloc_over_quota"], CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(checks["pool_contents"], 0);
  EXPECT_EQ(checks["pool_reuse"], 0) << "reuse inside the pool counted against the quota";
  EXPECT_EQ(checks["alloc_after_trim"], CUDA_SUCCESS);
}

}  // namespace
}  // namespace pvgpu::hostile
