#include "host/completion_fence.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pvgpu::host {
namespace {

class CompletionFenceTest : public ::testing::Test {
 protected:
  std::vector<uint64_t> published_;
  CompletionFence fence_{[this](uint64_t value) { published_.push_back(value); }};
};

TEST_F(CompletionFenceTest, SettledMessagesArePublishedAtOnce) {
  fence_.Settle(1);
  fence_.Settle(2);
  fence_.Settle(3);
  EXPECT_EQ(published_, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(fence_.published(), 3u);
}

TEST_F(CompletionFenceTest, AnInFlightMessageHoldsTheFenceBelowIt) {
  fence_.Settle(1);
  auto done2 = fence_.Defer(2);
  fence_.Settle(3);  // executed and done, but 2 is not
  fence_.Settle(4);
  EXPECT_EQ(fence_.published(), 1u);
  done2();
  EXPECT_EQ(fence_.published(), 4u);
  EXPECT_EQ(published_, (std::vector<uint64_t>{1, 4}));
}

TEST_F(CompletionFenceTest, OutOfOrderCompletionsNeverMoveTheFenceBackwards) {
  auto done1 = fence_.Defer(1);
  auto done2 = fence_.Defer(2);
  auto done3 = fence_.Defer(3);
  done3();  // the newest first: nothing below it is done
  EXPECT_EQ(fence_.published(), 0u);
  done1();
  EXPECT_EQ(fence_.published(), 1u);
  done2();
  EXPECT_EQ(fence_.published(), 3u);
  fence_.Settle(4);
  EXPECT_EQ(published_, (std::vector<uint64_t>{1, 3, 4}));
}

TEST_F(CompletionFenceTest, CompletionsFromAdapterThreadsPublishEachValueOnceInOrder) {
  constexpr uint64_t kMessages = 2000;
  std::vector<std::function<void()>> callbacks;
  for (uint64_t seq = 1; seq <= kMessages; ++seq) callbacks.push_back(fence_.Defer(seq));
  // Two "adapters" complete alternate messages concurrently.
  std::atomic<bool> go{false};
  auto complete = [&](size_t first) {
    while (!go.load()) {
    }
    for (size_t i = first; i < callbacks.size(); i += 2) callbacks[i]();
  };
  std::thread a(complete, 0), b(complete, 1);
  go.store(true);
  a.join();
  b.join();
  EXPECT_EQ(fence_.published(), kMessages);
  for (size_t i = 1; i < published_.size(); ++i) {
    EXPECT_LT(published_[i - 1], published_[i]) << "published out of order at " << i;
  }
}

}  // namespace
}  // namespace pvgpu::host
