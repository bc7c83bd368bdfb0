#include "adapters/wait_value.h"

#include <gtest/gtest.h>

#include <thread>

namespace pvgpu::adapters {
namespace {

TEST(WaitValueTest, ConditionsAsCudaDefinesThem) {
  using C = WaitCondition;
  // GEQ compares with wraparound: (int32_t)(*addr - value) >= 0.
  EXPECT_TRUE(WaitSatisfied(7, 5, 4, C::kGeq));
  EXPECT_TRUE(WaitSatisfied(7, 7, 4, C::kGeq));
  EXPECT_FALSE(WaitSatisfied(5, 7, 4, C::kGeq));
  EXPECT_TRUE(WaitSatisfied(2, 0xfffffff0u, 4, C::kGeq));  // 2 - (-16) = 18
  EXPECT_FALSE(WaitSatisfied(0xfffffff0u, 2, 4, C::kGeq));
  EXPECT_TRUE(WaitSatisfied(0x100000000ull, 1, 4, C::kGeq) == WaitSatisfied(0, 1, 4, C::kGeq))
      << "a 32-bit wait sees only the low half";
  EXPECT_TRUE(WaitSatisfied(1ull << 40, 1ull << 39, 8, C::kGeq));
  EXPECT_FALSE(WaitSatisfied(1ull << 39, 1ull << 40, 8, C::kGeq));
  EXPECT_TRUE(WaitSatisfied(9, 9, 8, C::kEq));
  EXPECT_FALSE(WaitSatisfied(9, 8, 8, C::kEq));
  EXPECT_TRUE(WaitSatisfied(6, 4, 4, C::kAnd));
  EXPECT_FALSE(WaitSatisfied(3, 4, 4, C::kAnd));
  // NOR: ~(*addr | value) != 0, within the width.
  EXPECT_TRUE(WaitSatisfied(7, 0xfffffff0u, 4, C::kNor));
  EXPECT_FALSE(WaitSatisfied(0xf, 0xfffffff0u, 4, C::kNor));
  EXPECT_TRUE(WaitSatisfied(0xf, 0xfffffff0u, 8, C::kNor));  // the high half is clear
}

TEST(WaitValueTest, PollEndsWhenSatisfiedOrCancelled) {
  std::atomic<uint64_t> value{0};
  std::atomic<bool> cancel{false};
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    value.store(3);
  });
  auto read = [&]() -> StatusOr<uint64_t> { return value.load(); };
  auto is3 = [](uint64_t v) { return v == 3; };
  EXPECT_TRUE(PollValue(read, is3, cancel).ok());
  writer.join();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancel.store(true);
  });
  auto is4 = [](uint64_t v) { return v == 4; };
  Status cancelled = PollValue(read, is4, cancel);
  canceller.join();
  EXPECT_EQ(cancelled.code(), Code::kLaunchFailed);
  auto failing = []() -> StatusOr<uint64_t> { return Error(Code::kIllegalAddress, "gone"); };
  cancel.store(false);
  auto any = [](uint64_t) { return true; };
  EXPECT_EQ(PollValue(failing, any, cancel).code(), Code::kIllegalAddress);
}

}  // namespace
}  // namespace pvgpu::adapters
