#include "common/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace pvgpu {
namespace {

// Runs `body` on a thread confined to the first CPU this process may use.
template <typename Body>
void OnOneCpu(Body body) {
  std::thread thread([&] {
    cpu_set_t all;
    ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
    int first = 0;
    while (!CPU_ISSET(first, &all)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    body();
  });
  thread.join();
}

TEST(UsableCpusTest, CountsTheAffinityMaskNotTheOnlineCpus) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(UsableCpus(), static_cast<unsigned>(CPU_COUNT(&all)));
  OnOneCpu([] { EXPECT_EQ(UsableCpus(), 1u); });
}

}  // namespace
}  // namespace pvgpu
