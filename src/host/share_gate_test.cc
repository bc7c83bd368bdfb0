// The gate of asynchronous adapters (share_gate.h) on its own: a lone flow is never held;
// competing flows are held to their weighted part of the depth and go in virtual-time order; a
// high-priority flow is never held and holds normal ones to one launch; a stop releases a
// waiter.
#include "host/share_gate.h"

#include <gtest/gtest.h>

#include <thread>

namespace pvgpu::host {
namespace {

TEST(ShareGate, ALoneFlowIsNeverHeld) {
  ShareGate gate;
  ShareFlow flow;
  std::atomic<bool> stop{false};
  for (uint32_t i = 0; i < 10 * ShareGate::kDepth; ++i) ASSERT_TRUE(gate.Admit(flow, stop));
  EXPECT_EQ(flow.kernels.load(), 10 * ShareGate::kDepth);
  for (uint32_t i = 0; i < 10 * ShareGate::kDepth; ++i) gate.Done(flow);
  EXPECT_GT(gate.busy_ns(), 0u);
  EXPECT_GT(flow.busy_ns.load(), 0u);
}

TEST(ShareGate, CompetingFlowsGetTheirWeightedDepth) {
  ShareGate gate;
  ShareFlow heavy, light;
  heavy.weight = 3;
  std::atomic<bool> stop{false};
  ASSERT_TRUE(gate.Admit(light, stop));  // light has work in flight: heavy is not alone
  // Heavy may have 3/4 of the depth in flight, then waits.
  for (uint32_t i = 0; i < ShareGate::kDepth * 3 / 4; ++i) ASSERT_TRUE(gate.Admit(heavy, stop));
  std::atomic<bool> admitted{false};
  std::thread waiter([&] { admitted = gate.Admit(heavy, stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(admitted.load()) << "held at its weighted part of the depth";
  gate.Done(heavy);  // one of its launches completes: it may go again
  waiter.join();
  EXPECT_TRUE(admitted.load());
  EXPECT_GT(heavy.queued_ns.load(), 0u);
  for (uint32_t i = 0; i < ShareGate::kDepth * 3 / 4; ++i) gate.Done(heavy);
  gate.Done(light);
}

TEST(ShareGate, HighPriorityIsNeverHeldAndHoldsNormalFlowsToOne) {
  ShareGate gate;
  ShareFlow urgent, normal;
  urgent.high_priority = true;
  std::atomic<bool> stop{false};
  ASSERT_TRUE(gate.Admit(normal, stop));
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(gate.Admit(urgent, stop));
  std::atomic<bool> admitted{false};
  std::thread waiter([&] { admitted = gate.Admit(normal, stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(admitted.load()) << "one normal launch in flight while a high one is";
  gate.Done(normal);
  waiter.join();
  EXPECT_TRUE(admitted.load());
  for (int i = 0; i < 40; ++i) gate.Done(urgent);
  gate.Done(normal);
}

TEST(ShareGate, StopReleasesAWaiter) {
  ShareGate gate;
  ShareFlow a, b;
  std::atomic<bool> stop{false};
  ASSERT_TRUE(gate.Admit(b, stop));
  for (uint32_t i = 0; i < ShareGate::kDepth / 2; ++i) ASSERT_TRUE(gate.Admit(a, stop));
  std::atomic<int> result{-1};
  std::thread waiter([&] { result = gate.Admit(a, stop) ? 1 : 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  stop = true;
  waiter.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_EQ(a.kernels.load(), ShareGate::kDepth / 2) << "a refused launch is not counted";
}

}  // namespace
}  // namespace pvgpu::host
