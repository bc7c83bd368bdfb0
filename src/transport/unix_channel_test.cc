// The local channel's data path over real sockets, memfds and eventfds: a listener in a temp
// dir and a guest connected from another thread.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "transport/channel.h"
#include "transport/test_util.h"

namespace pvgpu::transport {
namespace {

using testing::Connect;
using testing::MatchesPattern;
using testing::Pattern;

class UnixChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_ = Connect(dir_.Socket());
    ASSERT_NE(c_.host, nullptr);
  }
  testing::TempDir dir_;
  testing::Connection c_;
};

// Sends `count` messages of random sizes (some at the maximum) from one end while the other
// checks them, through a 64 KiB ring, so both wrap-around and backpressure happen.
void Stream(Endpoint& from, Endpoint& to, int count, uint32_t seed, int slow_every = 0) {
  const size_t max = from.max_message_size();
  std::thread sender([&] {
    std::mt19937 rng(seed);
    for (int i = 0; i < count; ++i) {
      size_t size = rng() % 3000;
      if (i % 50 == 7) size = max;
      if (i % 50 == 8) size = 0;
      Status sent = from.Send(Pattern(i, size));
      ASSERT_TRUE(sent.ok()) << sent.ToString();
    }
  });
  std::vector<uint8_t> got;
  for (int i = 0; i < count; ++i) {
    Status received = to.Receive(&got, 10000);
    ASSERT_TRUE(received.ok()) << "message " << i << ": " << received.ToString();
    ASSERT_TRUE(MatchesPattern(got, i)) << "message " << i << " of " << got.size() << " bytes";
    if (slow_every && i % slow_every == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  sender.join();
}

// Filled messages (bulk bytes written straight into the ring, as DtoH replies are) stream like
// any others, through the wrap and a full ring; a fill that fails sends nothing and leaves the
// channel working.
TEST_F(UnixChannelTest, HostToGuestFilledMessages) {
  constexpr int kCount = 2000;
  auto fails = [](int i) { return i % 100 == 5; };
  const size_t max = c_.host->max_message_size();
  std::thread sender([&] {
    std::mt19937 rng(3);
    for (int i = 0; i < kCount; ++i) {
      size_t size = rng() % 5000;
      if (i % 50 == 7) size = max - 8;
      const std::vector<uint8_t> bytes = Pattern(i, size);
      const std::vector<uint8_t> head(bytes.begin(), bytes.begin() + std::min<size_t>(8, size));
      std::span<const uint8_t> parts[] = {head};
      Status sent = c_.host->SendFilled(
          parts, size - head.size(), [&](std::span<uint8_t> piece, size_t offset) -> Status {
            if (fails(i)) return Error(Code::kIllegalAddress, "fill failed");
            std::memcpy(piece.data(), bytes.data() + head.size() + offset, piece.size());
            return Status::Ok();
          });
      if (fails(i) && size > head.size()) {
        ASSERT_EQ(sent.code(), Code::kIllegalAddress) << sent.ToString();
      } else {
        ASSERT_TRUE(sent.ok()) << sent.ToString();
      }
    }
  });
  std::mt19937 rng(3);
  std::vector<uint8_t> got;
  for (int i = 0; i < kCount; ++i) {
    size_t size = rng() % 5000;
    if (i % 50 == 7) size = max - 8;
    if (fails(i) && size > 8) continue;
    Status received = c_.guest->Receive(&got, 10000);
    ASSERT_TRUE(received.ok()) << "message " << i << ": " << received.ToString();
    ASSERT_TRUE(MatchesPattern(got, i)) << "message " << i << " of " << got.size() << " bytes";
  }
  sender.join();
  EXPECT_EQ(c_.guest->Receive(&got, 0).code(), Code::kNotReady);
}

// Messages received in place (as the guest takes DtoH replies) are the ones sent, whole and in
// order, through the wrap and a full ring; copying a view out gives the message.
TEST_F(UnixChannelTest, HostToGuestReceivedInPlace) {
  constexpr int kCount = 2000;
  const size_t max = c_.host->max_message_size();
  std::thread sender([&] {
    std::mt19937 rng(5);
    for (int i = 0; i < kCount; ++i) {
      const size_t size = i % 50 == 7 ? max : rng() % 5000;
      Status sent = c_.host->Send(Pattern(i, size));
      ASSERT_TRUE(sent.ok()) << sent.ToString();
    }
  });
  std::vector<uint8_t> scratch, got;
  for (int i = 0; i < kCount; ++i) {
    Status received = c_.guest->ReceiveView(
        &scratch,
        [&](const MessageView& view) {
          got.resize(view.size());
          view.CopyPrefix(got.data(), view.size());
        },
        10000);
    ASSERT_TRUE(received.ok()) << "message " << i << ": " << received.ToString();
    ASSERT_TRUE(MatchesPattern(got, i)) << "message " << i << " of " << got.size() << " bytes";
  }
  sender.join();
  EXPECT_TRUE(scratch.empty()) << "the local channel copied into the scratch buffer";
  EXPECT_EQ(c_.guest
                ->ReceiveView(
                    &scratch, [](const MessageView&) {}, 0)
                .code(),
            Code::kNotReady);
}

TEST_F(UnixChannelTest, GuestToHostRandomSizes) { Stream(*c_.guest, *c_.host, 3000, 1); }
TEST_F(UnixChannelTest, HostToGuestRandomSizes) { Stream(*c_.host, *c_.guest, 3000, 2); }

TEST_F(UnixChannelTest, BackpressureWithASlowReader) {
  // About 3 MB through a 64 KiB ring, the reader pausing often: Send must block, not fail.
  Stream(*c_.guest, *c_.host, 2000, 3, /*slow_every=*/20);
}

TEST_F(UnixChannelTest, BothDirectionsStreamAtOnceWithoutDeadlock) {
  std::thread down([&] { Stream(*c_.host, *c_.guest, 3000, 4); });
  Stream(*c_.guest, *c_.host, 3000, 5);
  down.join();
}

TEST_F(UnixChannelTest, MultiPartSendAndSizeLimit) {
  const size_t max = c_.guest->max_message_size();
  EXPECT_EQ(max, (64u << 10) / 2);
  std::vector<uint8_t> a = {1, 2, 3}, b = {4, 5};
  std::span<const uint8_t> parts[] = {a, b};
  ASSERT_TRUE(c_.guest->Send(parts).ok());
  std::vector<uint8_t> got;
  ASSERT_TRUE(c_.host->Receive(&got, 1000).ok());
  EXPECT_EQ(got, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  Status too_big = c_.guest->Send(std::vector<uint8_t>(max + 1));
  EXPECT_EQ(too_big.code(), Code::kInvalidValue);
  EXPECT_TRUE(c_.guest->Send(std::vector<uint8_t>(1)).ok()) << "a refused Send is not fatal";
}

TEST_F(UnixChannelTest, ReceiveTimesOut) {
  std::vector<uint8_t> got;
  EXPECT_EQ(c_.host->Receive(&got, 0).code(), Code::kNotReady);
  const double start = testing::NowSeconds();
  EXPECT_EQ(c_.host->Receive(&got, 50).code(), Code::kNotReady);
  EXPECT_GE(testing::NowSeconds() - start, 0.045);
}

TEST_F(UnixChannelTest, IdleReceiveSleepsInsteadOfSpinning) {
  std::vector<uint8_t> got;
  const double cpu = testing::ProcessCpuSeconds();
  const double wall = testing::NowSeconds();
  EXPECT_EQ(c_.host->Receive(&got, 200).code(), Code::kNotReady);
  const double cpu_used = testing::ProcessCpuSeconds() - cpu;
  EXPECT_GE(testing::NowSeconds() - wall, 0.19);
  EXPECT_LT(cpu_used, 0.05) << "an idle Receive must sleep, it used " << cpu_used << " s CPU";
}

TEST_F(UnixChannelTest, SleepingReceiverIsWokenByTheDoorbell) {
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(c_.guest->Send(Pattern(9, 64)).ok());
  });
  std::vector<uint8_t> got;
  const double start = testing::NowSeconds();
  ASSERT_TRUE(c_.host->Receive(&got, 5000).ok());
  EXPECT_LT(testing::NowSeconds() - start, 1.0);
  EXPECT_TRUE(MatchesPattern(got, 9));
  late.join();
}

TEST_F(UnixChannelTest, ErrorCountIsSharedAndOnlyTheHostPublishesIt) {
  EXPECT_EQ(c_.guest->ReadErrorCount(), std::optional<uint64_t>(0));
  c_.host->PublishErrorCount(3);
  EXPECT_EQ(c_.guest->ReadErrorCount(), std::optional<uint64_t>(3));
  c_.guest->PublishErrorCount(9);  // the guest cannot vouch for the host's faults
  EXPECT_EQ(c_.guest->ReadErrorCount(), std::optional<uint64_t>(3));
  c_.host->PublishErrorCount(Endpoint::kErrorCountUnknown);
  EXPECT_EQ(c_.guest->ReadErrorCount(), std::optional<uint64_t>(Endpoint::kErrorCountUnknown));
}

TEST_F(UnixChannelTest, FencePublishReadWait) {
  EXPECT_EQ(c_.guest->ReadFence(), 0u);
  c_.host->PublishFence(5);
  EXPECT_EQ(c_.guest->ReadFence(), 5u);
  EXPECT_TRUE(c_.guest->WaitFence(5, 0).ok());
  EXPECT_EQ(c_.guest->WaitFence(6, 0).code(), Code::kNotReady);
  const double start = testing::NowSeconds();
  EXPECT_EQ(c_.guest->WaitFence(6, 100).code(), Code::kNotReady);
  EXPECT_GE(testing::NowSeconds() - start, 0.095);

  std::thread publisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c_.host->PublishFence(7);
  });
  EXPECT_TRUE(c_.guest->WaitFence(7, 5000).ok());
  publisher.join();
}

