// The load test: 32 guest processes at once against one pvgpud, each doing its iterations of
// mixed allocations, copies, memsets and launches with every result checked. Expected: no
// errors; no leaks (HostStatus memory_used back to its baseline, no sessions left, the daemon's
// RSS back near its baseline); and a report of how fair the progress was (slowest/fastest
// completion time), printed, not asserted: speed is measured, never asserted in tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/hostile/harness.h"

namespace pvgpu::hostile {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text != nullptr ? std::atoi(text) : fallback;
}

struct Outcome {
  double ms = 0;
  unsigned long long operations = 0;
};

// Runs `guests` load guests at once; every one must finish with "done".
std::vector<Outcome> RunWave(const Daemon& daemon, int guests, int iterations, int first_seed) {
  std::vector<std::unique_ptr<GuestProcess>> running;
  for (int i = 0; i < guests; ++i) {
    running.push_back(std::make_unique<GuestProcess>(
        daemon.address(),
        std::vector<std::string>{PVGPU_LOAD_GUEST, PVGPU_HOSTILE_PTX, std::to_string(iterations),
                                 std::to_string(first_seed + i)}));
  }
  std::vector<Outcome> outcomes;
  for (int i = 0; i < guests; ++i) {
    const std::string line = running[i]->ReadLine(std::chrono::minutes(10));
    std::istringstream fields(line);
    std::string word;
    Outcome outcome;
    fields >> word >> outcome.ms >> outcome.operations;
    EXPECT_EQ(word, "done") << "guest " << i << " (seed " << first_seed + i << "): " << line;
    EXPECT_EQ(running[i]->Wait(), 0) << "guest " << i;
    outcomes.push_back(outcome);
  }
  return outcomes;
}

TEST(LoadTest, ThirtyTwoGuestsNoErrorsNoLeaksFairProgress) {
  const int guests = EnvInt("PVGPU_LOAD_GUESTS", 32);
  const int iterations = EnvInt("PVGPU_LOAD_ITERATIONS", 2000);
  Daemon daemon;

  // Warm-up: one wave of a few guests, so that the baseline includes what the daemon keeps
  // for good after its first sessions (thread stacks of the worker pool, malloc arenas, the
  // PTX engine's per-kernel templates) rather than counting it as a leak.
  RunWave(daemon, 4, 20, 1000);
  ASSERT_TRUE(Await([&] { return daemon.GuestSessions() == 0; }));
  const uint64_t memory_baseline = daemon.AdapterMemoryUsed();
  const uint64_t rss_baseline = daemon.RssKib();

  const std::vector<Outcome> outcomes = RunWave(daemon, guests, iterations, 1);
  ASSERT_EQ(outcomes.size(), static_cast<size_t>(guests));

  EXPECT_TRUE(Await([&] { return daemon.GuestSessions() == 0; })) << daemon.Status().dump(2);
  const uint64_t memory_after = daemon.AdapterMemoryUsed();
  EXPECT_EQ(memory_after, memory_baseline) << "device memory leaked";
  const uint64_t rss_after = daemon.RssKib();
  // Slack for RSS: glibc keeps freed memory in its malloc arenas (up to 8 per core, used by
  // the 32 session threads that ran at once), each holding its top chunk up to the trim
  // threshold; measured here the growth is about 6 MiB. The rings are unmapped when a session
  // ends and are not in it. A real leak grows with the work (24,000 operations per guest,
  // many with 64 KiB payloads) and passes this bound.
  const uint64_t rss_slack_kib = 32u << 10;
  EXPECT_LT(rss_after, rss_baseline + rss_slack_kib)
      << "daemon RSS grew from " << rss_baseline << " KiB to " << rss_after << " KiB";

  double slowest = 0, fastest = 1e300;
  unsigned long long operations = 0;
  for (const Outcome& o : outcomes) {
    slowest = std::max(slowest, o.ms);
    fastest = std::min(fastest, o.ms);
    operations += o.operations;
  }
  std::printf("[ load ] %d guests x %d iterations: %llu checked operations, no errors; "
              "completion fastest %.0f ms, slowest %.0f ms, slowest/fastest %.2f; "
              "memory_used %llu -> %llu bytes; daemon RSS %llu -> %llu KiB\n",
              guests, iterations, operations, fastest, slowest, slowest / fastest,
              static_cast<unsigned long long>(memory_baseline),
              static_cast<unsigned long long>(memory_after),
              static_cast<unsigned long long>(rss_baseline),
              static_cast<unsigned long long>(rss_after));
}

}  // namespace
}  // namespace pvgpu::hostile
