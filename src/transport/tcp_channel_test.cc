// The remote channel over plain loopback TCP: framing, fences, backpressure, peer death and
// the loopback-only rule. Real sockets, real listener threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "transport/tcp_test_util.h"
#include "transport/test_util.h"

namespace pvgpu::transport {
namespace {

using testing::ConnectPair;
using testing::MatchesPattern;
using testing::Pattern;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(TcpChannel, MessagesArriveWholeAndInOrderBothWays) {
  auto pair = ConnectPair("tcp://127.0.0.1:0", {}, {});
  ASSERT_TRUE(pair.guest && pair.host);
  EXPECT_EQ(pair.guest->max_message_size(), 4u << 20);
  const size_t sizes[] = {0, 1, 16, 17, 4095, 65536, 300000, 4u << 20, 0};
  uint64_t seq = 0;
  for (size_t size : sizes) ASSERT_TRUE(pair.guest->Send(Pattern(++seq, size)).ok());
  std::vector<uint8_t> message;
  for (uint64_t i = 1; i <= seq; ++i) {
    ASSERT_TRUE(pair.host->Receive(&message, 10000).ok());
    EXPECT_TRUE(MatchesPattern(message, i)) << "message " << i;
    ASSERT_TRUE(pair.host->Send(message).ok());  // echo
  }
  for (uint64_t i = 1; i <= seq; ++i) {
    ASSERT_TRUE(pair.guest->Receive(&message, 10000).ok());
    EXPECT_TRUE(MatchesPattern(message, i)) << "echo " << i;
  }
  std::vector<uint8_t> too_big((4u << 20) + 1);
  EXPECT_EQ(pair.guest->Send(too_big).code(), Code::kInvalidValue);
  EXPECT_EQ(pair.host->Receive(&message, 50).code(), Code::kNotReady);
}

TEST(TcpChannel, FenceAdvancesByMessage) {
  auto pair = ConnectPair("tcp://127.0.0.1:0", {}, {});
  ASSERT_TRUE(pair.guest && pair.host);
  EXPECT_EQ(pair.guest->ReadFence(), 0u);
  EXPECT_EQ(pair.guest->WaitFence(1, 20).code(), Code::kNotReady);
  std::thread publisher([&] {
    for (uint64_t value = 1; value <= 1000; ++value) pair.host->PublishFence(value);
  });
  EXPECT_TRUE(pair.guest->WaitFence(1000, 10000).ok());
  publisher.join();
  EXPECT_EQ(pair.guest->ReadFence(), 1000u);
  // A reply sent before the fence is there when the fence is.
  ASSERT_TRUE(pair.host->Send(Pattern(7, 100)).ok());
  pair.host->PublishFence(1001);
  ASSERT_TRUE(pair.guest->WaitFence(1001, 10000).ok());
  std::vector<uint8_t> message;
  EXPECT_TRUE(pair.guest->Receive(&message, 0).ok());
  EXPECT_TRUE(MatchesPattern(message, 7));
}

TEST(TcpChannel, FileDescriptorsDoNotCross) {
  auto pair = ConnectPair("tcp://127.0.0.1:0", {}, {});
  ASSERT_TRUE(pair.guest && pair.host);
  EXPECT_EQ(pair.guest->SendFd(0).code(), Code::kNotSupported);
  EXPECT_EQ(pair.host->ReceiveFd(0).status().code(), Code::kNotSupported);
}

// A host that stops reading makes the guest's Send block (bounded memory), the stall is not
// mistaken for a dead peer, and everything arrives intact once the host reads again.
TEST(TcpChannel, BackpressureBlocksSendAndIsNotDeath) {
  RemoteOptions options;
  // Short bounds so the stall below lasts several of them; generous enough for a loaded CI.
  options.heartbeat_ms = 200;
  options.dead_after_ms = 2000;
  auto pair = ConnectPair("tcp://127.0.0.1:0", options, options);
  ASSERT_TRUE(pair.guest && pair.host);
  constexpr int kMessages = 256;  // 256 MiB: far more than every buffer on the way
  std::atomic<int> sent{0};
  std::atomic<bool> failed{false};
  std::thread sender([&] {
    for (int i = 1; i <= kMessages; ++i) {
      if (!pair.guest->Send(Pattern(i, 1u << 20)).ok()) {
        failed = true;
        return;
      }
      sent = i;
    }
  });
  // Wait until the sender stops making progress: it must be blocked, not done.
  int last = -1;
  while (sent.load() != last) {
    last = sent.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // > dead_after_ms
  }
  EXPECT_LT(last, kMessages);
  EXPECT_FALSE(failed.load());
  std::vector<uint8_t> message;
  for (int i = 1; i <= kMessages; ++i) {
    ASSERT_TRUE(pair.host->Receive(&message, 10000).ok()) << "message " << i;
    ASSERT_TRUE(MatchesPattern(message, i)) << "message " << i;
  }
  sender.join();
  EXPECT_FALSE(failed.load());
  // Idle for several dead_after_ms: heartbeats keep both ends alive.
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  ASSERT_TRUE(pair.guest->Send(Pattern(1, 10)).ok());
  EXPECT_TRUE(pair.host->Receive(&message, 5000).ok());
}

TEST(TcpChannel, ClosedPeerWakesEveryWaiter) {
  auto pair = ConnectPair("tcp://127.0.0.1:0", {}, {});
  ASSERT_TRUE(pair.guest && pair.host);
  ASSERT_TRUE(pair.host->Send(Pattern(1, 10)).ok());
  std::thread fence_waiter(
      [&] { EXPECT_EQ(pair.guest->WaitFence(5, -1).code(), Code::kDeviceUnavailable); });
  pair.host.reset();  // closes, says goodbye
  std::vector<uint8_t> message;
  ASSERT_TRUE(pair.guest->Receive(&message, 10000).ok());  // sent before the close: delivered
  EXPECT_TRUE(MatchesPattern(message, 1));
  const Status after = pair.guest->Receive(&message, -1);
  EXPECT_EQ(after.code(), Code::kDeviceUnavailable);
  // The goodbye frame tells an orderly close from a lost connection.
  EXPECT_NE(after.message().find("peer closed the channel"), std::string::npos) << after.message();
  fence_waiter.join();
  EXPECT_EQ(pair.guest->Send(Pattern(2, 10)).code(), Code::kDeviceUnavailable);
}

// A host that passes set-up and then goes silent (a cut cable: no FIN, no RST) is given up on
// after dead_after_ms; a guest waiting forever gets kDeviceUnavailable, never a hang.
TEST(TcpChannel, SilentHostIsDeclaredDead) {
  testing::FakeHost host({});
  RemoteOptions options;
  options.dead_after_ms = 2000;
  auto guest = ConnectRemote(host.address(), options);
  ASSERT_TRUE(guest.ok()) << guest.status().ToString();
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint8_t> message;
  const Status received = (*guest)->Receive(&message, -1);
  EXPECT_EQ(received.code(), Code::kDeviceUnavailable);
  EXPECT_NE(received.message().find("nothing heard"), std::string::npos) << received.message();
  EXPECT_GE(SecondsSince(start), 1.0);
  EXPECT_LT(SecondsSince(start), 15.0);  // design bound 2 s
}

TEST(TcpChannel, CorruptFrameIsFatal) {
  const std::vector<uint8_t> garbage = {0xff, 0xff, 0xff, 0x7f, 0x01, 0, 0, 0};  // 2 GiB frame
  testing::FakeHost host(garbage);
  auto guest = ConnectRemote(host.address(), {});
  ASSERT_TRUE(guest.ok()) << guest.status().ToString();
  std::vector<uint8_t> message;
  const Status received = (*guest)->Receive(&message, 10000);
  EXPECT_EQ(received.code(), Code::kInvalidValue);
  EXPECT_NE(received.message().find("corrupt"), std::string::npos) << received.message();
}

TEST(TcpChannel, PlainTcpOnlyOnLoopback) {
  for (const char* address : {"tcp://0.0.0.0:0", "tcp://10.1.2.3:0", "tcp://[::]:0"}) {
    auto listener = RemoteListener::Listen(address, {});
    ASSERT_FALSE(listener.ok()) << address;
    EXPECT_EQ(listener.status().code(), Code::kNotPermitted) << address;
    EXPECT_NE(listener.status().message().find("loopback"), std::string::npos)
        << listener.status().message();
  }
  for (const char* address : {"tcp://127.0.0.1:0", "tcp://127.0.0.2:0", "tcp://localhost:0"}) {
    auto listener = RemoteListener::Listen(address, {});
    EXPECT_TRUE(listener.ok()) << address << ": " << listener.status().ToString();
  }
}

TEST(TcpChannel, AddressesAreCheckedBeforeConnecting) {
  for (const char* address :
       {"tcp://", "tcp://host", "tcp://host:99999", "tcp://[::1:80", "tcp://a:b:c"}) {
    EXPECT_EQ(ConnectRemote(address, {}).status().code(), Code::kInvalidValue) << address;
  }
  // Nothing listens there: no device, promptly.
  auto listener = RemoteListener::Listen("tcp://127.0.0.1:0", {});
  ASSERT_TRUE(listener.ok());
  const std::string address = (*listener)->address();
  listener->reset();
  EXPECT_EQ(ConnectRemote(address, {}).status().code(), Code::kNoDevice);
}

}  // namespace
}  // namespace pvgpu::transport