TEST_F(UnixChannelTest, FenceWaitAndReceiveShareTheDoorbell) {
  // Two guest threads asleep on the same eventfd: neither may swallow the other's wake-up.
  std::atomic<bool> fence_done{false};
  std::thread waiter([&] {
    EXPECT_TRUE(c_.guest->WaitFence(1, 5000).ok());
    fence_done = true;
  });
  std::thread receiver([&] {
    std::vector<uint8_t> got;
    EXPECT_TRUE(c_.guest->Receive(&got, 5000).ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(c_.host->Send(Pattern(1, 8)).ok());
  c_.host->PublishFence(1);
  waiter.join();
  receiver.join();
  EXPECT_TRUE(fence_done);
}

TEST_F(UnixChannelTest, PassesAMemfdSharedByBothSides) {
  int fd = ::memfd_create("test-pinned", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ASSERT_TRUE(c_.guest->SendFd(fd).ok());
  StatusOr<int> received = c_.host->ReceiveFd(1000);
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_NE(::fcntl(*received, F_GETFD) & FD_CLOEXEC, 0);

  auto* guest_view =
      static_cast<char*>(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  auto* host_view =
      static_cast<char*>(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, *received, 0));
  ASSERT_NE(guest_view, MAP_FAILED);
  ASSERT_NE(host_view, MAP_FAILED);
  std::strcpy(guest_view, "written by the guest");
  EXPECT_STREQ(host_view, "written by the guest");
  std::strcpy(host_view + 100, "and by the host");
  EXPECT_STREQ(guest_view + 100, "and by the host");
  ::munmap(guest_view, 4096);
  ::munmap(host_view, 4096);
  ::close(fd);
  ::close(*received);
}

TEST_F(UnixChannelTest, FdsArriveInOrderAndReceiveFdTimesOut) {
  EXPECT_EQ(c_.guest->ReceiveFd(20).status().code(), Code::kNotReady);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ASSERT_TRUE(c_.host->SendFd(pipe_fds[0]).ok());
  ASSERT_TRUE(c_.host->SendFd(pipe_fds[1]).ok());
  // Queued fd records must not disturb (or wake and spin) the message path.
  std::vector<uint8_t> got;
  EXPECT_EQ(c_.guest->Receive(&got, 30).code(), Code::kNotReady);
  StatusOr<int> first = c_.guest->ReceiveFd(1000);
  StatusOr<int> second = c_.guest->ReceiveFd(1000);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(::write(*second, "x", 1), 1);  // the write end came second
  char ch = 0;
  ASSERT_EQ(::read(*first, &ch, 1), 1);
  EXPECT_EQ(ch, 'x');
  for (int fd : {pipe_fds[0], pipe_fds[1], *first, *second}) ::close(fd);
}

TEST_F(UnixChannelTest, DescribesBothEnds) {
  EXPECT_NE(c_.guest->Describe().find("unix:" + dir_.Socket()), std::string::npos);
  const std::string host = c_.host->Describe();
  EXPECT_NE(host.find("guest pid " + std::to_string(::getpid())), std::string::npos) << host;
  EXPECT_EQ(c_.host->peer_pid(), ::getpid());
  EXPECT_EQ(c_.host->peer_uid(), static_cast<int>(::getuid()));
}

}  // namespace
}  // namespace pvgpu::transport
