// Guests killed with SIGKILL in the middle of big copies and kernel launches, many times, at
// random moments. Expected: each time the daemon notices, ends the session, and gives back
// every byte and handle the guest held (HostStatus: the session disappears and the adapter's
// memory_used returns to its baseline); a bystander guest is untouched throughout.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

constexpr int kKills = 40;

TEST(GuestCrashTest, KilledGuestsGiveBackEverything) {
  Daemon daemon;
  GuestProcess bystander(daemon.address(), {PVGPU_HOSTILE_WORKER, "serve", PVGPU_HOSTILE_PTX});
  ASSERT_EQ(bystander.ReadLine(), "ready");
  ASSERT_TRUE(Await([&] { return daemon.GuestSessions() == 1; }));
  const uint64_t baseline = daemon.AdapterMemoryUsed();
  const uint64_t rss_before = daemon.RssKib();
  ASSERT_GT(baseline, 0u);  // the bystander's buffer

  const unsigned seed = std::random_device{}();
  std::printf("[ hostile ] kill moments from seed %u\n", seed);
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> moment_ms(0, 400);
  int survived = 0;
  for (int kill = 0; kill < kKills; ++kill) {
    {
      GuestProcess victim(daemon.address(), {PVGPU_HOSTILE_WORKER, "churn", PVGPU_HOSTILE_PTX});
      ASSERT_EQ(victim.ReadLine(), "running") << "kill " << kill;
      // A random moment inside the loop of 16 MiB copies and launches (not a wait for a
      // condition: the point is to land anywhere in it).
      std::this_thread::sleep_for(std::chrono::milliseconds(moment_ms(random)));
      EXPECT_GT(daemon.AdapterMemoryUsed(), baseline) << "the victim holds memory while running";
      victim.Kill(SIGKILL);
    }
    EXPECT_TRUE(Await([&] {
      return daemon.GuestSessions() == 1 && daemon.AdapterMemoryUsed() == baseline;
    })) << "kill " << kill << ": memory_used " << daemon.AdapterMemoryUsed() << " vs baseline "
        << baseline << "\n" << daemon.Status().dump(2);
    ++survived;
    bystander.WriteLine("work");
    EXPECT_EQ(bystander.ReadLine().rfind("ok ", 0), 0u) << "after kill " << kill;
  }
  ASSERT_TRUE(daemon.running());
  const uint64_t rss_after = daemon.RssKib();
  std::printf("[ hostile ] %d guests killed mid-work, all memory returned (adapter memory_used "
              "%llu bytes = baseline); daemon RSS %llu KiB before, %llu KiB after\n",
              survived, static_cast<unsigned long long>(baseline),
              static_cast<unsigned long long>(rss_before),
              static_cast<unsigned long long>(rss_after));
  EXPECT_EQ(bystander.Wait(), 0);
}

TEST(GuestCrashTest, KilledRawGuestWithPinnedRegionsAndModules) {
  // A guest that holds every kind of resource (contexts, allocations, a module with globals,
  // pinned regions mapped into a context) and vanishes without a word.
  Daemon daemon({"--quota", "256M"});
  const uint64_t baseline = daemon.AdapterMemoryUsed();
  {
    GuestProcess victim(daemon.address(),
                        {PVGPU_HOSTILE_WORKER, "quota", PVGPU_HOSTILE_PTX, PVGPU_HOSTILE_BIG_PTX,
                         "268435456", "hold"});
    // "filled" comes once the guest has allocated up to its quota of 256 MiB; with "hold" it
    // then waits (holding it all) until it is killed.
    std::string line;
    do {
      line = victim.ReadLine();
    } while (!line.empty() && line.rfind("filled", 0) != 0);
    ASSERT_FALSE(line.empty());
    EXPECT_GT(daemon.AdapterMemoryUsed(), baseline + (128u << 20));
    victim.Kill(SIGKILL);
  }
  EXPECT_TRUE(Await([&] {
    return daemon.GuestSessions() == 0 && daemon.AdapterMemoryUsed() == baseline;
  })) << daemon.Status().dump(2);
}

}  // namespace
}  // namespace pvgpu::hostile
